"""Trace validation of a QEMU run with a killed guest (spec/tla/README.md, "The QEMU
emulation"): 3 TCG guests boot the image and run the function runner; the tracing daemon
(`apta-memd-trace --trace-log`, the Verilated msemu top with its core's result queue readable) logs
every event at its ports and its core's decisions; the executor places one workflow's functions
(stamped with the host's monotonic clock, as the daemon's events are); one guest's QEMU is SIGKILLed
mid-run, fenced at the lease, rebooted, and rejoins. spec/tla/qemu_trace.py puts it all in one
order and trace.py has TLC decide whether it is a behaviour of Apta.tla:

* the log is accepted, and it shows the kill (crash, fence, rejoin), placements, misses, hits,
  puts and completions;
* negative controls, each rejected at the mutated step: a get whose data no commit wrote (a line
  hash changed in the daemon's log), a cache hit returning the object's initial contents instead
  of its copy (the guest's report changed: the hits' values are checked), and a completion moved
  before its run's commit (the executor's time stamp moved: the order by the common clock is
  checked too).

Needs APTA_QEMU=1 (make test, make test-qemu, make trace-qemu). Results: build/qemu-cxl/runs/pytest-trace/
and build/trace/qemu/."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from apta import workflow as wfmod
from apta.paths import ROOT
from apta.tla import qemu_trace as qtrace
from apta.tla import trace

from apta.qemu import executor as exmod
from apta.qemu import harness
from apta.qemu import launch
from apta.qemu.harness import RUNNER_STATIC as RUNNER
from apta.qemu.harness import Serving, build_runner


N = 3
LEASE_MS = 2000
# finra: portfolios is read on every guest and then rewritten, so the log has invalidations and acks
WORKFLOW = os.environ.get("APTA_QEMU_TRACE_WORKFLOW", "finra")
EXE = ROOT / "build" / "qemu-cxl" / "daemon" / "apta-memd-trace"
OUT = ROOT / "build" / "trace" / "qemu"

pytestmark = pytest.mark.skipif(os.environ.get("APTA_QEMU") != "1",
                                reason="QEMU guests: set APTA_QEMU=1 (make test / make trace-qemu do)")


def say(m: str):
    print(f"trace-qemu: {m}", flush=True)


def balanced(ex, k, inst, ids):
    """The executor's placement with the order of its preferences swapped: the fewest runs first,
    then the guest caching most inputs, among the guests the daemon reports schedulable for the
    inputs. It spreads a workflow's readers over the guests (so a later put invalidates copies on
    live guests) and still gives hits; the spec allows any eligible server (Locality = FALSE)."""
    cand = [(gs.runs, -len(s.get("caches", [])), gs.g) for gs, s in zip(ex.G, ex.api.servers(ids))
            if ex.usable(gs) and s["live"] and s["schedulableFor"]]
    return ex.G[min(cand)[2]] if cand else None


@pytest.fixture(scope="module")
def traced(request, qemu_clusters):
    """One run: the workflow on 3 guests with one killed mid-run (rebooted, rejoined), logged by
    the tracing daemon; returns the run record and the apta-trace/1 log."""
    if harness.rtl_missing():
        pytest.fail(harness.rtl_missing())
    t0 = time.time()
    r = subprocess.run(["nice", "-n", "10", "make", "-s", "-C", str(ROOT / "qemu-cxl" / "daemon"), "trace"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    say(f"tracing daemon built ({time.time() - t0:.0f} s)")
    schema = harness.load_schema()
    build_runner(RUNNER)
    for pc in qemu_clusters:                    # never two clusters at once on 2 cores
        pc.stop_all()
    c = launch.Cluster(run="pytest-trace", n=N, script="/apta/aptarun $APTA_GUEST $APTA_BOOT",
                       files=[(RUNNER, "aptarun")], hold=True)
    dlog = c.dir / "daemon-trace.ndjson"
    d = Serving(EXE, schema, c.rack, c.dir / "daemon.log", LEASE_MS, extra=["--trace-log", str(dlog)])
    done = threading.Event()

    def finalize():
        done.set()
        c.stop_all()
        d.close()
        left = [pid for pid in c.all_pids_ever() if launch.pid_alive(pid)]
        assert not left, f"QEMU processes still alive after the test: {left}"
    request.addfinalizer(finalize)

    t_boot = time.time()
    for g in range(N):
        c.start(g)
    for g in range(N):
        c.wait_ready(g, timeout=240)
    # dead_after_s: the executor learns of the kill from the daemon's fence only, so a lost run is
    # placed again after the fence (the spec re-executes a function only once its server is fenced)
    ex = exmod.Executor(c.rack, d.port, guests=N, out_dir=c.dir, dead_after_s=3600, log=say,
                        placer=balanced)
    deadline = time.time() + 120
    while not all(gs.jb.idle() and gs.jb.life[1] >= 1 for gs in ex.G):
        assert time.time() < deadline, [c.console(g)[-800:] for g in range(N)]
        time.sleep(0.1)
    for gs in ex.G:
        gs.life, gs.alive, gs.fenced = gs.jb.life, True, False
    say(f"{N} guests booted, runners joined in {time.time() - t_boot:.1f} s")

    xlog, objs, kills = [], {}, []
    ex.hooks.append(lambda ex_, ev: xlog.append({**ev, "mono_ns": time.monotonic_ns()}))
    alloc = ex.allocate
    initial = {}

    def allocate(wf, ref):
        """The executor's allocation, and each object's lines as loaded (version 0): the memory server
        allocates the storage at registration, so the daemon's register event precedes the load."""
        new = alloc(wf, ref)
        for o, (oid, lines, base) in new.items():
            raw = ex.region.data_read(base, 64 * lines)
            initial[o] = [f"{qtrace.fnv(raw[64 * l:64 * l + 64]):016x}" for l in range(lines)]
        objs.update(new)
        return objs
    ex.allocate = allocate

    def kill_hook(ex_, ev):
        # a get issued or returned in a run: its function is getting, computing or putting; frozen
        # first, and let go if the run finished meanwhile (a later get is taken), so the kill is
        # mid-run. Both events: finra's tiny runs often end within the executor's poll after get_ret
        if kills or ev["ev"] not in ("get", "get_ret"):
            return
        gs = next((x for x in ex_.G if x.run is not None and ev["id"].startswith(x.run.rid + "/")), None)
        if gs is None:
            return
        pid = c.guests[gs.g].proc.pid
        os.kill(pid, signal.SIGSTOP)
        if not launch.frozen(pid) or gs.jb.done(gs.job):
            os.kill(pid, signal.SIGCONT)
            return
        c.kill(gs.g)
        k = {"g": gs.g, "server": gs.name, "run": gs.run.rid, "t_ns": time.monotonic_ns()}
        kills.append(k)
        say(f"killed {gs.name} during {gs.run.rid}")
        threading.Thread(target=harness.reboot_after_fence, args=(c, d, k, LEASE_MS, done), daemon=True).start()
    ex.hooks.append(kill_hook)

    wf = wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / f"{WORKFLOW}.json"))
    ref = exmod.host_reference(wf, "tiny", c.dir / "host")
    start_ns = time.monotonic_ns()
    try:
        res = ex.run(wf, ref, timeout_s=240)
        say(f"{wf.name}: {res['instances']} instances, {res['runs']} runs ({res['reexecuted']} re-executed), "
            f"{res['hits']}/{res['gets']} gets hit, outputs equal, history clean")
        assert kills, "no kill point: every run finished before its guest froze"
        k = kills[0]
        deadline = time.time() + 240
        while not (k.get("rebooted_after_s") and ex.G[k["g"]].alive):
            assert "error" not in k and time.time() < deadline, (k, c.console(k["g"])[-2000:])
            ex._watch()
            time.sleep(0.2)
        k["rejoined_epoch"] = ex.G[k["g"]].life[1]
        say(f"{k['server']}: fenced {k['fenced_after_s']} s after the kill, rejoined in epoch {k['rejoined_epoch']}")
    finally:
        ex.close()
    d.close()                                   # the daemon flushes and closes its log
    instances = wf.instances()
    after = {i: sorted({f"{o.function}#{o.index}" for o in instances
                        if o.function in wf.function(inst.function).get("after", [])})
             for i, inst in enumerate(instances)}
    fn = {i: qtrace.fname(f"x/{inst.function}#{inst.index}@") for i, inst in enumerate(instances)}
    params = json.loads(harness.PARAMS_PATH.read_text())
    run = {"workflow": wf.name, "servers": [gs.name for gs in ex.G], "daemon_log": str(dlog),
           "objects": {o: {"id": oid, "lines": lines, "initial": initial[o]} for o, (oid, lines, base) in objs.items()},
           "functions": {fn[i]: {"reads": list(inst.reads), "writes": list(inst.writes),
                                 "after": [qtrace.fname(f"x/{a}@") for a in after[i]]}
                         for i, inst in enumerate(instances)},
           "dir_sets": params["dirSets"], "dir_ways": params["dirWays"],
           "start_ns": start_ns, "kills": kills, "executor": xlog}
    run["final"] = qtrace.final_lines(c.rack, dlog, run["objects"])
    OUT.mkdir(parents=True, exist_ok=True)
    rp = OUT / f"{WORKFLOW}-run.json"
    rp.write_text(json.dumps(run, indent=1, default=str))
    meta, events = qtrace.convert(run, rp)
    log = OUT / f"{WORKFLOW}.ndjson"
    qtrace.write(meta, events, log)
    say(f"daemon log {sum(1 for _ in open(dlog))} lines -> {log}: {len(events)} events")
    return run, rp, log


