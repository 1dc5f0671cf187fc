#!/usr/bin/env bash
# What the attempt's network trace costs, measured side by side (docs/performance.md, "the network trace"): two
# `skillshift local` runs started together, one worker each, the same units, one with the trace off
# (`SKILLSHIFT_NETWORK_TRACE=off`) and one with it on (the default); `--a on --b bodies` measures what response
# bodies add (`SKILLSHIFT_NETWORK_TRACE=bodies`: every attempt reads them, as a task whose evaluators read a
# response's content does). Both meet the host at the same moments, so
# its drift falls out (the method of screenshot_cost.sh). Each run does its units in the same order; the cost is
# the ratio of the times each took to finish the same first N units, N being how many the slower had finished
# when the faster was done. Also prints the mean attempt duration of each run and what the trace adds to the
# exported trajectories (bytes, entries per attempt).
#
#   bash scripts/bench/network_cost.sh [--a off] [--b on] [--bin PATH] [--out DIR] [-- LOCAL_ARGS...]
#
# LOCAL_ARGS go to both runs, e.g. `-- --sites gitlab`. `--a on --b on` measures the method's own bias.
# --a and --b take on, off or bodies.
# Each run's output stays under OUT (default target/network-cost).
set -euo pipefail
cd "$(dirname "$0")/../.."
A=off; B=on; BIN=target/release/skillshift; OUT=target/network-cost
while [ $# -gt 0 ]; do
  case "$1" in
    --a) A=$2; shift ;;
    --b) B=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    --) shift; break ;;
    *) echo "network_cost.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
for v in "$A" "$B"; do
  case "$v" in on|off|bodies) ;; *) echo "network_cost.sh: --a/--b take on, off or bodies, not '$v'" >&2; exit 2 ;; esac
done
[ -x "$BIN" ] || { echo "network_cost.sh: no skillshift binary at '$BIN' (cargo build --release)" >&2; exit 2; }
rm -rf "$OUT/a" "$OUT/b"
mkdir -p "$OUT/a" "$OUT/b"
SKILLSHIFT_NETWORK_TRACE=$A "$BIN" local --workers 1 --out "$OUT/a/run" "$@" >"$OUT/a/stdout" 2>"$OUT/a/stderr" &
pid_a=$!
SKILLSHIFT_NETWORK_TRACE=$B "$BIN" local --workers 1 --out "$OUT/b/run" "$@" >"$OUT/b/stdout" 2>"$OUT/b/stderr" &
pid_b=$!
status=0
wait "$pid_a" || status=$?
wait "$pid_b" || status=$?
if [ "$status" -ne 0 ]; then
  echo "network_cost.sh: a run failed (exit $status); see $OUT/a/stderr and $OUT/b/stderr" >&2
  exit 1
fi
python3 - "$OUT/a/run" "$OUT/b/run" "$A" "$B" <<'EOF'
import glob
import json
import os
import sys
from datetime import datetime


def load(run):
    def ts(s):
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

    with open(os.path.join(run, "per_task.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return records, sorted(((ts(r["started_at"]), ts(r["finished_at"]), r["uid"], r["condition"]) for r in records),
                           key=lambda r: r[1])


def trajectories(run):
    files = glob.glob(os.path.join(run, "trajectories", "*", "*.json"))
    size = sum(os.path.getsize(p) for p in files)
    entries = net = bodies = 0
    for p in files:
        with open(p) as f:
            t = json.load(f)
        if t.get("network"):
            entries += len(t["network"]["log"]["entries"])
            bodies += sum(1 for e in t["network"]["log"]["entries"] if e["response"].get("content", {}).get("text"))
            net += len(json.dumps(t["network"]))
    return len(files), size, entries, net, bodies


(ra, a), (rb, b) = load(sys.argv[1]), load(sys.argv[2])
start = min(a[0][0], b[0][0])
both_ran_until = min(a[-1][1], b[-1][1])
n = min(sum(1 for r in a if r[1] <= both_ran_until), sum(1 for r in b if r[1] <= both_ran_until))
same = sum(1 for x, y in zip(a[:n], b[:n]) if x[2:] == y[2:])
if n == 0 or same < n:
    sys.exit(f"network_cost.sh: the runs did not do the same units in the same order ({same} of {n})")
ta, tb = a[n - 1][1] - start, b[n - 1][1] - start
mean = lambda rs: sum(r.get("duration_ms", 0) for r in rs) / max(len(rs), 1)
print(f"first {n} units (of {len(a)} and {len(b)}): trace {sys.argv[3]} {ta:.1f} s, trace {sys.argv[4]} {tb:.1f} s, "
      f"ratio {tb / ta:.3f}")
print(f"mean attempt duration: trace {sys.argv[3]} {mean(ra):.0f} ms, trace {sys.argv[4]} {mean(rb):.0f} ms, "
      f"ratio {mean(rb) / max(mean(ra), 1):.3f}")
for label, run in ((sys.argv[3], sys.argv[1]), (sys.argv[4], sys.argv[2])):
    files, size, entries, net, bodies = trajectories(run)
    per = (f", {entries / files:.1f} entries ({bodies / files:.1f} with a body) and {net / files / 1024:.1f} KiB of "
           f"trace per attempt") if files else ""
    print(f"trace {label}: {files} trajectories, {size / 1024:.0f} KiB exported{per}")
EOF
