"""Directed test of the core's input priority (rtl/CORE.md "Timing": one op enters per cycle,
fence walk, ctrl, ack, req, query): a Fence and a Commit presented in the same cycle. The Fence
goes first, so its walk drops the fenced server from the sharers before the Commit is decided:
the Commit is answered Committed with no BISnp to the fenced server, and that server owes nothing.
Were both taken in the same cycle, the Commit would snoop the fenced server and leave it owing an
ack no one will pay (status.pending). The vectors settle between stimuli and the stress rarely
lines them up, so an arbiter that let a request in beside a ctrl flit passed them
(rtl/tools/mutation.py).

For every server pair (s fenced, w the writer), from reset: s gets X; then the Fence of s and
the Commit of w are queued in the same cycle.
"""
from __future__ import annotations

import pytest

from apta.testbench.core_bfm import directed_report, Req

X = 2


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def ctrl_before_req(dut):
        from apta.testbench.core_bfm import directed_start
        variant, p, core = directed_start(dut)
        n = p["servers"]
        fails = []
        for s in range(n):
            w = (s + 1) % n
            await core.reset()
            seen = {"resp": [], "snp": [], "ctrlResp": []}

            def grab(b):
                if b.port in seen:
                    seen[b.port].append(b.data)
            core.listeners[:] = [grab]
            core.send_req(Req("Get", s, 0, X, 0x1000, 1))
            await core.settle(quiet=6)
            for k in seen:
                seen[k].clear()
            core.send_ctrl(core.ctrl_flit("Fence", s, 0))
            core.send_req(Req("Commit", w, 0, X, 0x1000, 1))
            await core.settle(quiet=6)
            got = {"resp": [(d["op"], d["server"], d["result"]) for d in seen["resp"]],
                   "snp": [d["server"] for d in seen["snp"]],
                   "ctrlResp": [(d["op"], d["server"]) for d in seen["ctrlResp"]]}
            want = {"resp": [("Commit", w, "Committed")], "snp": [], "ctrlResp": [("Fence", s)]}
            if got != want:
                fails.append(f"s={s} w={w}: Fence(s) and Commit(w) in one cycle: {got}, expected {want}")
            st = core.read_status()
            if st["pending"][s] or not st["fenced"][s]:
                fails.append(f"s={s}: after its Fence: fenced {st['fenced'][s]}, pending {st['pending'][s]} "
                             f"(expected fenced, owing nothing)")
        directed_report(variant, fails)


@pytest.mark.rtl_variants("m2s1w1", "m3s1w1", "stress")
@pytest.mark.parametrize("variant", ["m2s1w1", "m3s1w1", "stress"])
def test_ctrl_before_req(variant):
    from apta.testbench.core_bfm import run
    n, failed = run(variant, "test_core_arbitration", {}, results_name="arbitration.xml")
    assert n == 1 and failed == 0, f"{variant}: see build/sim/{variant}*/arbitration.xml"
