#!/usr/bin/env bash
# The whole test suite: installs what the tests need (Chromium, ChromeDriver),
# then runs every test of the workspace, browser and multi-process ones included.
# The real-WordPress tests start Debian's WordPress (scripts/real-sites.sh) when it
# is not running; what the suite started is stopped when it ends, pass or fail, and
# instances already running before it are left as they were.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
real_sites_before=false
if bash scripts/real-sites.sh wordpress --status 2>/dev/null | grep -q '"php": true'; then
  real_sites_before=true
fi
stop_real_sites() {
  if [ "$real_sites_before" = false ]; then
    bash scripts/real-sites.sh wordpress --stop >/dev/null 2>&1 || true
  fi
}
trap stop_real_sites EXIT
cargo test --workspace --all-targets "$@"
