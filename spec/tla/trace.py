#!/usr/bin/env python3
"""Trace validation: is an event log of the RTL a behaviour of spec/tla/Apta.tla? (README.md,
"Trace validation".)

    python3 spec/tla/trace.py build/trace/ms/ms3/pipeline-s1.ndjson [more logs...]
    python3 spec/tla/trace.py --summary build/trace/ms/ms3/*.ndjson      # + one summary line

For each log (ndjson, written by rtl/tools/ms_trace.py; the format is its module docstring) this
writes the module TraceLog (the log and the constants it implies) into build/trace/tla/<log>/, runs
TLC (check.py's jar and invocation, one worker: the run is a breadth-first search of the behaviours
that match a prefix of the log) on MCTraceApta with that module on its library path, and prints
one line: `accepted` (a behaviour of the spec shows every event, in order) or `rejected` with the
first event no action can match (`log step N (<event>) has no matching action`), plus the log's
length, TLC's states and seconds.

Exit status: 0 every log accepted, 1 some log rejected, 2 a malformed log (the error names the
file, the line and the field), 3 TLC failed (its error is printed).

What is translated here (and nothing else): versions are renumbered per object in the order
their commits appear in the log (the spec's version k is the k-th commit; version 0 is the initial
object; a version no logged commit wrote, or garbage, becomes NOT_COMMITTED, which no spec value
equals); epochs are counted from each server's epoch at the start of the log; MaxCrash and MaxFalse
are the log's crashes and fences of live servers; when the log has as many crashes as servers, an
idle server that never acts is added (Apta.tla assumes one server never crashes).
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

from apta.tla import check  # (the TLC jar, java command, TLC run and its output parsing)

FORMAT = "apta-trace/1"
MODULE = "MCTraceApta.tla"
CFG = "MCTraceApta.cfg"
NOT_COMMITTED = 1000000          # a line whose version no logged commit wrote (or garbage)
IDLE = "idle"                    # the server added when every logged server crashed once
REACHED = re.compile(r'<<"trace-reached", (\d+)>>')

STR, INT, BOOL, LIST, OPT_STR, OPT_INT = "str", "int", "bool", "list", "str|null", "int|null"
EVENTS = {
    "place": {"fn": OPT_STR, "server": STR, "epoch": INT},
    "get": {"fn": OPT_STR, "server": STR, "epoch": INT, "obj": STR, "hit": BOOL, "lines": LIST},
    "put_prepare": {"fn": OPT_STR, "server": STR, "epoch": INT, "obj": STR, "txn": INT, "version": OPT_INT},
    "put_line": {"fn": OPT_STR, "server": STR, "epoch": INT, "obj": STR, "txn": INT, "line": INT, "size": INT},
    "commit": {"fn": OPT_STR, "server": STR, "epoch": INT, "obj": STR, "txn": OPT_INT, "version": OPT_INT},
    "bisnp": {"server": STR, "epoch": INT, "obj": STR},
    "snp_recv": {"server": STR, "epoch": INT, "obj": STR, "acked": BOOL},
    "birsp": {"server": STR, "epoch": INT, "obj": STR},
    "done": {"fn": OPT_STR, "server": STR},
    "crash": {"server": STR},
    "fence": {"server": STR, "epoch": INT},
    "rejoin": {"server": STR, "epoch": INT},
    "refused": {"server": STR, "epoch": INT, "obj": STR, "msg": STR},
    "final": {"obj": STR, "lines": LIST},
}
META = {"format": STR, "servers": LIST, "objects": "dict", "functions": "dict", "rule": STR,
        "epochs": LIST, "dir_entries": INT}


class TraceLogError(Exception):
    """A malformed log: str() is `file:line: field: what is wrong`."""


def _type_ok(v, t) -> bool:
    if t == STR:
        return isinstance(v, str)
    if t == INT:
        return isinstance(v, int) and not isinstance(v, bool)
    if t == BOOL:
        return isinstance(v, bool)
    if t == LIST:
        return isinstance(v, list)
    if t == "dict":
        return isinstance(v, dict)
    if t == OPT_STR:
        return v is None or isinstance(v, str)
    if t == OPT_INT:
        return v is None or (isinstance(v, int) and not isinstance(v, bool))
    raise AssertionError(t)


def load_log(path: Path) -> tuple[dict, list[dict]]:
    """(meta, events) of an ndjson log; TraceLogError names file, line and field."""
    meta, events = None, []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            where = f"{path}:{n}"
            try:
                e = json.loads(raw)
            except json.JSONDecodeError as x:
                raise TraceLogError(f"{where}: not JSON ({x.msg} at column {x.colno})") from None
            if not isinstance(e, dict):
                raise TraceLogError(f"{where}: an event must be a JSON object, got {type(e).__name__}")
            ev = e.get("ev")
            if meta is None:
                if ev != "meta":
                    raise TraceLogError(f"{where}: ev: the first line must be the meta event, got {ev!r}")
                for k, t in META.items():
                    if k not in e:
                        raise TraceLogError(f"{where}: {k}: missing in meta")
                    if not _type_ok(e[k], t):
                        raise TraceLogError(f"{where}: {k}: must be {t}, got {e[k]!r}")
                if e["format"] != FORMAT:
                    raise TraceLogError(f"{where}: format: {e['format']!r}, this reader knows {FORMAT!r}")
                if e.get("core_probe") is False:
                    raise TraceLogError(f"{where}: core_probe: the log has no get/commit decisions "
                                        "(the core's result queue was not visible: a netlist?)")
                meta = e
                continue
            if ev not in EVENTS:
                raise TraceLogError(f"{where}: ev: unknown event {ev!r} (known: {', '.join(EVENTS)})")
            for k, t in EVENTS[ev].items():
                if k not in e:
                    raise TraceLogError(f"{where}: {k}: missing in {ev}")
                if not _type_ok(e[k], t):
                    raise TraceLogError(f"{where}: {k}: must be {t} in {ev}, got {e[k]!r}")
            if "server" in e and e["server"] not in meta["servers"]:
                raise TraceLogError(f"{where}: server: {e['server']!r} is not one of {meta['servers']}")
            if "obj" in e and e["obj"] not in meta["objects"]:
                raise TraceLogError(f"{where}: obj: {e['obj']!r} is not one of {sorted(meta['objects'])}")
            e["_line"] = n
            events.append(e)
    if meta is None:
        raise TraceLogError(f"{path}:1: ev: empty log (no meta line)")
    return meta, events


# ---- TLA+ values ------------------------------------------------------------------------------------
def tla(v) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "<<" + ", ".join(tla(x) for x in v) + ">>"
    if isinstance(v, (set, frozenset)):
        return "{" + ", ".join(tla(x) for x in sorted(v)) + "}"
    if isinstance(v, dict):
        return "[" + ", ".join(f"{k} |-> {tla(x)}" for k, x in v.items()) + "]"
    raise TypeError(v)


def tla_fun(d: dict) -> str:
    return "(" + " @@ ".join(f"{tla(k)} :> {tla(v)}" for k, v in d.items()) + ")" if d else "<<>>"


def _versions(meta: dict, events: list[dict]) -> list[dict]:
    """The events with every commit's version fixed (a core log has none: its commit order) and
    the function mapping an RTL version of an object to the spec's (the k-th commit is k)."""
    order: dict[str, dict[int, int]] = {o: {} for o in meta["objects"]}   # object -> RTL version -> spec
    data = meta.get("data", True)        # False (the core alone): no data, a commit's version is its order
    commits: dict[str, int] = {o: 0 for o in meta["objects"]}
    out = []
    for e in events:
        if e["ev"] == "commit" and not data:
            commits[e["obj"]] += 1
            e = dict(e, version=commits[e["obj"]])
        if e["ev"] == "commit" and e["version"] is not None and e["version"] not in order[e["obj"]]:
            order[e["obj"]][e["version"]] = len(order[e["obj"]]) + 1
        out.append(e)

    def ver(o, v):
        if v == 0:
            return 0
        return order[o].get(v, NOT_COMMITTED) if isinstance(v, int) and not isinstance(v, bool) else NOT_COMMITTED
    return out, ver


