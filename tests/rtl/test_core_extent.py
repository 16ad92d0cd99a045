"""Directed test of the object's extent in the directory (rtl/CORE.md "BISnps"): an entry keeps the
`base`/`size` of the request that allocated it or of the last commit it accepted; a Get that hits
stores nothing; a BISnp carries the extent stored before the commit that sent it.

The model has no extents and every vector and stress request of an object carries the same one,
so which request's extent the entry keeps was invisible: the mutation run (rtl/tools/mutation.py)
left DirUpdate's base/size selects alive. An object's extent does change in the memory server when
it is removed and registered again (MEMSERVER.md `mapUpd`) while an entry for it lives, so every
request here carries a new extent, and the BISnps say which one the entry held.

On every server pair (s the reader, w the writer), from reset, one object X:
  1. s gets X with extent A: Served, the entry allocated with A;
  2. w gets X with extent B: Served (a hit: the entry keeps A);
  3. w commits X with extent C: Committed, one BISnp to s with A (B if the Get stored its extent);
  4. s acks it; s gets X with extent D: Served (keeps C);
  5. w commits X with extent E: Committed, one BISnp to s with C (A if the first commit did not
     store its extent, D if the Get did).
"""
from __future__ import annotations

import pytest

from apta.testbench.core_bfm import directed_report, Req

X = 1


def extents(p: dict) -> list[tuple[int, int]]:
    """Five extents, every base and every size different (sizes within 1..linesPerObject)."""
    n = p["linesPerObject"]
    return [(0x1000 * (k + 1), 1 + (k * 3) % n) for k in range(5)]


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def extent_kept(dut):
        from apta.testbench.core_bfm import directed_start
        variant, p, core = directed_start(dut)
        n = p["servers"]
        fails = []
        A, B, C, D, E = extents(p)
        for s in range(n):
            w = (s + 1) % n
            await core.reset()
            seen = {"resp": [], "snp": []}

            def grab(b):
                if b.port in seen:
                    seen[b.port].append(b.data)
            core.listeners[:] = [grab]

            async def step(what, stim, resp, snp):
                for k in seen:
                    seen[k].clear()
                for kind, arg in stim:
                    (core.send_req if kind == "req" else core.send_ack)(arg)
                    await core.settle(quiet=6)
                got_r = [(d["op"], d["server"], d["result"]) for d in seen["resp"]]
                got_s = [(d["server"], d["base"], d["size"]) for d in seen["snp"]]
                if got_r != resp:
                    fails.append(f"s={s} w={w} {what}: resp {got_r}, expected {resp}")
                if got_s != snp:
                    fails.append(f"s={s} w={w} {what}: BISnp (server, base, size) {got_s}, expected {snp}")

            def req(op, c, ext):
                return ("req", Req(op, c, 0, X, *ext))
            await step("get allocates (A)", [req("Get", s, A)], [("Get", s, "Served")], [])
            await step("get hits (B)", [req("Get", w, B)], [("Get", w, "Served")], [])
            await step("commit (C)", [req("Commit", w, C)], [("Commit", w, "Committed")], [(s, *A)])
            await step("ack, get hits (D)", [("ack", core.ack_flit(s, 0, X)), req("Get", s, D)],
                       [("Get", s, "Served")], [])
            await step("commit (E)", [req("Commit", w, E)], [("Commit", w, "Committed")], [(s, *C)])
        directed_report(variant, fails)


@pytest.mark.rtl_variants("m2s1w1", "m3s1w1", "stress")
@pytest.mark.parametrize("variant", ["m2s1w1", "m3s1w1", "stress"])
def test_extent_kept(variant):
    from apta.testbench.core_bfm import run
    n, failed = run(variant, "test_core_extent", {}, results_name="extent.xml")
    assert n == 1 and failed == 0, f"{variant}: see build/sim/{variant}*/extent.xml"
