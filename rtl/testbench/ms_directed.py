"""Helpers of the memory server's directed cocotb tests (tests/rtl/test_ms_smoke.py, test_ms_ports.py,
test_ms_timeout.py): the variant, the objects' layout and values, the bench setup, watchers of the
pins. No cocotb test here: a module that defines `@cocotb.test()` functions registers them in every
cocotb module that imports it."""
from __future__ import annotations

import os


VARIANT = os.environ.get("APTA_MS_VARIANT", "ms3")
BASE = 0x1000          # object o at BASE + o * 0x200 (8 lines of 64 bytes)


def obj_base(o: int) -> int:
    return BASE + o * 0x200


def val(o: int, version: int, line: int) -> int:
    return (o << 40) | (version << 20) | (line + 1) | (0xA5 << 500)


async def setup(dut, objects: dict[int, int], **kw):
    from apta.testbench.ms_bfm import Ms
    ms = Ms(dut, VARIANT, **kw)
    for o, size in objects.items():
        ms.put_map(o, obj_base(o), size)
        ms.write_obj(obj_base(o), [val(o, 0, l) for l in range(size)])
    await ms.start()
    pins_only_when_served(dut)
    return ms


def pins_only_when_served(dut):
    """White-box, every cycle of every test here (MEMSERVER.md OSC/OPC): the OPC takes a pin of a
    draining slot (the OSC's pinReq meeting a hit) only in the cycle the core answers the OSC's get
    Served. A get that waits for its answer, stalls or is dropped pins nothing. (A pin taken while a
    get waits held the slot a few cycles longer; only a put arriving in that window could tell.)"""
    import cocotb
    from cocotb.triggers import ReadOnly, RisingEdge
    from apta import schema
    if not hasattr(dut, "osc"):     # a flattened netlist (test_ms_ports under RTL_DIR=build/synth)
        return
    served, osc, opc = schema.enum("ReqResult").index("Served"), dut.osc, dut.opc

    async def watch():
        while True:
            await RisingEdge(dut.clock)
            await ReadOnly()
            if int(opc.io_pinReq.value) and int(opc.io_pinHit_valid.value):
                assert int(osc.io_coreResp_valid.value) and int(osc.io_coreResp_ready.value) and \
                    int(osc.io_coreResp_bits_result.value) == served, \
                    "a draining slot pinned in a cycle without a get answered Served"
    cocotb.start_soon(watch())


def malformed_ack(S, obj: int) -> int:
    """An ObjBIRsp of server 0 with a reserved bit set: the core's decoder refuses it (badFlit)."""
    return S.encode("ObjBIRsp", server=0, epoch=0, obj=obj) | 1 << (S.messages["ObjBIRsp"].bits + 3)


def flood_malformed_acks(ms, obj: int) -> dict:
    """Keeps the ack port full of malformed acks (each one a badFlit report of the core, which the
    error port serves before the OPC's) until the returned dict's "on" is cleared; "sent" counts them."""
    import cocotb
    from cocotb.triggers import RisingEdge
    bad, flood = malformed_ack(ms.S, obj), {"on": True, "sent": 0}

    async def feed():
        while flood["on"]:
            while len(ms.inq["birsp"]) < 4:
                ms.inq["birsp"].append(bad)
                flood["sent"] += 1
            await RisingEdge(ms.dut.clock)
    cocotb.start_soon(feed())
    return flood


def data_of(ms, server: int, o: int) -> list[int]:
    fl = ms.rsp_of("ObjData", server=server, obj=o)
    return [f["data"] for f in sorted(fl, key=lambda f: f["line"])]


def keep_open(ms, server: int, o: int, txn: int, every: int = 64) -> dict:
    """Keeps (server, txn)'s open put of o in its slot: its line 0 again every `every` cycles (a
    line restarts the slot's age: ms3t times an open slot out after opcTimeout cycles) until the
    returned dict's "on" is cleared."""
    import cocotb
    from cocotb.triggers import ClockCycles
    flag = {"on": True}

    async def refresh():
        while flag["on"]:
            ms.send(server, "PutLine", epoch=0, obj=o, txn=txn, line=0, data=val(o, txn, 0))
            await ClockCycles(ms.dut.clock, every)
    cocotb.start_soon(refresh())
    return flag


def full_set(first: int = 1) -> tuple[list[int], int, int]:
    """Objects of the directory set of object `first`: the dirWays a reader will share (`held`),
    one more that a writer commits into the full set (`c`: CORE.md commit.I.evict, then
    commit.I.full while the reader never acks), and one object of another set (`e`)."""
    from apta.testbench.core_bfm import load_params, set_of
    P = load_params(VARIANT)
    group = [o for o in range(first, P["mapEntries"]) if set_of(P, o) == set_of(P, first)][:P["dirWays"] + 1]
    e = next(o for o in range(1, P["mapEntries"]) if set_of(P, o) != set_of(P, first))
    return group[:-1], group[-1], e


async def full_set_shared(dut, reader: int):
    """The memory server with full_set()'s objects (2 lines each), the OPC watched (watch_opc), and
    `reader` sharing every way of the set: (ms, held, c, e, events)."""
    held, c, e = full_set()
    ms = await setup(dut, {**{o: 2 for o in held + [c]}, e: 2})
    ev = watch_opc(dut)
    for x in held:
        ms.send(reader, "ObjGet", epoch=0, obj=x)
    await ms.settle()
    return ms, held, c, e, ev


