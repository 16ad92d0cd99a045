#!/usr/bin/env python3
"""Test vectors for the coherence core (OTC + OIC) from the Rumur model, by trap properties.

    spec/murphi/vectors.py [--suite vectors] [--only CONFIG ...] [--set CONST=VALUE ...] [--out DIR]

For each configuration of the suite (spec/murphi/checks.json, section "vectors"): a copy of apta.m
with the configuration's constants, VECTOR_CELLS = true (the ghost `vcells` records the cells of
the protocol table that each memory-server step exercised), no covers, no liveness properties, and
one `invariant "trap: <cell>" !VecHit(V_<cell>)` per cell the configuration targets and has not yet
found. Rumur explores breadth first (one thread), so the first counterexample of a trap is a
shortest path to its cell. A trap stops the exploration beyond its state, so the found traps are
dropped and the verifier rebuilt until a run finds nothing new; targets still missing after a run
in which no trap fired (an exhaustive run) are unreachable in that configuration.

Each trace becomes a scenario of rtl/CORE.md ("Test vectors"): one step per memory-server rule
the core sees, with its stimuli, the messages it must emit and the directory/OIC state after it.
Output: <out>/<config>.jsonl (one scenario per line, validated by python/apta/vectors_io.py) and
<out>/coverage.json (every cell of python/apta/cells.py: covered by which vector, or unreachable).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = ROOT / "build" / "vectors"
from apta import cells
from apta import vectors_io
from apta.murphi import check


CheckError = check.CheckError
CC_FLAGS = ["-std=c11", "-O0", "-mcx16", "-w"]   # small state spaces: compile time dominates
MAX_ERRORS = 300                                  # per run; traps repeat, the first of each counts
STALL_CELLS = ("get.I.full", "get.SI", "get.owes", "commit.I.full", "commit.SI")
BASE_STRIDE = 0x1000                              # object k+1 lives at (k+1) * 4 KiB
_PRINT = threading.Lock()                         # configurations run two at a time


def say(msg: str) -> None:
    with _PRINT:
        print(msg, flush=True)

DSTATE = {"D_I": "I", "D_S": "S", "D_SA": "SA", "D_SI": "SI"}


def murphi_name(cell: str) -> str:
    return "V_" + cell.replace(".", "_")


def model_cells(source: str, origin: str) -> list[str]:
    """The VCell enum of apta.m, checked against the cell tables of rtl/CORE.md then
    rtl/MEMSERVER.md (same cells, same order). Returns every cell id (core, then memory server)."""
    m = re.search(r"\bVCell\s*:\s*enum\s*\{([^}]*)\}", source)
    if not m:
        raise CheckError(f"{origin}: no VCell enum (the cell ghost of VECTOR_CELLS)")
    enum = [re.sub(r"--.*", "", x).strip() for x in re.sub(r"--[^\n]*", "", m.group(1)).split(",")]
    ids = cells.ids() + cells.ids("ms")
    want = [murphi_name(c) for c in ids]
    if enum != want:
        missing = sorted(set(want) - set(enum))
        extra = sorted(set(enum) - set(want))
        raise CheckError(f"{origin}: VCell enum differs from the cells of rtl/CORE.md + rtl/MEMSERVER.md "
                         f"(missing {missing}, extra {extra}, or another order)")
    return ids


PROPERTY_RE = re.compile(r'^(?:invariant|liveness)\s+"[^"]*"[^;]*;', re.M)


def trap_source(source: str, constants: dict, traps: list[str], origin: str) -> str:
    src = check.instantiate(source, {**constants, "VECTOR_CELLS": True}, origin)
    src = check.keep_covers(src, set(), origin)
    # The model's own properties are make verify's job; here they would only stop a mutant's run
    # (and liveness would add a second pass). Its assertions stay: a failing one is an error.
    src = PROPERTY_RE.sub("", src)
    src += "\n-- trap properties (spec/murphi/vectors.py)\n"
    src += "".join(f'invariant "trap: {c}" !VecHit({murphi_name(c)});\n' for c in traps)
    return src


# ---------------------------------------------------------------------------------------------
# running the trap verifier
# ---------------------------------------------------------------------------------------------
@dataclass
class TrapRun:
    found: dict[str, list] = field(default_factory=dict)   # cell -> trace [(rule, params, state)]
    errors: int = 0
    other: list[str] = field(default_factory=list)         # errors that are not traps
    states: int = 0
    complete: bool = False
    seconds: float = 0.0


def _params(t: ET.Element) -> dict[str, int]:
    out = {}
    for p in t.findall("parameter"):
        m = re.search(r"(\d+)$", (p.text or "").strip())
        if m:
            out[p.get("name")] = int(m.group(1))
    return out


def parse_traps(path: Path) -> TrapRun:
    """Stream the machine-readable output: keep the first (shortest) trace of each trap."""
    res = TrapRun()
    text = path.read_text(errors="replace")
    if "</rumur_run>" not in text:
        text += "</rumur_run>"
    for _, el in ET.iterparse(_StringSource(text), events=("end",)):
        if el.tag == "error":
            res.errors += 1
            msg = (el.findtext("message") or "").strip()
            prop = check.property_of(msg)
            if not prop.startswith("trap: "):
                res.other.append(msg)
            else:
                cell = prop[len("trap: "):]
                if cell not in res.found:
                    trace, state = [], {}
                    pending = None
                    for t in el:
                        if t.tag == "transition":
                            txt = (t.text or "").strip()
                            pending = (re.sub(r'^(Rule|Startstate)\s+"(.*)"$', r"\2", txt), _params(t))
                        elif t.tag == "state":
                            for c in t.findall("state_component"):
                                state[c.get("name")] = c.get("value")
                            trace.append((pending[0], pending[1], dict(state)))
                    res.found[cell] = trace
            el.clear()
        elif el.tag == "summary":
            res.states = int(el.get("states"))
            res.complete = True
        elif el.tag == "progress":
            res.states = max(res.states, int(el.get("states")))
    return res


class _StringSource:
    """iterparse wants a file object; this one reads a str."""
    def __init__(self, text: str):
        self.text, self.pos = text.encode(), 0

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = len(self.text) - self.pos
        chunk = self.text[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk


def run_traps(exe: Path, timeout: float, label: str) -> TrapRun:
    log = exe.parent / "output.xml"
    t0 = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.Popen([str(exe)], stdout=f, stderr=subprocess.STDOUT)
        last = t0
        while p.poll() is None:
            time.sleep(0.2)
            now = time.monotonic()
            if now - t0 > timeout:
                p.kill(); p.wait()
                raise CheckError(f"{label}: trap verifier timed out after {timeout:.0f} s")
            if now - last >= 15:
                last = now
                n = check._last_progress(log)
                say(f"    ... {label}: still running after {now - t0:.0f} s"
                    + (f" ({n:,} states)" if n else ""))
    res = parse_traps(log)
    res.seconds = time.monotonic() - t0
    if res.errors:
        log.unlink()             # traces of repeated traps: tens of MB; the scenarios keep what counts
    return res


# ---------------------------------------------------------------------------------------------
# the model's state, as the core sees it
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# trace -> memory-server scenario (rtl/MEMSERVER.md "Test vectors of the memory server")
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# one configuration: iterate trap runs
# ---------------------------------------------------------------------------------------------
@dataclass
class ConfigResult:
    config: str
    scenarios: list[dict]
    covered: list[str]
    unreachable: list[str]
    iterations: int
    seconds: float
    exhaustive: bool
    ms_scenarios: list[dict] | None = None      # None: not a memory-server configuration


def generate(config: str, constants: dict, targets: list[str], source: str, out: Path,
             timeout: float, ms: bool = False) -> ConfigResult:
    """Trap runs until nothing new; every trace of a core cell becomes a core scenario and, in a
    memory-server configuration (ms), every trace also a memory-server scenario."""
    origin = f"vectors: {config}"
    model_cells(source, origin)
    core_ids = set(cells.ids())
    tr = Translator(config, constants)
    mtr = MsTranslator(config, constants) if ms else None
    ms_scenarios = [] if ms else None
    remaining = list(targets)
    scenarios, t0, it, exhaustive = [], time.monotonic(), 0, False
    while remaining:
        it += 1
        src = trap_source(source, constants, remaining, origin)
        exe = check.build(f"{config}/it{it}", src, MAX_ERRORS, 1,
                          ["--deadlock-detection", "off"], base=out / "model", cc_flags=CC_FLAGS)
        (exe.parent / "model.c").unlink(missing_ok=True)      # 2.5 MB each; the verifier is cached
        res = run_traps(exe, timeout, f"{config} iteration {it}")
        if res.other:
            raise CheckError(f"{origin}: the trap model failed on something else: {res.other[0]}")
        new = [c for c in remaining if c in res.found]
        for c in new:
            if c in core_ids:
                scenarios.append(tr.scenario(c, res.found[c]))
            if mtr is not None:
                ms_scenarios.append(mtr.scenario(c, res.found[c]))
        remaining = [c for c in remaining if c not in res.found]
        say(f"  {config} iteration {it}: {len(remaining) + len(new)} trap(s), {res.states:,} states, "
            f"{res.seconds:.1f} s: found {', '.join(new) or 'none'}")
        if not new:
            if not res.complete or res.errors:
                raise CheckError(f"{origin}: run {it} ended early without a trap "
                                 f"({res.errors} error(s), complete={res.complete})")
            exhaustive = True
            break
    order = {c: i for i, c in enumerate(cells.ids() + cells.ids("ms"))}
    scenarios.sort(key=lambda sc: order[sc["cell"]])
    if ms_scenarios is not None:
        ms_scenarios.sort(key=lambda sc: order[sc["cell"]])
    covered = [c for c in targets if c not in remaining]
    return ConfigResult(config, scenarios, covered, remaining, it, time.monotonic() - t0, exhaustive,
                        ms_scenarios)


def permute_servers(sc: dict, perm: list[int]) -> dict:
    """The scenario with server c renamed perm[c] everywhere: stimuli, expected messages, every
    per-server array of the state. Sound because Server is a scalarset in apta.m: the model's
    behaviour is invariant under renaming servers, so the image is a trace of the model too; it
    exercises the RTL's per-server logic (ServerTable rows, sharer bits) of every server."""
    inv = {c: i for i, c in enumerate(perm)}

    def arr(a):                       # per-server array: new position perm[c] holds old a[c]
        return [a[inv[i]] for i in range(len(a))]

    def msg(m):
        return {**m, "server": perm[m["server"]]} if "server" in m else dict(m)

    def state(st):
        out = {k: arr(v) for k, v in st.items() if k not in ("objects",) and isinstance(v, list)}
        out.update({k: v for k, v in st.items() if k != "objects" and not isinstance(v, list)})
        out["objects"] = {o: {**e, "sharers": sorted(perm[c] for c in e["sharers"]),
                              **{k: arr(e[k]) for k in ("pend", "schedulableFor") if k in e}}
                          for o, e in st.get("objects", {}).items()}
        return out

    steps = []
    for st in sc["steps"]:
        ex = {k: [msg(m) for m in v] for k, v in st["expect"].items() if k != "state"}
        if "state" in st["expect"]:
            ex["state"] = state(st["expect"]["state"])
        steps.append({**st, "stimuli": [msg(m) for m in st["stimuli"]], "expect": ex})
    return {**sc, "id": f"{sc['id']}@servers{''.join(map(str, perm))}", "steps": steps}


