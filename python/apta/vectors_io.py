"""Test vectors of the coherence core: loading and schema validation (rtl/CORE.md, "Test vectors").

Written by spec/murphi/vectors.py into build/vectors/<config>.jsonl (one scenario per line),
replayed by the cocotb testbench (tests/rtl/). Both import this module; stdlib only.

    from apta import vectors_io
    scenarios = vectors_io.load_vectors("build/vectors/smoke.jsonl")   # validated dicts
    cov = vectors_io.load_coverage("build/vectors/coverage.json")

Every problem raises VectorError naming the file, the line and the field:
    build/vectors/smoke.jsonl:3: steps[2].stimuli[0].port: unknown port 'foo' (known: ack, ctrl, req)
"""
from __future__ import annotations

import json
from pathlib import Path

from . import schema

PORTS = ("req", "ack", "ctrl")                       # stimulus ports
REQ_OPS = schema.enum("ReqOp")                       # req.op (schema/core.json)
CTRL_OPS = ("Fence", "Rejoin")                       # message names (schema/messages.json)
RESULTS = schema.enum("ReqResult")                   # resp.result
CTRL_RESP_OPS = ("Fence", "RejoinAck")
STATES = schema.enum("DirState")                     # queryResp.state
PARAMS = ("servers", "dirSets", "dirWays", "maxPendPerServer", "linesPerObject")
EXPECT_PORTS = ("resp", "snp", "ackResult", "ctrlResp")


class VectorError(ValueError):
    """A malformed vector file: the message starts with file:line: field:."""


class _Bad(VectorError):
    """A problem in one scenario (validate): `field: problem`; load_vectors adds file:line."""
    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


def _get(d: dict, key: str, where: str):
    if not isinstance(d, dict):
        raise _Bad(where, f"expected an object, got {type(d).__name__}")
    if key not in d:
        raise _Bad(f"{where}.{key}" if where else key, "missing field")
    return d[key]


def _int(d: dict, key: str, where: str, lo: int = 0, hi: int | None = None) -> int:
    v = _get(d, key, where)
    f = f"{where}.{key}" if where else key
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Bad(f, f"expected an integer, got {v!r}")
    if v < lo or (hi is not None and v > hi):
        raise _Bad(f, f"{v} outside {lo}..{'' if hi is None else hi}")
    return v


def _bool(d: dict, key: str, where: str) -> bool:
    v = _get(d, key, where)
    if not isinstance(v, bool):
        raise _Bad(f"{where}.{key}", f"expected true/false, got {v!r}")
    return v


def _str(d: dict, key: str, where: str, allowed: tuple[str, ...] | None = None, what: str = "value") -> str:
    v = _get(d, key, where)
    f = f"{where}.{key}" if where else key
    if not isinstance(v, str):
        raise _Bad(f, f"expected a string, got {v!r}")
    if allowed is not None and v not in allowed:
        raise _Bad(f, f"unknown {what} {v!r} (known: {', '.join(sorted(allowed))})")
    return v


def _list(d: dict, key: str, where: str) -> list:
    v = _get(d, key, where)
    if not isinstance(v, list):
        raise _Bad(f"{where}.{key}", f"expected a list, got {type(v).__name__}")
    return v


def _cells(ms: bool = False) -> tuple[str, ...] | None:
    from . import cells
    return tuple(cells.ids() + (cells.ids("ms") if ms else []))


def _header(sc: dict, known_cells: tuple[str, ...] | None, param_names: tuple[str, ...]) -> dict:
    """id, config, cell and the positive integer params every scenario starts with."""
    if not isinstance(sc, dict):
        raise _Bad("(scenario)", f"expected a JSON object, got {type(sc).__name__}")
    _str(sc, "id", "")
    _str(sc, "config", "")
    _str(sc, "cell", "", known_cells, "cell")
    params = _get(sc, "params", "")
    for p in param_names:
        _int(params, p, "params", 1)
    return params