def watch_opc(dut) -> list[tuple[str, int]]:
    """White-box, each cycle from now (ReadOnly): the OPC's core port and lookup results as (event,
    cycle): "req" (a Commit taken by the core), its answer by ReqResult name ("Stall", "Committed",
    "Drop"), "lookup" (a map result for the OPC)."""
    import cocotb
    from cocotb.triggers import ReadOnly, RisingEdge
    from apta import schema
    results, ev, opc = schema.enum("ReqResult"), [], dut.opc

    async def watch():
        c = 0
        while True:
            await RisingEdge(dut.clock)
            await ReadOnly()
            c += 1
            if int(opc.io_coreReq_valid.value) and int(opc.io_coreReq_ready.value):
                ev.append(("req", c))
            if int(opc.io_coreResp_valid.value) and int(opc.io_coreResp_ready.value):
                ev.append((results[int(opc.io_coreResp_bits_result.value)], c))
            if int(opc.io_lkRes_valid.value):
                ev.append(("lookup", c))
    cocotb.start_soon(watch())
    return ev


def slot_beside_answers(dut) -> tuple[set, dict]:
    """White-box, each cycle from now: (the core's ReqResult name, "open" | "complete", slot) for
    each change of a staging slot (Free -> Open, Open -> Complete) in the cycle after an answer
    to the OPC's Commit of the other slot; a test stops it by clearing the returned dict's "on"."""
    import cocotb
    from cocotb.triggers import ReadOnly, RisingEdge
    from apta import schema
    opc, hits, watch = dut.opc, set(), {"on": True}

    async def run():
        results, prev = schema.enum("ReqResult"), None
        while watch["on"]:
            await RisingEdge(dut.clock)
            await ReadOnly()
            st = [int(opc.slots_0_st.value), int(opc.slots_1_st.value)]
            if prev and prev[0]:
                for i in (0, 1):
                    if i != prev[3] and (prev[1][i], st[i]) in ((0, 1), (1, 2)):
                        hits.add((results[prev[2]], "open" if st[i] == 1 else "complete", i))
            prev = (int(opc.io_coreResp_valid.value) and int(opc.io_coreResp_ready.value), st,
                    int(opc.io_coreResp_bits_result.value), int(opc.cSlot.value))
    cocotb.start_soon(run())
    return hits, watch

async def beside_a_stall(dut, mine: int):
    """slot_changes_beside_a_stall with C's puts in slot `mine`."""
    from cocotb.triggers import ClockCycles
    R, W, C = 2, 1, 0
    ms, held, c, e, ans = await full_set_shared(dut, R)
    hits, watch = slot_beside_answers(dut)
    v = 0
    if mine == 0:                                       # C's first put holds slot 0 while W's opens
        v = 1
        ms.send(C, "PutPrepare", epoch=0, obj=e, txn=1)
        await ClockCycles(dut.clock, 20)
    ms.send(W, "PutPrepare", epoch=0, obj=c, txn=1)
    for l in range(2):
        ms.send(W, "PutLine", epoch=0, obj=c, txn=1, line=l, data=val(c, 1, l))
    await ClockCycles(dut.clock, 40)
    if mine == 0:
        for l in range(2):
            ms.send(C, "PutLine", epoch=0, obj=e, txn=1, line=l, data=val(e, 1, l))
    await ClockCycles(dut.clock, 60)
    assert ans and ans[-1][0] == "Stall", f"W's commit does not stall: {ans[-5:]}"
    for change in ("open", "complete"):
        for k in range(16):
            v, e0, t = v + 1, len(ms.err), 2 + v % 8
            if change == "complete":
                ms.send(C, "PutPrepare", epoch=0, obj=e, txn=t)
                ms.send(C, "PutLine", epoch=0, obj=e, txn=t, line=0, data=val(e, v, 0))
                await ClockCycles(dut.clock, 30 + k)
            else:
                await ClockCycles(dut.clock, k)
                ms.send(C, "PutPrepare", epoch=0, obj=e, txn=t)
                await ClockCycles(dut.clock, 30)
                ms.send(C, "PutLine", epoch=0, obj=e, txn=t, line=0, data=val(e, v, 0))
            ms.send(C, "PutLine", epoch=0, obj=e, txn=t, line=1, data=val(e, v, 1))
            await ClockCycles(dut.clock, 80)
            assert len(ms.rsp_of("PutCommit", server=C)) == v and not ms.rsp_of("PutCommit", server=W), \
                (change, k, ms.rsp[-4:])
            assert ms.err[e0:] == [], (change, k, ms.err[e0:])
            assert ms.read_obj(obj_base(e), 2) == [val(e, v, l) for l in range(2)], (change, k)
    watch["on"] = False
    missed = {("Stall", ch, mine) for ch in ("open", "complete")} - hits
    assert not missed, f"no slot change in the cycle of: {sorted(missed)} (the test misses them)"
    for x in held:
        ms.ack(R, 0, x)
    await ms.settle()
    assert ms.rsp_of("PutCommit", server=W, obj=c, txn=1) and ms.read_obj(obj_base(c), 2) == [val(c, 1, l) for l in range(2)]


async def both_slots_free(ms, txn: int, why: str):
    """Servers 1 and 2 each put a 2-line object (3, 4) with `txn`: both must find a free slot (no
    PutRetry) and commit; `why` names what would have kept a slot."""
    n = len(ms.rsp)
    for srv, o in ((1, 3), (2, 4)):
        ms.send(srv, "PutPrepare", epoch=0, obj=o, txn=txn)
    await ms.settle()
    for srv, o in ((1, 3), (2, 4)):
        for l in range(2):
            ms.send(srv, "PutLine", epoch=0, obj=o, txn=txn, line=l, data=val(o, txn, l))
    await ms.settle()
    assert not ms.rsp_of("PutRetry"), f"{why}: {ms.rsp[n:]}"
    assert [(f["server"], f["obj"]) for nm, f in ms.rsp[n:] if nm == "PutCommit"] in ([(1, 3), (2, 4)], [(2, 4), (1, 3)]), ms.rsp[n:]
