"""Replay of the model's memory-server vectors (build/vectors/ms/*.jsonl, rtl/MEMSERVER.md "Test
vectors of the memory server") on the MemoryServer top, variant `msv` (the model's geometry), and on
`msv_mutants` with every deliberate bug of rtl/Mutants.scala.

DRAM is cocotbext-axi's AxiRam; its write-address channel is paused except during a `drain` step, so
a committed put stays in the OPC's staging for as long as it does in the model (the model drains as
separate, nondeterministic steps). Per step: the stimuli are driven, the server runs until nothing
moves; then the flits it emitted are compared (rsp in order with every line's data, snp as a
multiset, ctrlResp, the multiset of `err` codes), each PutCommit's status as it left (commitSeq
advanced, the old sharers' pending invalidations visible: the contract of MEMSERVER.md), and the
state: every object's directory entry (`query`), fenced/epoch/commitSeq (`status`), and DRAM's
contents when no put is draining. A mismatch names the scenario, its file:line, the step, the
model's rule, the field, expected and got.
"""
from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest

from apta.testbench.core_bfm import ROOT
from apta.testbench.ms_bfm import reset as ms_reset
from apta.testbench.runs import MS_VECTORS as VECTORS, load_ms_vectors as load_all, run_ms_vectors as _run

from apta import vectors_io

VARIANT, MUTANTS_VARIANT = "msv", "msv_mutants"
QUIET = 64          # cycles without any port activity that end a step (a get's first beat comes ~12 in)


class Mismatch(AssertionError):
    pass


def _diff(where, field, exp, got):
    raise Mismatch(f"{where}: {field}: expected {exp!r}, got {got!r}")


async def _quiesce(ms, limit: int = 20000):
    """Until every input queue is empty and no flit moved on any port for QUIET cycles."""
    from cocotb.triggers import RisingEdge

    def activity():
        return (len(ms.req_fire), len(ms.rsp), len(ms.snp), len(ms.ctrlResp), len(ms.err), len(ms.r_beats))
    last, still = activity(), 0
    for _ in range(limit):
        await RisingEdge(ms.dut.clock)
        now = activity()
        busy = any(ms.req) or any(ms.inq.values())
        still = 0 if busy or now != last else still + 1
        last = now
        if still >= QUIET:
            return
    raise Mismatch(f"the memory server kept moving for {limit} cycles")


async def _query(ms, obj: int) -> dict:
    """One io_query of obj and its io_queryResp (the BFM's: ms_bfm.Ms.query)."""
    if (q := await ms.query(obj)) is None:
        raise Mismatch(f"no queryResp for object {obj}")
    return q


async def _drain(ms):
    """The model's drain step: DRAM writes flow until the OPC has nothing left (io_idle)."""
    from cocotb.triggers import RisingEdge
    ms.ram.write_if.aw_channel.pause = False
    for _ in range(5000):
        await RisingEdge(ms.dut.clock)
        if int(ms.dut.io_idle.value):
            break
    else:
        raise Mismatch("drain: the OPC never became idle")
    ms.ram.write_if.aw_channel.pause = True


