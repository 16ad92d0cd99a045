"""Constrained-random stress of CoherenceCore against the invariant scoreboard
(rtl/testbench/core_scoreboard.py), with functional coverage of the cells of rtl/CORE.md.

Traffic comes in batches; after each the core is run idle and every object and the status are
queried and checked. A batch is either
  * traffic: each directory set is given to requests (Get/Commit from any server, some zombie or
    with an illegal size; stalled requests retried first; at most one request per set for an
    object not in the directory, and it comes last) or to acks (acks the servers owe, from their
    BISnps, plus stale ones and acks for nothing); or
  * control: one Fence (current or stale epoch) or Rejoin, with acks of that server racing it.
Every batch may carry illegal flits on ack/ctrl. Output backpressure is random per batch on
resp, snp and ctrlResp. A few servers go silent (never ack); the failure detector fences a server
whose acks are overdue, and fenced servers rejoin later. Liveness: a stalled request must complete
(Served/Committed/Drop) within RETRY_MAX retries.

Env: APTA_OPS (operations: accepted req/ack/ctrl beats), APTA_SEED, APTA_MUTANT (mutants variant),
APTA_RESULT (json written at the end: ops, cycles, coverage, first violation).
"""
from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest


from apta.testbench.core_bfm import ROOT, Core, Req, load_params, set_of
from apta.testbench.core_scoreboard import illegal_flit
from apta.testbench.runs import run_stress as _run_stress

from apta import cells

RETRY_MAX = 100
FD_PATIENCE = 25            # batches a silent server may owe an ack before it is fenced


def object_pool(p: dict) -> dict:
    """obj -> (base, size): 3 objects per set in the first two sets (evictions, full sets), and a
    few more spread over other sets."""
    sets, ways = p["dirSets"], p["dirWays"]
    per = ways + 1
    objs = []
    for s in range(min(sets, 2)):
        objs += [s + k * sets for k in range(1, per + 1)]
    objs += [s + sets for s in range(2, min(sets, 6))]
    rng = random.Random(7)
    return {o: (4096 * o, rng.randint(1, p["linesPerObject"])) for o in objs}


