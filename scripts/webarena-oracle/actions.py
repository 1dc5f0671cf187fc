"""Parses action strings with WebArena's own parser (libwebarena's
browser_env.actions.create_id_based_action) and prints what each became.

Usage: python actions.py < ["click [1]", ...] > [{"kind", ...}, ...]

Each result is {"kind": "invalid"} when WebArena raises ActionParsingError,
{"kind": "crash", "error"} for any other exception, else the action type in
lowercase with its arguments: "id" (click, hover, type), "typed" (the text
type sends to the keyboard, with "\n" for the enter flag), "keys" (press,
after WebArena's key-name mapping), "direction", "url", "index", "answer".
"""
import json
import sys
import warnings

warnings.filterwarnings("ignore")

from webarena.browser_env.actions import (  # noqa: E402
    ActionParsingError,
    ActionTypes,
    _id2key,
    create_id_based_action,
)


def describe(text):
    try:
        a = create_id_based_action(text)
    except ActionParsingError:
        return {"kind": "invalid"}
    except Exception as e:  # noqa: BLE001 - reported, never hidden
        return {"kind": "crash", "error": f"{type(e).__name__}: {e}"}
    t = a["action_type"]
    if t == ActionTypes.CLICK:
        return {"kind": "click", "id": int(a["element_id"])}
    if t == ActionTypes.HOVER:
        return {"kind": "hover", "id": int(a["element_id"])}
    if t == ActionTypes.TYPE:
        return {"kind": "type", "id": int(a["element_id"]), "typed": "".join(_id2key[i] for i in a["text"])}
    if t == ActionTypes.KEY_PRESS:
        return {"kind": "press", "keys": a["key_comb"]}
    if t == ActionTypes.SCROLL:
        return {"kind": "scroll", "direction": a["direction"]}
    if t == ActionTypes.GOTO_URL:
        return {"kind": "goto", "url": a["url"]}
    if t == ActionTypes.PAGE_FOCUS:
        return {"kind": "tab_focus", "index": a["page_number"]}
    if t == ActionTypes.STOP:
        return {"kind": "stop", "answer": a["answer"]}
    names = {
        ActionTypes.NEW_TAB: "new_tab",
        ActionTypes.PAGE_CLOSE: "close_tab",
        ActionTypes.GO_BACK: "go_back",
        ActionTypes.GO_FORWARD: "go_forward",
    }
    return {"kind": names.get(t, str(t))}


json.dump([describe(s) for s in json.load(sys.stdin)], sys.stdout)
