#!/usr/bin/env bash
# The machine's CPU across one command (docs/performance.md#first-cut): busy cores, user and system time, idle,
# I/O wait and steal, from /proc/stat before and after. It counts every process, so Chrome's renderers that
# exit mid-run are in it (a process tree's own counters lose them). Run it on an otherwise quiet machine.
#   bash scripts/bench/cpu.sh -- COMMAND [ARGS...]
set -euo pipefail
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "cpu.sh: no command (bash scripts/bench/cpu.sh -- COMMAND ...)" >&2; exit 2; }
read -r _ u n s i w q sq st _ </proc/stat
t0=$(date +%s.%N)
status=0
"$@" || status=$?
read -r _ u2 n2 s2 i2 w2 q2 sq2 st2 _ </proc/stat
t1=$(date +%s.%N)
hz=$(getconf CLK_TCK)
python3 - "$hz" "$t0" "$t1" "$u" "$n" "$s" "$i" "$w" "$q" "$sq" "$st" "$u2" "$n2" "$s2" "$i2" "$w2" "$q2" "$sq2" "$st2" <<'PY' >&2
import sys
hz, t0, t1 = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
a = [int(x) for x in sys.argv[4:12]]
b = [int(x) for x in sys.argv[12:20]]
d = [(y - x) / hz for x, y in zip(a, b)]
user, system, idle, iowait, steal = d[0] + d[1], d[2] + d[5] + d[6], d[3], d[4], d[7]
wall = max(t1 - t0, 1e-6)
print(f"cpu.sh: wall {wall:.1f} s; user {user:.1f}, system {system:.1f}, idle {idle:.1f}, iowait {iowait:.1f}, "
      f"steal {steal:.1f} CPU-s; busy {(user + system) / wall:.2f} of {(user + system + idle + iowait + steal) / wall:.2f} cores")
PY
exit "$status"
