"""One state of a model trace, decoded into what the core (rtl/CORE.md) and the memory server
(rtl/MEMSERVER.md) hold: directory, OIC counters, epochs, fences, channels, staging slots, DRAM
and the OSC's hold table, with the model's predicates as apta.m states them. Both translators
(vectors_core.py, vectors_ms.py) read traces through it."""
from __future__ import annotations

from apta.murphi.check import CheckError

DSTATE = {"D_I": "I", "D_S": "S", "D_SA": "SA", "D_SI": "SI"}


class View:
    """Decoded pieces of one model state (flat Rumur component names -> Python values)."""

    def __init__(self, s: dict, n: int, nobj: int, nslots: int, nlines: int):
        self.s, self.n, self.nobj, self.nslots, self.nlines = s, n, nobj, nslots, nlines

    def v(self, name: str) -> str:
        if name not in self.s:
            raise CheckError(f"trace has no state component {name!r}")
        return self.s[name]

    def dst(self, o: int) -> str:
        return DSTATE[self.v(f"dir[Obj_{o}].st")]

    def sharers(self, o: int) -> list[int]:
        return [c for c in range(self.n) if self.v(f"dir[Obj_{o}].sharers[Server_{c}]") == "true"]

    def pend(self, o: int, c: int) -> int:
        return int(self.v(f"pend[Obj_{o}][Server_{c}]"))

    def fenced(self, c: int) -> bool:
        return self.v(f"fenced[Server_{c}]") == "true"

    def mepoch(self, c: int) -> int:
        return int(self.v(f"mepoch[Server_{c}]"))

    def head(self, chan: str, c: int) -> dict | None:
        if int(self.v(f"{chan}[Server_{c}].n")) == 0:
            return None
        q = f"{chan}[Server_{c}].q[0]"
        obj = self.s.get(f"{q}.obj", "Undefined")
        return {"mtype": self.v(f"{q}.mtype"), "epoch": int(self.v(f"{q}.epoch")),
                "obj": None if obj == "Undefined" else int(obj.rsplit("_", 1)[1])}

    def queued(self, chan: str, c: int, k: int) -> dict:
        """Entry k of c's channel: the message's fields as the model holds them."""
        q = f"{chan}[Server_{c}].q[{k}]"
        def num(name):
            v = self.s.get(f"{q}.{name}", "Undefined")
            return None if v == "Undefined" else int(v.rsplit("_", 1)[-1])
        return {"mtype": self.v(f"{q}.mtype"), "epoch": num("epoch"), "obj": num("obj"),
                "line": num("line"), "val": num("val"), "need": num("need")}

    def nreq(self, c: int) -> int:
        return int(self.v(f"req[Server_{c}].n"))

    def put_id(self, c: int) -> int:
        return int(self.v(f"cs[Server_{c}].putId"))

    def mem(self, o: int, l: int) -> int:
        return int(self.v(f"mem[Obj_{o}][{l}]"))

    def commits(self) -> int:
        return sum(int(self.v(f"commits[Obj_{o}]")) for o in range(self.nobj))

    def slot_data(self, k: int, l: int) -> int:
        return int(self.v(f"staging[Slot_{k}].data[{l}]"))

    def mem_view(self, o: int, l: int) -> int:
        """The model's MemView: DRAM overlaid by committed lines still draining."""
        for k in range(self.nslots):
            sl = self.slot(k)
            if sl["st"] == "SlotDraining" and sl["obj"] == o and sl["got"][l]:
                return self.slot_data(k, l)
        return self.mem(o, l)

    def draining(self) -> bool:
        return any(self.slot(k)["st"] == "SlotDraining" for k in range(self.nslots))

    def ms(self) -> dict:
        """The expected `state` of MEMSERVER.md: the core's, commitSeq, the hold table's waiting
        entries (`held`), and DRAM when settled."""
        st = {**self.core(), "commitSeq": self.commits(), "held": len(self.waiting_holds())}
        if not self.draining():
            st["mem"] = {str(o + 1): [self.mem(o, l) for l in range(self.nlines)]
                         for o in range(self.nobj)}
        return st

    # the OSC's hold table (VERSIONED)
    def holds(self) -> list[dict]:
        """Valid hold-table entries: {h, c, o, need}."""
        out, h = [], 0
        while f"hold[HoldSlot_{h}].valid" in self.s:
            if self.v(f"hold[HoldSlot_{h}].valid") == "true":
                out.append({"h": h, "c": int(self.v(f"hold[HoldSlot_{h}].c").rsplit("_", 1)[1]),
                            "o": int(self.v(f"hold[HoldSlot_{h}].o").rsplit("_", 1)[1]),
                            "need": int(self.v(f"hold[HoldSlot_{h}].need"))})
            h += 1
        return out

    def version(self, o: int) -> int:
        return int(self.v(f"commits[Obj_{o}]"))

    def waiting_holds(self) -> list[dict]:
        """Held gets whose version has not committed: the RTL's hold table. (A woken entry leaves
        the RTL's table at once for the OSC's pending get, which the core may still Stall while its
        server owes an ack; the model keeps it until the release rule.)"""
        return [x for x in self.holds() if x["need"] > self.version(x["o"])]

    def releasable(self) -> list[dict]:
        """Held gets the model may release now (HeldReady & GetServable, no eviction here): the
        RTL serves them at once."""
        return [x for x in self.holds() if x["need"] <= self.version(x["o"]) and self.pend(x["o"], x["c"]) == 0
                and self.dst(x["o"]) in ("I", "S", "SA")]

    def slot(self, k: int) -> dict:
        p = f"staging[Slot_{k}]"
        st = self.v(f"{p}.st")
        if st == "SlotFree":
            return {"st": st}
        return {"st": st, "owner": int(self.v(f"{p}.owner").rsplit("_", 1)[1]),
                "epoch": int(self.v(f"{p}.epoch")), "obj": int(self.v(f"{p}.obj").rsplit("_", 1)[1]),
                "got": [self.v(f"{p}.got[{l}]") == "true" for l in range(self.nlines)]}

    # the model's predicates, as in apta.m
    def complete(self, k: int) -> bool:
        sl = self.slot(k)
        return sl["st"] == "SlotOpen" and all(sl["got"])

    def dir_full(self, cap: int) -> bool:
        return sum(self.dst(o) != "I" for o in range(self.nobj)) >= cap

    def get_at_head(self, c: int) -> dict | None:
        h = self.head("req", c)
        if h and h["mtype"] == "ObjGet" and not self.fenced(c) and h["epoch"] == self.mepoch(c):
            return h
        return None

    def get_needs_entry(self, c: int) -> bool:
        h = self.get_at_head(c)
        return bool(h) and self.pend(h["obj"], c) == 0 and self.dst(h["obj"]) == "I"

    def commit_needs_entry(self, k: int) -> bool:
        return self.complete(k) and self.dst(self.slot(k)["obj"]) == "I"

    def core(self) -> dict:
        """The expected `state` of CORE.md: every object's entry (with the query's schedulableFor),
        fenced, epoch, and the status port's pending (owes any ack) and schedulable
        (= !fenced & !pending), the control plane's answer."""
        pending = [any(self.pend(o, c) for o in range(self.nobj)) for c in range(self.n)]
        return {"objects": {str(o + 1): {"state": self.dst(o), "sharers": self.sharers(o),
                                         "pend": [self.pend(o, c) for c in range(self.n)],
                                         "schedulableFor": [not self.fenced(c) and self.pend(o, c) == 0
                                                            for c in range(self.n)]}
                            for o in range(self.nobj)},
                "fenced": [self.fenced(c) for c in range(self.n)],
                "epoch": [self.mepoch(c) for c in range(self.n)],
                "pending": pending,
                "schedulable": [not self.fenced(c) and not pending[c] for c in range(self.n)]}