def _objects(sc: dict, max_lines: int, obj_min: int = 0, align: int = 1) -> dict[int, int]:
    """The scenario's objects {name: {obj, base, size}} -> {obj id: size in lines}."""
    objs = _get(sc, "objects", "")
    if not isinstance(objs, dict) or not objs:
        raise _Bad("objects", "expected a non-empty object {name: {obj, base, size}}")
    sizes = {}
    for name, o in objs.items():
        w = f"objects.{name}"
        k = _int(o, "obj", w, obj_min)
        if _int(o, "base", w) % align:
            raise _Bad(f"{w}.base", f"{o['base']} is not {align}-byte aligned")
        sizes[k] = _int(o, "size", w, 1, max_lines)
    return sizes


def validate(sc: dict, known_cells: tuple[str, ...] | None = None) -> None:
    """Check one scenario against the schema; raises VectorError("<field>: <problem>").
    known_cells None: any cell id is accepted (load_vectors passes python/apta/cells.py's)."""
    params = _header(sc, known_cells, PARAMS)
    n = params["servers"]
    maxpend = params["maxPendPerServer"]
    ids = set(_objects(sc, params["linesPerObject"]))
    steps = _list(sc, "steps", "")
    if not steps:
        raise _Bad("steps", "a scenario has at least one step")
    for i, st in enumerate(steps):
        w = f"steps[{i}]"
        _str(st, "rule", w)
        stims = _list(st, "stimuli", w)
        for j, s in enumerate(stims):
            sw = f"{w}.stimuli[{j}]"
            port = _str(s, "port", sw, PORTS, "port")
            _int(s, "server", sw, 0, n - 1)
            _int(s, "epoch", sw)
            if port == "req":
                _str(s, "op", sw, REQ_OPS, "op")
                if _int(s, "obj", sw) not in ids:
                    raise _Bad(f"{sw}.obj", f"object {s['obj']} is not in the scenario's objects")
                _int(s, "base", sw)
                _int(s, "size", sw, 1, params["linesPerObject"])
            elif port == "ack":
                if _int(s, "obj", sw) not in ids:
                    raise _Bad(f"{sw}.obj", f"object {s['obj']} is not in the scenario's objects")
            else:
                _str(s, "op", sw, CTRL_OPS, "op")
        ex = _get(st, "expect", w)
        ew = f"{w}.expect"
        for port in EXPECT_PORTS:
            for j, m in enumerate(_list(ex, port, ew)):
                mw = f"{ew}.{port}[{j}]"
                _int(m, "server", mw, 0, n - 1)
                if port == "resp":
                    _str(m, "op", mw, REQ_OPS, "op")
                    _int(m, "obj", mw)
                    _str(m, "result", mw, RESULTS, "result")
                elif port == "snp":
                    _int(m, "epoch", mw)
                    _int(m, "obj", mw)
                    _int(m, "base", mw)
                    _int(m, "size", mw, 1, params["linesPerObject"])
                elif port == "ackResult":
                    _int(m, "obj", mw)
                    _bool(m, "applied", mw)
                    _bool(m, "settled", mw)
                else:
                    _str(m, "op", mw, CTRL_RESP_OPS, "op")
                    _int(m, "epoch", mw)
        _validate_core_state(_get(ex, "state", ew), f"{ew}.state", ids, n, maxpend)


