#!/usr/bin/env python3
"""Whether two sweeps' records are the same unit by unit (a speed change must not change a record).

    python3 scripts/bench/same_records.py A/per_task.jsonl B/per_task.jsonl

Units are keyed by (uid, condition, treatment, rep, attempt). Every field is compared except those that differ
between any two runs by nature: the sweep id, the times (`duration_ms`, `started_at`, `finished_at`), the worker
that ran the unit and the trace id. Prints the count compared and each difference (at most 20); exits 1 when any.
"""

import json
import sys

NATURALLY_DIFFERENT = {"sweep", "duration_ms", "started_at", "finished_at", "worker", "trace_id"}


def load(path):
    units = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"same_records.py: {path}:{n}: not a JSON line: {e}")
            key = (r.get("uid"), r.get("condition"), r.get("treatment"), r.get("rep"), r.get("attempt"))
            units[key] = {k: v for k, v in r.items() if k not in NATURALLY_DIFFERENT}
    return units


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    a, b = load(sys.argv[1]), load(sys.argv[2])
    diffs = []
    for key in sorted(set(a) | set(b), key=str):
        ra, rb = a.get(key), b.get(key)
        if ra is None or rb is None:
            diffs.append(f"{key}: only in {'B' if ra is None else 'A'}")
            continue
        for field in sorted(set(ra) | set(rb)):
            if ra.get(field) != rb.get(field):
                diffs.append(f"{key}: {field}: {ra.get(field)!r} vs {rb.get(field)!r}")
    print(f"{len(set(a) & set(b))} units in both; {len(diffs)} differences")
    for d in diffs[:20]:
        print(d)
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