class Stress:
    def __init__(self, core: Core, sb, rng, objects, ops):
        self.core, self.sb, self.rng, self.objects, self.ops_goal = core, sb, rng, objects, ops
        self.p = core.p
        n = self.n = self.p["servers"]
        self.silent = [False] * n
        self.owed = [[] for _ in range(n)]         # (obj, epoch, batch) from BISnps seen
        self.stale = []                            # (server, obj, epoch) acks that must be discarded
        self.fenced_at = [None] * n
        self.retry = []                            # [Req, tries]
        self.batch = 0
        self.ops = 0
        self.draining = False
        self.stats = Counter()
        self.sets = sorted({set_of(self.p, o) for o in objects})
        # APTA_TRACE_LOG (trace validation, rtl/tools/core_trace.py): no acks for nothing owed and no
        # zombie acks of an older epoch, which no compute server of the spec sends (the random stream
        # is the same either way: only the sending is skipped)
        self.protocol_only = bool(os.environ.get("APTA_TRACE_LOG"))
        core.listeners.append(self.on_beat)
        sb.on_resp = self.on_resp
        sb.on_ctrl = self.on_ctrl

    # ---- observers ---------------------------------------------------------------------------
    def on_beat(self, b):
        if b.port.endswith(".fire"):
            self.ops += 1
        elif b.port == "snp":
            d = b.data
            self.owed[d["server"]].append((d["obj"], d["epoch"], self.batch))

    def on_resp(self, r, result):
        tries = r.tag or 0
        self.stats[result] += 1
        if result == "Stall":
            if tries + 1 > RETRY_MAX:
                self.sb.fail("liveness", f"request {r} stalled {tries + 1} times")
            self.retry.append([r, tries + 1])

    def on_ctrl(self, name, c, epoch):
        if name == "Rejoin" or self.sb.fenced[c]:
            for (o, ep, _) in self.owed[c]:
                self.stale.append((c, o, ep))
            self.owed[c] = []
            self.silent[c] = False
        self.fenced_at[c] = self.batch if self.sb.fenced[c] else None
        del self.stale[:-40]

    # ---- stimulus pieces -----------------------------------------------------------------------
    def new_req(self, obj, server=None):
        rng, sb = self.rng, self.sb
        c = rng.randrange(self.n) if server is None else server
        ep = sb.epoch[c]
        if rng.random() < 0.04:
            ep = (ep - 1 - rng.randrange(2)) & sb.emask     # a zombie of an older epoch
        base, size = self.objects[obj]
        if rng.random() < 0.015:
            size = rng.choice([0, self.p["linesPerObject"] + 1]) & ((1 << self.S_size_bits()) - 1)
        return Req("Get" if rng.random() < 0.55 else "Commit", c, ep, obj, base, size, 0)

    def S_size_bits(self):
        return self.core.S.messages["ObjBISnp"].fields[-1].width

    def illegal_flit(self, ch):
        return illegal_flit(self.core.S, self.rng, ch)

    def pick_acks(self, servers_ok, obj_ok, p_take=0.7):
        core, rng = self.core, self.rng
        out = []
        for c in range(self.n):
            if not servers_ok(c) or self.silent[c]:
                continue
            keep = []
            for (o, ep, bt) in self.owed[c]:
                if obj_ok(o) and rng.random() < p_take:
                    out.append(core.ack_flit(c, ep, o))
                else:
                    keep.append((o, ep, bt))
            self.owed[c] = keep
        rng.shuffle(out)
        return out

    # ---- batches -------------------------------------------------------------------------------
    def control_batch(self):
        rng, sb, core = self.rng, self.sb, self.core
        overdue = self.overdue()
        fenced = [c for c in range(self.n) if sb.fenced[c]]
        if overdue:
            c, op, ep = overdue[0], "Fence", sb.epoch[overdue[0]]
        elif fenced and rng.random() < 0.6:
            c = rng.choice(fenced)
            op, ep = "Rejoin", rng.randrange(1 << self.p["epochBits"])
        else:
            c = rng.randrange(self.n)
            k = rng.random()
            if k < 0.5:
                op, ep = "Fence", sb.epoch[c]                       # false suspicion
            elif k < 0.75:
                op, ep = "Fence", (sb.epoch[c] - 1) & sb.emask      # stale fence: ignored
            else:
                op, ep = "Rejoin", sb.epoch[c]
        acks = self.pick_acks(lambda x: x == c, lambda o: True, 0.5)
        flits = [core.ctrl_flit(op, c, ep)]
        pos = rng.randrange(len(acks) + 1)
        for f in acks[:pos]:
            core.send_ack(f)
        core.send_ctrl(flits[0])
        for f in acks[pos:]:
            core.send_ack(f)
        self.stats[f"ctrl.{op}"] += 1

    def traffic_batch(self):
        rng, sb, core = self.rng, self.sb, self.core
        if self.draining:           # alternate: acks everywhere, then the retries alone
            owner = {s: ("req" if self.batch % 2 else "ack") for s in self.sets}
        else:
            owner = {s: ("req" if rng.random() < 0.55 else "ack") for s in self.sets}
        # acks
        acks = self.pick_acks(lambda c: True, lambda o: owner[set_of(self.p, o)] == "ack",
                              1.0 if self.draining else 0.7)
        if self.stale and rng.random() < 0.3:
            c, o, ep = self.stale.pop(rng.randrange(len(self.stale)))
            if owner[set_of(self.p, o)] == "ack" and (sb.fenced[c] or ep != sb.epoch[c]):
                acks.insert(rng.randrange(len(acks) + 1), core.ack_flit(c, ep, o))
        if rng.random() < 0.05:                      # a zombie ack: an older epoch of a server that owes
            owing = [(c, o) for o in self.objects for c in range(self.n)   # an ack for o in its current one
                     if owner[set_of(self.p, o)] == "ack" and not sb.fenced[c] and sb.epoch[c] > 0
                     and sb.e[o].pend[c] > 0]                # (ack.stale.owing: must not pay for it)
            if owing:
                c, o = rng.choice(owing)
                pos = rng.randrange(len(acks) + 1)
                if not self.protocol_only:
                    acks.insert(pos, core.ack_flit(c, sb.epoch[c] - 1, o))
        if rng.random() < 0.1:                       # an ack for nothing owed
            objs = [o for o in self.objects if owner[set_of(self.p, o)] == "ack"]
            if objs:
                o, c = rng.choice(objs), rng.randrange(self.n)
                if not self.protocol_only:
                    acks.append(core.ack_flit(c, sb.epoch[c], o))
        # requests, per request-owned set
        reqs = []
        retry, self.retry = self.retry, []
        for s in self.sets:
            if owner[s] != "req":
                self.retry += [x for x in retry if set_of(self.p, x[0].obj) == s]
                continue
            mine = [x for x in retry if set_of(self.p, x[0].obj) == s]
            resident = [o for o in self.objects if set_of(self.p, o) == s and sb.e[o].st != "I"]
            absent = [o for o in self.objects if set_of(self.p, o) == s and sb.e[o].st == "I"]
            first, last = [], None
            for r, tries in mine:
                c = r.server
                if sb.fenced[c] and rng.random() < 0.7 or r.epoch != sb.epoch[c] and rng.random() < 0.7:
                    continue                          # the server gave up / rejoined: request gone
                r2 = Req(r.op, c, r.epoch, r.obj, r.base, r.size, tries)
                if sb.e[r.obj].st == "I":
                    if last is None:
                        last = r2
                    else:
                        self.retry.append([r, tries - 1])
                else:
                    first.append(r2)
            starving = any(t > 8 for _, t in mine)    # let the set drain so the retry can win
            for _ in range(0 if starving or self.draining else rng.randrange(5)):
                if resident:
                    first.append(self.new_req(rng.choice(resident)))
            if last is None and absent and not self.draining and rng.random() < 0.6:
                last = self.new_req(rng.choice(absent))
            reqs += first + ([last] if last else [])
        # silence
        if rng.random() < 0.01 and not self.draining:
            live = [c for c in range(self.n) if not sb.fenced[c] and not self.silent[c]]
            if len(live) > 1 and sum(self.silent) < 2:
                self.silent[rng.choice(live)] = True
        # send (requests grouped per set are independent of each other's order; keep it)
        for r in reqs:
            core.send_req(r)
        for f in acks:
            core.send_ack(f)
        if rng.random() < 0.05:
            core.send_ack(self.illegal_flit(0))
        if rng.random() < 0.03:
            core.send_ctrl(self.illegal_flit(1))

    async def run(self):
        rng, core, sb = self.rng, self.core, self.sb
        objs = sorted(self.objects)
        while self.ops < self.ops_goal:
            self.batch += 1
            sb.where = f"batch {self.batch} (cycle {core.cycle_no})"
            pats = [1.0, 1.0, 0.8, 0.5, 0.2]
            core.ready_p = {k: rng.choice(pats) for k in core.ready_p}
            if self.overdue() or rng.random() < 0.08:
                self.control_batch()
            else:
                self.traffic_batch()
            await self.finish_batch(objs)
        await self.drain(objs)
        return core.cycle_no

    def overdue(self):
        sb = self.sb
        patience = 0 if self.draining else FD_PATIENCE
        return [c for c in range(self.n) if not sb.fenced[c] and self.silent[c]
                and any(self.batch - bt > patience for (_, _, bt) in self.owed[c])]

    async def finish_batch(self, objs):
        core, sb = self.core, self.sb
        await core.settle(quiet=4, waiting=lambda: sb.reqs or sb.acks or sb.ctrls)
        q = await core.query_all(objs)
        sb.resolve_evictions(q)
        sb.check_quiet()
        sb.check_state(q, core.read_status())

    async def drain(self, objs, limit=400):
        """Liveness: no new requests; silent servers are fenced, every ack is delivered, stalled
        requests are retried. Every entry must settle to I or S and every retry complete."""
        self.draining = True
        sb = self.sb
        for _ in range(limit):
            stable = all(e.st in ("I", "S") for e in sb.e.values())
            owed = any(self.owed[c] for c in range(self.n) if not self.silent[c] and not sb.fenced[c])
            if stable and not self.retry and not owed:
                break
            self.batch += 1
            sb.where = f"drain batch {self.batch} (cycle {self.core.cycle_no})"
            self.core.ready_p = {k: 1.0 for k in self.core.ready_p}
            if self.overdue():
                self.control_batch()
            else:
                self.traffic_batch()
            await self.finish_batch(objs)
        else:
            sb.fail("liveness", f"after {limit} drain batches: entries "
                    f"{ {o: e.st for o, e in sb.e.items()} }, retries {[r for r, _ in self.retry]}")
        status = self.core.read_status()
        if any(status["pending"]):
            sb.fail("liveness", f"drained but status.pending = {status['pending']}")


