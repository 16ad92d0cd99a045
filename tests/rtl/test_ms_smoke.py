"""Smoke test of the memory-server top (rtl/MEMSERVER.md) on the `ms3` variant: DRAM is
cocotbext-axi's AxiRam. Gets of an initial object, put then get (new version), a put to an object
with a sharer sends ObjBISnp, staging full -> PutRetry, a fence aborts an open put (bad input and the dispatcher: test_ms_ports.py).
The tests run in file order and a mutant's run ends at its first failure, so the slowest
(stalled_get_pins_nothing's sweep, 4 s of the 12) comes last.
"""
from __future__ import annotations

import os

import pytest

from apta.testbench.ms_directed import (VARIANT, BASE, obj_base, val, setup, pins_only_when_served, malformed_ack, flood_malformed_acks, data_of, keep_open, full_set, full_set_shared, watch_opc, slot_beside_answers, beside_a_stall, both_slots_free)


try:
    import cocotb
except ImportError:          # collected by pytest without cocotb: only the runner below matters
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def get_put_get_snoop(dut):
        ms = await setup(dut, {1: 3, 2: 8})
        ms.send(0, "ObjGet", epoch=0, obj=1)
        await ms.settle()
        assert data_of(ms, 0, 1) == [val(1, 0, l) for l in range(3)], ms.rsp
        lines = [f["line"] for _n, f in ms.rsp if _n == "ObjData"]
        assert lines == [0, 1, 2], f"lines in order: {lines}"
        # server 1 puts a new version of obj 1 (server 0 is a sharer -> ObjBISnp to 0)
        ms.send(1, "PutPrepare", epoch=0, obj=1, txn=5)
        for l in (2, 0, 1):
            ms.send(1, "PutLine", epoch=0, obj=1, txn=5, line=l, data=val(1, 1, l))
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=1, obj=1, txn=5), ms.rsp
        assert [f for n, f in ms.snp if n == "ObjBISnp" and f["server"] == 0 and f["obj"] == 1], ms.snp
        assert int(dut.io_status_pending.value) & 1, "server 0 owes an ack"
        assert int(dut.io_status_commitSeq.value) == 1
        # the contract: as the PutCommit leaves, the sequence number has advanced and the sharer's
        # pending invalidation is visible
        k = [i for i, (n, f) in enumerate(ms.rsp) if n == "PutCommit" and f["server"] == 1][0]
        assert ms.rsp_status[k]["commitSeq"] == 1 and ms.rsp_status[k]["pending"] & 1, \
            f"PutCommit left before the commit took effect: status {ms.rsp_status[k]}"
        assert ms.read_obj(obj_base(1), 3) == [val(1, 1, l) for l in range(3)], "drained to DRAM"
        ms.send(2, "ObjGet", epoch=0, obj=1)
        await ms.settle()
        assert data_of(ms, 2, 1) == [val(1, 1, l) for l in range(3)]
        ms.ack(0, 0, 1)
        await ms.settle()
        assert int(dut.io_status_pending.value) == 0
        # 8-line object: one ObjData per cycle once streaming (translation cached after this get)
        for rep in range(2):
            first, c0 = len(ms.rsp), ms.cycles
            ms.send(0, "ObjGet", epoch=0, obj=2)
            await ms.settle()
            cyc = ms.rsp_cycle[first:]
            dut._log.info(f"8-line get #{rep}: ObjGet offered at cycle 0, first ObjData at {cyc[0] - c0}")
            assert len(cyc) == 8 and cyc[-1] - cyc[0] == 7, f"not one line per cycle: {cyc}"
        dut._log.info(f"8-line get: lines at cycles {[c - cyc[0] for c in cyc]}")
        # 8-line object, under rsp backpressure
        ms.bp = 0.3
        ms.send(1, "ObjGet", epoch=0, obj=2)
        await ms.settle()
        assert data_of(ms, 1, 2) == [val(2, 0, l) for l in range(8)]
        assert not ms.err, ms.err

    @cocotb.test()
    async def stalled_get_then_served_or_dropped(dut):
        """get.owes (the core's Stall): a get from a server that owes an ack for the object gets no
        data, its port waits, and it is retried (round-robin, stallBackoff) until the ack comes, then
        served with the new version. A stalled get whose server is fenced meanwhile is a zombie at
        the core (Drop): nothing is sent, the OSC lets it go, and the server's get after its rejoin
        is served."""
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {1: 3})
        for rnd, (how, e) in enumerate((("ack", 0), ("fence", 0))):
            v = rnd + 1
            ms.send(0, "ObjGet", epoch=e, obj=1)
            await ms.settle()
            ms.send(1, "PutPrepare", epoch=0, obj=1, txn=v)
            for l in range(3):
                ms.send(1, "PutLine", epoch=0, obj=1, txn=v, line=l, data=val(1, v, l))
            await ms.settle()
            assert ms.rsp_of("PutCommit", server=1, obj=1, txn=v) and int(dut.io_status_pending.value) & 1, ms.rsp
            for _n, f in [x for x in ms.snp if x[1]["server"] == 2]:   # server 2 (a sharer since round 0) acks
                ms.ack(2, f["epoch"], f["obj"])
            ms.snp.clear()
            n = len(ms.rsp_of("ObjData", server=0, obj=1))
            ms.send(0, "ObjGet", epoch=e, obj=1)           # server 0 still owes the ack: Stall
            await ClockCycles(dut.clock, 300)
            assert len(ms.rsp_of("ObjData", server=0, obj=1)) == n and not int(dut.io_idle.value), \
                f"round {rnd}: a get of a server owing an ack was answered, or given up: {ms.rsp[-4:]}"
            n2 = len(ms.rsp_of("ObjData", server=2, obj=1))
            ms.send(2, "ObjGet", epoch=0, obj=1)           # another server's get is not held up by it
            await ClockCycles(dut.clock, 100)
            got2 = sorted(ms.rsp_of("ObjData", server=2, obj=1)[n2:], key=lambda f: f["line"])
            assert [f["data"] for f in got2] == [val(1, v, l) for l in range(3)], f"round {rnd}: {got2}"
            if how == "ack":
                ms.ack(0, e, 1)
                await ms.settle()
                got = sorted(ms.rsp_of("ObjData", server=0, obj=1)[n:], key=lambda f: f["line"])
                assert [f["data"] for f in got] == [val(1, v, l) for l in range(3)], f"round {rnd}: {got}"
            else:
                ms.ctrl("Fence", 0, e)
                await ms.settle()
                assert len(ms.rsp_of("ObjData", server=0, obj=1)) == n, "a fenced server's stalled get was answered"
                ms.send(0, "Rejoin", epoch=e)
                await ms.settle()
                assert ms.rsp_of("RejoinAck", server=0, epoch=e + 1), ms.rsp
                ms.send(0, "ObjGet", epoch=e + 1, obj=1)
                await ms.settle()
                got = [f for f in ms.rsp_of("ObjData", server=0, obj=1)[n:]]
                assert [f["data"] for f in sorted(got, key=lambda f: f["line"])] == [val(1, v, l) for l in range(3)] \
                    and all(f["epoch"] == e + 1 for f in got), f"after the rejoin: {got}"

    @cocotb.test()
    async def round_robin_serves_every_port(dut):
        """MEMSERVER.md OSC: pending gets are served round-robin over servers. Every server keeps K
        gets queued on its port: in the order the gets are served (their first ObjData), no server
        is served twice in a row while another still has gets, and every window of n services
        while all have gets holds every server (no port starves)."""
        K = 6
        from apta.testbench.core_bfm import load_params
        ms = await setup(dut, {o: 2 for o in range(1, load_params(VARIANT)["servers"] + 1)})
        n = ms.n
        for _ in range(K):
            for s in range(n):
                ms.send(s, "ObjGet", epoch=0, obj=s + 1)
        await ms.settle(limit=20000)
        order = [f["server"] for name, f in ms.rsp if name == "ObjData" and f["line"] == 0]
        assert sorted(order) == sorted(list(range(n)) * K), order
        left = {s: K for s in range(n)}
        for i, s in enumerate(order):
            if i and order[i - 1] == s:
                assert all(left[o] == 0 for o in range(n) if o != s), f"server {s} served twice in a row at {i}: {order}"
            if all(left.values()) and i + n <= len(order):
                window = order[i:i + n]
                assert sorted(window) == list(range(n)), f"services {i}..{i + n - 1} {window} miss a server: {order}"
            left[s] -= 1

    @cocotb.test()
    async def stall_retry_period(dut):
        """MEMSERVER.md OSC: a stalled get is retried after a `stallBackoff`-cycle pause, and only its
        own port pauses. White-box (the OSC's core port, public under Verilator), for each port k:
        (A) k owes an ack and its get stalls alone: every retry reaches the core exactly
        stallBackoff cycles later than a fresh get would (L_k, the first try's latency from its
        acceptance); (B) the next port owes an ack and stalls again and again while k's plain gets
        come one by one: each of k's gets reaches the core L_k cycles after it was accepted or after
        the Stall answer that freed the OSC, never a back-off later."""
        import cocotb
        from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
        ms = await setup(dut, {1: 2, 2: 2, 3: 2})
        n, back = ms.n, ms.P["stallBackoff"]
        from apta import schema
        STALL = schema.enum("ReqResult").index("Stall")
        o = dut.osc
        ev: list[tuple[str, int, int]] = []             # (acc | req | stall, server, cycle)
        clk = {"c": 0}

        async def watch():
            while True:
                await RisingEdge(dut.clock)
                await ReadOnly()
                clk["c"] += 1
                c = clk["c"]
                if int(o.io_get_valid.value) and int(o.io_get_ready.value):
                    ev.append(("acc", int(o.io_get_bits_server.value), c))
                if int(o.io_coreReq_valid.value) and int(o.io_coreReq_ready.value):
                    ev.append(("req", int(o.io_coreReq_bits_server.value), c))
                if int(o.io_coreResp_valid.value) and int(o.io_coreResp_ready.value) \
                        and int(o.io_coreResp_bits_result.value) == STALL:
                    ev.append(("stall", int(o.io_coreResp_bits_server.value), c))
        cocotb.start_soon(watch())
        version = {}

        async def owe(k: int):
            """k reads its object k + 1, then another server commits a new version: k owes the ack
            (everyone else acks at once)."""
            x, w = k + 1, (k + 1) % n
            ms.send(k, "ObjGet", epoch=0, obj=x)
            await ms.settle()
            version[x] = version.get(x, 0) + 1
            snp0 = len(ms.snp)
            ms.send(w, "PutPrepare", epoch=0, obj=x, txn=version[x])
            for l in range(2):
                ms.send(w, "PutLine", epoch=0, obj=x, txn=version[x], line=l, data=val(x, version[x], l))
            await ms.settle()
            for _n, f in ms.snp[snp0:]:
                if f["server"] != k:
                    ms.ack(f["server"], f["epoch"], f["obj"])
            await ms.settle()

        for k in range(n):
            # (A) k stalls alone
            await owe(k)
            e0 = len(ev)
            ms.send(k, "ObjGet", epoch=0, obj=k + 1)
            await ClockCycles(dut.clock, 150)
            e = [(t, c) for t, s_, c in ev[e0:] if s_ == k]
            acc = next(c for t, c in e if t == "acc")
            reqs, stalls = [c for t, c in e if t == "req"], [c for t, c in e if t == "stall"]
            L = reqs[0] - acc
            periods = [r - st for st, r in zip(stalls, reqs[1:])]
            assert len(periods) >= 4 and periods == [L + back] * len(periods), \
                f"port {k}: a fresh get reaches the core {L} cycles after its acceptance, so each retry " \
                f"must come {L + back} cycles after its Stall; got {periods}"
            ms.ack(k, 0, k + 1)
            await ms.settle()
            # (B) the next port stalls again and again; k's plain gets must not pause
            j = (k + 1) % n
            await owe(j)
            ms.send(j, "ObjGet", epoch=0, obj=j + 1)
            await ClockCycles(dut.clock, 20)
            for i in range(6):
                e0 = len(ev)
                ms.send(k, "ObjGet", epoch=0, obj=k + 1)
                for _ in range(200):
                    await RisingEdge(dut.clock)
                    if any(t == "req" and s_ == k for t, s_, _c in ev[e0:]):
                        break
                acc = next(c for t, s_, c in ev[e0:] if t == "acc" and s_ == k)
                req = next(c for t, s_, c in ev[e0:] if t == "req" and s_ == k)
                # was the OSC busy with j's try when k's get came? then it is free at that try's Stall
                busy = [c for t, s_, c in ev if t == "stall" and s_ == j and acc <= c < req]
                start = max([acc] + busy)
                assert req - start == L, \
                    f"port {k}, get {i}: accepted at {acc}, OSC free at {start}, Get at {req}: {req - start} " \
                    f"cycles, not {L} (port {j} stalling beside it)"
                await ClockCycles(dut.clock, 3 + 5 * i)    # k's next get at another phase of j's retries
            ms.ack(j, 0, j + 1)
            await ms.settle()

    @cocotb.test()
    async def staging_full_and_fence(dut):
        ms = await setup(dut, {2: 2, 3: 2, 4: 2})
        ms.send(0, "PutPrepare", epoch=0, obj=2, txn=1)
        ms.send(0, "PutLine", epoch=0, obj=2, txn=1, line=0, data=val(2, 9, 0))   # 1 of 2 lines
        ms.send(1, "PutPrepare", epoch=0, obj=3, txn=1)
        await ms.settle()
        ms.send(2, "PutPrepare", epoch=0, obj=4, txn=7)                           # 2 slots: full
        await ms.settle()
        assert ms.rsp_of("PutRetry", server=2, obj=4, txn=7), ms.rsp
        # fence server 0: its open put is discarded, its slot free again
        ms.ctrl("Fence", 0, 0)
        await ms.settle()
        assert [f for n, f in ms.ctrlResp if n == "Fence" and f["server"] == 0], ms.ctrlResp
        assert [e for e in ms.err if e["code"] == "fenceAbort" and e["server"] == 0], ms.err
        ms.send(0, "PutLine", epoch=0, obj=2, txn=1, line=1, data=val(2, 9, 1))   # zombie line
        ms.send(2, "PutPrepare", epoch=0, obj=4, txn=8)
        ms.send(2, "PutLine", epoch=0, obj=4, txn=8, line=0, data=val(4, 1, 0))
        ms.send(2, "PutLine", epoch=0, obj=4, txn=8, line=1, data=val(4, 1, 1))
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=2, obj=4, txn=8), ms.rsp
        assert [e for e in ms.err if e["code"] == "zombie" and e["server"] == 0], ms.err
        assert not ms.rsp_of("PutCommit", server=0), "the fenced writer never commits"
        ms.send(1, "ObjGet", epoch=0, obj=2)
        await ms.settle()
        assert data_of(ms, 1, 2) == [val(2, 0, l) for l in range(2)], "no partial object"
        # the fenced server rejoins on its own port
        ms.send(0, "Rejoin", epoch=0)
        await ms.settle()
        assert ms.rsp_of("RejoinAck", server=0, epoch=1), ms.rsp

    @cocotb.test()
    async def get_forwards_draining_put(dut):
        """DRAM writes held back: a get after the PutCommit is served from the draining slot."""
        from cocotb.triggers import RisingEdge
        ms = await setup(dut, {5: 4})
        ms.ram.write_if.w_channel.pause = True            # the drain cannot reach DRAM
        ms.send(0, "PutPrepare", epoch=0, obj=5, txn=2)
        for l in range(4):
            ms.send(0, "PutLine", epoch=0, obj=5, txn=2, line=l, data=val(5, 1, l))
        for _ in range(200):
            await RisingEdge(dut.clock)
            if ms.rsp_of("PutCommit", server=0, obj=5):
                break
        assert ms.rsp_of("PutCommit", server=0, obj=5), "PutCommit does not wait for the drain"
        ms.send(1, "ObjGet", epoch=0, obj=5)
        for _ in range(200):
            await RisingEdge(dut.clock)
            if len(data_of(ms, 1, 5)) == 4:
                break
        assert data_of(ms, 1, 5) == [val(5, 1, l) for l in range(4)], "forwarded from staging"
        assert ms.read_obj(obj_base(5), 4) == [val(5, 0, l) for l in range(4)], "DRAM still old"
        ms.ram.write_if.w_channel.pause = False
        await ms.settle()
        assert ms.read_obj(obj_base(5), 4) == [val(5, 1, l) for l in range(4)]
        ms.send(2, "ObjGet", epoch=0, obj=5)
        await ms.settle()
        assert data_of(ms, 2, 5) == [val(5, 1, l) for l in range(4)]
        assert not ms.err, ms.err

    @cocotb.test()
    async def no_torn_get(dut):
        """A put of the object completes while a get of it is half read (DRAM read data held back):
        the get returns one version (P2), the commit waits for the stream (the OSC/OPC interlock).
        Twice: after a Served answer of the core, and while another server's get is stalled (the
        core's answers around the get are Stalls: the interlock must hold whatever the core's answer
        port showed before the get's own answer)."""
        from cocotb.triggers import ClockCycles, RisingEdge
        ms = await setup(dut, {7: 8, 8: 2, 9: 8})
        for rnd, (o, writer, staller) in enumerate(((7, 0, None), (9, 2, 0))):
            ms.send(2, "ObjGet", epoch=0, obj=o)             # warms the translation cache
            await ms.settle()
            if staller is not None:                        # server 0 owes an ack for obj 8: its get stalls
                ms.send(staller, "ObjGet", epoch=0, obj=8)
                await ms.settle()
                ms.send(1, "PutPrepare", epoch=0, obj=8, txn=9)
                for l in range(2):
                    ms.send(1, "PutLine", epoch=0, obj=8, txn=9, line=l, data=val(8, 1, l))
                await ms.settle()
                ms.send(staller, "ObjGet", epoch=0, obj=8)
                await ClockCycles(dut.clock, 40)
            ms.ram.read_if.r_channel.pause = True            # AxiRam reads ~2 lines, then blocks
            n = len(ms.rsp_of("ObjData", server=1, obj=o))
            ms.send(1, "ObjGet", epoch=0, obj=o)
            for _ in range(30):
                await RisingEdge(dut.clock)
            ms.send(writer, "PutPrepare", epoch=0, obj=o, txn=1)
            for l in range(8):
                ms.send(writer, "PutLine", epoch=0, obj=o, txn=1, line=l, data=val(o, 1, l))
            for _ in range(100):
                await RisingEdge(dut.clock)
            ms.ram.read_if.r_channel.pause = False
            unpause = ms.cycles
            if staller is not None:
                ms.ack(staller, 0, 8)
            await ms.settle()
            got = [f["data"] for f in sorted(ms.rsp_of("ObjData", server=1, obj=o)[n:], key=lambda f: f["line"])]
            dut._log.info(f"no_torn_get round {rnd}: versions {[(d >> 20) & 0xFFFFF for d in got]}, err {ms.err} "
                          f"unpaused at {unpause}")
            assert got in ([val(o, 0, l) for l in range(8)], [val(o, 1, l) for l in range(8)]), \
                f"round {rnd}: torn object: versions {[(d >> 20) & 0xFFFFF for d in got]}"
            assert ms.rsp_of("PutCommit", server=writer, obj=o, txn=1), ms.rsp
            assert ms.read_obj(obj_base(o), 8) == [val(o, 1, l) for l in range(8)]
            if staller is not None:
                last = sorted(ms.rsp_of("ObjData", server=staller, obj=8)[-2:], key=lambda f: f["line"])
                assert [f["data"] for f in last] == [val(8, 1, l) for l in range(2)], ms.rsp[-4:]

    @cocotb.test()
    async def pinned_slot_outlives_its_drain(dut):
        """MEMSERVER.md OPC Draining: a slot is free when every B arrived *and* no get has it pinned.
        A get served from a draining slot, whose stream the response channel holds up, keeps the slot
        after its drain ends: a put that finds no other free slot is answered PutRetry (it must not
        take the slot and overwrite the lines still to be streamed), and the get gets the committed
        version whole. The put drains from slot 0, then from slot 1 (another writer's open put holds
        slot 0 first)."""
        from cocotb.triggers import ClockCycles, RisingEdge
        ms = await setup(dut, {5: 4, 6: 2, 4: 2})
        ms.ack_every_snoop()                                # the reader of the first round acks
        for slot in (0, 1):
            v, t = 1 + slot, 1 + 4 * slot
            if slot:                                        # takes slot 0, stays open
                ms.send(2, "PutPrepare", epoch=0, obj=6, txn=t)
                held_open = keep_open(ms, 2, 6, t)
                await ClockCycles(dut.clock, 20)
            ms.ram.write_if.w_channel.pause = True         # the drain cannot reach DRAM yet
            ms.send(0, "PutPrepare", epoch=0, obj=5, txn=t + 1)
            for l in range(4):
                ms.send(0, "PutLine", epoch=0, obj=5, txn=t + 1, line=l, data=val(5, v, l))
            for _ in range(200):
                await RisingEdge(dut.clock)
                if ms.rsp_of("PutCommit", server=0, obj=5, txn=t + 1):
                    break
            assert ms.rsp_of("PutCommit", server=0, obj=5, txn=t + 1), ms.rsp
            n1 = len(ms.rsp_of("ObjData", server=1, obj=5))
            ms.stalled.add("rsp")
            ms.send(1, "ObjGet", epoch=0, obj=5)            # served from the draining slot, held up
            await ClockCycles(dut.clock, 60)
            ms.ram.write_if.w_channel.pause = False        # the drain ends while the stream waits
            await ClockCycles(dut.clock, 60)
            assert ms.read_obj(obj_base(5), 4) == [val(5, v, l) for l in range(4)], "the drain did not end"
            if not slot:                                    # takes the other slot, stays open
                ms.send(2, "PutPrepare", epoch=0, obj=6, txn=t)
                held_open = keep_open(ms, 2, 6, t)
                await ClockCycles(dut.clock, 20)
            ms.send(2, "PutPrepare", epoch=0, obj=4, txn=t + 2)     # no free slot: the pinned one is not
            for l in range(2):
                ms.send(2, "PutLine", epoch=0, obj=4, txn=t + 2, line=l, data=val(4, v, l))
            await ClockCycles(dut.clock, 60)
            ms.stalled.discard("rsp")
            await ms.settle()
            got = [f["data"] for f in sorted(ms.rsp_of("ObjData", server=1, obj=5)[n1:], key=lambda f: f["line"])]
            assert got == [val(5, v, l) for l in range(4)], \
                f"slot {slot}: the stream of the pinned slot: versions {[(d >> 20) & 0xFFFFF for d in got]}, objs {[d >> 40 & 0xFF for d in got]}"
            assert ms.rsp_of("PutRetry", server=2, obj=4, txn=t + 2) and not ms.rsp_of("PutCommit", server=2, obj=4), ms.rsp
            assert ms.read_obj(obj_base(4), 2) == [val(4, 0, l) for l in range(2)]
            held_open["on"] = False
            ms.send(2, "PutLine", epoch=0, obj=6, txn=t, line=1, data=val(6, t, 1))
            await ms.settle()
            assert ms.rsp_of("PutCommit", server=2, obj=6, txn=t), ms.rsp

    @cocotb.test()
    async def get_meets_commit_at_every_offset(dut):
        """A get of an object and the commit of its put reach the core at 17 relative offsets (the
        put's last line -8..8 cycles from the get), the drain held back: each answer is one whole
        version, the old or the new, and a line served from staging comes from the put's own slot
        (the other slot holds another object's lines, left from its drained put)."""
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {5: 4, 6: 4, 7: 2})
        ms.send(0, "PutPrepare", epoch=0, obj=7, txn=1)     # slot 0 open: obj 6's put takes slot 1
        ms.send(0, "PutLine", epoch=0, obj=7, txn=1, line=0, data=val(7, 1, 0))
        await ms.settle()
        ms.send(1, "PutPrepare", epoch=0, obj=6, txn=1)
        for l in range(4):
            ms.send(1, "PutLine", epoch=0, obj=6, txn=1, line=l, data=val(6, 1, l))
        ms.send(0, "PutLine", epoch=0, obj=7, txn=1, line=1, data=val(7, 1, 1))
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=1, obj=6) and ms.rsp_of("PutCommit", server=0, obj=7), ms.rsp
        ms.send(2, "ObjGet", epoch=0, obj=5)                # warms the translation cache
        await ms.settle()
        for k, d in enumerate(range(-8, 9)):
            v = k + 1
            ms.ram.write_if.w_channel.pause = True
            n = len(ms.rsp_of("ObjData", server=2, obj=5))
            ms.send(1, "PutPrepare", epoch=0, obj=5, txn=10 + k)
            for l in range(3):
                ms.send(1, "PutLine", epoch=0, obj=5, txn=10 + k, line=l, data=val(5, v, l))
            await ClockCycles(dut.clock, 12)
            first, second = (("put", "get"), ("get", "put"))[d < 0]
            for what in (first, second):
                if what == "put":
                    ms.send(1, "PutLine", epoch=0, obj=5, txn=10 + k, line=3, data=val(5, v, 3))
                else:
                    ms.send(2, "ObjGet", epoch=0, obj=5)
                if what == first and d:
                    await ClockCycles(dut.clock, abs(d))
            await ClockCycles(dut.clock, 60)
            ms.ram.write_if.w_channel.pause = False
            ms.ack(2, 0, 5)                                 # server 2 holds a copy: its ack for the commit
            await ms.settle()
            got = [f["data"] for f in sorted(ms.rsp_of("ObjData", server=2, obj=5)[n:], key=lambda f: f["line"])]
            assert got in ([val(5, v - 1, l) for l in range(4)], [val(5, v, l) for l in range(4)]), \
                f"offset {d}: objects {[x >> 40 & 0xFF for x in got]}, versions {[(x >> 20) & 0xFFFFF for x in got]}"
            assert ms.rsp_of("PutCommit", server=1, obj=5, txn=10 + k), (d, ms.rsp[-4:])

    @cocotb.test()
    async def two_puts_one_writer(dut):
        """Slots are keyed by (writer, txn): one server's two interleaved puts both commit."""
        ms = await setup(dut, {2: 2, 3: 2})
        ms.send(0, "PutPrepare", epoch=0, obj=2, txn=1)
        ms.send(0, "PutPrepare", epoch=0, obj=3, txn=2)
        for l in range(2):
            ms.send(0, "PutLine", epoch=0, obj=3, txn=2, line=l, data=val(3, 1, l))
            ms.send(0, "PutLine", epoch=0, obj=2, txn=1, line=l, data=val(2, 1, l))
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=0, obj=2, txn=1) and ms.rsp_of("PutCommit", server=0, obj=3, txn=2), ms.rsp
        assert ms.read_obj(obj_base(2), 2) == [val(2, 1, l) for l in range(2)]
        assert ms.read_obj(obj_base(3), 2) == [val(3, 1, l) for l in range(2)]
        assert not ms.err, ms.err

    @cocotb.test()
    async def retry_same_txn(dut):
        """A PutPrepare repeated with the same (writer, txn) while its slot is open reuses that slot
        (idempotent retry): one PutCommit, and both staging slots are free again afterwards."""
        ms = await setup(dut, {2: 2, 3: 2, 4: 2})
        ms.send(0, "PutPrepare", epoch=0, obj=2, txn=4)
        ms.send(0, "PutLine", epoch=0, obj=2, txn=4, line=0, data=val(2, 1, 0))
        ms.send(0, "PutPrepare", epoch=0, obj=2, txn=4)          # the retry
        for l in range(2):
            ms.send(0, "PutLine", epoch=0, obj=2, txn=4, line=l, data=val(2, 2, l))
        await ms.settle()
        assert len(ms.rsp_of("PutCommit", server=0, obj=2, txn=4)) == 1, ms.rsp
        assert ms.read_obj(obj_base(2), 2) == [val(2, 2, l) for l in range(2)]
        await both_slots_free(ms, 1, "a slot leaked")
        assert not ms.err, ms.err

    @cocotb.test()
    async def putline_matched_by_writer_and_txn(dut):
        """MEMSERVER.md OPC PutLine: a line goes to the open slot of its (writer, txn), nowhere else.
        With both slots open (server 0 txn 1 obj 2, server 1 txn 2 obj 3): a line of a writer with
        no open put, or of the right writer with another txn, is noTxn; the right (writer, txn)
        naming another object is txnMismatch; a line past the object is lineRange with ObjErr; none
        of them touches a slot, and both puts then commit their own data."""
        ms = await setup(dut, {2: 2, 3: 2})
        ms.send(0, "PutPrepare", epoch=0, obj=2, txn=1)
        ms.send(1, "PutPrepare", epoch=0, obj=3, txn=2)
        await ms.settle()
        bad = [(2, 2, 1, 0, "noTxn"), (0, 2, 2, 0, "noTxn"), (1, 2, 2, 0, "txnMismatch"), (1, 3, 2, 5, "lineRange"),
               (0, 3, 1, 1, "txnMismatch"), (2, 3, 2, 1, "noTxn")]
        for srv, o, txn, l, _code in bad:
            ms.send(srv, "PutLine", epoch=0, obj=o, txn=txn, line=l, data=val(o, 9, l))
            await ms.settle()
        put_line = ms.S.messages["PutLine"].opcode
        assert [(e["server"], e["obj"], e["txn"], e["code"], e["opcode"]) for e in ms.err] == \
            [(srv, o, txn, code, put_line) for srv, o, txn, _l, code in bad], ms.err
        assert [(n, f["server"], f["obj"], f["code"]) for n, f in ms.rsp] == [("ObjErr", 1, 3, 9)], ms.rsp
        assert not ms.rsp_of("PutCommit"), "a stray line completed a put"
        for srv, o, txn in ((0, 2, 1), (1, 3, 2)):
            for l in range(2):
                ms.send(srv, "PutLine", epoch=0, obj=o, txn=txn, line=l, data=val(o, 1 + srv, l))
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=0, obj=2, txn=1) and ms.rsp_of("PutCommit", server=1, obj=3, txn=2), ms.rsp
        assert ms.read_obj(obj_base(2), 2) == [val(2, 1, l) for l in range(2)]
        assert ms.read_obj(obj_base(3), 2) == [val(3, 2, l) for l in range(2)]

    @cocotb.test()
    async def zombie_prepare_opens_nothing(dut):
        """A PutPrepare of a fenced server, or of an epoch it has left, is a zombie: no reply, `err`
        zombie, no slot taken; its lines are dropped (noTxn); afterwards two live writers still find
        both staging slots free, and the object keeps its data."""
        ms = await setup(dut, {2: 2, 3: 2, 4: 2})
        ms.ctrl("Fence", 0, 0)
        await ms.settle()
        for rnd in ("fenced", "old epoch"):
            n, ne = len(ms.rsp), len(ms.err)
            ms.send(0, "PutPrepare", epoch=0, obj=2, txn=1)
            for l in range(2):
                ms.send(0, "PutLine", epoch=0, obj=2, txn=1, line=l, data=val(2, 9, l))
            await ms.settle()
            assert ms.rsp[n:] == [], (rnd, ms.rsp[n:])
            assert [e["code"] for e in ms.err[ne:]][:1] == ["zombie"], (rnd, ms.err[ne:])
            if rnd == "fenced":
                ms.send(0, "Rejoin", epoch=0)
                await ms.settle()
                assert ms.rsp_of("RejoinAck", server=0, epoch=1), ms.rsp
        await both_slots_free(ms, 1, "a zombie took a slot")
        assert ms.read_obj(obj_base(2), 2) == [val(2, 0, l) for l in range(2)], "a zombie's put reached DRAM"

    @cocotb.test()
    async def fence_during_prepare_lookup(dut):
        """The OPC checks the writer again when its PutPrepare's translation returns: a Fence of the
        writer sent 0..13 cycles after its PutPrepare (before, during or after the map lookup) leaves
        no slot to it. Either the prepare never opened (zombie) or the fence freed its slot
        (fenceAbort); after the rejoin two other writers both find a free slot, and no PutCommit or
        DRAM write of the fenced writer's object ever happens."""
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {2: 2, 3: 2, 4: 2})
        for d in range(14):
            e = ms.epoch(0)
            ms.send(0, "PutPrepare", epoch=e, obj=2, txn=d)
            if d:
                await ClockCycles(dut.clock, d)
            ms.ctrl("Fence", 0, e)
            await ms.settle()
            ms.send(0, "Rejoin", epoch=e)
            await ms.settle()
            assert ms.rsp_of("RejoinAck", server=0, epoch=e + 1), (d, ms.rsp[-3:])
            await both_slots_free(ms, d, f"fence {d} cycles after the prepare: a slot stayed with the fenced writer")
        assert not ms.rsp_of("PutCommit", obj=2) and ms.read_obj(obj_base(2), 2) == [val(2, 0, l) for l in range(2)]

    @cocotb.test()
    async def one_commit_per_object_at_a_time(dut):
        """MEMSERVER.md OPC: a complete slot commits only when no other slot of its object is
        committing or draining. Two writers' puts of one object, the drain held back, the second
        put's lines sent 0..8 or 40 cycles after the first's (so it completes while the first is
        complete, committing or draining): one PutCommit while the drain is held, the other after
        it; DRAM ends with the data of the put committed last."""
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {4: 4, 5: 2})
        ms.ack_every_snoop()                               # each writer acks the other's invalidation
        for k, gap in enumerate((0, 1, 2, 3, 4, 5, 6, 8, 40)):
            first, second = (k % 2, 1 - k % 2)
            ver = {first: 2 * k + 1, second: 2 * k + 2}
            ms.ram.write_if.w_channel.pause = True
            n = len(ms.rsp_of("PutCommit", obj=4))
            for srv in (second, first):
                ms.send(srv, "PutPrepare", epoch=0, obj=4, txn=k)
            await ClockCycles(dut.clock, 30)
            for srv in (first, second):
                for l in range(4):
                    ms.send(srv, "PutLine", epoch=0, obj=4, txn=k, line=l, data=val(4, ver[srv], l))
                if srv == first and gap:
                    await ClockCycles(dut.clock, gap)
            await ClockCycles(dut.clock, 80)
            got = [f["server"] for f in ms.rsp_of("PutCommit", obj=4)[n:]]
            assert len(got) == 1, f"gap {gap}: while the first commit's drain is held back: PutCommits of servers {got}"
            ms.ram.write_if.w_channel.pause = False
            await ms.settle()
            got = [f["server"] for f in ms.rsp_of("PutCommit", obj=4)[n:]]
            assert sorted(got) == [0, 1], (gap, got)
            assert ms.read_obj(obj_base(4), 4) == [val(4, ver[got[-1]], l) for l in range(4)], \
                f"gap {gap}: DRAM versions {[(d >> 20) & 0xFFFFF for d in ms.read_obj(obj_base(4), 4)]}, " \
                f"the last commit's {ver[got[-1]]}"

    @cocotb.test()
    async def second_slot_does_it_all(dut):
        """The same OPC rules in staging slot 1 (slot 0 held by an open put of another object, so
        every put below lands in slot 1): a put completes only with all its lines (line 0 last, after
        a pause); a retry of its (writer, txn) reuses the slot, another writer's prepare with the same
        txn does not (PutRetry); a stray line past the object from a writer without a put, or naming
        another object, is noTxn / txnMismatch without ObjErr; the put of an object the OSC is
        streaming waits for the stream (one version per get)."""
        from cocotb.triggers import ClockCycles, RisingEdge
        ms = await setup(dut, {2: 2, 3: 4, 7: 8})
        ms.send(2, "PutPrepare", epoch=0, obj=2, txn=9)     # slot 0, open to the end
        await ms.settle()
        # all lines, line 0 last
        ms.send(0, "PutPrepare", epoch=0, obj=3, txn=1)
        for l in (1, 2, 3):
            ms.send(0, "PutLine", epoch=0, obj=3, txn=1, line=l, data=val(3, 1, l))
        await ms.settle()
        assert not ms.rsp_of("PutCommit", obj=3), f"committed without line 0: {ms.rsp}"
        ms.send(0, "PutLine", epoch=0, obj=3, txn=1, line=0, data=val(3, 1, 0))
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=0, obj=3, txn=1) and ms.read_obj(obj_base(3), 4) == [val(3, 1, l) for l in range(4)]
        # a retry reuses slot 1; another writer with the same txn is turned away; stray lines
        ms.send(0, "PutPrepare", epoch=0, obj=3, txn=2)
        ms.send(0, "PutLine", epoch=0, obj=3, txn=2, line=0, data=val(3, 9, 0))
        await ms.settle()
        ms.send(0, "PutPrepare", epoch=0, obj=3, txn=2)     # the retry: lines cleared, same slot
        await ms.settle()
        ms.send(1, "PutPrepare", epoch=0, obj=3, txn=2)     # another writer, same txn: no slot
        await ms.settle()
        assert ms.rsp_of("PutRetry", server=1, obj=3, txn=2) and not ms.rsp_of("PutRetry", server=0), ms.rsp
        ne, nr = len(ms.err), len(ms.rsp)
        ms.send(1, "PutLine", epoch=0, obj=3, txn=7, line=6, data=1)   # no put of server 1: noTxn
        ms.send(0, "PutLine", epoch=0, obj=2, txn=2, line=6, data=1)   # server 0's txn 2 is obj 3's
        await ms.settle()
        assert sorted((e["server"], e["code"]) for e in ms.err[ne:]) == [(0, "txnMismatch"), (1, "noTxn")] \
            and ms.rsp[nr:] == [], (ms.err[ne:], ms.rsp[nr:])
        for l in range(4):
            ms.send(0, "PutLine", epoch=0, obj=3, txn=2, line=l, data=val(3, 2, l))
        await ms.settle()
        assert len(ms.rsp_of("PutCommit", server=0, obj=3, txn=2)) == 1
        assert ms.read_obj(obj_base(3), 4) == [val(3, 2, l) for l in range(4)]
        # the OSC streams obj 7 (DRAM reads held back) while its put in slot 1 completes
        ms.send(1, "ObjGet", epoch=0, obj=7)
        await ms.settle()
        ms.ram.read_if.r_channel.pause = True
        n = len(ms.rsp_of("ObjData", server=1, obj=7))
        ms.send(1, "ObjGet", epoch=0, obj=7)
        await ClockCycles(dut.clock, 30)
        ms.send(0, "PutPrepare", epoch=0, obj=7, txn=3)
        for l in range(8):
            ms.send(0, "PutLine", epoch=0, obj=7, txn=3, line=l, data=val(7, 1, l))
        await ClockCycles(dut.clock, 100)
        ms.ram.read_if.r_channel.pause = False
        ms.ack(1, 0, 7)
        await ms.settle()
        got = [f["data"] for f in sorted(ms.rsp_of("ObjData", server=1, obj=7)[n:], key=lambda f: f["line"])][:8]
        assert got in ([val(7, 0, l) for l in range(8)], [val(7, 1, l) for l in range(8)]), \
            f"torn: versions {[(d >> 20) & 0xFFFFF for d in got]}"

    @cocotb.test()
    async def stalled_commit_meets_a_fence(dut):
        """rtl/CORE.md commit.I.evict / commit.I.full: a commit that needs a directory entry in a set
        whose ways are all shared by a reader that never acks is answered Stall again and again. The
        OPC keeps the slot (Complete, retried after its back-off): no PutCommit, no DRAM write. The
        writer is fenced at every phase of that retry period, in staging slot 0 and then in slot 1
        (slot 0 held by another writer's open put): every phase ends in one FenceAbort err and no
        reply. The core's Drop never answers the OPC (its RTL assertion opc-commit-never-dropped; a
        Commit in the core when the Fence comes is answered before the fence takes effect). The
        other writer's put is untouched and commits. Once the reader acks, the writer's put commits
        once and DRAM has it."""
        from cocotb.triggers import ClockCycles, RisingEdge
        R, W, W2 = 2, 0, 1
        ms, held, c, e, ans = await full_set_shared(dut, R)
        txn = {"n": 0}

        async def put_until_stalled(where: str) -> tuple[int, int, int]:
            """The writer's put of c, until its commit has stalled 3 times: (its txn, its epoch,
            the retry period measured between the last two Stalls)."""
            txn["n"] += 1
            t, ep, a0 = txn["n"], ms.epoch(W), len(ans)
            ms.send(W, "PutPrepare", epoch=ep, obj=c, txn=t)
            for l in range(2):
                ms.send(W, "PutLine", epoch=ep, obj=c, txn=t, line=l, data=val(c, t, l))
            for _ in range(600):
                await RisingEdge(dut.clock)
                stalls = [cy for r, cy in ans[a0:] if r == "Stall"]
                if len(stalls) >= 3:
                    return t, ep, stalls[-1] - stalls[-2]
            raise AssertionError(f"{where}: the commit of obj {c} did not keep stalling: answers {ans[a0:]}, "
                                 f"rsp {ms.rsp[-3:]}")

        async def sweep(where: str):
            k, period = 0, None
            while period is None or k < period:
                r0, e0 = len(ms.rsp), len(ms.err)
                t, ep, per = await put_until_stalled(where)
                period = period or per
                a0 = len(ans)
                await ClockCycles(dut.clock, k)
                ms.ctrl("Fence", W, ep)
                await ClockCycles(dut.clock, max(40, 3 * period))
                aborts = [x for x in ms.err[e0:] if x["code"] == "fenceAbort" and (x["server"], x["obj"], x["txn"]) == (W, c, t)]
                drops = [cy for r, cy in ans[a0:] if r == "Drop"]
                others = [x for x in ms.err[e0:] if x["code"] != "fenceAbort"]
                assert len(aborts) == 1 and not drops and not others, \
                    f"{where}, the fence {k} cycles after a Stall: {len(aborts)} FenceAbort and {len(drops)} Drop " \
                    f"(one FenceAbort), other errors {others}"
                assert not [f for nm, f in ms.rsp[r0:] if nm == "PutCommit"], (where, k, ms.rsp[r0:])
                ms.send(W, "Rejoin", epoch=ep)
                await ms.settle()
                assert ms.rsp_of("RejoinAck", server=W, epoch=ep + 1), (where, k, ms.rsp[-3:])
                k += 1

        await sweep("slot 0")
        ms.send(W2, "PutPrepare", epoch=0, obj=e, txn=99)   # slot 0, open across the second sweep
        held_open = keep_open(ms, W2, e, 99)
        await ms.settle()
        await sweep("slot 1")
        held_open["on"] = False
        ms.send(W2, "PutLine", epoch=0, obj=e, txn=99, line=1, data=val(e, 99, 1))
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=W2, obj=e, txn=99) and \
            ms.read_obj(obj_base(e), 2) == [val(e, 99, l) for l in range(2)], f"the other writer's put: {ms.rsp[-3:]} {ms.err[-3:]}"
        # the reader acks: the way frees and the stalled put commits, once
        t, ep, _per = await put_until_stalled("after the sweeps")
        assert ms.read_obj(obj_base(c), 2) == [val(c, 0, l) for l in range(2)], "DRAM written by a stalled commit"
        assert {f["obj"] for _n, f in ms.snp if f["server"] == R} == set(held), ms.snp
        for x in held:
            ms.ack(R, 0, x)
        await ms.settle()
        assert len(ms.rsp_of("PutCommit", server=W, obj=c)) == 1 and ms.rsp_of("PutCommit", server=W, obj=c, txn=t), ms.rsp[-3:]
        assert ms.read_obj(obj_base(c), 2) == [val(c, t, l) for l in range(2)]

    @cocotb.test()
    async def prepare_retry_meets_its_commit(dut):
        """MEMSERVER.md OPC PutPrepare: a retry of (writer, txn) reuses its open or complete slot; while
        that slot is committing (its Commit in the core) the retry waits for the core's answer, so a
        transaction never has two slots. The writer's put is stalled (as in stalled_commit_meets_a_fence)
        and its PutPrepare is sent again at every phase of the retry period, in slot 0 and in slot 1:
        the slot is reopened and waits for lines (the memory server goes idle, no Commit is tried, no
        reply, no err; the RTL assertion opc-one-slot-per-txn holds), and once the reader acks, the put
        commits the retry's lines. The sweep must reach the core's answer window (white-box: the
        OPC's lookup result arriving while its Commit is in the core)."""
        from cocotb.triggers import ClockCycles, RisingEdge
        R, W, W2 = 2, 0, 1
        ms, held, c, e, ev = await full_set_shared(dut, R)

        async def stalls(n: int, e0: int, where: str) -> list[int]:
            for _ in range(600):
                await RisingEdge(dut.clock)
                st = [cy for t, cy in ev[e0:] if t == "Stall"]
                if len(st) >= n:
                    return st
            raise AssertionError(f"{where}: the commit of obj {c} did not keep stalling: {ev[e0:][-6:]}")

        txn, hits = {"n": 0}, []
        for where in ("slot 0", "slot 1"):
            if where == "slot 1":
                ms.send(W2, "PutPrepare", epoch=0, obj=e, txn=99)
                held_open = keep_open(ms, W2, e, 99)
                await ms.settle()
            k, period = 0, None
            while period is None or k < period:
                txn["n"] += 1
                t, ep, e0, r0, x0 = txn["n"], ms.epoch(W), len(ev), len(ms.rsp), len(ms.err)
                ms.send(W, "PutPrepare", epoch=ep, obj=c, txn=t)
                for l in range(2):
                    ms.send(W, "PutLine", epoch=ep, obj=c, txn=t, line=l, data=val(c, 1000 + t, l))
                st = await stalls(3, e0, where)
                period = period or st[-1] - st[-2]
                await ClockCycles(dut.clock, k)
                e1 = len(ev)
                ms.send(W, "PutPrepare", epoch=ep, obj=c, txn=t)      # the retry
                await ms.settle()                                      # reopened: waits for lines
                lk = [cy for ty, cy in ev[e1:] if ty == "lookup"]
                reqs = [cy for ty, cy in ev[e0:] if ty == "req"]
                ends = [cy for ty, cy in ev[e0:] if ty not in ("req", "lookup")]
                if any(q <= lk[0] < a for q, a in zip(reqs, ends)):
                    hits.append((where, k))
                settled = len(ev)
                await ClockCycles(dut.clock, 3 * period)
                assert not [ty for ty, _ in ev[settled:] if ty == "req"], \
                    f"{where}, retry {k} cycles after a Stall: the slot still commits without the retry's lines"
                assert ms.rsp[r0:] == [] and ms.err[x0:] == [], (where, k, ms.rsp[r0:], ms.err[x0:])
                for l in range(2):
                    ms.send(W, "PutLine", epoch=ep, obj=c, txn=t, line=l, data=val(c, t, l))
                await stalls(1, settled, where)
                if where == "slot 1" and k == period - 1:
                    break                                          # the last put: the reader acks below
                ms.ctrl("Fence", W, ep)                            # free the slot for the next phase
                await ClockCycles(dut.clock, 40)
                ms.send(W, "Rejoin", epoch=ep)
                await ms.settle()
                k += 1
        assert {where for where, _k in hits} == {"slot 0", "slot 1"}, \
            f"the retries reached the OPC while its Commit was in the core only at {hits}"
        for x in held:
            ms.ack(R, 0, x)
        held_open["on"] = False
        ms.send(W2, "PutLine", epoch=0, obj=e, txn=99, line=1, data=val(e, 99, 1))
        await ms.settle()
        assert len(ms.rsp_of("PutCommit", server=W, obj=c)) == 1 and ms.rsp_of("PutCommit", server=W2, obj=e), ms.rsp[-3:]
        assert ms.read_obj(obj_base(c), 2) == [val(c, txn["n"], l) for l in range(2)], \
            f"DRAM of the retried put: versions {[(d >> 20) & 0xFFFFF for d in ms.read_obj(obj_base(c), 2)]}"
        assert ms.read_obj(obj_base(e), 2) == [val(e, 99, l) for l in range(2)]

    @cocotb.test()
    async def pin_at_the_drain_end(dut):
        """MEMSERVER.md OPC pin: the OSC pins the draining slot of the object it streams in the cycle
        the core serves its get (io_pinReq), and a drain ending in that very cycle must not free the
        slot. A get of a just-committed 8-line object is sent at every offset around the moment its
        held-back drain is let go, so that at one of them the pin meets the drain's last B; the answer
        channel is stalled and another writer's put (which takes the lowest free slot) is sent
        meanwhile. The reader gets the committed version whole every time, and the sweep sees gets
        served from the draining slot and from DRAM (it crossed the drain's end)."""
        from cocotb.triggers import ClockCycles, RisingEdge
        X, Y = 1, 2
        ms = await setup(dut, {X: 8, Y: 8})
        ms.ack_every_snoop()
        R, W, W2 = 2, 0, 1
        src = {"stage": 0, "DRAM": 0}
        for v, d in enumerate(range(-6, 28), start=1):
            ms.ram.write_if.w_channel.pause = True
            ms.send(W, "PutPrepare", epoch=0, obj=X, txn=v % 256)
            for l in range(8):
                ms.send(W, "PutLine", epoch=0, obj=X, txn=v % 256, line=l, data=val(X, v, l))
            for _ in range(300):
                await RisingEdge(dut.clock)
                if ms.rsp_of("PutCommit", server=W, obj=X, txn=v % 256):
                    break
            ms.stalled.add("rsp")
            n, beats = len(ms.rsp_of("ObjData", server=R, obj=X)), len(ms.r_beats)
            if d < 0:
                ms.send(R, "ObjGet", epoch=0, obj=X)
                await ClockCycles(dut.clock, -d)
                ms.ram.write_if.w_channel.pause = False
            else:
                ms.ram.write_if.w_channel.pause = False
                await ClockCycles(dut.clock, d + 1)
                ms.send(R, "ObjGet", epoch=0, obj=X)
            await ClockCycles(dut.clock, 30)
            ms.send(W2, "PutPrepare", epoch=0, obj=Y, txn=v % 256)
            for l in range(8):
                ms.send(W2, "PutLine", epoch=0, obj=Y, txn=v % 256, line=l, data=val(Y, v, l))
            await ClockCycles(dut.clock, 60)
            ms.stalled.discard("rsp")
            await ms.settle()
            got = [f["data"] for f in sorted(ms.rsp_of("ObjData", server=R, obj=X)[n:], key=lambda f: f["line"])]
            assert got == [val(X, v, l) for l in range(8)], \
                f"get sent {d} cycles after the drain was let go: objects {[g >> 40 & 0xFF for g in got]}, " \
                f"versions {[(g >> 20) & 0xFFFFF for g in got]}, not obj {X} version {v}"
            src["DRAM" if len(ms.r_beats) > beats else "stage"] += 1
        assert all(src.values()), f"the sweep served every get from one place ({src}): it missed the drain's end"

    @cocotb.test()
    async def rejoin_answers_on_its_own_channel(dut):
        """MEMSERVER.md ctrlResp: a Rejoin on a server's request port is answered on rsp, one on the
        control channel on ctrlResp; each waits only for its own channel, and each is answered once.
        With ctrlResp stalled a request-port Rejoin is answered; with rsp stalled a control Rejoin
        is; a control Rejoin whose ctrlResp is stalled is answered once it is released."""
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {1: 2})
        ms.stalled.add("ctrlResp")
        ms.send(0, "Rejoin", epoch=0)
        await ClockCycles(dut.clock, 60)
        assert len(ms.rsp_of("RejoinAck", server=0, epoch=1)) == 1, f"a request-port Rejoin and ctrlResp stalled: {ms.rsp}"
        ms.stalled.discard("ctrlResp")
        await ms.settle()
        assert len(ms.rsp_of("RejoinAck")) == 1 and not ms.ctrlResp, (ms.rsp, ms.ctrlResp)
        ms.stalled.add("rsp")
        n = len(ms.ctrlResp)
        ms.ctrl("Rejoin", 1, 0)
        await ClockCycles(dut.clock, 60)
        assert [(nm, f["server"]) for nm, f in ms.ctrlResp[n:]] == [("RejoinAck", 1)], \
            f"a control Rejoin and rsp stalled: {ms.ctrlResp[n:]}"
        ms.stalled.discard("rsp")
        await ms.settle()
        assert len(ms.ctrlResp) == n + 1 and len(ms.rsp_of("RejoinAck")) == 1, (ms.ctrlResp, ms.rsp)
        ms.stalled.add("ctrlResp")                      # its own channel stalled: the answer waits, whole
        ms.ctrl("Rejoin", 2, 0)
        await ClockCycles(dut.clock, 60)
        ms.stalled.discard("ctrlResp")
        await ms.settle()
        assert [(nm, f["server"]) for nm, f in ms.ctrlResp[n + 1:]] == [("RejoinAck", 2)], ms.ctrlResp[n + 1:]

    @cocotb.test()
    async def commit_answer_waits_for_its_queue(dut):
        """MEMSERVER.md OPC: the core's answer to a Commit is taken only when its PutCommit can enter
        the OPC's answer queue (coreResp.ready). A commit keeps stalling (full_set_shared); the
        response channel is stalled and three refused PutPrepares follow (ObjErr unknownObj): two
        fill the queue, the third waits in the input stage with its answer; then the reader acks, so
        the commit's next try would commit while the queue is full. The core's answer waits (valid,
        not taken) until the channel is released; then every answer arrives: the three ObjErr, and
        the PutCommit once, with the put's lines in DRAM."""
        from cocotb.triggers import ClockCycles, RisingEdge
        from apta.testbench.core_bfm import load_params
        R, W, B = 2, 0, 1
        ms, held, c, e, ans = await full_set_shared(dut, R)
        ms.send(W, "PutPrepare", epoch=0, obj=c, txn=1)
        for l in range(2):
            ms.send(W, "PutLine", epoch=0, obj=c, txn=1, line=l, data=val(c, 1, l))
        for _ in range(600):
            await RisingEdge(dut.clock)
            if [r for r, _cy in ans if r == "Stall"]:
                break
        assert [r for r, _cy in ans if r == "Stall"], f"the commit of obj {c} did not stall: {ans}"
        ms.stalled.add("rsp")
        unknown = [o for o in range(1, load_params(VARIANT)["mapEntries"]) if o not in held + [c, e]][:3]
        for t, o in enumerate(unknown, start=1):
            ms.send(B, "PutPrepare", epoch=0, obj=o, txn=t)
        await ClockCycles(dut.clock, 60)
        for x in held:
            ms.ack(R, 0, x)
        await ClockCycles(dut.clock, 300)
        opc = dut.opc
        assert int(opc.io_coreResp_valid.value) and not int(opc.io_coreResp_ready.value), \
            "the answer queue is full, yet the core's answer was taken (or none was pending)"
        assert not ms.rsp_of("PutCommit", server=W, obj=c), ms.rsp
        ms.stalled.discard("rsp")
        await ms.settle()
        assert [f["obj"] for f in ms.rsp_of("ObjErr", server=B)] == unknown, ms.rsp
        assert len(ms.rsp_of("PutCommit", server=W, obj=c, txn=1)) == 1, ms.rsp[-4:]
        assert ms.read_obj(obj_base(c), 2) == [val(c, 1, l) for l in range(2)]

    @cocotb.test()
    async def slot_changes_beside_a_committed_answer(dut):
        """A slot that opens (PutPrepare) or completes (its last line) in the cycle the core answers
        the other slot's Commit with Committed keeps its own state, Open or Complete: the answer
        changes only its own slot. B's put commits from one slot, C's uses the other (slot 0 after
        A's drained put, or slot 1 behind B's); C's prepare, or its last line, is sent 0..15 cycles
        after B's last line, so that in some run the change meets the answer in one cycle
        (slot_beside_answers: the test needs each case). Each run: one PutCommit per put, no error
        report, C's lines in DRAM."""
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {5: 2, 6: 2, 7: 2})
        hits, watch = slot_beside_answers(dut)
        v = 0
        for mine in (0, 1):
            for change in ("open", "complete"):
                for k in range(16):
                    v, e0, t = v + 1, len(ms.err), 1 + v % 8
                    # A's put, in slot `mine`, commits and drains; B's, in the other slot, waits
                    for srv, o in ((0, 7), (1, 6))[::1 if mine == 0 else -1]:
                        ms.send(srv, "PutPrepare", epoch=0, obj=o, txn=t)
                        await ClockCycles(dut.clock, 20)
                    for l in range(2):
                        ms.send(0, "PutLine", epoch=0, obj=7, txn=t, line=l, data=val(7, v, l))
                    ms.send(1, "PutLine", epoch=0, obj=6, txn=t, line=0, data=val(6, v, 0))
                    await ms.settle()
                    if change == "complete":
                        ms.send(2, "PutPrepare", epoch=0, obj=5, txn=t)   # C: the free slot, open
                        ms.send(2, "PutLine", epoch=0, obj=5, txn=t, line=0, data=val(5, v, 0))
                        await ClockCycles(dut.clock, 30)
                    ms.send(1, "PutLine", epoch=0, obj=6, txn=t, line=1, data=val(6, v, 1))
                    await ClockCycles(dut.clock, k)
                    if change == "open":
                        ms.send(2, "PutPrepare", epoch=0, obj=5, txn=t)
                        await ClockCycles(dut.clock, 30)
                        ms.send(2, "PutLine", epoch=0, obj=5, txn=t, line=0, data=val(5, v, 0))
                    ms.send(2, "PutLine", epoch=0, obj=5, txn=t, line=1, data=val(5, v, 1))
                    await ms.settle()
                    for srv in range(3):
                        assert len(ms.rsp_of("PutCommit", server=srv)) == v, (mine, change, k, srv, ms.rsp[-6:])
                    assert ms.err[e0:] == [], (mine, change, k, ms.err[e0:])
                    assert ms.read_obj(obj_base(5), 2) == [val(5, v, l) for l in range(2)], (mine, change, k)
        watch["on"] = False
        missed = {("Committed", c, i) for c in ("open", "complete") for i in (0, 1)} - hits
        assert not missed, f"no slot change in the cycle of: {sorted(missed)} (the test misses them)"

    @cocotb.test()
    async def slot_changes_beside_a_stall(dut):
        """The same with Stall: W's put, in slot 1, of an object whose set a reader fills and never
        acks is answered Stall every few cycles (CORE.md commit.I.full); meanwhile C's 32 puts
        through slot 0 open, or complete, at 16 offsets across W's retry period (each case must
        meet a Stall), each committing once with no error while W's stays uncommitted; once the
        reader acks, W's commits."""
        await beside_a_stall(dut, 0)

    @cocotb.test()
    async def slot_changes_beside_a_stall_in_slot_0(dut):
        """The same with W's put in slot 0 and C's in slot 1."""
        await beside_a_stall(dut, 1)

    @cocotb.test()
    async def drain_under_write_backpressure(dut):
        """MEMSERVER.md OPC drain: a committed put's lines reach DRAM each at its own address however
        the AXI slave paces them. The W channel is held back in patterns (1 to 3 cycles of every
        2 to 5): each put of an 8-line object, in slot 0 and in slot 1 (another writer's open put
        holds slot 0), must leave DRAM holding exactly its lines."""
        import itertools
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {1: 8, 2: 2})
        v = 0
        for slot in (0, 1):
            if slot:                                        # held open (ms3t times out an idle put)
                ms.send(2, "PutPrepare", epoch=0, obj=2, txn=9)
                keep_open(ms, 2, 2, 9)
                await ClockCycles(dut.clock, 20)
            for on, off in ((1, 1), (1, 3), (2, 1), (3, 2)):
                v += 1
                ms.ram.write_if.w_channel.set_pause_generator(itertools.cycle([0] * on + [1] * off))
                ms.send(0, "PutPrepare", epoch=0, obj=1, txn=v)
                for l in range(8):
                    ms.send(0, "PutLine", epoch=0, obj=1, txn=v, line=l, data=val(1, v, l))
                await ms.settle()
                ms.ram.write_if.w_channel.set_pause_generator(None)
                assert ms.rsp_of("PutCommit", server=0, obj=1, txn=v), ms.rsp[-3:]
                assert ms.read_obj(obj_base(1), 8) == [val(1, v, l) for l in range(8)], \
                    (slot, on, off, [(d >> 20) & 0xFFFFF for d in ms.read_obj(obj_base(1), 8)])
        assert not ms.err, ms.err

    @cocotb.test()
    async def commit_retry_period(dut):
        """MEMSERVER.md OPC Commit: a Stall'd Commit goes back to the core `stallBackoff` cycles
        after the Stall answer, every time (the cycle after the answer the slot is Complete with
        the pause loaded; it counts down, and the Commit goes in the cycle it reaches 0). White-box
        (the OPC's core port): a reader shares every way of two sets; W's commit into each set
        stalls until the reader acks, first in slot 0, then in slot 1 beside C's open put; every
        Stall-to-Commit gap is measured."""
        from cocotb.triggers import ClockCycles
        R, W, C = 2, 1, 0
        held, c, e = full_set()
        sets = [(held, c), full_set(e)[:2]]
        from apta.testbench.core_bfm import load_params
        x = next(o for o in range(1, load_params(VARIANT)["mapEntries"]) if all(o not in h + [c] for h, c in sets))
        ms = await setup(dut, {**{o: 2 for h, c in sets for o in h + [c]}, x: 2})
        ev = watch_opc(dut)
        for h, _c in sets:
            for o in h:
                ms.send(R, "ObjGet", epoch=0, obj=o)
        await ms.settle()
        B = ms.P["stallBackoff"]
        for slot, (held, c) in enumerate(sets):
            if slot:                                    # C's open put holds slot 0
                ms.send(C, "PutPrepare", epoch=0, obj=x, txn=1)
                await ms.settle()
            k = len(ev)
            ms.send(W, "PutPrepare", epoch=0, obj=c, txn=1 + slot)
            for l in range(2):
                ms.send(W, "PutLine", epoch=0, obj=c, txn=1 + slot, line=l, data=val(c, 1, l))
            await ClockCycles(dut.clock, 150)
            core = [e for e in ev[k:] if e[0] in ("req", "Stall")]
            gaps = [t2 - t1 for (a, t1), (b, t2) in zip(core, core[1:]) if (a, b) == ("Stall", "req")]
            assert len(gaps) >= 5 and set(gaps) == {B + 1}, (slot, B, gaps, core[-12:])
            for o in held:
                ms.ack(R, 0, o)
            await ms.settle()
            assert ms.rsp_of("PutCommit", server=W, obj=c, txn=1 + slot), ms.rsp[-3:]

    @cocotb.test()
    async def bisnp_names_the_extent_it_invalidates(dut):
        """MEMSERVER.md OPC Commit: the Commit carries its slot's extent (base, size), which the
        directory keeps and the next commit's ObjBISnp names. Each slot commits while the other
        holds another object's extent (slot 0's commit beside slot 1 open; slot 1's beside slot 0
        free but not cleared), a third server reads both, then both are put again: each ObjBISnp
        to the reader names its own object's base and size."""
        ms = await setup(dut, {2: 2, 3: 3})
        ms.ack_every_snoop()
        ms.send(0, "PutPrepare", epoch=0, obj=2, txn=1)
        ms.send(1, "PutPrepare", epoch=0, obj=3, txn=2)
        await ms.settle()
        for srv, o, txn, size in ((0, 2, 1, 2), (1, 3, 2, 3)):
            for l in range(size):
                ms.send(srv, "PutLine", epoch=0, obj=o, txn=txn, line=l, data=val(o, 1, l))
            await ms.settle()
        for o in (2, 3):
            ms.send(2, "ObjGet", epoch=0, obj=o)
        await ms.settle()
        for srv, o, txn, size in ((0, 2, 3, 2), (1, 3, 4, 3)):
            ms.send(srv, "PutPrepare", epoch=0, obj=o, txn=txn)
            for l in range(size):
                ms.send(srv, "PutLine", epoch=0, obj=o, txn=txn, line=l, data=val(o, 2, l))
            await ms.settle()
        assert len(ms.rsp_of("PutCommit")) == 4, ms.rsp
        got = sorted((f["obj"], f["base"], f["size"]) for n, f in ms.snp if n == "ObjBISnp" and f["server"] == 2)
        assert got == [(2, obj_base(2), 2), (3, obj_base(3), 3)], ms.snp

    @cocotb.test()
    async def fenced_complete_put_waits_for_its_report(dut):
        """MEMSERVER.md OPC: the Complete slot of a fenced writer is freed with `err` fenceAbort and
        is never committed, also while that report cannot leave. W2's committed put of X drains
        slowly (the AXI W channel held), so W's complete put of X waits (another slot of X drains).
        Two orphan PutLines fill the OPC's report queue while malformed acks keep the error port
        busy (the core's reports go first); then a server port's zombie gets keep it busy while W is
        fenced and W2's drain is let go. W's put must not commit: no PutCommit, DRAM holds W2's
        version, and W's fenceAbort arrives once the port is quiet, after the drain ended (the
        moment the slot could have committed). W's put is in slot 1 (W2 prepared first), then in
        slot 0 (white-box: the slot is checked). Sent to the core, the slot would be answered Drop
        and freed without its report. Every report of the floods arrives; W rejoins
        after each round and its last put commits."""
        import cocotb
        from collections import Counter
        from cocotb.triggers import ClockCycles, RisingEdge
        X, W, W2, G = 1, 0, 1, 2
        ms = await setup(dut, {X: 2})
        bad_ack = malformed_ack(ms.S, X)
        flood = {"birsp": False, "zombies": False}
        sent = {"birsp": 0, "zombies": 0}

        def drained() -> list[int]:                         # cycles of the drains' B beats (AXI id 2)
            return [c for i, c in ms.b_beats if i == 2]

        async def feed():
            while True:
                await RisingEdge(dut.clock)
                while flood["birsp"] and len(ms.inq["birsp"]) < 4:
                    ms.inq["birsp"].append(bad_ack)
                    sent["birsp"] += 1
                while flood["zombies"] and len(ms.req[G]) < 4:
                    ms.send(G, "ObjGet", epoch=1, obj=X)
                    sent["zombies"] += 1
        cocotb.start_soon(feed())

        def lines(srv: int, ep: int, txn: int):
            for l in range(2):
                ms.send(srv, "PutLine", epoch=ep, obj=X, txn=txn, line=l, data=val(X, txn, l))

        for slot in (1, 0):
            ep, tw, tw2 = ms.epoch(W), 10 + slot, 20 + slot
            e0, c0, seq0 = len(ms.err), len(ms.ctrlResp), int(dut.io_status_commitSeq.value)
            sent.update(birsp=0, zombies=0)
            ms.ram.write_if.w_channel.pause = True
            if slot == 0:                                   # W's prepare first: W gets slot 0
                ms.send(W, "PutPrepare", epoch=ep, obj=X, txn=tw)
                await ClockCycles(dut.clock, 20)
            ms.send(W2, "PutPrepare", epoch=0, obj=X, txn=tw2)
            lines(W2, 0, tw2)
            for _ in range(300):
                await RisingEdge(dut.clock)
                if ms.rsp_of("PutCommit", server=W2, obj=X, txn=tw2):
                    break
            if slot == 1:
                ms.send(W, "PutPrepare", epoch=ep, obj=X, txn=tw)
            lines(W, ep, tw)
            await ClockCycles(dut.clock, 30)
            assert ms.rsp_of("PutCommit", server=W2, obj=X, txn=tw2) and not ms.rsp_of("PutCommit", server=W), ms.rsp
            st = getattr(dut.opc, f"slots_{slot}_st")
            assert (int(st.value), int(getattr(dut.opc, f"slots_{slot}_owner").value)) == (2, W), \
                f"W's put is not the Complete slot {slot}"
            flood["birsp"] = True
            await ClockCycles(dut.clock, 4)
            fired = len(ms.req_fire)
            for _ in range(2):                              # orphans: their noTxn reports wait in the OPC
                ms.send(G, "PutLine", epoch=0, obj=X, txn=77, line=0, data=0)
            flood["zombies"] = True                         # behind the orphans, then waiting for the acks
            for _ in range(60):
                await RisingEdge(dut.clock)
                if sum(1 for p, _c in ms.req_fire[fired:] if p == G) >= 2:
                    break
            await ClockCycles(dut.clock, 4)
            flood["birsp"] = False                          # the zombies' reports take over; the Fence goes in
            ms.ctrl("Fence", W, ep)
            for _ in range(200):
                await RisingEdge(dut.clock)
                if [f for n, f in ms.ctrlResp[c0:] if n == "Fence" and f["server"] == W]:
                    break
            assert int(dut.io_status_fenced.value) >> W & 1, (slot, ms.ctrlResp)
            d0 = len(drained())
            ms.ram.write_if.w_channel.pause = False
            for _ in range(200):
                await RisingEdge(dut.clock)
                if len(drained()) == d0 + 2:
                    break
            await ClockCycles(dut.clock, 40)                # the slot could commit now, its report still waiting
            flood["zombies"] = False
            await ms.settle()
            aborts = [e for e in ms.err[e0:] if e["code"] == "fenceAbort"]
            assert [(e["server"], e["obj"], e["txn"]) for e in aborts] == [(W, X, tw)], \
                f"slot {slot}: W's complete put was not aborted with its report: {aborts}, rsp {ms.rsp[-3:]}"
            assert len(drained()) == d0 + 2 and aborts[0]["cycle"] > drained()[-1], \
                f"slot {slot}: the report was not held past the drain's end (B beats at {drained()[d0:]}, " \
                f"report at {aborts[0]['cycle']})"
            assert not ms.rsp_of("PutCommit", server=W) and int(dut.io_status_commitSeq.value) == seq0 + 1, ms.rsp
            assert ms.read_obj(obj_base(X), 2) == [val(X, tw2, l) for l in range(2)], slot
            codes = Counter(e["code"] for e in ms.err[e0:])
            assert codes == {"badFlit": sent["birsp"], "noTxn": 2, "zombie": sent["zombies"], "fenceAbort": 1}, \
                (slot, codes, sent)
            ms.send(W, "Rejoin", epoch=ep)
            await ms.settle()
            assert ms.rsp_of("RejoinAck", server=W, epoch=ep + 1), (slot, ms.rsp[-3:])
        ep = ms.epoch(W)
        ms.send(W, "PutPrepare", epoch=ep, obj=X, txn=3)
        lines(W, ep, 3)
        await ms.settle()
        assert ms.rsp_of("PutCommit", server=W, obj=X, txn=3) and \
            ms.read_obj(obj_base(X), 2) == [val(X, 3, l) for l in range(2)], ms.rsp[-3:]

    @cocotb.test()
    async def stalled_get_pins_nothing(dut):
        """Only a Served get pins a draining slot (MEMSERVER.md OSC/OPC): a get that keeps stalling
        (its server owes an ack for the object) never holds the slot of the object's last put, so
        the cycle that drain's last B arrives the slot is free, and a put sent then opens it and
        commits (no PutRetry). The drain's end is swept over 16 phases of the stalled get's retry
        period, the put sent 0-2 cycles after the B; then all again with another server's gets served
        between the retries. Otherwise a dead reader's repeated Stalls would
        turn writers away."""
        from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
        ms = await setup(dut, {5: 4, 6: 2, 4: 2, 7: 2})
        ms.send(0, "ObjGet", epoch=0, obj=5)                # server 0 holds a copy
        await ms.settle()
        ms.send(2, "PutPrepare", epoch=0, obj=6, txn=1)     # slot 1 stays open: one slot left
        ms.send(2, "PutLine", epoch=0, obj=6, txn=1, line=0, data=val(6, 1, 0))
        await ms.settle()
        v = 0
        for gets, phase in ((g, p) for g in (0, 4) for p in range(16)):
            for m in range(3):
                v += 1
                ms.ram.write_if.w_channel.pause = True
                ms.send(1, "PutPrepare", epoch=0, obj=5, txn=v % 256)
                for l in range(4):
                    ms.send(1, "PutLine", epoch=0, obj=5, txn=v % 256, line=l, data=val(5, v, l))
                for _ in range(300):
                    await RisingEdge(dut.clock)
                    if len(ms.rsp_of("PutCommit", server=1, obj=5)) == v:
                        break
                assert len(ms.rsp_of("PutCommit", server=1, obj=5)) == v, (phase, m, ms.rsp[-4:])
                if v == 1:                                 # server 0 owes the ack now: its get stalls, again and again
                    ms.send(0, "ObjGet", epoch=0, obj=5)
                await ClockCycles(dut.clock, 30 + phase)
                ms.ram.write_if.w_channel.pause = False
                for _ in range(gets):                      # Served answers between the Stalls: the core's
                    ms.send(1, "ObjGet", epoch=0, obj=7)   # answer port shows Served when a retry is sent
                bs = 0
                for _ in range(300):                       # the drain's 4 B beats (AXI id 2)
                    await RisingEdge(dut.clock)
                    await ReadOnly()
                    if int(dut.axi_b_valid.value) and int(dut.axi_b_ready.value) and int(dut.axi_b_bits_id.value) == 2:
                        bs += 1
                        if bs == 4:
                            break
                assert bs == 4, (phase, m, bs)
                await RisingEdge(dut.clock)
                if m:
                    await ClockCycles(dut.clock, m)
                txn = 100 + v % 100
                ms.send(2, "PutPrepare", epoch=0, obj=4, txn=txn)
                for l in range(2):
                    ms.send(2, "PutLine", epoch=0, obj=4, txn=txn, line=l, data=val(4, v, l))
                await ClockCycles(dut.clock, 60)
                assert not ms.rsp_of("PutRetry", server=2, obj=4), \
                    f"phase {phase}, +{m}: a put turned away after the drain ended (a stalled get pinned its slot)"
                assert len(ms.rsp_of("PutCommit", server=2, obj=4)) == v, (phase, m, ms.rsp[-4:])
                assert len(ms.rsp_of("ObjData", server=0, obj=5)) == 4, "the stalled get was answered"
        ms.ack(0, 0, 5)
        await ms.settle()
        last = sorted(ms.rsp_of("ObjData", server=0, obj=5)[-4:], key=lambda f: f["line"])
        assert [f["data"] for f in last] == [val(5, v, l) for l in range(4)], ms.rsp[-6:]


@pytest.mark.parametrize("variant", [os.environ["APTA_MS_VARIANT"]] if "APTA_MS_VARIANT" in os.environ
                         else ["ms3", "ms3t"])
def test_ms_smoke_runner(variant):
    from apta.testbench.ms_bfm import run_ms_module
    run_ms_module(variant, "test_ms_smoke", 29)