def _validate_core_state(state: dict, sw: str, ids: set, n: int, maxpend: int) -> None:
    """CORE.md's `state`: every object's entry, fenced, epoch, pending, schedulable (shared by
    both vector kinds)."""
    objstate = _get(state, "objects", sw)
    if not isinstance(objstate, dict):
        raise _Bad(f"{sw}.objects", "expected an object {obj id: entry}")
    for key, e in objstate.items():
        ow = f"{sw}.objects.{key}"
        if not key.isdigit() or int(key) not in ids:
            raise _Bad(ow, f"object {key!r} is not in the scenario's objects")
        _str(e, "state", ow, STATES, "state")
        sh = _list(e, "sharers", ow)
        if any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < n for x in sh):
            raise _Bad(f"{ow}.sharers", f"expected server ids 0..{n - 1}, got {sh!r}")
        pend = _list(e, "pend", ow)
        if len(pend) != n or any(isinstance(x, bool) or not isinstance(x, int)
                                 or not 0 <= x <= maxpend for x in pend):
            raise _Bad(f"{ow}.pend", f"expected {n} counts 0..{maxpend}, got {pend!r}")
        sf = _list(e, "schedulableFor", ow)
        if len(sf) != n or any(type(x) is not bool for x in sf):
            raise _Bad(f"{ow}.schedulableFor", f"expected {n} bools, got {sf!r}")
    for key, kind in (("fenced", bool), ("epoch", int), ("pending", bool), ("schedulable", bool)):
        v = _list(state, key, sw)
        if len(v) != n or any(type(x) is not kind for x in v):
            raise _Bad(f"{sw}.{key}", f"expected {n} {kind.__name__}s, got {v!r}")



# --- memory-server vectors (rtl/MEMSERVER.md "Test vectors of the memory server") ---------------
MS_PORTS = ("req", "birsp", "ctrl", "drain", "timeout", "cancel")
MS_REQ_OPS = ("ObjGet", "PutPrepare", "PutLine", "Rejoin")
MS_RSP_OPS = ("ObjData", "PutCommit", "PutRetry", "RejoinAck", "GetRetry", "GetCancelled")
MS_ERRS = ("zombie", "noTxn", "timeout", "fenceAbort")
MS_PARAMS = ("servers", "stagingSlots", "dirWays", "linesPerObject", "maxPendPerServer")
LINE_BYTES = 64


def line_word(obj: int, line: int, val: int) -> int:
    """The 512-bit data of line `line` of object `obj` holding the model's put id `val` (DRAM starts
    with val 0): distinct per (obj, line, val), so a torn, stale or misplaced line shows."""
    import hashlib
    h = hashlib.sha512(f"apta/{obj}/{line}/{val}".encode()).digest()
    return int.from_bytes(h[:LINE_BYTES], "little")


