#!/usr/bin/env bash
# Builds, once, the Python environment in which WebArena's own evaluator code
# runs as the oracle of common/tests/webarena_conformance.rs:
#   DIR/venv       a venv with libwebarena (WebArena's evaluation_harness as
#                  packaged on PyPI) and its dependencies, versions pinned;
#   DIR/nltk_data  NLTK's punkt_tab English model, which nltk cannot download
#                  here, taken from the llama-index-core wheel that ships it.
# Idempotent and cached: a stamp naming the pinned versions makes a rerun a
# no-op. Prints the venv's python on stdout.
# Exit 0 ready; 3 when the package registry cannot be reached (the caller may
# skip, loudly); anything else is a real failure.
set -euo pipefail

dir="${1:?usage: setup.sh DIR}"
pins=(libwebarena==0.0.5 nltk==3.10.4 playwright==1.44.0)
nltk_wheel=llama-index-core==0.14.25
stamp="$dir/ready-$(printf '%s\n' "${pins[@]}" "$nltk_wheel" | sha256sum | cut -c1-16)"

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
rm -rf "$dir/venv" "$dir/nltk_data" "$dir/download" "$dir"/ready-*
mkdir -p "$dir/download"

# The registry probe: one small download. If it fails, nothing can be built.
if ! python3 -m pip download --quiet --no-deps "${pins[0]}" -d "$dir/download" >"$dir/probe.log" 2>&1; then
  echo "setup.sh: the package registry cannot be reached (pip download ${pins[0]} failed):" >&2
  tail -n 5 "$dir/probe.log" >&2
  exit 3
fi

python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install --quiet "${pins[@]}" >"$dir/pip.log" 2>&1 || {
  tail -n 20 "$dir/pip.log" >&2
  exit 1
}

python3 -m pip download --quiet --no-deps "$nltk_wheel" -d "$dir/download" >>"$dir/pip.log" 2>&1
"$dir/venv/bin/python" - "$dir" <<'PY'
import glob, os, sys, zipfile
root = sys.argv[1]
wheel = glob.glob(os.path.join(root, "download", "llama_index_core-*.whl"))[0]
prefix = "llama_index/core/_static/nltk_cache/tokenizers/punkt_tab/english/"
out = os.path.join(root, "nltk_data", "tokenizers", "punkt_tab", "english")
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        sys.exit(f"{wheel} holds no {prefix}")
    for n in names:
        with open(os.path.join(out, os.path.basename(n)), "wb") as f:
            f.write(z.read(n))
PY
rm -rf "$dir/download"
touch "$stamp"
echo "$dir/venv/bin/python"
