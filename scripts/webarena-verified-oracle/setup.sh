#!/usr/bin/env bash
# Builds, once, the Python environment in which WebArena-Verified's own
# evaluators run as the oracle of tests/score_webarena_verified.rs:
#   DIR/venv  a venv with webarena-verified (ServiceNow's package, its audited
#             dataset inside) and its dependencies, as the package pins them.
# Idempotent and cached: a stamp naming the pinned version makes a rerun a
# no-op. Prints the venv's python on stdout.
# Exit 0 ready; 3 when the package registry cannot be reached (the caller may
# skip, loudly); anything else is a real failure.
set -euo pipefail

dir="${1:?usage: setup.sh DIR}"
pins=(webarena-verified==1.2.3)
stamp="$dir/ready-$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-16)"

ready() { [ -f "$stamp" ] && [ -x "$dir/venv/bin/python" ]; }
if ready; then
  echo "$dir/venv/bin/python"
  exit 0
fi

# One build at a time: tests running in parallel each call this script, and a second build would delete the
# first's files under it. The lock is DIR/.setup.lock, held until this script exits; a build that finished
# while this one waited is taken as it is.
mkdir -p "$dir"
exec 9>"$dir/.setup.lock"
flock 9
if ready; then
  echo "$dir/venv/bin/python"
  exit 0
fi
rm -rf "$dir/venv" "$dir/download" "$dir"/ready-*
mkdir -p "$dir/download"

# The package needs Python 3.11 or later.
python=""
for p in python3.13 python3.12 python3.11 python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    python="$p"
    break
  fi
done
if [ -z "$python" ]; then
  echo "setup.sh: webarena-verified needs Python 3.11 or later, and none is installed" >&2
  exit 1
fi

# The registry probe: one small download. If it fails, nothing can be built.
if ! "$python" -m pip download --quiet --no-deps "${pins[0]}" -d "$dir/download" >"$dir/probe.log" 2>&1; then
  echo "setup.sh: the package registry cannot be reached (pip download ${pins[0]} failed):" >&2
  tail -n 5 "$dir/probe.log" >&2
  exit 3
fi

"$python" -m venv "$dir/venv"
"$dir/venv/bin/pip" install --quiet "${pins[@]}" >"$dir/pip.log" 2>&1 || {
  tail -n 20 "$dir/pip.log" >&2
  exit 1
}
rm -rf "$dir/download"
touch "$stamp"
echo "$dir/venv/bin/python"
