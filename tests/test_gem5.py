"""The gem5 extension (sim/gem5/). Without gem5 (make test): the config's values from
sim/params.json, the gem5 checkout check, the statistics parser and the cross-check's comparison
on recorded inputs, and the Makefile's refusal without gem5. With a gem5 binary built by
`make gem5` (make test-gem5 sets APTA_GEM5): the model's vectors through the engine inside gem5
(and a mutant rejected there), one tiny workflow per configuration, a failure run and the
cross-check against apta-sim within tolerance."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from apta.gem5 import model as g5
from apta import schema, sim_synth, workflow
from apta.paths import ROOT

def pv(sec, key):
    return schema.load_sim_params(ROOT / "sim" / "params.json")[sec][key]["value"]


# --- without gem5 -----------------------------------------------------------------------------------------
def test_system_spec_is_table_ii_from_params_json():
    s = g5.system_spec()
    assert s["servers"] == pv("compute", "servers")
    assert s["cpu_clock"] == f"{pv('compute', 'clock_ghz')}GHz"
    assert s["l1"] == {"size": f"{pv('compute', 'l1_kb')}KiB", "assoc": pv("compute", "l1_ways"),
                       "latency": pv("compute", "l1_latency_cycles"), "mshrs": pv("compute", "mshrs")}
    assert s["l2"]["size"] == f"{pv('compute', 'l2_kb')}KiB" and s["l2"]["latency"] == pv("compute", "l2_latency_cycles")
    assert s["llc_bytes"] == pv("compute", "l2_kb") * 1024
    assert s["l2_bus_bytes"] == pv("compute", "l2_bytes_per_cycle")  # the L1-L2 path apta-sim bounds too
    # one memory range per compute server and one for the memory server, disjoint
    rs = s["local_ranges"] + [s["ms_range"]]
    assert len(rs) == s["servers"] + 1 and all(a[1] <= b[0] for a, b in zip(rs, rs[1:]))


def test_scenario_overrides_reach_the_gem5_config_and_unknown_ones_are_errors():
    s = g5.system_spec(overrides={"compute.cpi_int_fp": 0.5, "compute.l1_kb": 64})
    assert s["cpi"] == 0.5 and s["l1"]["size"] == "64KiB"
    with pytest.raises(g5.Gem5Error, match="unknown parameter 'compute.l3_kb'"):
        g5.system_spec(overrides={"compute.l3_kb": 1})
    with pytest.raises(g5.Gem5Error, match="must be section.parameter"):
        g5.system_spec(overrides={"cpi": 1})


def test_cxl_link_is_the_dm_link_of_params_json_with_credits_for_a_round_trip():
    c = g5.system_spec(scenario={"name": "b", "config": "cxl_uncached"})["cxl"]
    flit_ns = pv("links", "flit_bytes") * 8 / pv("links", "dm_bandwidth_gbps")
    assert c["flit_bytes"] == pv("links", "flit_bytes") and c["latency_ns"] == pv("links", "dm_latency_ns")
    assert c["flit_ns"] == pytest.approx(flit_ns)
    # enough credits that one channel keeps its wire busy for a round trip, and no more
    assert (c["credits"] - 1) * flit_ns < 2 * c["latency_ns"] + flit_ns <= c["credits"] * flit_ns
    assert c["jitter_cv"] == 0 and c["device_ns"] == 0       # no jitter asked; no directory in CXL uncached
    cached = g5.system_spec(scenario={"name": "b", "config": "cxl_cached", "jitter": True, "seed": 7})["cxl"]
    lookup = pv("memory_server", "otc_lookup_cycles") / pv("memory_server", "clock_ghz")
    assert cached["device_ns"] == pytest.approx(lookup) and cached["jitter_cv"] == pv("links", "jitter_cv")
    assert cached["seed"] == 7
    # a longer link needs more credits; a scenario's override reaches them
    far = g5.system_spec(overrides={"links.dm_latency_ns": 1000}, scenario={"name": "b", "config": "apta"})["cxl"]
    assert far["credits"] > c["credits"] and far["device_ns"] == 0
    with pytest.raises(g5.Gem5Error, match="unknown configuration 'cxl'"):
        g5.system_spec(scenario={"name": "b", "config": "cxl"})
    with pytest.raises(g5.Gem5Error, match="cxl_credit_round_trips"):
        g5.system_spec(overrides={"links.cxl_credit_round_trips": 0})


def test_horizon_ticks():
    assert g5.horizon_ticks({"horizon_ns": 2.5}) == 2500
    assert g5.horizon_ticks({}) == 10 ** 15
    with pytest.raises(g5.Gem5Error, match="horizon_ns"):
        g5.horizon_ticks({"name": "x", "horizon_ns": -1})


def test_check_source_names_what_to_provide(tmp_path):
    with pytest.raises(g5.Gem5Error, match="not a gem5 source checkout"):
        g5.check_source(tmp_path)
    (tmp_path / "SConstruct").write_text("")
    (tmp_path / "src" / "base").mkdir(parents=True)
    (tmp_path / "src" / "base" / "version.cc").write_text('const char *gem5Version = "23.1.0.0";\n')
    with pytest.raises(g5.Gem5Error, match="gem5 23.1.0.0, the extension is built against 24.0.0.1"):
        g5.check_source(tmp_path)
    (tmp_path / "src" / "base" / "version.cc").write_text('const char *gem5Version = "24.0.0.1";\n')
    assert g5.check_source(tmp_path) == "24.0.0.1"


def test_make_gem5_without_a_checkout_stops_at_once_and_says_what_to_provide():
    env = dict(os.environ)
    env.pop("GEM5_SRC", None)
    r = subprocess.run(["make", "-s", "gem5"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "GEM5_SRC=<dir>" in r.stdout + r.stderr
    r = subprocess.run(["make", "-s", "eval-gem5", "GEM5=/nonexistent/gem5.opt"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "make gem5 GEM5_SRC=" in r.stdout + r.stderr


STATS = """
---------- Begin Simulation Statistics ----------
simSeconds                                   0.000123                       # Number of seconds simulated (Second)
system.c1.l1.demandHits::total                   1000                       # number of demand (read+write) hits (Count)
system.c2.l1.demandHits::total                    500                       # number of demand (read+write) hits (Count)
system.c1.l1.demandMisses::total                   40                       # misses
system.c1.l2.demandMisses::total                   10                       # misses
system.c1.l2.demandHits::total                     30                       # hits
system.ms_mem.dram.readBursts                     200                       # bursts
system.ms_mem.dram.readRowHits                    150                       # row hits
system.ms_mem.dram.writeBursts                      0                       # bursts
system.ms_mem.dram.writeRowHits                     0                       # row hits
system.c1.l1.demandAvgMissLatency::total          nan                       # nan is a value
system.c1.l1.demandMissLatency::total            4000                       # ticks
system.c2.l1.demandMissLatency::total             nan                       # a server with no misses
system.c1.mem.dram.totMemAccLat                100000                       # ticks
system.c1.mem.dram.readBursts                      20                       # bursts
system.c2.mem.dram.totMemAccLat                 60000                       # ticks
system.c2.mem.dram.readBursts                      20                       # bursts
system.c1.cxl.flits::m2s_req                      30                       # flits
system.c1.cxl.flits::s2m_drs                      40                       # flits
system.c1.cxl.flits::total                        70                       # flits
system.c2.cxl.flits::m2s_req                       2                       # flits
system.c2.cxl.flits::s2m_bisnp                     4                       # flits
system.c1.cxl.creditStalls::m2s_req                3                       # stalls
system.c2.cxl.creditStalls::s2m_drs                5                       # stalls (gem5 prints no ::total for it)
system.c1.cxl.refusedRequests                      1                       # refused
system.c1.cxl.latency::samples                    10                       # messages
system.c1.cxl.latency::mean                      600                       # ns
system.c1.cxl.latency::0-99                        0      0.00%      0.00% # a bucket
system.c2.cxl.latency::samples                    30                       # messages
system.c2.cxl.latency::mean                     1000                       # ns
system.c1.cxl.snoopRoundTrip::samples              0                       # none
system.c1.cxl.snoopRoundTrip::mean               nan                       # none
system.c2.cxl.snoopRoundTrip::samples              4                       # BISnp
system.c2.cxl.snoopRoundTrip::mean              1100                       # ns
---------- End Simulation Statistics   ----------

