"""spec/tla/qemu_trace.py on hand-written runs (host only, no QEMU; the QEMU run itself is
tests/test_qemu_trace.py): the order it gives placements, completions, hits and the kill among the
daemon's events, the versions it gives lines, and its refusals of runs it cannot map soundly, each
naming the file and what is wrong."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from apta.paths import ROOT
from apta.tla import qemu_trace as qtrace
from apta.tla import trace


COMMIT, GET = qtrace.OPS.index("Commit"), qtrace.OPS.index("Get")
COMMITTED, SERVED = qtrace.RESULTS.index("Committed"), qtrace.RESULTS.index("Served")
H0 = qtrace.header_hash(5, 0x1234)      # line 0 of the object f writes (length 5, digest 0x1234)


def run_of(tmp: Path, dlog: list[dict], executor: list[dict], **kw) -> tuple[dict, Path]:
    """f (cs0) writes x; g reads x on cs0 (a hit on the writer's copy); cs1 is killed meanwhile."""
    p = tmp / "daemon.ndjson"
    p.write_text("".join(json.dumps(e) + "\n" for e in dlog))
    run = {"workflow": "wf", "servers": ["cs0", "cs1"], "daemon_log": str(p),
           "objects": {"x": {"id": 1, "lines": 2}},
           "functions": {"f_0": {"reads": [], "writes": ["x"], "after": []},
                         "g_0": {"reads": ["x"], "writes": [], "after": ["f_0"]}},
           "dir_sets": 16, "dir_ways": 4, "start_ns": 10, "kills": [{"server": "cs1"}], "executor": executor}
    run.update(kw)
    rp = tmp / "run.json"
    rp.write_text(json.dumps(run))
    return run, rp


def d(t, ev, **kw):
    return {"ev": ev, "cycle": t, "t": t, **kw}


def good(tmp: Path, rhead: int = 9):
    dlog = [d(1, "fenced", server=0, epoch=0), d(2, "unfenced", server=0, epoch=1),
            d(2, "rsp", op="RejoinAck", server=0, epoch=1),
            d(3, "rsp", op="RejoinAck", server=1, epoch=1),
            d(11, "register", obj=1, base=0, size=2, valid=True, h=["a0", "a1"]),
            d(13, "req", g=0, idx=5, op="PutPrepare", server=0, epoch=1, obj=1, txn=0),
            d(14, "req", g=0, idx=6, op="PutLine", server=0, epoch=1, obj=1, txn=0, line=0, h=H0),
            d(15, "req", g=0, idx=7, op="PutLine", server=0, epoch=1, obj=1, txn=0, line=1, h="b1"),
            d(16, "core", op=COMMIT, server=0, obj=1, result=COMMITTED),
            d(17, "rsp", op="PutCommit", server=0, epoch=1, obj=1, txn=0),
            d(21, "fenced", server=1, epoch=1),
            d(22, "req", g=0, idx=rhead, op="ObjGet", server=0, epoch=1, obj=1),   # the guest's next get
            d(23, "core", op=GET, server=0, obj=1, result=SERVED),
            d(24, "rsp", op="ObjData", server=0, epoch=1, obj=1, line=0, h=H0),
            d(25, "rsp", op="ObjData", server=0, epoch=1, obj=1, line=1, h="a1")]
    ex = [{"ev": "place", "run": "wf/f#0@cs0.1", "fn": "f", "server": "cs0", "epoch": 1, "mono_ns": 12},
          {"ev": "done", "run": "wf/f#0@cs0.1", "mono_ns": 18},
          {"ev": "place", "run": "wf/g#0@cs0.1", "fn": "g", "server": "cs0", "epoch": 1, "mono_ns": 19},
          {"ev": "get", "id": "wf/g#0@cs0.1/g0", "run": "wf/g#0@cs0.1", "obj": "x", "mono_ns": 30},
          {"ev": "get_ret", "id": "wf/g#0@cs0.1/g0", "digest": "0000000000001234", "len": 5, "hit": True,
           "rhead": 8, "mono_ns": 30},
          {"ev": "done", "run": "wf/g#0@cs0.1", "mono_ns": 20}]
    return dlog, ex


def evs(events):
    return [(e["ev"], e.get("fn") or e.get("server")) for e in events]


def test_order_versions_and_the_kill(tmp_path):
    dlog, ex = good(tmp_path)
    dlog = dlog[:-4]                         # without the later get (and its slot: no slot >= rhead)
    run, rp = run_of(tmp_path, dlog, ex)
    meta, events = qtrace.convert(run, rp)
    assert meta["epochs"] == [1, 1] and meta["dir_entries"] == 1 and meta["hidden_recv_inv"]
    assert evs(events) == [("place", "f_0"), ("put_prepare", "f_0"), ("put_line", "f_0"), ("put_line", "f_0"),
                           ("commit", "f_0"), ("done", "f_0"), ("place", "g_0"), ("get", "g_0"),
                           ("done", "g_0"), ("crash", "cs1"), ("fence", "cs1")]
    hit = events[7]
    assert hit["hit"] and hit["lines"] == [1], hit          # the committed version's header line
    assert events[4]["version"] == 1
    if shutil.which("java"):                                 # and TLC agrees it is a behaviour
        p = tmp_path / "wf.ndjson"
        qtrace.write(meta, events, p)
        r = trace.validate(p, build=tmp_path / "tla")
        assert r["result"] == "accepted", trace.line_of(r)


def test_hit_before_the_guests_next_slot(tmp_path):
    """The hit goes before the first slot the guest produced after it (index >= rhead), even when
    that slot is consumed before the run's completion is stamped; the later get's lines map to
    versions line by line (line 0 the commit's, line 1 the initial object's: a torn get)."""
    dlog, ex = good(tmp_path)
    ex[-1]["mono_ns"] = 40
    run, rp = run_of(tmp_path, dlog, ex)
    _, events = qtrace.convert(run, rp)
    gets = [k for k, e in enumerate(events) if e["ev"] == "get"]
    hit, miss = (events[k] for k in gets)
    assert hit["hit"] and not miss["hit"] and evs(events)[gets[0] - 1] == ("place", "g_0"), evs(events)
    assert miss["lines"] == [1, 0], miss


@pytest.mark.parametrize("case", ["set_overflow", "request_before_cut", "fenced_at_cut", "hit_unanchored",
                                  "foreign_object", "daemon_field_missing", "run_field_missing"])
def test_runs_that_cannot_be_mapped(tmp_path, case):
    dlog, ex = good(tmp_path)
    dlog = dlog[:-4]
    kw = {}
    want = {"set_overflow": "ways", "request_before_cut": "before the workflow started",
            "fenced_at_cut": "fenced when the workflow started", "hit_unanchored": "no place between",
            "foreign_object": "not one of the workflow's", "daemon_field_missing": "daemon.ndjson:6: obj: missing in core",
            "run_field_missing": "start_ns: missing"}[case]
    if case == "set_overflow":
        kw = {"objects": {f"o{k}": {"id": 16 * k + 1, "lines": 2} for k in range(5)}, "dir_ways": 4}
    elif case == "request_before_cut":
        dlog.insert(1, d(4, "req", g=0, idx=1, op="ObjGet", server=0, epoch=0, obj=1))
    elif case == "fenced_at_cut":
        dlog.insert(4, d(4, "fenced", server=1, epoch=1))
    elif case == "hit_unanchored":
        # the guest's next slot (index >= rhead) was consumed before its run was even placed
        dlog.insert(10, d(18, "req", g=0, idx=8, op="ObjGet", server=0, epoch=1, obj=1))
    elif case == "foreign_object":
        dlog.insert(10, d(18, "req", g=1, idx=4, op="ObjGet", server=1, epoch=1, obj=7))
    elif case == "daemon_field_missing":
        dlog.insert(5, {k: v for k, v in d(12, "core", op=GET, server=0, obj=1, result=SERVED).items() if k != "obj"})
    elif case == "run_field_missing":
        kw = {"start_ns": None}
    run, rp = run_of(tmp_path, dlog, ex, **kw)
    with pytest.raises(qtrace.MapError) as x:
        qtrace.convert(run, rp)
    assert want in str(x.value) and (str(rp) in str(x.value) or str(run["daemon_log"]) in str(x.value)), str(x.value)
