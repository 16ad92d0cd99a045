#!/usr/bin/env python3
"""Run TLC on the TLA+ models and mutants of spec/tla and record the results.

    python3 spec/tla/check.py                    # default suite: models + mutants
    python3 spec/tla/check.py --suite deep       # larger constants (make verify-deep)
    python3 spec/tla/check.py --only pipeline --only stale-view
    python3 spec/tla/check.py --list
    python3 spec/tla/check.py --only pipeline --update-pins   # after a deliberate spec change
    python3 spec/tla/check.py --suite deep --distributed-workers 127.0.0.1,hostB   # TLC server + workers

Every model must pass; every mutant must be rejected by TLC on exactly the
property it targets (an invariant or action property named by TLC, a temporal
property that is the only one in the mutant's configuration, or Deadlock).
Every run is then compared with its pin in spec/tla/pins.json (a model's
distinct states and state-graph depth, a mutant's violated property): a
difference is a failure until the pin is updated (--update-pins); a run with no
pin is reported "unpinned".
A spec that does not parse fails with SANY's message; a model that fails
prints TLC's trace.  Results replace the "tlc" records of
build/verify/summary.json (python/apta/summary.py); logs and TLC's state directories
go to build/tla/.  Exit status: 0 all as expected, 1 otherwise, 2 usage.

The workflows the models check (module WorkflowPatterns, extended by
Workflows.tla) are generated from workloads/patterns/*.json into
build/tla/gen/, which is on SANY's and TLC's library path (-DTLA-Library).

Models are the checked-in .cfg files; a deep run or a mutant is its base .cfg
with constants overridden (the mutant: Mutant = "<name>", one switch of the
real spec) and, for a mutant, the property list replaced; the generated .cfg is
written to build/tla/cfg/.  The standard library only: the TLC jar is the one
thing this script installs (into ~/.cache/apta/, checked against its SHA-1).

With --distributed-workers the models are checked by TLC's distributed mode: a TLCServer here,
one TLCWorker per listed host (local processes for 127.0.0.1/localhost, ssh for other hosts),
every process started through TlcRmiLaunch.java (compiled beside the jar: RMI bound to one
address, fixed ports) and stopped at the end of its run; runs distributed TLC cannot check
(temporal properties, mutants) stay in one process. See "Distributed TLC" in spec/tla/README.md.

This file holds the suites (SUITES: every model and mutant; schema/mutants.py reads the mutants
from its mutant(...) calls) and the command; the rest is a module per job: config.py (a run, the
.cfg TLC reads for it), tlc.py (the jar, SANY, a TLC run and its output), distributed.py (the
TLC server and its workers), pins.py (pins.json).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from apta import summary, workflow
from apta.tla import pins
from apta.tla.config import Run, mutant, render_cfg
from apta.tla.distributed import (REGISTER_TIMEOUT, TLC_PORT, distributed_setup, distributed_unsupported,
                                  parse_worker_hosts, run_tlc_distributed)
from apta.tla.pins import PINS_FILE, apply_pins, load_pins
from apta.tla.tlc import JAR_PATH, ensure_jar, error_text, generate_modules, java_cmd, run_tlc, sany
# Besides those, what trace.py and the tests use by this module's name (apta.tla.check.<name>).
from apta.tla.distributed import Distributed, worker_cmd  # noqa: F401
from apta.tla.pins import compare_pin  # noqa: F401
from apta.tla.tlc import parse_tlc, spec_digest  # noqa: F401

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

LIVE_FALSE = {"MaxCrash": "0", "MaxFalse": "1", "Lag": "FALSE"}

SUITES: dict[str, list[Run]] = {
    "default": [
        Run("store", "model", "store.cfg", module="MCStore.tla",
            note="`Store.tla` alone, pipeline, ≤ 3 versions/object"),
        Run("pipeline", "model", "pipeline.cfg",
            note="f1→f2→f3, f2 updates x; 2 lines; crash + false suspicion; lag"),
        Run("broadcast", "model", "broadcast.cfg", note="p updates x; c1, c2 read it; 1 crash; lag"),
        Run("bgather", "model", "bgather.cfg", note="c1, c2 race to put y; g rewrites x; 1 crash; lag"),
        Run("scatter", "model", "scatter.cfg", note="s→w1, w2→g over x, y; 1 crash; live view"),
        Run("mapreduce", "model", "mapreduce.cfg", note="m1, m2 → r over 3 objects; 1 crash; lag"),
        Run("diamond", "model", "diamond.cfg", note="f1 ∥ (f2→f3) → g on x; 1 false suspicion; lag"),
        Run("undeclared", "model", "undeclared.cfg", note="pipeline, undeclared inputs; 1 crash; lag"),
        Run("silent", "model", "silent.cfg", note="broadcast with silent evictions"),
        Run("live", "model", "live.cfg", note="`LiveSpec`, pipe2 (f1→f2 both update x); 1 crash; lag"),
        Run("live-false", "model", "live.cfg", const=LIVE_FALSE,
            note="`LiveSpec`, pipe2; 1 false suspicion, no crash"),
        Run("live-locality", "model", "live.cfg", const={"Locality": "TRUE"},
            note="`LiveSpec`, pipe2; 1 crash; strict locality"),
        mutant("sched-rule-off", "pipeline.cfg", "SchedRuleOff", "GetFresh",
               note="scheduler ignores pending invalidations"),
        mutant("stale-view", "pipeline.cfg", "StaleView", "GetFresh",
               note="scheduler view older than the function's dependencies (C1 off)"),
        mutant("stale-view-undeclared", "undeclared.cfg", "StaleView", "GetFresh",
               note="C1 off, undeclared-input scheduler"),
        mutant("no-fence", "live.cfg", "NoFence", "AcksRetired", temporal="AcksRetired",
               note="no failure detector: a crashed sharer's acks are never retired"),
        mutant("no-fence-completion", "live.cfg", "NoFence", "Completion",
               temporal="Completion",
               note="no failure detector: a crashed server's function never re-executes"),
        mutant("old-epoch-ack", "pipeline.cfg", "OldEpochAck", "AckAccounting", full=True,
               note="an ack from an older epoch decrements the new epoch's counter"),
        mutant("old-epoch-ack-p1", "diamond.cfg", "OldEpochAck", "GetFresh",
               note="the same, checked against the contract only: a stale read"),
        mutant("early-put-ack", "pipeline.cfg", "EarlyPutAck", "Refinement",
               note="the writer is answered when its lines arrive, before the commit"),
        mutant("zombie-put", "pipeline.cfg", "ZombiePut", "Refinement",
               note="fencing aborts nothing and the OPC ignores the put's epoch"),
        mutant("non-atomic-put", "pipeline.cfg", "NonAtomicPut", "MemoryLatest",
               note="line writes go straight to memory"),
        mutant("fenced-schedulable", "pipeline.cfg", "FencedSchedulable", "GetFresh",
               note="scheduler places functions on fenced servers"),
        mutant("sync-inval", "live.cfg", "SyncInval", "PutCompletes", temporal="PutCompletes",
               note="CXL 3.0: a put waits for every ack, no fencing"),
        mutant("get-sa-to-s", "pipeline.cfg", "GetSAtoS", "DirShape", full=True,
               note="the paper's table: a get in SA moves to S, losing pending acks"),
        # early placement and versioned gets (AptaFlow.tla)
        Run("flow", "model", "flow.cfg", module="MCAptaFlow.tla",
            note="`AptaFlow`, broadcast, c1, c2 early; 1 crash, 1 hold slot, cancel; lag"),
        Run("flow-live", "model", "flow-live.cfg", module="MCAptaFlow.tla",
            note="`FlowLiveSpec`, edge p → c over x; 1 crash, 1 hold slot, cancel"),
        mutant("release-old", "flow.cfg", "ReleaseOld", "GetRequired", flow=True,
               note="the hold table releases a get before its version committed"),
        mutant("hit-ignores-version", "flow.cfg", "HitIgnoresVersion", "GetRequired", flow=True,
               note="a versioned get hits a cached copy of any version"),
        mutant("early-unversioned", "flow.cfg", "EarlyUnversioned", "GetRequired", flow=True,
               note="an early-placed function reads without a version"),
        mutant("fence-drops-holds", "flow-live.cfg", "FenceDropsHolds", "FlowCompletion",
               temporal="FlowCompletion", flow=True, const={"MayCancel": "FALSE"},
               note="fencing a producer drops the gets held for its aborted put (never cancelled)"),
        mutant("cancel-keeps-held", "flow-live.cfg", "CancelKeepsHeld", "GetAnswered",
               temporal="GetAnswered", flow=True,
               note="a cancel answers no held get: its reader waits for ever"),
    ],
}

DEEP_SAFETY = {"MaxCrash": "1", "MaxFalse": "1", "NLines": "2", "Lag": "TRUE"}
DEEP_NOTE = "crash + false suspicion, 2 lines, lag"
SUITES["deep"] = [
    Run("store-deep", "model", "store.cfg", module="MCStore.tla",
        const={"MaxVersion": "4", "Workflow": '"bgather"'}, note="bgather, ≤ 4 versions/object"),
    Run("pipeline-deep", "model", "pipeline.cfg",
        const={"SilentEvict": "TRUE", "MaxFalse": "2"}, note="silent evictions, 2 false suspicions"),
    Run("pipeline-3srv", "model", "pipeline.cfg",
        const={"Server": "{s1, s2, s3}", "MaxCrash": "2", "MaxFalse": "0", "NLines": "1"},
        note="3 servers, 2 crashes"),
    Run("broadcast-deep", "model", "broadcast.cfg", const=DEEP_SAFETY, note=DEEP_NOTE),
    Run("bgather-deep", "model", "bgather.cfg", const=DEEP_SAFETY, note=DEEP_NOTE),
    Run("scatter-deep", "model", "scatter.cfg", const={"MaxFalse": "1"}, note="+ false suspicion"),
    Run("mapreduce-deep", "model", "mapreduce.cfg", const={"MaxFalse": "1"}, note="+ false suspicion"),
    Run("diamond-deep", "model", "diamond.cfg", const=DEEP_SAFETY, note=DEEP_NOTE),
    Run("undeclared-deep", "model", "undeclared.cfg", const={"MaxFalse": "1"}, note="+ false suspicion"),
    Run("live-deep", "model", "live.cfg", const={"MaxFalse": "1"}, note="crash + false suspicion"),
    Run("live-pipeline", "model", "live.cfg",
        const={"Workflow": '"pipeline"', "DirCap": "1", "Lag": "FALSE"}, note="3-function pipeline"),
    Run("live-locality-deep", "model", "live.cfg", const={"Locality": "TRUE", "MaxFalse": "1"},
        note="strict locality, + false suspicion"),
    Run("flow-chain", "model", "flow.cfg", module="MCAptaFlow.tla",
        const={"Workflow": '"chain"'},
        note="f1 → f2 → f3, f2 and f3 early: two held gets for one reader"),
    Run("flow-live-lag", "model", "flow-live.cfg", module="MCAptaFlow.tla",
        const={"Lag": "TRUE"}, note="lagging view"),
    Run("flow-live-false", "model", "flow-live.cfg", module="MCAptaFlow.tla",
        const={"MaxFalse": "1"}, note="+ false suspicion"),
]

ALL_RUNS = {r.name: r for runs in SUITES.values() for r in runs}


def update_pins(path: Path, records: list[dict]) -> list[str]:
    """pins.update_pins with the pins file kept in the order of the suites above."""
    return pins.update_pins(path, records, ALL_RUNS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=sorted(SUITES), default="default")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only these models/mutants (any suite); repeatable")
    ap.add_argument("--list", action="store_true", help="list the runs and exit")
    ap.add_argument("--workers", default=None,
                    help="TLC -workers (default auto; 1 with --update-pins, for an exact depth)")
    ap.add_argument("--update-pins", action="store_true",
                    help="rewrite the pins in spec/tla/pins.json from this run (a deliberate spec change)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per TLC run")
    ap.add_argument("--spec-dir", type=Path, default=HERE)
    ap.add_argument("--build-dir", type=Path, default=ROOT / "build" / "tla")
    ap.add_argument("--summary", type=Path, default=ROOT / "build" / "verify" / "summary.json")
    ap.add_argument("--jar", type=Path, default=Path(os.environ.get("APTA_TLC_JAR", JAR_PATH)))
    dist = ap.add_argument_group("distributed TLC (spec/tla/README.md, \"Distributed TLC\")")
    dist.add_argument("--distributed-workers", metavar="HOST[,HOST...]", default=None,
                      help="check the models on a TLC server here with one TLC worker per host "
                           "(127.0.0.1/localhost: a local process, another host: over ssh); runs "
                           "with a temporal property and mutants stay in one process")
    dist.add_argument("--distributed-server-host", metavar="ADDRESS", default=None,
                      help="the address the workers reach this machine at (default 127.0.0.1 when "
                           "every worker is local, else this machine's address on the route to "
                           "the first remote worker); the server listens on it only")
    dist.add_argument("--distributed-port", metavar="PORT", type=int, default=TLC_PORT,
                      help=f"the server's RMI registry (default {TLC_PORT}); PORT+1 its objects, "
                           "PORT+2+i worker i's")
    dist.add_argument("--distributed-register-timeout", metavar="SECONDS", type=int,
                      default=REGISTER_TIMEOUT,
                      help=f"fail a run when no worker has registered with the server this long after "
                           f"they were started (default {REGISTER_TIMEOUT})")
    dist.add_argument("--distributed-threads", metavar="N", type=int, default=None,
                      help="threads per worker (default: this machine's cores divided among the "
                           "workers when all are local, else each worker host's cores)")
    args = ap.parse_args(argv)
    if args.workers is None:
        args.workers = "1" if args.update_pins else "auto"
    elif args.update_pins and args.workers != "1":
        print("check.py: --update-pins runs TLC with one worker (the depth is exact only then)",
              file=sys.stderr)
        return 2

    d_hosts = None
    if args.distributed_workers is not None:
        try:
            d_hosts = parse_worker_hosts(args.distributed_workers)
        except ValueError as e:
            print(f"check.py: --distributed-workers: {e}", file=sys.stderr)
            return 2
        if args.update_pins:
            print("check.py: --update-pins runs TLC in one process with one worker (the depth is "
                  "exact only then); drop --distributed-workers", file=sys.stderr)
            return 2
        if not 1024 <= args.distributed_port <= 65535 - 2 - len(d_hosts):
            print(f"check.py: --distributed-port {args.distributed_port}: the ports PORT.."
                  f"PORT+{1 + len(d_hosts)} must lie in 1024..65535", file=sys.stderr)
            return 2
        if args.distributed_threads is not None and args.distributed_threads < 1:
            print("check.py: --distributed-threads must be at least 1", file=sys.stderr)
            return 2

    if args.list:
        for suite, runs in SUITES.items():
            for r in runs:
                exp = "pass" if r.kind == "model" else f"fail:{r.expected}"
                print(f"{suite:8} {r.kind:7} {r.name:24} {r.config_label:40} {exp}")
        return 0
    if args.only:
        unknown = [n for n in args.only if n not in ALL_RUNS]
        if unknown:
            print(f"check.py: unknown model or mutant name(s): {', '.join(unknown)}\n"
                  f"  known: {', '.join(ALL_RUNS)}", file=sys.stderr)
            return 2
        runs = [ALL_RUNS[n] for n in dict.fromkeys(args.only)]
    else:
        runs = SUITES[args.suite]

    spec_dir = args.spec_dir.resolve()
    build = args.build_dir.resolve()
    tmpdir = build / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    try:
        library = generate_modules(build)
    except workflow.WorkflowError as e:
        print(f"check.py: the workflows of the model: {e}", file=sys.stderr)
        return 1
    jar = ensure_jar(args.jar)
    java = java_cmd(jar, tmpdir, library)
    d = None
    if d_hosts is not None:
        d = distributed_setup(d_hosts, args, jar)
        if isinstance(d, str):
            print(f"check.py: --distributed-workers: {d}", file=sys.stderr)
            return 2

    for module in dict.fromkeys(r.module for r in runs):
        msg = sany(java, spec_dir, module)
        if msg is not None:
            print(f"check.py: {spec_dir / module} does not parse; SANY says:\n{msg}", file=sys.stderr)
            return 1

    records, t_all = [], time.monotonic()
    for i, run in enumerate(runs, 1):
        exp = "pass" if run.kind == "model" else f"fail on {run.expected}"
        print(f"[{i}/{len(runs)}] {run.kind} {run.name} ({run.config_label}): expect {exp} ...",
              flush=True)
        why = None
        if d is not None:
            why = distributed_unsupported(run, render_cfg(run, (spec_dir / run.cfg).read_text())[1])
            if why:
                print(f"    in one process: {why}", flush=True)
        if d is not None and why is None:
            rec = run_tlc_distributed(run, java, spec_dir, build, d, args.timeout)
        else:
            rec = run_tlc(run, java, spec_dir, build, args.workers, args.timeout)
        got = rec["result"] if rec["result"] == "pass" else \
            f"fail on {rec['violated'] or rec['_error']}"
        verdict = "ok" if rec["ok"] else "UNEXPECTED"
        where = f", {len(rec['distributed'])} distributed workers" if rec.get("distributed") else ""
        print(f"    {got}: {rec['distinct_states']:,} distinct / {rec['states']:,} generated "
              f"states, {rec['seconds']:.1f} s{where}  [{verdict}]  log {rec['_log']}", flush=True)
        if not rec["ok"]:
            if run.kind == "model" or rec["_error"]:
                print(error_text(rec["_out"]), flush=True)
            if rec.get("violated") == "unnamed":
                print(f"    (distributed TLC names no property and prints only the last step of the "
                      f"trace, its first state mislabelled <Initial predicate>; rerun in one process "
                      f"for both: spec/tla/check.py --only {run.name})", flush=True)
            else:
                print(f"    {run.name} was expected to fail on {run.expected}; "
                      f"TLC reported {rec['violated'] or rec['_error']}:", flush=True)
                print(error_text(rec["_out"]), flush=True)
        records.append({k: v for k, v in rec.items() if not k.startswith("_")})

    pins_path = spec_dir / PINS_FILE
    mismatches = apply_pins(records, load_pins(pins_path), pins_path)
    updated = update_pins(pins_path, records) if args.update_pins else []
    if args.update_pins:
        mismatches = []
    # Keep this checker's records of other runs (an --only or a deep run replaces
    # just its own), dropping records of runs that no longer exist.
    merged = summary.merge(args.summary, "tlc", records, known=set(ALL_RUNS))
    print()
    print(summary.table([r for r in merged if r["checker"] == "tlc" and r in records]))
    for line in mismatches:
        print(f"\n{line}")
    if updated:
        print(f"\ncheck.py: pins updated in {pins_path}: {', '.join(updated)}")
    unpinned = [r["name"] for r in records if r.get("pin") == "unpinned"]
    bad = [r["name"] for r in records if not r["ok"]]
    print(f"\ncheck.py: {len(records)} TLC runs in {time.monotonic() - t_all:.0f} s; "
          + (f"UNEXPECTED: {', '.join(bad)}" if bad else "all as expected")
          + (f" (pin mismatch: {', '.join(r['name'] for r in records if r.get('pin') == 'mismatch')})"
             if mismatches else "")
          + (f"; unpinned (no pin in {pins_path.name}, not compared): {', '.join(unpinned)}" if unpinned
             else ("; every result equals its pin" if not bad else "")))
    return 1 if bad else 0


if __name__ == "__main__":
    import signal
    # a SIGTERM unwinds like an exception: the finally blocks stop every process started
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.exit(main())
