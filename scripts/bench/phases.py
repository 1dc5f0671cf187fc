#!/usr/bin/env python3
"""Where a sweep's slot time goes, phase by phase, from a span log (SKILLSHIFT_SPAN_LOG, telemetry/src/span_log.rs).

    python3 scripts/bench/phases.py SPANS.jsonl --slots N --wall SECONDS [--floors FLOORS.json] [--cpu CPU_S]
        [--cpu-samples SAMPLES] [--json]

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

SAMPLES is the machine's CPU over the sweep (`scripts/bench/cpu_samples.py`, on the monotonic clock the span log's
first line names). Each interval between two samples gives its CPU, less what the machine did idle, to the phases
open then, in proportion to their own time in it (queue wait where no attempt was open): each row's CPU in the
sweep, beside its CPU floor. Chrome's work that outlasts the call that caused it (a page's paint after its load
event) lands on the next phase, so a row is a phase's CPU within the tick's coarseness and that lag; over
thousands of occurrences the sums hold. With more than one slot, phases open at once share an interval's CPU by
their time in it, so one worker (`--workers 1`) gives the cleanest split.
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
# The rows an attempt's frame (`attempt_frame`, the start page's CPU floor) holds in the sweep.
FRAME = {"context (checkout)", "login (cookies set)", "setup (perturbations, tab hooks)",
         "start page (navigate, settle to the load)", "context (checkin: dispose, spare)"}


def load(path):
    """The span log's lines, each with its parent line resolved.

    Span ids are reused once a span has closed, so a child's parent is the first line after it with the parent's
    id (a parent closes after its children, and its id cannot be reused while it is open).
    """
    lines, epoch = [], None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                line = json.loads(raw)
            except json.JSONDecodeError as e:
                sys.exit(f"phases.py: {path}:{n}: not a JSON line: {e}")
            if not isinstance(line, dict):
                sys.exit(f"phases.py: {path}:{n}: not a span or the log's epoch")
            if "epoch" in line:
                epoch = line["epoch"]
                continue
            lines.append(line)
    later = {}
    parent_of = [None] * len(lines)
    for i in range(len(lines) - 1, -1, -1):
        s = lines[i]
        p = s.get("parent", 0)
        if p:
            parent_of[i] = later.get(p)
        later[s["id"]] = i
    return lines, parent_of, epoch


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
    segments = []
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
            segments.append((a, b, best[3]))
    return own, segments


def read_samples(path):
    """`cpu_samples.py`'s file: (hz, the machine's idle busy cores, [(t_us, busy ticks)] from the command's start)."""
    try:
        with open(path) as f:
            header = json.loads(f.readline())
            hz = float(header["hz"])
            before, after, seen_start = [], [], False
            for raw in f:
                raw = raw.strip()
                if raw == "start":
                    seen_start = True
                    continue
                if raw:
                    t, busy, total = (int(x) for x in raw.split())
                    (after if seen_start else before).append((t, busy, total))
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"phases.py: {path}: not a `cpu_samples.py` file: {e}")
    if not seen_start or len(after) < 2 or hz <= 0:
        sys.exit(f"phases.py: {path}: not a `cpu_samples.py` file: no samples of the command")
    idle = 0.0
    if len(before) >= 2 and before[-1][0] > before[0][0]:
        idle = (before[-1][1] - before[0][1]) / hz / ((before[-1][0] - before[0][0]) / 1e6)
    return hz, idle, [(t, b) for t, b, _ in after]


