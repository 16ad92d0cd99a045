"""Mutation check of the memory server's data path (part of `make rtl-mutants`, so of `make test`).

One Verilator build of the `ms3_mutants` variant (ms3 + io_mutant; ids, names and units in
build/rtl/mutants/mutants.json, defined once in rtl/Mutants.scala). For id 0 (the correct design)
and every mutant of unit "ms" (the OSC / OPC), two independent checks run:

- smoke: every cocotb test of tests/rtl/test_ms_smoke.py, of tests/rtl/test_ms_alloc.py (the
  object-storage allocator: each refusal, exhaustion, a random sequence against its reference
  model) and of tests/rtl/test_ms_hold.py (the hold table of versioned gets); the
  correct design runs all three, a hold-table mutant (hold_*) test_ms_hold only, the others the
  first two; the first failing test is named (a mutant's later tests are skipped once one
  failed);
- workflows: tests/rtl/test_ms_workflows.py's workflows with crashes, a short run
  (APTA_MS_MUTANT_SEEDS seeds, default 2, faults on), every history checked (P1-P4). The hold
  table's mutants (names hold_*) skip it: the workflows issue no versioned get.

Id 0 must pass both; every ms mutant must be caught by at least one (the table says by which).
The core's mutants (unit "core") are tests/rtl/test_core_mutants.py's. Writes
build/coverage/ms_mutants.json.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from apta.testbench.core_bfm import ROOT, variant_dir

VARIANT = "ms3_mutants"
SEEDS = os.environ.get("APTA_MS_MUTANT_SEEDS", "2")


def _modules(name: str) -> tuple[str, ...]:
    """The smoke modules a mutant runs: the correct design all three; a hold-table mutant (hold_*,
    a bug only a versioned get can show) test_ms_hold only; the others smoke and alloc (no
    versioned get reaches their code)."""
    if name == "none":
        return ("test_ms_smoke", "test_ms_alloc", "test_ms_hold")
    return ("test_ms_hold",) if name.startswith("hold_") else ("test_ms_smoke", "test_ms_alloc")


def _smoke(mid: int, modules: tuple[str, ...]) -> dict:
    from apta.testbench.ms_bfm import run_ms_named
    tests, failed = 0, []
    for module in modules:
        n, fails, bad = run_ms_named(VARIANT, module, {"APTA_MS_VARIANT": VARIANT, "APTA_MUTANT": mid})
        tests += n
        if len(bad) > 1:        # later tests are skipped after a failure: these are an RTL assertion's stop
            bad = [f"{bad[0]} (then the simulation stopped: {len(bad) - 1} more)"]
        if fails and not bad:
            bad = [f"{module}: simulation crashed"]
        failed += bad
        if failed and mid:
            break           # caught: its later tests and modules are skipped (core_bfm.skip_after_a_failure)
    return {"tests": tests, "failed": failed}


def _workflows(mid: int) -> dict:
    from apta.testbench.runs import run_ms_workflows as _run_ms
    failed, res = _run_ms(VARIANT, f"-mutant-{mid}", {"APTA_MUTANT": str(mid), "APTA_MS_EXPECT_FAIL": "1",
                                                     "APTA_MS_SEEDS": SEEDS,
                                                     "APTA_MS_CYCLES": "20000"})   # clean runs take < 2k cycles
    runs = res.get("runs", [])
    bad = [r for r in runs if not r["ok"]]
    props = sorted({p for r in bad for p in r["props"]})
    what = []
    if props:
        what.append("history " + "+".join(props))
    if any(r["errors"] for r in bad):
        what.append("runner/env errors")
    if any(not r["finished"] for r in bad):
        what.append("not finished")
    if failed or not runs:
        what.append("run aborted (a compute-server model's protocol check or the sim failed)")
    first = bad[0] if bad else None
    return {"runs": len(runs), "bad": len(bad), "caught": bool(bad) or bool(failed) or not runs,
            "what": ", ".join(what), "first": (f"{first['workflow']} s{first['seed']}: "
                                               f"{(first['violations'] or first['errors'] or ['?'])[0]}"[:160]
                                               if first else "")}


def test_ms_mutants_caught():
    from apta.testbench.runs import need_ms as _need
    _need(VARIANT)          # skip under RTL_DIR (netlists: the core only); with APTA_RTL=1 missing = error
    ms = json.loads((variant_dir("mutants") / "mutants.json").read_text())
    ms = [m for m in ms if m.get("unit") == "ms"]
    assert ms, "no OSC/OPC mutant in mutants.json"
    rows, problems = [], []
    for m in [{"id": 0, "name": "none"}] + ms:
        sm = _smoke(m["id"], _modules(m["name"]))
        wf = (_workflows(m["id"]) if not m["name"].startswith("hold_") else
              {"caught": False, "runs": 0, "bad": 0, "what": "", "first": "n/a: no versioned gets"})
        row = {"id": m["id"], "name": m["name"],
               "smoke": ", ".join(sm["failed"]) if sm["failed"] else "passes",
               "workflows": (wf["what"] + f" ({wf['bad']}/{wf['runs']} runs)") if wf["caught"] else
               wf["first"] if m["name"].startswith("hold_") else f"passes ({wf['runs']} runs)",
               "first": wf["first"]}
        rows.append(row)
        if m["id"] == 0:
            if sm["failed"] or sm["tests"] < 8:
                problems.append(f"mutant 0 (the correct design) fails the smoke: {sm}")
            if wf["caught"]:
                problems.append(f"mutant 0 (the correct design) fails the workflows: {wf}")
        elif not sm["failed"] and not wf["caught"]:
            problems.append(f"mutant {m['id']} {m['name']} not caught")
    w = max(len(r["name"]) for r in rows)
    print(f"\nmutant{' ' * (w - 2)}smoke (failing cocotb tests)                 workflows with crashes ({SEEDS} seeds)")
    for r in rows:
        print(f"{r['id']:3} {r['name']:{w}}  {r['smoke']:44} {r['workflows']}")
    out = ROOT / "build" / "coverage" / "ms_mutants.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    assert not problems, "\n".join(problems)
