"""spec/murphi/vectors.py: the RTL test vectors generated from the model's trap properties.

`make vectors` (part of `make verify`, which `make test` runs first) writes build/vectors/; these
tests read it, check the loader's handling of bad input, and re-run the generator once on a mutant
of the model to show that the translation follows the model (it has teeth).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("APTA_VECTORS", ROOT / "build" / "vectors"))
GEN = ROOT / "spec" / "murphi" / "vectors.py"
CHECKS = json.loads((ROOT / "spec" / "murphi" / "checks.json").read_text())
from apta import cells
from apta import vectors_io

CELLS = cells.ids()
SUITE = CHECKS["vectors"]["suites"]["vectors"]
STALL = ("get.I.full", "get.SI", "get.owes", "commit.I.full", "commit.SI")


# --- one definition of the core's cells --------------------------------------------------------
ENGINE = ROOT / "sim" / "src" / "directory.cpp"
SCOREBOARD = ROOT / "rtl" / "testbench" / "core_scoreboard.py"


def engine_cells(text: str) -> set[str]:
    """The cell ids directory.cpp names: its dotted string literals (includes aside)."""
    import re
    body = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#include"))
    return set(re.findall(r'"([a-z][A-Za-z]*\.[A-Za-z.]*[A-Za-z])"', body))


def scoreboard_cells(text: str) -> set[str]:
    """The cell ids the scoreboard names: whole dotted ids in its _expect/_count calls and in what it
    assigns to `cell` (fragments of ids it composes, like ".I.full", are left out)."""
    import ast
    out = set()
    import re
    whole = re.compile(r"[a-z][A-Za-z]*\.[A-Za-z.]*[A-Za-z]")   # a whole id, not a fragment (".I.full")
    def consts(node):
        return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                and whole.fullmatch(n.value)}
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("_expect", "_count"):
            out |= consts(n)
        elif isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "cell" for x in n.targets for t in ast.walk(x)):
            out |= consts(n.value)
    return out


def test_every_cell_an_implementation_names_is_in_core_md():
    """The engine and the scoreboard name only cells of rtl/CORE.md (Cells or Guards)."""
    known = set(CELLS) | set(cells.guards())
    for path, found in ((ENGINE, engine_cells(ENGINE.read_text())), (SCOREBOARD, scoreboard_cells(SCOREBOARD.read_text()))):
        assert len(found) > 10, f"{path}: the cell extraction found almost nothing ({sorted(found)})"
        unknown = sorted(found - known)
        assert not unknown, f"{path}: cells not in rtl/CORE.md (Cells or Guards): {unknown}"
    assert not set(CELLS) & set(cells.guards()), "a cell is both a model cell and a guard"


def test_an_unknown_cell_name_is_caught():
    text = ENGINE.read_text().replace('"commit.zombie"', '"commit.zombi"')
    assert "commit.zombi" in engine_cells(text) - set(CELLS) - set(cells.guards())
    text = SCOREBOARD.read_text().replace('"ack.nothingOwed"', '"ack.nothingOwd"')
    assert "ack.nothingOwd" in scoreboard_cells(text) - set(CELLS) - set(cells.guards())


@pytest.fixture(scope="module")
def coverage() -> dict:
    path = OUT / "coverage.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make vectors` first (make verify and make test do)")
    return vectors_io.load_coverage(path)


@pytest.fixture(scope="module")
def scenarios(coverage) -> dict[str, dict]:
    out = {}
    for cfg in SUITE:
        for sc in vectors_io.load_vectors(OUT / f"{cfg}.jsonl"):
            out[sc["id"]] = sc
    return out


def by_cell(scenarios: dict, cell: str) -> list[dict]:
    """The model's scenarios of a cell and their renamings (not the queued images, whose last
    step is two steps of the model)."""
    return [sc for sc in scenarios.values() if sc["cell"] == cell and "@queued" not in sc["id"]]


# --- coverage ---------------------------------------------------------------------------------
def test_coverage_lists_every_cell_once(coverage):
    listed = [c["cell"] for c in coverage["cells"]]
    assert listed == CELLS, "coverage.json must list exactly rtl/CORE.md's cells, in its order"
    assert not coverage["partial"]
    for c in coverage["cells"]:
        assert c["status"] in ("covered", "unreachable"), f"{c['cell']}: {c['status']}"
        if c["status"] == "unreachable":
            assert c["vector"] is None and c["unreachable_in"], c


def test_every_covered_cell_has_its_vector(coverage, scenarios):
    for c in coverage["cells"]:
        if c["status"] == "covered":
            sc = scenarios.get(c["vector"])
            assert sc is not None, f"{c['cell']}: vector {c['vector']} not in build/vectors/*.jsonl"
            assert sc["cell"] == c["cell"] and sc["config"] == c["config"]


def test_suite_covers_every_cell(coverage):
    """The default vector suite reaches every cell of the table (none is left unreachable)."""
    missing = [c["cell"] for c in coverage["cells"] if c["status"] != "covered"]
    assert not missing, f"cells without a vector: {missing}"


def test_both_rtl_geometries_get_vectors(scenarios):
    geos = {(sc["params"]["servers"], sc["params"]["dirSets"], sc["params"]["dirWays"])
            for sc in scenarios.values()}
    assert geos == {(2, 1, 1), (3, 1, 1)}, geos


# --- content ----------------------------------------------------------------------------------
def test_every_scenario_validates_and_ends_in_its_cell(scenarios):
    assert scenarios
    for sc in scenarios.values():
        vectors_io.validate(sc, tuple(CELLS))
        # the model's scenario, or its image under a renaming of the servers (`@servers<perm>`)
        # and/or with two control steps queued as one (`@queued<step>`)
        assert re.sub(r"@queued\d+", "", sc["id"].split("@servers")[0]) == f"{sc['config']}/{sc['cell']}"
        assert sc["params"]["maxPendPerServer"] >= 1


def _before(sc: dict, i: int) -> dict:
    """The core's state before step i (the initial state: everything I, epoch 0, unfenced)."""
    if i > 0:
        return sc["steps"][i - 1]["expect"]["state"]
    n = sc["params"]["servers"]
    return {"objects": {str(o["obj"]): {"state": "I", "sharers": [], "pend": [0] * n}
                        for o in sc["objects"].values()},
            "fenced": [False] * n, "epoch": [0] * n}


