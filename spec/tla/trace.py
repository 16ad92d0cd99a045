#!/usr/bin/env python3
"""Trace validation: is an event log of the RTL a behaviour of spec/tla/Apta.tla? (README.md,
"Trace validation".)

    python3 spec/tla/trace.py build/trace/ms/ms3/pipeline-s1.ndjson [more logs...]
    python3 spec/tla/trace.py --summary build/trace/ms/ms3/*.ndjson      # + one summary line

For each log (ndjson, written by tests/rtl/ms_trace.py; the format is its module docstring) this
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
import json
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def _tla_check():
    """spec/tla/check.py (the TLC jar, java command, TLC run and its output parsing), imported by
    path under the name tests/test_tla.py uses (spec/murphi has a check.py too)."""
    import importlib.util
    if "tla_check" not in sys.modules:
        spec = importlib.util.spec_from_file_location("tla_check", HERE / "check.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["tla_check"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["tla_check"]


check = _tla_check()

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


def translate(meta: dict, events: list[dict]) -> tuple[str, dict]:
    """The module TraceLog for a log, and the constants it sets (for the report)."""
    base = {s: e for s, e in zip(meta["servers"], meta["epochs"])}
    order: dict[str, dict[int, int]] = {o: {} for o in meta["objects"]}   # object -> RTL version -> spec
    data = meta.get("data", True)        # False (the core alone): no data, a commit's version is its order
    commits: dict[str, int] = {o: 0 for o in meta["objects"]}
    for e in events:
        if e["ev"] == "commit" and not data:
            commits[e["obj"]] += 1
            e = dict(e, version=commits[e["obj"]])
        if e["ev"] == "commit" and e["version"] is not None and e["version"] not in order[e["obj"]]:
            order[e["obj"]][e["version"]] = len(order[e["obj"]]) + 1

    def ver(o, v):
        if v == 0:
            return 0
        return order[o].get(v, NOT_COMMITTED) if isinstance(v, int) and not isinstance(v, bool) else NOT_COMMITTED

    recs = []
    commits = {o: 0 for o in meta["objects"]}
    for e in events:
        if e["ev"] == "commit" and not data:
            commits[e["obj"]] += 1
            e = dict(e, version=commits[e["obj"]])
        r = {k: v for k, v in e.items() if not k.startswith("_") and k != "cycle"}
        if "fn" in r and r["fn"] is None:
            r["fn"] = "?"                       # no run on that server: matches no function
        if "epoch" in r:
            r["epoch"] = r["epoch"] - base.get(r["server"], 0)
        if "lines" in r:
            r["lines"] = [ver(r["obj"], v) for v in r["lines"]]
        if e["ev"] == "commit":
            r["version"] = ver(r["obj"], r["version"]) if r["version"] is not None else NOT_COMMITTED
        r.pop("txn", None)
        if e["ev"] == "put_prepare":
            r.pop("version", None)
        recs.append(r)
    crashes = sum(e["ev"] == "crash" for e in events)
    fences = sum(e["ev"] == "fence" for e in events)
    servers = list(meta["servers"])
    if crashes >= len(servers):
        servers.append(IDLE)
    fns = meta["functions"]
    const = {
        "TLServer": set(servers), "TLObj": set(meta["objects"]), "TLFunc": set(fns),
        "TLMaxCrash": crashes, "TLMaxFalse": max(0, fences - crashes),
        "TLDirCap": meta["dir_entries"], "TLDeclared": meta["rule"] != "all",
        "TLHiddenRecvInv": bool(meta.get("hidden_recv_inv", False)),
    }
    lines = ["---------------------------- MODULE TraceLog -----------------------------",
             f"\\* generated by spec/tla/trace.py from a {meta.get('source', '?')} log of "
             f"{meta['workflow'] if 'workflow' in meta else '?'} (seed {meta.get('seed', '?')}): do not edit",
             "EXTENDS TLC", ""]
    for k, v in const.items():
        lines.append(f"{k} == {tla(v)}")
    lines.append(f"TLIn == {tla_fun({f: set(d['reads']) for f, d in fns.items()})}")
    lines.append(f"TLOut == {tla_fun({f: set(d['writes']) for f, d in fns.items()})}")
    lines.append(f"TLPred == {tla_fun({f: set(d['after']) for f, d in fns.items()})}")
    lines.append("TLLog == <<")
    lines.append(",\n".join("  " + tla(r) for r in recs))
    lines.append(">>")
    lines.append("=" * 77)
    return "\n".join(lines) + "\n", const


def describe(e: dict) -> str:
    return json.dumps({k: v for k, v in e.items() if not k.startswith("_")})


def validate(path: Path, timeout: int = 1800, workers: str = "1", build: Path | None = None) -> dict:
    """Run TLC on one log; a record with accepted, matched, length, states, seconds, and for a
    rejected log the first unmatched step (1-based among the events) and its event."""
    meta, events = load_log(path)
    text, const = translate(meta, events)
    name = path.stem if path.parent.name in ("", ".") else f"{path.parent.name}-{path.stem}"
    out_dir = (build or ROOT / "build" / "trace" / "tla") / name
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "TraceLog.tla").write_text(text)
    jar = check.ensure_jar(check.JAR_PATH)
    tmp = out_dir / "tmp"
    tmp.mkdir(exist_ok=True)
    java = check.java_cmd(jar, tmp, out_dir)
    run = check.Run(f"trace-{name}", "model", CFG, module=MODULE)
    t0 = time.monotonic()
    rec = check.run_tlc(run, java, HERE, out_dir, workers, timeout)
    seconds = time.monotonic() - t0
    out = rec["_out"]
    reached = max([int(m.group(1)) for m in REACHED.finditer(out)], default=0)
    res = {"log": str(path), "length": len(events), "matched": reached, "states": rec["states"],
           "distinct_states": rec["distinct_states"], "seconds": round(seconds, 1),
           "tlc_log": rec["_log"], "constants": {k: (sorted(v) if isinstance(v, set) else v) for k, v in const.items()}}
    if rec["result"] != "pass" or rec["violated"]:
        res |= {"result": "error", "error": check.error_text(out)}
    elif reached == len(events):
        res |= {"result": "accepted"}
    else:
        e = events[reached]
        res |= {"result": "rejected", "step": reached + 1, "line": e["_line"], "event": describe(e)}
    return res


def line_of(r: dict) -> str:
    what = f"{r['length']} events, {r['distinct_states']:,} distinct states ({r['states']:,} generated), {r['seconds']} s"
    if r["result"] == "accepted":
        return f"{r['log']}: accepted: {what}"
    if r["result"] == "rejected":
        return (f"{r['log']}: rejected: log step {r['step']} ({r['event']}) has no matching action "
                f"(line {r['line']}; the first {r['matched']} steps match); {what}")
    return f"{r['log']}: TLC error ({what}); see {r['tlc_log']}\n{r['error']}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+", type=Path, help="ndjson event logs (tests/rtl/ms_trace.py)")
    ap.add_argument("--summary", action="store_true", help="end with a one-line summary")
    ap.add_argument("--json", type=Path, help="write every log's record here")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per TLC run (default 1800)")
    ap.add_argument("--expect-reject", action="store_true",
                    help="succeed only if every log is rejected (a mutant's logs)")
    a = ap.parse_args(argv)
    results, worst = [], 0
    for p in a.logs:
        try:
            r = validate(p, timeout=a.timeout)
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
