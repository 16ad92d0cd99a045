"""`make bench` (not part of make test): OTC throughput and latency on the default variant.

Streams of non-conflicting requests (consecutive requests in different sets, every set with a free
way or a hit, no backpressure): Gets that allocate, Gets that hit, Commits to the resident objects: throughput = requests accepted per cycle from the first to the last
accepted request; latency = cycles from the req handshake to resp valid. rtl/CORE.md's contract is
1 req/cycle and <= 4 cycles. Written to build/bench/rtl.json.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from apta.testbench.core_bfm import ROOT, Core, Req, load_params

OUT = ROOT / "build" / "bench" / "rtl.json"

try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def core_bench(dut):
        from apta.testbench.core_bfm import start_clock
        p = load_params(os.environ["APTA_VARIANT"])
        start_clock(dut)
        core = Core(dut, p)
        await core.reset()
        sets, ways, n = p["dirSets"], p["dirWays"], p["servers"]
        fire, valid = {}, {}

        def grab(b):
            if b.port == "req.fire":
                fire[b.item.tag] = b.cycle
            elif b.port == "resp":
                valid[len(valid)] = b.cycle

        core.listeners.append(grab)
        phases = {}
        t0 = time.time()
        for phase, op, rounds in (("get-alloc", "Get", ways), ("get-hit", "Get", ways),
                                  ("commit", "Commit", ways)):
            fire.clear()
            valid.clear()
            k = 0
            for w in range(rounds):
                for s in range(sets):
                    obj = s + sets * (w + 1)
                    core.send_req(Req(op, (k + w) % n, 0, obj, 4096 * obj, 1, k))
                    k += 1
            await core.settle(quiet=8, waiting=lambda: len(valid) < len(fire) or not core.inputs_idle())
            cyc = sorted(fire.values())
            lat = [valid[i] - fire[i] for i in range(k)]
            phases[phase] = {"requests": k, "throughput_req_per_cycle": round(k / (cyc[-1] - cyc[0] + 1), 3),
                             "latency_min": min(lat), "latency_max": max(lat),
                             "latency_mean": round(sum(lat) / k, 2)}
        core.listeners.remove(grab)
        res = {"variant": os.environ["APTA_VARIANT"], "phases": phases,
               "contract": {"throughput_req_per_cycle": 1.0, "latency_max": 4},
               "sim_seconds": round(time.time() - t0, 1)}
        res["meets_contract"] = all(ph["throughput_req_per_cycle"] >= 1.0 and ph["latency_max"] <= 4
                                    for ph in phases.values())
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(res, indent=1))
        dut._log.info("bench: %s", res)


@pytest.mark.bench
@pytest.mark.rtl_variants("default")
def test_bench():
    from apta.testbench.core_bfm import run
    if OUT.exists():
        OUT.unlink()
    n, failed = run("default", "test_core_bench", {}, results_name="bench.xml")
    assert n == 1 and failed == 0
    res = json.loads(OUT.read_text())
    print(json.dumps(res, indent=1))
    assert res["meets_contract"], f"performance contract missed: {res['phases']}"
