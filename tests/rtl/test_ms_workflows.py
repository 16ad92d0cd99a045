"""End-to-end regression of the RTL memory server (rtl/MEMSERVER.md v1, top `MemoryServer`,
variant ms3): the compute-server models of compute_server.py run every workflow script (the five
patterns' scenarios of workloads/patterns/ and the six Table III applications of tests/workflows/)
against the Verilated RTL, with crashes at random points (mid-get, mid-put, owing acks, holding
copies), false suspicions, fencing and rejoin; every history is checked with python/apta/history.py (P1-P4) and written to
build/ms/histories/<variant>/<workflow>-s<seed>.jsonl (the rule-off mutant run: <variant>-rule-off/).

The environment (`MsEnv`) is the compute servers' side of the links and the control plane:
* `io_req_<i>` (one per server), `io_birsp`: the models' flits, in order per server and channel,
  one per cycle per port; flits a crashed server had sent stay in flight (zombies).
* `io_rsp`, `io_snp`: decoded and routed by their `server` field to the model, after a random
  delay of 0..4 cycles (0..24 for the directed races) (FIFO per server and channel; the two channels race, so a BISnp can overtake an ObjData or
  a PutCommit). A PutCommit is recorded as the memory server's `commit` when it leaves `io_rsp`
  (even if its writer has crashed), before the writer sees it.
* control plane: `io_ctrl` Fence, `io_ctrlResp` echo (= the fence took effect), `io_status_*`,
  and `io_query`/`io_queryResp` (`schedulableFor`) for the declared-input rule: an answer counts
  only if its query was issued after the runner first asked for that placement (TLA-C1).
* `io_mapUpd`: the object map is written before the workflow (one entry per object).
* memory: cocotbext-axi's `AxiRam` behind `axi_*` (0.1.28, runs under cocotb 2.1), on the bus
  mapping and the Verilator build of rtl/testbench/ms_bfm.py (the RTL helper's BFM).
* `io_err`: zombie (3), noTxn (7, lines after a PutRetry) and fenceAbort (11) are expected; any
  other code fails the run.

pytest side: `test_ms_workflows` builds the variant once and runs one simulation over every
workflow and seed (APTA_MS_SEEDS, default 4; APTA_MS_FAULTS, default 3 faults per run).
"""
from __future__ import annotations

import json
import logging
import os
import random
import time
from collections import deque
from pathlib import Path

import pytest
from apta import schema
from apta.testbench.ms_bfm import AxiWatch, IdleWatch, bit
from apta.testbench.ms_bfm import reset as ms_reset
from apta.testbench.runs import MS_TOP as TOP, ms_missing, need_ms as _need, run_ms_workflows as _run_ms
from apta.testbench.compute_server import (ComputeServer, ControlPlane, FaultPlan, Transport,
                            WorkflowRunner, object_table)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

VARIANTS = ["ms3"]
# err codes a correct run produces: zombie flits of a crashed or fenced server, open puts freed by a
# fence, and the line writes that follow a PutPrepare answered PutRetry (staging full: the writer
# only learns it after it sent the lines; it then resends the whole put)
EXPECTED_ERR = {schema.ms_error_code(n): n for n in ("zombie", "noTxn", "fenceAbort")}


# ---- the cocotb side ---------------------------------------------------------------------------
class _InPort:
    """A Decoupled input of flits (or of field dicts): a FIFO, the head held until it fires."""

    def __init__(self, dut, name, fields=None):
        self.valid = getattr(dut, f"io_{name}_valid")
        self.ready = getattr(dut, f"io_{name}_ready")
        self.bits = getattr(dut, f"io_{name}_bits") if fields is None else None
        self.fields = {f: getattr(dut, f"io_{name}_bits_{f}") for f in (fields or [])}
        self.q = deque()
        self.cur = None
        self.valid.value = 0
        self.on = 0              # the valid last written: written again only when it changes

    def drive(self):
        if self.cur is None and self.q:
            self.cur = self.q.popleft()
            if self.bits is not None:
                self.bits.value = self.cur
            else:
                for f, s in self.fields.items():
                    s.value = self.cur[f]
        on = int(self.cur is not None)
        if on != self.on:
            self.valid.value = self.on = on

    def sample(self):
        if self.cur is not None and bit(self.ready):
            self.cur = None
            return True
        return False


