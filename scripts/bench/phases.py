#!/usr/bin/env python3
"""Where a sweep's slot time goes, phase by phase, from a span log (SKILLSHIFT_SPAN_LOG, telemetry/src/span_log.rs).

    python3 scripts/bench/phases.py SPANS.jsonl --slots N --wall SECONDS [--floors FLOORS.json] [--cpu CPU_S] [--json]

Slot time is the sweep's wall time times its slots (workers x slots each): every second of it is given to one row.
Within an attempt (a `run` span), every moment goes to the deepest span open then, so nested phases are not
counted twice (a skill's own time leaves out the `locate` and `settle` spans inside it) and the rows sum to the
attempts' wall time. Queue wait is the slot time no `run` span covered: a
slot waiting for its next assignment, or the sweep's start and end. `deliver` (the record and trajectory written to
the outbox) runs beside the next attempt, off the slot's path; its row is shown but not in the shares.

FLOORS.json is `skillshift bench floors --json`: each phase's floor, what the same work costs done bare (one CDP
call, one navigation), in ms, beside the phase's mean per occurrence. Where it has each floor's machine CPU per
operation (`cpu_ms`), each row's CPU floor is its count times that (a start page: an attempt's whole frame, its
context, login and checkin too; a settle: a navigation when it ended on a new document, one question to the page
when not), and their sum is the grid's CPU floor: the least machine CPU the sweep's work takes in Chrome. Divided
by the machine's cores it is a wall time no harness can beat on this machine; CPU_S, the sweep's own machine CPU
(`scripts/bench/cpu.sh`), is set beside it.
"""

import argparse
import json
import sys
from collections import defaultdict

# Rows in the order an attempt meets them: (row, spans whose own time it takes, floor key, CPU floor). A span is
# named alone or as `name<parent` (a `settle` counts where the input or navigation it waits on was made). The CPU
# floor is a floor key whose `cpu_ms` each occurrence costs at the least; SETTLE, a navigation's for a settle that
# ended on a new document and one question to the page's for one that did not; or INPUT, a click's for an action
# that sends input events (a `goto` or `go_back` is its settle's navigation, a tab switch costs nothing here). A row
# with none is the harness's own work, whose floor is nothing; the context, login and checkin rows are in the
# start page's frame. A skill's input is counted once per skill, though a skill may make several.
SETTLE = "settle"
INPUT = "input"
INPUT_KINDS = {"click", "type", "fill", "hover", "press", "scroll"}
ROWS = [
    ("reset", ["reset"], None, None),
    ("context (checkout)", ["new_context", "new_browser", "recycle"], "context", None),
    ("login (cookies set)", ["login"], "login", None),
    ("setup (perturbations, tab hooks)", ["setup"], None, None),
    ("start page (navigate, settle to the load)", ["start", "settle<start"], "navigate_fresh", "attempt_frame"),
    ("observe", ["observe"], "observe", "observe"),
    ("act (primitive actions)", ["act"], "click", INPUT),
    ("act: settle (a click's navigation, if any)", ["settle<act"], "navigate", SETTLE),
    ("skill input (skill less locate, settle)", ["skill"], "click", "click"),
    ("skill: locate", ["locate"], "query", "query"),
    ("skill: settle (a click's navigation)", ["settle<skill"], "navigate", SETTLE),
    ("screenshot", ["screenshot"], "screenshot", "screenshot"),
    ("step, rest (agent, perturbation, trace flush)", ["step"], None, None),
    ("score", ["score"], None, None),
    ("score: settle", ["settle<score"], "navigate", SETTLE),
    ("network (trace taken)", ["network"], None, None),
    ("finish (record, trajectory)", ["finish"], None, None),
    ("context (checkin: dispose, spare)", ["dispose_context", "spare_context"], "context_cycle", None),
    ("run, rest", ["run"], None, None),
]
BESIDE = [("deliver (outbox, beside the next attempt)", ["deliver"], None, None)]


