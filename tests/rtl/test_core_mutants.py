"""`make rtl-mutants`: the regression must catch every deliberate bug of the `mutants` variant.

One Verilator build of build/rtl/mutants/ (the stress geometry plus an io_mutant input, ids and
names in build/rtl/mutants/mutants.json, 0 = the correct design). For each id the vectors that
match the geometry (if any) and a shorter stress run (APTA_MUTANT_OPS, default 15k operations)
are run; id 0 must pass, every other id must fail. Prints a table mutant -> the check that caught
it; writes build/coverage/mutants.json.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from core_bfm import ROOT, variant_dir  # noqa: E402

OPS = int(os.environ.get("APTA_MUTANT_OPS", "15000"))


def _stress(mid: int) -> dict:
    from core_bfm import run
    out = ROOT / "build" / "coverage" / "mutants" / f"stress-{mid}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    n, failed = run("mutants", "test_core_stress", {"APTA_OPS": OPS, "APTA_SEED": 3, "APTA_MUTANT": mid,
                                                    "APTA_RESULT": out}, results_name=f"mutant-{mid}.xml")
    res = json.loads(out.read_text()) if out.exists() else {"violation": {"check": "simulation crashed", "text": ""}}
    res["failed"] = failed > 0 or n != 1
    return res


def test_mutants_caught():
    ms = json.loads((variant_dir("mutants") / "mutants.json").read_text())
    if isinstance(ms, dict):
        ms = ms.get("mutants", list(ms.values()))
    rows, problems = [], []
    base = _stress(0)
    rows.append((0, "none", "passes" if not base["failed"] else f"FAILS: {base['violation']}", base.get("ops")))
    if base["failed"]:
        problems.append(f"mutant 0 (the correct design) fails: {base['violation']}")
    for m in ms:
        r = _stress(m["id"])
        v = r.get("violation") or {}
        caught = v.get("check") if r["failed"] else None
        rows.append((m["id"], m["name"], caught or "NOT CAUGHT", r.get("ops")))
        if not caught:
            problems.append(f"mutant {m['id']} {m['name']} not caught ({r.get('ops')} ops)")
    w = max(len(r[1]) for r in rows)
    print("\nmutant" + " " * (w - 2) + "caught by (ops until caught)")
    for mid, name, caught, ops in rows:
        print(f"{mid:3} {name:{w}}  {caught}  ({ops})")
    out = ROOT / "build" / "coverage" / "mutants.json"
    out.write_text(json.dumps([{"id": i, "name": n, "caught_by": c, "ops": o} for i, n, c, o in rows], indent=1))
    assert not problems, "\n".join(problems)
