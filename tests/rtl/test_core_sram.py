"""The OTC on a read-first directory SRAM (rtl/testbench/sram.py, APTA_SRAM=read-first).

firtool's simulation model of the directory memory returns the data written in the same cycle, so
with it the OTC's forwarding register (rtl/otc/Otc.scala) is never needed and a design without it
passes every test. Here the bench's read-first model replaces it:
- the correct design passes the stress (stress and default geometries: 2 and 64 sets) and the
  control unit's sequences (the fence walk reads and writes every set) on it;
- the hand-made mutant `otc_no_forward` (rtl/Mutants.scala, the `mutants` variant) passes the
  stress on firtool's model and is caught on the read-first one: the model has teeth, and the
  forwarding is what a real SRAM needs.
The mutation group core-sets runs its tests on this model (rtl/tools/mutation.py).
"""
from __future__ import annotations

import json
import os
import re
from unittest import mock

import pytest

from apta.testbench import sram
from apta.testbench.core_bfm import ROOT, rtl_dir_overridden, variant_dir

OPS = int(os.environ.get("APTA_SRAM_OPS", "15000"))


def _skip_on_netlists():
    if rtl_dir_overridden():
        pytest.skip("the SRAM model replaces firtool's memory modules; a gate-level netlist has none")


def test_read_first_rewrites_firtools_memory_and_refuses_other_shapes(tmp_path):
    src = ROOT / "build" / "rtl" / "stress" / "CoherenceCore.sv"      # firtool's, whatever RTL_DIR says
    if not src.exists():
        assert os.environ.get("APTA_RTL") != "1", f"{src} missing: `make rtl` did not run"
        pytest.skip(f"{src} missing: run `make rtl`")
    text = src.read_text()
    out, n = sram.read_first(text, str(src))
    assert n == len(re.findall(r"^module mem_\d+x\d+\(", text, re.M)) == 1
    assert "Memory[_R0_addr_d0]" in text and "Memory[_R0_addr_d0]" not in out
    assert "_R0_data_q <= Memory[R0_addr];" in out
    # everything but the memory module is unchanged
    strip = lambda t: re.sub(r"^(// rtl/testbench/sram.py[^\n]*\n)?module mem_\d+x\d+\(.*?^endmodule\n", "", t,
                             flags=re.S | re.M)
    assert strip(out) == strip(text)
    # a memory of another shape (two read ports) is refused, naming the file and the module
    bad = text.replace("output [195:0] R0_data,", "output [195:0] R0_data,\n  input R1_addr,", 1)
    with pytest.raises(ValueError, match=r"x\.sv: module mem_2x196 is not firtool's"):
        sram.read_first(bad, "x.sv")
    # a design without a memory (m2s1w1's one-set directory is a register) is refused
    f = tmp_path / "CoherenceCore.sv"
    f.write_text("module CoherenceCore(); endmodule\n")
    with mock.patch.dict(os.environ, APTA_SRAM="read-first"):
        with pytest.raises(ValueError, match="no memory module"):
            sram.bench_sources([f], tmp_path)
    with mock.patch.dict(os.environ, APTA_SRAM="read-last"):
        with pytest.raises(ValueError, match="APTA_SRAM='read-last'"):
            sram.bench_sources([f], tmp_path)


def _stress(variant: str, mid: int | None, model: str) -> dict:
    from apta.testbench.core_bfm import run
    tag = f"{variant}-{model}-{mid}"
    out = ROOT / "build" / "coverage" / "sram" / f"stress-{tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    env = {"APTA_OPS": OPS, "APTA_SEED": 3, "APTA_RESULT": out}
    if mid is not None:
        env["APTA_MUTANT"] = mid
    with mock.patch.dict(os.environ, APTA_SRAM=model):
        n, failed = run(variant, "test_core_stress", env, results_name=f"sram-{tag}.xml")
    res = json.loads(out.read_text()) if out.exists() else {"violation": "the simulation stopped (an RTL assertion)"}
    res["failed"] = failed > 0 or n != 1
    return res


@pytest.mark.rtl_variants("stress", "default")
@pytest.mark.parametrize("variant", ["stress", "default"])
def test_stress_passes_on_a_read_first_sram(variant):
    _skip_on_netlists()
    res = _stress(variant, None, "read-first")
    assert not res["failed"], f"{variant} on a read-first SRAM: {res.get('violation')}"
    assert res["ops"] >= OPS


@pytest.mark.rtl_variants("stress")
def test_ctrl_sequences_pass_on_a_read_first_sram(monkeypatch):
    _skip_on_netlists()
    from apta.testbench.core_bfm import run
    monkeypatch.setenv("APTA_SRAM", "read-first")
    # test_core_ctrl's cocotb module (the simulator loads it by name; its pytest test is not imported)
    n, failed = run("stress", "test_core_ctrl", {}, results_name="ctrl.xml")
    assert n == 1 and failed == 0, "stress: see build/sim/stress*/ctrl.xml"


@pytest.mark.rtl_variants("mutants")
def test_forwarding_is_needed_only_with_a_read_first_sram():
    _skip_on_netlists()
    ms = json.loads((variant_dir("mutants") / "mutants.json").read_text())
    mid = next(m["id"] for m in ms if m["name"] == "otc_no_forward")
    assert not _stress("mutants", 0, "read-first")["failed"], "the correct design fails on a read-first SRAM"
    # firtool's model returns the new data: nothing can see the missing forward (why this model exists)
    fw = _stress("mutants", mid, "firtool")
    assert not fw["failed"], f"otc_no_forward caught on firtool's model ({fw.get('violation')}): " \
        "the bench's memory model changed; rtl/testbench/sram.py's reason to exist is gone"
    rf = _stress("mutants", mid, "read-first")
    assert rf["failed"], f"otc_no_forward passes {rf.get('ops')} operations on a read-first SRAM"
    print(f"\notc_no_forward: passes on firtool's model ({fw.get('ops')} ops), caught on a read-first SRAM: "
          f"{rf.get('violation')}")
