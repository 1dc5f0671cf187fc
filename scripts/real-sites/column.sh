#!/usr/bin/env bash
# The whole real WordPress column: 79 tasks x 6 conditions (474 units) on the real 6.1.9 instances,
# by `skillshift local --real-sites`, with the skills agent and the real-WordPress library, then the same
# column on the fixture sites for the side by side (docs/real-sites.md, docs/performance.md).
#   bash scripts/real-sites/column.sh [OUT_DIR]   (default target/real-column)
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/real-column}"
mkdir -p "$out"
bash scripts/install-deps.sh
sites="$(bash scripts/real-sites.sh wordpress | tail -1)"
cargo build --release --quiet
bin=target/release/skillshift
# Two workers on both sides, as the published column was measured (`local`'s default became cores + 1 later): the
# real instances serve one attempt at a time each, so more workers would only wait there and speed up the fixture.
for side in real fixture; do
  args=(local --workers 2 --sites wordpress --skills data/skills/real-wordpress.json --out "$out/$side")
  [ "$side" = fixture ] && args=(local --workers 2 --sites wordpress --out "$out/$side")
  [ "$side" = real ] && args+=(--real-sites "$sites")
  start=$(date +%s.%N)
  "$bin" "${args[@]}" > "$out/$side.txt" 2> "$out/$side.err" || true
  end=$(date +%s.%N)
  python3 - "$side" "$out/$side/per_task.jsonl" "$start" "$end" <<'PY'
import json, sys, collections
side, path, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
recs = [json.loads(l) for l in open(path)]
by = collections.defaultdict(list)
for r in recs:
    by[r["condition"]].append(r)
errors = sum(r.get("outcome") == "error" for r in recs)
ms = sorted(r["duration_ms"] for r in recs if r.get("duration_ms") is not None)
sr = "  ".join(f"{c} {100 * sum(r['success'] is True for r in rs) / len(rs):.1f}"
               for c, rs in sorted(by.items(), key=lambda kv: ["src","src-perc","src-exec","tgt","tgt-perc","tgt-exec"].index(kv[0])))
print(f"{side}: {len(recs)} units in {end - start:.0f} s, {errors} errors, attempt median {ms[len(ms)//2]/1000:.2f} s; SR {sr}")
PY
done
