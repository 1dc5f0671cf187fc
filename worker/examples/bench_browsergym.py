"""BrowserGym's step on a page, timed like `skillshift bench step` (docs/performance.md).

    python bench_browsergym.py URL STEPS

Runs BrowserGym 0.14.3 (Playwright 1.44, Debian's Chromium) on URL: each step is BrowserGym's
observation (its `_get_obs`: element marking, DOM snapshot, merged AX tree, screenshot, plus
`flatten_axtree_to_str`, the text an agent reads) and one action in the same rotation as ours:
click the next link whose href starts with '#', fill the next textbox with 'text <i>',
scroll down one viewport. `pre_observation_delay` is 0 (BrowserGym's default sleeps 0.5 s).
Prints one JSON object with the keys `skillshift bench step --json` prints.
"""

import json
import sys
import time

from browsergym.core.action.highlevel import HighLevelActionSet
from browsergym.core.env import BrowserEnv
from browsergym.core.task import OpenEndedTask
from browsergym.utils.obs import flatten_axtree_to_str


def pct(v, p):
    if not v:
        return 0.0
    s = sorted(v)
    k = max(1, min(len(s), -(-len(s) * p // 1)))
    return round(s[int(k) - 1] * 1000, 3)


import os

# The same binary as the skillshift side (scripts/bench/browsergym.sh sets it for both).
CHROMIUM = os.environ.get("SKILLSHIFT_CHROMIUM") or "/usr/lib/chromium/chromium"


def use_debian_chromium():
    # BrowserGym launches two browsers per reset (the page's and its chat window's); both get
    # Debian's Chromium, since Playwright's own browser download does not work here.
    import browsergym.core

    pw = browsergym.core._get_global_playwright()
    launch = pw.chromium.launch

    def launch_debian(**kw):
        kw.setdefault("executable_path", CHROMIUM)
        return launch(**kw)

    pw.chromium.launch = launch_debian


def main():
    url, steps = sys.argv[1], int(sys.argv[2])
    use_debian_chromium()
    setups = []
    env = BrowserEnv(
        task_entrypoint=OpenEndedTask,
        task_kwargs={"start_url": url, "goal": "bench"},
        headless=True,
        pre_observation_delay=0.0,
        # demo_mode "off", as a benchmark runs it (the default highlights each target and waits 1 s).
        action_mapping=HighLevelActionSet(demo_mode="off").to_python_code,
    )
    env.reset()  # the cold start: a new browser
    for _ in range(5):
        t = time.perf_counter()
        env.reset()  # BrowserGym's attempt setup: a new browser, context and page, the start URL loaded
        setups.append(time.perf_counter() - t)
    page = env.page
    obs_t, act_t, step_t, errors, chars = [], [], [], 0, []
    cursor = [0, 0]
    for i in range(steps):
        t = time.perf_counter()
        env._wait_dom_loaded()
        obs = env._get_obs()
        text = flatten_axtree_to_str(obs["axtree_object"])
        o = time.perf_counter() - t
        chars.append(len(text))
        links = page.evaluate("[...document.querySelectorAll('a[href^=\"#\"]')].map(a => a.getAttribute('bid'))")
        boxes = page.evaluate(
            "[...document.querySelectorAll('input[type=text], input:not([type]), textarea')].map(e => e.getAttribute('bid'))"
        )
        action = "scroll(0, 720)"
        for k in range(3):
            kind = (i + k) % 3
            if kind == 0 and links:
                action = f"click({json.dumps(links[cursor[0] % len(links)])})"
                cursor[0] += 1
                break
            if kind == 1 and boxes:
                action = f"fill({json.dumps(boxes[cursor[1] % len(boxes)])}, 'text {i}')"
                cursor[1] += 1
                break
            if kind == 2:
                break
        a = time.perf_counter()
        env.last_action = action
        try:
            from browsergym.core.action.base import execute_python_code

            execute_python_code(env.action_mapping(action), page, send_message_to_user=None, report_infeasible_instructions=None)
        except Exception as e:
            errors += 1
            print(f"step {i}: {action}: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
        act_t.append(time.perf_counter() - a)
        obs_t.append(o)
        step_t.append(time.perf_counter() - t)
    env.close()
    out = {
        "url": url,
        "steps": steps,
        "errors": errors,
        "setup_ms": {"n": len(setups), "p50": pct(setups, 0.5), "p90": pct(setups, 0.9)},
        "observe_ms": {"p50": pct(obs_t, 0.5), "p90": pct(obs_t, 0.9)},
        "act_ms": {"p50": pct(act_t, 0.5), "p90": pct(act_t, 0.9)},
        "step_ms": {"p50": pct(step_t, 0.5), "p90": pct(step_t, 0.9)},
        "obs_chars": {"first": chars[0] if chars else 0, "last": chars[-1] if chars else 0},
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
