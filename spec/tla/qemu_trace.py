#!/usr/bin/env python3
"""The QEMU emulation's event log, in the form trace.py validates (apta-trace/1; spec/tla/README.md,
"The QEMU emulation").

    python3 spec/tla/qemu_trace.py RUN.json --out build/trace/qemu/<run>.ndjson

RUN.json (written by tests/test_qemu_trace.py) names the tracing daemon's log (`daemon_log`:
qemu-cxl/daemon/tracelog.h, one line per event at the memory server's ports and its core's result
queue, in cycle order, each stamped with CLOCK_MONOTONIC), the workflow (objects -> daemon ids,
function instances with reads, writes and predecessors), the executor's events as the test's hook
saw them (each stamped with the same clock when the executor emitted it: a placement before its
job is posted, a completion after the runner finished), the kills, the time the workflow started
(`start_ns`: the log is cut there), and the rack directory's server file (for the final memory).

One order for all of it:
* daemon events in the daemon's order (its cycles);
* placements and completions by time stamp among them: one host, one monotonic clock; a placement
  is stamped before its job exists (so before any of its requests reach the daemon) and after the
  daemon answered the snapshot it was chosen from; a completion after the run's last answer;
* a cache hit, which only the guest sees, right after the last daemon event that answered one of
  that guest's requests produced before the hit (the guest library is synchronous: the hit follows
  every answer to its earlier requests) and after its run's placement; the guest logs its
  request-ring head with the hit (`rhead`), the daemon logs each request slot's ring index, so the
  hit comes before every slot the guest produced after it. The version it returned is the latest
  committed one whose header line (length and digest of the data, JOBS.md) it carries;
* a killed guest's crash just before its fence (rtl/tools/ms_trace.py's rule).
Versions: a commit's lines are its PutLines' FNV-1a hashes; a served get's line l is the latest
version (at the get's linearization point) whose line l has that hash, or no version at all.
Receipt of a BISnp is hidden (`hidden_recv_inv`): the daemon does not see it.

Exit status 2 with the file and what is wrong when the run cannot be ordered or mapped soundly
(a set of msemu's directory with more of the log's objects than it has ways; a request before the
cut other than Rejoin; a hit that no order places between its anchors).
"""
from __future__ import annotations

import argparse
import json
import re
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

from apta import layout, schema
from apta.paths import ROOT
from apta.qemu import jobs  # qemu-cxl/jobs.py: the object format, JOBS.md

FORMAT = "apta-trace/1"
RESULTS = schema.enum("ReqResult")
OPS = schema.enum("ReqOp")
ZOMBIE = next(c["code"] for c in json.loads((ROOT / "schema" / "messages.json").read_text())["msErrors"]["codes"]
              if c["name"] == "zombie")
OPCODE = {m["name"]: m["opcode"] for m in json.loads((ROOT / "schema" / "messages.json").read_text())["messages"]}
UNKNOWN = "no-version"                    # a line no commit (and not the initial object) wrote
ANSWERS = ("core", "rsp")                 # daemon events that answer a guest's request


class MapError(Exception):
    pass


def fnv(b: bytes) -> int:
    """FNV-1a 64, as the daemon hashes a line (tracelog.h) and the runner an object (jobs.fnv1a64)."""
    return jobs.fnv1a64(b)


def header_hash(length: int, digest: int) -> str:
    """The FNV-1a of an object's line 0 (JOBS.md: magic, length, digest of the data)."""
    hdr = jobs.encode_object(b"", 1)[:jobs.LINE]
    b = bytearray(hdr)
    struct.pack_into("<Q", b, jobs._OBJF["length"], length)
    struct.pack_into("<Q", b, jobs._OBJF["digest"], digest)
    return f"{fnv(bytes(b)):016x}"


def fname(run_id: str) -> str:
    """The spec's function of a run `wf/function#index@server.attempt`: the instance."""
    return re.sub(r"\W", "_", run_id.split("/", 1)[1].rsplit("@", 1)[0])


# the fields of each daemon event this reader uses (tracelog.h)
DFIELDS = {"req": ("g", "idx", "op", "server", "epoch"), "birsp": ("g", "idx", "op", "server", "epoch", "obj"),
           "rsp": ("op", "server"), "snp": ("op", "server", "epoch", "obj"),
           "core": ("op", "server", "obj", "result"), "err": ("code", "server", "obj", "txn", "opcode"),
           "fenced": ("server", "epoch"), "unfenced": ("server", "epoch"),
           "register": ("obj", "base", "size", "valid", "h")}
RUN_FIELDS = {"workflow": str, "servers": list, "daemon_log": str, "objects": dict, "functions": dict,
              "dir_sets": int, "dir_ways": int, "start_ns": int, "kills": list, "executor": list}