def queued_images(scenarios: list[dict]) -> list[dict]:
    """Every scenario, followed, when two consecutive steps are control flits only (a Fence, then
    the Rejoin of the same or another server), by its image with those two steps as one: both
    flits sent back to back, so the second waits on the ctrl channel behind the first's walk and
    answer (the core takes one control flit at a time). A trace of the model still: the ctrl
    channel is in order and the core applies the flits one after the other, so the step expects
    the first's messages then the second's (snoops as one multiset) and the second's state. The
    model's own traces never queue one, so the unit's accept-while-busy path had no vector."""
    out = []
    for sc in scenarios:
        out.append(sc)
        st = sc["steps"]
        for i in range(len(st) - 1):
            a, b = st[i], st[i + 1]
            if not (a["stimuli"] and b["stimuli"]
                    and all(x["port"] == "ctrl" for x in a["stimuli"] + b["stimuli"])):
                continue
            ex = {k: a["expect"].get(k, []) + b["expect"].get(k, [])
                  for k in set(a["expect"]) | set(b["expect"]) if k != "state"}
            if "state" in b["expect"]:
                ex["state"] = b["expect"]["state"]
            merged = {"rule": f"{a['rule']} + {b['rule']} (queued)", "stimuli": a["stimuli"] + b["stimuli"],
                      "expect": ex}
            out.append({**sc, "id": f"{sc['id']}@queued{i}", "steps": st[:i] + [merged] + st[i + 2:]})
    return out


