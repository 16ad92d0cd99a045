#!/usr/bin/env python3
"""Reader and validator of the traces of workloads/TRACES.md (stdlib only).

    from apta.workloads import sigil
    t = sigil.load("build/traces/tiny/phi/identifyPHI.0")   # validates; raises TraceFormatError
    for ev in t.events: ...                                 # Compute / Marker tuples, file order
    t.phases["COMPUTE"]                                      # the compute events of one phase
    python3 workloads/sigil.py build/traces/tiny/phi/identifyPHI.0 ...   # validate, print a summary

Every error names the file, the line (1-based; 0 for a file-level error) and the field, as
`file:line: field: message`. The checks are the contract's:
  * a compute event `@ iops,flops,reads,writes [$ S E ...] [* S E ...]`: four non-negative
    integers, reads + writes <= 1000, written ($) then read (*) ranges, each list present exactly when
    its count is non-zero, at most 64 ranges, hex `0x...`, S line-aligned, E the last byte of a line,
    sorted, neither overlapping nor touching (merged), so every line is listed once;
  * a phase marker `& GET|COMPUTE|PUT|END`: the first is GET or COMPUTE, phases only move forward,
    END is last and nothing follows it; `!` instruction markers are allowed; no `#` / `^` events;
  * meta.json: present (a directory without it is an incomplete trace), its phases and statistics
    equal what the events add up to.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from typing import Iterator, NamedTuple

LINE = 64
MAX_ACCESSES = 1000
MAX_RANGES = 64
PHASES = ("GET", "COMPUTE", "PUT", "END")
EVENTS_FILE = "sigil.events.out-1.gz"
PTHREAD_FILE = "sigil.pthread.out"
META_FILE = "meta.json"
COUNT_FIELDS = ("iops", "flops", "reads", "writes")


class TraceFormatError(ValueError):
    """A malformed trace: `file`, `line` (1-based, 0 = the whole file), `field`, `msg`."""

    def __init__(self, file: str, line: int, field: str, msg: str):
        self.file, self.line, self.field, self.msg = file, line, field, msg
        super().__init__(f"{file}:{line}: {field}: {msg}")


class Compute(NamedTuple):
    """A compute event: counts, then written and read byte ranges [(start, end inclusive)]."""

    iops: int
    flops: int
    reads: int
    writes: int
    write_ranges: tuple
    read_ranges: tuple


class Marker(NamedTuple):
    phase: str


def _hex(tok: str, file: str, lineno: int, field: str) -> int:
    if not tok.startswith("0x") or len(tok) < 3:
        raise TraceFormatError(file, lineno, field, f"{tok!r} is not a hex address (0x...)")
    try:
        return int(tok[2:], 16)
    except ValueError:
        raise TraceFormatError(file, lineno, field, f"{tok!r} is not a hex address (0x...)") from None


def _ranges(toks: list, file: str, lineno: int, name: str) -> tuple:
    if not toks:
        raise TraceFormatError(file, lineno, f"{name} ranges", "the list is empty (omit the tag instead)")
    if len(toks) % 2:
        raise TraceFormatError(file, lineno, f"{name} ranges", f"{len(toks)} addresses: not start/end pairs")
    if len(toks) // 2 > MAX_RANGES:
        raise TraceFormatError(file, lineno, f"{name} ranges", f"{len(toks) // 2} ranges (at most {MAX_RANGES})")
    out = []
    prev_end = -2
    for i in range(0, len(toks), 2):
        k = i // 2
        s = _hex(toks[i], file, lineno, f"{name} range {k} start")
        e = _hex(toks[i + 1], file, lineno, f"{name} range {k} end")
        if s % LINE:
            raise TraceFormatError(file, lineno, f"{name} range {k} start", f"{toks[i]} is not {LINE}-byte line aligned")
        if e % LINE != LINE - 1:
            raise TraceFormatError(file, lineno, f"{name} range {k} end", f"{toks[i + 1]} is not the last byte of a line")
        if e < s:
            raise TraceFormatError(file, lineno, f"{name} range {k} end", f"{toks[i + 1]} is below the start {toks[i]}")
        if s <= prev_end + 1:
            raise TraceFormatError(file, lineno, f"{name} range {k} start",
                                   f"{toks[i]} overlaps or touches the previous range (ranges are sorted and merged)")
        prev_end = e
        out.append((s, e))
    return tuple(out)


def parse_line(line: str, file: str = "<trace>", lineno: int = 0):
    """One event line (without the newline) -> Compute, Marker or None (an instruction marker)."""
    if not line:
        raise TraceFormatError(file, lineno, "event", "empty line")
    tag = line[0]
    if tag == "@":
        toks = line.split()
        if toks[0] != "@" or len(toks) < 2:
            raise TraceFormatError(file, lineno, "counts", "expected '@ iops,flops,reads,writes'")
        parts = toks[1].split(",")
        if len(parts) != 4:
            raise TraceFormatError(file, lineno, "counts", f"{toks[1]!r}: expected 4 comma-separated counts")
        counts = []
        for name, p in zip(COUNT_FIELDS, parts):
            if not p.isdigit():
                raise TraceFormatError(file, lineno, name, f"{p!r} is not a non-negative integer")
            counts.append(int(p))
        iops, flops, reads, writes = counts
        if reads + writes > MAX_ACCESSES:
            raise TraceFormatError(file, lineno, "reads", f"reads + writes = {reads + writes} > {MAX_ACCESSES} accesses per event")
        rest = toks[2:]
        wr, rd = (), ()
        if rest and rest[0] == "$":
            end = rest.index("*") if "*" in rest else len(rest)
            wr = _ranges(rest[1:end], file, lineno, "write")
            rest = rest[end:]
        if rest and rest[0] == "*":
            if "$" in rest:
                raise TraceFormatError(file, lineno, "write ranges", "'$' after '*': written ranges come first")
            rd = _ranges(rest[1:], file, lineno, "read")
            rest = []
        if rest:
            raise TraceFormatError(file, lineno, "ranges", f"unexpected {rest[0]!r} (expected '$' or '*')")
        if bool(wr) != (writes > 0):
            raise TraceFormatError(file, lineno, "write ranges", f"{writes} writes but {len(wr)} written ranges")
        if bool(rd) != (reads > 0):
            raise TraceFormatError(file, lineno, "read ranges", f"{reads} reads but {len(rd)} read ranges")
        return Compute(iops, flops, reads, writes, wr, rd)
    if tag == "&":
        toks = line.split()
        if len(toks) != 2 or toks[0] != "&" or toks[1] not in PHASES:
            raise TraceFormatError(file, lineno, "phase", f"{line!r}: expected '& GET|COMPUTE|PUT|END'")
        return Marker(toks[1])
    if tag == "!":
        toks = line.split()
        if len(toks) != 2 or not toks[1].isdigit():
            raise TraceFormatError(file, lineno, "instruction marker", f"{line!r}: expected '! n'")
        return None
    if tag in "#^":
        raise TraceFormatError(file, lineno, "event", f"{tag!r} events are not allowed: one thread per trace")
    raise TraceFormatError(file, lineno, "event", f"unknown event tag {tag!r}")


def iter_events(path: str) -> Iterator:
    """Parse (and check line by line) an events file, gzip or plain; yields Compute / Marker in
    file order and checks the phase order."""
    name = os.path.basename(path)
    opener = gzip.open if path.endswith(".gz") else open
    order = -1
    ended = False
    lineno = 0
    try:
        with opener(path, "rt", encoding="ascii", newline="\n") as fh:
            for lineno, raw in enumerate(fh, 1):
                if not raw.endswith("\n"):
                    raise TraceFormatError(name, lineno, "event", "the last line has no newline (truncated file?)")
                ev = parse_line(raw[:-1], name, lineno)
                if ev is None:
                    continue
                if ended:
                    raise TraceFormatError(name, lineno, "phase", "an event after '& END'")
                if isinstance(ev, Marker):
                    k = PHASES.index(ev.phase)
                    if order < 0 and ev.phase not in ("GET", "COMPUTE"):
                        raise TraceFormatError(name, lineno, "phase", f"the first marker is {ev.phase} (GET or COMPUTE expected)")
                    if k <= order:
                        raise TraceFormatError(name, lineno, "phase", f"{ev.phase} after {PHASES[order]}: phases only move forward")
                    order = k
                    ended = ev.phase == "END"
                elif order < 0:
                    raise TraceFormatError(name, lineno, "phase", "a compute event before the first phase marker")
                yield ev
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise TraceFormatError(name, lineno, "file", f"unreadable: {e}") from None
    if not ended:
        raise TraceFormatError(name, lineno, "phase", "no '& END' marker: the trace is incomplete")


class Trace(NamedTuple):
    dir: str
    meta: dict
    events: list  # Compute and Marker, file order
    phases: dict  # phase name -> list of Compute

    def counts(self, phase: str | None = None) -> dict:
        evs = self.phases.get(phase, []) if phase else [e for e in self.events if isinstance(e, Compute)]
        out = {k: sum(getattr(e, k) for e in evs) for k in COUNT_FIELDS}
        out["events"] = len(evs)
        return out


def load(trace_dir: str) -> Trace:
    """Read and validate one instance directory (TRACES.md "Where")."""
    meta_path = os.path.join(trace_dir, META_FILE)
    if not os.path.isfile(meta_path):
        raise TraceFormatError(meta_path, 0, "meta.json", "missing: the trace is incomplete or was never written")
    try:
        with open(meta_path) as fh:
            meta = json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        raise TraceFormatError(meta_path, 0, "meta.json", f"unreadable: {e}") from None
    for f in ("app", "size", "function", "instance", "server", "phases", "objects", "stats"):
        if f not in meta:
            raise TraceFormatError(META_FILE, 0, f, "missing field")
    for f in (EVENTS_FILE, PTHREAD_FILE):
        if not os.path.isfile(os.path.join(trace_dir, f)):
            raise TraceFormatError(os.path.join(trace_dir, f), 0, "file", "missing")
    events = list(iter_events(os.path.join(trace_dir, EVENTS_FILE)))
    phases: dict = {}
    cur = None
    first: dict = {}
    n = 0
    for ev in events:
        if isinstance(ev, Marker):
            cur = ev.phase
            phases[cur] = []
            first[cur] = n + 1
        else:
            n += 1
            phases[cur].append(ev)
    trace = Trace(trace_dir, meta, events, phases)

    # meta.json must describe these events
    want = [{"phase": p, "first_event": first[p], "events": len(phases[p])} for p in phases]
    if meta["phases"] != want:
        raise TraceFormatError(META_FILE, 0, "phases", f"{meta['phases']} but the events give {want}")
    stats = meta["stats"]
    for k, v in trace.counts().items():
        if stats.get(k) != v:
            raise TraceFormatError(META_FILE, 0, f"stats.{k}", f"{stats.get(k)} but the events add up to {v}")
    for p in phases:
        if p == "END":
            continue
        got = stats.get("by_phase", {}).get(p, {})
        for k, v in trace.counts(p).items():
            if got.get(k) != v:
                raise TraceFormatError(META_FILE, 0, f"stats.by_phase.{p}.{k}", f"{got.get(k)} but the events add up to {v}")
    for kind, key in (("get", "get_bytes"), ("put", "put_bytes")):
        total = sum(o["len"] for o in meta["objects"] if o["kind"] == kind)
        if stats.get(key) != total:
            raise TraceFormatError(META_FILE, 0, f"stats.{key}", f"{stats.get(key)} but the {kind} objects add up to {total}")
    return trace


def lines_of(ranges) -> set:
    """The 64-byte line numbers a range list covers."""
    out = set()
    for s, e in ranges:
        out.update(range(s // LINE, e // LINE + 1))
    return out


def main(argv=None) -> int:
    dirs = (argv if argv is not None else sys.argv[1:])
    if not dirs:
        print("usage: sigil.py TRACE_DIR...", file=sys.stderr)
        return 2
    rc = 0
    for d in dirs:
        try:
            t = load(d)
        except TraceFormatError as e:
            print(f"error: {e}", file=sys.stderr)
            rc = 1
            continue
        c = t.counts()
        print(f"{d}: ok, {c['events']} events, phases {' '.join(t.phases)}, iops {c['iops']} flops {c['flops']} "
              f"reads {c['reads']} writes {c['writes']}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
