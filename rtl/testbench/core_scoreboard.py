"""Scoreboard of the coherence core: the protocol's invariants, checked on what the ports show.

It is not a second copy of the RTL. It keeps only what the messages themselves establish (the
protocol's bookkeeping at the level of rtl/CORE.md): who was served or committed an object (a
sharer), which BISnps were sent and which acks the core applied (the pend count), the fenced flags
and epochs the control plane answered. From that it checks every response against the cell of the
protocol table the pre-state selects (and counts the cell for coverage), every BISnp against the
sharers, every ackResult against the count, and at each quiescent point the core's own
`query`/`status` answers against the bookkeeping and the structural invariants.

What the ports do not show, the scoreboard does not guess: which way an eviction picks among the
cold candidates is resolved from the BISnps and the next queries (the stimulus generator makes such
a request the last one of its set in a batch, so nothing depends on it before the batch ends).

A failure raises `Violation(check, text)`; `check` names the invariant (used by `make rtl-mutants`
to say which check caught a mutant).
"""
from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from apta.testbench.core_bfm import set_of


CHANNEL_MESSAGES = {0: ("ObjBIRsp",), 1: ("Fence", "Rejoin")}    # decodeErr channel 0 ack, 1 ctrl


def flit_error(S, flit: int, ch: int) -> tuple | None:
    """The decodeErr (channel, code, field, opcode) the core reports for a flit on the ack (0) or
    ctrl (1) channel (rtl/CORE.md), or None for a flit the channel takes: the codec's check (the
    schema, the one definition), and a legal flit of another channel's message refused as
    badOpcode (rtl ChannelFront)."""
    code, fld = S.check(flit)
    if code:
        return (ch, code, fld, flit & 0xF)
    name, _ = S.decode(flit)
    if name not in CHANNEL_MESSAGES[ch]:
        return (ch, S.errors["badOpcode"], 0, flit & 0xF)
    return None


def illegal_flit(S, rng, ch: int) -> int:
    """A flit the ack (0) or ctrl (1) channel must refuse: a legal flit of another channel's
    message, an unknown opcode, reserved bits set, or a field out of range (the test_core_stress
    mix; what the core reports is flit_error)."""
    name = rng.choice(["ObjBIRsp", "Fence", "Rejoin"])
    m = S.messages[name]
    flit = S.encode(name, {f.name: rng.randint(f.min, f.max) for f in m.fields})
    k = rng.random()
    if k < 0.15:                              # legal, but another channel's message
        other = rng.choice(["ObjGet", "RejoinAck", "ObjBISnp"] + (["Fence", "Rejoin"] if ch == 0
                                                                 else ["ObjBIRsp"]))
        mo = S.messages[other]
        return S.encode(other, {f.name: rng.randint(f.min, f.max) for f in mo.fields})
    if k < 0.4:
        bad = [o for o in range(16) if o not in S.by_opcode]
        flit = (flit & ~0xF) | rng.choice(bad)
    elif k < 0.7 and m.bits < S.flit_bits:
        flit |= 1 << rng.randrange(m.bits, S.flit_bits)
    else:
        f = m.fields[0]                       # server: out of range where it can be
        if f.max < (1 << f.width) - 1:
            flit = flit & ~(((1 << f.width) - 1) << f.lo) | ((f.max + 1) << f.lo)
        else:
            flit = (flit & ~0xF) | 0xF
    return flit


def malformed_flit(S, rng) -> int:
    """A malformed flit of any message of the schema (not only the ack/ctrl channels' own): a
    field out of its range, reserved bits set, or an unknown opcode. What a channel reports for it
    is flit_error, the codec's check."""
    m = S.messages[rng.choice(sorted(S.messages))]
    flit = S.encode(m.name, {f.name: rng.randint(f.min, f.max) for f in m.fields})
    narrow = [f for f in m.fields if f.max < (1 << f.width) - 1 or f.min > 0]
    k = rng.random()
    if k < 0.5 and narrow:
        f = rng.choice(narrow)
        bad = f.max + 1 if f.max < (1 << f.width) - 1 else f.min - 1
        return flit & ~(((1 << f.width) - 1) << f.lo) | (bad << f.lo)
    if k < 0.8 and m.bits < S.flit_bits:
        return flit | 1 << rng.randrange(m.bits, S.flit_bits)
    return (flit & ~0xF) | rng.choice([o for o in range(16) if o not in S.by_opcode])


class Violation(AssertionError):
    def __init__(self, check: str, text: str):
        super().__init__(f"[{check}] {text}")
        self.check = check


@dataclass
class Entry:
    st: str = "I"
    sharers: set = field(default_factory=set)
    pend: list = field(default_factory=list)


