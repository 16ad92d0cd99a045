"""A trap trace as a scenario of the memory server (rtl/MEMSERVER.md, "Test vectors of the memory
server"): flits with line data on its ports, error codes, and the core's state, commitSeq, the
hold table and DRAM after every step. Reuses the core translator's bookkeeping (vectors_core.py)."""
from __future__ import annotations

from apta import cells
from apta import vectors_io
from apta.murphi.check import CheckError
from apta.murphi.vectors_core import Translator
from apta.murphi.vectors_state import View


def ms_capable(constants: dict) -> str | None:
    """Why the msv variant cannot reproduce this configuration exactly, or None if it can."""
    if int(constants["STAGING_SLOTS"]) != 1:
        return "msv has one staging slot"
    if int(constants["NUM_OBJECTS"]) > int(constants["DIR_CAPACITY"]):
        return "directory eviction: a stalled request the RTL retries by itself would run ahead of the model"
    return None


class MsTranslator(Translator):
    """The trace as flits on the memory server's ports. Requests enter when the model's memory
    server takes them from the head of their channel; the transaction id of a put is the writer's
    put id (retries reuse it: the idempotent retry of MEMSERVER.md), tracked through the channel."""

    def scenario(self, cell: str, trace: list) -> dict:
        why = ms_capable({"STAGING_SLOTS": self.nslots, "NUM_OBJECTS": self.nobj,
                          "DIR_CAPACITY": self.cap})
        if why:
            raise CheckError(f"{self.config}: no memory-server vectors: {why}")
        self.queue = [[] for _ in range(self.n)]   # txn of every message in req[c], in order
        self.slot_txn = [None] * self.nslots
        steps = []
        wake = None      # the step after which a held get became releasable: the RTL serves it there
        for i in range(1, len(trace)):
            rule, params, post = trace[i]
            pre = self.view(trace[i - 1][2])
            if rule.startswith("OSC release"):
                # The model releases as a step of its own, the RTL at once (the commit, or the ack
                # its server owed, wakes it): the ObjData and the state after the release belong to
                # the step that made it releasable; nothing the memory server sees happens between.
                self._track_queue(pre, self.view(post))
                h = next((x for x in pre.holds() if x["h"] == params.get("h")), None)
                if wake is None or h is None or h not in pre.releasable():
                    raise CheckError(f"inconsistent trace: {rule} [{params}] without a releasable held get")
                c, o = h["c"], h["o"]
                wake["expect"]["rsp"] += [{"op": "ObjData", "server": c, "epoch": pre.mepoch(c), "obj": o + 1,
                                           "line": l, "val": pre.mem_view(o, l)} for l in range(self.nlines)]
                wake["expect"]["state"] = self.view(post).ms()
                wake["rule"] += f" + {self._rule_text(rule, params)}"
                wake = None if not self.view(post).releasable() else wake
                continue
            st = self.ms_step(rule, params, pre, self.view(post))
            if st is not None:
                if wake is not None:
                    raise CheckError(f"{self.config}/{cell}: the model took {rule!r} before releasing a "
                                     "releasable held get; the RTL releases at once")
                steps.append(st)
                if self.view(post).releasable():
                    wake = st
            elif self.view(post).releasable() and not pre.releasable():
                raise CheckError(f"inconsistent trace: {rule!r} made a held get releasable but maps to no step")
        if wake is not None:
            raise CheckError(f"{self.config}/{cell}: the trace ends with a releasable held get the model "
                             "has not released (the RTL would have served it)")
        if not steps:
            raise CheckError(f"{self.config}/{cell}: the trace has no step the memory server sees")
        sc = {"id": f"{self.config}/{cell}", "config": self.config, "cell": cell,
              "params": {"servers": self.n, "stagingSlots": self.nslots, "dirWays": self.cap,
                         "linesPerObject": self.nlines, "maxPendPerServer": self.params["maxPendPerServer"],
                         **({"holdSlots": self.hold_slots} if self.hold_slots else {})},
              "objects": self.objects, "steps": steps}
        try:
            vectors_io.validate_ms(sc, tuple(cells.ids() + cells.ids("ms")))
        except vectors_io.VectorError as e:
            raise CheckError(f"{sc['id']}: generated memory-server scenario is invalid: {e}") from None
        return sc

    def _track_queue(self, pre: View, post: View) -> dict:
        """Shadow the req channels: txn of pushed messages; returns {c: (message, txn)} popped."""
        popped = {}
        for c in range(self.n):
            a, b = pre.nreq(c), post.nreq(c)
            if b < a:
                if a - b != 1 or not self.queue[c]:
                    raise CheckError(f"inconsistent trace: req[{c}] shrank by {a - b}")
                popped[c] = (pre.queued("req", c, 0), self.queue[c].pop(0))
            for k in range(a, b):
                m = post.queued("req", c, k)
                txn = (post.put_id(c) if m["mtype"] == "PutPrepare"
                       else m["val"] if m["mtype"] == "PutLine" else 0)
                self.queue[c].append(txn)
        return popped

    def _req(self, c: int, m: dict, txn: int) -> dict:
        op = {"ObjGet": "ObjGet", "PutPrepare": "PutPrepare", "PutLine": "PutLine", "Rejoin": "Rejoin"}[m["mtype"]]
        st = {"port": "req", "op": op, "server": c, "epoch": m["epoch"]}
        if op != "Rejoin":
            st["obj"] = m["obj"] + 1
        if op == "ObjGet" and m.get("need"):
            st["version"] = m["need"]           # a versioned get (0, the paper's get: omitted)
        if op in ("PutPrepare", "PutLine"):
            st["txn"] = txn
        if op == "PutLine":
            st["line"], st["val"] = m["line"], m["val"]
        return st

    def ms_step(self, rule: str, params: dict, pre: View, post: View) -> dict | None:
        popped = self._track_queue(pre, post)
        stimuli, rsp, ctrl_resp, err = [], [], [], []
        pend_own = {(o, c): pre.pend(o, c) for o in range(self.nobj) for c in range(self.n)}
        c = params.get("c")
        if rule.startswith("OTC get"):
            m, _ = popped[c]
            o = m["obj"]
            stimuli.append(self._req(c, m, 0))
            rsp += [{"op": "ObjData", "server": c, "epoch": pre.mepoch(c), "obj": o + 1, "line": l,
                     "val": pre.mem_view(o, l)} for l in range(self.nlines)]
        elif rule.startswith("MS: discard"):
            m, txn = popped[c]
            stimuli.append(self._req(c, m, txn))
            err.append("zombie")
        elif rule.startswith("MS: Rejoin"):
            m, _ = popped[c]
            stimuli.append(self._req(c, m, 0))
            self._retire(pend_own, c)
            rsp.append({"op": "RejoinAck", "server": c, "epoch": post.mepoch(c)})
        elif rule == "FD fence":
            stimuli.append({"port": "ctrl", "op": "Fence", "server": c, "epoch": pre.mepoch(c)})
            self._retire(pend_own, c)
            ctrl_resp.append({"op": "Fence", "server": c, "epoch": pre.mepoch(c)})
        elif rule == "OIC ObjBIRsp":
            h = pre.head("birsp", c)
            o = h["obj"]
            if self._ack_applies(pre, c, h):
                pend_own[(o, c)] -= 1
            stimuli.append({"port": "birsp", "server": c, "epoch": h["epoch"], "obj": o + 1})
        elif rule.startswith("OPC PutPrepare"):
            m, txn = popped[c]
            stimuli.append(self._req(c, m, txn))
            opened = [k for k in range(self.nslots)
                      if pre.slot(k)["st"] == "SlotFree" and post.slot(k)["st"] == "SlotOpen"]
            if opened:
                self.slot_txn[opened[0]] = txn
            else:
                rsp.append({"op": "PutRetry", "server": c, "epoch": pre.mepoch(c), "obj": m["obj"] + 1,
                            "txn": txn})
        elif rule.startswith("OPC PutLine"):
            m, txn = popped[c]
            stimuli.append(self._req(c, m, txn))
            mine = [k for k in range(self.nslots)
                    if pre.slot(k)["st"] == "SlotOpen" and pre.slot(k)["owner"] == c]
            if not mine:
                err.append("noTxn")
            elif self.slot_txn[mine[0]] != txn:
                raise CheckError(f"inconsistent trace: {rule} [c={c}]: line of txn {txn} into the slot "
                                 f"of txn {self.slot_txn[mine[0]]}")
        elif rule.startswith("OPC drain"):
            k = params.get("s")
            if post.slot(k)["st"] != "SlotFree":
                return self._no_ms_step(rule, pre, post)     # drained lines are invisible (MemView)
            stimuli.append({"port": "drain"})
        elif rule.startswith("OPC timeout"):
            k = params.get("s")
            sl = pre.slot(k)
            stimuli.append({"port": "timeout"})
            rsp.append({"op": "PutRetry", "server": sl["owner"], "epoch": sl["epoch"], "obj": sl["obj"] + 1,
                        "txn": self.slot_txn[k]})
            err.append("timeout")
        elif rule.startswith("OSC get: version not committed, hold table full"):
            m, _ = popped[c]
            stimuli.append(self._req(c, m, 0))
            rsp.append({"op": "GetRetry", "server": c, "epoch": pre.mepoch(c), "obj": m["obj"] + 1,
                        "version": m["need"]})
        elif rule.startswith("OSC get: version not committed, hold"):
            m, _ = popped[c]
            stimuli.append(self._req(c, m, 0))
        elif rule.startswith("Runtime cancels a held get"):
            h = next(x for x in pre.holds() if x["h"] == params.get("h"))
            stimuli.append({"port": "cancel", "obj": h["o"] + 1})
            rsp.append({"op": "GetCancelled", "server": h["c"], "epoch": pre.mepoch(h["c"]),
                        "obj": h["o"] + 1, "version": h["need"]})
            if [x for x in post.waiting_holds() if x["o"] == h["o"]]:
                raise CheckError(f"inconsistent trace: {rule}: the RTL's cancel answers every held get "
                                 "of the object, the model left one")
        elif rule.startswith("OTC S evict"):
            raise CheckError(f"inconsistent trace: {rule} in a configuration without eviction")
        elif popped:
            raise CheckError(f"inconsistent trace: {rule} took a request the translator does not map")
        # open slots freed by a fence or a rejoin: no reply, err fenceAbort
        if rule == "FD fence" or rule.startswith("MS: Rejoin"):
            err += ["fenceAbort"] * sum(1 for k in range(self.nslots)
                                        if pre.slot(k)["st"] == "SlotOpen" and post.slot(k)["st"] == "SlotFree")
        # commits inside the rule (TryCommits)
        for k, b in self._commits(pre, post):
            rsp.append({"op": "PutCommit", "server": b["owner"], "epoch": b["epoch"], "obj": b["obj"] + 1,
                        "txn": self.slot_txn[k]})
        if not stimuli:
            return self._no_ms_step(rule, pre, post)
        snp = self._snps(rule, pre, post, pend_own, lambda o: {"obj": o + 1})
        return {"rule": self._rule_text(rule, params), "stimuli": stimuli,
                "expect": {"rsp": rsp, "snp": snp, "ctrlResp": ctrl_resp, "err": sorted(err),
                           "state": post.ms()}}

    def _no_ms_step(self, rule: str, pre: View, post: View) -> None:
        """A rule the memory server does not see changes nothing it holds but the drained lines."""
        if (pre.core() != post.core() or pre.commits() != post.commits()
                or pre.waiting_holds() != post.waiting_holds()):
            raise CheckError(f"inconsistent trace: {rule!r} changed the memory server's state "
                             "but maps to no stimulus")
        return None
