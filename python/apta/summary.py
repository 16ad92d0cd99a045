"""build/verify/summary.json: one record per model-checker run, shared by every checker.

Each checker (Rumur for spec/murphi, TLC for spec/tla) replaces only its own records, so
`make verify` can run them in any order and the file always holds the latest result of each.

Record fields (all checkers):
  name         model or mutant name
  checker      "rumur" | "tlc"
  kind         "model" | "mutant"
  config       configuration name
  states       states explored (TLC: states generated)
  rules_fired  transitions fired (TLC: same as states generated)
  seconds      wall-clock time of the check
  result       "pass" | "fail"  (the checker's verdict on the model)
  violated     name of the property that failed, or None
  expected     for a mutant: the property it must break; None for a model
  ok           the outcome is the expected one (model passes / mutant fails on `expected`) and
               equals the run's pin, if it has one
Optional: pin  "match" | "mismatch" | "unpinned" | "updated" | "not compared" (the run against the
               result pinned beside its configuration: spec/murphi/checks.json, spec/tla/pins.json),
          pinned  that pin
"""
from __future__ import annotations

import json
import os
from pathlib import Path

FIELDS = ("name", "checker", "kind", "config", "states", "rules_fired", "seconds",
          "result", "violated", "expected", "ok")


def expected_ok(kind: str, result: str, violated: str | None, expected: str | None) -> bool:
    """A model must pass; a mutant must fail, and on exactly the property it targets."""
    if kind == "model":
        return result == "pass"
    return result == "fail" and violated is not None and violated == expected


def update(path: Path, checker: str, records: list[dict]) -> list[dict]:
    """Replace `checker`'s records in the summary at `path`; return the whole list."""
    for r in records:
        missing = [f for f in FIELDS if f not in r]
        if missing:
            raise ValueError(f"summary record {r.get('name')!r} lacks fields {missing}")
        if r["checker"] != checker:
            raise ValueError(f"record {r['name']!r} has checker {r['checker']!r}, not {checker!r}")
    old: list[dict] = []
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path}: not valid JSON ({e}); delete it and rerun")
    merged = [r for r in old if r.get("checker") != checker] + records
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(merged, indent=2) + "\n")
    os.replace(tmp, path)
    return merged


def merge(path: Path, checker: str, records: list[dict],
          known: set[str] | None = None) -> list[dict]:
    """Like `update`, for a partial run (--only): keep `checker`'s records of the runs this one did
    not repeat, dropping those whose name is not in `known` (runs that no longer exist)."""
    new = {r["name"] for r in records}
    kept: list[dict] = []
    if path.exists():
        try:
            kept = [r for r in json.loads(path.read_text())
                    if r.get("checker") == checker and r.get("name") not in new
                    and (known is None or r.get("name") in known)]
        except (ValueError, TypeError, AttributeError):
            kept = []
    return update(path, checker, kept + records)


def table(records: list[dict]) -> str:
    """The table `make verify` prints: one row per model or mutant."""
    head = ("name", "checker", "config", "states", "rules fired", "seconds", "expected", "result")
    rows = [head]
    for r in records:
        exp = "pass" if r["kind"] == "model" else f"fail:{r['expected']}"
        got = r["result"] if r["result"] == "pass" else f"fail:{r['violated']}"
        verdict = "ok" if r["ok"] else "UNEXPECTED"
        if r.get("pin") == "mismatch":
            verdict = "PIN MISMATCH"
        elif r.get("pin") == "unpinned" and r["ok"]:
            verdict = "ok, unpinned"
        rows.append((r["name"], r["checker"], r["config"], f"{r['states']:,}",
                     f"{r['rules_fired']:,}", f"{r['seconds']:.1f}", exp, f"{got} ({verdict})"))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """`python python/apta/summary.py FILE`: the one-line verdict of `make verify` over every checker."""
    path = Path(argv[1] if len(argv) > 1 else "build/verify/summary.json")
    try:
        records = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"verify: cannot read {path}: {e}")
        return 1
    bad = [r["name"] for r in records if not r.get("ok")]
    models = [r for r in records if r["kind"] == "model"]
    mutants = [r for r in records if r["kind"] == "mutant"]
    checkers = sorted({r["checker"] for r in records})
    if bad:
        print(f"verify: FAILED: {', '.join(bad)}")
        return 1
    unpinned = [r["name"] for r in records if r.get("pin") == "unpinned"]
    print(f"verify: {len(models)} model run(s) passed ({sum(r['states'] for r in models):,} states), "
          f"{len(mutants)} mutant(s) rejected on their target property [{', '.join(checkers)}]"
          + (f"; {len(unpinned)} unpinned: {', '.join(unpinned)}" if unpinned else ""))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv))
