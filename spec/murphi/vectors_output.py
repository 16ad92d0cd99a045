"""What vectors.py writes: every core scenario with its images (server renamings, queued control
flits), <out>/<config>.jsonl per configuration and coverage.json per cell table (core and memory
server), which fails the suite on a cell neither covered nor proven unreachable."""
from __future__ import annotations

import json
from pathlib import Path

from apta import cells
from apta.murphi.check import CheckError
from apta.murphi.vectors_traps import ConfigResult


def permute_servers(sc: dict, perm: list[int]) -> dict:
    """The scenario with server c renamed perm[c] everywhere: stimuli, expected messages, every
    per-server array of the state. Sound because Server is a scalarset in apta.m: the model's
    behaviour is invariant under renaming servers, so the image is a trace of the model too; it
    exercises the RTL's per-server logic (ServerTable rows, sharer bits) of every server."""
    inv = {c: i for i, c in enumerate(perm)}

    def arr(a):                       # per-server array: new position perm[c] holds old a[c]
        return [a[inv[i]] for i in range(len(a))]

    def msg(m):
        return {**m, "server": perm[m["server"]]} if "server" in m else dict(m)

    def state(st):
        out = {k: arr(v) for k, v in st.items() if k not in ("objects",) and isinstance(v, list)}
        out.update({k: v for k, v in st.items() if k != "objects" and not isinstance(v, list)})
        out["objects"] = {o: {**e, "sharers": sorted(perm[c] for c in e["sharers"]),
                              **{k: arr(e[k]) for k in ("pend", "schedulableFor") if k in e}}
                          for o, e in st.get("objects", {}).items()}
        return out

    steps = []
    for st in sc["steps"]:
        ex = {k: [msg(m) for m in v] for k, v in st["expect"].items() if k != "state"}
        if "state" in st["expect"]:
            ex["state"] = state(st["expect"]["state"])
        steps.append({**st, "stimuli": [msg(m) for m in st["stimuli"]], "expect": ex})
    return {**sc, "id": f"{sc['id']}@servers{''.join(map(str, perm))}", "steps": steps}


def queued_images(scenarios: list[dict]) -> list[dict]:
    """Every scenario, followed, when two consecutive steps are control flits only (a Fence, then
    the Rejoin of the same or another server), by its image with those two steps as one: both
    flits sent back to back, so the second waits on the ctrl channel behind the first's walk and
    answer (the core takes one control flit at a time). A trace of the model still: the ctrl
    channel is in order and the core applies the flits one after the other, so the step expects
    the first's messages then the second's (snoops as one multiset) and the second's state. The
    model's own traces never queue one, so the unit's accept-while-busy path had no vector."""
    out = []
    for sc in scenarios:
        out.append(sc)
        st = sc["steps"]
        for i in range(len(st) - 1):
            a, b = st[i], st[i + 1]
            if not (a["stimuli"] and b["stimuli"]
                    and all(x["port"] == "ctrl" for x in a["stimuli"] + b["stimuli"])):
                continue
            ex = {k: a["expect"].get(k, []) + b["expect"].get(k, [])
                  for k in sorted(set(a["expect"]) | set(b["expect"])) if k != "state"}
            if "state" in b["expect"]:
                ex["state"] = b["expect"]["state"]
            merged = {"rule": f"{a['rule']} + {b['rule']} (queued)", "stimuli": a["stimuli"] + b["stimuli"],
                      "expect": ex}
            out.append({**sc, "id": f"{sc['id']}@queued{i}", "steps": st[:i] + [merged] + st[i + 2:]})
    return out


def symmetric_images(scenarios: list[dict]) -> list[dict]:
    """Every scenario followed by its images under every other renaming of the servers, so that
    each server is fenced, rejoined, acked and snooped in some vector (not only the one the
    model checker's counterexample happened to name)."""
    import itertools
    out = []
    for sc in scenarios:
        out.append(sc)
        n = sc["params"]["servers"]
        out += [permute_servers(sc, list(p)) for p in itertools.permutations(range(n)) if list(p) != list(range(n))]
    return out


def write_outputs(results: list[ConfigResult], out: Path, suite: str, partial: bool) -> dict:
    """<config>.jsonl per configuration and coverage.json. A cell is covered if any configuration
    covers it, unreachable if none does and an exhaustive run of some configuration targeted it;
    any other cell is an error of the suite (a partial run, --only, marks it untested)."""
    cov = _write_family(results, out, suite, partial, "core", lambda r: symmetric_images(queued_images(r.scenarios)))
    ms = [r for r in results if r.ms_scenarios is not None]
    if ms or not partial:
        cov["ms"] = _write_family(ms, out / "ms", suite, partial, "ms", lambda r: r.ms_scenarios)
    return cov


def _write_family(results: list[ConfigResult], out: Path, suite: str, partial: bool, table: str,
                  scenarios_of) -> dict:
    """<out>/<config>.jsonl and <out>/coverage.json of one cell table (core: rtl/CORE.md,
    ms: rtl/MEMSERVER.md)."""
    out.mkdir(parents=True, exist_ok=True)
    if not partial:                                   # no stale scenarios of other configurations
        for old in out.glob("*.jsonl"):
            old.unlink()
    for r in results:
        with open(out / f"{r.config}.jsonl", "w") as f:
            for sc in scenarios_of(r):
                f.write(json.dumps(sc) + "\n")
    rows, untargeted = [], []
    for c in cells.ids(table):
        hit = next((r for r in results if c in r.covered), None)
        proven = any(c in r.unreachable and r.exhaustive for r in results)
        status = "covered" if hit else "unreachable" if proven else "untested"
        if status == "untested":
            untargeted.append(c)
        rows.append({"cell": c, "status": status,
                     "vector": f"{hit.config}/{c}" if hit else None,
                     "config": hit.config if hit else None,
                     "covered_in": [r.config for r in results if c in r.covered],
                     "unreachable_in": [r.config for r in results if c in r.unreachable]})
    if untargeted and not partial:
        raise CheckError(f"vector suite {suite} ({table} cells): no configuration covers or exhausts cell(s) "
                         f"{', '.join(untargeted)} (add them to a configuration's cells)")
    cov = {"suite": suite, "partial": partial, "table": table, "cells": rows,
           "scenarios": sum(len(scenarios_of(r)) for r in results),
           "configs": {r.config: {"covered": r.covered, "unreachable": r.unreachable,
                                  "iterations": r.iterations, "seconds": round(r.seconds, 1),
                                  "exhaustive": r.exhaustive} for r in results}}
    (out / "coverage.json").write_text(json.dumps(cov, indent=2) + "\n")
    return cov
