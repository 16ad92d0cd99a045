#!/usr/bin/env python3
"""The CXL emulation's backing files (qemu-cxl/RINGS.md, numbers in schema/layout.json).

One file per guest (its header copy, control block, rings and job block: the only memory its
cxl-type3 device is backed by) and the daemon's private server file (header, then the data area:
object map and object data). Offsets are from the start of the file they are in.

As a script: writes the C header that the daemon (C++) and the guest library (C) include::

    python -m apta.layout --out build/qemu-cxl/apta_layout.h

As a module: `load()` returns a `Layout` with the same numbers for Python (tests, tools), so no
offset is written twice. The generator checks the numbers fit together (rings inside the guest
area, the job block after it and inside the guest file) before writing anything.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from .paths import SCHEMA, emit

LAYOUT_PATH = SCHEMA / "layout.json"
_CTYPE = {"u8[8]": None, "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t"}


@dataclass(frozen=True)
class Layout:
    raw: dict
    slots: int                      # ring slots S (power of two)

    @property
    def slot_bytes(self) -> int:
        return self.raw["ring"]["slot_bytes"]

    @property
    def ring_bytes(self) -> int:
        return self.raw["ring"]["header_bytes"] + self.slots * self.slot_bytes

    @property
    def data_offset(self) -> int:
        return self.raw["data_offset"]

    def hdr(self, name: str) -> int:
        return next(f["offset"] for f in self.raw["header"]["fields"] if f["name"] == name)

    # ---- the files of a rack directory ----
    def guest_path(self, rack, g: int) -> Path:
        """Guest g's file in the rack directory `rack` (its device's only backing)."""
        return Path(rack) / self.raw["files"]["guest"].format(g=g)

    def server_path(self, rack) -> Path:
        """The daemon's private file (header + data area) in the rack directory `rack`."""
        return Path(rack) / self.raw["files"]["server"]

    @property
    def guest_bytes(self) -> int:
        """What the daemon maps of a guest file (a guest file must be at least this long)."""
        return self.raw["files"]["guest_bytes"]

    # ---- offsets in a guest's file ----
    @property
    def guest_area(self) -> int:
        return self.raw["guest_area"]["offset"]

    def ctl(self, name: str) -> int:
        c = self.raw["guest_area"]["control"]
        return self.guest_area + c["offset"] + next(f["offset"] for f in c["fields"] if f["name"] == name)

    def ring(self, which: str) -> int:
        """Offset of ring `which` (request, response, invalidation) in a guest's file."""
        return self.guest_area + self.raw["guest_area"]["rings"][which]

    def slot(self, ring: int, k: int) -> int:
        return ring + self.raw["ring"]["header_bytes"] + (k % self.slots) * self.slot_bytes

    @property
    def job(self) -> int:
        """Offset of the job block (JOBS.md) in a guest's file."""
        return self.raw["jobs"]["offset"]

    def job_field(self, name: str) -> int:
        return self.job + next(f["offset"] for f in self.raw["jobs"]["fields"] if f["name"] == name)

    def job_area(self, name: str) -> tuple[int, int]:
        """(offset, bytes) of area `name` (args, inputs, log, emits) of the job block in a guest's file."""
        off, size = self.raw["jobs"]["areas"][name]
        return self.job + off, size