def load(path):
    """The span log's lines, each with its parent line resolved.

    Span ids are reused once a span has closed, so a child's parent is the first line after it with the parent's
    id (a parent closes after its children, and its id cannot be reused while it is open).
    """
    lines = []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                lines.append(json.loads(raw))
            except json.JSONDecodeError as e:
                sys.exit(f"phases.py: {path}:{n}: not a JSON line: {e}")
    later = {}
    parent_of = [None] * len(lines)
    for i in range(len(lines) - 1, -1, -1):
        s = lines[i]
        p = s.get("parent", 0)
        if p:
            parent_of[i] = later.get(p)
        later[s["id"]] = i
    return lines, parent_of


# A step, which holds its phases without running them, is measured over its life; every other span over its
# busy window, from its first enter to its last exit, so neither a handle kept after the work (a score span kept
# to record its verdict) nor a task that outlives it (a new browser's DevTools reader keeps `new_browser`, and
# so its `run`, open as long as the browser lives) counts what came after.
CONTAINERS = {"step"}
# A task centre's bookkeeping span (`task`, skillshift_tasks) is no phase: its time goes to what it serves.
IGNORED = {"task"}


def interval(s):
    if s["name"] not in CONTAINERS and "busy_us" in s:
        return s["entered_us"], s["entered_us"] + s["busy_us"]
    return s["start_us"], s["start_us"] + s["wall_us"]


def own_times(lines, parent_of):
    """Each span's own time in microseconds: within each `run`, every moment goes to the deepest span open
    then (the latest opened among equals), so phases nested or overlapping are never counted twice and the
    runs' own times sum to their wall time. Spans under no run get their busy window (or life)."""
    children = defaultdict(list)
    for i, p in enumerate(parent_of):
        if p is not None:
            children[p].append(i)
    own = [0] * len(lines)
    for i, s in enumerate(lines):
        if s["name"] != "run":
            if parent_of[i] is None:
                a, b = interval(s)
                own[i] = b - a
            continue
        lo, hi = interval(s)
        spans = [(lo, hi, 0, i)]
        stack = [(c, 1) for c in children[i]]
        while stack:
            j, depth = stack.pop()
            if lines[j]["name"] in IGNORED:
                stack.extend((c, depth) for c in children[j])
                continue
            a, b = interval(lines[j])
            a, b = max(a, lo), min(b, hi)
            if b > a:
                spans.append((a, b, depth, j))
            stack.extend((c, depth + 1) for c in children[j])
        cuts = sorted({t for a, b, _, _ in spans for t in (a, b)})
        for a, b in zip(cuts, cuts[1:]):
            best = max((sp for sp in spans if sp[0] <= a and sp[1] >= b), key=lambda sp: (sp[2], sp[0]))
            own[best[3]] += b - a
    return own


def inside_run(lines, parent_of):
    """Whether each span is a `run` or under one (coordinator spans and roots of other kinds are not)."""
    memo = [None] * len(lines)

    def walk(i):
        chain = []
        while i is not None and memo[i] is None:
            if lines[i]["name"] == "run":
                memo[i] = True
                break
            chain.append(i)
            i = parent_of[i]
        value = memo[i] if i is not None else False
        for j in chain:
            memo[j] = value
        return value

    return [walk(i) for i in range(len(lines))]


def cpu_floor(rule, count, marked, cpu):
    """A row's CPU floor in ms (see ROWS), or None when a floor it needs was not measured. `marked` is how many of
    the row's spans navigated (SETTLE) or sent input (INPUT)."""
    if rule == INPUT:
        c = cpu.get("click")
        return None if c is None else marked * c
    if rule == SETTLE:
        nav, ask = cpu.get("navigate"), cpu.get("round_trip")
        if nav is None or ask is None:
            return None
        return marked * nav + (count - marked) * ask
    c = cpu.get(rule)
    return None if c is None else count * c


