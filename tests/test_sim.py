"""The trace-replay simulator (sim/): unit tests on hand-made traces, the protocol engine against
the model checker's vectors, Table IV from the simulated caches, bad input, and a small end-to-end
evaluation. Builds build/simulator with CMake when it is missing or older than its sources.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SIMDIR = ROOT / "sim"
BUILD = ROOT / "build" / "simulator"
BIN = BUILD / "apta-sim"
VECTORS = ROOT / "build" / "vectors"
from apta.sim import plan as planlib
from apta import schema, sim_synth, workflow

workflow = planlib.workflow
PARAMS = schema.load_sim_params(SIMDIR / "params.json")
APPS = workflow.names()   # every workflow file


def p(sec, key):
    return PARAMS[sec][key]["value"]


def run(sim, plan: dict, scenarios: list, tmp: Path, check=True):
    planlib.write_json_atomic(str(tmp / "plan.json"), plan)
    planlib.write_json_atomic(str(tmp / "sc.json"), {"scenarios": scenarios})
    out = tmp / "out.json"
    if out.exists():
        out.unlink()
    r = subprocess.run([str(sim), "--params", str(SIMDIR / "params.json"), "--plan", str(tmp / "plan.json"),
                        "--scenarios", str(tmp / "sc.json"), "--out", str(out), "--quiet"], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
        return {x["name"] + "/" + x["config"]: x for x in json.loads(out.read_text())["results"]}
    return r


def trace(d: Path, events: list[str], objects=(), meta_extra=None) -> str:
    """A hand-made trace directory (workloads/TRACES.md)."""
    d.mkdir(parents=True, exist_ok=True)
    with gzip.open(d / "sigil.events.out-1.gz", "wt") as fh:
        fh.write("\n".join(events) + "\n")
    (d / "sigil.pthread.out").write_text("")
    meta = {"objects": [{"kind": k, "name": n, "addr": hex(a), "len": ln} for k, n, a, ln in objects]}
    meta.update(meta_extra or {})
    (d / "meta.json").write_text(json.dumps(meta))
    return str(d)


def inst(function, server, trace_dir, deps=(), reads=(), writes=()):
    return {"function": function, "index": 0, "server": server, "deps": list(deps), "reads": list(reads),
            "writes": list(writes), "trace": trace_dir}


def lines_events(first_line: int, n: int, kind="*") -> list[str]:
    """One event per 32 consecutive lines starting at line `first_line`."""
    out = []
    for k in range(0, n, 32):
        m = min(32, n - k)
        s = (first_line + k) * 64
        out.append(f"@ 0,0,{m},0 {kind} {s:#x} {s + m * 64 - 1:#x}")
    return out


# --- parameters -------------------------------------------------------------------------------------
def test_every_parameter_has_a_value_and_a_source():
    """Each parameter has a source and either its value or the name of the schema/params.json entry
    it takes (the RTL's geometry, defined once); resolved, every one has a value."""
    raw = json.loads((SIMDIR / "params.json").read_text())
    for sec, entries in raw.items():
        if sec in ("about", "configs"):
            continue
        for key, e in entries.items():
            if key == "about":
                continue
            assert set(e) in ({"value", "source"}, {"schema", "source"}), f"{sec}.{key}"
            assert isinstance(e["source"], str) and len(e["source"]) > 10, f"{sec}.{key}: no source"
            assert "value" in PARAMS[sec][key], f"{sec}.{key}: unresolved"
    # the paper's seven (§IV-A), and the dataflow configuration beyond it
    assert set(PARAMS["configs"]) - {"about"} == {"rdma", "rdma_faas", "rdmaf_faas", "rdmaf_apta", "cxl_uncached", "cxl_cached", "apta",
                                                  "apta_dataflow"}


# --- compute side: caches and fixed CPI --------------------------------------------------------------
def test_cache_hits_and_misses_on_a_known_trace(sim, tmp_path):
    small = lines_events(0x1000, 1000)           # 1000 distinct lines: fit in L1 (256 KB = 4096 lines)
    big = lines_events(0x100000, 16384)          # 1 MB: four times L1, fits L2 (32 MB)
    ev = ["& COMPUTE", "@ 100,0,1,0"] + small + small + big + big + ["& END"]
    plan = {"app": "t", "objects": [], "instances": [inst("f", 0, trace(tmp_path / "f.0", ev))]}
    r = run(sim, plan, [{"name": "x", "config": "apta"}], tmp_path)["x/apta"]
    # first pass over each set: compulsory misses to DRAM; second pass of `small`: all L1 hits;
    # second pass of `big` (LRU, 4x L1): L1 misses that hit in L2
    assert r["l2_misses"] == 1000 + 16384
    assert r["l1_hits"] == 1000
    assert r["l1_misses"] == 1000 + 16384 * 2
    # timing of the first two events: 100 ops at the CPI, then 32 compulsory misses overlapped
    ev2 = ["& COMPUTE", "@ 100,0,1,0"] + lines_events(0x1000, 32) + lines_events(0x1000, 32) + ["& END"]
    plan = {"app": "t", "objects": [], "instances": [inst("f", 0, trace(tmp_path / "g.0", ev2))]}
    r = run(sim, plan, [{"name": "x", "config": "apta"}], tmp_path)["x/apta"]
    ghz, cpi = p("compute", "clock_ghz"), p("compute", "cpi_int_fp")
    # one wave (32 <= 128 MSHRs): the first line after the L2 and DRAM (controller + device)
    # latencies, the other 31 one line period apart: the bus burst, or tCCD_L when longer (the
    # stream's columns are in one bank group)
    miss_cyc = p("compute", "l2_latency_cycles") + (p("dram", "controller_ns") + p("dram", "latency_ns")) * ghz
    burst_cyc = max(64 * 8 / p("dram", "bandwidth_gbps"), p("dram", "tccd_l_ns")) * ghz
    assert p("dram", "tccd_l_ns") > 64 * 8 / p("dram", "bandwidth_gbps")  # DDR4-2400: the bank group bounds a stream
    want = (100 * cpi + miss_cyc + 31 * burst_cyc + 32 * p("compute", "l1_latency_cycles")) / ghz
    assert r["compute_ns"] == pytest.approx(want, rel=1e-9)


def test_l2_hits_stream_at_the_l1_l2_path_bandwidth(sim, tmp_path):
    """An event of n L2 hits: its lines return one per line / l2_bytes_per_cycle after the L2
    latency, not one L2 latency per MSHR wave (a bandwidth-free L2 made an LLC-resident object's read
    nearly free)."""
    n = 8192                                     # 512 KB: twice L1, so the second pass misses L1 and hits L2
    first, again = [f"@ 0,0,1,0 * {0x100000 * 64:#x} {(0x100000 + n) * 64 - 1:#x}"] * 2
    def plan(name, *events):
        return {"app": "t", "objects": [], "instances": [inst("f", 0, trace(tmp_path / name, ["& COMPUTE", *events, "& END"]))]}
    one = run(sim, plan("f.0", first), [{"name": "x", "config": "apta"}], tmp_path)["x/apta"]
    two = run(sim, plan("g.0", first, again), [{"name": "x", "config": "apta"}], tmp_path)["x/apta"]
    assert two["l1_misses"] == 2 * n and two["l2_misses"] == n
    ghz = p("compute", "clock_ghz")
    want = (p("compute", "l2_latency_cycles") + (n - 1) * 64 / p("compute", "l2_bytes_per_cycle")) / ghz
    assert two["compute_ns"] - one["compute_ns"] == pytest.approx(want, rel=1e-9)
    # the bound is the parameter: half the width, twice the time
    narrow = run(sim, plan("g.0", first, again),
                 [{"name": "x", "config": "apta", "overrides": {"compute.l2_bytes_per_cycle": p("compute", "l2_bytes_per_cycle") / 2}}],
                 tmp_path)["x/apta"]
    assert narrow["compute_ns"] - one["compute_ns"] == pytest.approx(
        want + (n - 1) * 64 / p("compute", "l2_bytes_per_cycle") / ghz, rel=1e-9)


def test_weaker_core_only_slows_compute(sim, tmp_path):
    ev = ["& COMPUTE", "@ 100000,0,0,0", "& END"]
    plan = {"app": "t", "objects": [], "instances": [inst("f", 0, trace(tmp_path / "f.0", ev))]}
    r = run(sim, plan, [{"name": "a", "config": "apta"}, {"name": "b", "config": "apta", "overrides": {"compute.cpi_int_fp": 1.0}}], tmp_path)
    assert r["a/apta"]["compute_ns"] == pytest.approx(100000 * p("compute", "cpi_int_fp") / p("compute", "clock_ghz"))
    assert r["b/apta"]["compute_ns"] == pytest.approx(100000 / p("compute", "clock_ghz"))


# --- links: latency and bandwidth arithmetic ----------------------------------------------------------
def get_plan(tmp_path, nbytes=6400):
    d = trace(tmp_path / "f.0", ["& GET", "& COMPUTE", "& END"], [("get", "X", 0x10000, nbytes)])
    return {"app": "t", "objects": ["X"], "instances": [inst("f", 0, d, reads=["X"])]}


@pytest.mark.parametrize("config,link", [("apta", "dm"), ("rdma", "rdma")])
def test_object_get_latency_is_link_arithmetic(sim, tmp_path, config, link):
    n = 100
    r = run(sim, get_plan(tmp_path, n * 64), [{"name": "x", "config": config}], tmp_path)[f"x/{config}"]
    lat, bw, flit = p("links", f"{link}_latency_ns"), p("links", f"{link}_bandwidth_gbps"), p("links", "flit_bytes")
    ms = (p("memory_server", "otc_lookup_cycles") + p("memory_server", "osc_translate_cycles")) / p("memory_server", "clock_ghz")
    # request flit up; OTC + OSC; first line out of DRAM after one access (controller + device);
    # n lines streamed down
    dram = p("dram", "controller_ns") + p("dram", "latency_ns")
    want = flit * 8 / bw + lat + ms + dram + n * flit * 8 / bw + lat
    assert r["get_ns"] == pytest.approx(want, rel=1e-9)


def test_bandwidth_and_latency_overrides(sim, tmp_path):
    bus = {"dram.tccd_l_ns": 0}  # the DRAM streams at its bus rate, faster than either link
    sc = [{"name": "a", "config": "apta", "overrides": bus},
          {"name": "b", "config": "apta", "overrides": {**bus, "links.dm_bandwidth_gbps": 160}},
          {"name": "c", "config": "apta", "overrides": {**bus, "links.dm_latency_ns": 600}},
          {"name": "d", "config": "apta", "overrides": {"links.dm_bandwidth_gbps": 160}}]
    r = run(sim, get_plan(tmp_path, 64000), sc, tmp_path)
    flit, bw = p("links", "flit_bytes"), p("links", "dm_bandwidth_gbps")
    assert r["a/apta"]["get_ns"] - r["b/apta"]["get_ns"] == pytest.approx(1001 * flit * 8 / bw / 2, rel=1e-9)
    assert r["c/apta"]["get_ns"] - r["a/apta"]["get_ns"] == pytest.approx(2 * (600 - p("links", "dm_latency_ns")), rel=1e-9)
    # at 160 Gbit/s a flit (3.4 ns) is shorter than tCCD_L: the reply ends with the DRAM's last line
    tccd = p("dram", "tccd_l_ns")
    assert r["d/apta"]["get_ns"] - r["b/apta"]["get_ns"] == pytest.approx(1000 * (tccd - flit * 8 / 160), rel=1e-9)


def test_jitter_changes_latency_but_keeps_order(sim, tmp_path):
    sc = [{"name": f"j{k}", "config": "cxl_uncached", "jitter": True, "seed": k} for k in range(1, 6)]
    r = run(sim, get_plan(tmp_path, 64 * 64), sc + [{"name": "n", "config": "cxl_uncached"}], tmp_path)
    vals = {r[f"j{k}/cxl_uncached"]["get_ns"] for k in range(1, 6)}
    assert len(vals) == 5 and all(v > 0 for v in vals)
    again = run(sim, get_plan(tmp_path, 64 * 64), sc[:1], tmp_path)
    assert again["j1/cxl_uncached"]["get_ns"] == r["j1/cxl_uncached"]["get_ns"]  # deterministic per seed


def test_cxl_cached_loads_fetch_their_lines_on_demand(sim, tmp_path):
    """CXL cached: a get moves no data; the function's loads of the object's lines cross the link as
    line reads when an event reaches them (a request and a data flit each, jittered like any
    message), and a second read of the same lines hits the caches."""
    n = 100
    rd = f"@ 0,0,1,0 * {0x10000:#x} {0x10000 + n * 64 - 1:#x}"
    def plan(name, get, comp):
        d = trace(tmp_path / name, ["& GET", *get, "& COMPUTE", *comp, "& END"], [("get", "X", 0x10000, n * 64)])
        return {"app": "t", "objects": ["X"], "instances": [inst("f", 0, d, reads=["X"])]}
    rtt = 2 * p("links", "dm_latency_ns")
    r = run(sim, plan("a.0", [rd], [rd]), [{"name": "x", "config": "cxl_cached"}], tmp_path)["x/cxl_cached"]
    assert r["messages"] == 2 * n                       # n line reads in the GET phase, none after
    assert r["get_ns"] > rtt and r["compute_ns"] < rtt / 10
    late = run(sim, plan("b.0", [], [rd]), [{"name": "x", "config": "cxl_cached"}], tmp_path)["x/cxl_cached"]
    assert late["messages"] == 2 * n and late["get_ns"] == 0 and late["compute_ns"] > rtt
    # CXL uncached reads the object into a local copy at its get instead
    un = run(sim, plan("b.0", [], [rd]), [{"name": "x", "config": "cxl_uncached"}], tmp_path)["x/cxl_uncached"]
    assert un["messages"] == 2 * n and un["get_ns"] > rtt and un["compute_ns"] < rtt / 10
    # the window's line reads are messages of the jittered link
    sc = [{"name": f"j{k}", "config": "cxl_cached", "jitter": True, "seed": k} for k in range(1, 4)]
    j = run(sim, plan("b.0", [], [rd]), sc, tmp_path)
    assert len({j[f"j{k}/cxl_cached"]["compute_ns"] for k in range(1, 4)}) == 3


def get_put_plan(tmp_path, lines=512):
    """One instance: a get of X and a put of Y, `lines` lines each: two store operations."""
    d = trace(tmp_path / "gp.0", ["& GET", "& COMPUTE", "& PUT", "& END"],
              [("get", "X", 0x10000, lines * 64), ("put", "Y", 0x900000, lines * 64)])
    return {"app": "t", "objects": ["X", "Y"], "instances": [inst("f", 0, d, reads=["X"], writes=["Y"])]}


@pytest.mark.parametrize("config", ["cxl_uncached", "apta"])
def test_jitter_modes_defining_properties(sim, tmp_path, config):
    """The three jitter modes (sim/README.md, Links), each by its defining property, measured by the
    simulator's own jitter statistics on a get and a put: per message, one draw per message and
    consecutive latencies uncorrelated; per operation, one draw per operation (2 here) shared by its
    messages; correlated, a draw per message but consecutive latencies nearly equal (messages ns
    apart, correlation time 10 us). The default is per message."""
    seeds = range(1, 6)
    sc = [{"name": f"{m}{k}", "config": config, "jitter": True, "seed": k, "jitter_mode": m}
          for m in ("message", "operation", "correlated") for k in seeds]
    sc += [{"name": f"default{k}", "config": config, "jitter": True, "seed": k} for k in seeds]
    r = run(sim, get_put_plan(tmp_path), sc, tmp_path)
    for k in seeds:
        msg, op, cor, dflt = (r[f"{m}{k}/{config}"] for m in ("message", "operation", "correlated", "default"))
        n = msg["messages"]
        assert msg["jitter_stats"]["messages"] == n > 2 and op["messages"] == cor["messages"] == n
        assert msg["jitter_stats"]["draws"] == n and cor["jitter_stats"]["draws"] == n
        assert op["jitter_stats"]["draws"] == 2  # the get and the put
        assert dflt["makespan_ns"] == msg["makespan_ns"] and dflt["jitter_mode"] == "message"
        if config == "cxl_uncached":  # hundreds of messages per channel: the correlations are measurable
            assert abs(msg["jitter_stats"]["lag1"]) < 0.2
            assert cor["jitter_stats"]["lag1"] > 0.9
            assert op["jitter_stats"]["lag1"] > 0.9
    # per message, the latency's spread is links.jitter_cv (clamping at 0 trims it a little)
    if config == "cxl_uncached":
        cvs = [r[f"message{k}/{config}"]["jitter_stats"]["cv"] for k in seeds]
        assert sum(cvs) / len(cvs) == pytest.approx(p("links", "jitter_cv"), abs=0.04)
    bad = run(sim, get_plan(tmp_path), [{"name": "x", "config": "apta", "jitter": True, "jitter_mode": "per-byte"}], tmp_path, check=False)
    assert bad.returncode != 0 and "scenarios[0].jitter_mode" in bad.stderr and "per-byte" in bad.stderr


# --- puts: blocking vs lazy invalidation, failures, the scheduler rule ---------------------------------
def share_plan(tmp_path, reader_reads_x=True, third=False):
    """A on c1 gets X (and caches it); B on c2, after A, gets and puts X; optionally C on c1 gets X."""
    ga = [("get", "X", 0x10000, 6400)] if reader_reads_x else [("get", "Y", 0x10000, 6400)]
    a = trace(tmp_path / "A.0", ["& GET", "& COMPUTE", "@ 1000,0,0,0", "& END"], ga)
    b = trace(tmp_path / "B.0", ["& GET", "& COMPUTE", "@ 1000,0,0,0", "& PUT", "& END"],
              [("get", "X", 0x10000, 6400), ("put", "X", 0x20000, 6400)])
    insts = [inst("A", 0, a, reads=["X"] if reader_reads_x else ["Y"]), inst("B", 1, b, deps=[0], reads=["X"], writes=["X"])]
    if third:
        c = trace(tmp_path / "C.0", ["& GET", "& COMPUTE", "& END"], [("get", "X", 0x10000, 6400)])
        insts.append(inst("C", 0, c, deps=[1], reads=["X"]))
    return {"app": "t", "objects": ["X", "Y"], "instances": insts}


def test_cxl_cached_put_waits_for_acks_apta_does_not(sim, tmp_path):
    sc = [{"name": "x", "config": c} for c in ("apta", "cxl_cached")]
    shared = run(sim, share_plan(tmp_path, True), sc, tmp_path)
    alone = run(sim, share_plan(tmp_path, False), sc, tmp_path)
    pb = lambda r, c: r[f"x/{c}"]["instances"][1]["put_ns"]
    assert shared["x/apta"]["instances"][1]["put_inv"] and not alone["x/apta"]["instances"][1]["put_inv"]
    assert pb(shared, "apta") == pytest.approx(pb(alone, "apta"))          # acked without waiting
    rtt = 2 * p("links", "dm_latency_ns")
    assert pb(shared, "cxl_cached") > pb(alone, "cxl_cached") + rtt        # waits for the sharer's acks


def test_failure_stalls_cxl_cached_not_apta(sim, tmp_path):
    base = run(sim, share_plan(tmp_path), [{"name": "x", "config": c} for c in ("apta", "cxl_cached")], tmp_path)
    sc = [{"name": "f", "config": c, "failures": [{"server": 0, "at_ns": base[f"x/{c}"]["instances"][0]["end_ns"] + 1}]}
          for c in ("apta", "cxl_cached")]
    r = run(sim, share_plan(tmp_path), sc, tmp_path)
    assert r["f/apta"]["completed"] and r["f/apta"]["makespan_ns"] == pytest.approx(base["x/apta"]["makespan_ns"])
    assert not r["f/cxl_cached"]["completed"] and r["f/cxl_cached"]["makespan_ns"] is None
    assert "dead server c1" in r["f/cxl_cached"]["stall"]
    # with an invalidation timeout (not CXL 3.0's behaviour) the blocked put gives up and finishes
    to = [dict(sc[1], name="t", overrides={"faults.cxl_inv_timeout_us": 50})]
    rt = run(sim, share_plan(tmp_path), to, tmp_path)["t/cxl_cached"]
    assert rt["completed"] and rt["inv_timeouts"] == 1 and rt["stall"] is None
    assert rt["makespan_ns"] > base["x/cxl_cached"]["makespan_ns"] + 40000
    # the dead server's later function is re-executed elsewhere (locality-aware placement)
    sc3 = [{"name": "f", "config": "apta", "failures": [{"server": 0, "at_ns": base["x/apta"]["instances"][0]["end_ns"] + 1}]}]
    r3 = run(sim, share_plan(tmp_path, third=True), sc3, tmp_path)["f/apta"]
    assert r3["completed"] and r3["instances"][2]["server"] != "c1"


def test_scheduler_rule_prevents_stale_reads(sim, tmp_path):
    sc = [{"name": "rule", "config": "apta"}, {"name": "norule", "config": "apta", "rule": False}]
    r = run(sim, share_plan(tmp_path, third=True), sc, tmp_path)
    assert r["rule/apta"]["stale_reads"] == 0
    assert r["rule/apta"]["instances"][2]["get_hit"] is False       # C waited for c1's ack, then missed
    assert r["norule/apta"]["stale_reads"] == 1                       # placed before the invalidation landed
    assert r["rule/apta"]["instances"][2]["start_ns"] > r["norule/apta"]["instances"][2]["start_ns"]


# --- dataflow invocation over versioned gets (sim/README.md "Dataflow") ----------------------------------
INVOKE = {"software.invoke_us": 1000}  # 1 ms invocation path, far above these functions' run times


def chain_plan(tmp_path, reader_first=False):
    """A (c1) puts X; B (c2, after A) gets X, puts Y; C (c3, after B) gets Y. With `reader_first`,
    Z (c2) gets X (the input) first and A comes after Z, so c2 holds an old copy of X."""
    put = lambda n, o, a: [("put", o, a, 6400)]
    a = trace(tmp_path / "A.0", ["& COMPUTE", "@ 3000000,0,0,0", "& PUT", "& END"], put(0, "X", 0x20000))
    b = trace(tmp_path / "B.0", ["& GET", "& COMPUTE", "@ 1000,0,0,0", "& PUT", "& END"],
              [("get", "X", 0x10000, 6400), ("put", "Y", 0x20000, 6400)])
    c = trace(tmp_path / "C.0", ["& GET", "& COMPUTE", "@ 1000,0,0,0", "& END"], [("get", "Y", 0x10000, 6400)])
    insts = [inst("A", 0, a, writes=["X"]), inst("B", 1, b, deps=[0], reads=["X"], writes=["Y"]),
             inst("C", 2, c, deps=[1], reads=["Y"])]
    if reader_first:
        z = trace(tmp_path / "Z.0", ["& GET", "& COMPUTE", "& END"], [("get", "X", 0x10000, 6400)])
        insts = [inst("Z", 1, z, reads=["X"])] + insts
        for k, x in enumerate(insts[1:], 1):
            x["deps"] = [k - 1]
    return {"app": "t", "objects": ["X", "Y"], "instances": insts}


def clean(r):
    return r["completed"] and r["version_violations"] == 0 and r["dag_violations"] == 0 and r["stale_reads"] == 0


def test_dataflow_overlaps_invocation_and_holds_the_get(sim, tmp_path):
    sc = [{"name": "x", "config": c, "overrides": INVOKE} for c in ("apta", "apta_dataflow")]
    r = run(sim, chain_plan(tmp_path), sc, tmp_path)
    cf, df = r["x/apta"], r["x/apta_dataflow"]
    assert clean(cf) and clean(df)
    inv = 1e6
    # control flow pays the invocation path once per level (3); dataflow invokes B with A, C when B's
    # predecessor A finished, so it pays it twice
    assert cf["makespan_ns"] > 3 * inv and df["makespan_ns"] < cf["makespan_ns"] - 0.9 * inv
    a, b = df["instances"][0], df["instances"][1]
    assert b["start_ns"] == pytest.approx(a["start_ns"])   # invoked together, placed on c2 at once
    assert df["held_gets"] == 1 and df["hold_wait_ns"] > 0  # B's get of X waited at the OSC for A's commit
    assert b["end_ns"] > a["end_ns"]
    # without an invocation path nothing is gained or lost but the held get
    r0 = run(sim, chain_plan(tmp_path), [{"name": "z", "config": c} for c in ("apta", "apta_dataflow")], tmp_path)
    assert clean(r0["z/apta_dataflow"]) and r0["z/apta_dataflow"]["makespan_ns"] <= r0["z/apta"]["makespan_ns"] * 1.01


@pytest.mark.parametrize("mutant,plan,counter", [
    ("release_early", "chain", "version_violations"),        # served before its version committed
    ("hit_ignores_version", "reader_first", "version_violations"),  # c2's old copy of X is a hit
    ("no_put_gate", "war", "dag_violations"),                 # D's put overtakes A's read of X
])
def test_a_wrong_dataflow_is_caught(sim, tmp_path, mutant, plan, counter):
    pl = war_plan(tmp_path) if plan == "war" else chain_plan(tmp_path, reader_first=plan == "reader_first")
    # reader_first: with no invocation path B starts on c2 right after Z, before A's commit
    # invalidates Z's copy there
    o = {} if plan == "reader_first" else INVOKE
    sc = [{"name": "ok", "config": "apta_dataflow", "overrides": o},
          {"name": "mut", "config": "apta_dataflow", "overrides": o, "mutant": mutant}]
    r = run(sim, pl, sc, tmp_path)
    assert clean(r["ok/apta_dataflow"]), r["ok/apta_dataflow"]
    assert r["mut/apta_dataflow"][counter] > 0, f"mutant {mutant} not caught"


def war_plan(tmp_path):
    """A (c1) gets Q (1 MB) then X; D (c2, after A) puts X without reading it: a write after read."""
    a = trace(tmp_path / "A.0", ["& GET", "& COMPUTE", "@ 1000,0,0,0", "& END"],
              [("get", "Q", 0x100000, 1 << 20), ("get", "X", 0x10000, 6400)])
    d = trace(tmp_path / "D.0", ["& COMPUTE", "& PUT", "& END"], [("put", "X", 0x20000, 6400)])
    return {"app": "t", "objects": ["Q", "X"],
            "instances": [inst("A", 0, a, reads=["Q", "X"]), inst("D", 1, d, deps=[0], writes=["X"])]}


def test_dataflow_puts_wait_for_predecessors(sim, tmp_path):
    r = run(sim, war_plan(tmp_path), [{"name": "x", "config": "apta_dataflow", "overrides": INVOKE}], tmp_path)["x/apta_dataflow"]
    a, d = r["instances"]
    assert clean(r) and d["start_ns"] == pytest.approx(a["start_ns"]) and d["end_ns"] > a["end_ns"]


def test_full_hold_table_answers_retry(sim, tmp_path):
    """B1 (c2) and B2 (c3) both wait for A's X: with one hold entry one of them gets GetRetry."""
    a = trace(tmp_path / "A.0", ["& COMPUTE", "@ 3000000,0,0,0", "& PUT", "& END"], [("put", "X", 0x20000, 6400)])
    b = [trace(tmp_path / f"B{k}.0", ["& GET", "& COMPUTE", "& END"], [("get", "X", 0x10000, 6400)]) for k in (1, 2)]
    pl = {"app": "t", "objects": ["X"], "instances": [inst("A", 0, a, writes=["X"]), inst("B1", 1, b[0], deps=[0], reads=["X"]),
                                                      inst("B2", 2, b[1], deps=[0], reads=["X"])]}
    sc = [{"name": f"h{n}", "config": "apta_dataflow", "overrides": INVOKE | {"memory_server.hold_slots": n}} for n in (1, 2)]
    r = run(sim, pl, sc, tmp_path)
    one, two = r["h1/apta_dataflow"], r["h2/apta_dataflow"]
    assert clean(one) and clean(two)
    assert two["held_gets"] == 2 and two["get_retries"] == 0
    assert one["held_gets"] >= 1 and one["get_retries"] > 0
    bad = run(sim, pl, [{"name": "z", "config": "apta_dataflow", "overrides": {"memory_server.hold_slots": 0}}], tmp_path, check=False)
    assert bad.returncode != 0 and "memory_server.hold_slots" in bad.stderr


def test_producer_crash_with_held_get(sim, tmp_path):
    """A dies while B's get waits for X: the re-executed A commits, B is served that; with two
    servers the waiting B is stopped so that A can run again (else both would wait for ever)."""
    pl = chain_plan(tmp_path)
    base = run(sim, pl, [{"name": "x", "config": "apta_dataflow", "overrides": INVOKE}], tmp_path)["x/apta_dataflow"]
    a = base["instances"][0]
    t = (a["start_ns"] + a["end_ns"]) / 2
    sc = [{"name": "f", "config": "apta_dataflow", "scheduler": "locality", "overrides": INVOKE,
           "failures": [{"server": 0, "at_ns": t}]}]
    r = run(sim, pl, sc, tmp_path)["f/apta_dataflow"]
    assert clean(r) and r["instances"][0]["restarts"] == 1 and r["instances"][0]["server"] != "c1"
    assert r["makespan_ns"] > base["makespan_ns"]
    two = [dict(sc[0], name="two", overrides=INVOKE | {"compute.servers": 2})]
    pl2 = dict(pl, instances=pl["instances"][:2])
    r2 = run(sim, pl2, two, tmp_path)["two/apta_dataflow"]
    assert clean(r2) and r2["preemptions"] >= 1 and r2["instances"][0]["server"] == "c2"


def test_dataflow_needs_apta_caching(sim, tmp_path):
    raw = json.loads((SIMDIR / "params.json").read_text())
    raw["configs"]["apta_dataflow"]["cache"] = "version"
    (tmp_path / "p.json").write_text(json.dumps(raw))
    planlib.write_json_atomic(str(tmp_path / "plan.json"), chain_plan(tmp_path))
    planlib.write_json_atomic(str(tmp_path / "sc.json"), {"scenarios": [{"name": "x", "config": "apta_dataflow"}]})
    r = subprocess.run([str(sim), "--params", str(tmp_path / "p.json"), "--plan", str(tmp_path / "plan.json"),
                        "--scenarios", str(tmp_path / "sc.json"), "--out", str(tmp_path / "o.json")], capture_output=True, text=True)
    assert r.returncode != 0 and "configs.apta_dataflow.invoke" in r.stderr
    bad = run(sim, chain_plan(tmp_path), [{"name": "x", "config": "apta_dataflow", "mutant": "serve_all"}], tmp_path, check=False)
    assert bad.returncode != 0 and "scenarios[0].mutant" in bad.stderr and "serve_all" in bad.stderr


# --- the protocol engine against the model checker's vectors ---------------------------------------------
def vector_files():
    if not VECTORS.exists() or not list(VECTORS.glob("*.jsonl")):
        pytest.fail(f"{VECTORS} has no vectors: run `make vectors` first (make verify and make test do)")
    return sorted(VECTORS.glob("*.jsonl"))


def test_vectors_replay_on_the_simulator_engine(sim):
    total = 0
    for f in vector_files():
        r = subprocess.run([str(sim), "--replay-vectors", str(f)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        st = json.loads(r.stdout)
        assert st["failed"] == 0
        if st["scenarios"] == 0:  # a configuration that targets memory-server cells only (versioned*)
            ms = VECTORS / "ms" / f.name
            assert ms.exists() and ms.read_text().strip(), f"{f.name}: no core scenarios and no memory-server ones"
        total += st["scenarios"]
    assert total >= 50


@pytest.mark.parametrize("mutant,expect", [("sa_get_to_s", "expected SA, got S"),
                                           ("put_waits_acks", "Stall"), ("ack_old_epoch", "")])
def test_a_wrong_transition_is_rejected(sim, mutant, expect):
    failed, msgs = 0, ""
    for f in vector_files():
        r = subprocess.run([str(sim), "--replay-vectors", str(f), "--mutant", mutant], capture_output=True, text=True)
        failed += json.loads(r.stdout)["failed"]
        msgs += r.stderr
    assert failed > 0, f"mutant {mutant} passed every vector"
    assert expect in msgs


# --- Table IV from the simulated object caches ---------------------------------------------------------
@pytest.fixture(scope="session")
def tiny_traces(tmp_path_factory) -> Path:
    """Real tiny traces when the tracer has produced them (make test does, first), else synthetic
    ones; APTA_REAL_TRACES=1 (make test) makes missing real traces an error."""
    real = ROOT / "build" / "traces" / "tiny"
    if all((real / a / "index.json").exists() for a in APPS):
        return real
    if os.environ.get("APTA_REAL_TRACES") == "1":
        pytest.fail(f"{real} lacks the tiny traces of {APPS}: run `make traces TRACE_SIZE=tiny`")
    root = tmp_path_factory.mktemp("traces")
    for a in APPS:
        sim_synth.make_traces(os.path.join(workflow.WORKFLOW_DIR, f"{a}.json"), str(root), "tiny", compute_events=20)
    return root / "tiny"


CACHED = ("rdma_faas", "rdmaf_faas", "rdmaf_apta", "cxl_cached", "apta")


def test_table_iv_equals_the_paper_with_the_files_schedules(sim, tiny_traces, tmp_path):
    for a in APPS:
        wf = workflow.load(os.path.join(workflow.WORKFLOW_DIR, f"{a}.json"))
        plan = planlib.build_plan(wf.path, str(tiny_traces / a), wf=wf)
        r = run(sim, plan, [{"name": "x", "config": c} for c in CACHED], tmp_path)
        for c in CACHED:
            assert r[f"x/{c}"]["table_iv"] == wf.table_iv == workflow.table_iv(wf), (a, c)
            assert r[f"x/{c}"]["table_iv_objects"] == workflow.table_iv(wf, unit="object"), (a, c)


def test_table_iv_both_units_from_the_simulated_caches(sim, tmp_path):
    """The simulator counts Table IV per function phase ("table_iv") and per object
    ("table_iv_objects"). Hand-made workflow (the one of test_workloads.py's
    test_table_iv_both_units_on_a_small_workflow), every object 640 bytes:
      f1 on c1 gets a, b (2 misses; the phase misses), puts x, y (2 no_inv; phase no_inv);
      f2 on c2 gets x, a (2 misses; phase miss), puts z (no_inv);
      f3 on c1 gets z (miss, only c2 has it) and b (hit: c1 got it in f1), so the phase hits
        (one object cached); puts x (c2 holds it: inv) and w (no_inv), so the phase invalidates.
    Per phase: gets 1 hit / 2 miss, puts 2 no_inv / 1 inv.
    Per object: gets 1 hit / 5 miss, puts 4 no_inv / 1 inv."""
    def t(name, reads, writes):
        objs = [("get", o, 0x10000 * (k + 1), 640) for k, o in enumerate(reads)]
        objs += [("put", o, 0x100000 + 0x10000 * k, 640) for k, o in enumerate(writes)]
        return trace(tmp_path / f"{name}.0", ["& GET", "& COMPUTE", "@ 100,0,0,0", "& PUT", "& END"], objs)
    insts = [inst("f1", 0, t("f1", "ab", "xy"), reads=["a", "b"], writes=["x", "y"]),
             inst("f2", 1, t("f2", "xa", "z"), deps=[0], reads=["x", "a"], writes=["z"]),
             inst("f3", 0, t("f3", "zb", "xw"), deps=[1], reads=["z", "b"], writes=["x", "w"])]
    plan = {"app": "units", "objects": ["a", "b", "w", "x", "y", "z"], "instances": insts}
    r = run(sim, plan, [{"name": "x", "config": c} for c in CACHED + ("rdma", "cxl_uncached")], tmp_path)
    for c in CACHED:
        assert r[f"x/{c}"]["table_iv"] == {"gets": {"hit": 1, "miss": 2}, "puts": {"no_inv": 2, "inv": 1}}, c
        assert r[f"x/{c}"]["table_iv_objects"] == {"gets": {"hit": 1, "miss": 5}, "puts": {"no_inv": 4, "inv": 1}}, c
    for c in ("rdma", "cxl_uncached"):   # no caching: every get misses, no put invalidates
        assert r[f"x/{c}"]["table_iv"] == {"gets": {"hit": 0, "miss": 3}, "puts": {"no_inv": 3, "inv": 0}}, c
        assert r[f"x/{c}"]["table_iv_objects"] == {"gets": {"hit": 0, "miss": 6}, "puts": {"no_inv": 5, "inv": 0}}, c


def test_another_schedule_changes_table_iv(sim, tiny_traces, tmp_path):
    wf = workflow.load(os.path.join(workflow.WORKFLOW_DIR, "sentiment.json"))
    other = {"sentimentAnalysis": ["c1"], "publishSNS": ["c3"]}
    plan = planlib.build_plan(wf.path, str(tiny_traces / "sentiment"), schedule=other, wf=wf)
    r = run(sim, plan, [{"name": "x", "config": "apta"}], tmp_path)["x/apta"]
    assert r["table_iv"] == workflow.table_iv(wf, other) != wf.table_iv
    # the locality-aware scheduler places differently again
    plan = planlib.build_plan(wf.path, str(tiny_traces / "sentiment"), wf=wf)
    loc = run(sim, plan, [{"name": "l", "config": "apta", "scheduler": "locality"}], tmp_path)["l/apta"]
    assert loc["completed"] and loc["table_iv"] != wf.table_iv


# --- the binary trace cache (sim/src/trace.hpp, make traces) --------------------------------------------
ALL_CONFIGS = ("rdma", "rdma_faas", "rdmaf_faas", "rdmaf_apta", "cxl_uncached", "cxl_cached", "apta")
TIMING = ("wall_s", "replay_s")


def run_src(sim, plan: dict, scenarios: list, tmp: Path, source: str):
    """apta-sim with --trace-source `source`: (returncode, stderr, results without timings, file)."""
    planlib.write_json_atomic(str(tmp / "plan.json"), plan)
    planlib.write_json_atomic(str(tmp / "sc.json"), {"scenarios": scenarios})
    out = tmp / f"out-{source}.json"
    r = subprocess.run([str(sim), "--params", str(SIMDIR / "params.json"), "--plan", str(tmp / "plan.json"), "--scenarios",
                        str(tmp / "sc.json"), "--out", str(out), "--quiet", "--trace-source", source], capture_output=True, text=True)
    if r.returncode:
        return r.returncode, r.stderr, None, None
    doc = json.loads(out.read_text())
    return 0, r.stderr, [{k: v for k, v in x.items() if k not in TIMING} for x in doc["results"]], doc


def cache_traces(sim, root: Path) -> str:
    r = subprocess.run([str(sim), "--params", str(SIMDIR / "params.json"), "--cache-traces", str(root)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def cached_apps(sim, tiny_traces, tmp_path):
    """A copy of the tiny traces of every workflow with their binary caches written (as make traces does)."""
    import shutil
    root = tmp_path / "traces"
    for a in APPS:
        shutil.copytree(tiny_traces / a, root / a, ignore=shutil.ignore_patterns("replay-cache.bin"))
    out = cache_traces(sim, root)
    assert f"{sum(len(json.loads((root / a / 'index.json').read_text())['instances']) for a in APPS)} written" in out, out
    assert "0 written" in cache_traces(sim, root)  # written once: a second pass finds them current
    return root


def test_binary_cache_replays_exactly_like_the_text(sim, cached_apps, tmp_path):
    """Every workflow, every configuration, a jitter run and a failure run: the results from the
    binary trace cache equal those from the text, number for number."""
    scenarios = [{"name": "x", "config": c} for c in ALL_CONFIGS]
    scenarios += [{"name": "j", "config": "apta", "jitter": True, "seed": 7},
                  {"name": "f", "config": "apta", "failures": [{"server": 1, "at_ns": 2000.0}]}]
    for a in APPS:
        plan = planlib.build_plan(os.path.join(workflow.WORKFLOW_DIR, f"{a}.json"), str(cached_apps / a))
        rc, err, text, tdoc = run_src(sim, plan, scenarios, tmp_path, "text")
        assert rc == 0, err
        rc, err, cache, cdoc = run_src(sim, plan, scenarios, tmp_path, "cache")
        assert rc == 0, err
        assert tdoc["traces_from_cache"] == 0 and cdoc["traces_from_cache"] == len(plan["instances"]) > 0, a
        assert text == cache, a
        assert cdoc["trace_events"] == tdoc["trace_events"] > 0, a


def _first_trace(root: Path) -> Path:
    return sorted(root.glob("*/*/meta.json"))[0].parent


def _corrupt(path: Path, how: str) -> None:
    b = bytearray(path.read_bytes())
    if how == "truncated":
        b = b[: len(b) // 2]
    elif how == "header_only":
        b = b[:40]
    elif how == "flipped_byte":          # inside the events and ranges, past the header
        b[100 + (len(b) - 108) // 2] ^= 0x10
    elif how == "bad_magic":
        b[0:8] = b"NOTACACH"
    elif how == "old_version":
        b[8] += 1
    elif how == "empty":
        b = b""
    path.write_bytes(bytes(b))


@pytest.mark.parametrize("how,why", [("truncated", "truncated"), ("header_only", "truncated"), ("empty", "truncated"),
                                     ("flipped_byte", "corrupt (checksum mismatch)"), ("bad_magic", "not a trace cache"),
                                     ("old_version", "format version")])
def test_a_damaged_cache_is_named_and_never_used(sim, cached_apps, tmp_path, how, why):
    """A truncated or corrupt cache file: with --trace-source cache an error naming the file and
    the problem; by default (auto) the same message on stderr and the text is parsed instead,
    giving the text's results."""
    a = "phi"
    plan = planlib.build_plan(os.path.join(workflow.WORKFLOW_DIR, f"{a}.json"), str(cached_apps / a))
    sc = [{"name": "x", "config": "apta"}, {"name": "y", "config": "cxl_cached"}]
    _, _, want, _ = run_src(sim, plan, sc, tmp_path, "text")
    d = Path(plan["instances"][0]["trace"])
    cache = d / "replay-cache.bin"
    _corrupt(cache, how)
    rc, err, _, _ = run_src(sim, plan, sc, tmp_path, "cache")
    assert rc == 1 and f"{cache}: binary trace cache {why}" in err, err
    rc, err, got, doc = run_src(sim, plan, sc, tmp_path, "auto")
    assert rc == 0 and f"{cache}: binary trace cache {why}" in err and "parsing the text trace instead" in err, err
    assert got == want and doc["traces_from_cache"] == len(plan["instances"]) - 1
    assert "1 written" in cache_traces(sim, d)   # make traces rewrites it
    rc, err, got, doc = run_src(sim, plan, sc, tmp_path, "cache")
    assert rc == 0 and got == want and err == ""


def test_a_missing_cache_is_an_error_only_when_asked_for(sim, cached_apps, tmp_path):
    """No cache file (a trace made outside make traces): the default parses the text silently;
    --trace-source cache names the file."""
    plan = planlib.build_plan(os.path.join(workflow.WORKFLOW_DIR, "phi.json"), str(cached_apps / "phi"))
    cache = Path(plan["instances"][0]["trace"]) / "replay-cache.bin"
    cache.unlink()
    sc = [{"name": "x", "config": "apta"}]
    rc, err, _, _ = run_src(sim, plan, sc, tmp_path, "cache")
    assert rc == 1 and f"{cache}: binary trace cache missing (run `make traces`)" in err, err
    rc, err, got, doc = run_src(sim, plan, sc, tmp_path, "auto")
    assert rc == 0 and err == "" and doc["traces_from_cache"] == len(plan["instances"]) - 1
    assert got == run_src(sim, plan, sc, tmp_path, "text")[2]


@pytest.mark.parametrize("changed", ["events", "meta"])
def test_a_changed_trace_makes_its_cache_stale(sim, cached_apps, tmp_path, changed):
    """A trace rewritten after its cache (events file or meta.json): the cache is never used for it
    (stale, named on stderr; an error with --trace-source cache); the results are the new trace's."""
    a = "phi"
    plan = planlib.build_plan(os.path.join(workflow.WORKFLOW_DIR, f"{a}.json"), str(cached_apps / a))
    d = Path(plan["instances"][0]["trace"])
    sc = [{"name": "x", "config": "apta"}]
    _, _, before, _ = run_src(sim, plan, sc, tmp_path, "cache")
    if changed == "events":   # one more compute event before & END: more events, more line accesses
        with gzip.open(d / "sigil.events.out-1.gz", "rt") as fh:
            lines = fh.read().splitlines()
        lines.insert(len(lines) - 1, "@ 5,0,1,0 * 0x12340000 0x1234003f")
        with gzip.open(d / "sigil.events.out-1.gz", "wt") as fh:
            fh.write("\n".join(lines) + "\n")
    else:                     # the same bytes but one more (unused) key: still another trace
        meta = json.loads((d / "meta.json").read_text())
        meta["note"] = "rewritten"
        (d / "meta.json").write_text(json.dumps(meta))
    rc, err, _, _ = run_src(sim, plan, sc, tmp_path, "cache")
    assert rc == 1 and f"{d / 'replay-cache.bin'}: binary trace cache stale" in err, err
    rc, err, auto, _ = run_src(sim, plan, sc, tmp_path, "auto")
    assert rc == 0 and "stale" in err and "parsing the text trace instead" in err
    _, _, text, _ = run_src(sim, plan, sc, tmp_path, "text")
    assert auto == text
    if changed == "events":
        assert text != before and text[0]["line_accesses"] == before[0]["line_accesses"] + 1
    assert "1 written" in cache_traces(sim, d)
    rc, err, cache, _ = run_src(sim, plan, sc, tmp_path, "cache")
    assert rc == 0 and cache == text and err == ""


# --- bad input ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line,field", [("@ 1,2,3", "counts"), ("@ 1,0,1,0 * 0x40 zz", "range end"),
                                        ("@ 1,0,1,0 * 0x80 0x40", "range end"), ("% 3", "event"),
                                        ("& LUNCH", "phase"), ("@ 1,0,1,0 0x40 0x7f", "ranges")])
def test_malformed_trace_line_names_file_line_field(sim, tmp_path, line, field):
    d = trace(tmp_path / "f.0", ["& COMPUTE", "@ 1,0,0,0", line, "& END"])
    plan = {"app": "t", "objects": [], "instances": [inst("f", 0, d)]}
    r = run(sim, plan, [{"name": "x", "config": "apta"}], tmp_path, check=False)
    assert r.returncode == 1
    assert f"sigil.events.out-1.gz:3: {field}:" in r.stderr, r.stderr
    assert not (tmp_path / "out.json").exists() and not list(tmp_path.glob("out.json.tmp*"))  # nothing half-written


def test_missing_trace_is_a_clear_error(sim, tmp_path):
    wf_path = os.path.join(workflow.WORKFLOW_DIR, "phi.json")
    with pytest.raises(planlib.TraceMissing, match=r"identifyPHI\.0: missing trace"):
        planlib.build_plan(wf_path, str(tmp_path / "nothing"))
    plan = {"app": "t", "objects": [], "instances": [inst("f", 0, str(tmp_path / "gone"))]}
    r = run(sim, plan, [{"name": "x", "config": "apta"}], tmp_path, check=False)
    assert r.returncode == 1 and "gone: missing trace (no meta.json" in r.stderr
    r = subprocess.run([sys.executable, str(SIMDIR / "eval.py"), "--traces", str(tmp_path / "nothing"), "--apps", "phi",
                        "--out", str(tmp_path / "ev"), "--sim", str(sim)], capture_output=True, text=True)
    assert r.returncode != 0 and "missing trace" in r.stderr and not (tmp_path / "ev" / "results.json").exists()


def test_workflow_with_cycle_or_unknown_object_is_rejected(tmp_path):
    doc = json.loads((ROOT / "workloads" / "workflows" / "phi.json").read_text())
    doc["functions"][0]["after"] = ["analytics"]
    (tmp_path / "phi.json").write_text(json.dumps(doc))
    with pytest.raises(workflow.WorkflowError, match="cycle"):
        planlib.build_plan(str(tmp_path / "phi.json"), str(tmp_path))
    doc = json.loads((ROOT / "workloads" / "workflows" / "phi.json").read_text())
    doc["functions"][1]["reads"] = ["no_such_object"]
    (tmp_path / "phi.json").write_text(json.dumps(doc))
    with pytest.raises(workflow.WorkflowError, match="unknown object"):
        planlib.build_plan(str(tmp_path / "phi.json"), str(tmp_path))


def test_plan_with_unknown_object_or_config_is_rejected(sim, tmp_path):
    d = trace(tmp_path / "f.0", ["& COMPUTE", "& END"])
    plan = {"app": "t", "objects": [], "instances": [inst("f", 0, d, reads=["ghost"])]}
    r = run(sim, plan, [{"name": "x", "config": "apta"}], tmp_path, check=False)
    assert r.returncode == 1 and "unknown object 'ghost'" in r.stderr
    plan = {"app": "t", "objects": [], "instances": [inst("f", 0, d)]}
    r = run(sim, plan, [{"name": "x", "config": "cxl_magic"}], tmp_path, check=False)
    assert r.returncode == 1 and "unknown configuration 'cxl_magic'" in r.stderr


# --- the physical limit (the report's bound table) ------------------------------------------------------
# A hand-made ms.json in the shape tests/rtl/test_ms_bench.py writes: get = ObjGet accepted -> last
# ObjData, put = first PutLine accepted -> PutCommit (cycles), for 1, 2 and 4 lines.
FAKE_MS = {"variant": "fake", "linesPerObject": 4, "rows": [
    {"lines": 1, "get_last_data": 11, "put_first_line_to_commit": 5},
    {"lines": 2, "get_last_data": 12, "put_first_line_to_commit": 6},
    {"lines": 4, "get_last_data": 14, "put_first_line_to_commit": 8}]}


def test_bound_arithmetic(tmp_path):
    from apta import bounds
    # 2 MiB on the DM link: 2 x 500 ns + 2,097,152 B x 8 / 80 Gbps = 1000 + 209,715.2 = 210,715.2 ns
    assert bounds.limit_ns(2 << 20, 500, 80) == pytest.approx(210715.2, rel=1e-12)
    # 64 B on the RDMA link: 2 x 1500 ns + 512 bit / 8 Gbps = 3000 + 64 = 3064 ns
    assert bounds.limit_ns(64, 1500, 8) == pytest.approx(3064.0, rel=1e-12)
    # a 64-byte get of 1075.2 ns against 1006.4 ns (2 x 500 + 6.4): 1.068362...
    assert bounds.ratio(1075.2, bounds.limit_ns(64, 500, 80)) == pytest.approx(1075.2 / 1006.4, rel=1e-12)
    assert bounds.ratio(None, 1.0) is None
    with pytest.raises(ValueError):
        bounds.limit_ns(64, 500, 0)
    # each configuration's link from sim/params.json
    for c in PARAMS["configs"]:
        if c == "about":
            continue
        link = PARAMS["configs"][c]["link"]
        assert bounds.link_of(PARAMS, c) == (p("links", f"{link}_latency_ns"), p("links", f"{link}_bandwidth_gbps"))
    assert bounds.link_of(PARAMS, "rdma")[1] < bounds.link_of(PARAMS, "apta")[1]
    # the RTL's cycles: 64 B = 1 line, measured (11 / 5); 129 B = 3 lines, between the rows of 2 and
    # 4 lines: (12 + 14) / 2 = 13, (6 + 8) / 2 = 7; 512 B = 8 lines, beyond 4: on the line through
    # (2, 12) and (4, 14), slope 1 cycle/line: 14 + 4 = 18 and 8 + 4 = 12
    assert bounds.rtl_cycles(FAKE_MS, 64, 64) == {"lines": 1, "get": 11, "put": 5, "how": "measured"}
    assert bounds.rtl_cycles(FAKE_MS, 129, 64) == {"lines": 3, "get": 13, "put": 7, "how": "interpolated"}
    assert bounds.rtl_cycles(FAKE_MS, 512, 64) == {"lines": 8, "get": 18, "put": 12, "how": "extrapolated"}
    # an older ms.json without put_first_line_to_commit: the PutLines' span (4 lines at 0.5 per
    # cycle: 8 cycles, the first to the last accepted 7 apart) + last PutLine -> PutCommit (5) = 12
    old = {"rows": [{"lines": 4, "get_last_data": 14, "put_lines_per_cycle": 0.5, "put_last_line_to_commit": 5}]}
    assert bounds.rtl_cycles(old, 256, 64)["put"] == pytest.approx(12)
    # 11 cycles at 3 GHz = 3.667 ns, against the 64-byte DM limit of 1006.4 ns: 0.0036435
    assert bounds.rtl_ns(11, 3.0) == pytest.approx(11 / 3)
    assert bounds.ratio(bounds.rtl_ns(11, 3.0), 1006.4) == pytest.approx(0.0036435, rel=1e-4)
    # a missing or malformed ms.json is reported, not raised
    ms, why = bounds.load_ms_bench(str(tmp_path / "nothing.json"))
    assert ms is None and "missing" in why and "make bench" in why
    (tmp_path / "bad.json").write_text(json.dumps({"rows": [{"lines": 1}]}))
    assert bounds.load_ms_bench(str(tmp_path / "bad.json"))[0] is None
    (tmp_path / "ms.json").write_text(json.dumps(FAKE_MS))
    assert bounds.load_ms_bench(str(tmp_path / "ms.json")) == (FAKE_MS, "")


def test_bound_runs_are_link_arithmetic(sim, tmp_path):
    """eval.py's bound runs: a lone get of an uncached object, read once, and a lone put take
    exactly the simulator's link arithmetic (test_object_get_latency_is_link_arithmetic) and the
    L2's, and the RTL column says so when ms.json is missing."""
    import importlib
    ev = importlib.import_module("apta.sim.eval")
    args = type("Args", (), {"out": str(tmp_path), "sim": str(sim), "params": str(SIMDIR / "params.json")})()
    n = 100
    sizes = {n * 64: {"objects": ["t:x"], "reference": None}}
    times = ev.bound_runs(args, sizes, PARAMS)
    lat, bw, flit = p("links", "dm_latency_ns"), p("links", "dm_bandwidth_gbps"), p("links", "flit_bytes")
    ms = (p("memory_server", "otc_lookup_cycles") + p("memory_server", "osc_translate_cycles")) / p("memory_server", "clock_ghz")
    dram = p("dram", "controller_ns") + p("dram", "latency_ns")
    get = flit * 8 / bw + lat + ms + dram + n * flit * 8 / bw + lat
    # then the get's phase reads the object once, from the L2 it was installed in: the first line
    # after the L2 latency, the others one per line_bytes / l2_bytes_per_cycle
    get += (p("compute", "l2_latency_cycles") + (n - 1) * p("compute", "line_bytes") / p("compute", "l2_bytes_per_cycle")) \
        / p("compute", "clock_ghz")
    assert times[n * 64]["apta"]["get_ns"] == pytest.approx(get, rel=1e-9)
    # CXL cached's get moves nothing itself: those reads fetch the lines, so it is bound by the link too
    assert times[n * 64]["cxl_cached"]["get_ns"] > 2 * lat + n * 64 * 8 / bw
    # put: prepare + n lines up, OTC lookup, commit flit down
    put = (n + 1) * flit * 8 / bw + lat + p("memory_server", "otc_lookup_cycles") / p("memory_server", "clock_ghz") + flit * 8 / bw + lat
    assert times[n * 64]["apta"]["put_ns"] == pytest.approx(put, rel=1e-9)
    B = ev.bound_table(sizes, times, PARAMS, None, "ms.json missing (test)")
    row = B["rows"][0]
    assert row["rtl"] is None and B["rtl_missing"] == "ms.json missing (test)"
    assert row["get"]["apta"]["ratio"] == pytest.approx(get / (2 * lat + n * 64 * 8 / bw))
    text = "\n".join(ev.bound_section({"bounds": B}, PARAMS))
    assert "not measured here" in text and "ms.json missing (test)" in text and "not measured (no ms.json)" in text
    B = ev.bound_table(sizes, times, PARAMS, FAKE_MS, "")
    # 100 lines: beyond the fake's 4, extrapolated: get 14 + 96 = 110 cycles, at memory_server.clock_ghz
    assert B["rows"][0]["rtl"]["get"]["cycles"] == pytest.approx(110)
    assert B["rows"][0]["rtl"]["get"]["ns"] == pytest.approx(110 / p("memory_server", "clock_ghz"))
    assert "‡" in "\n".join(ev.bound_section({"bounds": B}, PARAMS))


def test_sensitivity_arithmetic():
    """moves(): how far a result moves over one open choice; rests_on(): how the report states it
    (reductions shown negative); r_values() recomputes a row from substituted runs; crossing()
    brackets the paper's value. All hand-computed."""
    import importlib
    ev = importlib.import_module("apta.sim.eval")
    m = ev.moves({"literal": 1.10, "dm": 0.04, "cx4-edr": 0.12})
    assert (m["lo"], m["hi"]) == ("dm", "literal")
    assert m["min"] == pytest.approx(0.04) and m["max"] == pytest.approx(1.10) and m["span_pp"] == pytest.approx(106)
    with pytest.raises(ValueError):
        ev.moves({})
    A = {"sensitivity": {"depends_pp": 0.5, "moves": {"R5": {"rdma_link": ev.moves({"literal": 0.93, "dm": 0.44})}}}}
    assert ev.rests_on(A, "R5") == "RDMA link: -93% (literal) to -44% (dm), 49 pp"
    assert ev.rests_on(A, "R2").startswith("none of the swept choices")
    # r_values on two apps: R1 = geomean(rdma_faas / apta) - 1 = sqrt(2 * 3) - 1
    runs = {"base": {"rdma": 400.0, "rdma_faas": 200.0, "rdmaf_faas": 200.0, "rdmaf_apta": 200.0, "cxl_uncached": 200.0,
                     "cxl_cached": 200.0, "apta": 100.0}}
    names = ["a", "b"]

    def get(a, n, c):
        ms = runs["base"][c] * (1.5 if a == "b" and c == "rdma_faas" else 1)
        return {"makespan_ns": ms, "get_ns": ms, "put_ns": ms}
    rv = ev.r_values(names, lambda a, n, c: get(a, "base", c), PARAMS, 0.0)
    assert rv["R1"] == pytest.approx((2 * 3) ** 0.5 - 1)
    assert rv["R5"] == pytest.approx(0.75) and rv["R8"] == pytest.approx(3.0)  # 1 - 100/400; 400/100 - 1
    assert ev.crossing([(0.02, 1.4), (0.05, 1.1), (0.1, 0.73), (0.2, 0.5)], 0.78) == ((0.05, 1.1), (0.1, 0.73))
    assert ev.crossing([(0.02, 1.4), (0.05, 1.1)], 0.78) is None
    # the headline's R4 reads only its own jitter runs, not the other modes' (same prefix)
    assert ev.jitter_names({"jitter1": 0, "jitter-operation1": 0, "jitter12": 0, "jitterx": 0}, "jitter") == ["jitter1", "jitter12"]


def test_jitter_errorbars_arithmetic():
    """The figures' error bars: per app the std. dev. over the jitter runs of run k's speedup over
    RDMA (RDMA's run k / the configuration's run k), and of the geomean over the apps per run."""
    import importlib
    ev = importlib.import_module("apta.sim.eval")

    def r(ms):
        return {"makespan_ns": ms, "get_ns": ms, "put_ns": ms, "completed": True}
    # app a: speedups 2 and 4 (std 1); app b: 1 and 1 (std 0); geomeans sqrt(2) and 2
    apps = {"a": {"by": {"jitter1": {c: r(100.0) for c in ev.CONFIGS} | {"apta": r(50.0)},
                         "jitter2": {c: r(100.0) for c in ev.CONFIGS} | {"apta": r(25.0)}}},
            "b": {"by": {"jitter1": {c: r(10.0) for c in ev.CONFIGS}, "jitter2": {c: r(10.0) for c in ev.CONFIGS},
                         "jitter-operation1": {"apta": r(1.0)}}}}
    E = ev.jitter_errorbars(apps, ["a", "b"])
    assert E["runs"] == 2
    assert E["speedup"]["a"]["apta"] == pytest.approx(1.0) and E["speedup"]["b"]["apta"] == 0
    assert E["speedup_geomean"]["apta"] == pytest.approx((2 - 2 ** 0.5) / 2)
    assert E["get_norm"]["a"]["apta"] == pytest.approx(0.125)  # 0.5 and 0.25
    assert E["speedup"]["a"]["cxl_uncached"] == 0
    # without the baseline's jitter runs there are no error bars
    del apps["a"]["by"]["jitter1"]["rdma"]
    assert ev.jitter_errorbars(apps, ["a", "b"])["runs"] == 0


def test_one_colour_per_configuration():
    import importlib
    ev = importlib.import_module("apta.sim.eval")
    assert set(ev.COLORS) == set(ev.CONFIGS)
    assert len(set(ev.COLORS.values())) == len(ev.CONFIGS)


# --- end to end --------------------------------------------------------------------------------------------
def test_small_end_to_end_eval(sim, tiny_traces, tmp_path):
    import importlib
    ev_colors = importlib.import_module("apta.sim.eval").COLORS
    out = tmp_path / "eval"
    (tmp_path / "ms.json").write_text(json.dumps(FAKE_MS))
    r = subprocess.run([sys.executable, str(SIMDIR / "eval.py"), "--traces", str(tiny_traces), "--apps", "phi,sentiment,video",
                        "--jitter-runs", "3", "--out", str(out), "--sim", str(sim), "--ms-bench", str(tmp_path / "ms.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout
    res = json.loads((out / "results.json").read_text())
    assert all(res["table_iv"][a]["equal"] for a in ("phi", "sentiment", "video"))
    # Table IV in both units: per phase equals the paper's for all three, per object only for phi
    # and sentiment (video's phases get and put several objects)
    assert res["table_iv_unit"]["paper_unit"] == "phase"
    assert res["table_iv_unit"]["object_equal"] == ["phi", "sentiment"]
    assert res["table_iv"]["video"]["per_object"]["sim"]["apta"] == {"gets": {"hit": 5, "miss": 5}, "puts": {"no_inv": 6, "inv": 1}}
    # the bound table: every object size of the three workflows and the reference sizes
    rows = {b["bytes"]: b for b in res["bounds"]["rows"]}
    assert {64, 4096, 2 << 20} <= set(rows)
    assert all(b["get"]["apta"]["ratio"] > 1 and b["put"]["apta"]["ratio"] > 1 and b["rtl"] for b in rows.values())
    assert {c["id"] for c in res["comparison"]} >= {"R1", "R2", "R3", "R4", "R5", "R6", "R7.bw", "R7.lat", "R8"}
    fail = {f["config"]: f for f in res["failure"]["sentiment"]}
    assert fail["apta"]["completed"] and not fail["cxl_cached"]["completed"]
    report = (out / "REPORT.md").read_text()
    assert "Our numbers beside the paper's" in report and "Table IV" in report
    assert "per phase: simulated (Apta)" in report and "per object: simulated (Apta)" in report
    assert "We conclude that the paper counts Table IV per function phase" in report
    assert "| video | 5 (2,3) / 6 (5,1) | 5 (2,3) / 6 (5,1) | 5 (2,3) / 6 (5,1) | 10 (5,5) / 7 (6,1) |" in report
    assert "## Physical limit" in report and "### Get: time in us and time / limit" in report and "### Put:" in report
    assert f"RTL at {p('memory_server', 'clock_ghz'):g} GHz" in report and "variant fake" in report
    assert "sentiment" in r.stdout and "apta" in r.stdout  # progress lines per workflow/config
    # dataflow: every invocation path of the sweep for both, faster with an invocation path
    D = res["dataflow"]
    inv = p("sweeps", "invoke_us")
    assert [float(x) for x in D["sweep"]] == [float(x) for x in inv]
    head = D["sweep"][str(p("sweeps", "dataflow_invoke_us"))]
    assert set(head["per_app"]) == {"phi", "sentiment", "video"} and head["geomean"] > 1.1
    assert head["per_app"]["sentiment"]["speedup"] == pytest.approx(1.0, abs=0.01)  # its readers read a two-writer object
    assert D["early_functions"]["sentiment"] == [] and "splitVideo" in D["early_functions"]["video"]  # every sentiment reader reads reviews (two writers)
    assert D["failure"] and all(f["apta_dataflow"]["completed"] and f["apta_dataflow"]["restarts"] >= 1 for f in D["failure"].values())
    assert "Beyond the paper: dataflow invocation" in report and (out / "dataflow.png").exists()
    assert "invocation" in r.stderr + r.stdout
    # sensitivity: each open choice moves the rows that rest on it and no other
    S = res["sensitivity"]
    ours = {c["id"]: c["ours"] for c in res["comparison"]}
    lit = next(c for c in S["families"]["rdma_link"] if c["headline"])
    assert lit["rows"] == ours and len(S["families"]["rdma_link"]) == 5
    assert {f for mv in S["moves"].values() for f in mv} == {"rdma_link", "weak_cpi", "jitter"}
    assert set(S["moves"]["R4"]) == {"jitter"} and "R2" not in S["moves"] and "R1.hw" not in S["moves"]
    assert "rdma_link" in S["moves"]["R1"] and set(S["moves"]["R8"]) == {"rdma_link", "weak_cpi"}
    assert [m["id"] for m in S["families"]["jitter"]] == ["message", "operation", "correlated"]
    assert next(m for m in S["families"]["jitter"] if m["headline"])["rows"]["R4"] == ours["R4"]
    # the figures drew every configuration in its one colour, Fig. 8 all of them
    fc = res["figure_colors"]
    assert set(fc["fig8"]) == set(res["speedup"]["phi"]) and set(fc) >= {"fig8", "fig9", "r4"}
    assert all(col == ev_colors[c] for f in fc.values() for c, col in f.items())
    assert res["errorbars"]["runs"] == 3
    for f in ("fig8.png", "fig9.png", "fig10.png", "r4.png", "rrows.png", "sensitivity.png"):
        assert (out / f).stat().st_size > 10000
    assert "## Sensitivity: the choices the paper leaves open" in report and "### Jitter mode (R4)" in report
    assert "| rests on (how far ours moves" in report and "D. Potter, master's thesis" in report
