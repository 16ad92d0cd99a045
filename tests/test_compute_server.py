"""Plain-pytest tests (no simulator) of the workflow scripts and their loader, the compute-server
models and the workflow runner (tests/rtl/compute_server.py). The runner runs against
tests/rtl/fake_memserver.py, a PLUMBING FAKE (not a reference model of the memory server): these
tests show the models, runner, recording and checker fit together; the RTL is tested by
tests/rtl/test_ms_workflows.py."""
import json
import random
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
from apta import messages, workflow
from compute_server import (FAULT_KINDS, IS_D_I, JOINING, LIVE, P_A, P_A_I, ComputeServer,
                            FaultPlan, ProtocolError, Transport, decode_line, line_data)
from fake_memserver import run_workflow

S = messages.load()
PATTERNS = ["pipeline", "broadcast", "broadcast-gather", "scatter-gather", "map-reduce"]
APPS = ["phi", "sentiment", "finra", "video", "image", "gemm"]


# ---- workflow scripts ----------------------------------------------------------------------------
def test_every_script_loads():
    names = {s.name: s for s in workflow.load_scripts(HERE / "workflows")}
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
    assert t.sent == [("req", "ObjGet", {"server": 1, "epoch": 3, "obj": 5})] and m.state(5) == "IS_D"
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
SCRIPTS = {s.name: s for s in workflow.load_scripts(HERE / "workflows")}


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
