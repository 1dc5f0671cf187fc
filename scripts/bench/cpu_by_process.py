#!/usr/bin/env python3
"""CPU by process kind across one command (docs/performance.md#calibration-set).

Runs COMMAND, samples every process's CPU time (/proc/PID/stat, utime + stime) every --every seconds while it
runs, and prints the CPU-seconds of each kind: Chromium's browser process, renderers, its network and other
utility processes, the zygote, chromedriver, skillshift, and everything else. A process's CPU is its last
sample, so a process that exits loses at most its last interval (and one that lives less than an interval is
missed); its kind comes from its command line. Compare the total with scripts/bench/cpu.sh's machine figure.
With --threads, each kind is split by thread name (/proc/PID/task/TID/stat, digits dropped): a renderer's main
thread, its compositor and raster workers, the browser process's UI, IO and in-process GPU threads.

    python3 scripts/bench/cpu_by_process.py [--every S] [--threads] [--json] -- COMMAND [ARGS...]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def kind(cmdline):
    args = [a for a in cmdline.split("\0") if a]
    if len(args) == 1:
        # Chromium's children rewrite their title: one string, the arguments joined by spaces.
        args = args[0].split(" ")
    exe = os.path.basename(args[0]) if args else ""
    if "chromedriver" in exe:
        return "chromedriver"
    if exe.startswith("skillshift"):
        return "skillshift"
    if "chrom" in exe or "headless_shell" in exe:
        for a in args:
            if a.startswith("--type="):
                t = a[len("--type="):]
                if t == "utility":
                    sub = next((x for x in args if x.startswith("--utility-sub-type=")), "")
                    return "chromium: network" if "network" in sub else "chromium: utility"
                return f"chromium: {t}"
        return "chromium: browser"
    return "other"


def stat_of(path):
    """(thread or process name, CPU-s, start tick) from a /proc stat file."""
    with open(path) as f:
        stat = f.read()
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    # Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    rest = stat[stat.rindex(")") + 2:].split()
    return name, (int(rest[11]) + int(rest[12])) / HZ, rest[19]


def remember(seen, key, pid, cpu, before, label):
    """Records `cpu` as the last sample of `key`, labelled from its process's command line when first seen."""
    if key not in seen:
        try:
            with open(f"/proc/{pid}/cmdline") as f:
                cmd = f.read()
        except OSError:
            return
        # A process started after the command began counts from 0; one already running, from now.
        seen[key] = [label(cmd), cpu if before else 0.0, cpu]
    seen[key][2] = cpu


def sample(seen, before=False, threads=False):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        if threads:
            sample_threads(seen, pid, before)
            continue
        try:
            _, cpu, start = stat_of(f"/proc/{pid}/stat")
        except (OSError, ValueError, IndexError):
            continue
        remember(seen, (pid, start), pid, cpu, before, kind)


def sample_threads(seen, pid, before):
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        try:
            name, cpu, start = stat_of(f"/proc/{pid}/task/{tid}/stat")
        except (OSError, ValueError, IndexError):
            continue
        remember(seen, (pid, tid, start), pid, cpu, before, lambda cmd: f"{kind(cmd)} / {name.rstrip('0123456789')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=float, default=0.1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--threads", action="store_true", help="split each kind by thread name")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        print("cpu_by_process.py: no command (-- COMMAND ...)", file=sys.stderr)
        return 2
    if not 0.01 <= a.every <= 5:
        print(f"cpu_by_process.py: --every {a.every}: between 0.01 and 5 seconds", file=sys.stderr)
        return 2
    seen = {}
    sample(seen, before=True, threads=a.threads)  # what runs before the command is counted from here on, not before
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    while proc.poll() is None:
        time.sleep(a.every)
        sample(seen, threads=a.threads)
    sample(seen, threads=a.threads)
    wall = time.monotonic() - t0
    by = {}
    n = {}
    for k, first, last in seen.values():
        by[k] = by.get(k, 0.0) + (last - first)
        n[k] = n.get(k, 0) + 1
    total = sum(by.values())
    rows = sorted(by.items(), key=lambda kv: -kv[1])
    if a.json:
        print(json.dumps({"wall_s": wall, "total_cpu_s": total, "kinds": {k: {"cpu_s": v, "processes": n[k]} for k, v in rows}}))
    else:
        print(f"wall {wall:.1f} s; {total:.1f} CPU-s sampled every {a.every} s")
        for k, v in rows:
            what = "threads" if a.threads else "processes"
            print(f"  {k:<40} {v:7.1f} CPU-s  {100 * v / total if total else 0:5.1f}%  {n[k]} {what}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