def table(path, slots, wall_s, floors, cpu=None, sweep_cpu_s=None, cores=None):
    cpu = cpu or {}
    lines, parent_of = load(path)
    own = own_times(lines, parent_of)
    under = inside_run(lines, parent_of)
    # name, and name<parent -> [own us, count, marked: settles that navigated, actions that sent input]
    per_name = defaultdict(lambda: [0, 0, 0])
    for i, s in enumerate(lines):
        if (under[i] and s["name"] not in IGNORED) or s["name"] == "deliver":
            keys = [s["name"]]
            if parent_of[i] is not None:
                keys.append(f"{s['name']}<{lines[parent_of[i]]['name']}")
            fields = s.get("fields", {})
            marked = fields.get("navigated") == "true" or (s["name"] == "act" and fields.get("kind") in INPUT_KINDS)
            for k in keys:
                per_name[k][0] += own[i]
                per_name[k][1] += 1
                per_name[k][2] += marked
    runs = [s for s in lines if s["name"] == "run"]
    run_us = sum(interval(s)[1] - interval(s)[0] for s in runs)
    slot_us = wall_s * 1e6 * slots
    rows = []
    named = set()
    for label, names, floor_key, rule in ROWS + BESIDE:
        us = sum(per_name[n][0] for n in names)
        # A row's count is its first span's: a start page is one `start` with the `settle` inside it.
        count = per_name[names[0]][1]
        marked = per_name[names[0]][2]
        named.update(names)
        floor_cpu = cpu_floor(rule, count, marked, cpu) if rule else None
        rows.append({"phase": label, "seconds": us / 1e6, "count": count, "floor": floor_key,
                     "navigated": marked if rule == SETTLE else None, "inputs": marked if rule == INPUT else None,
                     "cpu_floor_s": None if floor_cpu is None else floor_cpu / 1e3,
                     "beside": (label, names, floor_key, rule) in BESIDE})
    # What no row took: spans by name, less those a `name<parent` row took.
    left = defaultdict(lambda: [0, 0])
    for n, v in per_name.items():
        if "<" in n:
            if n in named:
                base = n.split("<")[0]
                left[base][0] -= v[0]
                left[base][1] -= v[1]
            continue
        if n not in named:
            left[n][0] += v[0]
            left[n][1] += v[1]
    other = {n: v for n, v in left.items() if v[1] > 0 and n not in named}
    rows.insert(len(ROWS), {"phase": "other spans under run", "seconds": sum(v[0] for v in other.values()) / 1e6,
                            "count": sum(v[1] for v in other.values()), "floor": None, "navigated": None,
                            "inputs": None, "cpu_floor_s": None, "beside": False})
    rows.insert(0, {"phase": "queue wait (no attempt on the slot)", "seconds": max(0.0, slot_us - run_us) / 1e6,
                    "count": None, "floor": None, "navigated": None, "inputs": None, "cpu_floor_s": None,
                    "beside": False})
    for r in rows:
        r["share"] = None if r["beside"] else 100.0 * r["seconds"] * 1e6 / slot_us
        r["mean_ms"] = 1e3 * r["seconds"] / r["count"] if r["count"] else None
        f = floors.get(r["floor"]) if r["floor"] else None
        r["floor_ms"] = f
    unnamed = sorted(other)
    # What a settle's wait did: the page asked (probes) and the tab's events read, per settle.
    work = [(int(s["fields"]["probes"]), int(s["fields"]["events"])) for s in lines
            if s["name"] == "settle" and "probes" in s.get("fields", {})]
    settle = None
    if work:
        settle = {"settles": len(work), "probes_mean": sum(p for p, _ in work) / len(work),
                  "events_mean": sum(e for _, e in work) / len(work), "probes_max": max(p for p, _ in work)}
    grid = None
    ruled = [r for label, _, _, rule in ROWS if rule for r in rows if r["phase"] == label]
    if cpu and all(r["cpu_floor_s"] is not None for r in ruled):
        floor_s = sum(r["cpu_floor_s"] for r in ruled)
        grid = {"cpu_floor_s": floor_s, "cores": cores, "sweep_cpu_s": sweep_cpu_s,
                "wall_floor_s": floor_s / cores if cores else None,
                "sweep_over_floor": sweep_cpu_s / floor_s if sweep_cpu_s and floor_s else None}
    return {"runs": len(runs), "slots": slots, "wall_s": wall_s, "slot_s": slot_us / 1e6, "run_s": run_us / 1e6,
            "rows": rows, "other_names": unnamed, "settle": settle, "grid_floor": grid}


