#!/usr/bin/env python3
"""The fidelity table of docs/real-sites.md: per WordPress task-version, the fixture's audit verdicts
beside the real instance's, for the reference solution and for doing nothing.

    skillshift tasks audit --sites wordpress --json > fixture.json
    skillshift tasks audit --sites wordpress --real-sites .real-sites/real-sites.json --json > real.json
    python3 scripts/real-sites/fidelity.py fixture.json real.json   # markdown on stdout

Rows where both agree on both runs are counted, not listed; every row that differs is listed with the
real run's detail (why the reference failed, or what the idle run found).
"""
import json
import sys


def rows(path):
    report = json.load(open(path))
    return {(t["version"], t["task_id"]): t for t in report["tasks"]}, report


def verdicts(row):
    return row["reference"]["verdict"], row["idle"]["verdict"]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: fidelity.py FIXTURE_AUDIT.json REAL_AUDIT.json")
    fixture, _ = rows(sys.argv[1])
    real, real_report = rows(sys.argv[2])
    tasks = {}
    for v in ("v1", "v2"):
        tasks[v] = json.load(open(f"data/tasks/wordpress.{v}.json"))
    same = 0
    lines = [
        "| task | version | template | fixture: reference | real: reference | fixture: nothing | real: nothing | real status | why they differ |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key in sorted(real):
        r = real[key]
        f = fixture.get(key)
        if f is None:
            continue
        fr, fi = verdicts(f)
        rr, ri = verdicts(r)
        if (fr, fi) == (rr, ri) and r["status"] == f["status"]:
            same += 1
            continue
        v, tid = key
        template = tasks[v][tid]["intent_template"]
        why = (r.get("detail") or "").replace("|", "\\|").replace("\n", " ")
        if len(why) > 220:
            why = why[:217] + "..."
        lines.append(f"| {tid} | {v} | {template} | {fr} | {rr} | {fi} | {ri} | {r['status']} | {why} |")
    counts = ", ".join(f"{n} {k}" for k, n in sorted(real_report["counts"].items()))
    print(f"{len(real)} task-versions audited on the real instances ({counts}; {real_report['wall_s']:.0f} s); "
          f"{same} agree with the fixture on both runs, {len(lines) - 2} differ:\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
