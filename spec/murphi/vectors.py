#!/usr/bin/env python3
"""Test vectors for the coherence core (OTC + OIC) from the Rumur model, by trap properties.

    spec/murphi/vectors.py [--suite vectors] [--only CONFIG ...] [--set CONST=VALUE ...] [--out DIR]

For each configuration of the suite (spec/murphi/checks.json, section "vectors"): a copy of apta.m
with the configuration's constants, VECTOR_CELLS = true (the ghost `vcells` records the cells of
the protocol table that each memory-server step exercised), no covers, no liveness properties, and
one `invariant "trap: <cell>" !VecHit(V_<cell>)` per cell the configuration targets and has not yet
found. Rumur explores breadth first (one thread), so the first counterexample of a trap is a
shortest path to its cell. A trap stops the exploration beyond its state, so the found traps are
dropped and the verifier rebuilt until a run finds nothing new; targets still missing after a run
in which no trap fired (an exhaustive run) are unreachable in that configuration.

Each trace becomes a scenario of rtl/CORE.md ("Test vectors"): one step per memory-server rule
the core sees, with its stimuli, the messages it must emit and the directory/OIC state after it.
Output: <out>/<config>.jsonl (one scenario per line, validated by python/apta/vectors_io.py) and
<out>/coverage.json (every cell of python/apta/cells.py: covered by which vector, or unreachable).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from apta import cells
from apta import vectors_io
from apta.murphi import check
# The generator's jobs live in vectors_*.py beside it (spec/murphi/README.md, Files); their names
# stay importable from here (tests/test_vectors.py).
from apta.murphi.check import CheckError
from apta.murphi.vectors_core import BASE_STRIDE, STALL_CELLS, Translator
from apta.murphi.vectors_ms import MsTranslator, ms_capable
from apta.murphi.vectors_output import permute_servers, queued_images, symmetric_images, write_outputs
from apta.murphi.vectors_state import DSTATE, View
from apta.murphi.vectors_traps import (CC_FLAGS, MAX_ERRORS, PROPERTY_RE, ConfigResult, TrapRun, generate,
                                       model_cells, murphi_name, parse_traps, run_traps, say, trap_source)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = ROOT / "build" / "vectors"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="vectors")
    ap.add_argument("--only", nargs="*", default=None, help="configuration names of the suite")
    ap.add_argument("--set", nargs="*", default=[], metavar="CONST=VALUE",
                    help="override model constants (e.g. MUTANT=M_SA_GET_TO_S)")
    ap.add_argument("--model", type=Path, default=check.MODEL)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--cells", nargs="*", default=None, metavar="CELL",
                    help="target only these cells (exploration, tests)")
    ap.add_argument("--recheck", type=Path, default=None, metavar="COVERAGE",
                    help="target only the cells this coverage.json lists as unreachable (verify-deep)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    try:
        checks = check.load_checks()
        vec = checks.get("vectors")
        if not isinstance(vec, dict) or not isinstance(vec.get("suites"), dict):
            raise CheckError(f"{check.CHECKS}: missing object field 'vectors' with 'suites'")
        if args.suite not in vec["suites"]:
            raise CheckError(f"unknown vector suite {args.suite!r} (known: {', '.join(vec['suites'])})")
        entries = vec["suites"][args.suite]
        if args.only is not None:
            bad = [n for n in args.only if n not in entries]
            if bad:
                raise CheckError(f"not in vector suite {args.suite}: {', '.join(bad)} "
                                 f"(known: {', '.join(entries)})")
            entries = {n: entries[n] for n in args.only}
        overrides = {}
        for kv in args.set:
            if "=" not in kv:
                raise CheckError(f"--set {kv!r}: expected CONST=VALUE")
            k, v = kv.split("=", 1)
            overrides[k] = v
        source = args.model.read_text()
        ids = model_cells(source, str(args.model))
        core = set(cells.ids())
        recheck = None
        if args.cells is not None:
            bad = [c for c in args.cells if c not in ids]
            if bad:
                raise CheckError(f"--cells: unknown cell(s) {', '.join(bad)} (known: {', '.join(ids)})")
            recheck = set(args.cells)
        if args.recheck is not None:
            try:
                prior = vectors_io.load_coverage(args.recheck)
            except vectors_io.VectorError as e:
                raise CheckError(str(e)) from None
            recheck = {c["cell"] for c in prior["cells"] if c["status"] == "unreachable"}
            if not recheck:
                print(f"vectors: {args.recheck} lists no unreachable cell: nothing to re-check")
                return 0
            print(f"vectors: re-checking {len(recheck)} unreachable cell(s): {', '.join(sorted(recheck))}")
        jobs = []
        for name, e in entries.items():
            cfg = e.get("config", name)
            if cfg not in checks["configs"]:
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}: "
                                 f"unknown configuration {cfg!r}")
            ms = e.get("ms", False)
            if not isinstance(ms, bool):
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}.ms: expected true/false")
            targets = e.get("cells", "all")
            targets = [c for c in ids if ms or c in core] if targets == "all" else targets
            bad = [c for c in targets if c not in ids]
            if bad:
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}.cells: "
                                 f"unknown cell(s) {bad}")
            consts = {**checks["configs"][cfg]["constants"], **e.get("constants", {}), **overrides}
            if ms and ms_capable(consts):
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}.ms: "
                                 f"{ms_capable(consts)}")
            if not ms and any(c not in core for c in targets):
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}.cells: memory-server "
                                 "cells need \"ms\": true")
            chosen = [c for c in ids if c in targets and (recheck is None or c in recheck)]
            if chosen:
                jobs.append((name, consts, chosen, e.get("timeout", checks["configs"][cfg].get("timeout", 600)), ms))
        print(f"vectors: {len(jobs)} configuration(s), {len(core)} core cells (rtl/CORE.md), "
              f"{len(ids) - len(core)} memory-server cells (rtl/MEMSERVER.md)", flush=True)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futs = [pool.submit(generate, n, k, t, source, args.out, to, ms) for n, k, t, to, ms in jobs]
            results = [f.result() for f in futs]
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        cov = write_outputs(results, args.out, args.suite,
                            partial=args.only is not None or recheck is not None)
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in results:
        print(f"  {r.config}: {len(r.covered)} covered, {len(r.unreachable)} unreachable"
              f"{' (exhaustive)' if r.exhaustive else ''} in {r.iterations} iteration(s), "
              f"{r.seconds:.0f} s" + (f": {', '.join(r.unreachable)}" if r.unreachable else ""))
    ncov = sum(1 for c in cov["cells"] if c["status"] == "covered")
    unr = [c["cell"] for c in cov["cells"] if c["status"] == "unreachable"]
    exh = [r.config for r in results if r.exhaustive]
    if "ms" in cov:
        m = cov["ms"]
        mcov = sum(1 for c in m["cells"] if c["status"] == "covered")
        munr = [c["cell"] for c in m["cells"] if c["status"] == "unreachable"]
        print(f"vectors: memory server: {m['scenarios']} scenarios, {mcov}/{len(m['cells'])} cells covered"
              + (f", unreachable: {', '.join(munr)}" if munr else ""))
    check.record_cache_use()
    print(f"vectors: {cov['scenarios']} scenarios, {ncov}/{len(cov['cells'])} cells covered, "
          f"{len(unr)} unreachable in {', '.join(exh) or '(no exhaustive run)'}"
          + (f" ({', '.join(unr)})" if unr else "") + f"; {time.monotonic() - t0:.0f} s "
          f"-> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
