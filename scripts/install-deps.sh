#!/usr/bin/env bash
# Installs the system packages skillshift's tests and `skillshift local` need:
# Debian's Chromium, its headless shell and ChromeDriver, and iproute2 (`ip netns`) for the network-namespace tests.
# Idempotent: does nothing when all are present.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
# The headless shell (no browser UI) is what the workers run when it is installed: a quarter of
# the full browser's CPU per attempt. Without it they run the full Chromium headless.
[ -x /usr/lib/chromium/chromium-headless-shell ] || need+=(chromium-headless-shell)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing ${need[*]} (Debian packages)" >&2
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${need[@]}"
fi