def test_qemu_log_accepted(traced):
    """The run with the killed guest is a behaviour of Apta.tla, and the log shows the kill, the
    re-execution and the guests' own events (hits), not only the memory server's."""
    run, rp, log = traced
    r = trace.validate(log)
    say(trace.line_of(r))
    assert r["result"] == "accepted" and r["matched"] == r["length"], trace.line_of(r)
    evs = trace.load_log(log)[1]
    seen = {e["ev"] for e in evs}
    need = {"place", "get", "put_prepare", "put_line", "commit", "done", "crash", "fence", "rejoin", "final"}
    if run["workflow"] == "finra":           # the readers are spread (balanced): marginBalance invalidates
        need |= {"bisnp", "birsp"}
    assert need <= seen, f"the log never shows {sorted(need - seen)}"
    assert any(e["ev"] == "get" and e["hit"] for e in evs), "no cache hit in the log"
    assert any(e["ev"] == "get" and not e["hit"] for e in evs), "no get served by the memory server"
    places = [e["fn"] for e in evs if e["ev"] == "place"]
    assert len(places) > len(set(places)), "no function placed twice: the killed run was not re-executed"
    summary = json.dumps({"workflow": run["workflow"], "killed": [k["server"] for k in run["kills"]]} |
                         {k: r[k] for k in ("result", "length", "states", "distinct_states", "seconds")} |
                         {"events": {ev: sum(e["ev"] == ev for e in evs) for ev in sorted(seen)}}, indent=1)
    (OUT / f"{run['workflow']}-summary.json").write_text(summary)
    (OUT / "summary.json").write_text(summary)          # make trace-qemu's summary line


