#!/usr/bin/env bash
# Side by side: `skillshift bench step` against BrowserGym's step on the same page, interleaved rounds,
# one session (docs/performance.md, "Side by side with BrowserGym").
#
#   bash scripts/bench/browsergym.sh [--rounds N] [--steps N] [--bin PATH] [--page FILE] [--out DIR]
#                                    [--chromium PATH]
#
# Both sides run the same browser binary: --chromium, by default the headless shell when installed
# (what both skillshift and Playwright run headless by default), else the full Chromium.
#
# Builds a venv under target/bgym with BrowserGym 0.14.3 and Playwright 1.44 (on Debian's Chromium), serves
# the page over HTTP on loopback, runs N rounds of ours then BrowserGym's, and prints each side's medians over
# rounds of each round's p50 / p90 with the ratios. Every round's JSON is kept in OUT/rounds.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=5; STEPS=30; BIN=target/release/skillshift; PAGE=scripts/bench/page449.html; OUT=""
CHROMIUM=/usr/lib/chromium/chromium-headless-shell
[ -x "$CHROMIUM" ] || CHROMIUM=/usr/lib/chromium/chromium
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift ;;
    --steps) STEPS=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --page) PAGE=$2; shift ;;
    --out) OUT=$2; shift ;;
    --chromium) CHROMIUM=$2; shift ;;
    *) echo "browsergym.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$BIN" ] || { echo "browsergym.sh: no skillshift binary at $BIN (cargo build --release)" >&2; exit 2; }
[ -f "$PAGE" ] || { echo "browsergym.sh: no page at $PAGE" >&2; exit 2; }
[ -x "$CHROMIUM" ] || { echo "browsergym.sh: no browser at $CHROMIUM" >&2; exit 2; }
export SKILLSHIFT_CHROMIUM=$CHROMIUM
echo "browser (both sides): $CHROMIUM" >&2
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
VENV=target/bgym
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import browsergym.core" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet browsergym-core==0.14.3 playwright==1.44.0
fi
DIR=$(cd "$(dirname "$PAGE")" && pwd)
PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$DIR" >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
URL="http://127.0.0.1:$PORT/$(basename "$PAGE")"
for _ in $(seq 50); do python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1])" "$URL" 2>/dev/null && break; sleep 0.1; done
: > "$OUT/rounds.jsonl"
for r in $(seq "$ROUNDS"); do
  ours=$("$BIN" bench step --url "$URL" --steps "$STEPS" --json)
  echo "{\"side\": \"skillshift\", \"round\": $r, \"result\": $ours}" >> "$OUT/rounds.jsonl"
  theirs=$("$VENV/bin/python" worker/examples/bench_browsergym.py "$URL" "$STEPS" 2>>"$OUT/browsergym.stderr")
  echo "{\"side\": \"browsergym\", \"round\": $r, \"result\": $theirs}" >> "$OUT/rounds.jsonl"
  echo "round $r of $ROUNDS done" >&2
done
elements=$("$VENV/bin/python" - "$URL" <<'PY'
import os, sys
from playwright.sync_api import sync_playwright
with sync_playwright() as p:
    b = p.chromium.launch(executable_path=os.environ["SKILLSHIFT_CHROMIUM"])
    page = b.new_page(); page.goto(sys.argv[1])
    print(page.evaluate("document.querySelectorAll('*').length"))
    b.close()
PY
)
python3 - "$OUT/rounds.jsonl" "$elements" "$ROUNDS" "$STEPS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
elements, rounds, steps = sys.argv[2], sys.argv[3], sys.argv[4]
def med(side, key, q):
    return statistics.median(r["result"][key][q] for r in rows if r["side"] == side)
print(f"page: {elements} elements; {rounds} interleaved rounds of {steps} steps; medians over rounds, ms")
print("| | skillshift | BrowserGym | BrowserGym / skillshift |")
print("| --- | ---: | ---: | ---: |")
for key in ["step_ms", "observe_ms", "act_ms", "setup_ms"]:
    for q in ["p50", "p90"]:
        a, b = med("skillshift", key, q), med("browsergym", key, q)
        print(f"| {key[:-3]} {q} | {a:.1f} | {b:.1f} | {b / a:.2f} |" if a else f"| {key[:-3]} {q} | {a} | {b} | - |")
errs = {s: sum(r["result"]["errors"] for r in rows if r["side"] == s) for s in ("skillshift", "browsergym")}
chars = {s: [r["result"]["obs_chars"]["first"] for r in rows if r["side"] == s][0] for s in ("skillshift", "browsergym")}
print(f"errors: {errs}; observation chars (first step): {chars}")
PY
echo "rounds: $OUT/rounds.jsonl" >&2
