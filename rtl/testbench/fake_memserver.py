"""PLUMBING FAKE, NOT A REFERENCE MODEL of the memory server.

A few dozen lines that answer the compute-server models' flits well enough to exercise the models,
the runner, the history recording and the checker in plain pytest (tests/test_compute_server.py),
without Verilator. It is *not* a model of rtl/MEMSERVER.md or of spec/murphi/apta.m: no directory
capacity, no SI, no staging limits, no OSC/OPC timing, no object map, commits at the last line.
Nothing is ever checked against it; the RTL is checked against the history checker
(python/apta/history.py) and the model checkers' vectors.

It implements the `Transport` and `ControlPlane` of compute_server.py: flits are delivered after a
random delay (FIFO per server and channel; rsp and snp are separate channels, so a BISnp can
overtake an ObjData or a PutCommit: IS_D_I, P_A_I), a put commits when its last line arrives
(commit number +1, every other sharer gets one pending invalidation and a BISnp, the writer
becomes the only sharer, then PutCommit), acks count only in the sender's current unfenced epoch,
Fence retires the server's acks, drops it from the sharers and discards its open puts, Rejoin
gives a new epoch. `bug` switches plumbing faults on purpose (to show the checker sees them end
to end): "no-inval" (a commit sends no BISnp and counts no ack), "torn" (a get returns line 0
from the previous version).
"""
from __future__ import annotations

import random
from collections import deque

from apta.testbench.compute_server import ControlPlane, Transport