def load(path: Path) -> list[dict]:
    """The daemon's log; MapError names the file, the line and the field."""
    out = []
    try:
        text = path.read_text()
    except OSError as x:
        raise MapError(f"{path}: {x.strerror}") from None
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            e = json.loads(raw)
        except json.JSONDecodeError as x:
            raise MapError(f"{path}:{n}: not JSON ({x.msg})") from None
        if not isinstance(e, dict) or e.get("ev") not in DFIELDS:
            raise MapError(f"{path}:{n}: ev: not a daemon event ({raw[:80]})")
        for k in ("cycle", "t") + DFIELDS[e["ev"]]:
            if k not in e:
                raise MapError(f"{path}:{n}: {k}: missing in {e['ev']}")
        out.append(e)
    return out


def convert(run: dict, run_path: Path = Path("run.json")) -> tuple[dict, list[dict]]:
    """(meta, events) of the apta-trace/1 log."""
    for k, t in RUN_FIELDS.items():
        if not isinstance(run.get(k), t):
            raise MapError(f"{run_path}: {k}: missing or not a {t.__name__}")
    for o, v in run["objects"].items():
        init = v.get("initial") if isinstance(v, dict) else None
        if init is not None and not (isinstance(init, list) and len(init) == v.get("lines")
                                     and all(isinstance(h, str) for h in init)):
            raise MapError(f"{run_path}: objects.{o}.initial: want one line hash per line ({v.get('lines')})")
    for n, x in enumerate(run["executor"]):
        need = {"place": ("run", "server", "epoch", "mono_ns"), "done": ("run", "mono_ns"), "get": ("id", "run", "obj"),
                "get_ret": ("id", "hit")}.get(x.get("ev"), ())
        for k in need:
            if k not in x:
                raise MapError(f"{run_path}: executor[{n}]: {k}: missing in {x.get('ev')}")
    dlog = load(Path(run["daemon_log"]))
    names = run["servers"]
    objs = {o: v["id"] for o, v in run["objects"].items()}
    oname = {v: k for k, v in objs.items()}
    sets, ways = run["dir_sets"], run["dir_ways"]
    per_set: dict[int, list] = {}
    for o, i in objs.items():
        per_set.setdefault(i % sets, []).append(o)
    full = {s: os for s, os in per_set.items() if len(os) > ways}
    if full:
        raise MapError(f"{run_path}: objects: directory set(s) {full} hold more of the log's objects than the "
                       f"{ways} ways: the set-associative directory could evict where the spec's (one set of "
                       f"{len(objs)} entries) cannot; allocate the objects in other sets")
    start = run["start_ns"]
    # ---- the cut: nothing but rejoins before it ----------------------------------------------
    epoch = {g: 0 for g in range(len(names))}
    fenced = {g: False for g in range(len(names))}
    body = []
    for k, e in enumerate(dlog):
        if e["t"] >= start:
            body = dlog[k:]
            break
        if e["ev"] == "req" and e["op"] != "Rejoin" or e["ev"] == "core":
            raise MapError(f"{run['daemon_log']}:{k + 1}: {e['ev']} {e.get('op')} before the workflow started: "
                           "the spec's Init has an empty directory and empty caches")
        if e["ev"] == "rsp" and e["op"] == "RejoinAck":
            epoch[e["server"]] = e["epoch"]
        if e["ev"] in ("fenced", "unfenced"):
            fenced[e["server"]] = e["ev"] == "fenced"
    if any(fenced.values()):
        raise MapError(f"{run['daemon_log']}: servers {[names[g] for g, f in fenced.items() if f]} fenced when the "
                       "workflow started (the spec starts with every server unfenced)")
    meta = {"ev": "meta", "format": FORMAT, "source": "qemu", "workflow": run["workflow"], "servers": names,
            "objects": {o: {"id": i, "lines": run["objects"][o]["lines"]} for o, i in objs.items()},
            "functions": run["functions"], "rule": "declared", "epochs": [epoch[g] for g in range(len(names))],
            "dir_entries": len(objs), "hidden_recv_inv": True, "dir_geometry": [sets, ways]}
    # ---- one stream: daemon events and the executor's placements and completions, by time ----------
    xev = [x for x in run["executor"] if x["ev"] in ("place", "done")]
    stream, i = [], 0
    for d in body:
        while i < len(xev) and xev[i]["mono_ns"] < d["t"]:
            stream.append(("x", xev[i]))
            i += 1
        stream.append(("d", d))
    stream += [("x", x) for x in xev[i:]]
    runs = {x["run"]: x for x in run["executor"] if x["ev"] == "place"}
    # ---- hits: after the last answer to the guest's earlier requests and after the placement -------
    gets = {x["id"]: x for x in run["executor"] if x["ev"] == "get"}
    hits = [x for x in run["executor"] if x["ev"] == "get_ret" and x.get("hit")]
    after: dict[int, list] = {}
    for h in hits:
        g0 = gets.get(h["id"])
        if g0 is None or g0["run"] not in runs or "rhead" not in h:
            raise MapError(f"{run_path}: executor: hit {h['id']} without its get, placement or rhead")
        place = runs[g0["run"]]
        g = names.index(place["server"])
        pos_place = next(k for k, (s, x) in enumerate(stream) if s == "x" and x is place)
        first_after = next((k for k, (s, d) in enumerate(stream) if s == "d" and d["ev"] in ("req", "birsp")
                            and d.get("g") == g and d["idx"] >= h["rhead"]), len(stream))
        ans = [k for k, (s, d) in enumerate(stream[:first_after])
               if s == "d" and d["ev"] in ANSWERS and d.get("server") == g]
        at = max([pos_place] + ans[-1:])
        done = next((k for k, (s, x) in enumerate(stream) if s == "x" and x["ev"] == "done" and x["run"] == g0["run"]),
                    len(stream))
        if at >= min(first_after, done):
            raise MapError(f"{run_path}: hit {h['id']}: no place between its anchors (after {at}, before "
                           f"{min(first_after, done)})")
        after.setdefault(at, []).append((h, g0, place))
    # ---- the events -----------------------------------------------------------------------------
    killed = {names.index(k["server"]) for k in run["kills"]}
    versions = {o: [] for o in objs}            # per object: per version, the hash of each line
    run_on: dict[int, str] = {}
    attempts: dict[int, dict] = {}
    open_gets: dict[tuple, tuple] = {}
    fenced_at: dict[int, int] = {}
    out: list[dict] = []

    def add(ev, **kw):
        e = {"ev": ev, **kw}
        out.append(e)
        return e

    def version_of(o, line, h, upto):
        for v in range(upto - 1, -1, -1):
            if line < len(versions[o][v]) and versions[o][v][line] == h:
                return v
        return UNKNOWN

    for k, (src, e) in enumerate(stream):
        if src == "d" and e["ev"] in ("req", "core", "snp", "birsp") and "obj" in e and e["obj"] not in oname:
            raise MapError(f"{run['daemon_log']}: cycle {e['cycle']}: {e['ev']} {e.get('op', '')} of object {e['obj']}, "
                           "which is not one of the workflow's: the spec's Obj would not hold it")
        if src == "x":
            g = names.index(e["server"]) if e["ev"] == "place" else None
            if e["ev"] == "place":
                run_on[g] = fname(e["run"])
                add("place", fn=fname(e["run"]), server=e["server"], epoch=e["epoch"])
            else:
                p = runs[e["run"]]
                add("done", fn=fname(e["run"]), server=p["server"])
        else:
            ev = e["ev"]
            if ev == "register" and e["valid"] and e["obj"] in oname and not versions[oname[e["obj"]]]:
                # version 0: the initial object as the Object Manager loaded it (run's objects.initial),
                # since the memory server allocates at registration and the load follows; else the
                # extent's lines at registration (a log of a run that loaded before registering)
                o = oname[e["obj"]]
                versions[o].append(run["objects"][o].get("initial") or e["h"])
            elif ev == "req" and e["op"] in ("PutPrepare", "PutLine") and e["obj"] in oname:
                g, o = e["g"], oname[e["obj"]]
                if e["op"] == "PutPrepare":
                    x = add("put_prepare", fn=run_on.get(g), server=names[g], epoch=e["epoch"], obj=o,
                            txn=e["txn"], version=None)
                    x["_op"] = OPCODE["PutPrepare"]
                    attempts[g] = {"obj": o, "txn": e["txn"], "epoch": e["epoch"], "fn": run_on.get(g),
                                   "events": [x], "lines": {}}
                else:
                    x = add("put_line", fn=run_on.get(g), server=names[g], epoch=e["epoch"], obj=o, txn=e["txn"],
                            line=e["line"], size=run["objects"][o]["lines"])
                    x["_op"] = OPCODE["PutLine"]
                    a = attempts.get(g)
                    if a is not None and a["txn"] == e["txn"] and a["epoch"] == e["epoch"]:
                        a["events"].append(x)
                        a["lines"][e["line"]] = e["h"]
                        if a.get("refused"):
                            x["_drop"] = True
            elif ev == "rsp" and e["op"] == "PutRetry":
                a = attempts.get(e["server"])
                if a is not None and a["txn"] == e["txn"]:
                    for x in a["events"]:
                        x["_drop"] = True
                    a["events"], a["refused"] = [], True
            elif ev == "core" and e["obj"] in oname:
                g, o = e["server"], oname[e["obj"]]
                if OPS[e["op"]] == "Get" and RESULTS[e["result"]] == "Served":
                    x = add("get", fn=run_on.get(g), server=names[g], epoch=epoch[g], obj=o, hit=False, lines=[])
                    open_gets[(g, e["obj"])] = (x, len(versions[o]))
                elif OPS[e["op"]] == "Commit" and RESULTS[e["result"]] == "Committed":
                    a = attempts.pop(g, None)
                    if a is None or a["obj"] != o:
                        add("commit", fn=run_on.get(g), server=names[g], epoch=epoch[g], obj=o, txn=None, version=None)
                    else:
                        size = run["objects"][o]["lines"]
                        versions[o].append([a["lines"].get(l) for l in range(size)])
                        add("commit", fn=a["fn"], server=names[g], epoch=a["epoch"], obj=o, txn=a["txn"],
                            version=len(versions[o]) - 1)
            elif ev == "rsp" and e["op"] == "ObjData" and (e["server"], e["obj"]) in open_gets:
                x, upto = open_gets[(e["server"], e["obj"])]
                x["lines"].append(version_of(x["obj"], e["line"], e["h"], upto))
                if len(x["lines"]) == run["objects"][x["obj"]]["lines"]:
                    del open_gets[(e["server"], e["obj"])]
            elif ev == "rsp" and e["op"] == "RejoinAck":
                epoch[e["server"]] = e["epoch"]
                add("rejoin", server=names[e["server"]], epoch=e["epoch"])
            elif ev == "snp" and e["obj"] in oname:
                add("bisnp", server=names[e["server"]], epoch=e["epoch"], obj=oname[e["obj"]])
            elif ev == "birsp" and e["obj"] in oname:
                add("birsp", server=names[e["g"]], epoch=e["epoch"], obj=oname[e["obj"]])
            elif ev == "err" and e["code"] == ZOMBIE:
                # the oldest PutPrepare/PutLine of that server since its fence with this opcode
                for x in out[fenced_at.get(e["server"], len(out)):]:
                    if x["ev"] in ("put_prepare", "put_line") and x.get("_op") == e["opcode"] \
                            and x["server"] == names[e["server"]]:
                        kept = {kk: x[kk] for kk in ("server", "epoch", "obj")}
                        msg = "PutPrepare" if x["ev"] == "put_prepare" else "PutLine"
                        x.clear()
                        x.update({"ev": "refused", **kept, "msg": msg})
                        break
            elif ev == "fenced":
                g = e["server"]
                if g in killed:
                    add("crash", server=names[g])
                    killed.discard(g)
                add("fence", server=names[g], epoch=e["epoch"])
                fenced_at[g] = len(out)
                run_on.pop(g, None)
                attempts.pop(g, None)
        for h, g0, place in after.get(k, []):
            o = g0["obj"]
            v = version_of(o, 0, header_hash(h["len"], int(h["digest"], 16)), len(versions[o]))
            add("get", fn=fname(g0["run"]), server=place["server"], epoch=epoch[names.index(place["server"])],
                obj=o, hit=True, lines=[v])
    for (g, oid), (x, _) in open_gets.items():
        raise MapError(f"{run['daemon_log']}: the get of {x['obj']} by {names[g]} has "
                       f"{len(x['lines'])} of its lines in the log")
    for o, lines in (run.get("final") or {}).items():
        add("final", obj=o, lines=[version_of(o, l, h, len(versions[o])) for l, h in enumerate(lines)])
    return meta, [e for e in out if not e.get("_drop")]


