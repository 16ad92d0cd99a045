"""Load and validate the declarative workflow files of workloads/workflows/<app>.json (stdlib only).

A workflow file names the application's functions, the DAG between them ("after"), the objects each
function reads (get) and writes (put), its external inputs and outputs, its parallel instances and
the compute server of each instance (the schedule of the paper's Table III), the generator
parameters per input size, and the get/put counts the paper reports for that schedule (Table IV).
The list order of "functions" is the order in which the schedule runs them; instances of a function
run in index order. In object names "{i}" stands for the instance index of the function that reads
or writes it.

    wf = workflow.load("workloads/workflows/phi.json")      # raises WorkflowError(file, field, msg)
    for inst in wf.instances(): ...                          # execution order
    workflow.table_iv(wf)                                    # {"gets": {...}, "puts": {...}}, per function phase
    workflow.table_iv(wf, unit="object")                     # the same schedule counted per object

Rules checked (each error names the file and the field):
  * required fields present, no unknown fields, the right types;
  * function names unique, a function source workloads/apps/<app>/<source>.c that exists;
  * "after" names known functions and has no cycle; the list order is a topological order;
  * every object read is a workflow input or written by a function that precedes the reader in the
    DAG (an object nobody writes is an unknown object; one written only by an unordered or later
    function is read before it is written);
  * writers of one object are ordered by the DAG (no write/write race), and every reader of an
    object is ordered with respect to its writers (no read/write race; a function may read and
    rewrite the same object);
  * external inputs are declared at the workflow level; external outputs are unique;
  * declared outputs are written by some function; table_iv has the right shape.

The same module loads the object-level workflow scripts the compute-server models and the history
checker run (`load_script`, `load_scripts`; see "Workflow scripts" below): the same function
entries and checks, plus the size of every object in cache lines and the compute server of each
instance; and the workflow patterns of workloads/patterns/, one file per pattern with every
layer's instance of it (`load_patterns`; `python -m apta.workflow tla` writes the TLA+ model's
instances as the module WorkflowPatterns; see "Patterns" below).
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from .paths import ROOT

HERE = os.path.join(str(ROOT), "workloads")
WORKFLOW_DIR = os.path.join(HERE, "workflows")
APPS_DIR = os.path.join(HERE, "apps")

NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
SERVER_RE = re.compile(r"^c[0-9]+$")

TOP_REQUIRED = {"name": str, "title": str, "inputs": list, "sizes": dict, "functions": list, "outputs": list}
TOP_OPTIONAL = {"paper": dict, "external_inputs": list, "params": dict, "table_iv": dict, "app": str}
FN_REQUIRED = {"name": str, "source": str, "servers": list, "reads": list, "writes": list}
FN_OPTIONAL = {"after": list, "inputs": list, "emits": list, "params": dict, "label": str}
SIZES = ("tiny", "paper")


class WorkflowError(ValueError):
    """A workflow file is malformed: `file`, `field` (a JSON path) and the reason."""

    def __init__(self, file: str, field: str, msg: str):
        self.file, self.field, self.msg = file, field, msg
        super().__init__(f"{file}: {field}: {msg}")


@dataclass
class Instance:
    """One invocation of a function: where it runs and the objects it reads and writes."""

    function: str
    label: str
    source: str
    index: int
    count: int
    server: str
    reads: list
    writes: list
    inputs: list
    emits: list
    params: dict


@dataclass
class Workflow:
    path: str
    name: str
    title: str
    app: str
    inputs: list
    external_inputs: list
    sizes: dict
    params: dict
    functions: list
    outputs: list
    table_iv: dict | None
    paper: dict = field(default_factory=dict)

    def function(self, name: str) -> dict:
        return next(f for f in self.functions if f["name"] == name)

    def instances(self, schedule: dict | None = None) -> list:
        """Every instance in execution order. `schedule` ({function: [server, ...]}) overrides
        the file's servers (same number of instances), e.g. to study another placement."""
        out = []
        for f in self.functions:
            servers = (schedule or {}).get(f["name"], f["servers"])
            if len(servers) != len(f["servers"]):
                raise ValueError(f"schedule for {f['name']} must have {len(f['servers'])} servers")
            for i, server in enumerate(servers):
                out.append(Instance(
                    function=f["name"], label=f.get("label", f["name"]), source=f["source"], index=i,
                    count=len(servers), server=server, reads=expand(f["reads"], i), writes=expand(f["writes"], i),
                    inputs=list(f.get("inputs", [])), emits=expand(f.get("emits", []), i),
                    params=dict(f.get("params", {}))))
        return out

    def objects(self) -> set:
        objs = set(self.inputs)
        for inst in self.instances():
            objs.update(inst.reads, inst.writes)
        return objs