# ---- the cocotb test ---------------------------------------------------------------------------
try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def core_stress(dut):
        from apta.testbench.core_bfm import start_clock
        from apta.testbench.core_scoreboard import Scoreboard, Violation
        variant = os.environ["APTA_VARIANT"]
        p = load_params(variant)
        seed = int(os.environ.get("APTA_SEED", "1"))
        ops = int(os.environ.get("APTA_OPS", "10000"))
        mutant = int(os.environ.get("APTA_MUTANT", "0"))
        rng = random.Random(seed)
        start_clock(dut)
        core = Core(dut, p, rng)
        objects = object_pool(p)
        sb = Scoreboard(p, core.S, objects)
        core.listeners.append(sb)
        await core.reset(mutant=mutant)
        tracer, log_path = None, os.environ.get("APTA_TRACE_LOG")
        if log_path:                         # the event log for trace validation (core_trace.py)
            from apta.rtl.core_trace import CoreTrace
            tracer = CoreTrace(core, objects, {"source": f"rtl-core:{variant}", "seed": seed,
                                               "variant": variant, "mutant": mutant, "ops_goal": ops})
            untraced = core.cycle

            async def traced_cycle():
                beats = await untraced()
                tracer.on_cycle(beats)
                return beats
            core.cycle = traced_cycle
        st = Stress(core, sb, rng, objects, ops)
        t0 = time.time()
        result = {"variant": variant, "seed": seed, "mutant": mutant, "ops_goal": ops}
        try:
            await st.run()
            result["violation"] = None
        except Violation as e:
            result["violation"] = {"check": e.check, "text": str(e)}
            raise
        except AssertionError as e:
            result["violation"] = {"check": "hang/protocol", "text": str(e)}
            raise
        finally:
            if tracer:
                tracer.write(Path(log_path))
            result.update(ops=st.ops, batches=st.batch, cycles=core.cycle_no,
                          seconds=round(time.time() - t0, 1), cells=dict(sb.cov),
                          extra=dict(sb.extra), results=dict(st.stats))
            out = os.environ.get("APTA_RESULT")
            if out:
                Path(out).parent.mkdir(parents=True, exist_ok=True)
                Path(out).write_text(json.dumps(result, indent=1, sort_keys=True))
        dut._log.info("stress: %d ops, %d batches, %d cycles, %.1fs; cells %s",
                      st.ops, st.batch, core.cycle_no, time.time() - t0, dict(sb.cov))


