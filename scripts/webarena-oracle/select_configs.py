"""Picks the WebArena configs kept as test data (common/tests/data/webarena/configs.json).

Usage: python3 select_configs.py TEST_RAW_JSON OUT_JSON

Chooses, in task-id order, tasks that together carry every construct of
WebArena's configs (each site and site pair, every evaluator and reference
kind, notes, prep_actions, helpers, |AND| start URLs, |OR| alternatives),
then fills up to 60 tasks with an even spread over the rest. The tasks are
copied unchanged.
"""
import json
import sys


def constructs(t):
    e = t["eval"]
    out = {"sites:" + ",".join(t["sites"]), "types:" + ",".join(e["eval_types"])}
    ra = e["reference_answers"] or {}
    out.add("ra:" + ",".join(ra))
    if ra.get("fuzzy_match") == "N/A":
        out.add("fuzzy:N/A")
    mi = ra.get("must_include") or []
    if len(mi) == 1 and len(mi[0].strip()) == 1:
        out.add("must_include:one-char")
    if any("|OR|" in m for m in mi):
        out.add("must_include:or-text")
    for k in ("string_note", "reference_answer_raw_annotation", "url_note", "annotation_note"):
        if k in e:
            out.add("eval:" + k)
    if "string_note" in t:
        out.add("task:string_note")
    if e["reference_url"] is None:
        out.add("reference_url:null")
    elif e["reference_url"] == "":
        out.add("reference_url:empty")
    if "|OR|" in (e["reference_url"] or ""):
        out.add("reference_url:or")
    if "?" in (e["reference_url"] or ""):
        out.add("reference_url:query")
    if "|AND|" in t["start_url"]:
        out.add("start_url:and")
    if t["storage_state"] is None:
        out.add("storage_state:null")
    for p in e["program_html"]:
        loc = p["locator"]
        out.add("locator:" + ("empty" if not loc.strip() else loc.split("(")[0][:24]))
        out.add("url:" + ("last" if p["url"] == "last" else p["url"].split("(")[0] if p["url"].startswith("func") else "url"))
        out.add("rc:" + ",".join(p["required_contents"]))
        if "prep_actions" in p:
            out.add("prep_actions")
        if any("|OR|" in m for m in p["required_contents"].get("must_include", [])):
            out.add("rc:or")
    return out


def main():
    tasks = json.load(open(sys.argv[1]))
    chosen, covered = [], set()
    for t in tasks:
        new = constructs(t) - covered
        if new:
            chosen.append(t["task_id"])
            covered |= new
    rest = [t["task_id"] for t in tasks if t["task_id"] not in chosen]
    step = max(1, len(rest) // max(1, 60 - len(chosen)))
    chosen += rest[::step][: max(0, 60 - len(chosen))]
    keep = [t for t in tasks if t["task_id"] in set(chosen)]
    json.dump(keep, open(sys.argv[2], "w"), indent=2, ensure_ascii=False)
    open(sys.argv[2], "a").write("\n")
    print(f"{len(keep)} tasks, {len(covered)} constructs", file=sys.stderr)


main()
