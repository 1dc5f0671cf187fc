"""WebArena-Verified's own evaluators, as the oracle of tests/score_webarena_verified.rs.

Reads a JSON list of cases on stdin; each case is
    {"id": str, "task_file": path, "task_id": int, "response": str | null,
     "har": path, "sites": {"gitlab": "http://...", ...}}
The task is read from `task_file` (the package's dataset or any file of its
format) with the package's own model; the HAR file with the package's own
`NetworkTrace.from_har`; the response is given to the evaluators as the text
the agent answered (null: no answer). Every evaluator of the task runs, as
`WebArenaVerifiedEvaluator._evaluate_with_context` runs them, and the task's
status is computed as `TaskEvalResult.create` computes it.

Prints a JSON list: {"id", "status", "evaluators": [{"name", "status", "error"}]},
statuses being the package's words (success, failure, error).
"""

import json
import logging
import sys
from pathlib import Path

logging.disable(logging.CRITICAL)

from webarena_verified.core.evaluation.evaluators import EVALUATOR_REGISTRY  # noqa: E402
from webarena_verified.types.config import EnvironmentConfig, WebArenaVerifiedConfig  # noqa: E402
from webarena_verified.types.eval import EvalStatus, TaskEvalContext  # noqa: E402
from webarena_verified.types.task import WebArenaSite, WebArenaVerifiedTask  # noqa: E402
from webarena_verified.types.tracing import NetworkTrace  # noqa: E402

_tasks: dict = {}


def task(path: str, task_id: int) -> WebArenaVerifiedTask:
    if path not in _tasks:
        data = json.loads(Path(path).read_text())
        items = data if isinstance(data, list) else [data]
        _tasks[path] = {t["task_id"]: t for t in items}
    return WebArenaVerifiedTask.model_validate(_tasks[path][task_id])


def run(case: dict) -> dict:
    out = {"id": case["id"], "status": None, "evaluators": []}
    try:
        t = task(case["task_file"], case["task_id"])
        config = WebArenaVerifiedConfig(
            environments={WebArenaSite(k): EnvironmentConfig(urls=[v]) for k, v in case["sites"].items()}
        )
        trace = NetworkTrace.from_har(Path(case["har"]))
        ctx = TaskEvalContext(task=t, agent_response_raw=case["response"], network_trace=trace, config=config)
    except Exception as e:  # noqa: BLE001 - the package's evaluate_task turns any of these into an error result
        out["status"] = "error"
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    results = []
    for cfg in t.eval:
        r = EVALUATOR_REGISTRY[cfg.evaluator]().evaluate(context=ctx, config=cfg)
        results.append(r)
        out["evaluators"].append({"name": r.evaluator_name, "status": str(r.status), "error": r.error_msg})
    if any(r.status == EvalStatus.ERROR for r in results):
        out["status"] = "error"
    elif all(r.score == 1.0 for r in results):
        out["status"] = "success"
    else:
        out["status"] = "failure"
    return out


def main() -> None:
    cases = json.load(sys.stdin)
    json.dump([run(c) for c in cases], sys.stdout)


if __name__ == "__main__":
    main()