def test_bisnps_match_counter_increments_and_epochs(scenarios):
    """Every BISnp is addressed with the server's current epoch and the object's extent."""
    for sc in scenarios.values():
        ext = {o["obj"]: o for o in sc["objects"].values()}
        for i, st in enumerate(sc["steps"]):
            before = _before(sc, i)
            for m in st["expect"]["snp"]:
                assert m["epoch"] == before["epoch"][m["server"]], (sc["id"], i, m)
                assert (m["base"], m["size"]) == (ext[m["obj"]]["base"], ext[m["obj"]]["size"])
            # one resp per req stimulus, in order
            reqs = [(s["op"], s["server"], s["obj"]) for s in st["stimuli"] if s["port"] == "req"]
            assert reqs == [(r["op"], r["server"], r["obj"]) for r in st["expect"]["resp"]], sc["id"]
            assert len(st["expect"]["ackResult"]) == sum(s["port"] == "ack" for s in st["stimuli"])
            assert len(st["expect"]["ctrlResp"]) == sum(s["port"] == "ctrl" for s in st["stimuli"])


@pytest.mark.parametrize("cell", STALL)
def test_stall_vectors_end_with_a_stall_and_no_change(scenarios, cell):
    found = by_cell(scenarios, cell)
    assert found, f"no vector for {cell}"
    for sc in found:
        last = sc["steps"][-1]
        assert len(last["stimuli"]) == 1 and last["stimuli"][0]["port"] == "req"
        assert [r["result"] for r in last["expect"]["resp"]] == ["Stall"]
        assert not last["expect"]["snp"] and not last["expect"]["ackResult"]
        assert last["expect"]["state"] == _before(sc, len(sc["steps"]) - 1), sc["id"]


@pytest.mark.parametrize("cell,op", [("get.I.evict", "Get"), ("commit.I.evict", "Commit")])
def test_evict_vectors(scenarios, cell, op):
    for sc in by_cell(scenarios, cell):
        last = sc["steps"][-1]
        first = last["stimuli"][0]
        assert first["port"] == "req" and first["op"] == op
        assert last["expect"]["resp"][0]["result"] == "Stall"
        before = _before(sc, len(sc["steps"]) - 1)
        victims = [o for o, e in before["objects"].items() if e["state"] == "S"]
        assert victims, sc["id"]
        after = last["expect"]["state"]["objects"]
        assert all(after[v]["state"] in ("SI", "I", "S") for v in victims)
        # the victim's sharers each got one BISnp
        for v in victims:
            want = sorted(before["objects"][v]["sharers"])
            got = sorted(m["server"] for m in last["expect"]["snp"] if str(m["obj"]) == v)
            assert got == want, sc["id"]


