#!/usr/bin/env python3
"""The executor's side of the job blocks of qemu-cxl/JOBS.md, and the object format, in stdlib
Python (the executor, the runner tests and tools use it; the runner itself is C, guest/aptarun.c).

Numbers come from schema/layout.json through apta.layout; nothing here is a second copy of
an offset. Object format (JOBS.md): line 0 = magic `APTAOBJ1`, u64 length, u64 FNV-1a 64 of the
data, rest 0; the data from line 1, zero-padded to the map entry's lines.

    r = Rack("build/qemu-cxl/runs/x")                     # the rack directory (RINGS.md)
    r.data_write(0x1000, encode_object(b"hello", 2))       # the server file: no guest can reach it
    jb = JobBlock(r, 0)
    job = jb.post(["run demo#0@0", "fn video validate", "get in 7 2"], {"cfg": b"{}"})
    rc = jb.wait(job, 30.0)
    recs, _ = jb.read_log()
    outs = jb.emits(recs)
"""
from __future__ import annotations

import json
import mmap
import os
import struct
import sys
import time
from pathlib import Path

from apta import layout as gen_layout
from apta import shm

LINE = 64
_LAY = gen_layout.load()
_OF = _LAY.raw["object_format"]
OBJ_MAGIC = _OF["magic"].encode()
_OBJF = {f["name"]: f["offset"] for f in _OF["fields"]}
RUNNER_STATES = _LAY.raw["jobs"]["runner_states"]
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_M64 = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64 of `data` (the object format's digest and the history's `digest`)."""
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & _M64
    return h


def digest_hex(data: bytes) -> str:
    """The digest as the log writes it: 16 lowercase hex digits."""
    return f"{fnv1a64(data):016x}"


def obj_lines(length: int) -> int:
    """Lines a store object of `length` bytes needs: the header line + ceil(length / 64)."""
    if length < 0:
        raise ValueError(f"negative object length {length}")
    return 1 + (length + LINE - 1) // LINE


def encode_object(data: bytes, lines: int) -> bytes:
    """The object's lines (JOBS.md object format), zero-padded to `lines` * 64 bytes."""
    need = obj_lines(len(data))
    if lines < need:
        raise ValueError(f"object of {len(data)} bytes needs {need} lines, the entry has {lines}")
    hdr = bytearray(LINE)
    hdr[_OBJF["magic"]:_OBJF["magic"] + len(OBJ_MAGIC)] = OBJ_MAGIC
    struct.pack_into("<Q", hdr, _OBJF["length"], len(data))
    struct.pack_into("<Q", hdr, _OBJF["digest"], fnv1a64(data))
    return bytes(hdr) + bytes(data) + bytes(lines * LINE - LINE - len(data))


def decode_object(raw: bytes, what: str = "object") -> bytes:
    """The data of an object's lines; ValueError naming `what` and the field that is wrong."""
    if len(raw) < LINE:
        raise ValueError(f"{what}: {len(raw)} bytes, shorter than the header line")
    magic = bytes(raw[_OBJF["magic"]:_OBJF["magic"] + len(OBJ_MAGIC)])
    if magic != OBJ_MAGIC:
        raise ValueError(f"{what}: magic {magic!r}, expected {OBJ_MAGIC!r}")
    n = struct.unpack_from("<Q", raw, _OBJF["length"])[0]
    if n > len(raw) - LINE:
        raise ValueError(f"{what}: length {n} exceeds the {len(raw) - LINE} bytes after the header")
    data = bytes(raw[LINE:LINE + n])
    want = struct.unpack_from("<Q", raw, _OBJF["digest"])[0]
    got = fnv1a64(data)
    if got != want:
        raise ValueError(f"{what}: digest {got:016x} of the data, header says {want:016x}")
    return data


