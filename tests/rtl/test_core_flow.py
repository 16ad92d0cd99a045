"""Directed test of the core's flow control and of `io_idle` (rtl/CORE.md "Refinements"):
- a `req` is held (ready low) only while its resp slot is not guaranteed: with `resp` held, the
  core takes exactly `respSlots` requests, however far apart they come; with every output ready
  it takes one request per cycle (Gets that hit: no result is a Stall);
- every input's ready is low while the OTC clears its directory after reset: a request presented
  during reset and after it is taken once, after the clear, and answered once;
- `io_idle` means nothing in flight: a cycle after an idle one in which no input fired shows no
  output valid.
The vectors and the stress wait for answers rather than count cycles, so a credit that held
requests too long, a ready during the clear or an idle that ignored the OTC's pipeline stage
passed them (rtl/tools/mutation.py).
"""
from __future__ import annotations

import os

import pytest

from apta.testbench.core_bfm import directed_report, Core, Req, load_params

X = 2            # set 0 of every variant


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    class IdleChecked(Core):
        """A Core whose every cycle checks io_idle: after an idle cycle in which no input fired,
        no output may be valid."""
        quiet_next = False
        idle_fails: list = []

        async def cycle(self):
            beats = await super().cycle()
            on = [q for q, (v, _) in self.outs.items() if int(v.value)] + \
                 [q for q, v in self.valids.items() if int(v.value)]
            if self.quiet_next and on:
                self.idle_fails.append(f"cycle {self.cycle_no}: io_{on[0]} valid after an idle cycle without input")
            fired = any(b.port.endswith(".fire") for b in beats)
            self.quiet_next = self.idle_sig is not None and bool(int(self.idle_sig.value)) and not fired
            return beats

    @cocotb.test()
    async def flow(dut):
        from cocotb.triggers import RisingEdge
        from apta.testbench.core_bfm import start_clock
        variant = os.environ["APTA_VARIANT"]
        p = load_params(variant)
        n, slots = p["servers"], p["respSlots"]
        start_clock(dut)
        core = IdleChecked(dut, p)
        core.idle_fails = []
        fails = []
        fires, resps = [], []

        def grab(b):
            if b.port == "req.fire":
                fires.append(b.cycle)
            elif b.port == "resp":
                resps.append((b.data["op"], b.data["server"], b.data["result"]))
        core.listeners[:] = [grab]

        def get(c):
            return Req("Get", c % n, 0, X, 0x1000, 1)

        # 1. a request presented through reset: taken once, after the directory clear
        await core.reset()
        core.quiet_next = False
        dut.reset.value = 1
        core.send_req(get(0))
        core.req.drive()
        for _ in range(3):
            await RisingEdge(dut.clock)
        dut.reset.value = 0
        await core.settle(quiet=6)
        if resps != [("Get", 0, "Served")]:
            fails.append(f"a Get held valid through reset: resp {resps}, expected one Served")

        # 2. resp held: exactly respSlots requests taken, each after the last was answered into
        # the queue (S1 empty again)
        fires.clear(), resps.clear()
        core.ready_p["resp"] = 0.0
        for k in range(slots + 1):
            core.send_req(get(k + 1))
            for _ in range(6):
                await core.cycle()
        if len(fires) != slots:
            fails.append(f"resp held: {len(fires)} requests taken, expected respSlots = {slots}")
        core.ready_p["resp"] = 1.0
        await core.settle(quiet=6)
        if len(resps) != slots + 1 or any(r[2] != "Served" for r in resps):
            fails.append(f"after resp was released: {resps}, expected {slots + 1} Served")

        # 3. every output ready: one request per cycle
        fires.clear(), resps.clear()
        for k in range(8):
            core.send_req(get(k))
        await core.settle(quiet=6)
        if not fires or fires != list(range(fires[0], fires[0] + 8)):
            fails.append(f"8 Gets that hit, outputs ready: taken in cycles {fires}, expected 8 consecutive")
        if len(resps) != 8:
            fails.append(f"8 Gets: {len(resps)} resps")
        fails += core.idle_fails
        directed_report(variant, fails)


@pytest.mark.rtl_variants("m2s1w1", "m3s1w1", "stress")
@pytest.mark.parametrize("variant", ["m2s1w1", "m3s1w1", "stress"])
def test_flow(variant):
    from apta.testbench.core_bfm import run
    n, failed = run(variant, "test_core_flow", {}, results_name="flow.xml")
    assert n == 1 and failed == 0, f"{variant}: see build/sim/{variant}*/flow.xml"