def check(raw: dict, slots: int) -> None:
    r, ga, j, fl = raw["ring"], raw["guest_area"], raw["jobs"], raw["files"]
    if slots <= 0 or slots & (slots - 1):
        raise ValueError(f"ring slots {slots} not a power of two")
    ring_bytes = r["header_bytes"] + slots * r["slot_bytes"]
    starts = sorted(ga["rings"].values())
    if starts[0] < ga["control"]["offset"] + ga["control"]["bytes"]:
        raise ValueError("first ring overlaps the control block")
    for a, b in zip(starts, starts[1:] + [ga["bytes"]]):
        if a + ring_bytes > b:
            raise ValueError(f"ring at {a} ({ring_bytes} bytes) overlaps the next or leaves the guest area at {b}")
    if ga["offset"] < raw["header"]["bytes"]:
        raise ValueError("the guest area overlaps the header")
    if raw["data_offset"] < raw["header"]["bytes"]:
        raise ValueError("the server file's data area overlaps its header")
    if r["tail_offset"] < 8 or r["tail_offset"] + 8 > r["header_bytes"]:
        raise ValueError("ring tail must be a separate word inside the ring header")
    if j["offset"] < ga["offset"] + ga["bytes"]:
        raise ValueError("the job block overlaps the guest area")
    if j["offset"] + j["bytes"] > fl["guest_bytes"]:
        raise ValueError("the job block leaves the guest file's mapped bytes")
    if "{g}" not in fl["guest"] or fl["guest"].replace("{g}", "") == fl["server"]:
        raise ValueError("files.guest needs {g} and must differ from files.server")
    end = j["header_bytes"]
    for name, (off, size) in sorted(j["areas"].items(), key=lambda kv: kv[1][0]):
        if off < end or off + size > j["bytes"]:
            raise ValueError(f"job area {name} at {off} ({size} bytes) overlaps the previous or leaves the block")
        end = off + size


def load(path: Path | str = LAYOUT_PATH, slots: int | None = None) -> Layout:
    raw = json.loads(Path(path).read_text())
    s = slots or raw["ring"]["default_slots"]
    check(raw, s)
    return Layout(raw, s)


def max_slots(raw: dict) -> int:
    """The largest power-of-two ring that still fits between two ring starts."""
    ga, r = raw["guest_area"], raw["ring"]
    starts = sorted(ga["rings"].values())
    room = min(b - a for a, b in zip(starts, starts[1:] + [ga["bytes"]]))
    n = (room - r["header_bytes"]) // r["slot_bytes"]
    return 1 << (n.bit_length() - 1)


