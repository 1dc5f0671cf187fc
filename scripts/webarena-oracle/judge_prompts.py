"""Runs WebArena's own LLM judge functions (libwebarena's
evaluation_harness.helper_functions.llm_fuzzy_match and llm_ua_match) with
the model call replaced by a recorder that answers a given reply, and prints
what WebArena would have sent and how it read the reply.

Usage: python judge_prompts.py < [[kind, pred, reference, question, reply], ...]
       > [{"messages", "model", "temperature", "max_tokens", "top_p", "score"} | {..., "error"}]

kind is "fuzzy" or "ua"; score is WebArena's 1.0 / 0.0, and "error" names
the exception when WebArena cannot read the reply (its assert).
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
for name in ("REDDIT", "SHOPPING", "SHOPPING_ADMIN", "GITLAB", "WIKIPEDIA", "MAP", "HOMEPAGE"):
    os.environ[name] = "http://127.0.0.1:9"  # libwebarena refuses to import without them; never reached

from webarena.evaluation_harness import helper_functions as hf  # noqa: E402

CALL = {}


def recorder(reply):
    def generate(**kwargs):
        CALL.clear()
        CALL.update(kwargs)
        return reply

    return generate


def run(kind, pred, reference, question, reply):
    hf.generate_from_openai_chat_completion = recorder(reply)
    fn = hf.llm_fuzzy_match if kind == "fuzzy" else hf.llm_ua_match
    out = {}
    try:
        out["score"] = fn(pred, reference, question)
    except Exception as e:  # noqa: BLE001 - reported, never hidden
        out["error"] = f"{type(e).__name__}: {e}"
    for key in ("messages", "model", "temperature", "max_tokens", "top_p"):
        out[key] = CALL.get(key)
    return out


def main():
    cases = json.load(sys.stdin)
    json.dump([run(*c) for c in cases], sys.stdout)


if __name__ == "__main__":
    main()
