#!/usr/bin/env python3
"""The machine's CPU over time: /proc/stat's busy and total ticks, sampled every few milliseconds on the monotonic
clock, for setting the sweep's CPU against its spans (scripts/bench/phases.py --cpu-samples; docs/performance.md).

    python3 scripts/bench/cpu_samples.py --out FILE [--every MS] -- COMMAND [ARGS...]

It runs COMMAND and samples until COMMAND ends; COMMAND's exit status is this script's. Before COMMAND starts it
samples the machine for --idle seconds (default 2): what the machine does with only the sampler running, which
phases.py subtracts. FILE gets one header line, then one line per sample: the monotonic clock in microseconds
(`time.monotonic()`, Rust's `Instant`), busy ticks (user, nice, system, irq, softirq) and all ticks, as
/proc/stat counts them (CLK_TCK per second). Ticks are the kernel's coarse unit, so one sample says little; over
thousands of spans their sums do.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    if not fields or fields[0] != "cpu":
        raise OSError("/proc/stat: no `cpu` line first")
    v = [int(x) for x in fields[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = v + [0] * (8 - len(v))
    busy = user + nice + system + irq + softirq
    return busy, busy + idle + iowait + steal


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--every", type=float, default=5.0, help="ms between samples (default 5)")
    ap.add_argument("--idle", type=float, default=2.0, help="s sampled before COMMAND starts (default 2)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        sys.exit("cpu_samples.py: no command (cpu_samples.py --out FILE -- COMMAND ...)")
    if not (0.5 <= a.every <= 1000.0):
        sys.exit(f"cpu_samples.py: --every {a.every}: not between 0.5 and 1000 ms")
    if not (0.0 <= a.idle <= 60.0):
        sys.exit(f"cpu_samples.py: --idle {a.idle}: not between 0 and 60 s")
    try:
        out = open(a.out, "w")
        ticks()
    except OSError as e:
        sys.exit(f"cpu_samples.py: {e}")
    every = a.every / 1e3
    with out:
        header = {"clock": "monotonic", "hz": os.sysconf("SC_CLK_TCK"), "every_ms": a.every, "idle_s": a.idle}
        out.write(json.dumps(header) + "\n")

        def sample():
            busy, total = ticks()
            out.write(f"{int(time.monotonic() * 1e6)} {busy} {total}\n")

        end = time.monotonic() + a.idle
        while time.monotonic() < end:
            sample()
            time.sleep(every)
        out.write("start\n")
        try:
            child = subprocess.Popen(command)
        except OSError as e:
            sys.exit(f"cpu_samples.py: cannot run {command[0]}: {e}")
        while child.poll() is None:
            sample()
            time.sleep(every)
        sample()
    sys.exit(child.returncode if child.returncode >= 0 else 128 - child.returncode)


if __name__ == "__main__":
    main()