def _mutated(run: dict, rp: Path, tmp: Path, how) -> tuple[Path, int]:
    """The run with its daemon log or executor events changed by how(run, dlog) -> a predicate
    on the converted events naming the mutated one; the new log and that event's 1-based step."""
    dlog = qtrace.load(Path(run["daemon_log"]))
    run = json.loads(json.dumps(run))
    pick = how(run, dlog)
    p = tmp / "daemon-trace.ndjson"
    p.write_text("".join(json.dumps(e) + "\n" for e in dlog))
    run["daemon_log"] = str(p)
    meta, events = qtrace.convert(run, rp)
    log = tmp / f"{tmp.name}.ndjson"
    qtrace.write(meta, events, log)
    steps = [k + 1 for k, e in enumerate(events) if pick(e)]
    assert steps, "the mutation left no trace in the converted log"
    return log, steps[0]


def _garbage_get(run, dlog):
    """The last get the memory server served: one of its ObjData lines gets a hash no version has."""
    served = [k for k, e in enumerate(dlog) if e["ev"] == "core" and qtrace.OPS[e["op"]] == "Get"
              and qtrace.RESULTS[e["result"]] == "Served"]
    k = served[-1]
    d = next(e for e in dlog[k:] if e["ev"] == "rsp" and e["op"] == "ObjData"
             and e["server"] == dlog[k]["server"] and e["obj"] == dlog[k]["obj"])
    d["h"] = "0123456789abcdef"
    return lambda e: e["ev"] == "get" and not e["hit"] and qtrace.UNKNOWN in e["lines"]


def _early_done(run, dlog):
    """A completion stamped just before its run's last commit: the run reports done before its put."""
    commits = [e for e in dlog if e["ev"] == "core" and qtrace.OPS[e["op"]] == "Commit"
               and qtrace.RESULTS[e["result"]] == "Committed" and e["t"] >= run["start_ns"]]
    last = commits[-1]
    name = run["servers"][last["server"]]
    place = [x for x in run["executor"] if x["ev"] == "place" and x["server"] == name and x["mono_ns"] < last["t"]][-1]
    done = next(x for x in run["executor"] if x["ev"] == "done" and x["run"] == place["run"])
    done["mono_ns"] = last["t"] - 1
    run["executor"].sort(key=lambda x: x["mono_ns"])
    f = qtrace.fname(place["run"])
    return lambda e: e["ev"] == "done" and e["fn"] == f


def _stale_hit(run, dlog):
    """The last cache hit returns the object's initial (empty) contents instead of its copy."""
    from apta.qemu import jobs
    h = [x for x in run["executor"] if x["ev"] == "get_ret" and x.get("hit")][-1]
    h["len"], h["digest"] = 0, f"{jobs.fnv1a64(b''):016x}"
    g = next(x for x in run["executor"] if x["ev"] == "get" and x["id"] == h["id"])
    f = qtrace.fname(g["run"])
    return lambda e: e["ev"] == "get" and e["hit"] and e["fn"] == f and e["lines"] == [0]


MUTANTS = {"garbage_get": _garbage_get, "early_done": _early_done, "stale_hit": _stale_hit}


@pytest.mark.parametrize("how", sorted(MUTANTS))
def test_mutated_qemu_log_rejected(traced, tmp_path, how):
    """A mutated log is rejected, and the first event no action matches is the mutated one."""
    run, rp, _ = traced
    log, step = _mutated(run, rp, tmp_path, MUTANTS[how])
    r = trace.validate(log, build=tmp_path / "tla")
    say(f"{how}: {trace.line_of(r)}")
    assert r["result"] == "rejected" and r["step"] == step, (step, trace.line_of(r))
    (OUT / f"mutant-{how}.json").write_text(json.dumps({"mutant": how, "step": step, "length": r["length"],
                                                        "event": r["event"][:200]}))
