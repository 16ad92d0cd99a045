"""`make rtl-mutants`: the regression must catch every deliberate bug of the `mutants` variant.

Two Verilator builds with an io_mutant input (ids and names in build/rtl/mutants/mutants.json,
0 = the correct design): `mutants_m2s1w1` (the geometry of the model's 2-server configurations)
replays every vector of that geometry, and `mutants` (the stress geometry) runs a shorter stress
(APTA_MUTANT_OPS, default 15k operations). Id 0 must pass both; every other id must be caught by
both, each independently: the model's vectors have teeth (the first scenario that caught the
mutant is reported), and so does the scoreboard. Prints the table; writes
build/coverage/mutants.json.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from apta.testbench.core_bfm import ROOT, variant_dir

OPS = int(os.environ.get("APTA_MUTANT_OPS", "15000"))


def _stress(mid: int) -> dict:
    from apta.testbench.core_bfm import run
    out = ROOT / "build" / "coverage" / "mutants" / f"stress-{mid}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    n, failed = run("mutants", "test_core_stress", {"APTA_OPS": OPS, "APTA_SEED": 3, "APTA_MUTANT": mid,
                                                    "APTA_RESULT": out}, results_name=f"mutant-{mid}.xml")
    res = json.loads(out.read_text()) if out.exists() else {"violation": {"check": "simulation crashed", "text": ""}}
    res["failed"] = failed > 0 or n != 1
    return res


def _vectors(mid: int, scen_file: Path) -> dict:
    """Replay the vectors of the mutants_m2s1w1 geometry with io_mutant = mid."""
    from apta.testbench.core_bfm import run
    res = ROOT / "build" / "coverage" / "mutants" / f"vectors-{mid}.json"
    if res.exists():
        res.unlink()
    n, failed = run("mutants_m2s1w1", "test_core_vectors", {"APTA_SCENARIOS": scen_file, "APTA_RESULT": res,
                                                             "APTA_MUTANT": mid},
                    results_name=f"vectors-mutant-{mid}.xml")
    r = json.loads(res.read_text()) if res.exists() else {"failed": ["simulation crashed"], "scenarios": 0}
    r["caught"] = failed > 0 or n != 1
    return r


def _scenario_file() -> tuple[Path, int]:
    from apta.testbench.runs import load_core_vectors as load_all, match_variant
    from apta.testbench.core_bfm import load_params
    geo = load_params("mutants_m2s1w1")
    scen = [sc for sc in load_all() if match_variant(sc["params"], {"m": geo})]
    f = ROOT / "build" / "coverage" / "mutants" / "vectors-m2s1w1.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(scen))
    return f, len(scen)


@pytest.mark.rtl_variants("mutants", "mutants_m2s1w1")
def test_mutants_caught():
    ms = json.loads((variant_dir("mutants") / "mutants.json").read_text())
    if isinstance(ms, dict):
        ms = ms.get("mutants", list(ms.values()))
    ms = [m for m in ms if m.get("unit", "core") == "core"]   # the OSC/OPC's: tests/rtl/test_ms_mutants.py
    scen_file, n_scen = _scenario_file()
    assert n_scen, "no vector matches the mutants_m2s1w1 geometry: run `make vectors`"
    rows, problems = [], []
    base, vbase = _stress(0), _vectors(0, scen_file)
    rows.append({"id": 0, "name": "none", "vectors": "passes" if not vbase["caught"] else "FAILS",
                 "stress": "passes" if not base["failed"] else f"FAILS: {base['violation']}", "ops": base.get("ops")})
    if base["failed"]:
        problems.append(f"mutant 0 (the correct design) fails the stress: {base['violation']}")
    if vbase["caught"]:
        problems.append(f"mutant 0 (the correct design) fails the vectors: {vbase['failed'][:3]}")
    for m in ms:
        r, vr = _stress(m["id"]), _vectors(m["id"], scen_file)
        v = r.get("violation") or {}
        # a scoreboard check, or an RTL assertion that stopped the simulation first (rtl/otc/Otc.scala)
        caught = (v.get("check") or "RTL assertion (simulation stopped)") if r["failed"] else None
        vcaught = (f"{len(vr['failed'])}/{n_scen}, first {vr['failed'][0].split(' ')[0]}"
                   if vr["caught"] and vr["failed"] else ("crashed" if vr["caught"] else None))
        rows.append({"id": m["id"], "name": m["name"], "vectors": vcaught or "not caught",
                     "stress": caught or "not caught", "ops": r.get("ops")})
        if not caught:
            problems.append(f"mutant {m['id']} {m['name']} not caught by the stress ({r.get('ops')} ops)")
        if not vcaught:
            problems.append(f"mutant {m['id']} {m['name']} not caught by the model's vectors")
    w = max(len(r["name"]) for r in rows)
    print(f"\nmutant{' ' * (w - 2)}vectors ({n_scen} scenarios: failing, first)      stress check (ops)")
    for r in rows:
        print(f"{r['id']:3} {r['name']:{w}}  {r['vectors']:42} {r['stress']} ({r['ops']})")
    out = ROOT / "build" / "coverage" / "mutants.json"
    out.write_text(json.dumps(rows, indent=1))
    assert not problems, "\n".join(problems)