def symmetric_images(scenarios: list[dict]) -> list[dict]:
    """Every scenario followed by its images under every other renaming of the servers, so that
    each server is fenced, rejoined, acked and snooped in some vector (not only the one the
    model checker's counterexample happened to name)."""
    import itertools
    out = []
    for sc in scenarios:
        out.append(sc)
        n = sc["params"]["servers"]
        out += [permute_servers(sc, list(p)) for p in itertools.permutations(range(n)) if list(p) != list(range(n))]
    return out


def write_outputs(results: list[ConfigResult], out: Path, suite: str, partial: bool) -> dict:
    """<config>.jsonl per configuration and coverage.json. A cell is covered if any configuration
    covers it, unreachable if none does and an exhaustive run of some configuration targeted it;
    any other cell is an error of the suite (a partial run, --only, marks it untested)."""
    cov = _write_family(results, out, suite, partial, "core", lambda r: symmetric_images(queued_images(r.scenarios)))
    ms = [r for r in results if r.ms_scenarios is not None]
    if ms or not partial:
        cov["ms"] = _write_family(ms, out / "ms", suite, partial, "ms", lambda r: r.ms_scenarios)
    return cov


def _write_family(results: list[ConfigResult], out: Path, suite: str, partial: bool, table: str,
                  scenarios_of) -> dict:
    """<out>/<config>.jsonl and <out>/coverage.json of one cell table (core: rtl/CORE.md,
    ms: rtl/MEMSERVER.md)."""
    out.mkdir(parents=True, exist_ok=True)
    if not partial:                                   # no stale scenarios of other configurations
        for old in out.glob("*.jsonl"):
            old.unlink()
    for r in results:
        with open(out / f"{r.config}.jsonl", "w") as f:
            for sc in scenarios_of(r):
                f.write(json.dumps(sc) + "\n")
    rows, untargeted = [], []
    for c in cells.ids(table):
        hit = next((r for r in results if c in r.covered), None)
        proven = any(c in r.unreachable and r.exhaustive for r in results)
        status = "covered" if hit else "unreachable" if proven else "untested"
        if status == "untested":
            untargeted.append(c)
        rows.append({"cell": c, "status": status,
                     "vector": f"{hit.config}/{c}" if hit else None,
                     "config": hit.config if hit else None,
                     "covered_in": [r.config for r in results if c in r.covered],
                     "unreachable_in": [r.config for r in results if c in r.unreachable]})
    if untargeted and not partial:
        raise CheckError(f"vector suite {suite} ({table} cells): no configuration covers or exhausts cell(s) "
                         f"{', '.join(untargeted)} (add them to a configuration's cells)")
    cov = {"suite": suite, "partial": partial, "table": table, "cells": rows,
           "scenarios": sum(len(scenarios_of(r)) for r in results),
           "configs": {r.config: {"covered": r.covered, "unreachable": r.unreachable,
                                  "iterations": r.iterations, "seconds": round(r.seconds, 1),
                                  "exhaustive": r.exhaustive} for r in results}}
    (out / "coverage.json").write_text(json.dumps(cov, indent=2) + "\n")
    return cov


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="vectors")
    ap.add_argument("--only", nargs="*", default=None, help="configuration names of the suite")
    ap.add_argument("--set", nargs="*", default=[], metavar="CONST=VALUE",
                    help="override model constants (e.g. MUTANT=M_SA_GET_TO_S)")
    ap.add_argument("--model", type=Path, default=check.MODEL)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--cells", nargs="*", default=None, metavar="CELL",
                    help="target only these cells (exploration, tests)")
    ap.add_argument("--recheck", type=Path, default=None, metavar="COVERAGE",
                    help="target only the cells this coverage.json lists as unreachable (verify-deep)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    try:
        checks = check.load_checks()
        vec = checks.get("vectors")
        if not isinstance(vec, dict) or not isinstance(vec.get("suites"), dict):
            raise CheckError(f"{check.CHECKS}: missing object field 'vectors' with 'suites'")
        if args.suite not in vec["suites"]:
            raise CheckError(f"unknown vector suite {args.suite!r} (known: {', '.join(vec['suites'])})")
        entries = vec["suites"][args.suite]
        if args.only is not None:
            bad = [n for n in args.only if n not in entries]
            if bad:
                raise CheckError(f"not in vector suite {args.suite}: {', '.join(bad)} "
                                 f"(known: {', '.join(entries)})")
            entries = {n: entries[n] for n in args.only}
        overrides = {}
        for kv in args.set:
            if "=" not in kv:
                raise CheckError(f"--set {kv!r}: expected CONST=VALUE")
            k, v = kv.split("=", 1)
            overrides[k] = v
        source = args.model.read_text()
        ids = model_cells(source, str(args.model))
        core = set(cells.ids())
        recheck = None
        if args.cells is not None:
            bad = [c for c in args.cells if c not in ids]
            if bad:
                raise CheckError(f"--cells: unknown cell(s) {', '.join(bad)} (known: {', '.join(ids)})")
            recheck = set(args.cells)
        if args.recheck is not None:
            try:
                prior = vectors_io.load_coverage(args.recheck)
            except vectors_io.VectorError as e:
                raise CheckError(str(e)) from None
            recheck = {c["cell"] for c in prior["cells"] if c["status"] == "unreachable"}
            if not recheck:
                print(f"vectors: {args.recheck} lists no unreachable cell: nothing to re-check")
                return 0
            print(f"vectors: re-checking {len(recheck)} unreachable cell(s): {', '.join(sorted(recheck))}")
        jobs = []
        for name, e in entries.items():
            cfg = e.get("config", name)
            if cfg not in checks["configs"]:
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}: "
                                 f"unknown configuration {cfg!r}")
            ms = e.get("ms", False)
            if not isinstance(ms, bool):
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}.ms: expected true/false")
            targets = e.get("cells", "all")
            targets = [c for c in ids if ms or c in core] if targets == "all" else targets
            bad = [c for c in targets if c not in ids]
            if bad:
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}.cells: "
                                 f"unknown cell(s) {bad}")
            consts = {**checks["configs"][cfg]["constants"], **e.get("constants", {}), **overrides}
            if ms and ms_capable(consts):
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}.ms: "
                                 f"{ms_capable(consts)}")
            if not ms and any(c not in core for c in targets):
                raise CheckError(f"{check.CHECKS}: vectors.suites.{args.suite}.{name}.cells: memory-server "
                                 "cells need \"ms\": true")
            chosen = [c for c in ids if c in targets and (recheck is None or c in recheck)]
            if chosen:
                jobs.append((name, consts, chosen, e.get("timeout", checks["configs"][cfg].get("timeout", 600)), ms))
        print(f"vectors: {len(jobs)} configuration(s), {len(core)} core cells (rtl/CORE.md), "
              f"{len(ids) - len(core)} memory-server cells (rtl/MEMSERVER.md)", flush=True)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futs = [pool.submit(generate, n, k, t, source, args.out, to, ms) for n, k, t, to, ms in jobs]
            results = [f.result() for f in futs]
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        cov = write_outputs(results, args.out, args.suite,
                            partial=args.only is not None or recheck is not None)
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in results:
        print(f"  {r.config}: {len(r.covered)} covered, {len(r.unreachable)} unreachable"
              f"{' (exhaustive)' if r.exhaustive else ''} in {r.iterations} iteration(s), "
              f"{r.seconds:.0f} s" + (f": {', '.join(r.unreachable)}" if r.unreachable else ""))
    ncov = sum(1 for c in cov["cells"] if c["status"] == "covered")
    unr = [c["cell"] for c in cov["cells"] if c["status"] == "unreachable"]
    exh = [r.config for r in results if r.exhaustive]
    if "ms" in cov:
        m = cov["ms"]
        mcov = sum(1 for c in m["cells"] if c["status"] == "covered")
        munr = [c["cell"] for c in m["cells"] if c["status"] == "unreachable"]
        print(f"vectors: memory server: {m['scenarios']} scenarios, {mcov}/{len(m['cells'])} cells covered"
              + (f", unreachable: {', '.join(munr)}" if munr else ""))
    print(f"vectors: {cov['scenarios']} scenarios, {ncov}/{len(cov['cells'])} cells covered, "
          f"{len(unr)} unreachable in {', '.join(exh) or '(no exhaustive run)'}"
          + (f" ({', '.join(unr)})" if unr else "") + f"; {time.monotonic() - t0:.0f} s "
          f"-> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