def test_get_in_SA_stays_SA(scenarios):
    for sc in by_cell(scenarios, "get.SA"):
        last = sc["steps"][-1]
        o = str(last["stimuli"][0]["obj"])
        assert last["expect"]["resp"][0]["result"] == "Served"
        assert last["expect"]["state"]["objects"][o]["state"] == "SA", sc["id"]
        assert last["stimuli"][0]["server"] in last["expect"]["state"]["objects"][o]["sharers"]


def test_commit_inval_sends_bisnps_and_enters_SA(scenarios):
    for sc in by_cell(scenarios, "commit.S.inval"):
        last = sc["steps"][-1]
        assert last["expect"]["snp"]
        commit = [s for s in last["stimuli"] if s.get("op") == "Commit"][-1]
        e = last["expect"]["state"]["objects"][str(commit["obj"])]
        assert e["state"] == "SA" and e["sharers"] == [commit["server"]], sc["id"]


def test_ack_and_ctrl_results(scenarios):
    for sc in by_cell(scenarios, "ack.SA.last") + by_cell(scenarios, "ack.SI.last"):
        r = sc["steps"][-1]["expect"]["ackResult"][0]
        assert r["applied"] and r["settled"], sc["id"]
    for sc in by_cell(scenarios, "ack.stale"):
        assert not sc["steps"][-1]["expect"]["ackResult"][0]["applied"], sc["id"]
    for sc in by_cell(scenarios, "rejoin.live") + by_cell(scenarios, "rejoin.fenced"):
        last = sc["steps"][-1]
        c = last["stimuli"][0]["server"]
        before = _before(sc, len(sc["steps"]) - 1)
        assert last["expect"]["ctrlResp"] == [{"op": "RejoinAck", "server": c,
                                               "epoch": before["epoch"][c] + 1}]
        assert not last["expect"]["state"]["fenced"][c]
    for sc in by_cell(scenarios, "get.zombie"):
        assert sc["steps"][-1]["expect"]["resp"][0]["result"] == "Drop"


# The loader's errors on bad input (file, line, field) are tested in tests/rtl/test_vector_loader.py.


# --- the generator --------------------------------------------------------------------------
def test_model_cell_enum_must_match_the_table():
    from apta.murphi import vectors as gen
    src = (ROOT / "spec" / "murphi" / "apta.m").read_text()
    assert gen.model_cells(src, "apta.m") == CELLS + cells.ids("ms")
    with pytest.raises(gen.CheckError, match="V_get_S"):
        gen.model_cells(src.replace("V_get_S,", "", 1), "apta.m")
    with pytest.raises(gen.CheckError, match="V_opc_drain"):
        gen.model_cells(src.replace("V_opc_drain,", "", 1), "apta.m")


def test_verification_model_is_unchanged_by_the_ghost():
    """VECTOR_CELLS is off in apta.m, so `make verify` explores the same state space."""
    src = (ROOT / "spec" / "murphi" / "apta.m").read_text()
    assert "VECTOR_CELLS: false;" in src


