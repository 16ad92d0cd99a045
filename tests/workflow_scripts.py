"""Object-level workflow scripts (tests/workflows/*.json) for the compute-server models and the
history checker: functions, the DAG, objects read and written with their sizes in cache lines, and
the compute server each function instance runs on (stdlib only).

Two kinds of file, one shape once loaded (`Script`):

* **Patterns** (pipeline, broadcast, broadcast-gather, scatter-gather, map-reduce) are written here
  in full. Their function entries use the fields of `workloads/workflows/*.json` (`name`,
  `servers` (one compute server per parallel instance), `after`, `reads`, `writes`, `{i}` in an
  object name = the instance index), without `source` (there is no code behind them)::

      {"name": "pipeline", "doc": "...", "servers": ["c1", "c2"],
       "objects": {"x": 4, "y": 2},            # every object and its size in lines
       "inputs": ["x"],                        # objects that hold data before the workflow
       "functions": [{"name": "f1", "servers": ["c1"], "after": [], "reads": ["x"], "writes": ["y"]}, ...]}

* **Applications** (Table III) reuse the real workload's file, so the schedule lives in one place:
  `{"name": "video", "workload": "video", "objects": {"video": 63, ...}, "lines_note": "..."}` loads
  `workloads/workflows/video.json` with `python/apta/workflow.py` (its validation: DAG, cycles, races,
  topological order, unknown objects) and adds only what the C workloads do not have: the size of
  every object in lines. Objects the workload file uses but `objects` does not size (or the
  reverse) are errors.

`load(path)` raises ScriptError(file, field, reason) for a malformed file: unknown or missing
field, wrong type, a cycle (printed as a path), an unknown function in `after`, an unknown object
(read or written but not sized in `objects`, or sized but never used), an object read before any
function preceding the reader writes it (and not an input), a server not in `servers`, a size
that is not a positive integer.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCRIPT_DIR = HERE / "workflows"
WORKLOADS = ROOT / "workloads"

from apta import workflow as wl    # the workflow format's checks, shared

TOP_REQUIRED = {"name": str, "objects": dict}
TOP_OPTIONAL = {"doc": str, "servers": list, "inputs": list, "functions": list, "workload": str,
                "lines_note": str, "pattern": str}
FN_REQUIRED = {"name": str, "servers": list, "reads": list, "writes": list}
FN_OPTIONAL = {"after": list, "doc": str}


ScriptError = wl.WorkflowError   # file, field (a JSON path), reason


@dataclass
class Task:
    """One function instance of the script."""
    name: str           # "f1", or "mapper[1]" for instance 1 of a parallel function
    fn: str
    index: int
    server: str         # the server the schedule puts it on
    after: list         # function names that must complete first (every instance of each)
    reads: list
    writes: list


@dataclass
class Script:
    path: str
    name: str
    servers: list
    objects: dict       # object -> lines
    inputs: list
    tasks: list         # in schedule order
    functions: list     # function names in schedule order
    doc: str = ""
    kind: str = "pattern"

    def instances_of(self, fn):
        return [t for t in self.tasks if t.fn == fn]


_expand, _fields = wl.expand, wl._check_fields
_ancestors = wl._ancestors


def load(path) -> Script:
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ScriptError(path, f"line {e.lineno}", f"invalid JSON: {e.msg}") from None
    except OSError as e:
        raise ScriptError(path, "(file)", str(e)) from None
    _fields(path, "", doc, TOP_REQUIRED, TOP_OPTIONAL)
    for o, n in doc["objects"].items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ScriptError(path, f"objects.{o}", f"size must be a positive number of lines, got {n!r}")
    if "workload" in doc:
        return _load_app(path, doc)
    for k in ("servers", "functions"):
        if k not in doc:
            raise ScriptError(path, k, "missing required field (a pattern script lists its servers and functions)")
    fns = doc["functions"]
    servers = doc["servers"]
    names = wl.index_functions(path, fns, FN_REQUIRED, FN_OPTIONAL)
    for j, f in enumerate(fns):
        w = f"functions[{j}]"
        if not f["servers"]:
            raise ScriptError(path, f"{w}.servers", "at least one server (one per instance)")
        for k, s in enumerate(f["servers"]):
            if s not in servers:
                raise ScriptError(path, f"{w}.servers[{k}]", f"unknown server {s!r} (servers: {servers})")
    wl.check_dag(path, fns, names)
    inputs = doc.get("inputs", [])
    objs = doc["objects"]
    for k, o in enumerate(inputs):
        if o not in objs:
            raise ScriptError(path, f"inputs[{k}]", f"unknown object {o!r} (not in objects)")
    anc = _ancestors(fns)
    writers = {}
    used = set(inputs)
    tasks = []
    for j, f in enumerate(fns):
        for i, s in enumerate(f["servers"]):
            for kind in ("reads", "writes"):
                for k, o in enumerate(_expand(f[kind], i)):
                    if o not in objs:
                        raise ScriptError(path, f"functions[{j}].{kind}[{k}]", f"unknown object {o!r} (not in objects)")
                    used.add(o)
            for o in _expand(f["writes"], i):
                writers.setdefault(o, set()).add(f["name"])
    for j, f in enumerate(fns):
        for i, s in enumerate(f["servers"]):
            for k, o in enumerate(_expand(f["reads"], i)):
                if o not in inputs and not (writers.get(o, set()) & anc[f["name"]]):
                    raise ScriptError(path, f"functions[{j}].reads[{k}]",
                                      f"object {o!r} is read by {f['name']!r} before any function preceding it writes it")
            tasks.append(Task(name=f["name"] if len(f["servers"]) == 1 else f"{f['name']}[{i}]", fn=f["name"], index=i,
                              server=s, after=list(f.get("after", [])), reads=_expand(f["reads"], i),
                              writes=_expand(f["writes"], i)))
    for o in objs:
        if o not in used:
            raise ScriptError(path, f"objects.{o}", "unknown object: no function reads or writes it")
    return Script(path=str(path), name=doc["name"], servers=list(servers), objects=dict(objs), inputs=list(inputs),
                  tasks=tasks, functions=[f["name"] for f in fns], doc=doc.get("doc", ""))


def _load_app(path, doc):
    for k in ("functions", "servers", "inputs"):
        if k in doc:
            raise ScriptError(path, k, "an application script takes its functions, servers and inputs from the workload file")
    wpath = WORKLOADS / "workflows" / f"{doc['workload']}.json"
    if not wpath.exists():
        raise ScriptError(path, "workload", f"no workload file {wpath.relative_to(ROOT)}")
    try:
        wf = wl.load(str(wpath))
    except wl.WorkflowError as e:
        raise ScriptError(path, "workload", f"the workload file is invalid: {e}") from None
    objs = doc["objects"]
    used = wf.objects()
    tasks, servers = [], []
    for inst in wf.instances():
        if inst.server not in servers:
            servers.append(inst.server)
        for kind in ("reads", "writes"):
            for o in getattr(inst, kind):
                if o not in objs:
                    raise ScriptError(path, "objects", f"object {o!r} of {inst.function} ({wpath.name}) has no size in lines")
        fn = wf.function(inst.function)
        tasks.append(Task(name=inst.function if inst.count == 1 else f"{inst.function}[{inst.index}]", fn=inst.function,
                          index=inst.index, server=inst.server, after=list(fn.get("after", [])),
                          reads=list(inst.reads), writes=list(inst.writes)))
    for o in objs:
        if o not in used:
            raise ScriptError(path, f"objects.{o}", f"unknown object: {wpath.name} never uses it")
    return Script(path=str(path), name=doc["name"], servers=sorted(servers), objects=dict(objs), inputs=list(wf.inputs),
                  tasks=tasks, functions=[f["name"] for f in wf.functions], doc=doc.get("lines_note", ""), kind="app")


def load_all(directory=SCRIPT_DIR) -> list:
    return [load(p) for p in sorted(Path(directory).glob("*.json"))]


if __name__ == "__main__":
    bad = 0
    for p in sys.argv[1:] or sorted(SCRIPT_DIR.glob("*.json")):
        try:
            s = load(p)
        except ScriptError as e:
            print(f"error: {e}")
            bad += 1
            continue
        print(f"{s.name} ({s.kind}): {len(s.tasks)} instances on {s.servers}, {len(s.objects)} objects, "
              f"{sum(s.objects.values())} lines")
    sys.exit(1 if bad else 0)
