"""A trap trace as a scenario of the coherence core (rtl/CORE.md, "Test vectors"): one step per
memory-server rule the core sees, with its stimuli, the messages the core must emit and the
directory/OIC state after it; a stall cell ends with the request the core answers Stall."""
from __future__ import annotations

from apta import cells
from apta import vectors_io
from apta.murphi.check import CheckError
from apta.murphi.vectors_state import View

STALL_CELLS = ("get.I.full", "get.SI", "get.owes", "commit.I.full", "commit.SI")
BASE_STRIDE = 0x1000                              # object k+1 lives at (k+1) * 4 KiB


# ---------------------------------------------------------------------------------------------
# trace -> scenario
# ---------------------------------------------------------------------------------------------
class Translator:
    def __init__(self, config: str, constants: dict):
        k = {n: int(constants[n]) for n in ("NUM_SERVERS", "NUM_OBJECTS", "STAGING_SLOTS",
                                             "NUM_LINES", "DIR_CAPACITY", "MAX_PUTS")}
        self.config = config
        # the OSC's hold table (VERSIONED configurations only; 0: no versioned gets)
        versioned = str(constants.get("VERSIONED", False)).lower() == "true"
        self.hold_slots = int(constants.get("HOLD_SLOTS", 1)) if versioned else 0
        self.n, self.nobj = k["NUM_SERVERS"], k["NUM_OBJECTS"]
        self.nslots, self.nlines, self.cap = k["STAGING_SLOTS"], k["NUM_LINES"], k["DIR_CAPACITY"]
        self.params = {"servers": self.n, "dirSets": 1, "dirWays": self.cap,
                       "maxPendPerServer": k["MAX_PUTS"] + 1, "linesPerObject": self.nlines}
        self.objects = {f"Obj_{o}": {"obj": o + 1, "base": (o + 1) * BASE_STRIDE, "size": self.nlines}
                        for o in range(self.nobj)}

    def view(self, s: dict) -> View:
        return View(s, self.n, self.nobj, self.nslots, self.nlines)

    def ext(self, o: int) -> dict:
        e = self.objects[f"Obj_{o}"]
        return {"obj": e["obj"], "base": e["base"], "size": e["size"]}

    def req(self, op: str, c: int, epoch: int, o: int) -> dict:
        return {"port": "req", "op": op, "server": c, "epoch": epoch, **self.ext(o)}

    def resp(self, op: str, c: int, o: int, result: str) -> dict:
        return {"op": op, "server": c, "obj": o + 1, "result": result}

    def scenario(self, cell: str, trace: list) -> dict:
        steps = []
        for i in range(1, len(trace)):
            rule, params, post = trace[i]
            pre = trace[i - 1][2]
            last = i == len(trace) - 1
            st = self.step(rule, params, self.view(pre), self.view(post), cell if last else None)
            if st is not None:
                steps.append(st)
        if cell in STALL_CELLS:
            steps.append(self.stall_step(cell, self.view(trace[-1][2])))
        if not steps:
            raise CheckError(f"{self.config}/{cell}: the trace has no step the core sees")
        sc = {"id": f"{self.config}/{cell}", "config": self.config, "cell": cell,
              "params": self.params, "objects": self.objects, "steps": steps}
        try:
            vectors_io.validate(sc, tuple(cells.ids()))
        except vectors_io.VectorError as e:   # a bug of this translator, not of the input
            raise CheckError(f"{sc['id']}: generated scenario is invalid: {e}") from None
        return sc

    def step(self, rule: str, params: dict, pre: View, post: View, cell: str | None) -> dict | None:
        stimuli, resp, ack_results, ctrl_resp = [], [], [], []
        # the OIC counters after the stimulus's own decrements, before any commit's increments
        pend_own = {(o, c): pre.pend(o, c) for o in range(self.nobj) for c in range(self.n)}
        c = params.get("c")
        if rule.startswith("OTC get"):
            h = pre.get_at_head(c)
            if h is None or c not in post.sharers(h["obj"]):
                raise CheckError(f"inconsistent trace: {rule} [c={c}] without a get at its head")
            stimuli.append(self.req("Get", c, h["epoch"], h["obj"]))
            resp.append(self.resp("Get", c, h["obj"], "Served"))
        elif rule.startswith("MS: discard"):
            h = pre.head("req", c)
            if h["mtype"] != "ObjGet":
                return self._no_step(rule, pre, post)       # zombie put lines: the OPC drops them
            stimuli.append(self.req("Get", c, h["epoch"], h["obj"]))
            resp.append(self.resp("Get", c, h["obj"], "Drop"))
        elif rule.startswith("MS: Rejoin"):
            h = pre.head("req", c)
            if h is None or h["mtype"] != "Rejoin" or post.mepoch(c) != pre.mepoch(c) + 1:
                raise CheckError(f"inconsistent trace: {rule} [c={c}]")
            stimuli.append({"port": "ctrl", "op": "Rejoin", "server": c, "epoch": h["epoch"]})
            self._retire(pend_own, c)                        # fenced first (if it was live)
            ctrl_resp.append({"op": "RejoinAck", "server": c, "epoch": post.mepoch(c)})
        elif rule == "FD fence":
            if pre.fenced(c) or not post.fenced(c):
                raise CheckError(f"inconsistent trace: {rule} [c={c}]")
            stimuli.append({"port": "ctrl", "op": "Fence", "server": c, "epoch": pre.mepoch(c)})
            self._retire(pend_own, c)
            ctrl_resp.append({"op": "Fence", "server": c, "epoch": pre.mepoch(c)})
        elif rule == "OIC ObjBIRsp":
            h = pre.head("birsp", c)
            if h is None:
                raise CheckError(f"inconsistent trace: {rule} [c={c}] with no ack queued")
            o = h["obj"]
            applied = self._ack_applies(pre, c, h)
            settled = False
            if applied:
                pend_own[(o, c)] -= 1
                settled = all(pend_own[(o, d)] == 0 for d in range(self.n))
            stimuli.append({"port": "ack", "server": c, "epoch": h["epoch"], "obj": o + 1})
            ack_results.append({"server": c, "obj": o + 1, "applied": applied, "settled": settled})
        elif rule.startswith("OTC S evict"):
            gets = [d for d in range(self.n) if pre.get_needs_entry(d)]
            puts = [s for s in range(self.nslots) if pre.commit_needs_entry(s)]
            use_get = bool(gets) and (cell == "get.I.evict" or not puts)
            if not use_get and cell == "get.I.evict":
                raise CheckError(f"inconsistent trace: {rule} for get.I.evict without a waiting get")
            if use_get:
                h = pre.get_at_head(gets[0])
                stimuli.append(self.req("Get", gets[0], h["epoch"], h["obj"]))
                resp.append(self.resp("Get", gets[0], h["obj"], "Stall"))
            elif puts:
                sl = pre.slot(puts[0])
                stimuli.append(self.req("Commit", sl["owner"], sl["epoch"], sl["obj"]))
                resp.append(self.resp("Commit", sl["owner"], sl["obj"], "Stall"))
            else:
                raise CheckError(f"inconsistent trace: {rule} with no request waiting for an entry")
        # commits inside the rule (TryCommits): a Commit stimulus after the rule's own
        for _k, b in self._commits(pre, post):
            stimuli.append(self.req("Commit", b["owner"], b["epoch"], b["obj"]))
            resp.append(self.resp("Commit", b["owner"], b["obj"], "Committed"))
        if not stimuli:
            return self._no_step(rule, pre, post)
        snp = self._snps(rule, pre, post, pend_own, self.ext)
        return {"rule": self._rule_text(rule, params), "stimuli": stimuli,
                "expect": {"resp": resp, "snp": snp, "ackResult": ack_results,
                           "ctrlResp": ctrl_resp, "state": post.core()}}

    def _retire(self, pend_own: dict, c: int) -> None:
        """A fence (or a rejoin's fence) retires every ack c owes."""
        for o in range(self.nobj):
            pend_own[(o, c)] = 0

    @staticmethod
    def _ack_applies(pre: View, c: int, h: dict) -> bool:
        """An ack decrements a counter only in c's current epoch, unfenced, with an ack owed."""
        return h["epoch"] == pre.mepoch(c) and not pre.fenced(c) and pre.pend(h["obj"], c) > 0

    def _commits(self, pre: View, post: View):
        """The slots a step committed (TryCommits inside the rule): (slot, its post state)."""
        for k in range(self.nslots):
            a, b = pre.slot(k), post.slot(k)
            if a["st"] == "SlotOpen" and b["st"] == "SlotDraining":
                yield k, b

    def _snps(self, rule: str, pre: View, post: View, pend_own: dict, ext) -> list[dict]:
        """One BISnp per OIC counter increment beyond the step's own decrements, addressed with
        the server's epoch; ext(o) gives the object's fields."""
        snp = []
        for o in range(self.nobj):
            for d in range(self.n):
                inc = post.pend(o, d) - pend_own[(o, d)]
                if inc < 0:
                    raise CheckError(f"inconsistent trace: {rule}: pend[{o}][{d}] fell by {-inc} "
                                     "more than the step explains")
                snp += [{"server": d, "epoch": pre.mepoch(d), **ext(o)}] * inc
        return snp

    def _no_step(self, rule: str, pre: View, post: View) -> None:
        """A rule the core does not see must not change what the core holds."""
        if pre.core() != post.core():
            raise CheckError(f"inconsistent trace: {rule!r} changed the directory or OIC state "
                             "but maps to no stimulus")
        return None

    @staticmethod
    def _rule_text(rule: str, params: dict) -> str:
        if not params:
            return rule
        return rule + " [" + ", ".join(f"{k}={v}" for k, v in params.items()) + "]"

    def stall_step(self, cell: str, s: View) -> dict:
        """The request waiting at its channel's head that the core answers Stall (no change)."""
        stim = res = None
        if cell.startswith("get."):
            for c in range(self.n):
                h = s.get_at_head(c)
                if not h:
                    continue
                o = h["obj"]
                ok = {"get.owes": s.pend(o, c) > 0,
                      "get.SI": s.pend(o, c) == 0 and s.dst(o) == "SI",
                      "get.I.full": s.get_needs_entry(c) and s.dir_full(self.cap)
                      and not any(s.dst(x) == "S" for x in range(self.nobj))}[cell]
                if ok:
                    stim, res = self.req("Get", c, h["epoch"], o), self.resp("Get", c, o, "Stall")
                    break
        else:
            for k in range(self.nslots):
                if not s.complete(k):
                    continue
                sl = s.slot(k)
                o = sl["obj"]
                ok = {"commit.SI": s.dst(o) == "SI",
                      "commit.I.full": s.commit_needs_entry(k) and s.dir_full(self.cap)
                      and not any(s.dst(x) == "S" for x in range(self.nobj))}[cell]
                if ok:
                    stim = self.req("Commit", sl["owner"], sl["epoch"], o)
                    res = self.resp("Commit", sl["owner"], o, "Stall")
                    break
        if stim is None:
            raise CheckError(f"{self.config}/{cell}: the trap state has no request that stalls")
        return {"rule": f"(stall: {cell})", "stimuli": [stim],
                "expect": {"resp": [res], "snp": [], "ackResult": [], "ctrlResp": [],
                           "state": s.core()}}
