"""Prints WebArena's own text observation of given pages (libwebarena's browser_env).

Usage: python observe.py < request.json > observations.jsonl

Input (at most 4 MiB): {"groups": [{"cookies": [{"name", "value", "url"}], "pages":
[{"key", "url"} or {"key", "action": "go_back"}]}], "current_viewport_only": false,
"sleep_after_execution": 0.0}.
Each group is one signed-in browser, as one WebArena task has: a `ScriptBrowserEnv`
(`observation_type="accessibility_tree"`, viewport 1280x720, WebArena's defaults)
reset with a config file whose `start_url` is the group's first page and whose
`storage_state` holds the group's cookies; every later page is opened by WebArena's
own `goto` action (`env.step(create_goto_url_action(url))`), and a page given as
{"action": "go_back"} is reached by WebArena's own `go_back` action
(`env.step(create_go_back_action())`; no group starts with one). The browser is the
system Chromium (CHROMIUM, default /usr/bin/chromium): WebArena's `setup` launches
Playwright's bundled one, so `BrowserType.launch` is given `executable_path` and
nothing else changes.

`current_viewport_only` defaults to false, as WebArena's `run.py` has it (a
`store_true` flag its README's command line does not pass).

Output: one JSON object per page, in input order:
  {"key", "url", "final_url",
   "text":       the observation, exactly as `env.step` returns it in obs["text"],
   "no_inline":  the same page through WebArena's code with Chrome's InlineTextBox
                 nodes taken out of the tree before `parse_accessibility_tree`,
   "our_ids":    as "no_inline", every node renamed by skillshift's numbering
                 (1, 2, 3, ... in tree order, one number per DOM node),
   "error"?:     why the page could not be observed}
"no_inline" and "our_ids" rerun only WebArena's parse and clean steps, on the very
tree the "text" was made from: they tell which differences these two departures
explain (docs/webarena.md#observation-parity).

Bad input is one line on stderr and exit 2.
"""
import json
import os
import sys
import tempfile
import warnings

MAX_INPUT = 4 << 20

warnings.filterwarnings("ignore")
for name in ("REDDIT", "SHOPPING", "SHOPPING_ADMIN", "GITLAB", "WIKIPEDIA", "MAP", "HOMEPAGE"):
    os.environ.setdefault(name, "http://127.0.0.1:9")  # read at import by env_config; never reached