def slotted(meta: dict) -> bool:
    """A log whose functions have no DAG and do one request each (the core stress: a function
    per request) names them by slots that are reused once a function retires (README.md, "Long
    logs"): the spec's state holds the live functions only."""
    return meta.get("data", True) is False and all(not d["after"] for d in meta["functions"].values())


def _retirements(events: list[dict]) -> dict[int, list[str]]:
    """Event index -> functions retired right after it: after a function's get or commit (its
    work is done), or, for one that never got there (a stalled request whose server was fenced:
    the spec failed it, and the log never names it again), after that fence."""
    last, done, server = {}, set(), {}
    for k, e in enumerate(events):
        f = e.get("fn")
        if f is None:
            continue
        last[f] = k
        if e["ev"] == "place":
            server[f] = e["server"]
        if e["ev"] in ("get", "commit"):
            done.add(f)
    fences: dict[str, list[int]] = {}
    for k, e in enumerate(events):
        if e["ev"] == "fence":
            fences.setdefault(e["server"], []).append(k)
    at: dict[int, list[str]] = {}
    for f, k in last.items():
        if f in done:
            at.setdefault(k, []).append(f)
        else:
            nxt = [j for j in fences.get(server.get(f), []) if j > k]
            if nxt:
                at.setdefault(nxt[0], []).append(f)
    return at