class Scoreboard:
    def __init__(self, params: dict, schema, objects: dict, on_resp=None, on_ctrl=None):
        self.p, self.S = params, schema
        self.n = params["servers"]
        self.ways, self.maxpend = params["dirWays"], params["maxPendPerServer"]
        self.emask = (1 << params["epochBits"]) - 1
        self.objects = objects                     # obj -> (base, size)
        self.e = {o: Entry(pend=[0] * self.n) for o in objects}
        self.fenced = [False] * self.n
        self.epoch = [0] * self.n
        self.cov: Counter = Counter()
        self.extra: Counter = Counter()
        self.reqs: deque = deque()
        self.acks: deque = deque()
        self.ctrls: deque = deque()                # [name, fields, applied]
        self.errs = {0: deque(), 1: deque(), 2: deque()}   # expected decodeErr per channel
        self.snp_exp: Counter = Counter()
        self.evictions: dict = {}                  # set -> pending eviction
        self.early: list = []                      # BISnps seen before the resp that explains them
        self.on_resp, self.on_ctrl = on_resp, on_ctrl
        self.where = ""
        self.size_field = schema.field_ids["size"]

    # ---- helpers ---------------------------------------------------------------------------
    def fail(self, check, text):
        raise Violation(check, f"{self.where}: {text}")

    def resident_in(self, s):
        return [o for o, e in self.e.items() if set_of(self.p, o) == s and e.st != "I"]

    def zombie(self, c, epoch):
        return self.fenced[c] or epoch != self.epoch[c]

    def settle(self, o):
        e = self.e[o]
        if not any(e.pend):
            if e.st == "SA":
                e.st = "S"
            elif e.st == "SI":
                e.st = "I"
                e.sharers = set()

    # ---- the listener ----------------------------------------------------------------------
    def __call__(self, b):
        port, d = b.port, b.data
        if port == "req.fire":
            r = b.item
            self.reqs.append(r)
            if not 1 <= r.size <= self.p["linesPerObject"] or r.server >= self.n:
                self.errs[2].append(r)
        elif port == "ack.fire":
            self._flit_in(b.item[0], 0)
        elif port == "ctrl.fire":
            self._flit_in(b.item[0], 1)
        elif port == "resp":
            self._resp(d)
        elif port == "ackResult":
            self._ack_result(d)
        elif port == "ctrlResp":
            self._ctrl_resp(d)
        elif port == "snp":
            self._snp(d)
        elif port == "decodeErr":
            self._decode_err(d)

    def _flit_in(self, flit, ch):
        err = flit_error(self.S, flit, ch)
        if err:
            self.errs[ch].append(err)
            return
        name, f = self.S.decode(flit)
        if ch == 0:
            self.acks.append(f)
        else:
            self.ctrls.append([name, f, False])

    def _decode_err(self, d):
        q = self.errs.get(d["channel"])
        if not q:
            self.fail("decodeErr-only-for-illegal", f"decodeErr {d} without an illegal flit or request")
        exp = q.popleft()
        if d["channel"] == 2:
            r = exp
            op = self.S.messages["ObjGet" if r.op == "Get" else "PutCommit"].opcode
            want = (2, self.S.errors["fieldRange"], self.size_field, op)
            got = (d["channel"], d["code"], d["field"], d["opcode"])
            if got != want:
                self.fail("decodeErr-fields", f"{r.op} with size {r.size}: decodeErr expected "
                          f"(channel, code, field, opcode) {want}, got {got}")
            return
        got = (d["channel"], d["code"], d["field"], d["opcode"])
        if got != exp:
            self.fail("decodeErr-fields", f"decodeErr expected (channel, code, field, opcode) {exp}, got {got}")

    # ---- requests --------------------------------------------------------------------------
    def _resp(self, d):
        if not self.reqs:
            self.fail("one-resp-per-req", f"resp {d} without a request")
        r = self.reqs.popleft()
        for k in ("op", "server", "obj"):
            if d[k] != getattr(r, k):
                self.fail("resp-in-order", f"resp {d} for request {r}: field {k}")
        got = d["result"]
        o, c = r.obj, r.server
        illegal = not 1 <= r.size <= self.p["linesPerObject"]
        g = r.op == "Get"
        if illegal:
            exp, cell = "Drop", "req.illegal"
            self._expect(r, got, exp, cell)
        elif self.zombie(c, r.epoch):
            self._expect(r, got, "Drop", "get.zombie" if g else "commit.zombie")
        else:
            e = self.e[o]
            if e.st == "SI":
                self._expect(r, got, "Stall", "get.SI" if g else "commit.SI")
            elif g and e.pend[c] > 0:
                self._expect(r, got, "Stall", "get.owes")
            elif e.st == "I":
                self._alloc(r, got, g)
            elif g:
                self._expect(r, got, "Served", "get.S" if e.st == "S" else "get.SA")
                e.sharers.add(c)
            else:
                others = e.sharers - {c}
                full = [x for x in others if e.pend[x] >= self.maxpend]
                if full:
                    self._expect(r, got, "Stall", "commit.counterFull")
                else:
                    cell = ("commit.SA" if e.st == "SA" else
                            "commit.S.inval" if others else "commit.S.alone")
                    self._expect(r, got, "Committed", cell)
                    self._invalidate(o, others)
                    e.sharers = {c}
                    if any(e.pend):
                        e.st = "SA"
        if self.on_resp:
            self.on_resp(r, got)

    def _expect(self, r, got, exp, cell):
        if got != exp:
            pre = self.e.get(r.obj)
            self.fail(f"result:{cell}", f"{r.op} by server {r.server} (epoch {r.epoch}, "
                      f"fenced={self.fenced[r.server]}, current epoch {self.epoch[r.server]}) on obj "
                      f"{r.obj} in {pre.st if pre else '?'} sharers={sorted(pre.sharers) if pre else '?'} "
                      f"pend={pre.pend if pre else '?'}: cell {cell}, result expected {exp}, got {got}")
        self._count(cell)

    def _count(self, cell):
        self.cov[cell] += 1

    def _alloc(self, r, got, g):
        o, c = r.obj, r.server
        s = set_of(self.p, o)
        res = self.resident_in(s)
        if len(res) < self.ways:
            self._expect(r, got, "Served" if g else "Committed", "get.I.alloc" if g else "commit.I.alloc")
            e = self.e[o]
            e.st, e.sharers = "S", {c}
            return
        cands = [v for v in res if self.e[v].st == "S"]
        kind = "get" if g else "commit"
        if not cands:
            self._expect(r, got, "Stall", f"{kind}.I.full")
            return
        self._expect(r, got, "Stall", f"{kind}.I.evict")
        if s in self.evictions:
            self.fail("generator", f"two evictions in set {s} in one batch")
        clean = [v for v in cands if not self.e[v].sharers]
        self.evictions[s] = {"clean": clean, "shared": [v for v in cands if self.e[v].sharers],
                             "snps": [], "by": r}

    def _invalidate(self, o, servers):
        e = self.e[o]
        for x in servers:
            e.pend[x] += 1
            if e.pend[x] > self.maxpend:
                self.fail("oic-counter-bound", f"obj {o} server {x}: pend {e.pend[x]} > maxPend")
            key = (x, o, self.epoch[x])
            self.snp_exp[key] += 1
            early = next((d for d in self.early if (d["server"], d["obj"], d["epoch"]) == key), None)
            if early is not None:
                self.early.remove(early)
                self._snp(early)

    # ---- BISnps ----------------------------------------------------------------------------
    def _snp(self, d):
        if d["op"] != "ObjBISnp":
            self.fail("snp-is-BISnp", f"snp port carried {d}")
        o, x, ep = d["obj"], d["server"], d["epoch"]
        if o not in self.objects:
            self.fail("snp-to-sharer", f"BISnp for unknown obj {o}: {d}")
        base, size = self.objects[o]
        if (d["base"], d["size"]) != (base, size):
            self.fail("snp-extent", f"BISnp {d}: extent expected base {base} size {size}")
        key = (x, o, ep)
        if self.snp_exp[key] > 0:
            self.snp_exp[key] -= 1
            if not self.snp_exp[key]:
                del self.snp_exp[key]
            return
        # the BISnps of a round may leave before the resp of the request that caused it (the
        # resp waits in its queue): kept until the resp, or the batch's eviction, claims them
        self.early.append(d)

    def resolve_evictions(self, q: dict):
        """After a batch, the queries tell which cold entry an eviction chose."""
        for s, ev in sorted(self.evictions.items()):
            mine = [d for d in self.early if set_of(self.p, d["obj"]) == s]
            self.early = [d for d in self.early if set_of(self.p, d["obj"]) != s]
            ev["snps"] += mine
            if ev["clean"]:
                if ev["snps"]:
                    self.fail("victim-cold-first", f"set {s}: a victim without sharers existed "
                              f"({ev['clean']}) but BISnps were sent: {ev['snps']}")
                gone = [v for v in ev["clean"] if not q[v]["hit"]]
                if len(gone) != 1:
                    self.fail("evict-one-victim", f"set {s}: eviction for {ev['by']}: expected exactly one "
                              f"of {ev['clean']} freed, freed {gone}")
                v = gone[0]
                self.e[v].st = "I"
                self._count("evict.S.clean")
            else:
                objs = {d["obj"] for d in ev["snps"]}
                if len(objs) != 1 or next(iter(objs)) not in ev["shared"]:
                    self.fail("evict-one-victim", f"set {s}: eviction for {ev['by']}: BISnps {ev['snps']} "
                              f"must cover exactly one S victim of {ev['shared']}")
                v = objs.pop()
                e = self.e[v]
                got = Counter((d["server"], d["epoch"]) for d in ev["snps"])
                want = Counter((x, self.epoch[x]) for x in e.sharers)
                if got != want:
                    self.fail("evict-snps-to-sharers", f"victim {v}: BISnps to {dict(got)}, sharers {dict(want)}")
                for x in e.sharers:
                    e.pend[x] += 1
                e.sharers = set()
                e.st = "SI"
                self._count("evict.S.sharers")
        self.evictions = {}

    # ---- acks ------------------------------------------------------------------------------
    def _ack_result(self, d):
        if not self.acks:
            self.fail("one-ackResult-per-ack", f"ackResult {d} without an ack")
        a = self.acks.popleft()
        if (d["server"], d["obj"]) != (a["server"], a["obj"]):
            self.fail("ackResult-in-order", f"ackResult {d} for ack {a}")
        c, o = a["server"], a["obj"]
        e = self.e.get(o)
        applied = e is not None and not self.zombie(c, a["epoch"]) and e.pend[c] > 0
        if applied and not d["applied"]:
            # a fence of c in the same batch may have been applied before this ack
            for cr in self.ctrls:
                if not cr[2] and cr[1]["server"] == c and self._ctrl_fences(cr):
                    self._apply_ctrl(cr)
                    break
            applied = e is not None and not self.zombie(c, a["epoch"]) and e.pend[c] > 0
        if d["applied"] != applied:
            self.fail("ack-applied", f"ack {a}: applied expected {applied}, got {d['applied']} "
                      f"(obj {o} pend {e.pend if e else '-'}, fenced {self.fenced[c]}, epoch {self.epoch[c]})")
        if not applied:
            if d["settled"]:
                self.fail("ack-settled", f"discarded ack {a} reported settled")
            if not self.zombie(c, a["epoch"]):
                self._count("ack.nothingOwed")
            else:       # a late ack of an old epoch while the new epoch's round is owed: must not pay
                self._count("ack.stale.owing" if e is not None and e.pend[c] > 0 else "ack.stale")
            return
        st = e.st
        e.pend[c] -= 1
        last = not any(e.pend)
        if d["settled"] != last:
            self.fail("ack-settled", f"ack {a}: settled expected {last}, got {d['settled']} (pend {e.pend})")
        if st not in ("SA", "SI"):
            self.fail("pend-only-in-SA-SI", f"ack {a} applied to obj {o} in {st}")
        self._count(f"ack.{st}.{'last' if last else 'more'}")
        self.settle(o)

    # ---- control plane ---------------------------------------------------------------------
    def _ctrl_fences(self, cr):
        name, f, _ = cr
        c = f["server"]
        if name == "Rejoin":
            return True
        return f["epoch"] == self.epoch[c] and not self.fenced[c]

    def _fence(self, c):
        self.fenced[c] = True
        for o, e in self.e.items():
            e.pend[c] = 0
            e.sharers.discard(c)
            self.settle(o)

    def _apply_ctrl(self, cr):
        name, f, _ = cr
        cr[2] = True
        c = f["server"]
        if name == "Fence":
            if f["epoch"] != self.epoch[c]:
                self.extra["fence.stale"] += 1
            elif self.fenced[c]:
                self.extra["fence.again"] += 1
            else:
                owes = any(e.pend[c] for e in self.e.values())
                sharer = any(c in e.sharers for e in self.e.values())
                if owes:
                    self._count("fence.owes")
                if any(e.pend[d] for e in self.e.values() for d in range(len(e.pend)) if d != c):
                    self._count("fence.others")
                if sharer:
                    self._count("fence.sharer")
                if not owes and not sharer:
                    self._count("fence.idle")
                self._fence(c)
        else:
            # the last epoch value is never left (rtl/CORE.md guard `rejoin.exhausted`): fenced, refused
            last = self.epoch[c] == self.emask
            self._count("rejoin.exhausted" if last else "rejoin.fenced" if self.fenced[c] else "rejoin.live")
            if not self.fenced[c]:
                self._fence(c)
            if not last:
                self.epoch[c] += 1
                self.fenced[c] = False
        if self.on_ctrl:
            self.on_ctrl(name, c, self.epoch[c])

    def _ctrl_resp(self, d):
        if not self.ctrls:
            self.fail("one-ctrlResp-per-ctrl", f"ctrlResp {d} without a ctrl flit")
        cr = self.ctrls.popleft()
        name, f, applied = cr
        if not applied:
            self._apply_ctrl(cr)
        c = f["server"]
        want = ({"op": "Fence", "server": c, "epoch": f["epoch"]} if name == "Fence"
                else {"op": "RejoinRefused" if self.fenced[c] else "RejoinAck", "server": c, "epoch": self.epoch[c]})
        if d != want:
            self.fail("ctrlResp", f"{name} {f}: ctrlResp expected {want}, got {d}")

    # ---- quiescent checks ------------------------------------------------------------------
    def check_quiet(self):
        """All expected output beats were seen (called when the core is idle)."""
        for what, q in (("resp", self.reqs), ("ackResult", self.acks), ("ctrlResp", self.ctrls),
                        ("decodeErr", [e for q in self.errs.values() for e in q])):
            if q:
                self.fail(f"one-{what}-per-input", f"core idle but {len(q)} {what} beat(s) missing: {list(q)[:3]}")
        if self.snp_exp:
            self.fail("snp-per-increment", f"core idle but BISnps missing: {dict(self.snp_exp)}")
        if self.early:
            self.fail("snp-to-sharer", f"BISnps to servers that were no sharers (no commit or eviction "
                      f"explains them): {self.early}")

    def check_state(self, q: dict, status: dict):
        """The core's query/status answers against the bookkeeping and the invariants."""
        per_set = Counter()
        for o, r in q.items():
            e = self.e[o]
            self.where_obj = o
            # structural invariants on the core's own answer
            pending = any(r["pend"])
            if r["hit"] != (r["state"] != "I"):
                self.fail("hit-iff-not-I", f"obj {o}: {r}")
            if pending and r["state"] not in ("SA", "SI"):
                self.fail("pend-only-in-SA-SI", f"obj {o}: pending {r['pend']} in {r['state']}")
            if not pending and r["state"] not in ("I", "S"):
                self.fail("idle-entry-stable", f"obj {o}: nothing pending but in {r['state']}")
            if r["state"] in ("SI",) and r["sharers"]:
                self.fail("SI-no-sharers", f"obj {o}: SI with sharers {r['sharers']}")
            for c in range(self.n):
                if status["fenced"][c] and (r["pend"][c] or c in r["sharers"]):
                    self.fail("fenced-owes-nothing", f"obj {o}: fenced server {c} pend {r['pend'][c]}, "
                              f"sharers {r['sharers']}")
                if r["pend"][c] > self.maxpend:
                    self.fail("oic-counter-bound", f"obj {o}: pend {r['pend']}")
                sf = not status["fenced"][c] and r["pend"][c] == 0
                if r["schedulableFor"][c] != sf:
                    self.fail("schedulableFor", f"obj {o} server {c}: schedulableFor {r['schedulableFor'][c]}, "
                              f"expected {sf}")
            if r["hit"]:
                per_set[set_of(self.p, o)] += 1
            # against the bookkeeping
            want = {"hit": e.st != "I", "state": e.st, "sharers": sorted(e.sharers), "pend": e.pend}
            for k, v in want.items():
                if r[k] != v:
                    self.fail(f"state-{k}", f"obj {o}: {k} expected {v}, got {r[k]} (query {r})")
        for s, k in per_set.items():
            if k > self.ways:
                self.fail("capacity", f"set {s}: {k} entries > {self.ways} ways")
        pend_at = [any(e.pend[c] for e in self.e.values()) for c in range(self.n)]
        want = {"fenced": self.fenced, "epoch": self.epoch, "pending": pend_at,
                "schedulable": [not f and not p for f, p in zip(self.fenced, pend_at)]}
        for k, v in want.items():
            if status[k] != v:
                self.fail(f"status-{k}", f"status.{k} expected {v}, got {status[k]}")
        for c in range(self.n):
            if status["schedulable"][c] != (not status["fenced"][c] and not status["pending"][c]):
                self.fail("schedulable-def", f"server {c}: status {status}")
        # status.pendTotal (the control plane's count without an object walk) = the sum of the counts
        if "pendTotal" in status:
            tot = [sum(e.pend[c] for e in self.e.values()) for c in range(self.n)]
            if status["pendTotal"] != tot:
                self.fail("status-pendTotal", f"status.pendTotal expected {tot}, got {status['pendTotal']}")
