"""Scores the final state of real attempts on a live site with WebArena's own evaluator code (libwebarena).

Usage: python real_pages.py            (one JSON case per line on stdin, one JSON verdict per line on stdout)

The harness has just run an attempt on a real instance (docs/real-sites.md) and the site is still as the
attempt left it. A case is
  {"id", "config": the task's WebArena config with its placeholders resolved,
   "answer": the agent's stop answer, "final_url": the page the agent ended on,
   "login": {"url": the site's base URL, "user", "password", "confirm": [button names after the form]}}
Each case gets a fresh browser context of Playwright's Chromium (CHROMIUM, default
/usr/lib/chromium/chromium), signed in through the site's own form (WordPress's wp-login.php), with the
agent's final page open in it; then `evaluator_router(config)(trajectory, config, page, None)`, the
trajectory ending with `create_stop_action(answer)`, as WebArena's run.py scores an attempt. A check's
URL is opened by WebArena's evaluator itself, in `page.context.new_page()`.

Output per case: {"id", "verdict": "pass"|"fail"|"invalid", "score"?, "error"?}. The process answers a
case before reading the next, so the caller can reset the site in between.
"""
import json
import os
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")
for name in ("REDDIT", "SHOPPING", "SHOPPING_ADMIN", "GITLAB", "WIKIPEDIA", "MAP", "HOMEPAGE"):
    os.environ.setdefault(name, "http://127.0.0.1:9")  # never reached: no WordPress task calls the REST helpers

from playwright.sync_api import sync_playwright  # noqa: E402
from webarena.browser_env import create_stop_action  # noqa: E402
from webarena.evaluation_harness import evaluators as ev  # noqa: E402

# WebArena sleeps 3 s after each check's navigation for the page to render; Playwright's goto has waited
# for the load event, as the harness's scorer does.
time.sleep = lambda _seconds: None


def sign_in(page, login):
    page.goto(login["url"].rstrip("/") + "/wp-login.php")
    page.get_by_role("textbox", name="Username or Email Address").fill(login["user"])
    page.get_by_role("textbox", name="Password", exact=True).fill(login["password"])
    page.get_by_role("button", name="Log In").click()
    page.wait_for_load_state()
    for name in login.get("confirm", []):
        page.get_by_role("button", name=name).click()
        page.wait_for_load_state()
    if page.get_by_role("link", name="Log Out").count() == 0 and "wp-admin" not in page.url:
        raise RuntimeError(f"not signed in to {login['url']} (at {page.url})")


def score(browser, case):
    out = {"id": case["id"]}
    context = browser.new_context()
    path = None
    try:
        page = context.new_page()
        sign_in(page, case["login"])
        page.goto(case["final_url"])
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(case["config"], f)
            path = f.name
        trajectory = [{"observation": {}, "info": {}}, create_stop_action(case["answer"])]
        value = ev.evaluator_router(path)(trajectory, path, page, None)
        out["verdict"] = "pass" if value == 1.0 else "fail"
        out["score"] = value
    except Exception as e:  # the evaluator (or the sign-in) raised: no verdict
        out["verdict"] = "invalid"
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        if path:
            os.unlink(path)
        context.close()
    return out


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium"),
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        for line in sys.stdin:
            if not line.strip():
                continue
            print(json.dumps(score(browser, json.loads(line))), flush=True)
        browser.close()


if __name__ == "__main__":
    main()
