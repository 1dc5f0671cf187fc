#!/usr/bin/env bash
# Installs what is missing, builds skillshift and runs the embedded default,
# `skillshift local`, over the full grid. Extra arguments go to `skillshift local`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release --bin skillshift
exec ./target/release/skillshift local "$@"