def records(meta: dict, events: list[dict]) -> tuple[list[dict], dict]:
    """The log as the spec reads it: one record per event, with `_step` (the event's 1-based
    index in the log), absolute epochs (`_abs`: renumbered per chunk by module()), versions
    renumbered; for a slotted log, functions renamed to slots and `retire` records inserted.
    Also the functions (name -> reads, writes, after) the records name."""
    events, ver = _versions(meta, events)
    slots = slotted(meta)
    retire = _retirements(events) if slots else {}
    fns = meta["functions"]
    free: dict[tuple, list[str]] = {}
    used: dict[tuple, int] = {}
    name: dict[str, str] = {}
    funcs: dict[str, dict] = {} if slots else dict(fns)
    recs = []
    for k, e in enumerate(events):
        r = {kk: v for kk, v in e.items() if not kk.startswith("_") and kk != "cycle"}
        r["_step"] = k + 1
        if "fn" in r and r["fn"] is None:
            r["fn"] = "?"                       # no run on that server: matches no function
        elif "fn" in r and slots:
            f = r["fn"]
            if f not in name:
                d = fns.get(f, {"reads": [], "writes": [], "after": []})
                pool = ("g" if d["reads"] else "p", tuple(d["reads"] or d["writes"]))
                if free.get(pool):
                    name[f] = free[pool].pop()
                else:
                    used[pool] = used.get(pool, 0) + 1
                    name[f] = f"{pool[0]}_{'_'.join(pool[1])}_s{used[pool]}"   # a TLA+ record key
                    funcs[name[f]] = {"reads": d["reads"], "writes": d["writes"], "after": []}
            r["fn"] = name[f]
        if "lines" in r:
            r["lines"] = [ver(r["obj"], v) for v in r["lines"]]
        if e["ev"] == "commit":
            r["version"] = ver(r["obj"], r["version"]) if r["version"] is not None else NOT_COMMITTED
        r.pop("txn", None)
        if e["ev"] == "put_prepare":
            r.pop("version", None)
        recs.append(r)
        for f in retire.get(k, []):
            s = name[f]
            recs.append({"ev": "retire", "fn": s, "_step": k + 1})
            d = funcs[s]
            free.setdefault(("g" if d["reads"] else "p", tuple(d["reads"] or d["writes"])), []).append(s)
    return recs, funcs


def _live(recs: list[dict]) -> list[set]:
    """live[i]: the slots placed and not yet retired before record i."""
    live, cur = [], set()
    for r in recs:
        live.append(set(cur))
        if r["ev"] == "place":
            cur.add(r["fn"])
        elif r["ev"] == "retire":
            cur.discard(r["fn"])
    live.append(set(cur))
    return live


EPOCH_EVENTS = ("bisnp", "birsp", "snp_recv")   # may name an epoch older than the server's current one
OLD_EPOCH = 1000000          # a refused flit's epoch older than the chunk's base: not current, as before


