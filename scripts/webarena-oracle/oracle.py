"""Runs WebArena's own evaluator code (libwebarena) on cases and prints verdicts.

Usage: python oracle.py < cases.json > verdicts.json

Input: {"cases": [...], "tokens": ["text", ...]}. A case is
  {"id", "intent", "eval", "answer", "final_url", "pages": {url: {"content": html,
   "values": {expression: value | {"throw": message}}}}, "judge": bool}
with placeholders already resolved. Each case becomes a config file and is scored
by `evaluator_router(config)(trajectory, config, page, None)`, the trajectory
ending with `create_stop_action(answer)`. The page is a stand-in for Playwright's:
it answers `content()` and `evaluate("() => expr")` from the case's table, opens
pages from its context as WebArena does, and logs the URLs it was sent to. The LLM
judge is a deterministic stand-in (fuzzy: the reference is a substring of the
answer; unachievable reason: the answer says "because") whose calls are logged;
with "judge": false a call to it is reported as {"verdict": "invalid"}.

"browser_cases": [{"id", "url", "setup"?, "eval"}] are scored on real pages instead: each URL
is loaded in Playwright's Chromium (CHROMIUM, default /usr/lib/chromium/chromium), each
"setup" expression evaluated in it (what an agent did there), and WebArena's evaluator reads
that page.

Output: {"cases": [{"id", "verdict": "pass"|"fail"|"invalid", "error"?, "opened": [url],
"judge_calls": [[kind, pred, reference, question]]}], "tokens": [[token, ...]],
"browser_cases": [{"id", "verdict", "error"?}]}.
"""
import json
import os
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")
for name in ("REDDIT", "SHOPPING", "SHOPPING_ADMIN", "GITLAB", "WIKIPEDIA", "MAP", "HOMEPAGE"):
    os.environ[name] = "http://127.0.0.1:9"  # never reached: no case calls the REST helpers

from nltk.tokenize import word_tokenize  # noqa: E402
from webarena.browser_env import create_stop_action  # noqa: E402
from webarena.evaluation_harness import evaluators as ev  # noqa: E402
from webarena.evaluation_harness.helper_functions import PseudoPage  # noqa: E402

time.sleep = lambda _seconds: None  # WebArena waits 3 s after each navigation


class JudgeNeeded(Exception):
    pass


STATE = {"judge": False, "calls": [], "opened": []}


def fake_fuzzy(pred, reference, question):
    STATE["calls"].append(["fuzzy_match", pred, reference, question])
    if not STATE["judge"]:
        raise JudgeNeeded("fuzzy_match")
    return 1.0 if reference.lower() in pred else 0.0


def fake_ua(pred, reference, question):
    STATE["calls"].append(["ua_match", pred, reference, question])
    if not STATE["judge"]:
        raise JudgeNeeded("ua_match")
    return 1.0 if "because" in pred else 0.0


ev.llm_fuzzy_match = fake_fuzzy
ev.llm_ua_match = fake_ua


class FakeContext:
    def __init__(self, pages):
        self.pages = pages

    def new_page(self):
        return FakePage(self.pages, None, self)


class FakePage:
    def __init__(self, pages, url, context):
        self.pages = pages
        self.url = url
        self.context = context

    def goto(self, url):
        STATE["opened"].append(url)
        self.url = url

    def close(self):
        pass

    def content(self):
        return self.pages.get(self.url, {}).get("content", "")

    def evaluate(self, js):
        prefix = "() => "
        assert js.startswith(prefix), js
        expr = js[len(prefix):]
        table = self.pages.get(self.url, {}).get("values", {})
        if expr not in table:
            raise RuntimeError(f"no value for {expr!r} at {self.url}")
        v = table[expr]
        if isinstance(v, dict) and set(v) == {"throw"}:
            raise RuntimeError(v["throw"])
        return v


def run(case):
    STATE.update(judge=case.get("judge", False), calls=[], opened=[])
    config = {
        "sites": ["gitlab"], "task_id": 0, "require_login": False, "storage_state": None,
        "start_url": case["final_url"], "geolocation": None, "intent_template": "",
        "instantiation_dict": {}, "intent": case["intent"], "require_reset": False,
        "eval": case["eval"], "intent_template_id": 0,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
        path = f.name
    out = {"id": case["id"]}
    try:
        pages = case.get("pages", {})
        final = FakePage(pages, case["final_url"], FakeContext(pages))
        page = PseudoPage(final, case["final_url"])
        trajectory = [{"observation": {}, "info": {}}, create_stop_action(case["answer"])]
        score = ev.evaluator_router(path)(trajectory, path, page, None)
        out["verdict"] = "pass" if score == 1.0 else "fail"
        out["score"] = score
    except JudgeNeeded as e:
        out["verdict"] = "invalid"
        out["error"] = f"needs the judge ({e})"
    except Exception as e:  # WebArena's evaluator raised: the task cannot be scored
        out["verdict"] = "invalid"
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        os.unlink(path)
    out["opened"] = STATE["opened"]
    out["judge_calls"] = STATE["calls"]
    return out


def run_in_browser(cases):
    """Scores cases on real pages: each is loaded in Playwright's Chromium first."""
    if not cases:
        return []
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium"),
                                    args=["--no-sandbox"])
        for case in cases:
            # A context of the case's own: WebArena's evaluator opens a check's URL with context.new_page().
            context = browser.new_context()
            page = context.new_page()
            page.goto(case["url"])
            for js in case.get("setup", []):
                page.evaluate(f"() => {{ {js}; }}")
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump({"sites": ["gitlab"], "task_id": 0, "require_login": False, "storage_state": None,
                           "start_url": case["url"], "geolocation": None, "intent_template": "",
                           "instantiation_dict": {}, "intent": "", "require_reset": False,
                           "eval": case["eval"], "intent_template_id": 0}, f)
                path = f.name
            res = {"id": case["id"]}
            try:
                trajectory = [{"observation": {}, "info": {}}, create_stop_action("")]
                score = ev.evaluator_router(path)(trajectory, path, page, None)
                res["verdict"] = "pass" if score == 1.0 else "fail"
            except Exception as e:
                res["verdict"] = "invalid"
                res["error"] = f"{type(e).__name__}: {e}"
            finally:
                os.unlink(path)
                context.close()
            out.append(res)
        browser.close()
    return out


def main():
    data = json.load(sys.stdin)
    result = {
        "cases": [run(c) for c in data.get("cases", [])],
        "tokens": [word_tokenize(t) for t in data.get("tokens", [])],
        "browser_cases": run_in_browser(data.get("browser_cases", [])),
    }
    json.dump(result, sys.stdout)


main()