def gen_c(raw: dict, src: str) -> str:
    check(raw, raw["ring"]["default_slots"])
    r, ga = raw["ring"], raw["guest_area"]
    P = "APTA_"
    L = [f"/* GENERATED by python/apta/layout.py from {src}: do not edit. The layout of the CXL",
         " * emulation's files (qemu-cxl/RINGS.md): a guest's own file (header copy, control block, rings,",
         " * job block) and the daemon's private server file (header, data area). C99 and C++.",
         " * Little-endian host assumed (x86, as the guests). */",
         "#ifndef APTA_LAYOUT_H", "#define APTA_LAYOUT_H", "#include <stdint.h>", "#include <string.h>", "",
         f"#define {P}LAYOUT_VERSION {raw['version']}u",
         f'#define {P}MAGIC "{raw["magic"]}"',
         f"#define {P}MAGIC_BYTES {len(raw['magic'])}u",
         f"#define {P}HEADER_BYTES {raw['header']['bytes']}u",
         f'#define {P}GUEST_FILE_FMT "{raw["files"]["guest"].replace("{g}", "%u")}"  /* in the rack directory */',
         f'#define {P}SERVER_FILE "{raw["files"]["server"]}"',
         f"#define {P}GUEST_FILE_BYTES {raw['files']['guest_bytes']}ull  /* what the daemon maps of a guest file */",
         f"#define {P}SERVER_GUEST {raw['files']['server_guest']}u  /* the header's guest field in the server file */"]
    for f in raw["header"]["fields"]:
        L.append(f"#define {P}HDR_{f['name'].upper()} {f['offset']}u")
    for k, v in raw["daemon_states"].items():
        L.append(f"#define {P}DAEMON_{k.upper()} {v}u")
    L += [f"#define {P}GUEST_AREA {ga['offset']}u  /* in a guest's file */", f"#define {P}GUEST_AREA_BYTES {ga['bytes']}u",
          f"#define {P}CTL_BYTES {ga['control']['bytes']}u"]
    for f in ga["control"]["fields"]:
        L.append(f"#define {P}CTL_{f['name'].upper()} {ga['control']['offset'] + f['offset']}u")
    for k, v in raw["guest_states"].items():
        L.append(f"#define {P}GUEST_{k.upper()} {v}u")
    for k, v in ga["rings"].items():
        L.append(f"#define {P}RING_{k.upper()} {v}u  /* offset of the {k} ring in the guest area */")
    L += [f"#define {P}DEFAULT_GUESTS {raw['default_guests']}u", f"#define {P}MAX_GUESTS {raw['max_guests']}u",
          f"#define {P}DATA_OFFSET {raw['data_offset']}ull  /* of the data area in the server file */",
          f"#define {P}RING_HEADER_BYTES {r['header_bytes']}u", f"#define {P}RING_HEAD {r['head_offset']}u",
          f"#define {P}RING_TAIL {r['tail_offset']}u", f"#define {P}DEFAULT_SLOTS {r['default_slots']}u",
          f"#define {P}MAX_SLOTS {max_slots(raw)}u  /* the largest power of two that fits a ring's room */",
          f"#define {P}SLOT_BYTES {r['slot_bytes']}u"]
    for k in ("flit_bits", "refused", "seq", "flit"):
        L.append(f"#define {P}SLOT_{k.upper()} {r['slot'][k + '_offset']}u")
    L.append(f"#define {P}SLOT_FLIT_ROOM ({P}SLOT_BYTES - {P}SLOT_FLIT)")
    for k, v in raw["refusals"].items():
        L.append(f"#define {P}REFUSED_{k.upper()} {v}u")
    j, of = raw["jobs"], raw["object_format"]
    L += [f"#define {P}JOBS {j['offset']}ull  /* the job block in a guest's file */", f"#define {P}JOB_BYTES {j['bytes']}u"]
    for f in j["fields"]:
        L.append(f"#define {P}JOBF_{f['name'].upper()} {f['offset']}u  /* field of a job block's header */")
    for k, (off, size) in j["areas"].items():
        L += [f"#define {P}JOB_AREA_{k.upper()} {off}u", f"#define {P}JOB_AREA_{k.upper()}_SIZE {size}u"]
    for k, v in j["runner_states"].items():
        L.append(f"#define {P}RUNNER_{k.upper()} {v}u")
    L += [f'#define {P}OBJ_MAGIC "{of["magic"]}"']
    for f in of["fields"]:
        L.append(f"#define {P}OBJF_{f['name'].upper()} {f['offset']}u  /* field of an object's header line */")
    L += [f"#define {P}LEASE_MS {raw['lease_ms']}u", f"#define {P}GUEST_HEARTBEAT_MS {raw['guest_heartbeat_ms']}u", "",
          "/* offsets from the start of a guest's file (every guest's file has the same layout) */",
          f"static inline uint64_t apta_ring_off(unsigned ring) {{ return {P}GUEST_AREA + ring; }}",
          f"static inline uint64_t apta_ring_bytes(uint32_t slots) {{ return {P}RING_HEADER_BYTES + (uint64_t)slots * {P}SLOT_BYTES; }}",
          "/* slot k of the ring at `ring` (S = slots, a power of two); indexes never wrap */",
          f"static inline uint64_t apta_slot_off(uint64_t ring, uint64_t k, uint32_t slots) {{",
          f"  return ring + {P}RING_HEADER_BYTES + (k & (uint64_t)(slots - 1)) * {P}SLOT_BYTES; }}",
          "",
          "/* little-endian loads/stores at a byte offset of a mapped file (memcpy: no alignment assumption) */"]
    for t, n in (("uint16_t", 16), ("uint32_t", 32), ("uint64_t", 64)):
        L.append(f"static inline {t} apta_ld{n}(const volatile void *base, uint64_t off) {{ {t} v; "
                 f"memcpy(&v, (const char *)base + off, sizeof v); return v; }}")
        L.append(f"static inline void apta_st{n}(volatile void *base, uint64_t off, {t} v) {{ "
                 f"memcpy((char *)base + off, &v, sizeof v); }}")
    L += ["", "#endif", ""]
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layout", default=str(LAYOUT_PATH))
    ap.add_argument("--out", help="output header (default stdout)")
    a = ap.parse_args(argv)
    text = gen_c(json.loads(Path(a.layout).read_text()), "schema/layout.json")
    emit(text, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