def expand(names: list, i: int) -> list:
    return [n.replace("{i}", str(i)) for n in names]


def _check_fields(path, where, obj, required, optional):
    if not isinstance(obj, dict):
        raise WorkflowError(path, where or "(top level)", "must be a JSON object")
    for k, t in required.items():
        if k not in obj:
            raise WorkflowError(path, f"{where}.{k}" if where else k, "missing required field")
    for k, v in obj.items():
        fld = f"{where}.{k}" if where else k
        t = required.get(k) or optional.get(k)
        if t is None:
            raise WorkflowError(path, fld, f"unknown field (known: {', '.join(sorted({**required, **optional}))})")
        if not isinstance(v, t):
            raise WorkflowError(path, fld, f"must be a {t.__name__}")


def _check_names(path, fld, names, what="object"):
    for j, n in enumerate(names):
        if not isinstance(n, str) or not NAME_RE.match(n.replace("{i}", "0")):
            raise WorkflowError(path, f"{fld}[{j}]", f"bad {what} name {n!r} (letters, digits, _ . - and {{i}})")
    if len(set(names)) != len(names):
        raise WorkflowError(path, fld, f"duplicate {what} name")


def load(path: str, apps_dir: str = APPS_DIR) -> Workflow:
    """Parse and validate one workflow file; raises WorkflowError naming file and field."""
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as e:
        raise WorkflowError(path, f"line {e.lineno}", f"invalid JSON: {e.msg}") from None
    except OSError as e:
        raise WorkflowError(path, "(file)", str(e)) from None
    _check_fields(path, "", doc, TOP_REQUIRED, TOP_OPTIONAL)
    app = doc.get("app", doc["name"])
    ext_inputs = doc.get("external_inputs", [])
    _check_names(path, "inputs", doc["inputs"])
    _check_names(path, "external_inputs", ext_inputs)
    for s in SIZES:
        if s not in doc["sizes"]:
            raise WorkflowError(path, f"sizes.{s}", "missing required field")
    for s, spec in doc["sizes"].items():
        _check_fields(path, f"sizes.{s}", spec, {"gen": dict}, {"params": dict})

    fns = doc["functions"]
    names = index_functions(path, fns, FN_REQUIRED, FN_OPTIONAL)
    for j, f in enumerate(fns):
        where = f"functions[{j}]"
        if not NAME_RE.match(f["source"]):
            raise WorkflowError(path, f"{where}.source", f"bad source name {f['source']!r}")
        src = os.path.join(apps_dir, app, f["source"] + ".c")
        if not os.path.exists(src):
            raise WorkflowError(path, f"{where}.source", f"no function source {os.path.relpath(src)}")
        if not f["servers"] or not all(isinstance(s, str) and SERVER_RE.match(s) for s in f["servers"]):
            raise WorkflowError(path, f"{where}.servers", "must be a non-empty list of compute servers c1, c2, ...")
        for k in ("reads", "writes", "emits"):
            _check_names(path, f"{where}.{k}", f.get(k, []))
        for k, n in enumerate(f.get("inputs", [])):
            if n not in ext_inputs:
                raise WorkflowError(path, f"{where}.inputs[{k}]", f"unknown external input {n!r} (declare it in external_inputs)")

    check_dag(path, fns, names)
    anc = _ancestors(fns)

    # objects: who writes what; read-before-write, unknown objects, races
    writers = {}  # object -> [function names]
    for f in fns:
        for i in range(len(f["servers"])):
            for o in expand(f["writes"], i):
                writers.setdefault(o, [])
                if f["name"] not in writers[o]:
                    writers[o].append(f["name"])
    for o, ws in writers.items():
        for a in ws:
            for b in ws:
                if a < b and a not in anc[b] and b not in anc[a]:
                    raise WorkflowError(path, f"functions[{names[b]}].writes",
                                        f"object {o!r} is written by {a!r} and {b!r}, which are not ordered by the DAG")
    emitted = {}
    for j, f in enumerate(fns):
        for i in range(len(f["servers"])):
            for k, o in enumerate(expand(f["reads"], i)):
                fld = f"functions[{j}].reads[{k}]"
                ws = writers.get(o, [])
                if not ws and o not in doc["inputs"]:
                    raise WorkflowError(path, fld, f"unknown object {o!r}: not a workflow input and no function writes it")
                before = [w for w in ws if w in anc[f["name"]]]
                if not before and o not in doc["inputs"]:
                    raise WorkflowError(path, fld, f"object {o!r} is read by {f['name']!r} before any function writes it "
                                                   f"(written by {', '.join(ws)}, none of which precedes it in the DAG)")
                for w in ws:
                    if w != f["name"] and w not in anc[f["name"]] and f["name"] not in anc[w]:
                        raise WorkflowError(path, fld, f"object {o!r} is read by {f['name']!r} and written by {w!r}, "
                                                       "which are not ordered by the DAG")
            for k, o in enumerate(expand(f.get("emits", []), i)):
                if o in emitted:
                    raise WorkflowError(path, f"functions[{j}].emits[{k}]", f"external output {o!r} also emitted by {emitted[o]!r}")
                emitted[o] = f["name"]
    for k, o in enumerate(doc["outputs"]):
        if o not in writers:
            raise WorkflowError(path, f"outputs[{k}]", f"unknown object {o!r}: no function writes it")
    if "table_iv" in doc:
        t = doc["table_iv"]
        for part, keys in (("gets", ("hit", "miss")), ("puts", ("no_inv", "inv"))):
            if not isinstance(t.get(part), dict) or set(t[part]) != set(keys) or not all(isinstance(v, int) for v in t[part].values()):
                raise WorkflowError(path, f"table_iv.{part}", f"must be {{{', '.join(repr(k) + ': int' for k in keys)}}}")
    return Workflow(path=path, name=doc["name"], title=doc["title"], app=app, inputs=doc["inputs"], external_inputs=ext_inputs,
                    sizes=doc["sizes"], params=doc.get("params", {}), functions=fns, outputs=doc["outputs"],
                    table_iv=doc.get("table_iv"), paper=doc.get("paper", {}))