def validate_ms(sc: dict, known_cells: tuple[str, ...] | None = None) -> None:
    """Check one memory-server scenario; raises VectorError("<field>: <problem>")."""
    params = _header(sc, known_cells, MS_PARAMS)
    if "holdSlots" in params:            # versioned gets: the hold table's size
        _int(params, "holdSlots", "params", 1)
    n, nl = params["servers"], params["linesPerObject"]
    sizes = _objects(sc, nl, obj_min=1, align=LINE_BYTES)

    def obj(d, w):
        if _int(d, "obj", w) not in sizes:
            raise _Bad(f"{w}.obj", f"object {d['obj']} is not in the scenario's objects")

    steps = _list(sc, "steps", "")
    if not steps:
        raise _Bad("steps", "a scenario has at least one step")
    for i, st in enumerate(steps):
        w = f"steps[{i}]"
        _str(st, "rule", w)
        for j, s in enumerate(_list(st, "stimuli", w)):
            sw = f"{w}.stimuli[{j}]"
            port = _str(s, "port", sw, MS_PORTS, "port")
            if port in ("drain", "timeout"):
                continue
            if port == "cancel":             # the control plane cancels the object's held gets
                obj(s, sw)
                continue
            _int(s, "server", sw, 0, n - 1)
            _int(s, "epoch", sw)
            if port == "ctrl":
                _str(s, "op", sw, ("Fence",), "op")
                continue
            op = _str(s, "op", sw, MS_REQ_OPS, "op") if port == "req" else None
            if op != "Rejoin":
                obj(s, sw)
            if op in ("PutPrepare", "PutLine"):
                _int(s, "txn", sw)
            if op == "ObjGet" and "version" in s:
                _int(s, "version", sw, 1)
            if op == "PutLine":
                _int(s, "line", sw, 0, nl - 1)
                _int(s, "val", sw)
        ex = _get(st, "expect", w)
        ew = f"{w}.expect"
        for j, m in enumerate(_list(ex, "rsp", ew)):
            mw = f"{ew}.rsp[{j}]"
            op = _str(m, "op", mw, MS_RSP_OPS, "op")
            _int(m, "server", mw, 0, n - 1)
            _int(m, "epoch", mw)
            if op != "RejoinAck":
                obj(m, mw)
            if op == "ObjData":
                _int(m, "line", mw, 0, nl - 1)
                _int(m, "val", mw)
            elif op in ("GetRetry", "GetCancelled"):
                _int(m, "version", mw, 1)
            elif op != "RejoinAck":
                _int(m, "txn", mw)
        for j, m in enumerate(_list(ex, "snp", ew)):
            mw = f"{ew}.snp[{j}]"
            _int(m, "server", mw, 0, n - 1)
            _int(m, "epoch", mw)
            obj(m, mw)
        for j, m in enumerate(_list(ex, "ctrlResp", ew)):
            mw = f"{ew}.ctrlResp[{j}]"
            _str(m, "op", mw, ("Fence",), "op")
            _int(m, "server", mw, 0, n - 1)
            _int(m, "epoch", mw)
        for j, e in enumerate(_list(ex, "err", ew)):
            if e not in MS_ERRS:
                raise _Bad(f"{ew}.err[{j}]", f"unknown err code {e!r} (known: {', '.join(MS_ERRS)})")
        state = _get(ex, "state", ew)
        sw = f"{ew}.state"
        _validate_core_state(state, sw, set(sizes), n, params["maxPendPerServer"])
        _int(state, "commitSeq", sw)
        if "held" in state:
            _int(state, "held", sw, 0, params.get("holdSlots", 0))
        mem = state.get("mem", {})
        if not isinstance(mem, dict):
            raise _Bad(f"{sw}.mem", "expected an object {obj id: [put id per line]}")
        for key, vals in mem.items():
            if not key.isdigit() or int(key) not in sizes:
                raise _Bad(f"{sw}.mem.{key}", f"object {key!r} is not in the scenario's objects")
            if (not isinstance(vals, list) or len(vals) != sizes[int(key)]
                    or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in vals)):
                raise _Bad(f"{sw}.mem.{key}", f"expected {sizes[int(key)]} put ids, got {vals!r}")


def load_vectors(path, known_cells: tuple[str, ...] | None = None, ms: bool = False) -> list[dict]:
    """Read and validate a JSON Lines vector file (blank lines are skipped).

    known_cells: the cell ids a scenario may name (default: python/apta/cells.py's table; for ms, both).
    ms: memory-server scenarios (validate_ms) instead of the core's (validate)."""
    path = Path(path)
    if known_cells is None:
        known_cells = _cells(ms)
    try:
        text = path.read_text()
    except OSError as e:
        raise VectorError(f"{path}: cannot read: {e.strerror}") from None
    out, seen = [], {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            sc = json.loads(line)
        except json.JSONDecodeError as e:
            raise VectorError(f"{path}:{n}: (line): bad JSON at column {e.colno}: {e.msg}") from None
        try:
            (validate_ms if ms else validate)(sc, known_cells)
        except _Bad as e:
            raise VectorError(f"{path}:{n}: {e.field}: {e.problem}") from None
        if sc["id"] in seen:
            raise VectorError(f"{path}:{n}: id: {sc['id']!r} already on line {seen[sc['id']]}")
        seen[sc["id"]] = n
        out.append(sc)
    return out


def load_coverage(path) -> dict:
    """build/vectors/coverage.json: {"cells": [{cell, status, vector, config}], ...}."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise VectorError(f"{path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise VectorError(f"{path}:{e.lineno}: (file): bad JSON: {e.msg}") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise VectorError(f"{path}: cells: missing field")
    for i, c in enumerate(cells):
        for f in ("cell", "status", "vector", "config"):
            if not isinstance(c, dict) or f not in c:
                raise VectorError(f"{path}: cells[{i}].{f}: missing field")
        if c["status"] not in ("covered", "unreachable", "untested"):   # untested: a partial run
            raise VectorError(f"{path}: cells[{i}].status: unknown status {c['status']!r}")
    return data