def attribute(segments, runs, samples, hz, idle, epoch_us):
    """Each span's CPU in seconds (by index), and the CPU of the moments no run covered: every interval between two
    samples gives its busy CPU, less the machine's idle cores over it, to the own-time segments in it by their
    overlap, and to queue wait by the part of it no run covers."""
    cpu = defaultdict(float)
    queue = 0.0
    segs = sorted(segments)
    # The union of the runs' windows, to find the moments no attempt was open.
    cover = []
    for a, b in sorted(runs):
        if cover and a <= cover[-1][1]:
            cover[-1][1] = max(cover[-1][1], b)
        else:
            cover.append([a, b])
    lo_seg = lo_cov = 0
    for (t0, b0), (t1, b1) in zip(samples, samples[1:]):
        a, b = t0 - epoch_us, t1 - epoch_us
        if b <= a:
            continue
        spent = (b1 - b0) / hz - idle * (b - a) / 1e6
        while lo_seg < len(segs) and segs[lo_seg][1] <= a:
            lo_seg += 1
        shares = []
        j = lo_seg
        # Segments are sorted by start and never overlap within one slot: scan while they can reach [a, b].
        while j < len(segs) and segs[j][0] < b:
            o = min(b, segs[j][1]) - max(a, segs[j][0])
            if o > 0:
                shares.append((segs[j][2], o))
            j += 1
        while lo_cov < len(cover) and cover[lo_cov][1] <= a:
            lo_cov += 1
        covered = 0
        k = lo_cov
        while k < len(cover) and cover[k][0] < b:
            covered += max(0, min(b, cover[k][1]) - max(a, cover[k][0]))
            k += 1
        uncovered = (b - a) - covered
        weight = sum(o for _, o in shares) + uncovered
        if weight <= 0:
            continue
        for i, o in shares:
            cpu[i] += spent * o / weight
        queue += spent * uncovered / weight
    return cpu, queue


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


def table(path, slots, wall_s, floors, cpu=None, sweep_cpu_s=None, cores=None, samples=None):
    cpu = cpu or {}
    lines, parent_of, epoch = load(path)
    own, segments = own_times(lines, parent_of)
    under = inside_run(lines, parent_of)
    runs = [s for s in lines if s["name"] == "run"]
    spent, queue_cpu, sampled = {}, None, None
    if samples is not None:
        if not epoch or epoch.get("clock") != "monotonic" or not isinstance(epoch.get("us"), int):
            sys.exit(f"phases.py: {path}: no monotonic epoch line first, so its spans cannot be set against "
                     "--cpu-samples (a span log from an older build?)")
        hz, idle, points = samples
        spent, queue_cpu = attribute(segments, [interval(s) for s in runs], points, hz, idle, epoch["us"])
        sampled = {"idle_cores": idle,
                   "total_s": (points[-1][1] - points[0][1]) / hz - idle * (points[-1][0] - points[0][0]) / 1e6}
    # name, and name<parent -> [own us, count, marked: settles that navigated, actions that sent input, CPU s]
    per_name = defaultdict(lambda: [0, 0, 0, 0.0])
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
                per_name[k][3] += spent.get(i, 0.0)
    run_us = sum(interval(s)[1] - interval(s)[0] for s in runs)
    slot_us = wall_s * 1e6 * slots
    rows = []
    named = set()
    for label, names, floor_key, rule in ROWS + BESIDE:
        us = sum(per_name[n][0] for n in names)
        used = sum(per_name[n][3] for n in names) if samples is not None else None
        # A row's count is its first span's: a start page is one `start` with the `settle` inside it.
        count = per_name[names[0]][1]
        marked = per_name[names[0]][2]
        named.update(names)
        floor_cpu = cpu_floor(rule, count, marked, cpu) if rule else None
        rows.append({"phase": label, "seconds": us / 1e6, "count": count, "floor": floor_key,
                     "navigated": marked if rule == SETTLE else None, "inputs": marked if rule == INPUT else None,
                     "cpu_floor_s": None if floor_cpu is None else floor_cpu / 1e3, "cpu_s": used,
                     "beside": (label, names, floor_key, rule) in BESIDE})
    # What no row took: spans by name, less those a `name<parent` row took.
    left = defaultdict(lambda: [0, 0, 0.0])
    for n, v in per_name.items():
        if "<" in n:
            if n in named:
                base = n.split("<")[0]
                left[base][0] -= v[0]
                left[base][1] -= v[1]
                left[base][2] -= v[3]
            continue
        if n not in named:
            left[n][0] += v[0]
            left[n][1] += v[1]
            left[n][2] += v[3]
    other = {n: v for n, v in left.items() if v[1] > 0 and n not in named}
    rows.insert(len(ROWS), {"phase": "other spans under run", "seconds": sum(v[0] for v in other.values()) / 1e6,
                            "count": sum(v[1] for v in other.values()), "floor": None, "navigated": None,
                            "inputs": None, "cpu_floor_s": None, "beside": False,
                            "cpu_s": sum(v[2] for v in other.values()) if samples is not None else None})
    rows.insert(0, {"phase": "queue wait (no attempt on the slot)", "seconds": max(0.0, slot_us - run_us) / 1e6,
                    "count": None, "floor": None, "navigated": None, "inputs": None, "cpu_floor_s": None,
                    "beside": False, "cpu_s": queue_cpu})
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
    by_phase = None
    if sampled is not None:
        counted = [r for r in rows if not r["beside"]]
        frame = [r for r in counted if r["phase"] in FRAME]
        floored = [r for r in ruled if r["phase"] not in FRAME]
        by_phase = {"idle_cores": sampled["idle_cores"], "sampled_s": sampled["total_s"],
                    "rows_s": sum(r["cpu_s"] for r in counted),
                    "frame_s": sum(r["cpu_s"] for r in frame),
                    "frame_floor_s": next((r["cpu_floor_s"] for r in frame if r["cpu_floor_s"] is not None), None),
                    "floored_s": sum(r["cpu_s"] for r in floored),
                    "floored_floor_s": sum(r["cpu_floor_s"] or 0.0 for r in floored),
                    "harness_s": sum(r["cpu_s"] for r in counted if r not in ruled and r not in frame)}
    return {"runs": len(runs), "slots": slots, "wall_s": wall_s, "slot_s": slot_us / 1e6, "run_s": run_us / 1e6,
            "rows": rows, "other_names": unnamed, "settle": settle, "grid_floor": grid, "cpu_by_phase": by_phase}