def test_mutant_changes_the_vector(tmp_path, scenarios):
    """The paper's S^A + get -> S (M_SA_GET_TO_S): with it the generator's get.SA vector ends in S,
    so a core built to the paper's table would pass a vector only if the vectors were blind."""
    real = [sc for sc in by_cell(scenarios, "get.SA") if sc["config"] == "smoke"]
    assert real, "smoke must cover get.SA"
    r = subprocess.run([sys.executable, str(GEN), "--only", "smoke", "--cells", "get.SA",
                        "--set", "MUTANT=M_SA_GET_TO_S", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    (mut,) = [sc for sc in vectors_io.load_vectors(tmp_path / "smoke.jsonl") if "@" not in sc["id"]]
    o = str(mut["steps"][-1]["stimuli"][0]["obj"])
    assert real[0]["steps"][-1]["expect"]["state"]["objects"][o]["state"] == "SA"
    assert mut["steps"][-1]["expect"]["state"]["objects"][o]["state"] == "S"
    cov = vectors_io.load_coverage(tmp_path / "coverage.json")
    assert cov["partial"] and {c["cell"]: c["status"] for c in cov["cells"]}["get.SA"] == "covered"


def test_unknown_configuration_and_cell_are_named():
    r = subprocess.run([sys.executable, str(GEN), "--only", "nope"], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "nope" in r.stderr
    r = subprocess.run([sys.executable, str(GEN), "--only", "smoke", "--cells", "get.X"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "get.X" in r.stderr


# --- the memory server's vectors (rtl/MEMSERVER.md, build/vectors/ms/) ------------------------
MS_CELLS = cells.ids("ms")


@pytest.fixture(scope="module")
def ms_scenarios() -> dict[str, dict]:
    path = OUT / "ms" / "coverage.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make vectors` first (make verify and make test do)")
    out = {}
    for cfg, e in SUITE.items():
        if e.get("ms"):
            for sc in vectors_io.load_vectors(OUT / "ms" / f"{cfg}.jsonl", ms=True):
                out[sc["id"]] = sc
    return out


def test_ms_coverage_every_cell_covered():
    cov = vectors_io.load_coverage(OUT / "ms" / "coverage.json")
    assert [c["cell"] for c in cov["cells"]] == MS_CELLS
    missing = [c["cell"] for c in cov["cells"] if c["status"] != "covered"]
    assert not missing, f"memory-server cells without a vector: {missing}"


def test_ms_vectors_only_from_configurations_the_rtl_reproduces(ms_scenarios):
    assert ms_scenarios
    for sc in ms_scenarios.values():
        assert sc["params"]["stagingSlots"] == 1 and len(sc["objects"]) <= sc["params"]["dirWays"], sc["id"]


def test_ms_forward_vector_reads_the_draining_version(ms_scenarios):
    """osc.get.forward: the reply carries the committed put id while DRAM still holds the old one
    (the replay holds the drain back), so a server that read DRAM would fail it."""
    found = [sc for sc in ms_scenarios.values() if sc["cell"] == "osc.get.forward"]
    assert found
    for sc in found:
        last = sc["steps"][-1]
        data = [r for r in last["expect"]["rsp"] if r["op"] == "ObjData"]
        assert data and all(r["val"] > 0 for r in data), sc["id"]
        assert "mem" not in last["expect"]["state"], "a put is draining: DRAM is not compared"


def test_ms_open_put_invisible(ms_scenarios):
    """osc.get.open: a get while an open put has staged lines returns only the old version."""
    for sc in (s for s in ms_scenarios.values() if s["cell"] == "osc.get.open"):
        staged = {s["val"] for st in sc["steps"] for s in st["stimuli"] if s.get("op") == "PutLine"}
        data = [r["val"] for r in sc["steps"][-1]["expect"]["rsp"] if r["op"] == "ObjData"]
        assert staged and data and not (set(data) & staged), sc["id"]


def test_ms_loader_names_file_line_field(tmp_path, ms_scenarios):
    sc = json.loads(json.dumps(next(iter(ms_scenarios.values()))))
    sc["steps"][0]["stimuli"][0]["port"] = "bogus"
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(sc) + "\n")
    with pytest.raises(vectors_io.VectorError, match=r"bad.jsonl:1: steps\[0\].stimuli\[0\].port: unknown port"):
        vectors_io.load_vectors(f, ms=True)
    sc = json.loads(json.dumps(next(iter(ms_scenarios.values()))))
    sc["steps"][-1]["expect"]["err"] = ["exploded"]
    f.write_text("\n" + json.dumps(sc) + "\n")
    with pytest.raises(vectors_io.VectorError, match=r"bad.jsonl:2: steps\[\d+\].expect.err\[0\]: unknown err code"):
        vectors_io.load_vectors(f, ms=True)


# --- the hold table of versioned gets (rtl/MEMSERVER.md osc.hold*, osc.release) -----------------
HOLD_CELLS = ("osc.hold", "osc.hold.full", "osc.release", "osc.hold.keep", "osc.hold.drop", "osc.hold.cancel")


def _one(ms_scenarios, cell):
    found = [sc for sc in ms_scenarios.values() if sc["cell"] == cell]
    assert found, f"no vector for {cell}"
    return found


def test_hold_cells_are_covered_by_the_versioned_configurations():
    """Every hold-table cell has a vector, from a VERSIONED configuration (the others cannot reach
    them: smoke's exhaustive run proves them unreachable there)."""
    cov = vectors_io.load_coverage(OUT / "ms" / "coverage.json")
    rows = {c["cell"]: c for c in cov["cells"]}
    assert set(HOLD_CELLS) <= set(rows) and set(HOLD_CELLS) <= set(MS_CELLS)
    for c in HOLD_CELLS:
        assert rows[c]["status"] == "covered", c
        assert all(CHECKS["configs"][SUITE[k].get("config", k)]["constants"].get("VERSIONED")
                   for k in rows[c]["covered_in"]), (c, rows[c]["covered_in"])


def test_hold_vectors_follow_the_model(ms_scenarios):
    """What each hold cell's last step expects, read from the vectors (so a translation that lost
    the hold, answered the wrong message or released too early would fail here first)."""
    for sc in _one(ms_scenarios, "osc.hold"):
        last = sc["steps"][-1]
        (g,) = last["stimuli"]
        assert g["op"] == "ObjGet" and g["version"] > last["expect"]["state"]["commitSeq"], sc["id"]
        assert last["expect"]["rsp"] == [] and last["expect"]["state"]["held"] == 1, sc["id"]
    for sc in _one(ms_scenarios, "osc.hold.full"):
        last = sc["steps"][-1]
        (r,) = last["expect"]["rsp"]
        assert r["op"] == "GetRetry" and r["version"] == last["stimuli"][0]["version"], sc["id"]
        assert last["expect"]["state"]["held"] == sc["params"]["holdSlots"], sc["id"]
    for sc in _one(ms_scenarios, "osc.release"):
        last = sc["steps"][-1]
        ops = [r["op"] for r in last["expect"]["rsp"]]
        assert "PutCommit" in ops and ops[-1] == "ObjData", sc["id"]    # served on the commit
        named = max(s.get("version", 0) for st in sc["steps"] for s in st["stimuli"])
        assert last["expect"]["state"]["commitSeq"] >= named and last["expect"]["state"]["held"] == 0
        assert all(r["val"] > 0 for r in last["expect"]["rsp"] if r["op"] == "ObjData"), sc["id"]
    for sc in _one(ms_scenarios, "osc.hold.keep"):
        last = sc["steps"][-1]
        assert last["stimuli"][0]["op"] == "Fence" and "fenceAbort" in last["expect"]["err"], sc["id"]
        assert last["expect"]["state"]["held"] == 1 and last["expect"]["rsp"] == [], sc["id"]
    for sc in _one(ms_scenarios, "osc.hold.drop"):
        last = sc["steps"][-1]
        assert last["expect"]["state"]["held"] == 0 and last["expect"]["rsp"] == [], sc["id"]
    for sc in _one(ms_scenarios, "osc.hold.cancel"):
        last = sc["steps"][-1]
        (r,) = last["expect"]["rsp"]
        assert last["stimuli"] == [{"port": "cancel", "obj": r["obj"]}] and r["op"] == "GetCancelled"
        assert last["expect"]["state"]["held"] == 0, sc["id"]


def test_hold_mutant_changes_the_vector(tmp_path, ms_scenarios):
    """With the model's M_FENCE_DROPS_HOLDS (the producer's fence drops its readers' held gets) the
    generator's osc.hold.keep vector expects the hold table empty after the fence: the vectors
    follow the model, so an RTL with that bug fails the real vector."""
    real = _one(ms_scenarios, "osc.hold.keep")[0]
    r = subprocess.run([sys.executable, str(GEN), "--only", "versioned", "--cells", "osc.hold.keep",
                        "--set", "MUTANT=M_FENCE_DROPS_HOLDS", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    (mut,) = vectors_io.load_vectors(tmp_path / "ms" / "versioned.jsonl", ms=True)
    assert real["steps"][-1]["expect"]["state"]["held"] == 1
    assert mut["steps"][-1]["expect"]["state"]["held"] == 0


def test_hold_loader_names_bad_fields(tmp_path, ms_scenarios):
    sc = json.loads(json.dumps(_one(ms_scenarios, "osc.hold.full")[0]))
    sc["steps"][-1]["expect"]["rsp"][0]["version"] = 0
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(sc) + "\n")
    with pytest.raises(vectors_io.VectorError, match=r"bad.jsonl:1: steps\[\d+\].expect.rsp\[0\].version: 0 outside 1"):
        vectors_io.load_vectors(f, ms=True)
    sc = json.loads(json.dumps(_one(ms_scenarios, "osc.hold")[0]))
    sc["steps"][-1]["expect"]["state"]["held"] = 2
    f.write_text(json.dumps(sc) + "\n")
    with pytest.raises(vectors_io.VectorError, match=r"bad.jsonl:1: steps\[\d+\].expect.state.held: 2 outside 0..1"):
        vectors_io.load_vectors(f, ms=True)


# --- every server in the control-plane scenarios (the model's symmetry) -------------------------
def test_every_server_is_fenced_rejoined_and_acked_in_some_vector():
    """The model names one server in a counterexample; the vectors add its images under every
    renaming of the servers (Server is a scalarset), so a bug in one server's row of the RTL
    (say server 0's epoch on rejoin) is replayed too."""
    for f in sorted(OUT.glob("*.jsonl")):
        scen = vectors_io.load_vectors(f)
        if not scen:          # a configuration that targets memory-server cells only (versioned*)
            continue
        n = scen[0]["params"]["servers"]
        seen = {"Fence": set(), "Rejoin": set(), "ack": set()}
        for sc in scen:
            for st in sc["steps"]:
                for s in st["stimuli"]:
                    k = s.get("op") if s["port"] == "ctrl" else s["port"]
                    if k in seen:
                        seen[k].add(s["server"])
        for k, servers in seen.items():
            assert not servers or servers == set(range(n)), f"{f.name}: {k} only for servers {sorted(servers)}"


def test_a_renamed_scenario_is_the_same_scenario_on_other_servers():
    from apta.murphi import vectors as vectors
    sc = {"id": "x/c", "params": {"servers": 2}, "steps": [{
        "rule": "r", "stimuli": [{"port": "ctrl", "op": "Rejoin", "server": 1, "epoch": 0}],
        "expect": {"resp": [], "ctrlResp": [{"op": "RejoinAck", "server": 1, "epoch": 1}],
                   "state": {"objects": {"1": {"state": "S", "sharers": [0], "pend": [0, 2],
                                               "schedulableFor": [True, False]}},
                             "fenced": [False, True], "epoch": [0, 1],
                             "pending": [False, True], "schedulable": [True, False]}}}]}
    im = vectors.permute_servers(sc, [1, 0])
    st = im["steps"][0]
    assert st["stimuli"][0]["server"] == 0 and st["expect"]["ctrlResp"][0]["server"] == 0
    assert st["expect"]["state"]["objects"]["1"] == {"state": "S", "sharers": [1], "pend": [2, 0],
                                                     "schedulableFor": [False, True]}
    assert st["expect"]["state"]["epoch"] == [1, 0] and st["expect"]["state"]["fenced"] == [True, False]
    assert im["id"] == "x/c@servers10" and sc["steps"][0]["stimuli"][0]["server"] == 1   # the original untouched


def test_queued_image_sends_two_control_steps_as_one():
    """vectors.queued_images: two consecutive control steps (a Fence, then a Rejoin) become one step
    with both flits, expecting both answers in order and the second step's state; a scenario with
    no such pair has no image."""
    from apta.murphi import vectors as vectors

    def step(port, op, resp, state):
        return {"rule": op, "stimuli": [{"port": port, "op": op, "server": 1, "epoch": 0}],
                "expect": {"resp": [], "snp": [], "ackResult": [], "ctrlResp": resp, "state": state}}
    s1, s2 = {"fenced": [False, True], "epoch": [0, 0]}, {"fenced": [False, False], "epoch": [0, 1]}
    fence = step("ctrl", "Fence", [{"op": "Fence", "server": 1, "epoch": 0}], s1)
    rejoin = step("ctrl", "Rejoin", [{"op": "RejoinAck", "server": 1, "epoch": 1}], s2)
    sc = {"id": "x/rejoin.fenced", "params": {"servers": 2}, "steps": [fence, rejoin]}
    out = vectors.queued_images([sc])
    assert [x["id"] for x in out] == ["x/rejoin.fenced", "x/rejoin.fenced@queued0"] and out[0] is sc
    (m,) = out[1]["steps"]
    assert m["stimuli"] == fence["stimuli"] + rejoin["stimuli"]
    assert m["expect"]["ctrlResp"] == fence["expect"]["ctrlResp"] + rejoin["expect"]["ctrlResp"]
    assert m["expect"]["state"] == s2
    get = step("req", "Get", [], s1)
    assert vectors.queued_images([{**sc, "steps": [get, rejoin]}]) == [{**sc, "steps": [get, rejoin]}]


def test_queued_images_are_in_the_vectors(scenarios):
    """Every queued image the model's traces allow is written (a Fence then a Rejoin, in smoke)."""
    q = [sc for sc in scenarios.values() if "@queued" in sc["id"]]
    assert q and any(sc["params"]["servers"] == 2 for sc in q)
    for sc in q:
        assert any(len(st["stimuli"]) == 2 and {s["port"] for s in st["stimuli"]} == {"ctrl"} for st in sc["steps"])
