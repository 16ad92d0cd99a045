"""The OSC's hold table of versioned gets (issue 19, rtl/MEMSERVER.md "Versioned gets"), directed, on
the `ms3` variant (3 servers, a 2-entry hold table); DRAM is cocotbext-axi's AxiRam.

Each cocotb test drives one situation of the hold cells and checks what the model says
(spec/murphi/apta.m VERSIONED): a get naming a version not yet committed is held (no reply, its
port free), served with that version on the commit; a get naming a version already committed (or
older than the current one) is served at once; a full table answers GetRetry; the producer's fence
aborts its put but keeps the held gets (served by the re-executed put); the reader's fence drops
its held get; a cancel answers GetCancelled. tests/rtl/test_ms_mutants.py runs this module on
`ms3_mutants` too: each hold-table mutant (rtl/Mutants.scala ids 16-19) fails one of these tests.
"""
from __future__ import annotations

import os

import pytest

VARIANT = os.environ.get("APTA_MS_VARIANT", "ms3")
BASE = 0x1000
SIZE = 3


def obj_base(o: int) -> int:
    return BASE + o * 0x200


def val(o: int, version: int, line: int) -> int:
    return (o << 40) | (version << 20) | (line + 1) | (0x5A << 500)


async def setup(dut, objects=(1, 2)):
    from ms_bfm import Ms
    ms = Ms(dut, VARIANT)
    for o in objects:
        ms.put_map(o, obj_base(o), SIZE)
        ms.write_obj(obj_base(o), [val(o, 0, l) for l in range(SIZE)])
    await ms.start()
    return ms


def put(ms, server: int, o: int, version: int, txn: int, epoch: int = 0, lines=None):
    """A whole put of object o whose data is `version` (its lines: all, or the ones given)."""
    ms.send(server, "PutPrepare", epoch=epoch, obj=o, txn=txn)
    for l in (range(SIZE) if lines is None else lines):
        ms.send(server, "PutLine", epoch=epoch, obj=o, txn=txn, line=l, data=val(o, version, l))