def index_functions(path: str, fns: list, required: dict, optional: dict, at: str = "") -> dict:
    """The checks every list of function entries gets (workflow files, the object-level pattern
    scripts and the patterns' model and scheduler instances): not empty, each entry's fields,
    unique names. `at` prefixes the field paths (e.g. "model.pipe2."). Returns name -> index."""
    if not fns:
        raise WorkflowError(path, f"{at}functions", "no functions")
    names = {}
    for j, f in enumerate(fns):
        _check_fields(path, f"{at}functions[{j}]", f, required, optional)
        if f["name"] in names:
            raise WorkflowError(path, f"{at}functions[{j}].name", f"duplicate function name {f['name']!r}")
        names[f["name"]] = j
    return names


def check_dag(path, fns, names, at: str = ""):
    """The DAG of `after`: known function names, no cycle, list order topological (names: name -> index)."""
    for j, f in enumerate(fns):
        for k, a in enumerate(f.get("after", [])):
            if a not in names:
                raise WorkflowError(path, f"{at}functions[{j}].after[{k}]", f"unknown function {a!r}")
    _check_acyclic(path, fns, names, at)
    for j, f in enumerate(fns):
        for k, a in enumerate(f.get("after", [])):
            if names[a] > j:
                raise WorkflowError(path, f"{at}functions[{j}].after[{k}]",
                                    f"{f['name']!r} runs after {a!r}, which is listed later: list functions in schedule order")


