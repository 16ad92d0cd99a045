#!/usr/bin/env python3
"""History checker for the store contract P1-P4 (docs/PROTOCOL.md) (stdlib only).

Written once for every part of the project that runs workflows against a memory server: the
cocotb testbench of the RTL memory server (tests/rtl/test_ms_workflows.py), the trace-replay
simulator and the CXL emulation. Each records a *history*: what the scheduler and the compute
servers did and saw, one JSON object per line (JSON Lines), in the order the events happened.

    python -m apta.history run.jsonl [more.jsonl ...]     # exit 0 clean, 1 violations, 2 malformed
    from apta.history import check_file, check_events            # -> Report (violations, stats)

History format (version 1)
--------------------------
Every line is a JSON object with an ``ev`` field; ``t`` (a number: cycle, ns, ...) is optional on
every event and only printed. Lines that are blank or start with ``#`` are skipped. Names
(servers, functions, runs, objects) are strings; versions are strings or integers.

``{"ev": "meta", "format": 1, "source": "rtl", "initial": {"x": 0}, "commits": true, "floor": "place"}``
    Optional, first line only. ``initial``: the version each object holds before the history
    (default ``0`` for every object). ``commits``: true if the source records a ``commit`` event
    for every put the memory server committed (then the commit events are the version order);
    false (default) if only the writers' acks are known (then the order of ``put_ack`` lines is the
    version order of acked puts, and an unacked put is judged by its time window, see below).
    ``floor``: ``"place"`` (default; docs/PROTOCOL.md P1: the versions committed before the function was
    *placed*) or ``"ready"`` (spec/tla GetFresh: committed before the last of its DAG predecessors
    reported ``done``; use it for schedulers whose view may lag).
``{"ev": "place", "run": "f2#1", "fn": "f2", "server": "c1", "epoch": 1, "after": ["f1"], "inputs": ["x"]}``
    The scheduler placed a run of function ``fn`` on ``server`` in ``epoch``. ``run`` names this
    execution (a function re-executed after a crash gets a new run). ``after``: its DAG
    predecessors (function names); ``inputs``: its declared inputs (optional, list of objects).
``{"ev": "get", "id": "g7", "run": "f2#1", "obj": "x"}``
    A get invoked by a run (the run's server and epoch are implied). ``min`` (optional):
    the get names a version, the object's commit count it needs (0 = its initial contents, 1 =
    after its first commit in this history, ...): a versioned get of a function placed early.
``{"ev": "get_ret", "id": "g7", "lines": [3, 3, 3], "hit": false}``
    The get returned. Exactly one of: ``lines`` (the version found on every line of the returned
    object, in line order: P2 is checked on them), ``version`` (one version for the whole object,
    when the source cannot tell lines apart), ``digest`` (a digest of the data; matched against
    the ``digest`` of the puts and of ``meta.digests`` for initial contents). ``hit`` optional.
    A versioned get may instead return ``"cancelled": true`` (GetCancelled: no put will make the
    version it named), with none of those.
``{"ev": "put", "id": "p3", "run": "f2#1", "obj": "x", "version": 5, "digest": "..."}``
    A put invoked: it writes version ``version`` (unique per object; ``digest`` optional).
    A retry of the same transaction is not a new put.
``{"ev": "put_ack", "id": "p3", "seq": 12}``
    The writer received the commit response. ``seq``: the control plane's commit sequence
    number, optional.
``{"ev": "commit", "obj": "x", "version": 5, "seq": 12}``
    The memory server committed this version (seen at the memory server, e.g. the commit
    response leaving it, even if the writer then crashed). Only with ``meta.commits``.
``{"ev": "done", "run": "f2#1"}``                    the run reported completion
``{"ev": "crash", "server": "c1"}``                  the server lost its state (cache, runs, ops)
``{"ev": "fence", "server": "c1", "epoch": 1}``      the failure detector fenced it in that epoch
``{"ev": "rejoin", "server": "c1", "epoch": 2}``     it rejoined in a new epoch, empty cache
``{"ev": "final", "obj": "x", "lines": [5, 5]}``     memory content at the end (``lines``, ``version`` or ``digest``)
``{"ev": "end"}``                                    the history is complete (P4 is checked only then)

Properties (each violation names the property, the line, the object and the versions)
--------------------------------------------------------------------------------------
P1  A get by a run placed after a put of o committed returns that version or a newer committed
    one: the returned version must be committed (a commit event, or an ack, anywhere in the
    history; or the initial version) and not older, in o's version order, than the *floor*: the
    newest version of o committed before the run's place line (or its ready point). A put is
    committed before line n if its ``commit`` (with meta.commits) or ``put_ack`` is before n.
    Without commit events, an unacked put's version is accepted if it was invoked before the get
    returned and its writer was not fenced before the floor's put was invoked.
P2  No torn object: every line of a returned object carries one version (``lines``), or the
    digest is the digest of one put / of the initial contents (``digest``). Checked on ``final``
    too.
P3  No lost commit: every acked put is in the version order (with meta.commits: it has a commit
    event before its ack; no version commits twice; no put of a fenced epoch commits after the
    fence), and the final memory of every object holds the latest committed version (without
    commit events: the last acked one, or an unacked put that may have committed later).
P4  Every get and put invoked by a server that stays live and unfenced completes, and every run
    placed on such a server reports ``done`` (checked only if the history has ``end``).
V1  A versioned get (``min``) returns a committed version whose commit count (its place in the
    object's committed order, plus one; the initial version: 0) is at least ``min``; it is
    answered ``cancelled`` only while fewer than ``min`` commits of the object are in the history
    (spec/murphi V1_get_returns_required_version; the held get's completion is P4).

A malformed line (bad JSON, unknown event, missing or mistyped field, unknown id/run, an event of a
crashed server) raises HistoryError naming file, line and field.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

FORMAT = 1


class HistoryError(ValueError):
    def __init__(self, path, line, fld, text):
        super().__init__(f"{path}:{line}: {fld}: {text}")
        self.path, self.line, self.field, self.text = path, line, fld, text


@dataclass
class Violation:
    prop: str       # "P1" .. "P4"
    line: int       # the line of the offending event
    obj: str | None
    versions: dict  # what was returned / expected
    text: str

    def __str__(self):
        o = f" object {self.obj!r}" if self.obj is not None else ""
        return f"line {self.line}: {self.prop}:{o}: {self.text} {json.dumps(self.versions, sort_keys=True, default=str)}"


@dataclass
class Report:
    path: str
    violations: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    @property
    def ok(self):
        return not self.violations

    def props(self):
        return sorted({v.prop for v in self.violations})

    def __str__(self):
        head = f"{self.path}: " + ("ok" if self.ok else f"{len(self.violations)} violation(s)")
        head += " " + json.dumps(self.stats, sort_keys=True)
        return "\n".join([head] + [f"{self.path}:{v}" for v in self.violations])


VER = (str, int)
SCHEMA = {  # ev -> (required {field: types}, optional {field: types})
    "meta": ({}, {"format": int, "source": str, "initial": dict, "digests": dict, "commits": bool,
                  "floor": str, "servers": list, "objects": dict, "workflow": str, "seed": int}),
    "place": ({"run": str, "fn": str, "server": str}, {"epoch": int, "after": list, "inputs": list}),
    "get": ({"id": VER, "run": str, "obj": str}, {"min": int}),
    "get_ret": ({"id": VER}, {"lines": list, "version": VER, "digest": str, "hit": bool, "cancelled": bool,
                              "len": int, "rhead": int}),   # len, rhead: trace validation (qemu-cxl)
    "put": ({"id": VER, "run": str, "obj": str, "version": VER}, {"digest": str, "lines": int}),
    "put_ack": ({"id": VER}, {"seq": int}),
    "commit": ({"obj": str, "version": VER}, {"seq": int, "server": str, "epoch": int}),
    "done": ({"run": str}, {}),
    "crash": ({"server": str}, {}),
    "fence": ({"server": str}, {"epoch": int}),
    "rejoin": ({"server": str, "epoch": int}, {}),
    "final": ({"obj": str}, {"lines": list, "version": VER, "digest": str}),
    "end": ({}, {}),
}
COMMON = {"ev": str, "t": (int, float)}


def _typename(t):
    return " or ".join(x.__name__ for x in t) if isinstance(t, tuple) else t.__name__


def parse_lines(lines, path="<history>"):
    """Validate every line; returns [(line_no, event dict)]."""
    out = []
    for n, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        try:
            e = json.loads(s)
        except json.JSONDecodeError as x:
            raise HistoryError(path, n, "(line)", f"invalid JSON: {x.msg}") from None
        if not isinstance(e, dict):
            raise HistoryError(path, n, "(line)", "must be a JSON object")
        ev = e.get("ev")
        if ev not in SCHEMA:
            raise HistoryError(path, n, "ev", f"unknown event {ev!r} (known: {', '.join(SCHEMA)})")
        req, opt = SCHEMA[ev]
        for k, t in req.items():
            if k not in e:
                raise HistoryError(path, n, k, f"missing in {ev!r} event")
        for k, v in e.items():
            t = req.get(k) or opt.get(k) or COMMON.get(k)
            if t is None:
                raise HistoryError(path, n, k, f"unknown field of {ev!r} (known: {', '.join(sorted({**req, **opt}))}, t)")
            if not isinstance(v, t) or (isinstance(v, bool) and t in (int, VER)):
                raise HistoryError(path, n, k, f"must be {_typename(t)}, got {json.dumps(v)}")
        if ev == "get" and e.get("min", 0) < 0:
            raise HistoryError(path, n, "min", "must be a commit count >= 0")
        if ev == "get_ret" and e.get("cancelled"):
            if any(k in e for k in ("lines", "version", "digest")):
                raise HistoryError(path, n, "cancelled", "a cancelled get returns no lines, version or digest")
        elif ev in ("get_ret", "final"):
            given = [k for k in ("lines", "version", "digest") if k in e]
            if len(given) != 1:
                raise HistoryError(path, n, "lines", "exactly one of lines, version, digest is required")
            if "lines" in e and (not e["lines"] or not all(isinstance(x, VER) and not isinstance(x, bool) for x in e["lines"])):
                raise HistoryError(path, n, "lines", "must be a non-empty list of versions")
        if ev == "meta":
            if out:
                raise HistoryError(path, n, "ev", "meta must be the first event")
            if e.get("format", FORMAT) != FORMAT:
                raise HistoryError(path, n, "format", f"unsupported format {e['format']} (this checker reads {FORMAT})")
            if e.get("floor", "place") not in ("place", "ready"):
                raise HistoryError(path, n, "floor", "must be 'place' or 'ready'")
        if ev == "place":
            for k in ("after", "inputs"):
                if not all(isinstance(x, str) for x in e.get(k, [])):
                    raise HistoryError(path, n, k, "must be a list of names")
        out.append((n, e))
    return out


class _Op:
    __slots__ = ("kind", "id", "line", "run", "server", "epoch", "obj", "version", "digest", "done_line",
                 "ack_line", "commit_line", "min")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


def check_events(events, path="<history>") -> Report:
    """Check a parsed history (from parse_lines). Raises HistoryError on semantic malformations."""
    rep = Report(path)
    V = rep.violations
    meta = events[0][1] if events and events[0][1]["ev"] == "meta" else {}
    initial = meta.get("initial", {})
    digests = dict(meta.get("digests", {}))  # digest -> (obj, version) filled from puts too
    commits_mode = meta.get("commits", False)
    floor_mode = meta.get("floor", "place")

    def init_ver(o):
        return initial.get(o, 0)

    runs = {}          # run -> place info dict
    ops = {}           # id -> _Op
    server = {}        # name -> {"up": bool, "fenced": bool, "epoch": int, "fence_line": int|None}
    puts_by_ver = {}   # (obj, version) -> _Op
    order = {}         # obj -> [(line, version)] committed order (commit events or acks)
    done_line = {}     # fn -> line of the latest done of one of its runs
    ended = False
    stats = {"events": len(events), "gets": 0, "puts": 0, "commits": 0, "crashes": 0, "fences": 0,
             "rejoins": 0, "runs": 0, "hits": 0}
    rep.stats = stats

    def err(n, fld, text):
        raise HistoryError(path, n, fld, text)

    def srv(name):
        return server.setdefault(name, {"up": True, "fenced": False, "epoch": None, "fence_line": None})

    def committed_order(o, before=None):
        """[(line, version)] committed strictly before line `before`."""
        lst = order.get(o, [])
        return lst if before is None else [x for x in lst if x[0] < before]

    # ---- first pass: structure, and the committed order --------------------------------------
    for n, e in events:
        ev = e["ev"]
        if ev == "meta" or ended and ev != "final":
            if ended:
                err(n, "ev", "event after 'end'")
            continue
        if ev == "place":
            if e["run"] in runs:
                err(n, "run", f"run {e['run']!r} placed twice")
            s = srv(e["server"])
            if not s["up"]:
                err(n, "server", f"server {e['server']!r} is crashed (no rejoin since)")
            runs[e["run"]] = dict(e, line=n, epoch=e.get("epoch", s["epoch"]), done=None, server_crash=None)
            stats["runs"] += 1
        elif ev in ("get", "put"):
            if e["id"] in ops:
                err(n, "id", f"operation id {e['id']!r} used twice")
            r = runs.get(e["run"])
            if r is None:
                err(n, "run", f"unknown run {e['run']!r} (no place event before)")
            if r["done"] is not None or r["server_crash"] is not None:
                err(n, "run", f"run {e['run']!r} already ended (done or its server crashed)")
            op = _Op(kind=ev, id=e["id"], line=n, run=e["run"], server=r["server"], epoch=r["epoch"], obj=e["obj"],
                     version=e.get("version"), digest=e.get("digest"), min=e.get("min"))
            ops[e["id"]] = op
            if ev == "put":
                stats["puts"] += 1
                k = (e["obj"], e["version"])
                if k in puts_by_ver or e["version"] == init_ver(e["obj"]):
                    err(n, "version", f"version {e['version']!r} of {e['obj']!r} written twice (versions are unique per object)")
                puts_by_ver[k] = op
                if op.digest:
                    digests[op.digest] = k
            else:
                stats["gets"] += 1
        elif ev in ("get_ret", "put_ack"):
            op = ops.get(e["id"])
            want = "get" if ev == "get_ret" else "put"
            if op is None or op.kind != want:
                err(n, "id", f"no {want} with id {e['id']!r} before this line")
            if op.done_line is not None:
                err(n, "id", f"{want} {e['id']!r} completed twice")
            if runs[op.run]["server_crash"] is not None:
                err(n, "id", f"{want} {e['id']!r} completes after its server crashed")
            op.done_line = n
            if ev == "get_ret":
                if e.get("cancelled") and op.min is None:
                    err(n, "cancelled", f"get {e['id']!r} names no version (min), so it cannot be cancelled")
                runs_ret = e
                op.version = runs_ret  # the return event, judged in the second pass
                stats["hits"] += int(bool(e.get("hit")))
            else:
                op.ack_line = n
                if not commits_mode:
                    order.setdefault(op.obj, []).append((n, op.version))
        elif ev == "commit":
            k = (e["obj"], e["version"])
            stats["commits"] += 1
            if not commits_mode:
                err(n, "ev", "commit events need meta.commits = true")
            p = puts_by_ver.get(k)
            if p is None:
                err(n, "version", f"commit of version {e['version']!r} of {e['obj']!r}, which no put writes")
            if p.commit_line is not None:
                V.append(Violation("P3", n, e["obj"], {"version": e["version"], "first_commit_line": p.commit_line},
                                   "a version committed twice"))
                continue
            p.commit_line = n
            s = server.get(p.server)
            if s and s["fence_line"] is not None and s["fence_line"] > p.line:
                V.append(Violation("P3", n, e["obj"], {"version": e["version"], "put_line": p.line,
                                                       "fence_line": s["fence_line"]},
                                   f"a put of {p.server} (epoch {p.epoch}) committed after {p.server} was fenced"))
            order.setdefault(e["obj"], []).append((n, e["version"]))
        elif ev == "done":
            r = runs.get(e["run"])
            if r is None:
                err(n, "run", f"unknown run {e['run']!r}")
            if r["done"] is not None or r["server_crash"] is not None:
                err(n, "run", f"run {e['run']!r} already ended")
            open_ops = [o.id for o in ops.values() if o.run == e["run"] and o.done_line is None]
            if open_ops:
                err(n, "run", f"run {e['run']!r} reports done with operations still open: {open_ops}")
            r["done"] = n
            done_line[r["fn"]] = n
        elif ev == "crash":
            s = srv(e["server"])
            if not s["up"]:
                err(n, "server", f"server {e['server']!r} crashed twice without rejoin")
            s["up"] = False
            stats["crashes"] += 1
            for r in runs.values():
                if r["server"] == e["server"] and r["done"] is None and r["server_crash"] is None:
                    r["server_crash"] = n
        elif ev == "fence":
            s = srv(e["server"])
            s["fenced"], s["fence_line"] = True, n
            stats["fences"] += 1
            for r in runs.values():  # a fenced server's runs are abandoned (re-executed elsewhere)
                if r["server"] == e["server"] and r["done"] is None and r["server_crash"] is None:
                    r["server_crash"] = n
        elif ev == "rejoin":
            s = srv(e["server"])
            if s["epoch"] is not None and e["epoch"] <= s["epoch"]:
                err(n, "epoch", f"rejoin of {e['server']!r} in epoch {e['epoch']} not newer than {s['epoch']}")
            s.update(up=True, fenced=False, epoch=e["epoch"])
            stats["rejoins"] += 1
        elif ev == "final":
            pass
        elif ev == "end":
            ended = True

    # acked puts must be in the version order (commit mode)
    if commits_mode:
        for op in ops.values():
            if op.kind == "put" and op.ack_line is not None and (op.commit_line is None or op.commit_line > op.ack_line):
                V.append(Violation("P3", op.ack_line, op.obj, {"version": op.version, "put_line": op.line,
                                                               "commit_line": op.commit_line},
                                   f"put {op.id!r} was acked but " + ("never committed" if op.commit_line is None
                                                                      else "committed only after its ack")))

    def rank(o, v):
        """position of v in o's committed order (-1: the initial version), None if never committed."""
        if v == init_ver(o):
            return -1
        for i, (_, x) in enumerate(order.get(o, [])):
            if x == v:
                return i
        return None

    def decode(o, e, n, what):
        """(version or None, torn?) of a returned object / final memory."""
        if "lines" in e:
            vs = e["lines"]
            if any(x != vs[0] for x in vs):
                return None, True
            return vs[0], False
        if "version" in e:
            return e["version"], False
        d = e["digest"]
        if d in digests:
            do, dv = digests[d] if isinstance(digests[d], tuple) else (o, digests[d])
            if do != o:
                return None, True
            return dv, False
        return None, True

    def floor_line(r):
        if floor_mode == "ready":
            return max([done_line_before(a, r["line"]) for a in r.get("after", [])] + [0]) + 1
        return r["line"]

    def done_line_before(fn, line):
        best = 0
        for x in runs.values():
            if x["fn"] == fn and x["done"] is not None and x["done"] < line:
                best = max(best, x["done"])
        return best

    # ---- second pass: P1, P2 on every get ----------------------------------------------------
    for op in ops.values():
        if op.kind != "get" or op.done_line is None:
            continue
        e = op.version
        r = runs[op.run]
        if e.get("cancelled"):
            made = len(committed_order(op.obj, op.done_line))
            if made >= op.min:
                V.append(Violation("V1", op.done_line, op.obj, {"min": op.min, "commits_before": made},
                                   f"get {op.id!r} by {op.run} was cancelled although {made} commits of "
                                   f"{op.obj!r} (it named {op.min}) were made before"))
            continue
        v, torn = decode(op.obj, e, op.done_line, "get")
        shown = {k: e[k] for k in ("lines", "version", "digest") if k in e}
        if torn:
            V.append(Violation("P2", op.done_line, op.obj, {"returned": shown},
                               f"get {op.id!r} by {op.run} on {r['server']} returned a torn object "
                               "(lines of different puts, or data of no put)"))
            continue
        fl = floor_line(r)
        before = committed_order(op.obj, fl)
        floor_v = before[-1][1] if before else init_ver(op.obj)
        floor_rank = len(before) - 1
        rk = rank(op.obj, v)
        if op.min is not None and rk is not None and rk + 1 < op.min:
            V.append(Violation("V1", op.done_line, op.obj, {"returned": v, "commits": rk + 1, "min": op.min},
                               f"get {op.id!r} by {op.run} named commit {op.min} of {op.obj!r} but returned version "
                               f"{v!r}, commit {rk + 1}"))
            continue
        if rk is None:
            p = puts_by_ver.get((op.obj, v))
            if p is None:
                V.append(Violation("P1", op.done_line, op.obj, {"returned": v, "floor": floor_v},
                                   f"get {op.id!r} returned version {v!r}, which no put wrote"))
                continue
            if commits_mode:
                V.append(Violation("P1", op.done_line, op.obj, {"returned": v, "floor": floor_v},
                                   f"get {op.id!r} returned version {v!r}, which never committed"))
                continue
            # unacked, no commit events: it may have committed, after the floor, unless the
            # get returned before the put was invoked or its writer was fenced before the floor's put
            fp = puts_by_ver.get((op.obj, floor_v))
            s_fence = [n for n, ev in events if ev["ev"] == "fence" and ev["server"] == p.server and n > p.line]
            if p.line > op.done_line or (fp and s_fence and s_fence[0] < fp.line):
                V.append(Violation("P1", op.done_line, op.obj, {"returned": v, "floor": floor_v},
                                   f"get {op.id!r} returned unacked version {v!r}, which cannot have committed "
                                   "after the floor"))
            continue
        if rk < floor_rank:
            where = before[-1][0]
            V.append(Violation("P1", op.done_line, op.obj, {"returned": v, "floor": floor_v,
                                                            "floor_committed_line": where, "placed_line": r["line"]},
                               f"get {op.id!r} by {op.run} on {r['server']} returned version {v!r}, older than "
                               f"version {floor_v!r} committed (line {where}) before the run was "
                               + ("ready" if floor_mode == "ready" else "placed") + f" (line {fl})"))

    # ---- P3: final memory --------------------------------------------------------------------
    finals = [(n, e) for n, e in events if e["ev"] == "final"]
    for n, e in finals:
        o = e["obj"]
        v, torn = decode(o, e, n, "final")
        shown = {k: e[k] for k in ("lines", "version", "digest") if k in e}
        lst = order.get(o, [])
        latest = lst[-1][1] if lst else init_ver(o)
        if torn:
            V.append(Violation("P2", n, o, {"memory": shown, "latest": latest},
                               "memory holds a torn object (lines of different puts)"))
            continue
        if v == latest:
            continue
        p = puts_by_ver.get((o, v))
        if not commits_mode and p is not None and p.ack_line is None:
            # an unacked put may have committed after the last acked one, unless its writer was
            # fenced before the last acked put was invoked
            last = puts_by_ver.get((o, latest))
            fences = [m for m, ev in events if ev["ev"] == "fence" and ev["server"] == p.server and m > p.line]
            if last is None or not fences or fences[0] > last.line:
                continue
        V.append(Violation("P3", n, o, {"memory": v, "latest_committed": latest,
                                        "latest_line": lst[-1][0] if lst else None},
                           f"memory holds version {v!r}, not the latest committed {latest!r}"))
    stats["objects_final"] = len(finals)

    # ---- P4 ------------------------------------------------------------------------------------
    if ended:
        for op in ops.values():
            r = runs[op.run]
            if op.done_line is None and r["server_crash"] is None:
                V.append(Violation("P4", op.line, op.obj, {"version": op.version} if op.kind == "put" else {},
                                   f"{op.kind} {op.id!r} of {op.run} on live, unfenced {r['server']} never completed"))
        for name, r in runs.items():
            if r["done"] is None and r["server_crash"] is None:
                V.append(Violation("P4", r["line"], None, {}, f"run {name} on live, unfenced {r['server']} never reported done"))
    stats["p4_checked"] = ended
    V.sort(key=lambda x: (x.line, x.prop))
    return rep


def check_lines(lines, path="<history>") -> Report:
    return check_events(parse_lines(lines, path), path)


def check_file(path) -> Report:
    with open(path) as fh:
        return check_lines(fh.readlines(), str(path))


class Recorder:
    """Writes a history (used by the runners): rec.emit("get", id=..., run=..., obj=...)."""

    def __init__(self, meta: dict | None = None):
        self.events = []
        if meta is not None:
            self.emit("meta", format=FORMAT, **meta)

    def emit(self, ev, **kw):
        e = {"ev": ev}
        e.update(kw)
        self.events.append(e)
        return e

    def lines(self):
        return [json.dumps(e, sort_keys=False) for e in self.events]

    def write(self, path):
        with open(path, "w") as fh:
            fh.write("\n".join(self.lines()) + "\n")

    def check(self, path="<recorded>") -> Report:
        return check_lines(self.lines(), path)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    rc = 0
    for p in argv:
        try:
            rep = check_file(p)
        except HistoryError as e:
            print(f"malformed: {e}")
            rc = max(rc, 2)
            continue
        print(rep)
        if not rep.ok:
            rc = max(rc, 1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
