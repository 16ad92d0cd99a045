"""Plain-pytest tests (no simulator) of the workflow scripts and their loader, the compute-server
models and the workflow runner (rtl/testbench/compute_server.py). The runner runs against
rtl/testbench/fake_memserver.py, a PLUMBING FAKE (not a reference model of the memory server): these
tests show the models, runner, recording and checker fit together; the RTL is tested by
tests/rtl/test_ms_workflows.py."""
import json
import random
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
from apta import messages, workflow
from apta.testbench.compute_server import (FAULT_KINDS, IS_D_I, JOINING, LIVE, P_A, P_A_I, ComputeServer,
                            FaultPlan, ProtocolError, Transport, decode_line, line_data)
from apta.testbench.fake_memserver import run_workflow

S = messages.load()
PATTERNS = ["pipeline", "broadcast", "broadcast-gather", "scatter-gather", "map-reduce"]
APPS = ["phi", "sentiment", "finra", "video", "image", "gemm"]
# the patterns' scenarios (workloads/patterns/, beside their model and scheduler instances) and the
# applications' line sizes (tests/workflows/)
SCRIPT_DIRS = (workflow.PATTERN_DIR, HERE / "workflows")


# ---- workflow scripts ----------------------------------------------------------------------------
def test_every_script_loads():
    names = {s.name: s for s in workflow.load_scripts(*SCRIPT_DIRS)}
    assert sorted(names) == sorted(PATTERNS + APPS)
    for s in names.values():
        for t in s.tasks:
            assert t.server in s.servers
            assert set(t.reads) | set(t.writes) <= set(s.objects)
    # the applications keep the workloads' schedule (Table III)
    assert [(t.name, t.server) for t in names["video"].tasks] == [
        ("locateKeyFrame", "c1"), ("splitVideo", "c1"), ("AnalyzeProcess[0]", "c1"), ("AnalyzeProcess[1]", "c2"),
        ("validate", "c3"), ("concat", "c3")]
    assert names["gemm"].kind == "app" and names["pipeline"].kind == "pattern"


