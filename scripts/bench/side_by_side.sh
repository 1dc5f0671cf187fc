#!/usr/bin/env bash
# Two sweeps at the same time, each in a CPU-accounting cgroup of its own, to compare two builds or two settings
# on this noisy host (docs/performance.md#side-by-side): both sides meet the same host speed at every moment, so
# the ratio of their CPU holds where runs minutes apart differ by 10-35%. Two identical sides measured 1.003 and
# 1.004. Each side is `skillshift local --out OUT/a|b LOCAL_ARGS`; a side's CPU is every process it started
# (workers, browsers, renderers), from the cgroup's own counter. Prints each side's CPU-s and wall, B/A for both,
# and whether the two sweeps' records are the same unit by unit (scripts/bench/same_records.py).
#
#   bash scripts/bench/side_by_side.sh [--out DIR] [--bin-a PATH] [--bin-b PATH] [--env-a 'K=V ...']
#       [--env-b 'K=V ...'] -- LOCAL_ARGS...
#
# e.g. --env-b 'SKILLSHIFT_CHROMIUM_ARGS=--renderer-process-limit=1000' -- --workers 1 --families
# data/calibration_set.json. Both sides share the cores, so each one's wall time is longer than alone: compare
# the ratios, not the times. Needs root (a cgroup v1 `cpuacct` hierarchy or cgroup v2) and release builds.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=target/side-by-side; BIN_A=target/release/skillshift; BIN_B=; ENV_A=; ENV_B=
while [ $# -gt 0 ]; do
  case "$1" in
    --out|--bin-a|--bin-b|--env-a|--env-b)
      [ $# -ge 2 ] || { echo "side_by_side.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --out) OUT=$2 ;; --bin-a) BIN_A=$2 ;; --bin-b) BIN_B=$2 ;; --env-a) ENV_A=$2 ;; --env-b) ENV_B=$2 ;;
      esac
      shift ;;
    --) shift; break ;;
    *) echo "side_by_side.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
for e in $ENV_A $ENV_B; do
  [[ "$e" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "side_by_side.sh: '$e' in --env-a/--env-b is not NAME=VALUE" >&2; exit 2; }
done
BIN_B=${BIN_B:-$BIN_A}
for b in "$BIN_A" "$BIN_B"; do
  [ -x "$b" ] || { echo "side_by_side.sh: no skillshift binary at '$b' (cargo build --release)" >&2; exit 2; }
done
# The CPU counter: cgroup v1's cpuacct.usage (ns), else v2's cpu.stat usage_usec.
if [ -d /sys/fs/cgroup/cpuacct ]; then
  base=/sys/fs/cgroup/cpuacct; usage() { echo $(( $(cat "$1/cpuacct.usage") / 1000 )); }
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  base=/sys/fs/cgroup; usage() { sed -n 's/^usage_usec //p' "$1/cpu.stat"; }
else
  echo "side_by_side.sh: no cgroup CPU accounting under /sys/fs/cgroup" >&2; exit 2
fi
rm -rf "$OUT"; mkdir -p "$OUT"
group() { echo "$base/skillshift-side-$1-$$"; }
trap 'rmdir "$(group a)" "$(group b)" 2>/dev/null || true' EXIT
for side in a b; do
  mkdir "$(group $side)" 2>/dev/null || { echo "side_by_side.sh: cannot make the cgroup $(group $side) (run as root)" >&2; exit 2; }
done
run() { # side binary env...; writes OUT/side.res: "usage_us wall_s status"
  local side=$1 bin=$2 g; g=$(group "$1"); shift 2
  local t0 t1 status=0
  t0=$(date +%s.%N)
  # The shell joins the cgroup, then becomes the sweep: every process the sweep starts is counted there.
  env "$@" bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$g" "$bin" local --out "$OUT/$side" "${args[@]}" \
    >"$OUT/$side.stdout" 2>"$OUT/$side.stderr" || status=$?
  t1=$(date +%s.%N)
  echo "$(usage "$g") $(python3 -c "print(f'{$t1 - $t0:.2f}')") $status" >"$OUT/$side.res"
}
args=("$@")
# shellcheck disable=SC2086 # the environments are NAME=VALUE words
run a "$BIN_A" $ENV_A &
pa=$!
# shellcheck disable=SC2086
run b "$BIN_B" $ENV_B &
pb=$!
wait "$pa" "$pb"
read -r ua wa sa <"$OUT/a.res"
read -r ub wb sb <"$OUT/b.res"
failed() { echo "side_by_side.sh: side $1's sweep failed (exit $2); see $OUT/$1.stderr" >&2; exit 1; }
[ "$sa" = 0 ] || failed a "$sa"
[ "$sb" = 0 ] || failed b "$sb"
records=$(python3 scripts/bench/same_records.py "$OUT/a/per_task.jsonl" "$OUT/b/per_task.jsonl" 2>&1 | tail -1) || true
python3 - "$ua" "$wa" "$ub" "$wb" "$ENV_A" "$ENV_B" "$BIN_A" "$BIN_B" "$records" <<'PY'
import sys
ua, wa, ub, wb = (float(x) for x in sys.argv[1:5])
env_a, env_b, bin_a, bin_b, records = sys.argv[5:10]
print(f"A ({bin_a} {env_a}".rstrip() + f"): {ua / 1e6:.1f} CPU-s, wall {wa:.1f} s")
print(f"B ({bin_b} {env_b}".rstrip() + f"): {ub / 1e6:.1f} CPU-s, wall {wb:.1f} s")
print(f"B/A: CPU {ub / max(ua, 1):.3f}, wall {wb / max(wa, 1e-9):.3f}")
print(f"records: {records}")
PY