def render(t):
    out = [f"{t['runs']} attempts; wall {t['wall_s']:.1f} s x {t['slots']} slots = {t['slot_s']:.1f} slot-s; "
           f"attempts (run spans) {t['run_s']:.1f} s", "",
           "| phase | total s | share of slot time | count | mean ms | floor ms | CPU floor, CPU-s |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in t["rows"]:
        share = "beside" if r["share"] is None else f"{r['share']:.1f}%"
        count = "" if r["count"] is None else f"{r['count']:,}"
        if r["navigated"] is not None:
            count += f" ({r['navigated']:,} new documents)"
        if r["inputs"] is not None:
            count += f" ({r['inputs']:,} with input)"
        mean = "" if r["mean_ms"] is None else f"{r['mean_ms']:.1f}"
        floor = "" if r["floor_ms"] is None else f"{r['floor_ms']:.1f}"
        cpu = "" if r["cpu_floor_s"] is None else f"{r['cpu_floor_s']:.1f}"
        out.append(f"| {r['phase']} | {r['seconds']:.1f} | {share} | {count} | {mean} | {floor} | {cpu} |")
    total = sum(r["share"] for r in t["rows"] if r["share"] is not None)
    out.append("")
    out.append(f"shares sum to {total:.1f}%; other span names under run: {', '.join(t['other_names']) or 'none'}")
    if t["settle"]:
        w = t["settle"]
        out.append(f"settles: {w['settles']:,}, each asking the page {w['probes_mean']:.2f} times (at most "
                   f"{w['probes_max']}) and reading {w['events_mean']:.1f} of the tab's events, on average")
    g = t["grid_floor"]
    if g:
        line = f"the grid's CPU floor: {g['cpu_floor_s']:.1f} CPU-s"
        if g["wall_floor_s"] is not None:
            line += f"; on {g['cores']} cores, no less than {g['wall_floor_s']:.1f} s of wall time"
        if g["sweep_over_floor"] is not None:
            line += (f"; the sweep used {g['sweep_cpu_s']:.1f} CPU-s of the machine, "
                     f"{g['sweep_over_floor']:.2f} times the floor")
        out.append(line)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spans")
    ap.add_argument("--slots", type=int, required=True, help="workers x slots each")
    ap.add_argument("--wall", type=float, required=True, help="the sweep's wall time, s (`done in`)")
    ap.add_argument("--floors", help="`skillshift bench floors --json` output")
    ap.add_argument("--cpu", type=float, help="the sweep's machine CPU, CPU-s (`scripts/bench/cpu.sh`)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    floors, cpu, cores = {}, {}, None
    if a.floors:
        try:
            with open(a.floors) as f:
                doc = json.load(f)
            rows = doc.get("floors", {})
            floors = {k: v["p50"] for k, v in rows.items()}
            cpu = {k: v["cpu_ms"] for k, v in rows.items() if v.get("cpu_ms") is not None}
            cores = doc.get("cores")
        except (OSError, ValueError, KeyError, AttributeError, TypeError) as e:
            sys.exit(f"phases.py: {a.floors}: not a `skillshift bench floors --json` output: {e}")
    t = table(a.spans, a.slots, a.wall, floors, cpu, a.cpu, cores)
    print(json.dumps(t, indent=1) if a.json else render(t))


if __name__ == "__main__":
    main()
