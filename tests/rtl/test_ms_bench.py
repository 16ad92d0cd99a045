"""`make bench` (not part of make test): get and put of an L-line object on the memory-server top.

Variant `ms_bench` (ms3 with linesPerObject 1024; DRAM is cocotbext-axi's AxiRam, no backpressure
anywhere). For L = 1, 2, 4, ..., linesPerObject: a get of an L-line object (translation cache
warm: a first get of the object by another server before), measured from the cycle its ObjGet is
accepted on the port to the first and to the last ObjData, and from the first DRAM read beat of
the OSC (AXI id 1) to the first ObjData; lines per cycle out = L / (last - first ObjData + 1).
A put of L lines (PutPrepare, then L PutLines back to back): cycles from the last (and from the
first) PutLine accepted to the PutCommit leaving; lines per cycle in = L / (last - first PutLine
accepted + 1). sim/eval.py's bound table reads get_last_data and put_first_line_to_commit.
The hold table: a versioned get of the next version, held, then the put that commits it:
cycles from the PutCommit leaving to the held get's first and last ObjData (`hold_release`).
Cycles are clock edges as the BFM samples them (rtl/testbench/ms_bfm.py). Written to build/bench/ms.json.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from apta.testbench.core_bfm import ROOT

OUT = ROOT / "build" / "bench" / "ms.json"
VARIANT = os.environ.get("APTA_MS_BENCH_VARIANT", "ms_bench")
SPAN = 0x10000            # object k at SPAN * k (up to 1024 lines of 64 bytes)

try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def ms_bench(dut):
        from apta.testbench.ms_bfm import Ms
        from apta.testbench.core_bfm import load_params
        p = load_params(VARIANT)
        Lmax = p["linesPerObject"]
        sizes = [1 << k for k in range(Lmax.bit_length()) if (1 << k) <= Lmax]
        ms = Ms(dut, VARIANT, ram_size=SPAN * (len(sizes) + 2))
        for k, L in enumerate(sizes):
            o = k + 1
            ms.put_map(o, SPAN * o, L)
            ms.write_obj(SPAN * o, [(o << 32) | (l + 1) for l in range(L)])
        await ms.start()

        async def acker():                 # every ObjBISnp (puts, directory evictions) acked at once
            from cocotb.triggers import RisingEdge
            seen = 0
            while True:
                await RisingEdge(dut.clock)
                for n, f in ms.snp[seen:]:
                    if n == "ObjBISnp":
                        ms.ack(f["server"], f["epoch"], f["obj"])
                seen = len(ms.snp)
        cocotb.start_soon(acker())
        t0 = time.time()
        rows = []
        for k, L in enumerate(sizes):
            o = k + 1
            lim = 20 * L + 2000
            ms.send(0, "ObjGet", epoch=0, obj=o)                   # warms the translation cache
            await ms.settle(limit=lim)
            n0, f0, r0 = len(ms.rsp), len(ms.req_fire), len(ms.r_beats)
            ms.send(1, "ObjGet", epoch=0, obj=o)
            await ms.settle(limit=lim)
            fire = [c for i, c in ms.req_fire[f0:] if i == 1][0]
            rc = [c for (n, f), c in zip(ms.rsp[n0:], ms.rsp_cycle[n0:]) if n == "ObjData"]
            assert len(rc) == L, f"L={L}: {len(rc)} ObjData"
            rd = [c for i, c in ms.r_beats[r0:] if i == 1]
            got = [f["data"] for n, f in ms.rsp[n0:] if n == "ObjData"]
            assert got == [(o << 32) | (l + 1) for l in range(L)], f"L={L}: wrong data"
            # put of L lines by server 2 (servers 0 and 1 hold copies: BISnp, acked by `acker`)
            n1, f1 = len(ms.rsp), len(ms.req_fire)
            ms.send(2, "PutPrepare", epoch=0, obj=o, txn=k % 2)
            for l in range(L):
                ms.send(2, "PutLine", epoch=0, obj=o, txn=k % 2, line=l, data=(o << 32) | (l + 7))
            await ms.settle(limit=lim)
            pf = [c for i, c in ms.req_fire[f1:] if i == 2][1:]       # the PutLines (after the prepare)
            pc = [c for (n, f), c in zip(ms.rsp[n1:], ms.rsp_cycle[n1:]) if n == "PutCommit"]
            assert len(pf) == L and len(pc) == 1, f"L={L}: {len(pf)} PutLines, PutCommit {pc}, rsp {ms.rsp[n1:]}"
            row = {"lines": L,
                   "get_first_data": rc[0] - fire, "get_last_data": rc[-1] - fire,
                   "get_mem_first_beat_to_first_data": (rc[0] - rd[0]) if rd else None,
                   "get_lines_per_cycle": round(L / (rc[-1] - rc[0] + 1), 3),
                   "put_last_line_to_commit": pc[0] - pf[-1],
                   "put_first_line_to_commit": pc[0] - pf[0],
                   "put_lines_per_cycle": round(L / (pf[-1] - pf[0] + 1), 3)}
            rows.append(row)
            dut._log.info("bench L=%d: %s", L, row)
        # the hold table: server 0 (not a sharer: its copy was invalidated above) asks for version 2,
        # held; server 2's second put commits it and wakes the get
        hold_rows = []
        for k, L in enumerate(sizes):
            o = k + 1
            lim = 20 * L + 2000
            n0 = len(ms.rsp)
            ms.send(0, "ObjGet", epoch=0, obj=o, version=2)
            await ms.settle(limit=lim)
            assert len(ms.rsp) == n0 and int(dut.io_status_held.value) == 1, f"L={L}: not held: {ms.rsp[n0:]}"
            ms.send(2, "PutPrepare", epoch=0, obj=o, txn=2 + k % 2)
            for l in range(L):
                ms.send(2, "PutLine", epoch=0, obj=o, txn=2 + k % 2, line=l, data=(o << 32) | (l + 9))
            await ms.settle(limit=lim)
            pc = [c for (n, f), c in zip(ms.rsp[n0:], ms.rsp_cycle[n0:]) if n == "PutCommit"]
            rc = [c for (n, f), c in zip(ms.rsp[n0:], ms.rsp_cycle[n0:]) if n == "ObjData" and f["server"] == 0]
            got = [f["data"] for n, f in ms.rsp[n0:] if n == "ObjData" and f["server"] == 0]
            assert len(pc) == 1 and got == [(o << 32) | (l + 9) for l in range(L)], f"L={L}: {ms.rsp[n0:][:4]}"
            hold_rows.append({"lines": L, "commit_to_first_data": rc[0] - pc[0], "commit_to_last_data": rc[-1] - pc[0]})
            dut._log.info("bench hold L=%d: %s", L, hold_rows[-1])
        assert not ms.err, ms.err
        res = {"variant": VARIANT, "linesPerObject": Lmax, "oscBufLines": p["oscBufLines"],
               "rows": rows, "hold_release": hold_rows, "sim_seconds": round(time.time() - t0, 1)}
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(res, indent=1))


@pytest.mark.bench
def test_ms_bench():
    from apta.testbench.ms_bfm import run_ms
    from apta.testbench.runs import need_ms as _need
    _need(VARIANT)
    if OUT.exists():
        OUT.unlink()
    n, failed = run_ms(VARIANT, "test_ms_bench", {})
    assert n == 1 and failed == 0, f"see build/sim/ms-{VARIANT}/"
    res = json.loads(OUT.read_text())
    print(f"\nmemory server ({VARIANT}): cycles against the object's size L")
    print("    L  get:first  get:last  mem->first  lines/cyc out   put:last line->commit  lines/cyc in")
    for r in res["rows"]:
        print(f"{r['lines']:5}  {r['get_first_data']:9}  {r['get_last_data']:8}  "
              f"{str(r['get_mem_first_beat_to_first_data']):10}  {r['get_lines_per_cycle']:13}  "
              f"{r['put_last_line_to_commit']:21}  {r['put_lines_per_cycle']:12}")
    print("held versioned get: cycles from the PutCommit of its version to its ObjData")
    print("    L  first  last")
    for r in res["hold_release"]:
        print(f"{r['lines']:5}  {r['commit_to_first_data']:5}  {r['commit_to_last_data']:4}")
