#!/usr/bin/env python3
"""The executor (the paper's Executor Manager) of the CXL emulation: runs a workflow's functions on
the guests' runners (qemu-cxl/JOBS.md) against the memory-server daemon, and records the history
that apta.history checks. Stdlib and the apta package only; used by tests/test_executor.py (runner
processes on the host) and tests/test_qemu_workflows.py (runners in QEMU guests).

    ex = Executor(rack_dir, api_port, guests=3, out_dir=...)
    ref = host_reference(wf, "tiny", tmp)          # the same functions on the host: the oracle
    res = ex.run(wf, ref)                          # outputs compared, history checked

Placement (docs/PROTOCOL.md, the scheduler rule): a function instance is ready when every instance of the
functions in its `after` is done; it goes to a guest that is live, whose runner is idle, and that
the daemon reports schedulable for its inputs (`GET /v1/schedulable?objects=...`: no invalidation
of an input pending there); among those, the one caching most of its inputs (the daemon's
directory, `caches`), then the one with the fewest runs so far. A guest whose runner stops
heartbeating (or that the daemon fences) loses its run: the executor reads what the run's log
holds (the file survives the guest), records `crash` and later `fence`, and places the function
again as a new run; a runner's new life (`runner_life` changes) is recorded as `rejoin` and the
guest is used again.

Early placement (`early=True`; the workflow runner's Early mode, scheduler-plugin
FRESHNESS.md "Early placement"): an instance whose functions has predecessors, and every object it
reads or writes has exactly one writer instance in the workflow, that writer an ancestor of every
reader, is placed as soon as all its ancestors are placed (running or done), not when its
predecessors are done. Its gets name the version their writer will commit (the object's version
at the daemon when the workflow starts, plus one: `get <name> <obj> <lines> <version>`, JOBS.md),
the memory server holds them until that commit, and it goes to any live, unfenced guest with an
idle runner (the pending-invalidation rule is for gets without a version). Ancestors, not only
predecessors: a placed early instance whose producer died must never hold the last guest the
producer's re-execution needs, so nothing whose ancestor is unplaced (a crashed run waiting for a
guest) is placed early. Re-executions are placed first. When a re-execution finds no usable guest
(the live ones all run early instances waiting for it), the waiting instances are stopped: the
object manager cancels the versions they wait for whose writer has not finished (`POST /v1/cancel`;
409 when it committed meanwhile), their gets end with GetCancelled (the guest library's
ACX_ECANCELLED, `get_ret` `cancelled` in the history), the run ends (`done`: it made no put) and its
instance is placed again after its predecessors are done (still reading with versions); the
re-executed writer's commit lifts the cancellation (the daemon, as the Go control plane). Any run
that fails on a cancelled get is treated so. `early_before_commit` counts the instances
started while an input they name had not committed (the daemon's version read after the start is
still below the version named).

Allocation policy: the object sizes are not known before a run, so every store object gets a map
entry sized from the host reference run (its largest version, rounded up to a power of two lines,
header line included; JOBS.md object format), a fresh object id (no two live ids share a slot of
the direct-mapped object map) and data-area space after the map table.
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from apta import history
from apta import hostrun as wrun
from apta.paths import ROOT

from apta.qemu import jobs



class ExecutorError(RuntimeError):
    pass


# ---- the oracle: the same functions on the host ------------------------------------------------
@dataclass
class Reference:
    initial: dict                     # store input -> bytes
    ext: dict                         # external input -> bytes
    per: list                         # per instance (execution order): ({written obj: bytes}, {emit: bytes})
    final: dict                       # object -> bytes after the workflow
    sizes: dict                       # object -> largest version (bytes)


def host_reference(wf, size: str, tmp: Path) -> Reference:
    """Every instance run on the host (workloads/run.py's commands), in the file's order."""
    run = wrun.prepare_run(wf, size, run_dir=str(Path(tmp) / f"host-{wf.name}"))
    st, ext_in, ext_out = (Path(run["dirs"][k]) for k in ("store", "ext_in", "ext_out"))
    initial = {o: (st / o).read_bytes() for o in wf.inputs}
    ext = {o: (ext_in / o).read_bytes() for o in wf.external_inputs}
    per, final = [], dict(initial)
    sizes = {o: len(b) for o, b in initial.items()}
    for inst in wf.instances():
        wrun.run_instance(wf, inst, wrun.instance_command(wf, inst, size, run))
        writes = {o: (st / o).read_bytes() for o in inst.writes}
        per.append((writes, {e: (ext_out / e).read_bytes() for e in inst.emits}))
        final.update(writes)
        for o, b in writes.items():
            sizes[o] = max(sizes.get(o, 0), len(b))
    return Reference(initial, ext, per, final, sizes)


def pow2_lines(nbytes: int) -> int:
    n = jobs.obj_lines(nbytes)
    return 1 << (n - 1).bit_length()


# ---- the daemon's control-plane API ------------------------------------------------------------
class Api:
    """The daemon's API; with `auth` (qemu-cxl/apiauth.py) over TLS trusting only its CA, each call
    with the token of the role it needs (object-manager registers, reader reads)."""

    def __init__(self, port: int, host: str = "127.0.0.1", auth=None):
        self.auth = auth
        self.ctx = auth.context() if auth else None
        self.base = f"{'https' if auth else 'http'}://{host}:{port}"

    # The daemon drops a connection whose TLS handshake or request is not complete in time (a slow
    # client never holds its API thread), and on a loaded host that can be ours: a read (GET) is
    # repeated after such a transport failure; a write is not, it may have been applied.
    GET_ATTEMPTS = (0.0, 0.2, 0.5, 1.0)        # seconds to wait before each attempt

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        attempts = self.GET_ATTEMPTS if method == "GET" else (0.0,)
        for i, pause in enumerate(attempts):
            time.sleep(pause)
            req = urllib.request.Request(self.base + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json",
                                                  **(self.auth.header(method, path) if self.auth else {})})
            try:
                with urllib.request.urlopen(req, timeout=10, context=self.ctx) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as e:
                raise ExecutorError(f"{method} {path}: HTTP {e.code}: {e.read()[:300]!r}") from None
            except OSError as e:
                if i + 1 == len(attempts):
                    raise ExecutorError(f"{method} {path}: {e}"
                                        + (f" ({len(attempts)} attempts)" if len(attempts) > 1 else "")) from None
            except ValueError as e:
                raise ExecutorError(f"{method} {path}: {e}") from None
        raise AssertionError("unreachable")

    def schedulable(self, objs: list[int] | None = None) -> dict:
        """The daemon's answer (seq, instance, servers) overall or for the objects."""
        q = "?objects=" + ",".join(map(str, objs)) if objs else ""
        return self.call("GET", "/v1/schedulable" + q)

    def servers(self, objs: list[int] | None = None) -> list[dict]:
        return self.schedulable(objs)["servers"]


# ---- the executor --------------------------------------------------------------------------------
@dataclass
class Guest:
    g: int
    jb: jobs.JobBlock
    name: str = ""
    life: tuple = (0, 0)
    alive: bool = True                # False from the crash until the runner's next life
    fenced: bool = False
    hb: int = 0                       # last runner heartbeat seen, and the host time it changed
    hb_t: float = 0.0
    job: int = 0                      # the job it runs (0: none)
    run: object = None                # the Run it runs
    log_off: int = 0
    runs: int = 0


def ok_for(s: dict, early: bool) -> bool:
    """May an instance start on server `s` (the daemon's answer)? One placed early reads every input
    with a version: only a fenced or dead server is excluded; any other needs s(f)'s rule."""
    return s["live"] and (not s["fenced"] if early else s["schedulableFor"])


@dataclass
class Run:
    rid: str
    inst: object
    k: int                            # index of the instance in execution order
    guest: int
    job: int
    t0: float
    recs: list = field(default_factory=list)


class Executor:
    def __init__(self, rack_path, api_port: int, guests: int = 3, out_dir: Path | None = None,
                 dead_after_s: float = 1.0, first_obj: int = 1, log=print, placer=None, auth=None,
                 early: bool = False):
        self.region = jobs.Rack(rack_path)    # the rack directory: server file + guest files (RINGS.md)
        self.api = Api(api_port, auth=auth)
        self.dead_after_s = dead_after_s
        self.early = early                    # place early (the module's docstring)
        # ms each run of a producer that an early instance reads, itself placed after completion,
        # waits before its function (JOBS.md `delay`): its successors placed early start before its
        # commit, and their gets wait in the memory server. Not just the sources: video's only one
        # (locateKeyFrame) feeds splitVideo, which is never early, so nothing early waits for it
        self.producer_delay_ms = 0
        # ms the first instance with inputs placed in a run pauses after its first get (JOBS.md
        # `pause`): a test's kill point that holds a copy mid-run whatever the machine's timing
        self.pause_first_reader_ms = 0
        self.early_k: dict[int, dict] = {}    # instance k placed early -> {object: version its gets name}
        # placer(executor, k, instance, input ids) -> a usable Guest or None (not yet): the
        # executor's own choice, or the kube-scheduler's binding (qemu-cxl/kube.py)
        self.placer = placer or (lambda ex, k, inst, ids: ex.choose(k, inst, ids))
        self.out_dir = Path(out_dir) if out_dir else None
        self.log = log
        self.G = [Guest(g, jobs.JobBlock(self.region, g)) for g in range(guests)]
        for gs, s in zip(self.G, self.api.servers()):
            gs.name, gs.fenced = s["name"], s["fenced"]
            gs.life, gs.hb, gs.hb_t = gs.jb.life, gs.jb.heartbeat, time.monotonic()
        self.map_entries = int(json.loads((ROOT / "build/rtl/msemu/params.json").read_text())["mapEntries"])
        self.next_obj = first_obj
        self.live_ids: set[int] = set()
        self.unreleased: set[int] = set()   # removals refused as busy (copies outstanding): retried later
        self.hooks: list = []         # callables (executor, event) after every history event
        self.liveness: list = []      # every crash, fence and rejoin this executor saw
        self.history, self.t_start = [], time.monotonic()

    def close(self):
        self.region.close()

    # -- allocation ---------------------------------------------------------------------------
    def reserve(self, lines: int, data: bytes = b"", what: str = "object") -> tuple[int, int]:
        """A new CXL object of `lines` lines holding `data` (object format): a fresh id in a free
        slot of the direct-mapped map, registered with the daemon, whose memory server allocates its
        storage (507 when the data area is full); then the initial data at that base; (id, base)."""
        while (self.next_obj % self.map_entries) in {i % self.map_entries for i in self.live_ids}:
            self.next_obj += 1
        oid = self.next_obj
        self.next_obj += 1
        try:
            base = self.api.call("POST", "/v1/objects", {"obj": oid, "size": lines})["base"]
        except ExecutorError as e:
            raise ExecutorError(f"{what}: {e}") from None
        self.live_ids.add(oid)
        self.region.data_write(base, jobs.encode_object(data, lines))
        return oid, base

    def allocate(self, wf, ref: Reference) -> dict:
        """{object: (id, lines, base)}: entries registered, initial objects loaded (JOBS.md)."""
        objs = {}
        for o in sorted(wf.objects()):
            lines = pow2_lines(ref.sizes.get(o, 0))
            oid, base = self.reserve(lines, ref.initial.get(o, b""), f"{wf.name}: object {o}")
            objs[o] = (oid, lines, base)
        return objs

    def release(self, objs: dict):
        """Removes the objects (their storage is freed). A removal the memory server refuses as busy
        (a compute server still holds a copy, or owes an ack for it) is retried at the next release:
        the copy goes when the directory evicts or a fence drops it."""
        for oid in sorted(self.unreleased | {oid for oid, _lines, _base in objs.values()}):
            try:
                self.api.call("POST", "/v1/objects", {"obj": oid, "valid": 0})
            except ExecutorError as e:
                if "HTTP 409" not in str(e) or '"busy"' not in str(e):
                    raise
                self.unreleased.add(oid)
                continue
            self.unreleased.discard(oid)
            self.live_ids.discard(oid)

    # -- history ------------------------------------------------------------------------------
    def emit(self, ev: dict):
        ev.setdefault("t", round(time.monotonic() - self.t_start, 6))
        self.history.append(ev)
        if ev["ev"] in ("crash", "fence", "rejoin"):
            self.liveness.append({**ev, "workflow": getattr(self, "wf", None) and self.wf.name, "wall": time.time()})
        for h in self.hooks:
            h(self, ev)

    def _tail(self, gs: Guest):
        """New complete log lines of the guest's current run into the history (JOBS.md: `ev` lines).
        Until the runner has taken the job, the log is the previous job's."""
        if not gs.jb.started(gs.job):
            return
        recs, gs.log_off = gs.jb.read_log(gs.log_off)
        for r in recs:
            gs.run.recs.append(r)
            if "put_us" in r:
                self.putlat.append({"t": round(time.monotonic() - self.t_start, 6), "server": gs.name,
                                    "run": gs.run.rid, "obj": r.get("obj"), "us": r["put_us"]})
            if "ev" in r:
                if r.get("run", gs.run.rid) != gs.run.rid:
                    raise ExecutorError(f"guest {gs.g}: log line of run {r.get('run')} in run {gs.run.rid}")
                self.emit(dict(r))

    # -- liveness -----------------------------------------------------------------------------
    def _watch(self, every_s: float = 0.05):
        now = time.monotonic()
        if now - getattr(self, "_status_t", -1e9) >= every_s:    # the daemon's view, at most 20 times a second
            self._status = {s["name"]: s for s in self.api.servers()}
            self._status_t = now
        status = self._status
        for gs in self.G:
            hb = gs.jb.heartbeat
            if hb != gs.hb:
                gs.hb, gs.hb_t = hb, now
            s = status[gs.name]
            life = gs.jb.life
            if gs.alive and (now - gs.hb_t > self.dead_after_s or (s["fenced"] and life == gs.life)):
                self._crash(gs)
            if s["fenced"] and not gs.fenced:
                gs.fenced = True
                self.emit({"ev": "fence", "server": gs.name, "epoch": gs.life[1]})
            if life != gs.life and life[1] and now - gs.hb_t < self.dead_after_s and gs.jb.idle():
                if gs.run is not None:              # the run's runner rejoined mid-job (fenced alive)
                    self._crash(gs)
                if not gs.fenced:                   # a rejoin fences first (rtl/CORE.md)
                    self.emit({"ev": "fence", "server": gs.name, "epoch": gs.life[1]})
                gs.life, gs.alive, gs.fenced = life, True, False
                self.emit({"ev": "rejoin", "server": gs.name, "epoch": life[1]})

    def _crash(self, gs: Guest):
        if gs.run is not None:
            self._tail(gs)                          # what the dead run did, from the surviving file
            self.requeue.append(gs.run.k)
            self.reexec += 1
            self.log(f"  {gs.name}: lost run {gs.run.rid}; placing it again")
        gs.run, gs.job, gs.alive = None, 0, False
        self.emit({"ev": "crash", "server": gs.name})

    # -- placement ----------------------------------------------------------------------------
    def usable(self, gs: Guest) -> bool:
        """The guest's runner can take a job now."""
        return gs.alive and not gs.fenced and gs.run is None and gs.jb.idle() and gs.jb.life == gs.life

    def choose(self, k: int, inst, ids: list[int]) -> Guest | None:
        """The executor's own placement (the default `placer`): see the module's docstring. An early
        instance reads with versions: any live, unfenced guest will do (FRESHNESS.md step 1)."""
        cand = []
        for gs, s in zip(self.G, self.api.servers(ids)):
            if self.usable(gs) and ok_for(s, k in self.early_k):
                cand.append((-len(s.get("caches", [])), gs.runs, gs.g))
        return self.G[min(cand)[2]] if cand else None

    def _place(self, k: int, inst, objs: dict) -> bool:
        gs = self.placer(self, k, inst, [objs[o][0] for o in inst.reads])
        if gs is None:
            return False
        self.attempts[k] = self.attempts.get(k, 0) + 1
        rid = f"{self.wf.name}/{inst.function}#{inst.index}@{gs.name}.{self.attempts[k]}"
        params = {**self.wf.params, **self.wf.sizes[self.size].get("params", {}), **inst.params}
        d = [f"run {rid}", f"fn {self.wf.app} {inst.source}", f"label {inst.label}", f"instance {inst.index} {inst.count}"]
        vers = self.early_k.get(k, {})
        d += [f"get {o} {objs[o][0]} {objs[o][1]}" + (f" {vers[o]}" if o in vers else "") for o in inst.reads]
        d += [f"put {o} {objs[o][0]} {objs[o][1]}" for o in inst.writes]
        d += [f"emit {e}" for e in inst.emits] + [f"param {k_}={v}" for k_, v in params.items()]
        after = sorted({f for f in self.wf.function(inst.function).get("after", [])})
        if self.producer_delay_ms and k not in self.early_k and set(inst.writes) & self.early_reads:
            d.append(f"delay {self.producer_delay_ms}")
        if self.pause_first_reader_ms and inst.reads and not self.paused:
            d.append(f"pause {self.pause_first_reader_ms}")
            self.paused = True                  # once: a re-execution runs at full speed
        self.placing = k                        # the instance of the place event (for hooks)
        self.emit({"ev": "place", "run": rid, "fn": inst.function, "server": gs.name, "epoch": gs.life[1],
                   "after": after, "inputs": list(inst.reads)})
        job = gs.jb.post(d, {i: self.ref.ext[i] for i in inst.inputs})
        gs.run, gs.job, gs.log_off = Run(rid, inst, k, gs.g, job, time.monotonic()), job, 0
        gs.runs += 1
        if vers:                                # started before an input committed? (versions only grow)
            self.early_runs += 1
            if any(self.api.call("GET", f"/v1/objects/{objs[o][0]}")["version"] < v for o, v in vers.items()):
                self.early_before_commit += 1
        return True

    def _stop_waiting(self, objs: dict, done: dict):
        """A re-execution waits for a guest and every live one is taken: the early instances waiting
        for a writer that has not finished are stopped (the module's docstring)."""
        writer = {o: k for k, inst in enumerate(self.insts) for o in inst.writes}
        for gs in self.G:
            r = gs.run
            if r is None or r.k not in self.early_k or getattr(r, "stopping", False):
                continue
            for o, v in self.early_k[r.k].items():
                if writer.get(o) in done:
                    continue
                try:
                    self.api.call("POST", "/v1/cancel", {"object": str(objs[o][0]), "version": v})
                except ExecutorError as e:
                    if "HTTP 409" not in str(e):        # 409: committed meanwhile, nothing to stop
                        raise
                r.stopping = True
            if getattr(r, "stopping", False):
                self.log(f"  {gs.name}: stopping {r.rid}, which waits for a writer being re-executed")

    def _plan_early(self, wf, insts, objs: dict) -> dict:
        """{k: {object: version}} for the instances placed early (the module's docstring)."""
        writers: dict[str, list[int]] = {}
        for k, inst in enumerate(insts):
            for o in inst.writes:
                writers.setdefault(o, []).append(k)
        fn_after = {f["name"]: set(f.get("after", [])) for f in wf.functions}
        anc_fn: dict[str, set] = {}

        def ancestors(fn):
            if fn not in anc_fn:
                anc_fn[fn] = set()
                for a in fn_after[fn]:
                    anc_fn[fn] |= {a} | ancestors(a)
            return anc_fn[fn]
        self.anc = {k: [j for j, o in enumerate(insts) if o.function in ancestors(inst.function)]
                    for k, inst in enumerate(insts)}
        plan = {}
        for k, inst in enumerate(insts):
            if not fn_after[inst.function] or not inst.reads:
                continue
            objs_k = set(inst.reads) | set(inst.writes)
            if any(len(writers.get(o, [])) != 1 for o in objs_k):
                continue                        # two writers, or an input nobody in the workflow writes
            if any(writers[o][0] not in self.anc[k] for o in inst.reads):
                continue                        # its input's writer is not an ancestor (it would wait for ever)
            plan[k] = {o: self.api.call("GET", f"/v1/objects/{objs[o][0]}")["version"] + 1 for o in inst.reads}
        return plan

    # -- a workflow ---------------------------------------------------------------------------
    def run(self, wf, ref: Reference, size: str = "tiny", timeout_s: float = 300.0) -> dict:
        """Runs the workflow to completion; returns its summary. ExecutorError if a run fails, an
        output differs from the host's, or the history has a violation."""
        self.wf, self.ref, self.size = wf, ref, size
        self.history, self.t_start = [], time.monotonic()
        self.requeue, self.reexec, self.attempts, self.putlat = [], 0, {}, []
        self.early_runs, self.early_before_commit, self.stopped = 0, 0, []
        self.paused = False                   # the run's pause (pause_first_reader_ms) is placed
        self.demoted: set[int] = set()        # early instances stopped once: placed after completion now
        insts = self.insts = wf.instances()
        if hasattr(self.placer, "new_workflow"):
            self.placer.new_workflow()
        objs = self.allocate(wf, ref)
        self.early_k = self._plan_early(wf, insts, objs) if self.early else {}
        self.early_reads = {o for v in self.early_k.values() for o in v}
        digests = {jobs.digest_hex(ref.initial.get(o, b"")): "initial" for o in objs}
        self.emit({"ev": "meta", "format": 1, "source": "qemu-cxl", "initial": {o: "initial" for o in objs},
                   "digests": digests, "floor": "place"})
        done: dict[int, Run] = {}
        self.done = done
        pending = list(range(len(insts)))
        deadline = time.monotonic() + timeout_s
        while len(done) < len(insts):
            if time.monotonic() > deadline:
                raise ExecutorError(f"{wf.name}: not finished in {timeout_s}s ({len(done)}/{len(insts)} runs done)")
            self._watch()
            pending = sorted(set(pending) | set(self.requeue))
            self.requeue = []
            for gs in self.G:
                if gs.run is None:
                    continue
                self._tail(gs)
                if gs.jb.done(gs.job):
                    self._tail(gs)
                    r, rc = gs.run, gs.jb.rc()
                    if rc != 0 and r.k in self.early_k and any(
                            x.get("ev") == "get_ret" and x.get("cancelled") for x in r.recs):
                        self.emit({"ev": "done", "run": r.rid})     # stopped: it made no put
                        self.stopped.append(r.rid)
                        self.demoted.add(r.k)
                        self.requeue.append(r.k)
                        gs.run, gs.job = None, 0
                        continue
                    if rc != 0:
                        errs = [x["error"] for x in r.recs if "error" in x]
                        raise ExecutorError(f"{wf.name}: run {r.rid} on {gs.name} failed (rc {rc}): {errs}")
                    self.emit({"ev": "done", "run": r.rid})
                    r.emits = gs.jb.emits(r.recs)
                    r.wall = time.monotonic() - r.t0
                    done[r.k] = r
                    gs.run, gs.job = None, 0
            free = any(gs.alive and gs.run is None and gs.jb.idle() for gs in self.G)
            placed = set(done) | {gs.run.k for gs in self.G if gs.run is not None}
            reexec = [k for k in pending if self.attempts.get(k) and k not in self.demoted]
            if reexec and not any(self.usable(gs) for gs in self.G):
                self._stop_waiting(objs, done)
            # re-executions first; nothing early while one waits for a guest (module docstring)
            for k in sorted(pending, key=lambda k: (k not in reexec, k)) if free else []:
                inst = insts[k]
                after = set(wf.function(inst.function).get("after", []))
                if k in self.early_k and k not in self.demoted and not reexec:
                    ready = all(j in placed for j in self.anc[k])
                else:
                    ready = all(j in done for j, other in enumerate(insts) if other.function in after)
                if ready and self._place(k, inst, objs):
                    pending.remove(k)
                    placed.add(k)
            time.sleep(0.005)
        # the end: every object's final contents in the memory server's DRAM
        final = {}
        for o, (oid, lines, base) in objs.items():
            final[o] = self._final(o, base, lines, ref.final.get(o))
            self.emit({"ev": "final", "obj": o, "digest": jobs.digest_hex(final[o])})
        self.emit({"ev": "end"})
        res = self._judge(wf, ref, insts, done, final)
        self.release(objs)
        if self.out_dir:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            hp = self.out_dir / f"history-{wf.name}.jsonl"
            hp.write_text("".join(json.dumps(e) + "\n" for e in self.history))
            rep = history.check_file(str(hp))
            res["history"] = str(hp)
        else:
            rep = history.check_lines([json.dumps(e) for e in self.history], f"history-{wf.name}")
        res["violations"] = [str(v) for v in rep.violations]
        if rep.violations:
            raise ExecutorError(f"{wf.name}: history violations: {res['violations'][:5]}")
        return res

    def _final(self, o, base, lines, want, timeout_s: float = 5.0) -> bytes:
        """The object's bytes in DRAM; the OPC drains a commit after PutCommit, so wait briefly for it."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                d = jobs.decode_object(self.region.data_read(base, lines * jobs.LINE), f"object {o}")
            except ValueError:
                d = None
            if d == want or time.monotonic() > deadline:
                if d is None:
                    raise ExecutorError(f"{self.wf.name}: object {o} in DRAM is not a whole object")
                return d
            time.sleep(0.01)

    def _judge(self, wf, ref, insts, done, final) -> dict:
        bad = [o for o, b in ref.final.items() if final.get(o) != b]
        for k, r in done.items():
            if r.emits != ref.per[k][1]:
                bad.append(f"emits of {r.rid}")
            puts = {x["obj"]: x["digest"] for x in r.recs if x.get("ev") == "put"}
            if puts != {o: jobs.digest_hex(b) for o, b in ref.per[k][0].items()}:
                bad.append(f"puts of {r.rid}")
        if bad:
            raise ExecutorError(f"{wf.name}: differs from the host run: {bad}")
        rets = [e for e in self.history if e["ev"] == "get_ret"]
        putlat = [x for r in done.values() for x in r.recs if "put_us" in x]
        return {"workflow": wf.name, "instances": len(insts), "runs": sum(self.attempts.values()),
                "reexecuted": self.reexec, "gets": len(rets), "hits": sum(bool(e.get("hit")) for e in rets),
                "puts": len(putlat), "put_latencies": self.putlat,
                "crashes": [e for e in self.history if e["ev"] in ("crash", "fence", "rejoin")],
                "wall_s": round(time.monotonic() - self.t_start, 3),
                "placement": {r.rid: self.G[r.guest].name for r in done.values()},   # run -> guest
                "early": sorted(self.early_k), "early_runs": self.early_runs,
                "early_before_commit": self.early_before_commit, "stopped": self.stopped,
                "outputs_equal": True}
