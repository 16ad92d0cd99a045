"""The vector loader (python/apta/vectors_io.py) rejects malformed vectors with file, line and field, and
never skips one. Plain Python: runs in `make test` without the simulator."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from apta import vectors_io

GOOD = {"id": "smoke/get.S", "config": "smoke", "cell": "get.S",
        "params": {"servers": 2, "dirSets": 1, "dirWays": 1, "maxPendPerServer": 2, "linesPerObject": 2},
        "objects": {"Obj_1": {"obj": 1, "base": 4096, "size": 2}},
        "steps": [{"rule": "OTC get",
                   "stimuli": [{"port": "req", "op": "Get", "server": 0, "epoch": 0, "obj": 1,
                                "base": 4096, "size": 2}],
                   "expect": {"resp": [{"op": "Get", "server": 0, "obj": 1, "result": "Served"}],
                              "snp": [], "ackResult": [], "ctrlResp": [],
                              "state": {"objects": {"1": {"state": "S", "sharers": [0], "pend": [0, 0],
                                                                    "schedulableFor": [True, True]}},
                                        "fenced": [False, False], "epoch": [0, 0],
                                        "pending": [False, False], "schedulable": [True, True]}}}]}


def _write(tmp_path, lines):
    p = tmp_path / "v.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def _bad(tmp_path, mutate):
    sc = copy.deepcopy(GOOD)
    sc["id"] = "smoke/bad"
    mutate(sc)
    # the bad scenario on line 3, after a good one and a blank line
    return _write(tmp_path, [json.dumps(GOOD), "", json.dumps(sc)])


def test_good_file_loads(tmp_path):
    p = _write(tmp_path, [json.dumps(GOOD), "", json.dumps(dict(GOOD, id="smoke/other"))])
    assert [s["id"] for s in vectors_io.load_vectors(p)] == ["smoke/get.S", "smoke/other"]


def _st(sc):
    return sc["steps"][0]["stimuli"][0]


def _ex(sc):
    return sc["steps"][0]["expect"]


CASES = [
    ("unknown port", lambda sc: _st(sc).update(port="foo"), "steps[0].stimuli[0].port", "unknown port"),
    ("unknown req op", lambda sc: _st(sc).update(op="Put"), "steps[0].stimuli[0].op", "unknown op"),
    ("unknown ctrl op", lambda sc: sc["steps"][0]["stimuli"].append(
        {"port": "ctrl", "op": "Kill", "server": 0, "epoch": 0}), "steps[0].stimuli[1].op", "unknown op"),
    ("unknown result", lambda sc: _ex(sc)["resp"][0].update(result="Maybe"),
     "steps[0].expect.resp[0].result", "unknown result"),
    ("unknown state", lambda sc: _ex(sc)["state"]["objects"]["1"].update(state="M"),
     "steps[0].expect.state.objects.1.state", "unknown state"),
    ("missing stimulus field", lambda sc: _st(sc).pop("server"), "steps[0].stimuli[0].server", "missing field"),
    ("missing expect port", lambda sc: _ex(sc).pop("snp"), "steps[0].expect.snp", "missing field"),
    ("missing params field", lambda sc: sc["params"].pop("dirWays"), "params.dirWays", "missing field"),
    ("missing id", lambda sc: sc.pop("id"), "id", "missing field"),
    ("server out of range", lambda sc: _st(sc).update(server=2), "steps[0].stimuli[0].server", "outside"),
    ("not an integer", lambda sc: _st(sc).update(epoch="0"), "steps[0].stimuli[0].epoch", "integer"),
    ("pend of the wrong length", lambda sc: _ex(sc)["state"]["objects"]["1"].update(pend=[0]),
     "steps[0].expect.state.objects.1.pend", "counts"),
    ("schedulableFor not bools", lambda sc: _ex(sc)["state"]["objects"]["1"].update(schedulableFor=[1, 1]),
     "steps[0].expect.state.objects.1.schedulableFor", "bools"),
    ("pending missing", lambda sc: _ex(sc)["state"].pop("pending"), "steps[0].expect.state.pending", "missing"),
    ("applied not a bool", lambda sc: _ex(sc)["ackResult"].append(
        {"server": 0, "obj": 1, "applied": 1, "settled": False}), "steps[0].expect.ackResult[0].applied", "true/false"),
    ("unknown cell", lambda sc: sc.update(cell="get.X"), "cell", "unknown cell"),
    ("object not in the scenario", lambda sc: _st(sc).update(obj=9), "steps[0].stimuli[0].obj", "not in"),
    ("no steps", lambda sc: sc.update(steps=[]), "steps", "at least one"),
]


@pytest.mark.parametrize("name,mutate,field,problem", CASES, ids=[c[0] for c in CASES])
def test_rejected_with_file_line_field(tmp_path, name, mutate, field, problem):
    p = _bad(tmp_path, mutate)
    with pytest.raises(vectors_io.VectorError) as e:
        vectors_io.load_vectors(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:3: {field}: "), msg
    assert problem in msg, msg


def test_bad_json(tmp_path):
    p = _write(tmp_path, [json.dumps(GOOD), '{"id": "x", "steps": [}'])
    with pytest.raises(vectors_io.VectorError) as e:
        vectors_io.load_vectors(p)
    assert str(e.value).startswith(f"{p}:2: ") and "bad JSON" in str(e.value)


def test_duplicate_id(tmp_path):
    p = _write(tmp_path, [json.dumps(GOOD), json.dumps(GOOD)])
    with pytest.raises(vectors_io.VectorError) as e:
        vectors_io.load_vectors(p)
    assert str(e.value).startswith(f"{p}:2: id: ")


def test_replay_refuses_unmatched_geometry():
    """A scenario whose servers/dirSets/dirWays match no RTL variant is an error, not a skip."""
    from apta.testbench.runs import match_variant
    vs = {"default": {"servers": 16, "dirSets": 64, "dirWays": 4},
          "m2s1w1": {"servers": 2, "dirSets": 1, "dirWays": 1},
          "mutants": {"servers": 3, "dirSets": 1, "dirWays": 1}}
    assert match_variant(GOOD["params"], vs) == "m2s1w1"
    assert match_variant(dict(GOOD["params"], servers=3), vs) is None     # mutants never matches