class File:
    """One mmapped file of the rack (RINGS.md), read/write, little-endian access at its offsets."""

    def __init__(self, path):
        self.path = Path(path)
        self.f = open(self.path, "r+b")
        self.m = mmap.mmap(self.f.fileno(), 0)
        self.size = len(self.m)

    def close(self):
        if self.m is not None:
            self.m.close()
            self.f.close()
            self.m = None

    def u32(self, off: int) -> int:
        return shm.load32(self.m, off)

    def u64(self, off: int) -> int:
        return shm.load64(self.m, off)

    def set_u32(self, off: int, v: int):
        shm.store32(self.m, off, v)

    def set_u64(self, off: int, v: int):
        shm.store64(self.m, off, v)

    def read(self, off: int, n: int) -> bytes:
        return bytes(self.m[off:off + n])

    def write(self, off: int, b: bytes):
        self.m[off:off + len(b)] = b


class Rack:
    """The rack directory (RINGS.md) as the host's trusted side sees it: the server file's data area
    (the Object Manager loads and reads the memory server's DRAM there; addresses of data_* are byte
    addresses in the data area, the memory server's AXI address) and each guest's own file (the
    executor's job blocks). The host may open every file; a guest has only its own."""

    def __init__(self, path, layout=None):
        self.path = Path(path)
        self.lay = layout or _LAY
        self.server = File(self.lay.server_path(self.path))
        self.data_bytes = max(0, self.server.size - self.lay.data_offset)
        self._guests: dict[int, File] = {}

    def guest(self, g: int) -> File:
        if g not in self._guests:
            self._guests[g] = File(self.lay.guest_path(self.path, g))
        return self._guests[g]

    def close(self):
        self.server.close()
        for f in self._guests.values():
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _data_range(self, addr: int, n: int):
        if addr < 0 or n < 0 or addr + n > self.data_bytes:
            raise ValueError(f"data area [{addr:#x}, {addr + n:#x}) outside its {self.data_bytes:#x} bytes")

    def data_write(self, addr: int, raw: bytes):
        self._data_range(addr, len(raw))
        self.server.write(self.lay.data_offset + addr, raw)

    def data_read(self, addr: int, n: int) -> bytes:
        self._data_range(addr, n)
        return self.server.read(self.lay.data_offset + addr, n)