# ---- pytest side --------------------------------------------------------------------------------
# Cells the random run cannot reach on the CoherenceCore ports, with the reason (none today).
EXCLUDED: dict = {}

STRESS_OPS = int(os.environ.get("APTA_STRESS_OPS", "100000"))
DEFAULT_OPS = int(os.environ.get("APTA_STRESS_DEFAULT_OPS", "10000"))


@pytest.mark.rtl_variants("default")
def test_stress_default_variant():
    res = _run_stress("default", DEFAULT_OPS, int(os.environ.get("APTA_SEED", "2")), "default")
    assert res["ops"] >= DEFAULT_OPS


@pytest.mark.rtl_variants("stress")
def test_stress_and_coverage():
    """>= 100k operations on the stress variant; every cell of python/apta/cells.py hit (build/coverage/rtl.json)."""
    res = _run_stress("stress", STRESS_OPS, int(os.environ.get("APTA_SEED", "1")), "stress")
    assert res["ops"] >= STRESS_OPS
    counts = {c: res["cells"].get(c, 0) for c in cells.ids()}
    cov = {"variant": "stress", "ops": res["ops"], "cycles": res["cycles"], "seconds": res["seconds"],
           "cells": counts, "excluded": EXCLUDED, "outside_table": res["extra"] | {
               k: v for k, v in res["cells"].items() if k not in counts},
           "missed": [c for c, k in counts.items() if k == 0 and c not in EXCLUDED]}
    from apta.testbench.core_bfm import rtl_dir_overridden, rtl_root
    name = f"rtl-{rtl_root().name}.json" if rtl_dir_overridden() else "rtl.json"
    out = ROOT / "build" / "coverage" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(cov, indent=1))
    assert not cov["missed"], f"cells never hit by the random run: {cov['missed']} (see {out})"