def render(t):
    by = t["cpu_by_phase"]
    head = "| phase | total s | share of slot time | count | mean ms | floor ms | CPU floor, CPU-s |"
    rule = "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    if by:
        head += " CPU in the sweep, CPU-s | sweep / floor |"
        rule += " ---: | ---: |"
    out = [f"{t['runs']} attempts; wall {t['wall_s']:.1f} s x {t['slots']} slots = {t['slot_s']:.1f} slot-s; "
           f"attempts (run spans) {t['run_s']:.1f} s", "", head, rule]
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
        line = f"| {r['phase']} | {r['seconds']:.1f} | {share} | {count} | {mean} | {floor} | {cpu} |"
        if by:
            used = "" if r["cpu_s"] is None or r["beside"] else f"{r['cpu_s']:.1f}"
            ratio = ""
            if r["cpu_s"] is not None and r["cpu_floor_s"] and r["phase"] not in FRAME:
                ratio = f"{r['cpu_s'] / r['cpu_floor_s']:.2f}"
            line += f" {used} | {ratio} |"
        out.append(line)
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
    if by:
        def against(a, b):
            return f"{a / b:.2f} times their floor" if b else "no floor measured"
        out.append(f"CPU by phase: the machine's ticks, sampled through the sweep and less its idle "
                   f"{by['idle_cores']:.3f} cores (the sampler's own included), set against the spans: "
                   f"{by['rows_s']:.1f} of the sampled {by['sampled_s']:.1f} CPU-s went to the rows; "
                   f"the attempts' frames (checkout, login, setup, start page, checkin) {by['frame_s']:.1f} CPU-s, "
                   f"{against(by['frame_s'], by['frame_floor_s'])}; the other rows with a floor "
                   f"{by['floored_s']:.1f}, {against(by['floored_s'], by['floored_floor_s'])}; the rows with "
                   f"none (the harness's own, scoring, queue wait) {by['harness_s']:.1f}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spans")
    ap.add_argument("--slots", type=int, required=True, help="workers x slots each")
    ap.add_argument("--wall", type=float, required=True, help="the sweep's wall time, s (`done in`)")
    ap.add_argument("--floors", help="`skillshift bench floors --json` output")
    ap.add_argument("--cpu", type=float, help="the sweep's machine CPU, CPU-s (`scripts/bench/cpu.sh`)")
    ap.add_argument("--cpu-samples", help="`scripts/bench/cpu_samples.py` output over the sweep: CPU by phase")
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
    samples = read_samples(a.cpu_samples) if a.cpu_samples else None
    t = table(a.spans, a.slots, a.wall, floors, cpu, a.cpu, cores, samples)
    print(json.dumps(t, indent=1) if a.json else render(t))


if __name__ == "__main__":
    main()