---------- Begin Simulation Statistics ----------
system.c1.l1.demandHits::total                 999999                       # a second dump is not read
---------- End Simulation Statistics   ----------
"""


def test_stats_are_parsed_and_summed_over_servers():
    s = g5.parse_stats(STATS)
    assert s["simSeconds"] == 0.000123
    c = g5.cache_and_dram_stats(s)
    assert c == {"l1_hits": 1500, "l1_misses": 40, "l2_hits": 30, "l2_misses": 10, "ms_read_row_hits": 150,
                 "ms_reads": 200, "ms_write_row_hits": 0, "ms_writes": 0,
                 "l1_miss_ns": 0.1, "local_dram_ns": 4.0, "ms_dram_ns": None,
                 "cxl_flits": {"m2s_req": 32, "m2s_rwd": 0, "m2s_birsp": 0, "s2m_ndr": 0, "s2m_drs": 40,
                               "s2m_bisnp": 4},
                 "cxl_credit_stalls": 8, "cxl_refused": 1,
                 "cxl_message_ns": 900.0,             # weighted by samples: (10 x 600 + 30 x 1000) / 40
                 "bisnp_round_trip_ns": 1100.0}


def test_malformed_stats_name_the_line():
    with pytest.raises(g5.Gem5Error, match=r"stats.txt:3: not a statistic line"):
        g5.parse_stats("---------- Begin Simulation Statistics ----------\nsimSeconds 1 # x\ngarbage here\n")
    with pytest.raises(g5.Gem5Error, match="no statistics dump"):
        g5.parse_stats("")


def res(app, config, ms, name="base", tiv=None):
    return {"app": app, "name": name, "config": config, "completed": ms is not None, "makespan_ns": ms,
            "table_iv": tiv or {"gets": {"hit": 1, "miss": 2}, "puts": {"inv": 0, "no_inv": 3}}}


def test_crosscheck_ratios_tolerance_table_iv_and_ranking():
    a = [res("phi", "rdma", 100.0), res("phi", "apta", 50.0), res("phi", "cxl_cached", 80.0),
         res("phi", "cxl_cached", None, name="fail"), res("phi", "apta", 60.0, name="fail")]
    g = [res("phi", "rdma", 105.0), res("phi", "apta", 56.0), res("phi", "cxl_cached", 79.0),
         res("phi", "cxl_cached", None, name="fail"),
         res("phi", "apta", 61.0, name="fail", tiv={"gets": {"hit": 0, "miss": 3}, "puts": {"inv": 0, "no_inv": 3}})]
    cc = g5.crosscheck(a, g)
    cell = {(c.run, c.config): c for c in cc.cells}
    assert cell[("base", "rdma")].within and abs(cell[("base", "rdma")].ratio - 1.05) < 1e-12
    assert not cell[("base", "apta")].within            # 12% off
    assert cell[("fail", "cxl_cached")].within          # both stalled: they agree
    assert not cell[("fail", "apta")].table_iv_equal and cell[("base", "apta")].table_iv_equal
    assert cc.ranking_equal == {"phi": True} and cc.swaps == {"phi": []}  # apta < cxl_cached < rdma in both
    g[2]["makespan_ns"] = 40.0                           # gem5: cxl_cached now beats apta
    swapped = g5.crosscheck(a, g)
    assert swapped.ranking_equal == {"phi": False}
    assert swapped.swaps == {"phi": [("apta", "cxl_cached", 0.6)]}   # apta-sim: cxl_cached 60% slower
    # a run one simulator stalled and the other finished is outside, not a division by zero
    g[0]["completed"], g[0]["makespan_ns"] = False, None
    c = {(c.run, c.config): c for c in g5.crosscheck(a, g).cells}[("base", "rdma")]
    assert c.ratio is None and not c.within


def test_verdict_fails_errors_table_iv_and_unexplained_cells(tmp_path):
    a = [res("phi", "apta", 100.0), res("phi", "cxl_cached", 100.0), res("phi", "rdma", 100.0),
         res("phi", "cxl_cached", None, name="fail")]
    g = [res("phi", "apta", 105.0), res("phi", "cxl_cached", 150.0), res("phi", "rdma", 100.0),
         res("phi", "cxl_cached", 90.0, name="fail")]
    cc = g5.crosscheck(a, g)
    broken = dict(g[2], error="panic: something", stall="gem5 exited 134")
    problems = g5.verdict(cc, g + [broken], "tiny", [])
    assert any("phi base cxl_cached: gem5 / apta-sim 1.500, outside 10% and not explained" in p for p in problems)
    assert any("phi fail cxl_cached: apta-sim stalled, gem5 completed" in p for p in problems)
    assert any("gem5 run failed: gem5 exited 134 panic: something" in p for p in problems)
    assert not any("phi base apta" in p for p in problems)                  # within the tolerance
    why = {"app": "*", "config": "cxl_cached", "run": "base", "size": "tiny", "ratio": [1.4, 1.6], "why": "x"}
    stall = {"app": "phi", "config": "cxl_cached", "run": "fail", "size": "*", "ratio": None, "why": "y"}
    assert g5.verdict(cc, g, "tiny", [why, stall]) == []
    # an explanation covers its band and its size only
    assert len(g5.verdict(cc, g, "paper", [why, stall])) == 1
    assert len(g5.verdict(cc, g, "tiny", [dict(why, ratio=[1.0, 1.4]), stall])) == 1
    # Table IV differing is never explained away
    g[0] = res("phi", "apta", 105.0, tiv={"gets": {"hit": 0, "miss": 3}, "puts": {"inv": 0, "no_inv": 3}})
    assert any("Table IV differs" in p for p in g5.verdict(g5.crosscheck(a, g), g, "tiny", [why, stall]))


def test_explanations_are_checked_and_the_committed_ones_load(tmp_path):
    assert isinstance(g5.load_explained(), list)
    p = tmp_path / "e.json"
    for bad, msg in [({"cells": [{"app": "phi"}]}, r"cells\[0\]: needs exactly the keys"),
                     ({"cells": [{"app": "phi", "config": "apta", "run": "base", "size": "*", "why": "",
                                  "ratio": None}]}, r"cells\[0\]\.app|cells\[0\]\.why"),
                     ({"cells": [{"app": "phi", "config": "apta", "run": "base", "size": "*", "why": "w",
                                  "ratio": [2, 1]}]}, r"cells\[0\]\.ratio"),
                     ([], "a list 'cells'")]:
        p.write_text(json.dumps(bad))
        with pytest.raises(g5.Gem5Error, match=msg):
            g5.load_explained(p)
    p.write_text("{not json")
    with pytest.raises(g5.Gem5Error, match=str(p)):
        g5.load_explained(p)


def test_microbenchmarks_are_valid_plans_that_apta_sim_runs(tmp_path, sim):
    from apta.gem5 import calibrate
    benches = calibrate.microbenchmarks(tmp_path, lines=64, mshrs=16)
    assert set(benches) == {"chase_cxl", "chase_local", "stream_read", "put_stream", "bisnp"}
    for name, b in benches.items():
        sc = tmp_path / f"{name}.sc.json"
        sc.write_text(json.dumps({"scenarios": [{"name": name, "config": b["config"]}]}))
        out = tmp_path / f"{name}.out.json"
        r = subprocess.run([str(sim), "--plan", b["plan"], "--scenarios", str(sc), "--out", str(out), "--quiet"],
                           capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr)
        res = json.loads(out.read_text())["results"][0]
        assert res["completed"] and res["trace_events"] > 0, name
    # the chase visits every line of its object once, never two neighbours in a row
    ev = gzip.decompress((tmp_path / "chase_cxl" / "bench.0" / "sigil.events.out-1.gz").read_bytes()).decode()
    addrs = [int(l.split("*")[1].split()[0], 16) for l in ev.splitlines() if "*" in l]
    assert sorted(addrs) == [calibrate.OBJECT_BASE + 64 * k for k in range(64)]
    assert all(abs(a - b) != 64 for a, b in zip(addrs, addrs[1:]))


def test_calibration_arithmetic_and_bands():
    from apta.gem5 import calibrate
    run = lambda **inst: {"completed": True, "instances": [inst]}
    results = {"chase_cxl": run(compute_ns=4096 * 1100.0), "chase_local": run(compute_ns=4096 * 100.0),
               "stream_read": run(compute_ns=4096 * 64 / 8.0), "put_stream": run(put_ns=(2 * 4096 + 3) * 64 / 4.0),
               "bisnp": {"completed": True, "instances": [], "gem5_stats": {"bisnp_round_trip_ns": 1050.0}}}
    m = calibrate.measures(results, 4096, 128)
    assert m == {"load_latency_cxl_ns": 1100.0, "load_latency_local_ns": 100.0, "load_latency_ratio": 11.0,
                 "load_latency_added_ns": 1000.0, "read_gbps": 8.0, "put_write_gbps": 4.0,
                 "bisnp_round_trip_ns": 1050.0}
    rows = calibrate.compare(m)
    assert rows[0]["verdict"] == "2.20x the upper bound" and all(r["source"] for r in rows)
    assert rows[1]["measure"] == "load_latency_added_ns" and rows[1]["verdict"] == "11.11x the upper bound"
    assert calibrate.compare(dict(m, load_latency_ratio=3.0))[0]["verdict"] == "inside"
    assert calibrate.compare(dict(m, load_latency_ratio=1.0))[0]["verdict"] == "0.50x the lower bound"
    with pytest.raises(g5.Gem5Error, match="chase_local: no completed run"):
        calibrate.measures(dict(results, chase_local={"completed": False}), 4096, 128)


def test_calibration_refuses_a_negative_device_link(capsys):
    from apta.gem5 import calibrate
    with pytest.raises(SystemExit) as e:      # refused before any gem5 run
        calibrate.main(["--gem5", "/nonexistent/gem5.opt", "--device-link-ns", "-1"])
    assert e.value.code == 2 and "--device-link-ns -1.0: a latency is not negative" in capsys.readouterr().err


def test_crosscheck_rejects_duplicate_or_incomplete_results():
    with pytest.raises(g5.Gem5Error, match="two results"):
        g5.crosscheck([res("phi", "apta", 1.0), res("phi", "apta", 2.0)], [])
    bad = res("phi", "apta", 1.0)
    del bad["table_iv"]
    with pytest.raises(g5.Gem5Error, match="without 'table_iv'"):
        g5.crosscheck([bad], [])


# --- with gem5 (make test-gem5) -------------------------------------------------------------------------------
GEM5 = os.environ.get("APTA_GEM5")
needs_gem5 = pytest.mark.skipif(not GEM5, reason="no gem5 binary: make test-gem5 GEM5=<gem5.opt built by make gem5>")
CONFIG = ROOT / "sim" / "gem5" / "configs" / "run_apta.py"
VECTORS = ROOT / "build" / "vectors"


def gem5_run(outdir: Path, *args, timeout=1800):
    env = dict(os.environ, APTA_PYTHON=sys.executable, APTA_ROOT=str(ROOT))   # configs/run_apta.py asks it for the spec
    return subprocess.run([GEM5, "-d", str(outdir), str(CONFIG), *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


@needs_gem5
def test_vectors_pass_through_the_engine_inside_gem5(tmp_path):
    files = sorted(VECTORS.glob("*.jsonl"))
    assert files, f"{VECTORS}: no vectors (make vectors)"
    r = gem5_run(tmp_path, *sum((["--vectors", str(f)] for f in files), []), "--out", str(tmp_path / "v.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((tmp_path / "v.json").read_text())["reports"]
    assert len(rep) == len(files) and all(x["failed"] == 0 for x in rep)
    # a configuration whose vectors target memory-server cells only (versioned*) has no core scenario
    for f, x in zip(files, rep):
        assert x["steps"] > 0 or (VECTORS / "ms" / f.name).read_text().strip(), f"{f.name}: no scenarios at all"
    assert sum(x["scenarios"] for x in rep) >= 50


@needs_gem5
@pytest.mark.parametrize("mutant", ["sa_get_to_s", "put_waits_acks", "ack_old_epoch"])
def test_a_mutant_engine_inside_gem5_is_rejected(tmp_path, mutant):
    files = sorted(VECTORS.glob("*.jsonl"))
    r = gem5_run(tmp_path, *sum((["--vectors", str(f)] for f in files), []), "--mutant", mutant,
                 "--out", str(tmp_path / "v.json"))
    assert r.returncode == 1, r.stderr[-3000:]
    assert any(x["failed"] for x in json.loads((tmp_path / "v.json").read_text())["reports"])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Synthetic tiny traces of the sentiment workflow and its plan (sim/plan.py)."""
    from apta.sim import plan as planlib
    root = tmp_path_factory.mktemp("g5traces")
    wf = os.path.join(workflow.WORKFLOW_DIR, "sentiment.json")
    sim_synth.make_traces(wf, str(root), "tiny", compute_events=20)
    plan = planlib.build_plan(wf, str(root / "tiny" / "sentiment"))
    p = root / "plan.json"
    p.write_text(json.dumps(plan))
    return p