async def replay(ms, sc: dict, mutant: int = 0):
    """One scenario from reset; raises Mismatch at the first difference."""
    from cocotb.triggers import ClockCycles, RisingEdge
    n_model = sc["params"]["servers"]
    objs = {o["obj"]: o for o in sc["objects"].values()}
    for o in objs.values():          # the Object Manager's map entry, put id 0 in every line
        ms.put_map(o["obj"], o["base"], o["size"])
        ms.write_obj(o["base"], [vectors_io.line_word(o["obj"], l, 0) for l in range(o["size"])])
    ms.ram.write_if.aw_channel.pause = True
    d = ms.dut
    await ms_reset(d, mutant=mutant)
    timeout = ms.P.get("opcTimeout", 0)
    for si, step in enumerate(sc["steps"]):
        where = f"{sc['id']} ({sc.get('_where', '')}) step {si} rule {step['rule']!r}"
        mark = {k: len(getattr(ms, k)) for k in ("rsp", "snp", "ctrlResp", "err")}
        for st in step["stimuli"]:
            p = st["port"]
            if p == "req":
                f = {k: st[k] for k in ("epoch", "obj", "txn", "line", "version") if k in st}
                if st["op"] == "PutLine":
                    f["data"] = vectors_io.line_word(st["obj"], st["line"], st["val"])
                ms.send(st["server"], st["op"], **f)
            elif p == "birsp":
                ms.ack(st["server"], st["epoch"], st["obj"])
            elif p == "ctrl":
                ms.ctrl(st["op"], st["server"], st["epoch"])
            elif p == "cancel":
                ms.cancel(st["obj"])
            elif p == "drain":
                await _drain(ms)
            elif p == "timeout":
                if not timeout:
                    _diff(where, "params.opcTimeout", "> 0 for a timeout step", timeout)
                await ClockCycles(d.clock, timeout + 8)
            await _quiesce(ms)
        exp = step["expect"]
        got_rsp = ms.rsp[mark["rsp"]:]
        if len(got_rsp) != len(exp["rsp"]):
            _diff(where, "rsp", exp["rsp"], got_rsp)
        for i, (e, (name, g)) in enumerate(zip(exp["rsp"], got_rsp)):
            if name != e["op"]:
                _diff(where, f"rsp[{i}].op", e["op"], (name, g))
            for k, v in e.items():
                if k == "op":
                    continue
                if k == "val":
                    if g["data"] != vectors_io.line_word(e["obj"], e["line"], v):
                        olds = [w for w in range(4) if g["data"] == vectors_io.line_word(e["obj"], e["line"], w)]
                        _diff(where, f"rsp[{i}] ObjData line {e['line']} data",
                              f"put id {v}", f"put id {olds[0]}" if olds else "other bytes")
                elif g.get(k) != v:
                    _diff(where, f"rsp[{i}].{k}", v, g.get(k))
            if name == "PutCommit":      # the contract: commitSeq advanced, invalidations visible
                stat = ms.rsp_status[mark["rsp"] + i]
                want_pend = sum(1 << c for c in range(n_model)
                                if any(ent["pend"][c] for ent in exp["state"]["objects"].values()))
                if stat["commitSeq"] != exp["state"]["commitSeq"]:
                    _diff(where, f"rsp[{i}] PutCommit left with commitSeq", exp["state"]["commitSeq"],
                          stat["commitSeq"])
                if stat["pending"] & want_pend != want_pend:
                    _diff(where, f"rsp[{i}] PutCommit left with status_pending", bin(want_pend), bin(stat["pending"]))
        key = ("server", "epoch", "obj")
        e = Counter(tuple(m[k] for k in key) for m in exp["snp"])
        g = Counter(tuple(f.get(k) for k in key) for _n, f in ms.snp[mark["snp"]:])
        if e != g:
            _diff(where, "snp (multiset of server, epoch, obj)", sorted(e.elements()), sorted(g.elements()))
        for sn, f in ms.snp[mark["snp"]:]:
            o = objs[f["obj"]]
            if (f.get("base"), f.get("size")) != (o["base"], o["size"]):
                _diff(where, "snp base/size", (o["base"], o["size"]), (f.get("base"), f.get("size")))
        got_ctrl = [{"op": nm, "server": f["server"], "epoch": f["epoch"]} for nm, f in ms.ctrlResp[mark["ctrlResp"]:]]
        if got_ctrl != exp["ctrlResp"]:
            _diff(where, "ctrlResp", exp["ctrlResp"], got_ctrl)
        got_err = sorted(e["code"] for e in ms.err[mark["err"]:])
        if got_err != exp["err"]:
            _diff(where, "err codes", exp["err"], got_err)
        state = exp["state"]
        for ok, want in state["objects"].items():
            q = await _query(ms, int(ok))
            if q["hit"] != (want["state"] != "I"):
                _diff(where, f"query obj {ok}.hit", want["state"] != "I", q["hit"])
            # servers beyond the model's idle: never fenced, owe nothing, schedulable
            if q["schedulableFor"][:n_model] != want["schedulableFor"] or not all(q["schedulableFor"][n_model:]):
                _diff(where, f"query obj {ok}.schedulableFor", want["schedulableFor"], q["schedulableFor"])
            for k in ("state", "sharers"):
                if q[k] != want[k]:
                    _diff(where, f"query obj {ok}.{k}", want[k], q[k])
            if q["pend"][:n_model] != want["pend"] or any(q["pend"][n_model:]):
                _diff(where, f"query obj {ok}.pend", want["pend"], q["pend"])
        fenced = int(d.io_status_fenced.value)
        pending, sched = int(d.io_status_pending.value), int(d.io_status_schedulable.value)
        got = {"fenced": [bool(fenced >> c & 1) for c in range(n_model)],
               "pending": [bool(pending >> c & 1) for c in range(n_model)],
               "schedulable": [bool(sched >> c & 1) for c in range(n_model)],
               "epoch": [ms.epoch(c) for c in range(n_model)],
               "commitSeq": int(d.io_status_commitSeq.value)}
        if "held" in state:           # versioned gets waiting in the hold table
            got["held"] = ms.held()
        for k, v in got.items():
            if v != state[k]:
                _diff(where, f"status.{k}", state[k], v)
        for ok, vals in state.get("mem", {}).items():
            o = objs[int(ok)]
            mem = ms.read_obj(o["base"], o["size"])
            want = [vectors_io.line_word(o["obj"], l, v) for l, v in enumerate(vals)]
            if mem != want:
                got_ids = [next((w for w in range(4) if m == vectors_io.line_word(o["obj"], l, w)), "?")
                           for l, m in enumerate(mem)]
                _diff(where, f"DRAM obj {ok} (put id per line)", vals, got_ids)


