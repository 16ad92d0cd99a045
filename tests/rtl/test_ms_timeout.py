"""The OPC's timeout of an open put (rtl/MEMSERVER.md opc.abort.timeout: a put that "receives no line
for opcTimeout cycles" is answered PutRetry and reported `timeout`), on the variants that have one:
`ms3t` (200 cycles) and `msv` (the model's geometry, 4,000 cycles). The age of a slot counts from its
last line, and the timeout waits for room to report itself. `msv` is in the mutation run's msv group,
so these tests are what checks the age counter there (ms3 has no timeout: opcTimeout 0). Helpers
from apta.testbench.ms_directed.
"""
from __future__ import annotations

import os

import pytest

from apta.testbench.ms_directed import VARIANT, flood_malformed_acks, obj_base, setup, val

# the cycles from a line's acceptance at its server port to the PutRetry of its put on the rsp port
# beyond opcTimeout: one into the OPC, one out through its response queue (measured on ms3t and msv).
# Pinned: MEMSERVER.md counts opcTimeout cycles without a line, so an age off by one is a bug
LATENCY = 2
PREP_LATENCY = 9  # from a PutPrepare's acceptance, through its map lookup to the slot's opening (measured)
SLACK = 8       # cycles allowed for an answer that comes "at once"


def timeout_of() -> int:
    from apta.testbench.core_bfm import load_params
    return load_params(VARIANT)["opcTimeout"]


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    async def accepted(ms, server: int, n: int, limit: int = 1000) -> int:
        """The cycle the server port accepted its n-th flit (counting from 1), waiting for it (within
        `limit` cycles)."""
        from cocotb.triggers import RisingEdge
        for _ in range(limit):
            fired = [c for k, c in ms.req_fire if k == server]
            if len(fired) >= n:
                return fired[n - 1]
            await RisingEdge(ms.dut.clock)
        raise AssertionError(f"server {server}'s flit {n} not accepted within {limit} cycles")

    async def answer(ms, name: str, limit: int, **fields) -> int:
        """The BFM's cycle when the response `name` with `fields` has arrived (within `limit` cycles)."""
        from cocotb.triggers import RisingEdge
        for _ in range(limit):              # an open slot counts as idle: wait for the answer itself
            if ms.rsp_of(name, **fields):
                return ms.cycles
            await RisingEdge(ms.dut.clock)
        raise AssertionError(f"no {name} {fields} within {limit} cycles: {ms.rsp[-4:]} {ms.err[-4:]}")

    @cocotb.test()
    async def timeout_counts_from_the_last_line(dut):
        """A put whose lines come 3/4 of opcTimeout apart stays open and commits (the age restarts
        at every line); a put idle after its first line is answered PutRetry, with a `timeout`
        report, opcTimeout (+ LATENCY) cycles after that line, though another server's orphan
        PutLines (not its lines) come meanwhile; its retry (same txn), whose lines come T/2 after
        its PutPrepare (the age restarts there too), commits."""
        from cocotb.triggers import ClockCycles
        T = timeout_of()
        ms = await setup(dut, {6: 2, 7: 8})
        ms.ack_every_snoop()                 # msv's one directory entry: object 7's copy makes room
        ms.send(1, "PutPrepare", epoch=0, obj=7, txn=5)       # 8 lines, one every 3T/4 cycles: 6 T in all
        for l in range(8):
            await ClockCycles(dut.clock, 3 * T // 4)
            ms.send(1, "PutLine", epoch=0, obj=7, txn=5, line=l, data=val(7, 5, l))
        await ms.settle()
        assert not ms.err and ms.rsp_of("PutCommit", server=1, obj=7, txn=5), \
            f"a put whose lines come every {3 * T // 4} cycles was timed out (opcTimeout {T}): {ms.err} {ms.rsp}"
        assert ms.read_obj(obj_base(7), 8) == [val(7, 5, l) for l in range(8)]
        # a put that gets no line: its age counts from its PutPrepare, through another server's
        # PutPrepares (one finds no slot on msv, one names an unknown object: the OPC's input stage
        # busy with them) and an orphan line
        n0 = sum(1 for k, _ in ms.req_fire if k == 0)
        ms.send(0, "PutPrepare", epoch=0, obj=6, txn=2)
        prep_at = await accepted(ms, 0, n0 + 1)
        await ClockCycles(dut.clock, T // 8)
        ms.send(2, "PutPrepare", epoch=0, obj=7, txn=8)       # msv: no slot (PutRetry); ms3t: slot 1
        await ClockCycles(dut.clock, T // 8)
        ms.send(2, "PutPrepare", epoch=0, obj=50, txn=9)
        await ClockCycles(dut.clock, T // 4)
        ms.send(2, "PutLine", epoch=0, obj=6, txn=77, line=0, data=0)
        retry_at = await answer(ms, "PutRetry", T + 4 * SLACK, server=0, obj=6, txn=2)
        assert retry_at - prep_at == T + PREP_LATENCY, \
            f"PutRetry {retry_at - prep_at} cycles after the PutPrepare of a put with no line (opcTimeout {T})"
        assert ms.rsp_of("ObjErr", server=2, obj=50, txn=9), ms.rsp[-3:]
        n0 = sum(1 for k, _ in ms.req_fire if k == 0)
        ms.send(0, "PutPrepare", epoch=0, obj=6, txn=3)
        ms.send(0, "PutLine", epoch=0, obj=6, txn=3, line=0, data=11)
        line_at = await accepted(ms, 0, n0 + 2)
        e0 = len(ms.err)
        for _ in range(3):                   # a line of no open put (noTxn) is no line of this one
            await ClockCycles(dut.clock, T // 4)
            ms.send(2, "PutLine", epoch=0, obj=6, txn=77, line=0, data=0)
        retry_at = await answer(ms, "PutRetry", T + 4 * SLACK, server=0, obj=6, txn=3)
        assert retry_at - line_at == T + LATENCY, \
            f"PutRetry {retry_at - line_at} cycles after the put's last line (opcTimeout {T})"
        assert [e for e in ms.err if e["code"] == "timeout" and e["obj"] == 6], ms.err
        assert [e["code"] for e in ms.err[e0:] if e["server"] == 2 and e["obj"] == 6] == ["noTxn"] * 3, ms.err[e0:]
        ms.send(0, "PutPrepare", epoch=0, obj=6, txn=3)
        await ClockCycles(dut.clock, T // 2)
        ms.send(0, "PutLine", epoch=0, obj=6, txn=3, line=0, data=11)
        ms.send(0, "PutLine", epoch=0, obj=6, txn=3, line=1, data=12)
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=0, obj=6, txn=3) and len(ms.rsp_of("PutRetry", txn=3)) == 1, ms.rsp
        assert ms.read_obj(obj_base(6), 2) == [11, 12]

    @cocotb.test()
    async def timeout_waits_for_its_report(dut):
        """A timed-out put whose `timeout` report cannot leave stays open past opcTimeout, answered
        nothing: a flood of malformed acks keeps the error port busy (the core's reports go first)
        and two orphan PutLines fill the OPC's report queue. When the flood ends its PutRetry and
        report come at once, and every report of the flood and the orphans arrives. (An age that
        went on counting past opcTimeout would miss its moment.)"""
        from cocotb.triggers import ClockCycles
        T = timeout_of()
        W, O = 2, 1                          # the writer, on the last port; the orphans' server
        ms = await setup(dut, {6: 2})
        flood = flood_malformed_acks(ms, 6)
        n0 = sum(1 for k, _ in ms.req_fire if k == W)
        ms.send(W, "PutPrepare", epoch=0, obj=6, txn=3)
        ms.send(W, "PutLine", epoch=0, obj=6, txn=3, line=0, data=11)
        line_at = await accepted(ms, W, n0 + 2)
        n2 = sum(1 for k, _ in ms.req_fire if k == O)
        for _ in range(2):                              # orphans: their noTxn reports wait in the OPC
            ms.send(O, "PutLine", epoch=0, obj=6, txn=77, line=0, data=0)
        assert await accepted(ms, O, n2 + 2) - line_at < T // 2
        # W's next line waits at its port (the OPC takes nothing while its report queue is full);
        # the dispatcher shows the OPC its bits with valid low (the last port's head when no port
        # can go), and a line not taken is no line: the age goes on
        ms.send(W, "PutLine", epoch=0, obj=6, txn=3, line=1, data=12)
        await ClockCycles(dut.clock, T + 4 * SLACK - (ms.cycles - line_at))
        assert not ms.rsp_of("PutRetry") and not [e for e in ms.err if e["code"] == "timeout"], \
            f"the timeout went out under the flood: {ms.rsp[-2:]} {ms.err[-2:]}"
        assert ms.cycles - line_at > T + SLACK
        flood["on"] = False
        await ms.settle()
        await answer(ms, "PutRetry", 4 * SLACK, server=W, obj=6, txn=3)
        codes = [e["code"] for e in ms.err]
        assert codes.count("timeout") == 1 and codes.count("noTxn") == 2, codes[-4:]
        assert codes.count("badFlit") == flood["sent"], (codes.count("badFlit"), flood["sent"])
        ms.send(W, "PutPrepare", epoch=0, obj=6, txn=3)
        for l in range(2):
            ms.send(W, "PutLine", epoch=0, obj=6, txn=3, line=l, data=21 + l)
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=W, obj=6, txn=3) and ms.read_obj(obj_base(6), 2) == [21, 22]


@pytest.mark.parametrize("variant", [os.environ["APTA_MS_VARIANT"]] if "APTA_MS_VARIANT" in os.environ
                         else ["ms3t", "msv"])
def test_ms_timeout_runner(variant):
    from apta.testbench.core_bfm import rtl_dir_overridden
    from apta.testbench.ms_bfm import run_ms_module
    if variant == "msv" and rtl_dir_overridden():
        pytest.skip("msv's 4,000-cycle timeouts take some 40,000 cycles, minutes on a gate-level netlist; "
                    "the netlist regression runs the RTL's other tests, and these on build/rtl")
    run_ms_module(variant, "test_ms_timeout", 2)
