"""Directed test of the core's control channel (rtl/CORE.md `ctrl`/`ctrlResp`): control flits sent
back to back while the answer to the first is held by ctrlResp backpressure, on every server.
The model's vectors send one ctrl flit per settled step and the stress rarely overlaps them, so
the control unit's sequencing (accept only when idle, one answer per flit, in order, effects
visible at `status` when answered, checked at each answer) was a blind spot of the mutation run
(rtl/tools/mutation.py). The sequences also send stale fences, rejoins whose epoch field is not
the server's after another server's walk, and a Rejoin waiting while a walk ends.
"""
from __future__ import annotations

import pytest

from apta.testbench.core_bfm import directed_report

HOLD = 12      # cycles ctrlResp is held not ready while the next flits queue behind


def _expect(ops: list[tuple], n: int, epoch_bits: int) -> tuple[list[dict], dict]:
    """The answers CORE.md promises for `ops` applied in order from reset (every server unfenced,
    epoch 0), and the status after them. An op is (opcode, server) or (opcode, server, delta):
    the flit carries the server's epoch + delta (a Fence of another epoch is stale; a Rejoin's
    epoch field is not read)."""
    fenced, epoch, out = [False] * n, [0] * n, []
    mask = (1 << epoch_bits) - 1
    for op, s, *d in ops:
        e = (epoch[s] + (d[0] if d else 0)) & mask
        if op == "Fence":
            out.append({"op": "Fence", "server": s, "epoch": e})    # echoed, current or stale
            fenced[s] = fenced[s] or e == epoch[s]
        elif epoch[s] == mask:                        # the last epoch is never left (guard rejoin.exhausted)
            fenced[s] = True
            out.append({"op": "RejoinRefused", "server": s, "epoch": epoch[s]})
        else:
            epoch[s] += 1
            fenced[s] = False
            out.append({"op": "RejoinAck", "server": s, "epoch": epoch[s]})
    return out, {"fenced": fenced, "epoch": epoch}


def _flit_epoch(ops: list[tuple], i: int, n: int, epoch_bits: int) -> int:
    """The epoch field of ops[i]: its server's epoch after the ones before it, + its delta."""
    op, s, *d = ops[i]
    return (_expect(ops[:i], n, epoch_bits)[1]["epoch"][s] + (d[0] if d else 0)) & ((1 << epoch_bits) - 1)


def sequences(s: int, n: int) -> list[list[tuple]]:
    """The flit sequences for server s (o the next one): back to back fences and rejoins; then
    stale fences (another epoch, or of a fenced server) and rejoins whose epoch field is not the
    server's, each after a walk of the other server (so the control unit's latched server differs
    from the flit's)."""
    o = (s + 1) % n
    return [[("Fence", s), ("Rejoin", s), ("Fence", o), ("Rejoin", o), ("Rejoin", s)],
            [("Fence", s, 1), ("Rejoin", o), ("Rejoin", s, 3), ("Fence", o), ("Rejoin", o, -1),
             ("Fence", s, -1), ("Fence", o), ("Rejoin", s), ("Fence", s), ("Rejoin", s, 2)],
            # a walk's last cycles with the next flit (a Rejoin of a fenced server) waiting
            [("Fence", o), ("Rejoin", s), ("Rejoin", o), ("Fence", s), ("Rejoin", o), ("Rejoin", s)]]


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def ctrl_back_to_back(dut):
        from apta.testbench.core_bfm import directed_start
        variant, p, core = directed_start(dut)
        n = p["servers"]
        fails = []
        for s, ops in ((s, ops) for s in range(n) for ops in sequences(s, n)):
            want, status = _expect(ops, n, p["epochBits"])
            await core.reset()
            got = []
            seen_status = []     # the status in the cycle each answer is taken: its effects are visible

            def grab(b):
                if b.port == "ctrlResp":
                    got.append({k: b.data.get(k) for k in ("op", "server", "epoch")})
                    st = core.read_status()
                    seen_status.append({"fenced": st["fenced"], "epoch": st["epoch"]})
            core.listeners[:] = [grab]
            for i, (op, srv, *_) in enumerate(ops):   # all queued at once: the core takes the next when it may
                core.send_ctrl(core.ctrl_flit(op, srv, _flit_epoch(ops, i, n, p["epochBits"])))
            core.ready_p = {k: 1.0 for k in core.ready_p}
            core.ready_p["ctrlResp"] = 0.0
            for _ in range(HOLD):
                await core.cycle()
            if got:
                fails.append(f"server {s}: a ctrlResp fired while not ready: {got}")
            core.ready_p["ctrlResp"] = 0.5
            await core.settle(quiet=8, waiting=lambda: len(got) < len(ops))
            if got != want:
                fails.append(f"server {s} {ops}: ctrlResp {got}, expected {want}")
            for i, st in enumerate(seen_status[:len(ops)]):
                exp = _expect(ops[:i + 1], n, p["epochBits"])[1]
                if st != exp:
                    fails.append(f"server {s} {ops}: status when {ops[i]} was answered {st}, expected {exp}")
            st = core.read_status()
            for k, v in status.items():
                if st[k] != v:
                    fails.append(f"server {s} {ops}: status.{k} {st[k]}, expected {v}")
        directed_report(variant, fails)


@pytest.mark.rtl_variants("m2s1w1", "m3s1w1", "stress")
@pytest.mark.parametrize("variant", ["m2s1w1", "m3s1w1", "stress"])
def test_ctrl_back_to_back(variant):
    from apta.testbench.core_bfm import run
    n, failed = run(variant, "test_core_ctrl", {}, results_name="ctrl.xml")
    assert n == 1 and failed == 0, f"{variant}: see build/sim/{variant}*/ctrl.xml"
