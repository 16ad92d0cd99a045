"""Compute-server models and the workflow runner, transport-agnostic.

Everything here is plain, synchronous Python driven by one `step()` per clock, so the same code runs
against the RTL memory server under cocotb (tests/rtl/test_ms_workflows.py: one step per cycle)
and against the plumbing fake of rtl/testbench/fake_memserver.py (the unit tests). Every flit is built
and read with python/apta/messages.py.

* `ComputeServer`: one compute server's GET controller, PUT controller and object cache, as the
  compute side of spec/murphi/apta.m. Cache states per object: I, S, IS_D (ObjGet sent, awaiting
  ObjData), IS_D_I (a BISnp overtook the data: use it once, do not install), P_A (put in flight,
  old copy dropped, awaiting PutCommit), P_A_I (a BISnp arrived meanwhile: do not install the new
  version). One operation at a time (the model's `op`). ObjBISnp of the current epoch: drop or
  mark the copy, ack with the epoch (after a random delay, so crashes can happen while acks are
  owed); of another epoch: ignored. Replies of another epoch are dropped. PutRetry: the whole put
  again with the same txn. Crash: everything volatile is lost. Rejoin: Rejoin(old epoch) on the
  request channel, every reply dropped until RejoinAck(new epoch); the cache starts empty.
* `Transport` (abstract): `send(server, channel, flit)` for the compute-to-memory channels `req`
  (ObjGet, PutPrepare, PutLine, Rejoin) and `birsp` (ObjBIRsp); the environment hands inbound flits
  to `ComputeServer.receive(channel, flit)` (channels `rsp`, `snp`).
* `ControlPlane` (abstract): `schedulable(server, objs)` (True / False / None = ask again next
  step), `fence(server, epoch)`; the environment reports a fence that took effect with
  `WorkflowRunner.on_fenced` and a commit seen leaving the memory server with
  `WorkflowRunner.on_commit`.
* `WorkflowRunner`: runs an `apta.workflow.Script` on N models. A function instance is
  placed only when its DAG predecessors completed and the control plane says its server is
  schedulable (rule "declared": no pending invalidations for its declared inputs = its reads;
  "all": none at all; "off" = the mutant without the rule), live, unfenced, idle. Its program: get
  every object it reads, then put every object it writes (version = a fresh number per object,
  written on every line as `line_data`), then report done. Faults (`FaultPlan`): crashes at
  chosen points (mid-get, mid-put, owing acks, holding copies) and false suspicions, each followed
  by a fence after `fence_delay` steps and a rejoin after `rejoin_delay` more; the instances
  abandoned are re-executed, on their server once it rejoined or on any other schedulable one.
  Everything is recorded as a python/apta/history.py history.
"""
from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
from apta import messages
from apta.history import Recorder

I, S, IS_D, IS_D_I, P_A, P_A_I = "I", "S", "IS_D", "IS_D_I", "P_A", "P_A_I"
LIVE, DEAD, JOINING, FENCED = "live", "dead", "joining", "fenced"

# ---- line data: every line says which object, version and line it is ------------------------------
MAGIC = 0xA97A


def line_data(obj: int, version: int, line: int) -> int:
    """Data of line `line` of version `version` of object `obj` (version 0 = the initial zeros)."""
    if version == 0:
        return 0
    return (MAGIC << 112) | ((version & 0xFFFFFFFF) << 64) | ((obj & 0xFFFFFFFF) << 16) | (line & 0xFFFF)


def decode_line(obj: int, line: int, data: int):
    """The version a line holds, or a string naming garbage (another object's / line's data)."""
    if data == 0:
        return 0
    if data >> 112 != MAGIC or (data >> 16) & 0xFFFFFFFF != obj & 0xFFFFFFFF or data & 0xFFFF != line:
        return f"garbage:{data:#x}"
    return (data >> 64) & 0xFFFFFFFF


class ProtocolError(AssertionError):
    """The memory server sent a compute server something the protocol does not allow."""


class Transport(ABC):
    @abstractmethod
    def send(self, server: int, channel: str, flit: int) -> None:
        """Queue one flit from compute server `server` on channel `req` or `birsp`."""


