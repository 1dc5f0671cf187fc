#!/usr/bin/env bash
# What trajectory screenshots cost a sweep's wall time, measured side by side (docs/performance.md, "the budget
# measured side by side"): two `skillshift local` runs started together, one worker each, the same units, one
# with `--screenshots A` and one with `--screenshots B`. Both meet the host at the same moments, so its drift,
# which swamps a few percent between runs taken one after the other, falls out. Each run does its units in the
# same order; the cost is the ratio of the times each took to finish the same first N units, N being how many the
# slower had finished when the faster was done (after that the slower has the machine to itself).
#
#   bash scripts/bench/screenshot_cost.sh [--a none] [--b failures] [--bin PATH] [--bin-b PATH] [--out DIR]
#                                         [-- LOCAL_ARGS...]
#
# LOCAL_ARGS go to both runs, e.g. `-- --sites gitlab`. `--a none --b none` measures the method's own bias.
# Prints one line with the ratio; each run's output stays under OUT (default target/screenshot-cost).
set -euo pipefail
cd "$(dirname "$0")/../.."
A=none; B=failures; BIN=target/release/skillshift; BIN_B=""; OUT=target/screenshot-cost
while [ $# -gt 0 ]; do
  case "$1" in
    --a) A=$2; shift ;;
    --b) B=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --bin-b) BIN_B=$2; shift ;;
    --out) OUT=$2; shift ;;
    --) shift; break ;;
    *) echo "screenshot_cost.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
BIN_B=${BIN_B:-$BIN}
for bin in "$BIN" "$BIN_B"; do
  [ -x "$bin" ] || { echo "screenshot_cost.sh: no skillshift binary at '$bin' (cargo build --release)" >&2; exit 2; }
done
rm -rf "$OUT/a" "$OUT/b"
mkdir -p "$OUT/a" "$OUT/b"
"$BIN" local --workers 1 --screenshots "$A" --out "$OUT/a/run" "$@" >"$OUT/a/stdout" 2>"$OUT/a/stderr" &
pid_a=$!
"$BIN_B" local --workers 1 --screenshots "$B" --out "$OUT/b/run" "$@" >"$OUT/b/stdout" 2>"$OUT/b/stderr" &
pid_b=$!
status=0
wait "$pid_a" || status=$?
wait "$pid_b" || status=$?
if [ "$status" -ne 0 ]; then
  echo "screenshot_cost.sh: a run failed (exit $status); see $OUT/a/stderr and $OUT/b/stderr" >&2
  exit 1
fi
grep -h "trajectory screenshots" "$OUT/a/stderr" "$OUT/b/stderr" >&2 || true
python3 - "$OUT/a/run/per_task.jsonl" "$OUT/b/run/per_task.jsonl" "$A" "$B" <<'EOF'
import json
import sys
from datetime import datetime


def load(path):
    def ts(s):
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return sorted(((ts(r["started_at"]), ts(r["finished_at"]), r["uid"], r["condition"]) for r in records),
                  key=lambda r: r[1])


a, b = load(sys.argv[1]), load(sys.argv[2])
start = min(a[0][0], b[0][0])
both_ran_until = min(a[-1][1], b[-1][1])
n = min(sum(1 for r in a if r[1] <= both_ran_until), sum(1 for r in b if r[1] <= both_ran_until))
same = sum(1 for x, y in zip(a[:n], b[:n]) if x[2:] == y[2:])
if n == 0 or same < n:
    sys.exit(f"screenshot_cost.sh: the runs did not do the same units in the same order ({same} of {n})")
ta, tb = a[n - 1][1] - start, b[n - 1][1] - start
print(f"first {n} units (of {len(a)} and {len(b)}): --screenshots {sys.argv[3]} {ta:.1f} s, "
      f"--screenshots {sys.argv[4]} {tb:.1f} s, ratio {tb / ta:.3f}")
EOF
