"""The pins of check.py's runs (spec/tla/pins.json): compared with every run, rewritten by
--update-pins.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

# spec/tla/pins.json, beside the .cfg files: {"runs": {name: pin}}. A model's pin is
# {"distinct_states", "depth"}: TLC's distinct states are the same for any number of
# workers; the depth of its breadth-first search is exact with one worker and may
# come out larger with several (measured: +1 on store, silent, undeclared, diamond,
# scatter with 2 or 4 workers), so it is pinned from a one-worker run and a run
# with more workers must reach at least it; on distributed TLC (--distributed-workers) only
# the distinct states are compared (its depth may also come out smaller). A mutant's pin is {"violated"}: the
# property TLC reported (its state counts depend on the workers: not pinned).
PINS_FILE = "pins.json"


def pin_of(rec: dict) -> dict:
    if rec["kind"] == "model":
        return {"distinct_states": rec["distinct_states"], "depth": rec["depth"]}
    return {"violated": rec["violated"]}


def load_pins(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        runs = json.loads(path.read_text()).get("runs", {})
    except (ValueError, AttributeError) as e:
        raise SystemExit(f"check.py: {path}: not a pins file ({e}); --update-pins rewrites it")
    return runs


def compare_pin(rec: dict, pins: dict, path: Path = Path(PINS_FILE)) -> tuple[str, str | None]:
    """("match" | "unpinned" | "mismatch" | "not compared", the line to print or None).
    Only a run with the expected outcome is compared (any other already fails)."""
    if not rec["ok"]:
        return "not compared", None
    pin = pins.get(rec["name"])
    if pin is None:
        return "unpinned", None
    got = pin_of(rec)
    want = {k: pin.get(k) for k in got}
    if rec["kind"] == "model" and rec.get("distributed"):
        # distributed TLC: distinct states exact; its depth is the level of the state the server
        # wrote last (TLCTrace.getLevelForReporting), anything up to the real one (measured 43
        # against 45 on undeclared): not compared
        same = got["distinct_states"] == want["distinct_states"]
        want_txt = f"distinct_states {want['distinct_states']:,} (depth not compared: distributed TLC)"
    elif rec["kind"] == "model" and rec.get("workers") != 1:
        # several workers: distinct states exact, depth at least the one-worker depth
        same = got["distinct_states"] == want["distinct_states"] and \
            want["depth"] is not None and got["depth"] is not None and got["depth"] >= want["depth"]
        want_txt = f"distinct_states {want['distinct_states']:,}, depth >= {want['depth']}"
    else:
        same = got == want
        want_txt = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in want.items())
    if same:
        return "match", None
    got_txt = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in got.items())
    workers = f" with {rec.get('workers')} workers" if rec["kind"] == "model" else ""
    return "mismatch", (f"PIN MISMATCH {rec['name']} ({rec['kind']}, config {rec['config']}): expected "
                        f"{want_txt} ({path} runs.{rec['name']}), got {got_txt}{workers}. If the spec "
                        f"change is deliberate, update the pin in the same commit: "
                        f"spec/tla/check.py --only {rec['name']} --update-pins")


def apply_pins(records: list[dict], pins: dict, path: Path = Path(PINS_FILE)) -> list[str]:
    """Set rec["pin"] (status) and rec["pinned"] on every record; a mismatch makes the run a
    failure (rec["ok"] = False). Returns the mismatch lines."""
    lines = []
    for rec in records:
        status, line = compare_pin(rec, pins, path)
        rec["pin"], rec["pinned"] = status, pins.get(rec["name"])
        if status == "mismatch":
            rec["ok"] = False
            lines.append(line)
    return lines


def update_pins(path: Path, records: list[dict], order) -> list[str]:
    """Write the pins of `records` (runs with the expected outcome) into the pins file at `path`,
    keeping the others, in the order of the run names `order` (check.py: its suites). Returns the
    names whose pin changed."""
    pins = load_pins(path)
    changed = []
    for rec in records:
        if rec.get("pin") not in ("match", "mismatch", "unpinned"):    # a failed run pins nothing
            continue
        if rec["kind"] == "model" and (rec.get("workers") != 1 or rec.get("distributed")):
            raise SystemExit(f"check.py: {rec['name']}: a depth pin needs a one-worker run (--workers 1)")
        new = pin_of(rec)
        if pins.get(rec["name"]) != new:
            pins[rec["name"]] = new
            changed.append(rec["name"])
        rec["pin"], rec["pinned"], rec["ok"] = ("updated" if rec["name"] in changed else "match"), new, True
    if changed:
        rank = {n: i for i, n in enumerate(order)}
        doc = ("TLC's expected result per run of spec/tla/check.py (written by --update-pins, which "
               "runs TLC with one worker): a model's distinct states and the depth of its state "
               "graph, a mutant's violated property. check.py fails a run that differs.")
        data = {"doc": doc, "runs": dict(sorted(pins.items(), key=lambda kv: rank.get(kv[0], len(rank))))}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, path)
    return changed

