"""Turn a workflow file plus its trace directory into the simulator's plan (stdlib only).

The workflow is loaded and validated by python/apta/workflow.py (unknown objects, cycles, schedule
order: one definition of those rules); this module only expands it to instances with their
compute server, the instances each one waits for (every instance of every function in `after`),
the objects it gets and puts, and its trace directory (workloads/TRACES.md). A missing trace is an
error naming the directory.

    plan = build_plan("workloads/workflows/phi.json", "build/traces/paper/phi")
    write_json_atomic("build/eval/plans/phi.json", plan)
"""
from __future__ import annotations

import json
import os
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from apta import workflow

WorkflowError = workflow.WorkflowError


class TraceMissing(FileNotFoundError):
    pass


def server_index(name: str) -> int:
    return int(name[1:]) - 1  # "c1" -> 0


def trace_dir(root: str, function: str, index: int) -> str:
    return os.path.join(root, f"{function}.{index}")


def build_plan(wf_path: str, traces: str, schedule: dict | None = None, wf=None) -> dict:
    """The plan of one workflow: instances in schedule (list) order. `schedule` overrides the
    servers ({function: [server, ...]}), as workflow.instances does."""
    wf = wf or workflow.load(wf_path)
    insts = wf.instances(schedule)
    ids = {}
    for k, inst in enumerate(insts):
        ids.setdefault(inst.function, []).append(k)
    objects = sorted(wf.objects())
    out = []
    for k, inst in enumerate(insts):
        d = trace_dir(traces, inst.function, inst.index)
        if not os.path.exists(os.path.join(d, "meta.json")):
            raise TraceMissing(f"{d}: missing trace (no meta.json): run `make traces`"
                               f" (workflow {wf.name}, instance {inst.function}.{inst.index})")
        deps = [j for a in wf.function(inst.function).get("after", []) for j in ids[a]]
        out.append({"function": inst.function, "label": inst.label, "index": inst.index,
                    "server": server_index(inst.server), "deps": deps,
                    "reads": inst.reads, "writes": inst.writes, "trace": os.path.abspath(d)})
    return {"app": wf.name, "objects": objects, "instances": out}


def write_json_atomic(path: str, data) -> None:
    """Write JSON to a temporary file in the same directory, then rename: never half a file."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
