#!/usr/bin/env python3
"""Splits Chrome traces (scripts/bench/chrome_trace.py) by thread and by task, as Markdown.

    python3 scripts/bench/trace_split.py [--top N] TRACE.json ...

- **Threads**: each kind of thread (process name / thread name), its busy time (the time under its outermost
  trace events) and its share of all threads'. The tracing service's own thread is listed apart.
- **Main threads by task**: for the renderers' and the browser process's main threads, the self time of each
  event name (its time less its children's), as a share of the thread's busy time.
- **DevTools commands in the renderers**: each command's method (joined on its call id with the browser's record
  of the command), count, total and mean.
- **Per navigation**: navigations committed, and per navigation the views made, frames drawn and tiles rastered.

A trace slows the browser, and more for short events: shares, not speeds.
"""
import argparse
import bisect
import collections
import json
import sys

TRACER = "tracing.CrUtilityMain"
FRAMES = {  # threads that only make frames
    "Browser/VizCompositorThread", "Browser/Chrome_InProcGpuThread", "Renderer/Compositor",
    "Renderer/ThreadPoolForegroundWorker",
}


def events(path):
    """The trace's events; a file cut short (its browser closed mid-read) gives those before the cut."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        sys.exit(f"trace_split.py: {path}: {e.strerror}")
    start = text.find("[")
    if start < 0:
        sys.exit(f"trace_split.py: {path}: no trace events (not a Chrome JSON trace)")
    dec, i, n = json.JSONDecoder(), start + 1, len(text)
    while i < n:
        while i < n and text[i] in ", \n\r\t":
            i += 1
        if i >= n or text[i] == "]":
            return
        try:
            e, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            print(f"trace_split.py: {path}: cut at byte {i}; the events before it are read", file=sys.stderr)
            return
        yield e


def split(paths):
    names, procs, spans = {}, {}, collections.defaultdict(list)
    open_ = collections.defaultdict(list)
    devtools_browser = collections.defaultdict(list)
    devtools_renderer, counts = [], collections.Counter()
    for p in paths:
        for e in events(p):
            ph, key = e.get("ph"), (p, e.get("pid"), e.get("tid"))
            name = e.get("name", "")
            if ph == "M":
                if name == "thread_name":
                    names[key] = e["args"]["name"]
                elif name == "process_name":
                    procs[(p, e.get("pid"))] = e["args"]["name"]
                continue
            if ph == "X" and "dur" in e:
                spans[key].append((e["ts"], e["ts"] + e["dur"], name))
            elif ph == "B":
                open_[key].append((e["ts"], name))
            elif ph == "E" and open_[key]:
                ts, nm = open_[key].pop()
                spans[key].append((ts, e["ts"], nm))
            if ph == "X":
                counts[name] += 1
                args = e.get("args") or {}
                if name == "DevToolsSession::HandleCommand in Browser":
                    devtools_browser[args.get("call_id")].append((e["ts"], args.get("method", "?")))
                elif name == "DevToolsSession::DispatchProtocolCommand" and "dur" in e:
                    devtools_renderer.append((args.get("call_id"), e["ts"], e["dur"]))

    def kind(key):
        return f"{procs.get(key[:2], '?')}/{names.get(key, '?')}"

    busy, self_time = collections.Counter(), collections.defaultdict(collections.Counter)
    for key, iv in spans.items():
        iv.sort(key=lambda x: (x[0], -x[1]))
        k, stack, own = kind(key), [], self_time[kind(key)]

        def close(until):
            while stack and stack[-1][0] <= until:
                end, nm, start, children = stack.pop()
                own[nm] += (end - start) - children
                if stack:
                    stack[-1][3] += end - start
                else:
                    busy[k] += end - start

        for a, b, nm in iv:
            close(a)
            stack.append([b, nm, a, 0])
        close(float("inf"))
    for v in devtools_browser.values():
        v.sort()
    commands = collections.defaultdict(list)
    for call_id, ts, dur in devtools_renderer:
        seen = devtools_browser.get(call_id, [])
        i = bisect.bisect_right(seen, (ts, "\uffff")) - 1
        commands[seen[i][1] if i >= 0 else "?"].append(dur)
    return busy, self_time, commands, counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    busy, self_time, commands, counts = split(a.traces)
    tracer = sum(v for k, v in busy.items() if k.endswith(TRACER))
    total = sum(v for k, v in busy.items() if not k.endswith(TRACER))
    if total == 0:
        sys.exit("trace_split.py: no thread was busy in these traces")
    print(f"{len(a.traces)} trace(s); threads busy {total / 1e3:.0f} ms in all, the tracing service {tracer / 1e3:.0f} ms more\n")
    print("| thread | busy ms | share |\n| --- | ---: | ---: |")
    frames = 0
    for k, v in busy.most_common():
        if k.endswith(TRACER):
            continue
        frames += v if k in FRAMES else 0
        if v / total >= 0.005:
            print(f"| {k} | {v / 1e3:.0f} | {100 * v / total:.1f}% |")
    print(f"\nThreads that only make frames ({', '.join(sorted(FRAMES))}): {frames / 1e3:.0f} ms, {100 * frames / total:.1f}%.")
    for k in ("Renderer/CrRendererMain", "Browser/CrBrowserMain"):
        if not busy[k]:
            continue
        print(f"\n{k}, busy {busy[k] / 1e3:.0f} ms ({100 * busy[k] / total:.1f}%), by task (self time):\n")
        print("| task | ms | share of the thread |\n| --- | ---: | ---: |")
        for nm, v in self_time[k].most_common(a.top):
            print(f"| {nm} | {v / 1e3:.1f} | {100 * v / busy[k]:.1f}% |")
    if commands:
        rmain = busy["Renderer/CrRendererMain"] or 1
        print("\nDevTools commands run in the renderers:\n")
        print("| method | count | ms | mean ms | share of renderers' main |\n| --- | ---: | ---: | ---: | ---: |")
        for m, durs in sorted(commands.items(), key=lambda kv: -sum(kv[1]))[: a.top]:
            s = sum(durs)
            print(f"| {m} | {len(durs)} | {s / 1e3:.1f} | {s / 1e3 / len(durs):.2f} | {100 * s / rmain:.1f}% |")
    navs = counts["RenderFrameHostImpl::DidCommitNavigation"]
    if navs:
        print(f"\nPer navigation ({navs} committed): views made {counts['AgentSchedulingGroup::CreateWebView'] / navs:.2f}, "
              f"frames drawn {counts['DirectRenderer::DrawFrame'] / navs:.2f}, "
              f"tiles rastered {counts['DisplayItemList::Raster'] / navs:.1f}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
