"""Mutation testing of the RTL regression (`make rtl-mutation`; a seeded sample in `make test`).

Single-point mutants of the generated Verilog of one variant per group (the core on m2s1w1, the
model's geometry, so the vectors replay on it; the memory server's own modules on msv), built as
one *mutant schema*: every mutation site becomes `apta_mut == K ? (mutated) : (original)`, with
`apta_mut` read from the plusarg `+apta_mutant=K` (0 = the design as generated). One Verilator
build per group instead of one per mutant; the tests run unchanged through RTL_DIR with
APTA_RTL_MUTANT=K (core_bfm.simulate passes it on as the plusarg).

Operators (one mutant each): a binary operator swapped (== !=, & |, + -, < >=, > <=, && ||, ^ |),
a negation (~ !) removed, a sized constant off by one, a 1-bit right-hand side stuck at 0 and at 1,
an `if` condition or a `?:` select inverted; constants in a reset branch count as "reset" mutants.
Never inside string literals, assertions (`ifndef SYNTHESIS` blocks) or memory primitives.

A mutant is killed by the first test (in the group's order, cheapest first) that fails on it: a
wrong output, a scoreboard or history violation, an RTL assertion, a timeout. A survivor that is
listed in mutation_equivalent.json (keyed by a stable id: module, hash of the statement, operator,
position) is "equivalent" and carries its argument there; any other survivor is a finding. An
argument names, per group, the mutation it is about (the mutant's `what`): a key can come to name
another mutation (firtool renumbers a statement's operators, or the same statement text on another
variant sits in other logic), and then the argument does not count there (`argument`). A mutant
with a written argument is not run (`--run-argued` runs it): its run cannot turn it into a finding,
since it survives as equivalent or is killed, and it costs every test (about 40 s on the memory
server, 40% of a full ms3 run's time).

This file is the command and its report; the rest is a module per job: mutation_schema.py (the
mutants of the Verilog), mutation_groups.py (the groups and their tests), mutation_run.py (a
mutant through its tests in child processes, the verdicts kept), mutation_survivors.py (the
equivalence proofs and the written arguments, covered and open survivors).
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from apta.rtl.mutation_groups import FIRST_CASE, GROUPS, OUT, ROOT, Group
from apta.rtl.mutation_run import _child, earlier_kills, read_verdicts, run_one, verdict_file, write_atomic
from apta.rtl.mutation_schema import Mutant, generate
from apta.rtl.mutation_survivors import (COVERED, EQUIVALENT, OPEN, argument, cached_proof, known_proof,
                                         pinned, stale_arguments)
# Besides those, what the tests use by this module's name (apta.rtl.mutation.<name>).
from apta.rtl.mutation_schema import CONTROLLER, MS_MODULES, expr_mutations, schema  # noqa: F401
from apta.rtl.mutation_survivors import prove_equivalent  # noqa: F401

STMT_RUN = 20       # the most mutants of one statement run in turn in one job (main)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="mutation testing of the RTL regression")
    ap.add_argument("--groups", default=",".join(GROUPS))
    ap.add_argument("--sample", type=int, default=0, help="mutants per group, seeded (0 = all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--select", metavar="REGEX", help="only the mutants whose key or xkey matches (re.search; an "
                    "xkey names the same logic on every variant: a survivor's counterpart on another one)")
    ap.add_argument("--only-open", action="store_true", help="only the mutants listed in mutation_open.json "
                    "(re-run the open findings after a change of the tests)")
    ap.add_argument("--tests", metavar="NAMES", help="only these of each group's tests, comma-separated, in the "
                    "group's order (e.g. vectors: what the vectors alone kill)")
    ap.add_argument("--no-prove", action="store_true", help="no yosys proof for a survivor (with --tests: "
                    "what a subset of the tests kills; the written arguments still count)")
    ap.add_argument("--run-argued", action="store_true", help="also run the mutants argued equivalent in "
                    "mutation_equivalent.json (a kill shows an argument wrong; default: counted equivalent unrun)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--allow-open", action="store_true", help="exit 0 when every survivor is a listed open finding")
    ap.add_argument("--budget", type=float, default=20, help="least seconds per mutant and test")
    ap.add_argument("--budget-factor", type=float, default=8, help="budget per test: this times the unmutated run")
    ap.add_argument("--rtl", default=str(ROOT / "build" / "rtl"))
    ap.add_argument("--out", default=str(ROOT / "build" / "bench" / "rtl-mutation.json"))
    ap.add_argument("--fresh", action="store_true", help="run every mutant again (default: a verdict an "
                    "earlier run of the same schema, tests and vectors reached is reused, verdict_file)")
    ap.add_argument("--keep-kills", action="store_true", help="also reuse the kills of earlier runs of the same "
                    "schema made with other tests, and by key those of an earlier schema whose mutated module is "
                    "unchanged (earlier_kills: to close survivors fast, not for the measured run)")
    ap.add_argument("--reclassify", metavar="RESULTS", help="re-read a results file against the "
                    "equivalence arguments and open findings (after editing them) without running anything")
    args = ap.parse_args(argv)
    equivalent = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}
    open_findings = json.loads(OPEN.read_text()) if OPEN.exists() else {}
    if args.reclassify:
        report = json.loads(Path(args.reclassify).read_text())
        for gname, g in report["groups"].items():
            for m in g["mutants"]:
                if m["status"] in ("survived", "open") or (m["status"] == "equivalent" and not m["why"].startswith("yosys")):
                    why = argument(equivalent, gname, m["key"], m["what"])
                    m["status"], m["why"] = (("equivalent", why) if why else
                                             ("open", open_findings[m["key"]]) if m["key"] in open_findings else
                                             ("survived", None))
        report["table"] = table(report)
        Path(args.reclassify).write_text(json.dumps(report, indent=1))
        print(report["table"])
        left = sum(m["status"] == "survived" for g in report["groups"].values() for m in g["mutants"])
        print(f"rtl-mutation: {left} survivors neither argued equivalent nor listed as open findings")
        return 1 if left else 0
    report = {"seed": args.seed, "sample": args.sample, "groups": {}}
    t_all = time.monotonic()
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"rtl-mutation: working directory {OUT}", flush=True)
    for gname in args.groups.split(","):
        g = GROUPS[gname]
        if args.tests:
            keep = args.tests.split(",")
            g = Group(g.name, g.variant, g.top, g.file, [t for t in g.tests if t[0] in keep], g.modules)
            if not g.tests:
                print(f"{gname}: none of --tests {args.tests} is a test of this group "
                      f"({', '.join(n for n, _ in GROUPS[gname].tests)})", file=sys.stderr)
                return 2
        t0 = time.monotonic()
        d, mutants = generate(g, Path(args.rtl))
        print(f"{gname}: {len(mutants)} mutants of {g.variant}/{g.file} -> {d}", flush=True)
        # the unmutated schema must pass every test, or a kill means nothing; it also builds the
        # simulators, and measures each test without its builds: a mutant's budget per test is
        # --budget-factor times that, at least --budget seconds
        # (its tests side by side, --jobs at a time: as loaded as the mutants' runs will be)
        base_t: dict = {}
        with ThreadPoolExecutor(args.jobs) as ex:
            base = list(ex.map(lambda n: run_one(g, 0, {n: 1800}, base_t, only=n), [n for n, _ in g.tests]))
        if (fail := next((b for b in base if b[0]), None)):
            print(f"{gname}: the unmutated schema fails {fail[0]}: {fail[1]}", file=sys.stderr)
            return 2
        base_t = {n: base_t[n] for n, _ in g.tests}     # the group's order
        budget = {n: max(args.budget, args.budget_factor * t) for n, t in base_t.items()}
        vfile = verdict_file(g, d)
        known = {} if args.fresh else read_verdicts(vfile)   # (--fresh still records: the last line wins)
        if args.keep_kills:
            known = {**earlier_kills(g, d, mutants), **known}
        vfile.parent.mkdir(parents=True, exist_ok=True)
        vlock = threading.Lock()
        print(f"{gname}: {len(known)} verdicts of an earlier run reused (marked *; --fresh runs them again): {vfile}",
              flush=True)
        print(f"{gname}: unmutated: " + ", ".join(f"{n} {t:.1f} s (budget {budget[n]:.0f} s)" for n, t in base_t.items()),
              flush=True)
        chosen = mutants
        if args.select:
            chosen = [m for m in chosen if re.search(args.select, m.key) or (m.xkey and re.search(args.select, m.xkey))]
        if args.only_open:
            chosen = [m for m in chosen if m.key in open_findings]
        if args.sample:
            # of the selected ones (without --select/--only-open: of all, the sample seeded runs measured)
            chosen = sorted(random.Random(args.seed).sample(chosen, min(args.sample, len(chosen))), key=lambda m: m.id)

        if (stale := stale_arguments(equivalent, gname, chosen)):
            print(f"{gname}: {len(stale)} arguments written for this group name another mutation than its "
                  f"mutant of their key now (they run; argue them again if they survive): {', '.join(stale[:6])}"
                  + (" ..." if len(stale) > 6 else ""), flush=True)
        crossed = ({o["xkey"]: o for o in report["groups"][g.cross]["mutants"] if o["status"] == "killed" and o.get("xkey")}
                   if g.cross in report["groups"] else {})
        if crossed:
            print(f"{gname}: {sum(m.xkey in crossed for m in chosen)} of its {len(chosen)} mutants are covered by "
                  f"{g.cross}'s kills of the same statement's mutant (not run again)", flush=True)

        last_case: dict[str, tuple[str, str]] = {}     # module -> (test, cocotb test) of its last kill

        def one(m: Mutant, hint: str | None = None) -> Mutant:
            if m.xkey and (o := crossed.get(m.xkey)):   # the same logic's mutant killed on the other variant
                m.status, m.by = "covered", f"{g.cross}: {o['by']}"
                m.why = (f"the same logic's mutant ({o['key']} there, {m.xkey} by definitions) is killed on "
                         f"{GROUPS[g.cross].variant} by {o['by']}")
                return m
            if (proof := known_proof(g, m)):  # yosys proved it equal to the design: no test can kill it
                m.status, m.why = "equivalent", proof + " (proved by an earlier run of this schema)"
                print(f"  {gname} #{m.id:4d} {m.controller:18s} {m.kind:9s} {m.status:10s} proved earlier  "
                      f"{m.module}:{m.line} {m.what[:90]}", flush=True)
                return m
            if (why := argument(equivalent, gname, m.key, m.what)) and not args.run_argued:
                m.status, m.why = "equivalent", why
                print(f"  {gname} #{m.id:4d} {m.controller:18s} {m.kind:9s} {m.status:10s} argued, not run "
                      f"{m.module}:{m.line} {m.what[:90]}", flush=True)
                return m
            if (v := known.get(m.id)) and v.get("key") == m.key:
                m.by, why, m.seconds, m.cached = v["by"], v["why"], v["seconds"], True
            else:
                m.by, why, m.seconds = run_one(g, m.id, budget, module=m.module, first=hint,
                                               case=last_case.get(m.module))
                with vlock, open(vfile, "a") as f:
                    f.write(json.dumps({"id": m.id, "key": m.key, "schema": d.name, "by": m.by, "why": why,
                                        "seconds": round(m.seconds, 2)}) + "\n")
            if m.by:
                m.status, m.why = "killed", why
                if (c := FIRST_CASE.search(why or "")):
                    last_case[m.module] = (m.by, c.group(1))
            elif (why := argument(equivalent, gname, m.key, m.what)):
                m.status, m.why = "equivalent", why
            elif m.key in open_findings:      # analysed: not equivalent (no proof to try)
                m.status, m.why = "open", open_findings[m.key]
            elif not args.no_prove and (proof := cached_proof(g, m)):
                m.status, m.why = "equivalent", proof
            else:
                m.status = "survived"
            if m.status != "survived":      # a survivor's files stay for its analysis
                shutil.rmtree(OUT / "runs" / g.variant / str(m.id), ignore_errors=True)
            print(f"  {gname} #{m.id:4d} {m.controller:18s} {m.kind:9s} {m.status:10s} "
                  f"{m.by or '':12s} {m.seconds:5.1f}s{'*' if m.cached else ' '} {m.module}:{m.line} {m.what[:90]}", flush=True)
            return m

        # The mutants of one statement run in turn in one job, each with the test that killed the
        # one before it first: they mostly fail the same test, and a hold-table mutant then costs
        # the hold tests (5 s), not the smoke tests before them (25 s). Which job runs which
        # statement does not change a verdict, so the report is the same at any --jobs. A statement
        # of many mutants is cut into runs of STMT_RUN (the version table's row write has 317, five
        # per lane: alone in one job, it left the other idle for two hours).
        def statement(ms: list[Mutant]) -> list[Mutant]:
            hint = None
            for m in ms:
                one(m, hint)
                hint = m.by if m.status == "killed" else hint
            return ms

        stmts = [ms[i:i + STMT_RUN] for ms in (list(x) for _, x in itertools.groupby(chosen, key=lambda m: (m.module, m.line)))
                 for i in range(0, len(ms), STMT_RUN)]
        with ThreadPoolExecutor(args.jobs) as ex:
            done = [m for ms in ex.map(statement, stmts) for m in ms]
        report["groups"][gname] = {"variant": g.variant, "generated": len(mutants), "run": len(done),
                                   "unmutated_seconds": {n: round(t, 2) for n, t in base_t.items()},
                                   "tests": [n for n, _ in g.tests], "seconds": round(time.monotonic() - t0, 1),
                                   "cached": sum(m.cached for m in done),
                                   # the time the group's mutants took to run, in this run and earlier ones
                                   "mutant_seconds": round(sum(m.seconds for m in done), 1),
                                   "mutants": [asdict(m) for m in done]}
        # the groups so far, in case the run stops before the next one ends (covering not yet applied)
        write_atomic(Path(args.out), json.dumps({**report, "partial": True, "table": table(report)}, indent=1))
    covered = json.loads(COVERED.read_text()) if COVERED.exists() else {}
    for gname, g in report["groups"].items():
        for m in g["mutants"]:
            c = pinned(covered, gname, m["key"], m["what"])
            if m["status"] not in ("survived", "open") or not c or c["group"] not in report["groups"]:
                continue
            other = {o["key"]: o for o in report["groups"][c["group"]]["mutants"]}
            if all(k in other and other[k]["status"] == "killed" for k in c["keys"]):
                m["status"], m["by"] = "covered", f"{c['group']}: {other[c['keys'][0]]['by']}"
                m["why"] = c["why"]
    for gname, g in report["groups"].items():     # the other direction of `cross`
        other = GROUPS[gname].cross
        if other in report["groups"]:
            killed = {m["xkey"]: m for m in g["mutants"] if m["status"] == "killed" and m.get("xkey")}
            for m in report["groups"][other]["mutants"]:
                if m["status"] in ("survived", "open") and m.get("xkey") in killed:
                    k = killed[m["xkey"]]
                    m["status"], m["by"] = "covered", f"{gname}: {k['by']}"
                    m["why"] = f"the same logic's mutant ({k['key']} there) is killed on {g['variant']} by {k['by']}"
    report["seconds"] = round(time.monotonic() - t_all, 1)
    report["table"] = table(report)
    report["workdir"] = str(OUT)
    write_atomic(Path(args.out), json.dumps(report, indent=1))
    print(report["table"])
    surv = [m for g in report["groups"].values() for m in g["mutants"] if m["status"] == "survived"]
    opn = [m for g in report["groups"].values() for m in g["mutants"] if m["status"] == "open"]
    print(f"rtl-mutation: {sum(g['run'] for g in report['groups'].values())} mutants run, "
          f"{len(surv)} new non-equivalent survivors, {len(opn)} open findings ({OPEN.name}), "
          f"{report['seconds']:.0f} s -> {args.out}")
    return 1 if surv or (opn and not args.allow_open) else 0


def table(report: dict) -> str:
    rows = ["| group | controller | generated | run | killed | by test | survived | open | equivalent | covered |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for gname, g in report["groups"].items():
        ctls = sorted({m["controller"] for m in g["mutants"]})
        for c in ctls:
            ms = [m for m in g["mutants"] if m["controller"] == c]
            k = [m for m in ms if m["status"] == "killed"]
            by = {}
            for m in k:
                by[m["by"]] = by.get(m["by"], 0) + 1
            rows.append(f"| {gname} ({g['variant']}) | {c} | {g['generated']} | {len(ms)} | {len(k)} | "
                        + ", ".join(f"{t} {n}" for t, n in by.items()) + f" | "
                        f"{sum(m['status'] == 'survived' for m in ms)} | {sum(m['status'] == 'open' for m in ms)} | "
                        f"{sum(m['status'] == 'equivalent' for m in ms)} | {sum(m['status'] == 'covered' for m in ms)} |")
    for gname, g in report["groups"].items():
        if "mutant_seconds" in g:
            rows.append(f"\n{gname}: {g['run']} mutants, {g['mutant_seconds'] / 60:.0f} min of mutant runs "
                        f"({g.get('cached', 0)} of them by an earlier run), {g['seconds'] / 60:.0f} min wall in this one")
    return "\n".join(rows)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        sys.exit(_child(*sys.argv[2:5]))
    sys.exit(main())