# ---- the cocotb test ---------------------------------------------------------------------------
try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def ms_vectors(dut):
        from apta.testbench.ms_bfm import Ms
        variant = os.environ["APTA_VARIANT"]
        scen = json.loads(Path(os.environ["APTA_SCENARIOS"]).read_text())
        mutants = [int(m) for m in os.environ.get("APTA_MUTANTS", "0").split(",")]
        ms = Ms(dut, variant)
        await ms.start()
        t0, result = time.time(), {}
        for m in mutants:
            fails = []
            for sc in scen:
                try:
                    await replay(ms, sc, m)
                except Mismatch as e:
                    fails.append(str(e))
                    # a mutant (io_mutant, or a generated one: rtl/tools/mutation.py) needs one
                    # failing scenario; the first is the evidence
                    if m or os.environ.get("APTA_RTL_MUTANT", "0") != "0":
                        break
            result[str(m)] = fails
        Path(os.environ["APTA_RESULT"]).write_text(json.dumps(
            {"variant": variant, "scenarios": len(scen), "failed": result, "cycles": ms.cycles,
             "seconds": round(time.time() - t0, 1)}, indent=1))
        if mutants == [0]:
            fails = result["0"]
            assert not fails, f"{len(fails)} of {len(scen)} scenarios differ:\n" + "\n".join(fails[:20])


# ---- pytest side --------------------------------------------------------------------------------
@pytest.mark.rtl_variants("msv")
def test_ms_vectors_replay():
    scen = load_all()
    res = _run(VARIANT, scen, [0])
    fails = res["failed"]["0"]
    cells = sorted({sc["cell"] for sc in scen})
    print(f"\nmemory-server vectors on {VARIANT}: {len(scen) - len(fails)}/{len(scen)} scenarios pass "
          f"({len(cells)} cells), {res['cycles']:,} cycles, {res['seconds']} s")
    assert not fails, f"{len(fails)} of {len(scen)} scenarios differ:\n" + "\n".join(fails[:10])


@pytest.mark.rtl_variants("msv_mutants", "mutants")
def test_ms_vectors_catch_mutants():
    """Every OSC/OPC mutant the model's steps can show must fail some vector; the ones whose bug
    needs concurrency a settled step never has are listed (tests/rtl/test_ms_mutants.py catches
    them with directed races)."""
    mut = json.loads((ROOT / "build" / "rtl" / "mutants" / "mutants.json").read_text())
    # (unit sram: the directory's forwarding, visible only on the read-first SRAM model and only in
    # a directory of 2+ sets; msv's is one register: test_core_sram.py)
    mut = [m for m in mut if m["unit"] != "sram"]
    scen = load_all()
    res = _run(MUTANTS_VARIANT, scen, [0])
    assert not res["failed"]["0"], f"{MUTANTS_VARIANT} with io_mutant=0 fails: {res['failed']['0'][:3]}"
    for m in mut:   # one simulation per mutant: an RTL assertion that stops one stops only its run
        r = _run(MUTANTS_VARIANT, scen, [m["id"]], stoppable=True)
        res["failed"][str(m["id"])] = (r["failed"][str(m["id"])] if r else
                                       ["an RTL assertion stopped the simulation (see its log above)"])
    rows, missed = [], []
    for m in mut:
        f = res["failed"][str(m["id"])]
        rows.append(f"  {m['id']:2} {m['unit']:4} {m['name']:26} {'caught: ' + f[0][:110] if f else 'not caught'}")
        if not f:
            missed.append(m)
    print("\nmemory-server vectors against the mutants:\n" + "\n".join(rows))
    out = ROOT / "build" / "coverage"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ms-vectors-mutants.json").write_text(json.dumps(
        {str(m["id"]): {"name": m["name"], "unit": m["unit"], "caught": bool(res["failed"][str(m["id"])]),
                        "evidence": (res["failed"][str(m["id"])] or [None])[0]} for m in mut}, indent=1))
    must = {"osc_no_forward", "fence_keeps_open_put", "commit_before_core",
            # the hold table's: osc.hold, osc.hold.keep and osc.hold.full show them
            "hold_release_old", "hold_drop_at_writer_fence", "hold_full_no_retry"}
    assert not [m for m in missed if m["name"] in must], f"vectors miss mutants {[m['name'] for m in missed]}"
