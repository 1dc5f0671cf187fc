#!/usr/bin/env bash
# Where a sweep's time goes, phase by phase, beside each phase's floor (docs/performance.md, "phase table"): runs
# `skillshift local` (the full fixture grid by default) with every closed span logged (SKILLSHIFT_SPAN_LOG), then
# `skillshift bench floors` (each phase's work done bare on the same machine), then prints the table
# (scripts/bench/phases.py). The load average is sampled every 10 s during the sweep and printed with the table;
# the sweep's machine CPU (scripts/bench/cpu.sh) is set beside the grid's CPU floor. With --cpu-by-phase the machine's
# CPU is also sampled every 5 ms through the sweep (scripts/bench/cpu_samples.py) and each row gets its share of it
# beside its CPU floor; the sampler's own CPU (a few percent of a core) is then in the sweep's total.
#
#   bash scripts/bench/phases.sh [--bin PATH] [--out DIR] [--no-floors] [--floor-rounds N] [--cpu-by-phase]
#       [-- LOCAL_ARGS...]
#
# LOCAL_ARGS go to `skillshift local`, e.g. `-- --families data/calibration_set.json` or `-- --slots 2`; the slot
# count for the shares is the workers the sweep ran on (its "units on W workers" line: --workers, or local's default
# of the cores plus one) times --slots (default 1). Needs a release build
# (`cargo build --release`). Everything stays under OUT (default target/phases): the sweep, spans.jsonl,
# floors.json, load.txt and table.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=target/release/skillshift; OUT=target/phases; FLOORS=1; ROUNDS=20; SAMPLES=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift ;;
    --out) OUT=$2; shift ;;
    --no-floors) FLOORS=0 ;;
    --floor-rounds) ROUNDS=$2; shift ;;
    --cpu-by-phase) SAMPLES=1 ;;
    --) shift; break ;;
    *) echo "phases.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$BIN" ] || { echo "phases.sh: no skillshift binary at '$BIN' (cargo build --release)" >&2; exit 2; }
slots=1; args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --slots) slots=${args[$((i + 1))]} ;;
    --slots=*) slots=${args[$i]#--slots=} ;;
  esac
done
rm -rf "$OUT"
mkdir -p "$OUT"
( while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 10; done ) >"$OUT/load.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
status=0
by_phase=()
[ "$SAMPLES" = 0 ] || by_phase=(python3 scripts/bench/cpu_samples.py --out "$OUT/cpu_samples.txt" --)
SKILLSHIFT_SPAN_LOG="$OUT/spans.jsonl" "${by_phase[@]}" bash scripts/bench/cpu.sh -- "$BIN" local --out "$OUT/run" "$@" \
  >"$OUT/stdout" 2>"$OUT/stderr" || status=$?
kill "$sampler" 2>/dev/null || true
if [ "$status" -ne 0 ]; then
  echo "phases.sh: skillshift local failed (exit $status); see $OUT/stderr" >&2
  exit 1
fi
wall=$(sed -n 's/^done in \([0-9.]*\) s.*/\1/p' "$OUT/stderr" | tail -1)
[ -n "$wall" ] || { echo "phases.sh: no 'done in' line in $OUT/stderr" >&2; exit 1; }
workers=$(sed -n 's/^sweep .*: [0-9]* units on \([0-9]*\) workers$/\1/p' "$OUT/stderr" | tail -1)
[ -n "$workers" ] || { echo "phases.sh: no 'sweep ...: N units on W workers' line in $OUT/stderr" >&2; exit 1; }
floors=()
if [ "$FLOORS" = 1 ]; then
  "$BIN" bench floors --rounds "$ROUNDS" --json >"$OUT/floors.json"
  floors=(--floors "$OUT/floors.json")
fi
cpu=$(sed -n 's/^cpu.sh: .*; user \([0-9.]*\), system \([0-9.]*\),.*/\1 \2/p' "$OUT/stderr" | tail -1)
[ -z "$cpu" ] || floors+=(--cpu "$(echo "$cpu" | awk '{print $1 + $2}')")
[ "$SAMPLES" = 0 ] || floors+=(--cpu-samples "$OUT/cpu_samples.txt")
python3 scripts/bench/phases.py "$OUT/spans.jsonl" --slots $((workers * slots)) --wall "$wall" "${floors[@]}" \
  | tee "$OUT/table.md"
python3 - "$OUT/load.txt" <<'EOF' | tee -a "$OUT/table.md"
import sys
loads = [float(l.split()[1]) for l in open(sys.argv[1]) if len(l.split()) > 1]
if loads:
    loads.sort()
    print(f"load average (1 min) during the sweep: min {loads[0]:.2f}, median {loads[len(loads) // 2]:.2f}, "
          f"max {loads[-1]:.2f} over {len(loads)} samples")
EOF
