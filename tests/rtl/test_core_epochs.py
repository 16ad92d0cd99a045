"""The epoch rule (rtl/README.md "Epochs"): epochs are wide incarnation numbers that the memory
server never reuses. A server rejoins until its epoch is the last value (2^epochBits - 1); the next
Rejoin is answered RejoinRefused (guard `rejoin.exhausted` of rtl/CORE.md), the server is fenced and
stays fenced in that epoch, and the messages of its first incarnation (epoch 0, the value a
wrapping counter would grant next) are still discarded: a get of epoch 0 is dropped and a BISnp ack
of epoch 0 held back since the first incarnation pays for nothing.

Runs on `mutants_epochs` (m2s1w1 with 3-bit epochs and io_mutant, rtl/variants.json): id 0 (the
correct design) must pass every check; mutant `epoch_wraps` (the design before the rule: the epoch
wraps to 0 and is granted) must fail, and the old incarnation's ack must be seen paying for a round
of the new one (the bug the model's M_EPOCH_WRAP_UNGUARDED shows as P1_stale_copies_are_pending).

The script, for each server as the one that rejoins (s) with the other as the writer (w), from
reset, one object X (the directory's one entry):
  1. s gets X (epoch 0); w commits X: a BISnp of epoch 0 to s, whose ack A0 is held back;
  2. s rejoins (live: fence walk) and then alternately is fenced and rejoins, or rejoins live,
     until its epoch is the last value; every answer RejoinAck with the next epoch;
  3. in its last incarnation s gets X again and w commits X (a BISnp of the last epoch to s);
  4. s rejoins: RejoinRefused with the last epoch, s fenced, owing nothing;
  5. the first incarnation's traffic: s gets X with epoch 0 (Drop), w commits X (no BISnp: s is no
     sharer), A0 arrives (not applied);
  6. s rejoins again: RejoinRefused again; status and the directory as the rule says.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from apta.testbench.core_bfm import ROOT, Core, Req, load_params, variant_dir

VARIANT = "mutants_epochs"
X, BASE, SIZE = 1, 0x40, 1


def _mutant_id(name: str) -> int:
    ms = json.loads((variant_dir("mutants") / "mutants.json").read_text())
    return next(m["id"] for m in ms if m["name"] == name)


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def epochs_never_reused(dut):
        from apta.testbench.core_bfm import start_clock
        p = load_params(os.environ["APTA_VARIANT"])
        n, last = p["servers"], (1 << p["epochBits"]) - 1
        mutant = int(os.environ.get("APTA_MUTANT", "0"))
        start_clock(dut)
        core = Core(dut, p)
        fails: list[str] = []
        evidence: dict = {"granted": {}, "old_ack": {}}

        for s in range(n):
            w = (s + 1) % n
            await core.reset(mutant=mutant)
            beats: list = []
            core.listeners[:] = [lambda b: beats.append(b) if b.port in ("resp", "snp", "ctrlResp", "ackResult")
                                 else None]

            async def step(what: str, want: dict, *stimuli):
                """Send the stimuli, settle, compare the beats of each port with `want`
                (resp/ackResult as read, snp/ctrlResp as op/server/epoch/obj)."""
                beats.clear()
                for kind, x in stimuli:
                    {"req": core.send_req, "ack": core.send_ack, "ctrl": core.send_ctrl}[kind](x)
                await core.settle(quiet=4)
                got = {}
                for b in beats:
                    d = b.data if b.port in ("resp", "ackResult") else \
                        {k: b.data.get(k) for k in ("op", "server", "epoch", "obj") if k in b.data}
                    got.setdefault(b.port, []).append(d)
                for port in sorted(set(got) | set(want)):
                    if got.get(port, []) != want.get(port, []):
                        fails.append(f"server {s}, {what}: {port} {got.get(port, [])}, expected {want.get(port, [])}")
                return got

            def get(c, e):
                return ("req", Req("Get", c, e, X, BASE, SIZE))

            def commit(c, e):
                return ("req", Req("Commit", c, e, X, BASE, SIZE))

            def ctrl(op, c, e):
                return ("ctrl", core.ctrl_flit(op, c, e))

            def resp(op, c, result):
                return {"op": op, "server": c, "obj": X, "result": result}

            def snp(c, e):
                return {"op": "ObjBISnp", "server": c, "epoch": e, "obj": X}

            def ack_result(c, applied, settled):
                return {"server": c, "obj": X, "applied": applied, "settled": settled}

            # 1. the first incarnation (epoch 0): a sharer, then a round it owes an ack for
            await step("get in epoch 0", {"resp": [resp("Get", s, "Served")]}, get(s, 0))
            await step("commit invalidating s", {"resp": [resp("Commit", w, "Committed")], "snp": [snp(s, 0)]},
                       commit(w, 0))
            old_ack = ("ack", core.ack_flit(s, 0, X))       # A0: held back, in flight from now on
            # 2. every epoch value up to the last, each granted once
            epoch, granted = 0, 0
            while epoch < last:
                if epoch % 2:
                    await step(f"fence in epoch {epoch}", {"ctrlResp": [{"op": "Fence", "server": s, "epoch": epoch}]},
                               ctrl("Fence", s, epoch))
                got = await step(f"rejoin from epoch {epoch}",
                                 {"ctrlResp": [{"op": "RejoinAck", "server": s, "epoch": epoch + 1}]},
                                 ctrl("Rejoin", s, epoch))
                if got.get("ctrlResp", [{}])[0].get("op") != "RejoinAck":
                    break
                epoch, granted = epoch + 1, granted + 1
            evidence["granted"][s] = granted
            # 3. the last incarnation: a sharer again, owing an ack of the last epoch
            await step("get in the last epoch", {"resp": [resp("Get", s, "Served")]}, get(s, last))
            await step("commit in the last epoch", {"resp": [resp("Commit", w, "Committed")], "snp": [snp(s, last)]},
                       commit(w, 0))
            # 4. a Rejoin at the last value: refused, the server fenced (it owes nothing any more)
            await step("rejoin at the last epoch",
                       {"ctrlResp": [{"op": "RejoinRefused", "server": s, "epoch": last}]}, ctrl("Rejoin", s, last))
            # 5. the first incarnation's messages: still discarded
            await step("get of the first incarnation (epoch 0)", {"resp": [resp("Get", s, "Drop")]}, get(s, 0))
            await step("commit after the refusal", {"resp": [resp("Commit", w, "Committed")]}, commit(w, 0))
            got = await step("the first incarnation's held-back ack", {"ackResult": [ack_result(s, False, False)]},
                             old_ack)
            evidence["old_ack"][s] = got.get("ackResult", [])
            # 6. and again: the last epoch is never left
            await step("second rejoin at the last epoch",
                       {"ctrlResp": [{"op": "RejoinRefused", "server": s, "epoch": last}]}, ctrl("Rejoin", s, last))
            st = core.read_status()
            want_st = {"fenced": [c == s for c in range(n)], "epoch": [last if c == s else 0 for c in range(n)],
                       "pending": [False] * n}
            for k, v in want_st.items():
                if st[k] != v:
                    fails.append(f"server {s}: status.{k} {st[k]}, expected {v}")
            q = (await core.query_all([X]))[X]
            if (q["state"], q["sharers"], q["pend"]) != ("S", [w], [0] * n):
                fails.append(f"server {s}: directory of X {q['state']} sharers {q['sharers']} pend {q['pend']}, "
                             f"expected S sharers [{w}] pend {[0] * n}")
            await step("the writer is unaffected", {"resp": [resp("Get", w, "Served")]}, get(w, 0))

        out = os.environ.get("APTA_RESULT")
        if out:
            Path(out).write_text(json.dumps({"mutant": mutant, "last": last, "failed": fails, **evidence}, indent=1))
        assert not fails, "\n".join(fails)


def _run(mutant: int) -> dict:
    from apta.testbench.core_bfm import run
    out = ROOT / "build" / "coverage" / "epochs" / f"epochs-{mutant}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    n, failed = run(VARIANT, "test_core_epochs", {"APTA_MUTANT": mutant, "APTA_RESULT": out},
                    results_name=f"epochs-{mutant}.xml")
    res = json.loads(out.read_text()) if out.exists() else {"failed": ["simulation crashed"]}
    res["ok"] = n == 1 and failed == 0
    return res


@pytest.mark.rtl_variants(VARIANT, "mutants")
def test_epochs_never_reused():
    """The correct design: every epoch value 1..last granted once per server, then refused."""
    r = _run(0)
    last = (1 << load_params(VARIANT)["epochBits"]) - 1
    assert r["ok"] and not r["failed"], "\n".join(r["failed"])
    assert r["last"] == last and all(g == last for g in r["granted"].values()), r["granted"]
    assert all(a == [{"server": int(s), "obj": X, "applied": False, "settled": False}]
               for s, a in r["old_ack"].items()), r["old_ack"]


@pytest.mark.rtl_variants(VARIANT, "mutants")
def test_epoch_mutant_caught():
    """`epoch_wraps` (a Rejoin at the last value wraps to 0): caught, and the test sees why it
    matters: the first incarnation's held-back ack is applied to a round of the new epoch 0."""
    r = _run(_mutant_id("epoch_wraps"))
    assert not r["ok"], "mutant epoch_wraps passes tests/rtl/test_core_epochs.py"
    assert any("rejoin at the last epoch" in f for f in r["failed"]), r["failed"]
    assert any(a and a[0]["applied"] for a in r["old_ack"].values()), \
        f"the old incarnation's ack was not applied under epoch_wraps: {r['old_ack']}"
    print("\nepoch_wraps caught:\n  " + "\n  ".join(r["failed"][:8]))