class JobBlock:
    """Guest g's job block (JOBS.md) in guest g's file, seen from the executor."""

    def __init__(self, rack: Rack, g: int):
        self.r, self.g, self.lay = rack.guest(g), g, rack.lay
        self._f = {f["name"]: (self.lay.job_field(f["name"]), f["type"]) for f in self.lay.raw["jobs"]["fields"]}
        self.areas = {k: self.lay.job_area(k) for k in self.lay.raw["jobs"]["areas"]}

    def field(self, name: str) -> int:
        off, t = self._f[name]
        return self.r.u64(off) if t == "u64" else self.r.u32(off)

    def _set(self, name: str, v: int):
        off, t = self._f[name]
        (self.r.set_u64 if t == "u64" else self.r.set_u32)(off, v)

    @property
    def state(self) -> int:
        return self.field("runner_state")

    @property
    def life(self) -> tuple[int, int]:
        v = self.field("runner_life")
        return v >> 32, v & 0xFFFFFFFF

    @property
    def heartbeat(self) -> int:
        return self.field("runner_heartbeat")

    @property
    def post_seq(self) -> int:
        return self.field("post_seq")

    @property
    def start_seq(self) -> int:
        return self.field("start_seq")

    @property
    def done_seq(self) -> int:
        return self.field("done_seq")

    def idle(self) -> bool:
        """The runner is idle and has finished every job posted to it."""
        return self.state == RUNNER_STATES["idle"] and self.done_seq == self.post_seq

    def post(self, directives: list[str], inputs: dict[str, bytes] | None = None) -> int:
        """Write args (the directives, then one `input <name> <off> <len>` per input) and the
        inputs, the sizes, then post_seq + 1 (last). Returns the job number. RuntimeError if the
        runner is not idle, ValueError if a directive has a newline or the job does not fit."""
        if not self.idle():
            raise RuntimeError(f"guest {self.g}: runner not idle (state {self.state}, "
                               f"done_seq {self.done_seq}, post_seq {self.post_seq})")
        lines = list(directives)
        blob = bytearray()
        for name, data in (inputs or {}).items():
            if not name or any(c.isspace() for c in name):
                raise ValueError(f"guest {self.g}: input name {name!r} empty or with spaces")
            lines.append(f"input {name} {len(blob)} {len(data)}")
            blob += data
        for d in lines:
            if "\n" in d or "\r" in d:
                raise ValueError(f"guest {self.g}: directive with a line break: {d!r}")
        args = ("\n".join(lines) + "\n").encode()
        a_off, a_size = self.areas["args"]
        i_off, i_size = self.areas["inputs"]
        if len(args) > a_size:
            raise ValueError(f"guest {self.g}: args of {len(args)} bytes exceed the area's {a_size}")
        if len(blob) > i_size:
            raise ValueError(f"guest {self.g}: inputs of {len(blob)} bytes exceed the area's {i_size}")
        self.r.write(a_off, args)
        self.r.write(i_off, bytes(blob))
        self._set("args_bytes", len(args))
        self._set("input_bytes", len(blob))
        job = self.post_seq + 1
        self._set("post_seq", job)                    # last (x86 stores are ordered)
        return job

    def started(self, job: int) -> bool:
        return self.start_seq >= job

    def done(self, job: int) -> bool:
        return self.done_seq >= job

    def rc(self) -> int:
        return self.field("rc")

    def wait(self, job: int, timeout: float = 30.0, poll: float = 0.002) -> int:
        """Wait until `job` is done; its rc. TimeoutError naming the guest, job and runner state."""
        deadline = time.monotonic() + timeout
        while not self.done(job):
            if time.monotonic() > deadline:
                raise TimeoutError(f"guest {self.g}: job {job} not done after {timeout}s (state {self.state}, "
                                   f"start_seq {self.start_seq}, done_seq {self.done_seq}, life {self.life})")
            time.sleep(poll)
        return self.rc()

    def read_log(self, offset: int = 0) -> tuple[list[dict], int]:
        """The complete JSON lines of the current job's log from byte `offset`: (records, new offset)."""
        l_off, l_size = self.areas["log"]
        n = min(self.field("log_bytes"), l_size)
        if offset >= n:
            return [], offset
        raw = self.r.read(l_off + offset, n - offset)
        end = raw.rfind(b"\n")
        if end < 0:
            return [], offset
        recs, pos = [], offset
        for line in raw[:end + 1].split(b"\n")[:-1]:
            if line.strip():
                try:
                    rec = json.loads(line)
                    if not isinstance(rec, dict):
                        raise ValueError("not an object")
                except ValueError as e:
                    raise ValueError(f"guest {self.g} job {self.start_seq}: malformed log line at byte {pos}: "
                                     f"{line[:200]!r} ({e})") from None
                recs.append(rec)
            pos += len(line) + 1
        return recs, offset + end + 1

    def emits(self, records: list[dict]) -> dict[str, bytes]:
        """The external outputs named by the log's `emit` records, from the emits area."""
        e_off, e_size = self.areas["emits"]
        out = {}
        for rec in records:
            if "emit" not in rec:
                continue
            o, n = int(rec["off"]), int(rec["len"])
            if o < 0 or n < 0 or o + n > e_size:
                raise ValueError(f"guest {self.g}: emit {rec['emit']!r} [{o}, {o + n}) outside the area's {e_size} bytes")
            out[rec["emit"]] = self.r.read(e_off + o, n)
        return out


def _selftest() -> int:
    assert fnv1a64(b"") == FNV_OFFSET and fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    for n in (0, 1, 63, 64, 65, 1000):
        d = os.urandom(n)
        raw = encode_object(d, obj_lines(n))
        assert len(raw) == obj_lines(n) * LINE and decode_object(raw) == d
    print("jobs.py: ok")
    return 0


if __name__ == "__main__":
    sys.exit(_selftest())
