#!/usr/bin/env bash
# The full task audit in real headless Chromium: every task of all three sites, both versions
# (710 task-versions), its reference solution and doing nothing, plus the reference under the four
# perturbed conditions; writes the JSON report and prints the summary. Figures: docs/tasks.md.
# Extra arguments go to `skillshift tasks audit` (e.g. --workers 1, --repeat 2).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release --bin skillshift
out=${AUDIT_OUT:-skillshift-audit.json}
set +e
./target/release/skillshift tasks audit --json --conditions src-perc,src-exec,tgt-perc,tgt-exec "$@" > "$out"
code=$?
set -e
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{len(r['tasks'])} task-versions in {r['wall_s']:.1f} s: {r['counts']}")
for t in r["tasks"]:
    if t["status"] != "ok":
        print(f"  {t['uid']} {t['status']}: {(t['detail'] or '')[:200]}")
cells = {}
for p in r["perturbed"]:
    site = p["uid"].split(".")[1]
    n, ok = cells.get((site, p["condition"]), (0, 0))
    cells[(site, p["condition"])] = (n + 1, ok + (p["verdict"] == "pass"))
for (site, cond), (n, ok) in sorted(cells.items()):
    print(f"  perturbed {site:<9} {cond:<8} reference passes {ok}/{n}")
PY
echo "report: $out" >&2
exit $code