def plan_chunks(meta: dict, recs: list[dict], size: int) -> list[dict]:
    """Split the records into chunks of at most `size` (a cut where no function is live if one is
    within the last half of the chunk, so that the carried states have no functions), each with the
    absolute epoch of every server that is its epoch 0 (`base`): the epoch at the cut, or an older one
    that a later BISnp/BIRsp/snp_recv names (what is older than every later such event is never read
    again, so the states carried over may drop it)."""
    servers = meta["servers"]
    live = _live(recs)
    cuts = [0]
    while len(recs) - cuts[-1] > size:
        t = cuts[-1] + size
        good = [i for i in range(t, cuts[-1] + size // 2, -1) if not live[i]]
        cuts.append(good[0] if good else t)
    cuts.append(len(recs))
    # the current epoch of every server before each record
    cur = dict(zip(servers, meta["epochs"]))
    epoch_at = []
    for r in recs:
        epoch_at.append(dict(cur))
        if r["ev"] == "rejoin":
            cur[r["server"]] = r["epoch"]
    epoch_at.append(dict(cur))
    suffix_min: list[dict] = [dict() for _ in range(len(recs) + 1)]
    m: dict[str, int] = {}
    for i in range(len(recs) - 1, -1, -1):
        r = recs[i]
        if r["ev"] in EPOCH_EVENTS:
            m[r["server"]] = min(m.get(r["server"], r["epoch"]), r["epoch"])
        suffix_min[i] = dict(m)
    chunks, base = [], dict(zip(servers, meta["epochs"]))
    for a, b in zip(cuts, cuts[1:]):
        if a > 0:
            base = {c: max(base[c], min(epoch_at[a][c], suffix_min[a].get(c, epoch_at[a][c]))) for c in servers}
        chunks.append({"first": a, "end": b, "base": dict(base), "live": live[a], "epochs": epoch_at[a]})
    return chunks


def module(meta: dict, recs: list[dict], funcs: dict, chunk: dict, prev_base: dict | None,
           start: list[str] | None, all_ends: bool) -> tuple[str, dict]:
    """The module TraceLog of one chunk (the whole log: one chunk from Init): its records with
    epochs counted from the chunk's base, the functions it names or carries, its fault bounds, the
    start states (TLA+ text printed by the previous chunk's TLC run) and Base."""
    base = chunk["base"]
    part = recs[chunk["first"]:chunk["end"]]
    out = []
    for r in part:
        r = {k: v for k, v in r.items() if not k.startswith("_")}
        if "epoch" in r:
            e = r["epoch"] - base.get(r["server"], 0)
            r["epoch"] = e if e >= 0 else OLD_EPOCH
        out.append(r)
    crashes = sum(r["ev"] == "crash" for r in recs)       # over the whole log: the idle server
    servers = list(meta["servers"])
    if crashes >= len(servers):
        servers.append(IDLE)
    c_crash = sum(r["ev"] == "crash" for r in part)
    c_fence = sum(r["ev"] == "fence" for r in part)
    # the epochs the spec's Epoch must hold (a refused flit's epoch only has to differ from the
    # current one: the stress's zombies carry any epoch, e.g. 65535 = -1 in 16 bits)
    top = max([r["epoch"] for r in out if "epoch" in r and r["ev"] != "refused" and r["epoch"] != OLD_EPOCH]
              + [0])
    if start:      # the carried states' epochs and messages reach the epochs at the cut
        top = max([top] + [e - base[c] for c, e in chunk["epochs"].items()])
    names = {r["fn"] for r in part if r.get("fn") in funcs} | set(chunk["live"])
    fns = {f: funcs[f] for f in sorted(names)} if chunk["first"] > 0 or chunk["end"] < len(recs) else funcs
    const = {
        "TLServer": set(servers), "TLObj": set(meta["objects"]), "TLFunc": set(fns),
        "TLMaxCrash": c_crash, "TLMaxFalse": max(0, c_fence - c_crash, top - c_crash),
        "TLDirCap": meta["dir_entries"], "TLDeclared": meta["rule"] != "all",
        "TLHiddenRecvInv": bool(meta.get("hidden_recv_inv", False)),
        "TLAllEnds": all_ends,
    }
    rel = {c: base.get(c, 0) - (prev_base or {}).get(c, 0) for c in servers}
    lines = ["---------------------------- MODULE TraceLog -----------------------------",
             f"\\* generated by spec/tla/trace.py from a {meta.get('source', '?')} log of "
             f"{meta['workflow'] if 'workflow' in meta else '?'} (seed {meta.get('seed', '?')}), "
             f"records {chunk['first'] + 1}-{chunk['end']} of {len(recs)}: do not edit",
             "EXTENDS TLC", "",
             "CONSTANTS NoVal, NoTxn, NoSrv, NoEp   \\* model values (MCTraceApta.cfg)", ""]
    for k, v in const.items():
        lines.append(f"{k} == {tla(v)}")
    lines.append(f"TLBase == {tla_fun(rel)}")
    lines.append(f"TLIn == {tla_fun({f: set(d['reads']) for f, d in fns.items()})}")
    lines.append(f"TLOut == {tla_fun({f: set(d['writes']) for f, d in fns.items()})}")
    lines.append(f"TLPred == {tla_fun({f: set(d['after']) for f, d in fns.items()})}")
    lines.append("TLStart == {" + ",\n  ".join(start or []) + "}")
    lines.append("TLLog == <<")
    lines.append(",\n".join("  " + tla(r) for r in out))
    lines.append(">>")
    lines.append("=" * 77)
    return "\n".join(lines) + "\n", const


def translate(meta: dict, events: list[dict]) -> tuple[str, dict]:
    """The module TraceLog for a whole log (one chunk from Init), and the constants it sets."""
    recs, funcs = records(meta, events)
    chunk = {"first": 0, "end": len(recs), "base": dict(zip(meta["servers"], meta["epochs"])), "live": set()}
    return module(meta, recs, funcs, chunk, None, None, False)


def describe(e: dict) -> str:
    """The event as JSON; a long list (a big get's lines) as its runs, "v xN, ...", so that the one
    line that differs shows."""
    def short(v):
        if not isinstance(v, list) or len(v) <= 8:
            return v
        runs = [f"{k} x{len(list(g))}" for k, g in itertools.groupby(v)]
        return f"{len(v)} values: " + ", ".join(runs[:8]) + (", ..." if len(runs) > 8 else "")
    return json.dumps({k: short(v) for k, v in e.items() if not k.startswith("_")})


END = '<<"trace-end",'


def end_states(out: str) -> list[str]:
    """The states TLC printed as matching the whole log (TraceProgress with AllEnds), as TLA+
    text, without duplicates (TLC prints a state each time a behaviour reaches it)."""
    seen, res, k = set(), [], 0
    while (k := out.find(END, k)) >= 0:
        i = out.index("[", k)
        depth, j = 0, i
        while True:
            ch = out[j]
            depth += (ch == "[") - (ch == "]")
            j += 1
            if depth == 0:
                break
        text = " ".join(out[i:j].split())
        if text not in seen:
            seen.add(text)
            res.append(text)
        k = j
    return res


_TOK = re.compile(r'\s*(\|->|:>|@@|<<|>>|[\[\](){},]|"(?:[^"\\]|\\.)*"|\d+|[A-Za-z_][A-Za-z0-9_]*)')


def parse_value(text: str):
    """A TLA+ value as TLC prints it (records, functions `k :> v @@ ...`, tuples, sets, strings,
    numbers, TRUE/FALSE, model values) -> ("rec", {k: v}) / ("fun", [(k, v)]) / ("tup", [v]) /
    ("set", [v]) / ("str", s) / ("int", n) / ("id", name)."""
    toks, k = [], 0
    while k < len(text):
        m = _TOK.match(text, k)
        if not m:
            if text[k:].strip() == "":
                break
            raise ValueError(f"TLC value: cannot read {text[k:k + 40]!r}")
        toks.append(m.group(1))
        k = m.end()
    pos = 0

    def val():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t == "[":
            d = {}
            while toks[pos] != "]":
                key = toks[pos]
                assert toks[pos + 1] == "|->", toks[pos:pos + 3]
                pos += 2
                d[key] = val()
                if toks[pos] == ",":
                    pos += 1
            pos += 1
            return ("rec", d)
        if t == "(":
            pairs = []
            while True:
                key = val()
                assert toks[pos] == ":>", toks[pos:pos + 3]
                pos += 1
                pairs.append((key, val()))
                t2 = toks[pos]
                pos += 1
                if t2 == ")":
                    return ("fun", pairs)
                assert t2 == "@@", t2
        if t in ("<<", "{"):
            close, items = (">>" if t == "<<" else "}"), []
            while toks[pos] != close:
                items.append(val())
                if toks[pos] == ",":
                    pos += 1
            pos += 1
            return ("tup" if t == "<<" else "set", items)
        if t.startswith('"'):
            return ("str", t[1:-1])
        if t.isdigit():
            return ("int", int(t))
        return ("id", t)
    v = val()
    return v


def print_value(v) -> str:
    kind, x = v
    if kind == "rec":
        return "[" + ", ".join(f"{k} |-> {print_value(y)}" for k, y in x.items()) + "]"
    if kind == "fun":
        return "(" + " @@ ".join(f"{print_value(k)} :> {print_value(y)}" for k, y in x) + ")" if x else "<<>>"
    if kind == "tup":
        return "<<" + ", ".join(print_value(y) for y in x) + ">>"
    if kind == "set":
        return "{" + ", ".join(print_value(y) for y in x) + "}"
    if kind == "str":
        return f'"{x}"'
    return str(x)


def _entries(v) -> list:
    """(key, value) pairs of a function value, whichever way TLC printed it."""
    kind, x = v
    if kind == "rec":
        return [(("str", k), y) for k, y in x.items()]
    if kind == "fun":
        return list(x)
    if kind == "tup":
        return [(("int", i + 1), y) for i, y in enumerate(x)]
    raise ValueError(f"not a function: {kind}")


def project(text: str, base: dict, funcs: set) -> str:
    """An end state reduced to what the next chunk's FromState reads (Base: the next chunk's epoch
    0 of each server in this chunk's numbering; funcs: the next chunk's functions), so that states
    FromState maps to the same start state are printed alike: messages of epochs below Base and
    zero counters left out (FromState reads a missing epoch as 0), a view epoch below Base as
    NoEp, the wep FromState zeroes as 0, functions the next chunk does not have left out."""
    kind, st = parse_value(text)
    assert kind == "rec", kind
    for var in ("inv", "ack"):
        per_c = {}
        for c, per_o in st[var][1].items():
            per_c[c] = ("rec", {o: ("fun", [(e, n) for e, n in _entries(bag)
                                             if n[1] != 0 and e[1] >= base.get(c, 0)])
                                for o, bag in per_o[1].items()})
        st[var] = ("rec", per_c)
    st["vep"] = ("rec", {c: (("id", "NoEp") if e[0] == "int" and e[1] < base.get(c, 0) else e)
                         for c, e in st["vep"][1].items()})
    where = dict(st["where"][1]) if st["where"][0] == "rec" else {}
    wep = {}
    for f, e in st["wep"][1].items():
        w = where.get(f)
        ok = w is not None and w[0] == "str" and w[1] in base and e[1] >= base[w[1]]
        wep[f] = e if ok else ("int", 0)
    st["wep"] = ("rec", wep)
    for var in ("txn", "phase", "where", "wep", "got", "putDone", "floor", "depSeq"):
        if st[var][0] == "rec":
            st[var] = ("rec", {f: y for f, y in st[var][1].items() if f in funcs})
    return print_value(("rec", st))


def _but_start(text: str) -> str:
    """A TraceLog without its start states: resume takes a finished chunk with the same records
    and constants; its start states came from the previous chunk's log (run or taken the same
    way), in whatever form FromState reads alike (project() only drops what it ignores)."""
    a, b = text.find("\nTLStart == {"), text.find("\nTLLog == <<")
    return text[:a] + text[b:] if 0 <= a < b else text


def _peak_rss_mb() -> float:
    import resource
    return round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)


def validate(path: Path, timeout: int = 1800, workers: str = "1", build: Path | None = None,
             chunk: int | None = None, progress=None, resume: bool = False) -> dict:
    """Run TLC on one log; a record with accepted, matched, length, states, seconds, and for a
    rejected log the first unmatched step (1-based among the events) and its event.  chunk: a log
    of more records than that is validated in chunks of at most that many, each TLC run starting
    in every state the previous one ended in (README.md, "Long logs"); resume: a chunk whose
    TraceLog (records and constants) is the one an earlier finished run checked is not run
    again (its TLC log gives its end states): an interrupted long validation goes on."""
    meta, events = load_log(path)
    recs, funcs = records(meta, events)
    name = path.stem if path.parent.name in ("", ".") else f"{path.parent.name}-{path.stem}"
    top = (build or ROOT / "build" / "trace" / "tla") / name
    if chunk and len(recs) > chunk:
        chunks = plan_chunks(meta, recs, chunk)
    else:
        chunks = [{"first": 0, "end": len(recs), "base": dict(zip(meta["servers"], meta["epochs"])),
                   "live": set(), "epochs": dict(zip(meta["servers"], meta["epochs"]))}]
    jar = check.ensure_jar(check.JAR_PATH)
    t0 = time.monotonic()
    start, prev_base, runs, const0 = None, None, [], None
    res = {"log": str(path), "length": len(events)}
    for i, ch in enumerate(chunks):
        last = i == len(chunks) - 1
        text, const = module(meta, recs, funcs, ch, prev_base, start, not last)
        const0 = const0 or const
        out_dir = top / f"chunk{i:03d}" if len(chunks) > 1 else top
        out_dir.mkdir(parents=True, exist_ok=True)
        run = check.Run(f"trace-{name}" + (f"-chunk{i:03d}" if len(chunks) > 1 else ""), "model", CFG,
                        module=MODULE)
        t1 = time.monotonic()
        done = out_dir / "logs" / f"{run.name}.out"
        if (resume and not last and (out_dir / "TraceLog.tla").is_file()
                and _but_start((out_dir / "TraceLog.tla").read_text()) == _but_start(text)
                and done.is_file() and "No error has been found" in done.read_text()):
            # the same chunk from the same start states finished before: its end states are in its log
            out = done.read_text().split("\n", 1)[1]
            rec = check.parse_tlc(run, out, 0, 0.0, [], HERE)[0] | {"_out": out, "_log": str(done)}
            if progress:
                progress(f"  chunk {i + 1}/{len(chunks)}: the earlier run's result ({done})")
        else:
            (out_dir / "TraceLog.tla").write_text(text)
            tmp = out_dir / "tmp"
            tmp.mkdir(exist_ok=True)
            java = check.java_cmd(jar, tmp, out_dir)
            rec = check.run_tlc(run, java, HERE, out_dir, workers, timeout)
        out = rec["_out"]
        reached = max([int(m.group(1)) for m in REACHED.finditer(out)], default=0)
        n = ch["end"] - ch["first"]
        r = {"chunk": i, "records": n, "first_step": recs[ch["first"]]["_step"] if n else None,
             "live_at_start": len(ch["live"]), "functions": len(const["TLFunc"]),
             "epochs": const["TLMaxCrash"] + const["TLMaxFalse"] + 1, "start_states": len(start or []),
             "states": rec["states"], "distinct_states": rec["distinct_states"],
             "seconds": round(time.monotonic() - t1, 1), "tlc_log": rec["_log"]}
        runs.append(r)
        if progress and len(chunks) > 1:
            progress(f"  chunk {i + 1}/{len(chunks)}: records {ch['first'] + 1}-{ch['end']}, "
                     f"{r['functions']} functions, {r['start_states']} start states: "
                     f"{reached}/{n} matched, {r['distinct_states']:,} distinct states, {r['seconds']} s")
        if rec["result"] != "pass" or rec["violated"]:
            res |= {"result": "error", "error": check.error_text(out), "tlc_log": rec["_log"]}
            break
        if reached < n:
            bad = recs[ch["first"] + reached]
            e = events[bad["_step"] - 1]
            res |= {"result": "rejected", "step": bad["_step"], "line": e["_line"],
                    "event": describe(e) + (" (its function's retirement)" if bad["ev"] == "retire" else ""),
                    "tlc_log": rec["_log"]}
            break
        if not last:
            nxt = chunks[i + 1]
            rel = {c: nxt["base"][c] - ch["base"][c] for c in ch["base"]}
            names = {r["fn"] for r in recs[nxt["first"]:nxt["end"]] if r.get("fn") in funcs} | set(nxt["live"])
            printed = end_states(out)
            start = list(dict.fromkeys(project(t, rel, names) for t in printed))
            r["end_states_printed"] = len(printed)
            if not start:
                res |= {"result": "error", "tlc_log": rec["_log"],
                        "error": f"chunk {i}: the whole chunk matched but TLC printed no end state"}
                break
            prev_base = ch["base"]
    else:
        res |= {"result": "accepted", "tlc_log": runs[-1]["tlc_log"]}
    res |= {"matched": len(events) if res["result"] == "accepted" else res.get("step", 1) - 1,
            "states": sum(r["states"] for r in runs), "distinct_states": sum(r["distinct_states"] for r in runs),
            "seconds": round(time.monotonic() - t0, 1), "peak_rss_mb": _peak_rss_mb(),
            "records": len(recs), "constants": {k: (sorted(v) if isinstance(v, set) else v) for k, v in const0.items()}}
    if len(chunks) > 1:
        res["chunks"] = runs
    return res


def line_of(r: dict) -> str:
    what = f"{r['length']} events, {r['distinct_states']:,} distinct states ({r['states']:,} generated), {r['seconds']} s"
    if "chunks" in r:
        what += (f" in {len(r['chunks'])} chunks (at most {max(c['distinct_states'] for c in r['chunks']):,} "
                 f"distinct states and {max(c['functions'] for c in r['chunks'])} functions in one), "
                 f"peak TLC RSS {r['peak_rss_mb']} MB")
    if r["result"] == "accepted":
        return f"{r['log']}: accepted: {what}"
    if r["result"] == "rejected":
        return (f"{r['log']}: rejected: log step {r['step']} ({r['event']}) has no matching action "
                f"(line {r['line']}; the first {r['matched']} steps match); {what}")
    return f"{r['log']}: TLC error ({what}); see {r['tlc_log']}\n{r['error']}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+", type=Path, help="ndjson event logs (rtl/tools/ms_trace.py)")
    ap.add_argument("--summary", action="store_true", help="end with a one-line summary")
    ap.add_argument("--json", type=Path, help="write every log's record here")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per TLC run (default 1800)")
    ap.add_argument("--chunk", type=int, default=None,
                    help="validate a log of more records than this in chunks of at most this many "
                         "(README.md, \"Long logs\"); default: the whole log in one TLC run")
    ap.add_argument("--resume", action="store_true",
                    help="with --chunk: take the chunks an earlier run finished from their TLC logs "
                         "(the same records and start states) and go on from the first unfinished one")
    ap.add_argument("--expect-reject", action="store_true",
                    help="succeed only if every log is rejected (a mutant's logs)")
    a = ap.parse_args(argv)
    results, worst = [], 0
    for p in a.logs:
        try:
            r = validate(p, timeout=a.timeout, chunk=a.chunk, progress=lambda m: print(m, flush=True),
                         resume=a.resume)
        except TraceLogError as x:
            print(f"{p}: malformed: {x}", flush=True)
            worst = max(worst, 2)
            continue
        results.append(r)
        print(line_of(r), flush=True)
        if r["result"] == "error":
            worst = max(worst, 3)
        elif (r["result"] == "rejected") != a.expect_reject:
            worst = max(worst, 1)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(results, indent=1))
    if a.summary:
        acc = sum(r["result"] == "accepted" for r in results)
        rej = sum(r["result"] == "rejected" for r in results)
        ev = sum(r["length"] for r in results)
        secs = sum(r["seconds"] for r in results)
        states = sum(r["distinct_states"] for r in results)
        print(f"trace validation: {len(a.logs)} logs, {acc} accepted, {rej} rejected, "
              f"{len(a.logs) - acc - rej} malformed or failed; {ev} events, {states:,} distinct states, "
              f"{secs:.0f} s of TLC", flush=True)
    return worst


if __name__ == "__main__":
    sys.exit(main())
