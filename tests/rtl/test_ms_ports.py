"""The memory server's server ports (rtl/MEMSERVER.md dispatcher and `err` port), on ms3 and on
msv (the model's geometry): every kind of flit a port must refuse, with its error report's fields;
the round-robin among the ports whose head can go (strict rotation, a blocked head costs the
others no cycle); every error source reported when all report at once; bad requests (unknown,
over-long and malformed map entries, lines without a transaction, past the object or naming another
object than their put's) answered
and the state left intact. Helpers from apta.testbench.ms_directed.
"""
from __future__ import annotations

import os

import pytest

from apta.testbench.ms_directed import VARIANT, data_of, malformed_ack, obj_base, setup, val

try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def dispatcher_refuses_what_is_not_a_request(dut):
        """MEMSERVER.md dispatcher: on every server port at once, each flit that is not a request the
        port may make is refused with one error report and no answer, with the code of its first
        fault: a flit the decoder rejects (opcode 0, a reserved bit set, a field out of range) is
        badFlit with the decoder's MsgError code and field (messages.Schema.check, the one
        definition); a legal message of another channel (ObjData ... GetCancelled) is badFlit with
        badOpcode; another server's message is wrongPort; a stale epoch is zombie. Then every port's
        get is served."""
        ms = await setup(dut, {1: 2})
        S = ms.S
        bad_opcode = S.errors["badOpcode"]
        want = []
        for i in range(ms.n):
            get = S.encode("ObjGet", server=i, epoch=0, obj=1)
            server_f = S.messages["ObjGet"].fields[0]
            flits = [(i & 3) << server_f.lo,                                  # opcode 0
                     get | 1 << (S.messages["ObjGet"].bits + 7),              # a reserved bit
                     get & ~(((1 << server_f.width) - 1) << server_f.lo) | (server_f.max + 1) << server_f.lo]
            for f in flits:
                code, field = S.check(f)
                assert code, f"flit {f:#x} is legal: the test needs a decoder error"
                want.append((i, "badFlit", f & 0xF, code, field))
            for m in S.messages.values():
                if m.channel == S.messages["ObjGet"].channel:
                    continue
                vals = {fl.name: fl.min for fl in m.fields}
                if "server" in vals:
                    vals["server"] = i
                flits.append(S.encode(m.name, **vals))
                want.append((i, "badFlit", m.opcode, bad_opcode, 0))
            flits.append(S.encode("ObjGet", server=(i + 1) % ms.n, epoch=0, obj=1))
            want.append((i, "wrongPort", S.messages["ObjGet"].opcode, 0, 0))
            flits.append(S.encode("PutPrepare", server=i, epoch=1, obj=1, txn=3))
            want.append((i, "zombie", S.messages["PutPrepare"].opcode, 0, 0))
            ms.req[i].extend(flits)
        await ms.settle()
        got = [(e["server"], e["code"], e["opcode"], e["msgCode"], e["field"]) for e in ms.err]
        assert sorted(got) == sorted(want), f"missing {sorted(set(want) - set(got))}, unexpected {sorted(set(got) - set(want))}"
        assert ms.rsp == [], ms.rsp
        for i in range(ms.n):
            ms.send(i, "ObjGet", epoch=0, obj=1)
        await ms.settle()
        assert all(data_of(ms, i, 1) == [val(1, 0, l) for l in range(2)] for i in range(ms.n)), ms.rsp

    @cocotb.test()
    async def a_blocked_head_costs_the_others_nothing(dut):
        """MEMSERVER.md dispatcher: one server port per cycle, round-robin among the ports whose head
        can go. First every port sends 8 zombie gets, which the dispatcher refuses at one a cycle:
        they are taken in consecutive cycles, the ports in strict rotation. Then each port in turn
        gets a head the OPC cannot take: a PutLine, behind three refused
        PutPrepares of its server with the response channel stalled (two ObjErr fill the OPC's
        answer queue, the third waits with its answer, so the OPC's input is closed). The other
        ports then send 8 zombie gets each, which the dispatcher refuses at one a cycle: they are
        taken in consecutive cycles, and the blocked flit not before the OPC's input opens."""
        from cocotb.triggers import ClockCycles
        from apta.testbench.core_bfm import load_params
        ms = await setup(dut, {5: 2})
        unknown = [o for o in range(1, load_params(VARIANT)["mapEntries"]) if o != 5][:3]
        n0 = len(ms.req_fire)
        for _ in range(8):
            for srv in range(ms.n):
                ms.send(srv, "ObjGet", epoch=1, obj=5)
        await ClockCycles(dut.clock, 60)
        ports, cyc = [p for p, _c in ms.req_fire[n0:]], [c for _p, c in ms.req_fire[n0:]]
        assert len(ports) == 8 * ms.n and cyc == list(range(cyc[0], cyc[0] + len(cyc))) and \
            ports == [(ports[0] + k) % ms.n for k in range(len(ports))], \
            f"all ports ready: taken {ms.req_fire[n0:]} (one a cycle, in rotation)"
        for b in range(ms.n):
            others = [p for p in range(ms.n) if p != b]
            r0, e0 = len(ms.rsp), len(ms.err)
            ms.stalled.add("rsp")
            for t, o in enumerate(unknown, start=1):
                ms.send(b, "PutPrepare", epoch=0, obj=o, txn=t)
            await ClockCycles(dut.clock, 60)
            ms.send(b, "PutLine", epoch=0, obj=5, txn=9, line=0, data=1)
            await ClockCycles(dut.clock, 20)
            n0 = len(ms.req_fire)
            for _ in range(8):
                for srv in others:
                    ms.send(srv, "ObjGet", epoch=1, obj=5)
            await ClockCycles(dut.clock, 60)
            fires = ms.req_fire[n0:]
            cyc = [c for _p, c in fires]
            assert sorted(p for p, _c in fires) == sorted(others * 8) and cyc == list(range(cyc[0], cyc[0] + len(cyc))), \
                f"port {b} blocked: the zombie gets were taken at {fires} (consecutive cycles, none of port {b})"
            ms.stalled.discard("rsp")
            await ms.settle()
            assert [f["obj"] for n, f in ms.rsp[r0:] if n == "ObjErr" and f["server"] == b] == unknown, ms.rsp[r0:]
            errs = [(e["server"], e["code"]) for e in ms.err[e0:]]
            assert sorted(x for x in errs if x[1] == "zombie") == sorted((p, "zombie") for p in others * 8), errs
            assert [c for srv, c in errs if srv == b and c != "unknownObj"] == ["noTxn"], errs

    @cocotb.test()
    async def a_waiting_line_completes_nothing(dut):
        """A PutLine that waits at the OPC's closed input (its answer queue full, the response
        channel stalled) is not yet the slot's: its put stays open, no Commit reaches the core until
        the line is taken, and then it commits once with the line's data. On each server's port
        (the OPC sees the bits of whichever head the dispatcher's mux shows while none can go), in
        staging slot 0 and, behind another open put, in slot 1."""
        from cocotb.triggers import ClockCycles
        from apta.testbench.core_bfm import load_params
        from apta.testbench.ms_directed import watch_opc
        ms = await setup(dut, {5: 2})
        try:                        # white-box (the OPC's core port) where the design keeps its hierarchy
            dut.opc
            ev = watch_opc(dut)
        except AttributeError:      # a flattened netlist (RTL_DIR=build/synth): the DRAM and answers only
            ev = None
        P = load_params(VARIANT)
        unknown = [o for o in range(1, P["mapEntries"]) if o not in (5, 6)][:3]
        ms.put_map(6, obj_base(6), 2)
        for b, slot in [(b, s) for s in range(min(2, P["stagingSlots"])) for b in range(ms.n)]:
            o, v = (b + 1) % ms.n, 1 + len(ms.rsp_of("PutCommit", obj=5))
            if slot:                                            # another put holds slot 0, open
                ms.send(o, "PutPrepare", epoch=0, obj=6, txn=8)
                await ms.settle()
            ms.send(b, "PutPrepare", epoch=0, obj=5, txn=9)
            ms.send(b, "PutLine", epoch=0, obj=5, txn=9, line=0, data=val(5, v, 0))
            await ms.settle()
            ms.stalled.add("rsp")
            for t, x in enumerate(unknown, start=1):            # two ObjErr fill the queue, the third waits
                ms.send(o, "PutPrepare", epoch=0, obj=x, txn=t)
            await ClockCycles(dut.clock, 60)
            n0, r0, c0 = len(ms.req_fire), len(ev or []), len(ms.rsp_of("PutCommit", server=b, obj=5, txn=9))
            ms.send(b, "PutLine", epoch=0, obj=5, txn=9, line=1, data=val(5, v, 1))
            await ClockCycles(dut.clock, 100)
            assert ms.req_fire[n0:] == [] and not [x for x in (ev or [])[r0:] if x[0] == "req"], \
                f"server {b}: the waiting line was taken ({ms.req_fire[n0:]}) or its slot committed ({ev[r0:]})"
            ms.stalled.discard("rsp")
            await ms.settle()
            taken = [c for p, c in ms.req_fire[n0:] if p == b]
            assert len(taken) == 1, (b, taken)
            if ev is not None:
                reqs = [c for what, c in ev[r0:] if what == "req"]
                assert len(reqs) == 1 and reqs[0] > taken[0], (b, taken, ev[r0:])
            assert len(ms.rsp_of("PutCommit", server=b, obj=5, txn=9)) == c0 + 1, (b, slot, ms.rsp[-4:])
            assert ms.read_obj(obj_base(5), 2) == [val(5, v, l) for l in range(2)], b
            if slot:
                for l in range(2):
                    ms.send(o, "PutLine", epoch=0, obj=6, txn=8, line=l, data=val(6, v, l))
                await ms.settle()
                assert ms.rsp_of("PutCommit", server=o, obj=6, txn=8), ms.rsp[-3:]

    @cocotb.test()
    async def errors_from_every_source_are_all_reported(dut):
        """MEMSERVER.md error port: one report a cycle from five sources (the core's decoder and
        AXI, the control front, the dispatcher, the OSC, the OPC), none lost. Malformed acks on the
        ack port (a reserved bit set: the core's decoder) and zombie gets on every server port
        arrive together: every one of them is reported, the dispatcher's waiting for the cycles the
        core's reports take."""
        ms = await setup(dut, {5: 2})
        S = ms.S
        bad_ack = malformed_ack(S, 5)
        code, _field = S.check(bad_ack)
        for _ in range(12):
            ms.inq["birsp"].append(bad_ack)
        for _ in range(8):
            for srv in range(ms.n):
                ms.send(srv, "ObjGet", epoch=1, obj=5)
        await ms.settle()
        acks = [e for e in ms.err if e["code"] == "badFlit" and e["opcode"] == S.messages["ObjBIRsp"].opcode]
        zombies = [e for e in ms.err if e["code"] == "zombie"]
        assert len(acks) == 12 and all(e["msgCode"] == code for e in acks), ms.err
        assert sorted(e["server"] for e in zombies) == sorted(list(range(ms.n)) * 8), \
            f"{len(zombies)} of {8 * ms.n} zombie reports: {[e['server'] for e in zombies]}"
        assert len(ms.err) == 12 + 8 * ms.n, ms.err

    @cocotb.test()
    async def put_answer_meets_a_commit_in_a_full_queue(dut):
        """A PutPrepare's answer must not be lost when a commit's PutCommit takes the last room in the
        OPC's answer queue while the prepare is in its lookup. The rsp port is stalled with one answer
        queued (an ObjErr); then server 0's put gets its last line, and at every offset from that a
        PutPrepare of server 2 follows: of an unknown object (ObjErr), and of a registered object
        while every slot is busy (PutRetry; if the slot is free by then, the put opens and commits).
        The input stage must hold the answer until the queue takes it: after the stall every answer
        arrives once."""
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {5: 2, 6: 2, 7: 2})
        ms.ack_every_snoop()                            # msv's one directory entry: the puts take turns
        slots = ms.P["stagingSlots"]
        for w in range(1, slots):                       # the other slots: open puts, held all along
            ms.send(w, "PutPrepare", epoch=0, obj=5 + w, txn=1)
            ms.send(w, "PutLine", epoch=0, obj=5 + w, txn=1, line=0, data=val(5 + w, 1, 0))
        t = 0
        for kind in ("unknown", "no slot"):
            for d in range(12):
                t += 1
                r0 = len(ms.rsp)
                ms.send(0, "PutPrepare", epoch=0, obj=5, txn=t % 256)
                ms.send(0, "PutLine", epoch=0, obj=5, txn=t % 256, line=0, data=val(5, t, 0))
                await ms.settle()
                ms.stalled.add("rsp")
                ms.send(2, "PutPrepare", epoch=0, obj=50, txn=t % 256)       # its ObjErr waits in the queue
                await ClockCycles(dut.clock, 20)
                ms.send(0, "PutLine", epoch=0, obj=5, txn=t % 256, line=1, data=val(5, t, 1))
                await ClockCycles(dut.clock, d)
                o = 51 if kind == "unknown" else 7
                ms.send(2, "PutPrepare", epoch=0, obj=o, txn=t % 256)
                await ClockCycles(dut.clock, 60)
                ms.stalled.discard("rsp")
                await ms.settle()
                got = [(n, f["server"], f["obj"]) for n, f in ms.rsp[r0:]]
                want = [("ObjErr", 2, 50), ("PutCommit", 0, 5)]
                if kind == "unknown":
                    want.append(("ObjErr", 2, 51))
                elif ("PutRetry", 2, 7) in got:
                    want.append(("PutRetry", 2, 7))
                else:                                   # the slot was free: the put opened; finish it
                    for l in range(2):
                        ms.send(2, "PutLine", epoch=0, obj=7, txn=t % 256, line=l, data=val(7, t, l))
                    await ms.settle()
                    got = [(n, f["server"], f["obj"]) for n, f in ms.rsp[r0:]]
                    want.append(("PutCommit", 2, 7))
                assert sorted(got) == sorted(want), f"{kind}, offset {d}: answers {got}"

    @cocotb.test()
    async def bad_input(dut):
        ms = await setup(dut, {1: 2})
        ms.put_map(9, obj_base(9), 20)                 # over-long (linesPerObject 8)
        ms.put_map(10, obj_base(10), 2, raw_reserved=1)  # malformed
        ms.send(0, "ObjGet", epoch=0, obj=50)           # unknown
        ms.send(1, "ObjGet", epoch=0, obj=9)
        ms.send(2, "PutPrepare", epoch=0, obj=10, txn=3)
        ms.send(0, "PutLine", epoch=0, obj=1, txn=4, line=0, data=1)   # no prepare
        await ms.settle()
        codes = {(e["server"], e["code"]) for e in ms.err}
        assert {(0, "unknownObj"), (1, "overLong"), (2, "badMapEntry"), (0, "noTxn")} <= codes, ms.err
        get_op = ms.S.messages["ObjGet"].opcode       # the OSC's reports: a get's opcode, txn 0
        assert [(e["opcode"], e["txn"]) for e in ms.err if (e["server"], e["code"]) in ((0, "unknownObj"), (1, "overLong"))] \
            == [(get_op, 0)] * 2, ms.err
        op = {n: ms.S.messages[n].opcode for n in ("PutPrepare", "PutLine")}   # the OPC's reports: the message's
        assert [(e["opcode"], e["obj"], e["txn"]) for e in ms.err if (e["server"], e["code"]) == (2, "badMapEntry")] \
            == [(op["PutPrepare"], 10, 3)], ms.err                                # opcode, obj and txn
        assert [(e["opcode"], e["obj"], e["txn"]) for e in ms.err if (e["server"], e["code"]) == (0, "noTxn")] \
            == [(op["PutLine"], 1, 4)], ms.err
        assert ms.rsp_of("ObjErr", server=0, obj=50, code=4, txn=0)   # a get's ObjErr: txn 0 (messages.json)
        assert ms.rsp_of("ObjErr", server=1, obj=9, code=6, txn=0)
        assert ms.rsp_of("ObjErr", server=2, obj=10, txn=3, code=5)
        # state intact: a normal get and put still work
        ms.send(1, "PutPrepare", epoch=0, obj=1, txn=1)
        ms.send(1, "PutLine", epoch=0, obj=1, txn=1, line=0, data=7)
        ms.send(1, "PutLine", epoch=0, obj=1, txn=1, line=5, data=7)   # line >= size 2
        ms.send(1, "PutLine", epoch=0, obj=10, txn=1, line=0, data=9)  # the put's txn, another object
        ms.send(1, "PutLine", epoch=0, obj=1, txn=1, line=1, data=8)
        await ms.settle()
        assert ms.rsp_of("ObjErr", server=1, obj=1, code=9)
        assert [(e["code"], e["obj"]) for e in ms.err if e["server"] == 1 and e["opcode"] == op["PutLine"]] \
            == [("lineRange", 1), ("txnMismatch", 10)], ms.err
        assert not ms.rsp_of("ObjErr", server=1, obj=10), "a line naming another object is no line of the put"
        assert ms.rsp_of("PutCommit", server=1, obj=1, txn=1)
        ms.send(0, "ObjGet", epoch=0, obj=1)
        await ms.settle()
        assert data_of(ms, 0, 1) == [7, 8]

    @cocotb.test()
    async def queries_reach_their_asker(dut):
        """MEMSERVER.md `query`/`queryResp`: the control plane's queries and the object map's (a
        removal asks the directory) share the core's query port; each answer goes back to the one
        that asked. An object a server read answers hit, S, that sharer; one no server read answers
        no hit. With a removal of the shared object in flight among 24 queries, the control plane
        gets one answer per query, in order, each the directory's, and the removal its own: busy."""
        import cocotb
        from cocotb.triggers import ClockCycles
        ms = await setup(dut, {})
        for o, size in ((1, 2), (2, 1)):               # the allocator's (a removal frees its extent)
            assert (await ms.map_upd(o, size))["code"] == "ok"
        ms.send(0, "ObjGet", epoch=0, obj=1)
        await ms.settle()
        q = await ms.query(1)
        assert q and (q["hit"], q["state"], q["sharers"]) == (True, "S", [0]), f"a shared object: {q}"
        q = await ms.query(2)
        assert q and not q["hit"], f"an object no server read: {q}"
        n, m = len(ms.queryResp), len(ms.mapUpdDone)
        removal = cocotb.start_soon(ms.map_upd(1, 0, 0))
        asked = []
        for k in range(24):
            ms.inq["query"].append(1 + k % 2)
            asked.append(1 + k % 2)
            await ClockCycles(dut.clock, 1 + k % 3)
        r = await removal
        await ms.settle()
        assert (r["code"], len(ms.mapUpdDone) - m) == ("busy", 1), f"the removal of a shared object: {ms.mapUpdDone[m:]}"
        got = [(a["obj"], a["hit"], a["sharers"]) for a in ms.queryResp[n:]]
        assert got == [(o, o == 1, [0] if o == 1 else []) for o in asked], f"asked {asked}, answered {got}"


@pytest.mark.parametrize("variant", [os.environ["APTA_MS_VARIANT"]] if "APTA_MS_VARIANT" in os.environ
                         else ["ms3", "msv"])
def test_ms_ports_runner(variant):
    from apta.testbench.ms_bfm import run_ms_module
    run_ms_module(variant, "test_ms_ports", 7)