def data_of(ms, server: int, o: int) -> list[int]:
    fl = ms.rsp_of("ObjData", server=server, obj=o)
    return [f["data"] for f in sorted(fl, key=lambda f: f["line"])]


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def held_until_commit_then_served(dut):
        """osc.hold + osc.release: no reply while version 1 has not committed, the port moves on,
        the commit serves it with version 1's data."""
        ms = await setup(dut)
        ms.send(0, "ObjGet", epoch=0, obj=1, version=1)
        await ms.settle()
        assert ms.rsp == [] and ms.held() == 1, (ms.rsp, ms.held())
        ms.send(0, "ObjGet", epoch=0, obj=2)          # server 0's port is not blocked by its held get
        await ms.settle()
        assert data_of(ms, 0, 2) == [val(2, 0, l) for l in range(SIZE)], ms.rsp
        put(ms, 1, 1, version=1, txn=3)
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=1, obj=1, txn=3), ms.rsp
        assert data_of(ms, 0, 1) == [val(1, 1, l) for l in range(SIZE)], "served version 1 on the commit"
        assert ms.held() == 0 and not ms.err, ms.err

    @cocotb.test()
    async def committed_version_served_at_once(dut):
        """A get naming a version already committed, or older than the current one, is not held:
        after two commits, version 1 and version 2 are both served at once, with version 2's data."""
        ms = await setup(dut)
        put(ms, 1, 1, version=1, txn=1)
        await ms.settle()
        put(ms, 1, 1, version=2, txn=2)
        await ms.settle()
        assert len(ms.rsp_of("PutCommit", server=1, obj=1)) == 2, ms.rsp
        for srv, need in ((0, 1), (2, 2)):
            ms.send(srv, "ObjGet", epoch=0, obj=1, version=need)
            await ms.settle()
            assert data_of(ms, srv, 1) == [val(1, 2, l) for l in range(SIZE)], (srv, need, ms.rsp)
        assert ms.held() == 0

    @cocotb.test()
    async def full_table_answers_get_retry(dut):
        """osc.hold.full: with both entries in use a third versioned get is answered GetRetry at
        once (naming its version) and not held."""
        ms = await setup(dut)
        ms.send(0, "ObjGet", epoch=0, obj=1, version=1)
        ms.send(0, "ObjGet", epoch=0, obj=2, version=1)
        await ms.settle()
        assert ms.held() == 2 and ms.rsp == [], ms.rsp
        ms.send(2, "ObjGet", epoch=0, obj=1, version=1)
        await ms.settle()
        assert ms.rsp_of("GetRetry", server=2, epoch=0, obj=1, version=1), ms.rsp
        assert ms.held() == 2
        put(ms, 1, 1, version=1, txn=1)                # the held ones still complete
        await ms.settle()
        assert data_of(ms, 0, 1) == [val(1, 1, l) for l in range(SIZE)] and not ms.rsp_of("ObjData", server=2)

    @cocotb.test()
    async def producer_fence_keeps_held_gets(dut):
        """osc.hold.keep: the producer dies mid-put; its open put aborts at the fence (fenceAbort),
        the held get stays and is served by the re-executed put's commit, in the new epoch."""
        ms = await setup(dut)
        ms.send(0, "ObjGet", epoch=0, obj=1, version=1)
        put(ms, 1, 1, version=1, txn=4, lines=[0])     # open: one line of three
        await ms.settle()
        ms.ctrl("Fence", 1, 0)
        await ms.settle()
        assert [e["code"] for e in ms.err] == ["fenceAbort"], ms.err
        assert ms.held() == 1 and not ms.rsp_of("ObjData"), (ms.held(), ms.rsp)
        ms.send(1, "Rejoin", epoch=0)
        await ms.settle()
        assert ms.rsp_of("RejoinAck", server=1, epoch=1), ms.rsp
        put(ms, 1, 1, version=1, txn=4, epoch=1)       # the re-execution
        await ms.settle()
        assert data_of(ms, 0, 1) == [val(1, 1, l) for l in range(SIZE)], ms.rsp
        assert ms.held() == 0

    @cocotb.test()
    async def reader_fence_drops_and_cancel_answers(dut):
        """osc.hold.drop: the reader's fence drops its held get (nobody is left to answer), a later
        commit serves nothing; osc.hold.cancel: a cancel of the object answers its held get
        GetCancelled with the version it named."""
        ms = await setup(dut)
        ms.send(0, "ObjGet", epoch=0, obj=1, version=1)
        await ms.settle()
        ms.ctrl("Fence", 0, 0)
        await ms.settle()
        assert ms.held() == 0 and ms.rsp == [], ms.rsp
        put(ms, 1, 1, version=1, txn=1)
        await ms.settle()
        assert not ms.rsp_of("ObjData"), ms.rsp
        ms.send(2, "ObjGet", epoch=0, obj=2, version=2)
        await ms.settle()
        assert ms.held() == 1
        ms.cancel(1)                                   # no held get of object 1: nothing
        await ms.settle()
        assert not ms.rsp_of("GetCancelled") and ms.held() == 1
        ms.cancel(2)
        await ms.settle()
        assert ms.rsp_of("GetCancelled", server=2, epoch=0, obj=2, version=2), ms.rsp
        assert ms.held() == 0 and not ms.rsp_of("ObjData", server=2)


@pytest.mark.parametrize("variant", [os.environ["APTA_MS_VARIANT"]] if "APTA_MS_VARIANT" in os.environ else ["ms3"])
def test_ms_hold_runner(variant):
    from ms_bfm import run_ms
    from core_bfm import declared_variants, rtl_dir_lacks, variant_dir
    lack = rtl_dir_lacks(variant) if declared_variants() is not None else None
    if lack and lack[0] == "skip":
        pytest.skip(lack[1])
    if not any((variant_dir(variant) / f"MemoryServer.{x}").exists() for x in ("sv", "v")):
        if declared_variants() is not None:
            pytest.fail(f"{variant}: no MemoryServer netlist under RTL_DIR, which declares it", pytrace=False)
        if os.environ.get("APTA_RTL"):
            raise FileNotFoundError("MemoryServer.sv missing: run `make rtl`")
        pytest.skip("run `make rtl` first")
    tests, fails = run_ms(variant, "test_ms_hold", {"APTA_MS_VARIANT": variant})
    assert tests >= 5 and fails == 0, f"{fails} of {tests} cocotb tests failed (see build/sim/ms-{variant}/)"
