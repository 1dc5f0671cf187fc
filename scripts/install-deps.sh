#!/usr/bin/env bash
# Installs what skillshift's tests and `skillshift local` need: Debian's Chromium, its headless shell and
# ChromeDriver, iproute2 (`ip netns`) for the network-namespace tests, the real WordPress 6.1 with MariaDB
# and PHP (scripts/real-sites/packages; `bash scripts/real-sites.sh wordpress` runs it, tests/real_wordpress.rs
# tests against it), and NLTK's punkt_tab English model,
# which WebArena's string evaluator tokenises a one-character `must_include` with (from a PyPI wheel that
# ships NLTK's data, unpacked under /usr/local/share/nltk_data, where every command finds it).
# Idempotent: does nothing when all are present.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
# The headless shell (no browser UI) is what the workers run when it is installed: a quarter of
# the full browser's CPU per attempt. Without it they run the full Chromium headless.
[ -x /usr/lib/chromium/chromium-headless-shell ] || need+=(chromium-headless-shell)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
while read -r p; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || need+=("$p")
done < "$(dirname "$0")/real-sites/packages"
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing ${need[*]} (Debian packages)" >&2
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${need[@]}"
fi

# NLTK's punkt_tab English model (NLTK's own data, as the llama-index-core wheel on PyPI ships it; nltk itself
# cannot download it here). SKILLSHIFT_NLTK_DATA or NLTK_DATA point elsewhere if wanted.
punkt=/usr/local/share/nltk_data/tokenizers/punkt_tab/english
if [ ! -f "$punkt/ortho_context.tab" ]; then
  echo "installing NLTK's punkt_tab English model into $punkt (PyPI: llama-index-core's NLTK data)" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps llama-index-core==0.14.25 -d "$tmp" >&2
  python3 - "$tmp" "$punkt" <<'PY'
import glob, os, sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "llama_index_core-*.whl"))[0]
prefix = "llama_index/core/_static/nltk_cache/tokenizers/punkt_tab/english/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        sys.exit(f"{wheel} holds no {prefix}")
    os.makedirs(out, exist_ok=True)
    for n in names:
        with open(os.path.join(out, os.path.basename(n)), "wb") as f:
            f.write(z.read(n))
PY
fi