def _write(tmp_path, doc, name="w.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


BASE = {"name": "t", "servers": ["c1", "c2"], "objects": {"x": 2, "y": 1}, "inputs": ["x"],
        "functions": [{"name": "f", "servers": ["c1"], "after": [], "reads": ["x"], "writes": ["y"]},
                      {"name": "g", "servers": ["c2"], "after": ["f"], "reads": ["y"], "writes": ["x"]}]}


def _mut(fn):
    d = json.loads(json.dumps(BASE))
    fn(d)
    return d


LOADER_BAD = [
    ("cycle", lambda d: d["functions"][0]["after"].append("g"), "functions[1].after", "cycle: f -> g -> f"),
    ("unknown object read", lambda d: d["functions"][1]["reads"].append("z"), "functions[1].reads[1]", "unknown object 'z'"),
    ("unknown object written", lambda d: d["functions"][0]["writes"].append("q"), "functions[0].writes[1]", "unknown object 'q'"),
    ("unknown function", lambda d: d["functions"][1]["after"].append("h"), "functions[1].after[1]", "unknown function 'h'"),
    ("unknown server", lambda d: d["functions"][1]["servers"].__setitem__(0, "c9"), "functions[1].servers[0]", "unknown server"),
    ("bad size", lambda d: d["objects"].__setitem__("y", 0), "objects.y", "positive number of lines"),
    ("unused object", lambda d: d["objects"].__setitem__("w", 1), "objects.w", "unknown object"),
    ("read before written", lambda d: d.__setitem__("inputs", []), "functions[0].reads[0]", "before any function"),
    ("unknown field", lambda d: d["functions"][0].__setitem__("colour", 1), "functions[0].colour", "unknown field"),
    ("missing field", lambda d: d["functions"][0].pop("writes"), "functions[0].writes", "missing"),
    ("wrong type", lambda d: d.__setitem__("objects", []), "objects", "must be a dict"),
]


@pytest.mark.parametrize("what,fn,fld,text", LOADER_BAD, ids=[x[0] for x in LOADER_BAD])
def test_loader_rejects(tmp_path, what, fn, fld, text):
    p = _write(tmp_path, _mut(fn))
    with pytest.raises(workflow.WorkflowError) as e:
        workflow.load_script(p)
    assert e.value.field == fld and text in str(e.value) and str(p) in str(e.value)


def test_loader_app_files(tmp_path):
    p = _write(tmp_path, {"name": "v", "workload": "video", "objects": {"video": 1}})
    with pytest.raises(workflow.WorkflowError, match=r"objects: object 'keyframes' of locateKeyFrame \(video.json\) has no size"):
        workflow.load_script(p)
    p = _write(tmp_path, {"name": "v", "workload": "nope", "objects": {"x": 1}})
    with pytest.raises(workflow.WorkflowError, match="workload: no workload file"):
        workflow.load_script(p)
    p = _write(tmp_path, {"name": "p", "workload": "phi", "objects": {
        "records": 1, "tagged": 1, "deidentified": 1, "anonymized": 1, "analytics": 1, "extra": 2}})
    with pytest.raises(workflow.WorkflowError, match="objects.extra: unknown object"):
        workflow.load_script(p)
    p = tmp_path / "j.json"
    p.write_text("{")
    with pytest.raises(workflow.WorkflowError, match="line 1: invalid JSON"):
        workflow.load_script(p)


# ---- patterns: one file per pattern, every layer's instance of it -----------------------------
ROOT = HERE.parent
MODEL_PATTERNS = {"pipeline": ["pipeline", "pipe2", "edge", "chain"], "broadcast": ["broadcast"], "broadcast-gather": ["bgather"],
                  "scatter-gather": ["scatter"], "map-reduce": ["mapreduce"], "diamond": ["diamond"]}


def test_every_pattern_loads():
    pats = {p.name: p for p in workflow.load_patterns()}
    assert {n: list(p.model) for n, p in pats.items()} == MODEL_PATTERNS
    assert sorted(n for n, p in pats.items() if p.script) == sorted(PATTERNS)
    assert sorted(n for n, p in pats.items() if p.scheduler) == ["broadcast", "map-reduce", "pipeline", "scatter-gather"]


def _cfg_workflows():
    """Every workflow the TLA+ runs name: `Workflow = "..."` in spec/tla/*.cfg and in check.py's overrides."""
    import re
    out = []
    for f in sorted((ROOT / "spec" / "tla").glob("*.cfg")):
        out += [(f.name, m) for m in re.findall(r'^\s*Workflow\s*=\s*"([^"]+)"', f.read_text(), re.M)]
    check = ROOT / "spec" / "tla" / "check.py"
    out += [(check.name, m) for m in re.findall(r'"Workflow":\s*\'"([^"]+)"\'', check.read_text())]
    return out


def test_the_model_checks_the_patterns_model_instances():
    """Every workflow a TLA+ run names is a model instance of a pattern file, every model instance is
    checked by some run, and the only `Patterns` is the generated module's (spec/tla defines none)."""
    defined = {m: p.path for p in workflow.load_patterns() for m in p.model}
    named = _cfg_workflows()
    assert len(named) >= 10
    for where, m in named:
        assert m in defined, f"spec/tla/{where}: Workflow = {m!r} is the model instance of no workloads/patterns/*.json"
    unused = sorted(set(defined) - {m for _, m in named})
    assert not unused, f"model instances no TLA+ run checks: {[(m, defined[m]) for m in unused]}"
    module = workflow.tla_module()
    for m in defined:
        assert f"\n  {m} |-> [" in module
    for f in (ROOT / "spec" / "tla").glob("*.tla"):
        assert "Patterns ==" not in f.read_text(), f"{f}: workflows are defined in workloads/patterns/*.json"


def test_the_scheduler_e2e_runs_the_patterns_scheduler_instances():
    """The e2e's random-workflows scenario loads its workflows from the pattern files (Go
    workflow.LoadPattern), and the Go package defines no workflow shape of its own."""
    import re
    e2e = (ROOT / "scheduler-plugin" / "test" / "e2e" / "scenarios_test.go").read_text()
    m = re.search(r'range \[\]string\{([^}]*)\}\s*\{\s*w, err := workflow\.LoadPattern', e2e)
    assert m, "scenarios_test.go no longer loads its workflows with workflow.LoadPattern"
    names = re.findall(r'"([^"]+)"', m.group(1))
    sched = {p.name for p in workflow.load_patterns() if p.scheduler}
    for n in names:
        assert n in sched, f"scheduler-plugin/test/e2e/scenarios_test.go runs pattern {n!r}, which has no scheduler instance"
    go = "\n".join(f.read_text() for f in (ROOT / "scheduler-plugin").rglob("*.go"))
    assert not re.search(r"Function\{Name:\s*(\"|fmt\.)", go), "a workflow shape written in Go: define it in workloads/patterns/"


def _pattern_file(tmp_path, doc, name=None):
    d = tmp_path / "patterns"
    d.mkdir(exist_ok=True)
    p = d / f"{name or doc['name']}.json"
    p.write_text(json.dumps(doc))
    return p


MODEL_ONLY = {"name": "m", "model": {"m1": {"functions": [
    {"name": "f", "after": [], "reads": ["x"], "writes": ["x"]},
    {"name": "g", "after": ["f"], "reads": ["x"], "writes": []}]}}}
PATTERN_BAD = [
    ("model function name", lambda d: d["model"]["m1"]["functions"][0].__setitem__("name", "f-1"),
     "model.m1.functions[0].name", "bad function name"),
    ("model cycle", lambda d: d["model"]["m1"]["functions"][0]["after"].append("g"), "model.m1.functions[1].after", "cycle"),
    ("model missing field", lambda d: d["model"]["m1"]["functions"][1].pop("after"), "model.m1.functions[1].after", "missing"),
    ("model instance name", lambda d: d["model"].__setitem__("m-2", d["model"]["m1"]), "model.m-2", "bad model instance name"),
    ("scheduler read nobody wrote", lambda d: d.__setitem__("scheduler", {"functions": [
        {"name": "a", "after": [], "reads": ["x"], "writes": ["y"]}]}), "scheduler.functions[0].reads[0]", "written by no function before it"),
    ("scheduler pod name", lambda d: d.__setitem__("scheduler", {"functions": [
        {"name": "A_1", "after": [], "reads": [], "writes": ["y"]}]}), "scheduler.functions[0].name", "bad function name"),
    ("no instance", lambda d: d.__setitem__("model", {}), "(top level)", "needs a scenario, a model or a scheduler instance"),
    ("nothing", lambda d: d.pop("model"), "objects", "missing required field"),
]


@pytest.mark.parametrize("what,fn,fld,text", PATTERN_BAD, ids=[x[0] for x in PATTERN_BAD])
def test_pattern_loader_rejects(tmp_path, what, fn, fld, text):
    d = json.loads(json.dumps(MODEL_ONLY))
    fn(d)
    p = _pattern_file(tmp_path, d)
    with pytest.raises(workflow.WorkflowError) as e:
        workflow.load_pattern(p)
    assert e.value.field == fld and text in str(e.value) and str(p) in str(e.value)


def test_pattern_files_name_and_model_instances_are_unique(tmp_path):
    _pattern_file(tmp_path, MODEL_ONLY)
    assert [p.name for p in workflow.load_patterns(tmp_path / "patterns")] == ["m"]
    # a model-only pattern is no script; load_script says why
    assert workflow.load_scripts(tmp_path / "patterns") == []
    with pytest.raises(workflow.WorkflowError, match="objects: missing required field .this pattern has no scenario"):
        workflow.load_script(tmp_path / "patterns" / "m.json")
    other = dict(MODEL_ONLY, name="n")
    p = _pattern_file(tmp_path, other)
    with pytest.raises(workflow.WorkflowError, match=r"n\.json: model\.m1: model instance 'm1' is also defined in .*m\.json"):
        workflow.load_patterns(tmp_path / "patterns")
    p.unlink()
    _pattern_file(tmp_path, dict(MODEL_ONLY, name="k"), name="q")
    with pytest.raises(workflow.WorkflowError, match=r"q\.json: name: the pattern 'k' must be in the file k\.json"):
        workflow.load_patterns(tmp_path / "patterns")


def test_tla_module_renders_every_model_instance():
    pat = workflow.load_pattern(ROOT / "workloads" / "patterns" / "pipeline.json")
    text = workflow.tla_module([pat])
    assert text.startswith("-" * 25 + " MODULE WorkflowPatterns " + "-" * 25) and text.rstrip().endswith("=" * 77)
    assert ('  pipeline |-> [f1 |-> F({}, {"x"}, {}),\n'
            '                f2 |-> F({"x"}, {"x"}, {"f1"}),\n'
            '                f3 |-> F({"x"}, {"y"}, {"f2"})],\n') in text
    assert '  pipe2 |-> [f1 |-> F({"x"}, {"x"}, {}),\n             f2 |-> F({"x"}, {"x"}, {"f1"})],\n' in text
    assert '             f3 |-> F({"x", "y"}, {}, {"f2"})]\n]' in text     # chain, the last instance


# ---- the compute-server model, flit by flit ---------------------------------------------------
class Rec(Transport):
    def __init__(self):
        self.sent = []

    def send(self, server, channel, flit):
        self.sent.append((channel,) + S.decode(flit))


def _model(sizes=None, epoch=3):
    t = Rec()
    m = ComputeServer(1, S, t, sizes or {5: 2}, epoch=epoch, rng=random.Random(1), ack_delay=0)
    return m, t


def _rsp(name, **f):
    return S.encode(name, server=1, **f)


def test_get_miss_then_hit():
    m, t = _model()
    op = m.start_get(5)
    assert t.sent == [("req", "ObjGet", {"server": 1, "epoch": 3, "obj": 5, "version": 0})] and m.state(5) == "IS_D"  # unversioned
    for l in (0, 1):
        m.receive("rsp", _rsp("ObjData", epoch=3, obj=5, line=l, data=line_data(5, 7, l)))
    assert op.done and not op.hit and m.state(5) == "S" and [decode_line(5, l, d) for l, d in enumerate(op.data)] == [7, 7]
    op2 = m.start_get(5)
    assert op2.done and op2.hit and op2.data == op.data and len(t.sent) == 1


def test_bisnp_overtakes_data_is_d_i():
    m, t = _model()
    op = m.start_get(5)
    m.receive("snp", _rsp("ObjBISnp", epoch=3, obj=5, base=0, size=2))
    assert m.state(5) == IS_D_I
    m.tick()
    assert t.sent[-1] == ("birsp", "ObjBIRsp", {"server": 1, "epoch": 3, "obj": 5})
    for l in (0, 1):
        m.receive("rsp", _rsp("ObjData", epoch=3, obj=5, line=l, data=line_data(5, 7, l)))
    assert op.done and m.state(5) == "I"        # used once, not installed


def test_put_commit_and_p_a_i_and_retry():
    m, t = _model()
    op = m.start_put(5, txn=9, version=4)
    assert m.state(5) == P_A
    for _ in range(3):
        m.tick()
    assert [x[1] for x in t.sent] == ["PutPrepare", "PutLine", "PutLine"]
    assert t.sent[2][2]["txn"] == 9 and decode_line(5, 1, t.sent[2][2]["data"]) == 4
    m.receive("rsp", _rsp("PutRetry", epoch=3, obj=5, txn=9))       # the whole put again, same txn
    for _ in range(3):
        m.tick()
    assert [x[1] for x in t.sent[3:]] == ["PutPrepare", "PutLine", "PutLine"] and t.sent[3][2]["txn"] == 9
    m.receive("snp", _rsp("ObjBISnp", epoch=3, obj=5, base=0, size=2))
    assert m.state(5) == P_A_I
    m.receive("rsp", _rsp("PutCommit", epoch=3, obj=5, txn=9))
    assert op.done and op.retries == 1 and m.state(5) == "I"
    op = m.start_put(5, txn=10, version=5)
    for _ in range(3):
        m.tick()
    m.receive("rsp", _rsp("PutCommit", epoch=3, obj=5, txn=10))
    assert op.done and m.state(5) == "S" and m.cache[5][1] == 5


def test_epochs_stale_replies_and_rejoin():
    m, t = _model()
    m.start_get(5)
    m.receive("rsp", _rsp("ObjData", epoch=2, obj=5, line=0, data=0))    # an older epoch: dropped
    assert not m.op.got and m.stats["stale_dropped"] == 1
    m.receive("snp", _rsp("ObjBISnp", epoch=2, obj=5, base=0, size=2))  # old-epoch snoop: no ack
    m.tick()
    assert m.stats["snp_old_epoch"] == 1 and all(x[0] != "birsp" for x in t.sent)
    m.crash()
    assert m.status == "dead" and not m.cache and m.op is None
    m.receive("rsp", _rsp("ObjData", epoch=3, obj=5, line=0, data=0))    # a dead server hears nothing
    got = []
    m.on_rejoined = lambda sid, e: got.append((sid, e))
    m.rejoin()
    assert m.status == JOINING and t.sent[-1] == ("req", "Rejoin", {"server": 1, "epoch": 3})
    m.receive("rsp", _rsp("PutCommit", epoch=3, obj=5, txn=1))          # old epoch, dropped while joining
    m.receive("rsp", _rsp("RejoinAck", epoch=4))
    assert m.status == LIVE and m.epoch == 4 and got == [(1, 4)]


def test_protocol_errors():
    m, _ = _model()
    with pytest.raises(ProtocolError, match="ObjData of 5 line 0 without a get"):
        m.receive("rsp", _rsp("ObjData", epoch=3, obj=5, line=0, data=0))
    with pytest.raises(ProtocolError, match="PutCommit of 5 txn 1 without that put"):
        m.receive("rsp", _rsp("PutCommit", epoch=3, obj=5, txn=1))
    with pytest.raises(ProtocolError, match="addressed to server 2"):
        m.receive("rsp", S.encode("RejoinAck", server=2, epoch=1))


def test_line_data_roundtrip():
    assert decode_line(5, 3, line_data(5, 9, 3)) == 9
    assert decode_line(5, 3, 0) == 0
    assert str(decode_line(5, 2, line_data(5, 9, 3))).startswith("garbage")
    assert str(decode_line(6, 3, line_data(5, 9, 3))).startswith("garbage")


# ---- the runner on the plumbing fake -----------------------------------------------------------
SCRIPTS = {s.name: s for s in workflow.load_scripts(*SCRIPT_DIRS)}


@pytest.mark.parametrize("name", PATTERNS + APPS)
def test_runner_history_clean_with_faults(name):
    kinds = Counter()
    for seed in range(4):
        r, rec = run_workflow(SCRIPTS[name], seed=seed, faults=FaultPlan(faults=3, p=0.1), max_delay=6)
        rep = rec.check(f"{name}-seed{seed}")
        assert rep.ok, str(rep)
        assert not r.errors
        assert rep.stats["p4_checked"] and all(s == "done" for s in r.task_state.values())
        kinds.update(k for _, k, _ in r.fault_log)
    if len(SCRIPTS[name].servers) > 1:
        assert sum(kinds.values()) > 0, f"no fault injected in {name}"


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind(kind):
    """Each crash point (mid-get, mid-put, owing acks, holding copies) and false suspicion is hit,
    and the histories stay clean."""
    hit = 0
    for name in PATTERNS:
        for seed in range(3):
            r, rec = run_workflow(SCRIPTS[name], seed=seed, faults=FaultPlan(faults=2, kinds=(kind,), p=0.5),
                                  max_delay=6)
            rep = rec.check(f"{name}-{kind}-{seed}")
            assert rep.ok, str(rep)
            hit += len(r.fault_log)
    assert hit > 0, f"{kind} never injected"


def _props(rule="declared", bug=None, names=PATTERNS + APPS, seeds=5):
    c = Counter()
    for name in names:
        for seed in range(seeds):
            _, rec = run_workflow(SCRIPTS[name], seed=seed, rule=rule, bug=bug, max_delay=8)
            c.update(rec.check(name).props())
    return c


def test_scheduler_rule_off_is_caught():
    """Without the scheduler rule a function lands on a server whose stale copy is not yet
    invalidated: the recorded history fails P1 (and only P1)."""
    c = _props(rule="off")
    assert c["P1"] > 0 and set(c) == {"P1"}


def test_plumbing_bugs_are_caught():
    assert set(_props(bug="no-inval")) == {"P1"}
    assert "P2" in _props(bug="torn", names=PATTERNS, seeds=2)


def test_history_file_roundtrip(tmp_path):
    from apta import history
    _, rec = run_workflow(SCRIPTS["pipeline"], seed=3, faults=FaultPlan(faults=2, p=0.2))
    p = tmp_path / "h.jsonl"
    rec.write(p)
    assert history.check_file(p).ok and history.main([str(p)]) == 0