class ControlPlane(ABC):
    @abstractmethod
    def schedulable(self, server: int, objs: list | None, since: int = 0):
        """True/False: no pending invalidations at `server` (objs None: at all; else for those
        object ids), unfenced; None: the answer is not available yet (ask again next step).
        `since`: the step the function became ready; an answer read from the memory server before
        it must not be used (TLA-C1: the view must cover the commits of its predecessors)."""

    @abstractmethod
    def fence(self, server: int, epoch: int) -> None:
        """Send Fence(server, epoch); the environment calls runner.on_fenced when it took effect."""


@dataclass
class Op:
    kind: str                 # "get" | "put"
    obj: int
    size: int
    txn: int = 0
    version: int = 0          # put: the version written
    data: list = field(default_factory=list)   # get: lines received / put: lines to write
    got: dict = field(default_factory=dict)    # get: line -> data
    done: bool = False
    hit: bool = False
    retries: int = 0
    error: str | None = None


class ComputeServer:
    """GET + PUT controllers and the object cache of one compute server (see the module doc)."""

    def __init__(self, sid: int, schema: messages.Schema, transport: Transport, sizes: dict,
                 epoch: int = 0, rng: random.Random | None = None, ack_delay: int = 3):
        self.sid, self.S, self.tx, self.sizes = sid, schema, transport, sizes
        self.epoch, self.status = epoch, LIVE
        self.rng = rng or random.Random(sid)
        self.ack_delay = ack_delay
        self.cache: dict[int, list] = {}      # obj -> [state, version, data lines]
        self.op: Op | None = None
        self.putq: deque = deque()            # PUT controller: flits still to send, one per tick
        self.acks: list = []                  # [due tick, obj] BISnp acks owed
        self.ticks = 0
        self.on_rejoined = None               # callback(sid, new epoch)
        self.stats = {"hits": 0, "misses": 0, "puts": 0, "retries": 0, "snoops": 0, "acks": 0,
                      "stale_dropped": 0, "IS_D_I": 0, "P_A_I": 0, "snp_old_epoch": 0,
                      "rejoin_refused": 0}

    # ---- cache helpers -----------------------------------------------------------------------
    def state(self, obj):
        return self.cache.get(obj, [I])[0]

    def holding(self):
        return [o for o, c in self.cache.items() if c[0] == S]

    def owes_acks(self):
        return bool(self.acks)

    def busy(self):
        return self.op is not None and not self.op.done

    # ---- GET / PUT controllers --------------------------------------------------------------
    def start_get(self, obj: int) -> Op:
        assert self.status == LIVE and not self.busy()
        op = Op("get", obj, self.sizes[obj])
        c = self.cache.get(obj)
        if c and c[0] == S:                   # hit: the whole cached version, at once
            op.data, op.done, op.hit = list(c[2]), True, True
            self.stats["hits"] += 1
        else:
            assert self.state(obj) == I, f"get of {obj} in {self.state(obj)}"
            self.cache[obj] = [IS_D, None, None]
            self.stats["misses"] += 1
            self.tx.send(self.sid, "req", self.S.encode("ObjGet", server=self.sid, epoch=self.epoch, obj=obj))
        self.op = op
        return op

    def start_put(self, obj: int, txn: int, version: int) -> Op:
        assert self.status == LIVE and not self.busy()
        size = self.sizes[obj]
        op = Op("put", obj, size, txn=txn, version=version, data=[line_data(obj, version, l) for l in range(size)])
        self.cache[obj] = [P_A, None, None]   # the old copy is dropped
        self.op = op
        self.stats["puts"] += 1
        self._queue_put(op)
        return op

    def _queue_put(self, op):
        self.putq.clear()
        f = dict(server=self.sid, epoch=self.epoch, obj=op.obj, txn=op.txn)
        self.putq.append(("req", self.S.encode("PutPrepare", **f)))
        for l, d in enumerate(op.data):
            self.putq.append(("req", self.S.encode("PutLine", line=l, data=d, **f)))

    def tick(self):
        """One step: the PUT controller sends one flit; owed acks that are due go out."""
        self.ticks += 1
        if self.status == DEAD:
            return
        if self.putq:
            ch, flit = self.putq.popleft()
            self.tx.send(self.sid, ch, flit)
        due = [a for a in self.acks if a[0] <= self.ticks]
        for a in due:
            self.acks.remove(a)
            self.tx.send(self.sid, "birsp", self.S.encode("ObjBIRsp", server=self.sid, epoch=a[2], obj=a[1]))
            self.stats["acks"] += 1

    # ---- inbound ------------------------------------------------------------------------------
    def receive(self, channel: str, flit: int):
        if self.status == DEAD:
            return
        name, m = self.S.decode(flit)
        if m.get("server", self.sid) != self.sid:
            raise ProtocolError(f"c{self.sid}: got {name} addressed to server {m['server']}")
        if channel == "snp":
            if name != "ObjBISnp":
                raise ProtocolError(f"c{self.sid}: {name} on snp")
            self._snoop(m)
            return
        if self.status == FENCED:             # falsely suspected: its old operations are void
            self.stats["stale_dropped"] += 1
            return
        if self.status == JOINING:
            if name == "RejoinAck":
                self.status, self.epoch = LIVE, m["epoch"]
                if self.on_rejoined:
                    self.on_rejoined(self.sid, self.epoch)
            elif name == "RejoinRefused":       # its last epoch: fenced until the memory server resets
                self.status = FENCED
                self.stats["rejoin_refused"] += 1
            else:
                self.stats["stale_dropped"] += 1
            return
        if m["epoch"] != self.epoch or name == "RejoinAck":
            self.stats["stale_dropped"] += 1
            return
        op, o = self.op, m.get("obj")
        if name == "ObjData":
            if not (op and op.kind == "get" and not op.done and op.obj == o and self.state(o) in (IS_D, IS_D_I)):
                raise ProtocolError(f"c{self.sid}: ObjData of {o} line {m['line']} without a get of it")
            if m["line"] in op.got:
                raise ProtocolError(f"c{self.sid}: ObjData line {m['line']} of {o} twice")
            op.got[m["line"]] = m["data"]
            if len(op.got) == op.size:
                op.data = [op.got[l] for l in range(op.size)]
                if self.state(o) == IS_D:
                    self.cache[o] = [S, decode_line(o, 0, op.data[0]), list(op.data)]
                else:
                    self.stats["IS_D_I"] += 1
                    self.cache.pop(o, None)
                op.done = True
        elif name in ("PutCommit", "PutRetry"):
            if not (op and op.kind == "put" and not op.done and op.obj == o and op.txn == m["txn"]):
                raise ProtocolError(f"c{self.sid}: {name} of {o} txn {m['txn']} without that put")
            if name == "PutRetry":
                op.retries += 1
                self.stats["retries"] += 1
                self._queue_put(op)           # the whole put again, same txn
            else:
                if self.putq:
                    raise ProtocolError(f"c{self.sid}: PutCommit of {o} before all its lines were sent")
                if self.state(o) == P_A:
                    self.cache[o] = [S, op.version, list(op.data)]
                else:
                    self.stats["P_A_I"] += 1
                    self.cache.pop(o, None)
                op.done = True
        elif name == "ObjErr":
            if op and not op.done and op.obj == o:
                op.error, op.done = f"ObjErr code {m['code']}", True
                self.cache.pop(o, None)
                self.putq.clear()
            else:
                raise ProtocolError(f"c{self.sid}: ObjErr for {o} without an operation on it")
        else:
            raise ProtocolError(f"c{self.sid}: unexpected {name} on rsp")

    def _snoop(self, m):
        o = m["obj"]
        if self.status != LIVE or m["epoch"] != self.epoch:
            self.stats["snp_old_epoch"] += 1
            return
        self.stats["snoops"] += 1
        st = self.state(o)
        if st == S:
            self.cache.pop(o, None)
        elif st == IS_D:
            self.cache[o][0] = IS_D_I
        elif st == P_A:
            self.cache[o][0] = P_A_I
        self.acks.append([self.ticks + self.rng.randint(0, self.ack_delay), o, self.epoch])

    # ---- faults ----------------------------------------------------------------------------------
    def crash(self):
        """Lose every volatile state (cache, operation, flits not yet sent, acks owed)."""
        self.status = DEAD
        self.cache.clear()
        self.op = None
        self.putq.clear()
        self.acks.clear()

    def suspend(self):
        """Falsely suspected and told so: drop the cache and the operation, ignore every reply
        and snoop of the old epoch until it rejoins."""
        self.crash()
        self.status = FENCED

    def rejoin(self):
        """(Re)boot: Rejoin in the old epoch; live again at RejoinAck, with an empty cache."""
        self.crash()
        self.status = JOINING
        self.tx.send(self.sid, "req", self.S.encode("Rejoin", server=self.sid, epoch=self.epoch))