class FakeMemoryServer(Transport, ControlPlane):
    def __init__(self, schema, n_servers, sizes: dict, rng=None, max_delay=4, bug=None):
        self.S, self.n, self.sizes = schema, n_servers, sizes
        self.rng = rng or random.Random(7)
        self.max_delay, self.bug = max_delay, bug
        self.mem = {o: [0] * n for o, n in sizes.items()}
        self.prev = {o: [0] * n for o, n in sizes.items()}
        self.sharers = {o: set() for o in sizes}
        self.pend = {o: [0] * n_servers for o in sizes}
        self.epoch = [0] * n_servers
        self.fenced = [False] * n_servers
        self.staging = {}            # sid -> [obj, txn, epoch, {line: data}]
        self.seq = 0
        self.now = 0
        self.inq = deque()           # (due, sid, channel, flit) from compute servers
        self.outq = {}               # (sid, channel) -> deque[(due, flit)]
        self.models = []
        self.runner = None
        self.fence_q = []

    # ---- Transport ----------------------------------------------------------------------------
    def send(self, server, channel, flit):
        self.inq.append((self.now + self.rng.randint(0, self.max_delay), server, channel, flit))

    def _out(self, sid, channel, name, **f):
        q = self.outq.setdefault((sid, channel), deque())
        due = max([self.now + self.rng.randint(1, self.max_delay)] + [d for d, _ in q])
        q.append((due, self.S.encode(name, server=sid, **f)))

    # ---- ControlPlane ----------------------------------------------------------------------------
    def schedulable(self, server, objs, since=0):       # answers are always current here
        if self.fenced[server]:
            return False
        if objs is None:
            return not any(self.pend[o][server] for o in self.pend)
        return not any(self.pend[o][server] for o in objs)

    def fence(self, server, epoch):
        self.fence_q.append((self.now + self.rng.randint(0, self.max_delay), server, epoch))

    def _do_fence(self, sid, epoch):
        if epoch != self.epoch[sid]:
            return
        self.fenced[sid] = True
        for o in self.pend:
            self.pend[o][sid] = 0
            self.sharers[o].discard(sid)
        self.staging.pop(sid, None)
        if self.runner:
            self.runner.on_fenced(sid, epoch)

    # ---- one step ------------------------------------------------------------------------------
    def step(self):
        self.now += 1
        for f in [f for f in self.fence_q if f[0] <= self.now]:
            self.fence_q.remove(f)
            self._do_fence(f[1], f[2])
        keep = deque()
        busy = set()
        for item in self.inq:        # in order per server and channel
            due, sid, ch, flit = item
            if due <= self.now and (sid, ch) not in busy:
                self._handle(sid, ch, flit)
            else:
                busy.add((sid, ch))
                keep.append(item)
        self.inq = keep
        for (sid, ch), q in self.outq.items():
            while q and q[0][0] <= self.now:
                _, flit = q.popleft()
                self.models[sid].receive(ch, flit)

    def _handle(self, sid, ch, flit):
        name, m = self.S.decode(flit)
        e, o = m["epoch"], m.get("obj")
        if name == "Rejoin":
            self._do_fence(sid, self.epoch[sid]) if not self.fenced[sid] else None
            if self.epoch[sid] == (1 << self.S.params["epochBits"]) - 1:   # never wraps: refused, stays fenced
                self._out(sid, "rsp", "RejoinRefused", epoch=self.epoch[sid])
                return
            self.epoch[sid] += 1
            self.fenced[sid] = False
            self._out(sid, "rsp", "RejoinAck", epoch=self.epoch[sid])
            return
        if name == "ObjBIRsp":
            if not self.fenced[sid] and e == self.epoch[sid] and self.pend[o][sid] > 0:
                self.pend[o][sid] -= 1
            return
        if self.fenced[sid] or e != self.epoch[sid]:
            return                   # zombie: discarded
        if name == "ObjGet":
            self.sharers[o].add(sid)
            for line, d in enumerate(self.mem[o]):
                if self.bug == "torn" and line == 0:
                    d = self.prev[o][0]
                self._out(sid, "rsp", "ObjData", epoch=e, obj=o, line=line, data=d)
        elif name == "PutPrepare":
            self.staging[sid] = [o, m["txn"], e, {}]
        elif name == "PutLine":
            st = self.staging.get(sid)
            if not st or st[0] != o or st[1] != m["txn"]:
                return
            st[3][m["line"]] = m["data"]
            if len(st[3]) == self.sizes[o]:
                del self.staging[sid]
                self.prev[o] = self.mem[o]
                self.mem[o] = [st[3][k] for k in range(self.sizes[o])]
                self.seq += 1
                if self.bug != "no-inval":
                    for c in self.sharers[o] - {sid}:
                        self.pend[o][c] += 1
                        self._out(c, "snp", "ObjBISnp", epoch=self.epoch[c], obj=o, base=0, size=self.sizes[o] % 128)
                self.sharers[o] = {sid}
                if self.runner:
                    self.runner.on_commit(sid, e, o, m["txn"])
                self._out(sid, "rsp", "PutCommit", epoch=e, obj=o, txn=m["txn"])

    def read_object(self, obj, size):
        return list(self.mem[obj][:size])

    def idle(self):
        return not self.inq and not any(self.outq.values()) and not self.fence_q


def run_workflow(script, n_servers=None, seed=1, rule="declared", faults=None, bug=None, max_steps=20000,
                 max_delay=4, ack_delay=8, schema=None):
    """Run one script on models + the plumbing fake; returns (runner, recorder)."""
    from apta import messages
    from apta.testbench.compute_server import ComputeServer, WorkflowRunner, object_table
    rng = random.Random(seed)
    S = schema or messages.load()
    n = n_servers or len(script.servers)
    ids, sizes = object_table(script, S.params["linesPerObject"])
    fake = FakeMemoryServer(S, n, sizes, rng=random.Random(seed + 1000), max_delay=max_delay, bug=bug)
    models = [ComputeServer(k, S, fake, sizes, rng=random.Random(seed * 31 + k), ack_delay=ack_delay) for k in range(n)]
    fake.models = models
    runner = WorkflowRunner(script, models, fake, rng=rng, rule=rule, faults=faults, obj_ids=ids,
                            txn_bits=S.params["txnBits"], meta={"seed": seed})
    fake.runner = runner
    for step in range(max_steps):
        fake.step()
        runner.step(step)
        if runner.finished() and fake.idle():
            break
    rec = runner.finish(fake.read_object)
    return runner, rec