def bad(message):
    print(f"observe.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_request():
    raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(raw) > MAX_INPUT:
        bad(f"stdin: request larger than {MAX_INPUT} bytes")
    try:
        req = json.loads(raw)
    except ValueError as e:
        bad(f"stdin: not JSON: {e}")
    if not isinstance(req, dict) or not isinstance(req.get("groups"), list):
        bad('stdin: expected an object with a "groups" list')
    for g, group in enumerate(req["groups"]):
        if not isinstance(group, dict) or not isinstance(group.get("pages"), list) or not group["pages"]:
            bad(f"stdin: groups[{g}]: expected a non-empty \"pages\" list")
        for p, page in enumerate(group["pages"]):
            ok = isinstance(page, dict) and "key" in page and (
                (isinstance(page.get("url"), str) and "action" not in page)
                or (page.get("action") == "go_back" and "url" not in page and p > 0)
            )
            if not ok:
                bad(f"stdin: groups[{g}].pages[{p}]: expected {{\"key\", \"url\"}} or, after the first, "
                    f"{{\"key\", \"action\": \"go_back\"}}")
        for c, cookie in enumerate(group.get("cookies", [])):
            if not isinstance(cookie, dict) or not all(isinstance(cookie.get(k), str) for k in ("name", "value", "url")):
                bad(f"stdin: groups[{g}].cookies[{c}]: expected {{\"name\", \"value\", \"url\"}} strings")
    return req


def storage_state(cookies):
    """A Playwright storage_state, as WebArena's auto_login saves one."""
    from urllib.parse import urlsplit

    out = []
    for c in cookies:
        host = urlsplit(c["url"]).hostname or ""
        out.append({"name": c["name"], "value": c["value"], "domain": host, "path": "/", "expires": -1,
                    "httpOnly": True, "secure": False, "sameSite": "Lax"})
    return {"cookies": out, "origins": []}


def variants(processor, tree):
    """WebArena's parse and clean steps on `tree` without InlineTextBox nodes, then also renumbered."""
    import copy

    kept = [n for n in copy.deepcopy(tree) if n.get("role", {}).get("value") != "InlineTextBox"]
    no_inline, _ = processor.parse_accessibility_tree(kept)
    no_inline = processor.clean_accesibility_tree(no_inline)
    renamed, by_backend, number = {}, {}, 0
    for n in kept:
        backend = n.get("backendDOMNodeId")
        if backend is not None and backend in by_backend:
            renamed[n["nodeId"]] = by_backend[backend]
            continue
        number += 1
        renamed[n["nodeId"]] = str(number)
        if backend is not None:
            by_backend[backend] = str(number)
    for n in kept:
        n["nodeId"] = renamed[n["nodeId"]]
        n["childIds"] = [renamed.get(c, c) for c in n.get("childIds", [])]
    ours, _ = processor.parse_accessibility_tree(kept)
    ours = processor.clean_accesibility_tree(ours)
    return no_inline, ours


def main():
    req = read_request()
    from playwright.sync_api._generated import BrowserType

    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    launch = BrowserType.launch

    def launch_system(self, *args, **kwargs):
        kwargs.setdefault("executable_path", chromium)
        return launch(self, *args, **kwargs)

    BrowserType.launch = launch_system

    from webarena.browser_env import ScriptBrowserEnv, create_go_back_action, create_goto_url_action
    from webarena.browser_env import processors

    # Keep the tree each observation was made from, for the two variants.
    seen = {}
    fetch = processors.TextObervationProcessor.fetch_page_accessibility_tree

    def fetch_and_keep(self, info, client, current_viewport_only):
        tree = fetch(self, info, client, current_viewport_only)
        seen["tree"] = tree
        return tree

    processors.TextObervationProcessor.fetch_page_accessibility_tree = fetch_and_keep

    env = ScriptBrowserEnv(
        headless=True,
        observation_type="accessibility_tree",
        current_viewport_only=bool(req.get("current_viewport_only", False)),
        viewport_size={"width": 1280, "height": 720},
        sleep_after_execution=float(req.get("sleep_after_execution", 0.0)),
    )
    processor = env.observation_handler.text_processor
    with tempfile.TemporaryDirectory() as tmp:
        for g, group in enumerate(req["groups"]):
            state = os.path.join(tmp, f"state-{g}.json")
            with open(state, "w") as f:
                json.dump(storage_state(group.get("cookies", [])), f)
            config = os.path.join(tmp, f"config-{g}.json")
            with open(config, "w") as f:
                json.dump({"start_url": group["pages"][0]["url"], "storage_state": state, "geolocation": None}, f)
            for p, page in enumerate(group["pages"]):
                out = {"key": page["key"], "url": page.get("url")}
                seen.clear()
                try:
                    if p == 0:
                        obs, _ = env.reset(options={"config_file": config})
                    else:
                        back = page.get("action") == "go_back"
                        action = create_go_back_action() if back else create_goto_url_action(page["url"])
                        obs, _, _, _, info = env.step(action)
                        if info.get("fail_error"):
                            raise RuntimeError(info["fail_error"])
                    out["final_url"] = env.page.url
                    out["text"] = obs["text"]
                    header = obs["text"].split("\n\n", 1)[0]
                    no_inline, our_ids = variants(processor, seen["tree"])
                    out["no_inline"] = f"{header}\n\n{no_inline}"
                    out["our_ids"] = f"{header}\n\n{our_ids}"
                except Exception as e:  # one page's failure is reported, the rest still run
                    out["error"] = f"{type(e).__name__}: {e}"
                print(json.dumps(out), flush=True)
    env.close()


main()