class MsEnv(Transport, ControlPlane):
    def __init__(self, dut, params, schema, rng, max_delay=4):
        self.dut, self.p, self.S, self.rng = dut, params, schema, rng
        self.n = params["servers"]
        self.idle = IdleWatch(dut, self.n, int(params.get("opcTimeout", 0)))   # io_idle's contract, every cycle
        self.axi = AxiWatch(dut)                                                 # the AXI master's contract
        self.max_delay = max_delay
        self.cycle = 0
        self.req = [_InPort(dut, f"req_{i}") for i in range(self.n)]
        self.birsp = _InPort(dut, "birsp")
        self.ctrl = _InPort(dut, "ctrl")
        self.query = _InPort(dut, "query", ["obj"])
        self.mapupd = _InPort(dut, "mapUpd", ["obj", "size", "valid"])
        self.ins = self.req + [self.birsp, self.ctrl, self.query, self.mapupd]
        for port in ("rsp", "snp", "ctrlResp"):
            getattr(dut, f"io_{port}_ready").value = 1
        self.deliver = {}                 # (sid, channel) -> deque[(due, flit)]
        self.models, self.runner = [], None
        self.answers = {}                 # obj -> (cycle the query was issued, schedulableFor bitmap)
        self.q_inflight = {}              # obj -> cycle issued
        self.map_done = {}                # obj -> the base the memory server allocated
        self.errors, self.err_counts = [], {}
        self.status = {}
        self.trace = None                 # ms_trace.MsTrace: the event log for trace validation

    # Transport
    def send(self, server, channel, flit):
        (self.req[server] if channel == "req" else self.birsp).q.append(flit)

    # ControlPlane
    def schedulable(self, server, objs, since=0):
        """status_* are sampled every cycle (current); a per-object answer counts only if its
        query was issued after the function became ready (`since`, TLA-C1); else it is asked."""
        if (self.status.get("fenced", 0) >> server) & 1:
            return False
        if objs is None:
            return bool((self.status.get("schedulable", 0) >> server) & 1)
        if not objs:
            return True
        stale = [o for o in objs if o not in self.answers or self.answers[o][0] < since]
        if stale:
            for o in stale:
                if o not in self.q_inflight:
                    self.q_inflight[o] = self.cycle
                    self.query.q.append({"obj": o})
            return None
        ok = all((self.answers[o][1] >> server) & 1 for o in objs)
        if not ok:                                  # a refusal: ask again for the next try
            for o in objs:
                self.answers.pop(o, None)
        return ok

    def fence(self, server, epoch):
        self.ctrl.q.append(self.S.encode("Fence", server=server, epoch=epoch))

    # the clock
    async def tick(self):
        from cocotb.triggers import ReadOnly, RisingEdge
        d = self.dut
        await RisingEdge(d.clock)
        self.cycle += 1
        for p in self.ins:
            p.drive()
        await ReadOnly()
        tr = self.trace
        if tr:
            tr.sample_core(self.cycle)
        for p in self.ins:
            flit = p.cur
            if p.sample() and tr:
                if p in self.req:
                    tr.req_fired(self.req.index(p), flit)
                elif p is self.birsp:
                    tr.birsp_fired(flit)
        st = self.status
        st["fenced"] = int(d.io_status_fenced.value)
        st["schedulable"] = int(d.io_status_schedulable.value)
        st["pending"] = int(d.io_status_pending.value)
        st["idle"] = int(d.io_idle.value)
        self.idle.sample(self.cycle)
        self.axi.sample(self.cycle)
        if tr:
            tr.status(st["fenced"])
        if bit(d.io_rsp_valid):
            self._rsp(int(d.io_rsp_bits.value))
        if bit(d.io_snp_valid):
            flit = int(d.io_snp_bits.value)
            _, m = self.S.decode(flit)
            if tr:
                tr.snp_out(m)
            self._later(m["server"], "snp", flit)
        if bit(d.io_ctrlResp_valid):
            name, m = self.S.decode(int(d.io_ctrlResp_bits.value))
            if name == "Fence" and self.runner:
                self.runner.on_fenced(m["server"], m["epoch"])
        if bit(d.io_queryResp_valid):
            o = int(d.io_queryResp_bits_obj.value)
            issued = self.q_inflight.pop(o, self.cycle)
            self.answers[o] = (issued, int(d.io_queryResp_bits_schedulableFor.value))
        if bit(d.io_mapUpdDone_valid):
            assert int(d.io_mapUpdDone_bits_code.value) == schema.enum("MapUpdCode").index("ok"), "registration refused"
            self.map_done[int(d.io_mapUpdDone_bits_obj.value)] = int(d.io_mapUpdDone_bits_base.value)
        if bit(d.io_err_valid):
            code = int(d.io_err_bits_code.value)
            if tr and code == schema.ms_error_code("zombie"):
                tr.zombie(int(d.io_err_bits_server.value), int(d.io_err_bits_opcode.value))
            self.err_counts[code] = self.err_counts.get(code, 0) + 1
            if code not in EXPECTED_ERR:
                self.errors.append(f"cycle {self.cycle}: err code {code} server {int(d.io_err_bits_server.value)} "
                                   f"obj {int(d.io_err_bits_obj.value)} opcode {int(d.io_err_bits_opcode.value)}")
        for (sid, ch), q in self.deliver.items():
            while q and q[0][0] <= self.cycle:
                _, flit = q.popleft()
                self.models[sid].receive(ch, flit)

    def _later(self, sid, ch, flit):
        q = self.deliver.setdefault((sid, ch), deque())
        due = max([self.cycle + self.rng.randint(0, self.max_delay)] + [x for x, _ in q])
        q.append((due, flit))

    def _rsp(self, flit):
        name, m = self.S.decode(flit)
        if self.trace:
            self.trace.rsp_out(name, m)
        if name == "PutCommit" and self.runner:
            self.runner.on_commit(m["server"], m["epoch"], m["obj"], m["txn"])
        self._later(m["server"], "rsp", flit)

    def quiet(self):
        return (self.status.get("idle") and all(p.cur is None and not p.q for p in self.ins)
                and not any(self.deliver.values()))