@needs_gem5
@pytest.mark.parametrize("config", ["rdma", "rdma_faas", "rdmaf_faas", "rdmaf_apta", "cxl_uncached", "cxl_cached", "apta"])
def test_a_tiny_workflow_completes_in_gem5_in_every_configuration(tmp_path, tiny, config):
    sc = {"name": "base", "config": config}
    r = gem5_run(tmp_path, "--plan", str(tiny), "--scenario", json.dumps(sc), "--out", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["completed"] and out["makespan_ns"] > 0 and out["simulator"] == "gem5"
    assert out["trace_events"] > 0 and out["line_accesses"] > 0
    assert out["gem5_stale_lines"] == 0
    link = g5.cxl_link_stats(g5.parse_stats((tmp_path / "stats.txt").read_text()))
    if config.startswith("cxl_"):    # loads, stores and the logged puts cross the packet-level link
        assert out["gem5_checked_lines"] > 0
        assert link["cxl_flits"]["s2m_drs"] >= link["cxl_flits"]["m2s_req"]
    if config in ("rdma", "rdma_faas"):  # the RDMA network stays analytical (sim/gem5/README.md)
        assert sum(link["cxl_flits"].values()) == 0
    else:                            # every get and put of the DM-link configurations crosses it
        assert link["cxl_flits"]["m2s_req"] > 0 and link["cxl_flits"]["m2s_rwd"] > 0 and link["cxl_flits"]["s2m_drs"] > 0
        assert link["cxl_message_ns"] >= pv("links", "dm_latency_ns")


@needs_gem5
@pytest.mark.parametrize("mutant", ["", "drop_bisnp"])
def test_back_invalidation_keeps_cxl_cached_reads_fresh(tmp_path, mutant):
    """c1 reads an object, c2 puts it, c1 reads it again: the put's BISnps invalidate c1's copies
    (every line of the re-read is the new version); with the snoops dropped c1 reads stale lines."""
    from apta.gem5 import calibrate
    lines = 256
    b = calibrate.microbenchmarks(tmp_path / "t", lines=lines, mshrs=128)["bisnp"]
    r = gem5_run(tmp_path, "--plan", b["plan"], "--scenario", json.dumps({"name": "b", "config": "cxl_cached"}),
                 "--out", str(tmp_path / "r.json"), *(["--mutant", mutant] if mutant else []))
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads((tmp_path / "r.json").read_text())
    link = g5.cxl_link_stats(g5.parse_stats((tmp_path / "stats.txt").read_text()))
    assert out["completed"] and out["gem5_checked_lines"] >= 2 * lines
    if mutant:
        assert out["gem5_stale_lines"] > 0 and link["cxl_flits"]["s2m_bisnp"] == 0
    else:
        assert out["gem5_stale_lines"] == 0
        assert link["cxl_flits"]["s2m_bisnp"] == lines and link["cxl_flits"]["m2s_birsp"] == lines
        assert link["bisnp_round_trip_ns"] >= 2 * pv("links", "dm_latency_ns")


@needs_gem5
@pytest.mark.parametrize("window", [1, 0])
def test_an_apta_sharer_answers_its_back_invalidation(tmp_path, window):
    """c1 reads an object, c2 puts it, c1 reads it again, placed there only once c1 has answered
    the put's object BISnp (the scheduling rule): the handler clean-invalidates c1's copy, its dirty
    lines written back, and answers, so the re-read runs. Issued all at once (window 0), the
    clean-invalidates stall gem5's caches and c1 never answers: the horizon ends the run unfinished."""
    from apta.gem5 import calibrate
    b = calibrate.microbenchmarks(tmp_path / "t", lines=256, mshrs=128)["bisnp"]
    sc = {"name": "b", "config": "apta", "horizon_ns": 1e6}
    r = gem5_run(tmp_path, "--plan", b["plan"], "--scenario", json.dumps(sc), "--flush-window", str(window),
                 "--out", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads((tmp_path / "r.json").read_text())
    link = g5.cxl_link_stats(g5.parse_stats((tmp_path / "stats.txt").read_text()))
    assert link["cxl_flits"]["s2m_bisnp"] == 1
    if window:
        assert link["cxl_flits"]["m2s_birsp"] == 1 and out["completed"]
    else:
        assert link["cxl_flits"]["m2s_birsp"] == 0 and not out["completed"]


@needs_gem5
def test_the_links_credits_bound_what_is_in_flight(tmp_path):
    """A stream of CXL reads (bursts of 128 lines): with credits for a round trip of flits no
    message waits for one; with a tenth of that the DRS channel runs out, messages wait for credits
    and the stream slows to about credits x line per round trip, the back-pressure CXL prescribes."""
    from apta.gem5 import calibrate
    lines = 1024
    b = calibrate.microbenchmarks(tmp_path / "t", lines=lines, mshrs=128)["stream_read"]
    got = {}
    for trips in (1.0, 0.1):
        d = tmp_path / f"x{trips}"
        d.mkdir()
        sc = {"name": "s", "config": "cxl_cached", "overrides": {"links.cxl_credit_round_trips": trips}}
        r = gem5_run(d, "--plan", b["plan"], "--scenario", json.dumps(sc), "--out", str(d / "r.json"))
        assert r.returncode == 0, r.stderr[-3000:]
        out = json.loads((d / "r.json").read_text())
        assert out["completed"] and out["gem5_stale_lines"] == 0
        got[trips] = (out["makespan_ns"], g5.cxl_link_stats(g5.parse_stats((d / "stats.txt").read_text())),
                      g5.system_spec(overrides=sc["overrides"])["cxl"]["credits"])
    (fast, full, _), (slow, starved, credits) = got[1.0], got[0.1]
    assert full["cxl_credit_stalls"] == 0 and starved["cxl_credit_stalls"] > 0
    assert full["cxl_flits"] == starved["cxl_flits"]          # the same messages, only later
    rtt = 2 * pv("links", "dm_latency_ns")
    assert slow >= 0.9 * lines / credits * rtt > 2 * fast   # at most `credits` lines per round trip


TINY = ROOT / "build" / "traces" / "tiny"   # the tracer's tiny traces of the six workflows (make traces)


@needs_gem5
def test_gem5_within_tolerance_of_apta_sim_and_failure_runs(tmp_path):
    """The cross-check on the six workflows' tiny traces: every configuration's makespan within the
    tolerance, the same Table IV and ranking; a crash: Apta completes, CXL cached stalls, in both."""
    assert (TINY / "phi").is_dir(), f"{TINY}: no tiny traces (make traces TRACE_SIZE=tiny)"
    ev = [sys.executable, str(ROOT / "sim" / "gem5" / "eval.py"), "--gem5", GEM5, "--size", "tiny",
          "--traces", str(TINY), "--out", str(tmp_path / "e")]
    r = subprocess.run(ev, capture_output=True, text=True, timeout=3600)
    res = json.loads((tmp_path / "e" / "results.json").read_text())
    # the verdict: no failed run, Table IV equal, every cell within the tolerance or explained
    assert r.returncode == 0 and res["verdict"]["passed"], res["verdict"]["problems"] or r.stderr[-3000:]
    cells = res["crosscheck"]["cells"]
    assert len({c["app"] for c in cells}) == 6
    fails = {(c["app"], c["config"]): c for c in cells if c["run"] == "fail"}
    assert fails, "no failure runs"
    for (app, cfg), c in fails.items():
        if cfg == "cxl_cached":
            assert c["gem5_ns"] is None and c["apta_sim_ns"] is None, c   # stalls in both
        else:
            assert c["gem5_ns"] and c["apta_sim_ns"], c                   # completes in both
