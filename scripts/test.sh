#!/usr/bin/env bash
# The whole test suite: installs what the tests need (Chromium, ChromeDriver),
# then runs every test of the workspace, browser and multi-process ones included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo test --workspace --all-targets "$@"