def final_lines(rack: Path, dlog: Path, objects: dict) -> dict:
    """Every object's line hashes in DRAM (the rack's server file, qemu-cxl/RINGS.md) at its registered base."""
    lay = layout.load()
    base = {}
    for e in load(dlog):
        if e["ev"] == "register" and e["valid"]:
            base[e["obj"]] = (e["base"], e["size"])
    out = {}
    with open(lay.server_path(rack), "rb") as f:
        for o, v in objects.items():
            b, n = base[v["id"]]
            f.seek(lay.data_offset + b)
            raw = f.read(64 * n)
            out[o] = [f"{fnv(raw[64 * l:64 * l + 64]):016x}" for l in range(n)]
    return out


def write(meta: dict, events: list[dict], path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for e in [meta] + events:
            f.write(json.dumps({k: v for k, v in e.items() if not k.startswith("_")}) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="the run record (tests/test_qemu_trace.py)")
    ap.add_argument("--out", type=Path, required=True, help="the apta-trace/1 log to write")
    a = ap.parse_args(argv)
    try:
        try:
            run = json.loads(a.run.read_text())
        except (OSError, json.JSONDecodeError) as x:
            raise MapError(f"{a.run}: {x}") from None
        if not isinstance(run, dict):
            raise MapError(f"{a.run}: not a JSON object")
        meta, events = convert(run, a.run)
    except MapError as x:
        print(f"{a.run}: cannot map: {x}", file=sys.stderr)
        return 2
    write(meta, events, a.out)
    print(f"{a.out}: {len(events)} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