def _check_acyclic(path, fns, names, at=""):
    state = {}  # 1 = on the stack, 2 = done

    def visit(n, stack):
        state[n] = 1
        for a in fns[names[n]].get("after", []):
            if state.get(a) == 1:
                cyc = stack[stack.index(a):] + [a]
                raise WorkflowError(path, f"{at}functions[{names[n]}].after", "cycle: " + " -> ".join(reversed(cyc)))
            if state.get(a) is None:
                visit(a, stack + [a])
        state[n] = 2

    for f in fns:
        if f["name"] not in state:
            visit(f["name"], [f["name"]])


def _ancestors(fns):
    anc = {}
    for f in fns:  # list order is topological (checked before)
        s = set()
        for a in f.get("after", []):
            s.add(a)
            s |= anc[a]
        anc[f["name"]] = s
    return anc


UNITS = ("phase", "object")


def table_iv(wf: Workflow, schedule: dict | None = None, rule: str = "any", unit: str = "phase") -> dict:
    """The paper's Table IV counts for a schedule, by an object-granular cache model.

    Each compute server's cache holds every object version it got or put (caches are large
    enough for a workflow; writes go through and the writer keeps its copy). External inputs and
    outputs are not store operations.

    unit "phase" (the paper's unit: with the files' schedules it gives the paper's Table IV for all
    six applications): a function instance with a GET phase counts one get, a hit when its server
    holds (rule "any") at least one, or (rule "all") every one of the objects it reads, else a
    miss; an instance with a PUT phase counts one put, "inv" when another server holds a copy of
    an object it writes (those copies are invalidated), else "no_inv".

    unit "object": every object an instance reads counts one get (a hit when its server holds
    it), every object it writes one put ("inv" when another server holds a copy of it); `rule`
    does not apply. The cache evolves exactly as in unit "phase".
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
    if rule not in ("any", "all"):
        raise ValueError(f"rule must be 'any' or 'all', not {rule!r}")
    caches = {}
    gets = {"hit": 0, "miss": 0}
    puts = {"no_inv": 0, "inv": 0}
    for inst in wf.instances(schedule):
        c = caches.setdefault(inst.server, set())
        if inst.reads:
            cached = [o in c for o in inst.reads]
            if unit == "object":
                gets["hit"] += sum(cached)
                gets["miss"] += len(cached) - sum(cached)
            else:
                hit = any(cached) if rule == "any" else all(cached)
                gets["hit" if hit else "miss"] += 1
            c.update(inst.reads)
        if inst.writes:
            held = {o for s, other in caches.items() if s != inst.server for o in other & set(inst.writes)}
            for s, other in caches.items():
                if s != inst.server:
                    other -= set(inst.writes)
            if unit == "object":
                n_inv = sum(o in held for o in inst.writes)
                puts["inv"] += n_inv
                puts["no_inv"] += len(inst.writes) - n_inv
            else:
                puts["inv" if held else "no_inv"] += 1
            c.update(inst.writes)
    return {"gets": gets, "puts": puts}


def table_iv_units(wf: Workflow, schedule: dict | None = None, rule: str = "any") -> dict:
    """Table IV in both units: {"phase": table_iv(..., unit="phase"), "object": ...}."""
    return {u: table_iv(wf, schedule, rule, unit=u) for u in UNITS}


def names(directory: str = WORKFLOW_DIR) -> list:
    """Every workflow of the directory (its file names without .json), sorted: a workflow is in the
    evaluation by having a file there, not by being listed in a script."""
    return sorted(f[:-len(".json")] for f in os.listdir(directory) if f.endswith(".json"))


def load_all(directory: str = WORKFLOW_DIR) -> list:
    return [load(os.path.join(directory, f"{n}.json")) for n in names(directory)]



# --- Workflow scripts ---------------------------------------------------------------------------
# Object-level workflow scripts for the compute-server models and the history checker: functions,
# the DAG, objects read and written with their sizes in cache lines, and the compute server each
# function instance runs on. Two kinds of file, one shape once loaded (`Script`):
#
# * Patterns (pipeline, broadcast, broadcast-gather, scatter-gather, map-reduce) are written in
#   full. Their function entries use the fields of the workflow files above (`name`, `servers`
#   (one compute server per parallel instance), `after`, `reads`, `writes`, `{i}` in an object
#   name = the instance index), without `source` (there is no code behind them):
#
#     {"name": "pipeline", "doc": "...", "servers": ["c1", "c2"],
#      "objects": {"x": 4, "y": 2},            # every object and its size in lines
#      "inputs": ["x"],                        # objects that hold data before the workflow
#      "functions": [{"name": "f1", "servers": ["c1"], "after": [], "reads": ["x"], "writes": ["y"]}, ...]}
#
# * Applications (Table III) reuse the real workload's file, so the schedule lives in one place:
#   {"name": "video", "workload": "video", "objects": {"video": 63, ...}, "lines_note": "..."} loads
#   workloads/workflows/video.json with `load` (its validation: DAG, cycles, races, topological
#   order, unknown objects) and adds only what the C workloads do not have: the size of every
#   object in lines. Objects the workload file uses but `objects` does not size (or the reverse)
#   are errors.
#
# load_script(path) raises WorkflowError(file, field, reason) for a malformed file: unknown or
# missing field, wrong type, a cycle (printed as a path), an unknown function in `after`, an
# unknown object (read or written but not sized in `objects`, or sized but never used), an object
# read before any function preceding the reader writes it (and not an input), a server not in
# `servers`, a size that is not a positive integer.

SCRIPT_REQUIRED = {"name": str, "objects": dict}
SCRIPT_OPTIONAL = {"doc": str, "servers": list, "inputs": list, "functions": list, "workload": str,
                   "lines_note": str, "pattern": str, "model": dict, "scheduler": dict}
SCENARIO = ("objects", "servers", "inputs", "functions", "workload")   # a pattern file's scenario fields
SCRIPT_FN_REQUIRED = {"name": str, "servers": list, "reads": list, "writes": list}
SCRIPT_FN_OPTIONAL = {"after": list, "doc": str}


@dataclass
class Task:
    """One function instance of a script."""
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


def _instances_only(doc) -> bool:
    """A pattern file with model or scheduler instances and no scenario (not a script)."""
    return isinstance(doc, dict) and not any(k in doc for k in SCENARIO) and ("model" in doc or "scheduler" in doc)


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise WorkflowError(path, f"line {e.lineno}", f"invalid JSON: {e.msg}") from None
    except OSError as e:
        raise WorkflowError(path, "(file)", str(e)) from None


def load_script(path) -> Script:
    """Parse and validate one workflow script (a pattern or an application's line sizes); a
    pattern file's model and scheduler instances are validated too (load_pattern)."""
    path = Path(path)
    doc = _read(path)
    if _instances_only(doc):
        raise WorkflowError(path, "objects", "missing required field (this pattern has no scenario for the "
                                             "compute-server models, only model or scheduler instances)")
    return _script(path, doc)


def _script(path: Path, doc: dict) -> Script:
    _check_fields(path, "", doc, SCRIPT_REQUIRED, SCRIPT_OPTIONAL)
    _pattern_instances(path, doc)
    for o, n in doc["objects"].items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise WorkflowError(path, f"objects.{o}", f"size must be a positive number of lines, got {n!r}")
    if "workload" in doc:
        return _load_app_script(path, doc)
    for k in ("servers", "functions"):
        if k not in doc:
            raise WorkflowError(path, k, "missing required field (a pattern script lists its servers and functions)")
    fns = doc["functions"]
    servers = doc["servers"]
    names = index_functions(path, fns, SCRIPT_FN_REQUIRED, SCRIPT_FN_OPTIONAL)
    for j, f in enumerate(fns):
        w = f"functions[{j}]"
        if not f["servers"]:
            raise WorkflowError(path, f"{w}.servers", "at least one server (one per instance)")
        for k, s in enumerate(f["servers"]):
            if s not in servers:
                raise WorkflowError(path, f"{w}.servers[{k}]", f"unknown server {s!r} (servers: {servers})")
    check_dag(path, fns, names)
    inputs = doc.get("inputs", [])
    objs = doc["objects"]
    for k, o in enumerate(inputs):
        if o not in objs:
            raise WorkflowError(path, f"inputs[{k}]", f"unknown object {o!r} (not in objects)")
    anc = _ancestors(fns)
    writers = {}
    used = set(inputs)
    tasks = []
    for j, f in enumerate(fns):
        for i, s in enumerate(f["servers"]):
            for kind in ("reads", "writes"):
                for k, o in enumerate(expand(f[kind], i)):
                    if o not in objs:
                        raise WorkflowError(path, f"functions[{j}].{kind}[{k}]", f"unknown object {o!r} (not in objects)")
                    used.add(o)
            for o in expand(f["writes"], i):
                writers.setdefault(o, set()).add(f["name"])
    for j, f in enumerate(fns):
        for i, s in enumerate(f["servers"]):
            for k, o in enumerate(expand(f["reads"], i)):
                if o not in inputs and not (writers.get(o, set()) & anc[f["name"]]):
                    raise WorkflowError(path, f"functions[{j}].reads[{k}]",
                                        f"object {o!r} is read by {f['name']!r} before any function preceding it writes it")
            tasks.append(Task(name=f["name"] if len(f["servers"]) == 1 else f"{f['name']}[{i}]", fn=f["name"], index=i,
                              server=s, after=list(f.get("after", [])), reads=expand(f["reads"], i),
                              writes=expand(f["writes"], i)))
    for o in objs:
        if o not in used:
            raise WorkflowError(path, f"objects.{o}", "unknown object: no function reads or writes it")
    return Script(path=str(path), name=doc["name"], servers=list(servers), objects=dict(objs), inputs=list(inputs),
                  tasks=tasks, functions=[f["name"] for f in fns], doc=doc.get("doc", ""))


def _load_app_script(path, doc):
    for k in ("functions", "servers", "inputs"):
        if k in doc:
            raise WorkflowError(path, k, "an application script takes its functions, servers and inputs from the workload file")
    wpath = Path(WORKFLOW_DIR) / f"{doc['workload']}.json"
    if not wpath.exists():
        raise WorkflowError(path, "workload", f"no workload file {wpath.relative_to(ROOT)}")
    try:
        wf = load(str(wpath))
    except WorkflowError as e:
        raise WorkflowError(path, "workload", f"the workload file is invalid: {e}") from None
    objs = doc["objects"]
    used = wf.objects()
    tasks, servers = [], []
    for inst in wf.instances():
        if inst.server not in servers:
            servers.append(inst.server)
        for kind in ("reads", "writes"):
            for o in getattr(inst, kind):
                if o not in objs:
                    raise WorkflowError(path, "objects", f"object {o!r} of {inst.function} ({wpath.name}) has no size in lines")
        fn = wf.function(inst.function)
        tasks.append(Task(name=inst.function if inst.count == 1 else f"{inst.function}[{inst.index}]", fn=inst.function,
                          index=inst.index, server=inst.server, after=list(fn.get("after", [])),
                          reads=list(inst.reads), writes=list(inst.writes)))
    for o in objs:
        if o not in used:
            raise WorkflowError(path, f"objects.{o}", f"unknown object: {wpath.name} never uses it")
    return Script(path=str(path), name=doc["name"], servers=sorted(servers), objects=dict(objs), inputs=list(wf.inputs),
                  tasks=tasks, functions=[f["name"] for f in wf.functions], doc=doc.get("lines_note", ""), kind="app")


def load_scripts(*directories) -> list:
    """Every script (*.json) of the directories, in file-name order (pattern files without a
    scenario, only model or scheduler instances, are not scripts and are left out)."""
    files = sorted((p for d in directories for p in Path(d).glob("*.json")), key=lambda p: (p.name, str(p)))
    out = []
    for p in files:
        doc = _read(p)
        if _instances_only(doc):
            _pattern(p, doc)            # validated all the same
            continue
        out.append(_script(p, doc))
    return out


# --- Patterns: one file per workflow shape, every layer's instance of it ------------------------
# workloads/patterns/<pattern>.json is the one definition of a FaaS workflow pattern for every
# layer that runs one (each layer's instance is sized for its checker, so they differ):
#   * the scenario (the script fields above): the compute-server models, the RTL memory server's
#     regression and the history checker (tests/rtl/test_ms_workflows.py, tests/test_compute_server.py);
#   * "model": {"<name>": {"doc", "functions"}}: the instances the TLA+ model checks (spec/tla: a .cfg
#     picks one with Workflow = "<name>"); `python -m apta.workflow tla` writes them as the module
#     WorkflowPatterns (spec/tla/check.py does, into build/tla/gen/, before running TLC). An object
#     that no function writes before reading it is the workflow's input at version 0;
#   * "scheduler": {"doc", "functions"}: the workflow the scheduler e2e runs on a cluster
#     (scheduler-plugin/pkg/workflow.LoadPattern reads it); every object a function reads is
#     written by a function before it in the DAG (the runner never asks for an object nobody
#     committed).
# Model and scheduler functions have `name`, `after`, `reads`, `writes` (no servers: the model and
# the scheduler place functions themselves) and no `{i}`.

PATTERN_DIR = Path(ROOT) / "workloads" / "patterns"
DAG_REQUIRED = {"functions": list}
DAG_OPTIONAL = {"doc": str}
DAG_FN_REQUIRED = {"name": str, "after": list, "reads": list, "writes": list}
DAG_FN_OPTIONAL = {"doc": str}
TLA_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")          # a TLA+ record field (functions) and string
POD_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")   # part of a pod name (a DNS label)


@dataclass
class Dag:
    """A model or scheduler instance of a pattern: functions {name, after, reads, writes} in order."""
    name: str
    doc: str
    functions: list


@dataclass
class Pattern:
    path: str
    name: str
    doc: str
    script: Script | None        # the scenario of the compute-server models, if the file has one
    model: dict                  # model instance name -> Dag
    scheduler: Dag | None


def _dag(path, at, inst, name, fn_re, obj_re, inputs_written):
    _check_fields(path, at.rstrip("."), inst, DAG_REQUIRED, DAG_OPTIONAL)
    fns = inst["functions"]
    names = index_functions(path, fns, DAG_FN_REQUIRED, DAG_FN_OPTIONAL, at)
    for j, f in enumerate(fns):
        if not fn_re.match(f["name"]):
            raise WorkflowError(path, f"{at}functions[{j}].name", f"bad function name {f['name']!r} ({fn_re.pattern})")
        for kind in ("after", "reads", "writes"):
            for k, o in enumerate(f[kind]):
                if not isinstance(o, str) or (kind != "after" and not obj_re.match(o)):
                    raise WorkflowError(path, f"{at}functions[{j}].{kind}[{k}]", f"bad name {o!r} ({obj_re.pattern})")
            if len(set(f[kind])) != len(f[kind]):
                raise WorkflowError(path, f"{at}functions[{j}].{kind}", "a name listed twice")
    check_dag(path, fns, names, at)
    if inputs_written:
        anc = _ancestors(fns)
        for j, f in enumerate(fns):
            for k, o in enumerate(f["reads"]):
                if not any(o in fns[names[a]]["writes"] for a in anc[f["name"]]):
                    raise WorkflowError(path, f"{at}functions[{j}].reads[{k}]",
                                        f"object {o!r} is read by {f['name']!r} but written by no function before it")
    return Dag(name=name, doc=inst.get("doc", ""), functions=fns)


def _pattern_instances(path, doc) -> tuple:
    model = {}
    for name, inst in doc.get("model", {}).items():
        if not TLA_NAME_RE.match(name):
            raise WorkflowError(path, f"model.{name}", f"bad model instance name {name!r} ({TLA_NAME_RE.pattern})")
        model[name] = _dag(path, f"model.{name}.", inst, name, TLA_NAME_RE, TLA_NAME_RE, inputs_written=False)
    sched = None
    if "scheduler" in doc:
        sched = _dag(path, "scheduler.", doc["scheduler"], doc["name"], POD_NAME_RE, NAME_RE, inputs_written=True)
    return model, sched


def _pattern(path: Path, doc: dict) -> Pattern:
    script = None
    if not _instances_only(doc):
        script = _script(path, doc)
    else:
        _check_fields(path, "", doc, {"name": str}, {"doc": str, "pattern": str, "model": dict, "scheduler": dict})
    model, sched = _pattern_instances(path, doc)
    if script is None and not model and sched is None:
        raise WorkflowError(path, "(top level)", "a pattern needs a scenario, a model or a scheduler instance")
    return Pattern(path=str(path), name=doc["name"], doc=doc.get("doc", ""), script=script, model=model, scheduler=sched)


def load_pattern(path) -> Pattern:
    """Parse and validate one pattern file (its scenario, model and scheduler instances)."""
    path = Path(path)
    return _pattern(path, _read(path))


def load_patterns(directory=PATTERN_DIR) -> list:
    """Every pattern of the directory, in file-name order; a model instance name may appear in one
    file only (the model's `Workflow` constant names it)."""
    out, seen = [], {}
    for p in sorted(Path(directory).glob("*.json")):
        pat = load_pattern(p)
        if Path(p).stem != pat.name:
            raise WorkflowError(p, "name", f"the pattern {pat.name!r} must be in the file {pat.name}.json")
        for m in pat.model:
            if m in seen:
                raise WorkflowError(p, f"model.{m}", f"model instance {m!r} is also defined in {seen[m]}")
            seen[m] = p
        out.append(pat)
    return out


def _tla_set(names) -> str:
    return "{" + ", ".join(f'"{n}"' for n in names) + "}"


def tla_module(patterns: list | None = None) -> str:
    """The module WorkflowPatterns: `Patterns`, a record of every model instance (spec/tla/Workflows.tla
    extends it; each function is F(in, out, pred) = its reads, writes and after)."""
    if patterns is None:
        patterns = load_patterns()
    rel = lambda p: os.path.relpath(p, ROOT)
    lines = ["------------------------- MODULE WorkflowPatterns -------------------------",
             "\\* Generated by `python -m apta.workflow tla` from workloads/patterns/*.json (their",
             "\\* \"model\" instances): edit those files, not this one.",
             "",
             "F(in, out, pred) == [in |-> in, out |-> out, pred |-> pred]",
             "",
             "Patterns == ["]
    entries = []
    for pat in patterns:
        for name, dag in pat.model.items():
            e = textwrap.wrap(f"{rel(pat.path)}: {dag.doc}" if dag.doc else rel(pat.path), 92,
                              initial_indent="  \\* ", subsequent_indent="  \\* ")
            width = max(len(f["name"]) for f in dag.functions)
            fns = [f'{f["name"]:<{width}} |-> F({_tla_set(f["reads"])}, {_tla_set(f["writes"])}, {_tla_set(f["after"])})'
                   for f in dag.functions]
            pad = " " * (len(name) + 8)
            e.append(f"  {name} |-> [" + (",\n" + pad).join(fns) + "]")
            entries.append("\n".join(e))
    lines.append(",\n".join(entries))
    lines += ["]", "=" * 77, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["tla"]:       # python -m apta.workflow tla [--out FILE]: the module WorkflowPatterns
        import argparse
        from .paths import emit
        ap = argparse.ArgumentParser(prog="python -m apta.workflow tla",
                                     description="the TLA+ module WorkflowPatterns from workloads/patterns/*.json")
        ap.add_argument("--out", help="the file to write (default: stdout)")
        emit(tla_module(), ap.parse_args(sys.argv[2:]).out)
        sys.exit(0)
    paths = sys.argv[1:] or [os.path.join(WORKFLOW_DIR, f) for f in sorted(os.listdir(WORKFLOW_DIR)) if f.endswith(".json")]
    bad = 0
    for p in paths:
        try:
            wf = load(p)
        except WorkflowError as e:
            print(f"error: {e}")
            bad += 1
            continue
        got, obj = table_iv(wf), table_iv(wf, unit="object")
        note = "" if wf.table_iv is None else ("matches Table IV" if got == wf.table_iv else f"Table IV says {wf.table_iv}")
        print(f"{wf.name}: {len(wf.functions)} functions, {len(wf.instances())} instances, "
              f"per phase: gets {got['gets']}, puts {got['puts']} {note}; per object: gets {obj['gets']}, puts {obj['puts']}")
    sys.exit(1 if bad else 0)