# ---- the workflow runner ------------------------------------------------------------------------
FAULT_KINDS = ("mid-get", "mid-put", "owing-acks", "holding-copies", "false-suspicion")


@dataclass
class FaultPlan:
    faults: int = 0               # how many faults to inject
    kinds: tuple = FAULT_KINDS
    p: float = 0.05               # per step, once a fault's condition holds
    fence_delay: int = 20         # steps from a crash to the fence (failure detector)
    rejoin_delay: int = 30        # steps from the fence to the rejoin
    spare: int | None = None      # a server that never faults (progress); default: random
    prefer: tuple = ()            # kinds injected at once (no coin toss) whenever their condition holds


@dataclass
class RunState:
    run: str
    task: object
    sid: int
    ops: list                      # [("get"|"put", obj name)]
    i: int = 0
    cur: Op | None = None
    cur_id: str | None = None


def object_table(script, max_lines: int | None = None):
    """(name -> object id, id -> size in lines): ids 1.. in name order; sizes clamped to max_lines
    (the RTL variant's linesPerObject)."""
    ids = {o: k + 1 for k, o in enumerate(sorted(script.objects))}
    sizes = {ids[o]: min(n, max_lines or n) for o, n in script.objects.items()}
    return ids, sizes


class WorkflowRunner:
    def __init__(self, script, models: list, cp: ControlPlane, rng: random.Random | None = None,
                 rule: str = "declared", faults: FaultPlan | None = None, obj_ids: dict | None = None,
                 txn_bits: int = 8, meta: dict | None = None, commits: bool = True):
        assert rule in ("declared", "all", "off")
        self.sc, self.models, self.cp, self.rule = script, models, cp, rule
        self.rng = rng or random.Random(1)
        self.plan = faults or FaultPlan()
        self.ids = obj_ids or object_table(script)[0]
        self.names = {v: k for k, v in self.ids.items()}
        self.sid_of = {n: k for k, n in enumerate(sorted(script.servers, key=lambda s: int(s[1:])))}
        assert len(models) >= len(self.sid_of), f"{script.name} needs {len(self.sid_of)} servers"
        self.sname = {k: f"c{k + 1}" for k in range(len(models))}
        self.txn_mask = (1 << txn_bits) - 1
        self.rec = Recorder({"source": "compute_server.py", "workflow": script.name, "commits": commits,
                             "servers": [self.sname[k] for k in range(len(models))],
                             "objects": {o: {"lines": models[0].sizes[self.ids[o]], "id": self.ids[o]} for o in script.objects},
                             **(meta or {})})
        self.now = 0
        self.task_state = {t.name: "pending" for t in script.tasks}
        self.attempts = {t.name: 0 for t in script.tasks}
        self.active: dict[int, RunState] = {}        # sid -> run
        self.orphans: dict[int, list] = {}           # sid -> tasks of a failed server, re-run once it is fenced
        self.ready_at = {}                           # task -> step it became ready
        self.fenced = set()                          # fenced by us, not yet rejoined
        self.timers = []                             # [due step, action, sid]
        self.next_version = {o: 0 for o in script.objects}
        self.txn = {k: 0 for k in range(len(models))}
        self.puts = {}                               # (sid, epoch, txn) -> (obj name, version)
        self.nid = 0
        self.faults_left = self.plan.faults
        self.spare = self.plan.spare if self.plan.spare is not None else self.rng.randrange(len(models))
        self.fault_log = []
        self.errors = []
        for m in models:
            m.on_rejoined = self._rejoined

    # ---- events from the environment -------------------------------------------------------------
    def emit(self, ev, **kw):
        return self.rec.emit(ev, t=self.now, **kw)

    def on_commit(self, sid: int, epoch: int, obj: int, txn: int):
        """The memory server committed a put (its PutCommit left); call before delivering it."""
        k = (sid, epoch, txn)
        if k not in self.puts:
            self.errors.append(f"step {self.now}: commit of c{sid + 1} epoch {epoch} txn {txn} obj {obj}: no such put")
            return
        o, v = self.puts[k]
        if self.ids[o] != obj:
            self.errors.append(f"step {self.now}: commit of txn {txn} names object {obj}, the put was of {o}")
        self.emit("commit", obj=o, version=v, server=self.sname[sid], epoch=epoch)

    def on_fenced(self, sid: int, epoch: int):
        self.emit("fence", server=self.sname[sid], epoch=epoch)
        for t in self.orphans.pop(sid, []):         # its runs failed: now they may run again
            self.task_state[t.name] = "pending"
            self.ready_at.pop(t.name, None)
        self.timers.append([self.now + self.plan.rejoin_delay, "rejoin", sid])

    def _rejoined(self, sid, epoch):
        self.fenced.discard(sid)
        self.emit("rejoin", server=self.sname[sid], epoch=epoch)

    # ---- the loop -----------------------------------------------------------------------------
    def finished(self) -> bool:
        return all(s == "done" for s in self.task_state.values()) and not self.timers and not self.fenced \
            and not any(self.orphans.values()) \
            and all(m.status == LIVE for m in self.models)

    def step(self, now: int | None = None):
        self.now = self.now + 1 if now is None else now
        for sid in list(self.active):
            self._advance(self.active[sid])
        self._timers()
        self._inject()
        self._place()
        for m in self.models:
            m.tick()

    def _new_id(self, p):
        self.nid += 1
        return f"{p}{self.nid}"

    def _advance(self, r: RunState):
        m = self.models[r.sid]
        while True:
            if r.cur is not None:
                if not r.cur.done:
                    return
                if r.cur.error:
                    self.errors.append(f"step {self.now}: {r.run} {r.cur.kind} of {self.names[r.cur.obj]}: {r.cur.error}")
                    self.emit("crash", server=self.sname[r.sid])   # treat as a failed server: restart it
                    self._abandon(r.sid)
                    m.crash()
                    self.timers.append([self.now + self.plan.fence_delay, "fence", r.sid])
                    return
                if r.cur.kind == "get":
                    o = r.cur.obj
                    self.emit("get_ret", id=r.cur_id, lines=[decode_line(o, l, d) for l, d in enumerate(r.cur.data)],
                              hit=r.cur.hit)
                else:
                    self.emit("put_ack", id=r.cur_id)
                r.cur, r.i = None, r.i + 1
            if r.i == len(r.ops):
                self.emit("done", run=r.run)
                self.task_state[r.task.name] = "done"
                del self.active[r.sid]
                return
            kind, o = r.ops[r.i]
            oid = self.ids[o]
            if kind == "get":
                r.cur_id = self._new_id("g")
                self.emit("get", id=r.cur_id, run=r.run, obj=o)
                r.cur = m.start_get(oid)
            else:
                self.next_version[o] += 1
                v = self.next_version[o]
                txn = self.txn[r.sid]
                self.txn[r.sid] = (txn + 1) & self.txn_mask
                self.puts[(r.sid, m.epoch, txn)] = (o, v)
                r.cur_id = self._new_id("p")
                self.emit("put", id=r.cur_id, run=r.run, obj=o, version=v)
                r.cur = m.start_put(oid, txn, v)
            if not r.cur.done:
                return

    def _usable(self, sid):
        m = self.models[sid]
        return m.status == LIVE and sid not in self.fenced and sid not in self.active

    def _ready(self, t):
        return self.task_state[t.name] == "pending" and all(
            self.task_state[u.name] == "done" for a in t.after for u in self.sc.instances_of(a))

    def _place(self):
        for t in self.sc.tasks:
            if not self._ready(t):
                continue
            want = self.sid_of[t.server]
            if self.models[want].status == LIVE and want not in self.fenced:
                cands = [want]                  # the schedule's server (also once it rejoined)
            else:                               # it is down: re-execute anywhere schedulable
                cands = [s for s in range(len(self.models)) if s != want]
                self.rng.shuffle(cands)
            since = self.ready_at.setdefault(t.name, self.now)
            for sid in cands:
                if not self._usable(sid):
                    continue
                if self.rule != "off":
                    objs = [self.ids[o] for o in t.reads] if self.rule == "declared" else None
                    ok = self.cp.schedulable(sid, objs, since)
                    if not ok:
                        continue
                self._start(t, sid)
                break

    def _start(self, t, sid):
        self.attempts[t.name] += 1
        run = t.name if self.attempts[t.name] == 1 else f"{t.name}#{self.attempts[t.name]}"
        m = self.models[sid]
        self.emit("place", run=run, fn=t.fn, server=self.sname[sid], epoch=m.epoch, after=list(t.after),
                  inputs=list(t.reads))
        self.task_state[t.name] = "running"
        r = RunState(run, t, sid, [("get", o) for o in t.reads] + [("put", o) for o in t.writes])
        self.active[sid] = r
        self._advance(r)

    def _abandon(self, sid):
        """The run on a failed server: re-executed only after the fence took effect (a zombie put
        of the failed run can no longer commit over the re-execution's)."""
        r = self.active.pop(sid, None)
        if r:
            self.task_state[r.task.name] = "failed"
            self.orphans.setdefault(sid, []).append(r.task)

    # ---- faults ------------------------------------------------------------------------------
    def _timers(self):
        for tm in [x for x in self.timers if x[0] <= self.now]:
            self.timers.remove(tm)
            _, what, sid = tm
            m = self.models[sid]
            if what == "fence":
                self.fenced.add(sid)
                self.cp.fence(sid, m.epoch)
            elif what == "rejoin":
                m.rejoin()

    def _condition(self, kind, sid):
        m = self.models[sid]
        if m.status != LIVE or sid in self.fenced:
            return False
        op = m.op if m.busy() else None
        if kind == "mid-get":
            return op is not None and op.kind == "get"
        if kind == "mid-put":
            return op is not None and op.kind == "put"
        if kind == "owing-acks":
            return m.owes_acks()
        if kind == "holding-copies":
            return bool(m.holding())
        return sid in self.active          # false suspicion of a server running a function

    def _inject(self):
        if self.faults_left <= 0:
            return
        opts = [(k, s) for k in self.plan.prefer for s in range(len(self.models))
                if s != self.spare and self._condition(k, s)]
        if not opts:                      # one fault is kept for a preferred kind
            if self.faults_left <= (1 if self.plan.prefer else 0) or self.rng.random() >= self.plan.p:
                return
            opts = [(k, s) for k in self.plan.kinds for s in range(len(self.models))
                    if s != self.spare and self._condition(k, s)]
        if not opts:
            return
        kind = self.rng.choice(sorted({k for k, _ in opts}))     # rare conditions get their turn
        sid = self.rng.choice([s for k, s in opts if k == kind])
        self.inject(kind, sid)

    def inject(self, kind, sid):
        """Inject one fault now: a crash (any kind but false-suspicion) or a false suspicion."""
        m = self.models[sid]
        self.faults_left -= 1
        self.fault_log.append((self.now, kind, self.sname[sid]))
        self._abandon(sid)
        if kind == "false-suspicion":
            m.suspend()                           # alive, but stopped and fenced; it rejoins later
            self.fenced.add(sid)
            self.cp.fence(sid, m.epoch)
        else:
            self.emit("crash", server=self.sname[sid])
            m.crash()
            self.timers.append([self.now + self.plan.fence_delay, "fence", sid])

    def finish(self, read_object=None):
        """Record the final memory (read_object(obj id, size) -> line data) and the end."""
        if read_object is not None:
            for o in sorted(self.sc.objects):
                data = read_object(self.ids[o], self.models[0].sizes[self.ids[o]])
                self.emit("final", obj=o, lines=[decode_line(self.ids[o], l, d) for l, d in enumerate(data)])
        self.emit("end")
        return self.rec