async def run_one(dut, params, S, script, seed, faults, ram, log):
    rng = random.Random(seed)
    await ms_reset(dut, cycles=4)
    ram.write(0, bytes(ram.size))          # every object back to version 0 (zeros), map cleared
    env = MsEnv(dut, params, S, random.Random(seed + 77))
    dut.io_memBytes.value = ram.size           # the allocator's arena ends with the RAM
    ids, sizes = object_table(script, params["linesPerObject"])
    for o, k in ids.items():      # the memory server allocates each object's storage (mapUpdDone names it)
        env.mapupd.q.append({"obj": k, "size": sizes[k], "valid": 1})
    for _ in range(20000):
        await env.tick()
        if len(env.map_done) == len(ids):
            break
    else:
        raise AssertionError(f"{script.name}: mapUpdDone for {sorted(env.map_done)} of {sorted(ids.values())}")
    epochs = [int(getattr(dut, f"io_status_epoch_{i}").value) for i in range(params["servers"])]
    ack_delay = int(os.environ.get("APTA_MS_ACK_DELAY", (4, 40)[(seed + len(script.name)) % 2]))  # 40: crashes owing acks
    env.max_delay = int(os.environ.get("APTA_MS_DELAY", "24" if script.name == "races" else "4"))  # races: BISnp overtakes ObjData
    models = [ComputeServer(k, S, env, sizes, epoch=epochs[k], rng=random.Random(seed * 31 + k), ack_delay=ack_delay)
              for k in range(params["servers"])]
    env.models = models
    rule = os.environ.get("APTA_MS_RULE") or ("declared" if seed % 2 == 0 else "all")
    runner = WorkflowRunner(script, models, env, rng=rng, rule=rule,
                            faults=FaultPlan(faults=faults, p=0.02, prefer=("owing-acks",) if ack_delay > 8 else ()), obj_ids=ids, txn_bits=S.params["txnBits"],
                            meta={"seed": seed, "source": f"rtl:{os.environ.get('APTA_VARIANT')}"})
    env.runner = runner
    tag = os.environ.get("APTA_VARIANT", "ms3") + os.environ.get("APTA_MS_TAG", "")
    from apta.rtl.ms_trace import MsTrace
    env.trace = MsTrace(dut, S, script, runner, models, ids, sizes,
                        {"source": f"rtl:{tag}", "seed": seed, "variant": os.environ.get("APTA_VARIANT"),
                         "mutant": int(os.environ.get("APTA_MUTANT", "0")),
                         "dir_entries": params["dirSets"] * params["dirWays"]})
    limit = int(os.environ.get("APTA_MS_CYCLES", "200000"))
    for _ in range(limit):
        await env.tick()
        runner.step(env.cycle)
        if runner.finished() and env.quiet():
            break
    for _ in range(2000):                 # drain: the OPC's staging to DRAM
        if env.quiet():
            break
        await env.tick()

    def read_object(obj, size):
        base = env.map_done[obj]
        return [int.from_bytes(ram.read(base + 64 * l, 64), "little") for l in range(size)]

    rec = runner.finish(read_object)
    from apta.testbench.core_bfm import out_root
    out = (out_root() / "ms" / "histories" / (os.environ.get("APTA_VARIANT", "ms3") + os.environ.get("APTA_MS_TAG", ""))
           / f"{script.name}-s{seed}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    rec.write(out)
    env.trace.write(out_root() / "trace" / "ms" / tag / f"{script.name}-s{seed}.ndjson")
    rep = rec.check(str(out))
    res = {"workflow": script.name, "seed": seed, "rule": rule, "ack_delay": ack_delay, "cycles": env.cycle,
           # a run that hit its cycle limit, or left the memory server busy or a request
           # unanswered, fails even when its history is clean
           "ok": rep.ok and not env.errors and not runner.errors and runner.finished() and env.quiet(),
           "idle_at_end": bool(env.quiet()),
           "props": rep.props(),
           "violations": [str(v) for v in rep.violations[:10]], "errors": (env.errors + runner.errors)[:10],
           "faults": runner.fault_log, "stats": rep.stats, "err_counts": env.err_counts,
           "finished": runner.finished(),
           "model_stats": [m.stats for m in models]}
    log(f"{script.name} seed {seed}: {'ok' if res['ok'] else 'FAIL'} in {env.cycle} cycles, faults {runner.fault_log}, "
        f"{rep.stats}")
    return res


def race_script(rounds=8):
    """A directed script (not a workflow of the paper; built here, not loaded from a file; run with
    slow, uneven delivery, APTA_MS_DELAY 24) whose
    functions race on purpose: per round, three readers take copies of x; then w1 (c1) and w2 (c2)
    put x concurrently (each holding a copy: a BISnp for the other's commit hits its P_A: P_A_I),
    w3 (c3) puts y at the same time (three puts, two staging slots: PutRetry), and g (c3) gets x
    while they run (a BISnp can overtake its ObjData: IS_D_I). Unordered accesses of one object
    are outside P1's promise only in what they may return; the history must still be clean."""
    from apta.workflow import Script, Task
    tasks, prev = [], []
    tasks.append(Task("seed", "seed", 0, "c1", [], [], ["x", "y"]))
    prev = ["seed"]
    for r in range(rounds):
        rd = [f"rd{r}_{k}" for k in (1, 2, 3)]
        for k, n in enumerate(rd):
            tasks.append(Task(n, n, 0, f"c{k + 1}", list(prev), ["x"], []))
        ws = [(f"w{r}_1", "c1", ["x"]), (f"w{r}_2", "c2", ["x"]), (f"w{r}_3", "c3", ["y"])]
        for n, srv, wr in ws:
            tasks.append(Task(n, n, 0, srv, list(rd), [], wr))
        tasks.append(Task(f"g{r}", f"g{r}", 0, "c3", list(rd), ["x"], []))
        prev = [n for n, _, _ in ws] + [f"g{r}"]
    return Script(path="<race_script>", name="races", servers=["c1", "c2", "c3"], objects={"x": 8, "y": 8},
                  inputs=[], tasks=tasks, functions=[t.fn for t in tasks], kind="directed")


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def ms_workflows(dut):
        from cocotbext.axi import AxiRam
        from apta.testbench.ms_bfm import axi_bus
        from apta.testbench.core_bfm import load_params, schema_for, start_clock
        from apta import workflow
        variant = os.environ["APTA_VARIANT"]
        params = load_params(variant)
        S = schema_for(params)
        start_clock(dut)
        ram = AxiRam(axi_bus(dut), dut.clock, dut.reset, size=1 << 20)
        for part in (ram.write_if, ram.read_if):
            part.log.setLevel(logging.WARNING)
        seeds = int(os.environ.get("APTA_MS_SEEDS", "4"))
        faults = int(os.environ.get("APTA_MS_FAULTS", "3"))
        only = os.environ.get("APTA_MS_ONLY")
        results = []
        t0 = time.time()
        scripts = workflow.load_scripts(workflow.PATTERN_DIR, ROOT / "tests" / "workflows")
        if os.environ.get("APTA_MS_RACES", "1") == "1":
            scripts.append(race_script())
        for script in scripts:
            if only and script.name not in only.split(","):
                continue
            for seed in range(1, seeds + 1):
                results.append(await run_one(dut, params, S, script, seed, faults, ram, dut._log.info))
        out = os.environ.get("APTA_RESULT")
        if out:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(json.dumps({"variant": variant, "seconds": round(time.time() - t0, 1),
                                             "runs": results}, indent=1, default=str))
        if os.environ.get("APTA_MS_EXPECT_FAIL") == "1":
            return                       # a mutant run: the pytest side reads the results
        bad = [r for r in results if not r["ok"]]
        assert not bad, "\n".join(f"{r['workflow']} seed {r['seed']}: {r['violations']} {r['errors']}" for r in bad)


# ---- pytest side --------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_ms_workflows(variant):
    """Every workflow x APTA_MS_SEEDS seeds on the RTL, faults injected; every history clean (P1-P4),
    every instance completed, no unexpected err; every fault kind injected somewhere
    (build/ms/workflows-<variant>.json has the per-run numbers, build/ms/histories/ the histories)."""
    _need(variant)
    failed, res = _run_ms(variant, "")
    runs = res.get("runs", [])
    bad = [r for r in runs if not r["ok"]]
    assert not failed and runs and not bad, f"ms_workflows on {variant}: {json.dumps(bad, default=str)[:3000]}"
    from apta import workflow
    assert {r["workflow"] for r in runs} >= {s.name for s in workflow.load_scripts(workflow.PATTERN_DIR, ROOT / "tests" / "workflows")} or os.environ.get("APTA_MS_ONLY")
    kinds = {k for r in runs for _, k, _ in r["faults"]}
    if not os.environ.get("APTA_MS_ONLY") and int(os.environ.get("APTA_MS_FAULTS", "3")) > 0:
        from apta.testbench.compute_server import FAULT_KINDS
        assert kinds == set(FAULT_KINDS), f"fault kinds never injected: {set(FAULT_KINDS) - kinds}"
    races = [r for r in runs if r["workflow"] == "races"]
    if races:                      # the directed races reach PutRetry (staging full) and P_A_I
        tot = {k: sum(m[k] for r in races for m in r["model_stats"]) for k in ("retries", "P_A_I", "IS_D_I", "snoops")}
        assert tot["retries"] > 0 and tot["P_A_I"] > 0 and tot["IS_D_I"] > 0, f"races reached {tot}"


@pytest.mark.parametrize("variant", VARIANTS)
def test_ms_scheduler_rule_off_caught(variant):
    """The same bench with the scheduler rule switched off (functions placed on servers with
    pending invalidations, acks slow): the checker must report P1 on some history, and nothing else
    than P1. Shows the RTL regression can see a stale read at all."""
    _need(variant)
    failed, res = _run_ms(variant, "-rule-off", {"APTA_MS_RULE": "off", "APTA_MS_EXPECT_FAIL": "1", "APTA_MS_FAULTS": "0",
                                                 "APTA_MS_ACK_DELAY": "60", "APTA_MS_DELAY": "12",
                                                 "APTA_MS_SEEDS": os.environ.get("APTA_MS_SEEDS", "4")})
    runs = res.get("runs", [])
    props = {p for r in runs for p in r["props"]}
    assert not failed and runs, "the rule-off run did not complete"
    assert props == {"P1"}, f"rule off: expected P1 violations only, got {props}"
