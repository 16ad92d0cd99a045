"""The bench's model of the directory SRAM (APTA_SRAM).

Chisel's SyncReadMem leaves a read of the address being written in the same cycle undefined, and
the OTC forwards the set it wrote to such a read (rtl/otc/Otc.scala). firtool's simulation model of
the memory (`mem_<depth>x<width>`, one synchronous read port R0, write ports W0..) registers the read
address and reads the array after the edge's writes: it returns the new data, so the forwarding is
never needed in simulation and a design without it passes every test. APTA_SRAM=read-first gives
the bench the other SRAM: the read data is registered at the edge, from the array before that
edge's writes (the behaviour of a read-first SRAM macro), so a missing forward reads stale ways.
The designs' Verilog is not changed; the bench compiles a copy with each memory module's body
replaced (core_bfm.build, ms_bfm.build_ms).
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

MODELS = ("firtool", "read-first")

_MEM = re.compile(r"^module (mem_\d+x\d+)\((.*?)\);\n(.*?)^endmodule\n", re.S | re.M)


def model() -> str:
    """The model of this build: APTA_SRAM (default firtool's)."""
    m = os.environ.get("APTA_SRAM", "firtool")
    if m not in MODELS:
        raise ValueError(f"APTA_SRAM={m!r}: expected one of {', '.join(MODELS)}")
    return m


def read_first(text: str, origin: str = "<verilog>") -> tuple[str, int]:
    """`text` with every firtool memory module made read-first; (the text, how many)."""
    def one(m: re.Match) -> str:
        name, ports, body = m.group(1), m.group(2), m.group(3)
        rd = re.search(r"^\s*assign R0_data = _R0_en_d0 \? Memory\[_R0_addr_d0\] : (\d+)'bx;\n", body, re.M)
        arr = re.search(r"^\s*reg\s+(\[\d+:0\])?\s*Memory\[0:(\d+)\];", body, re.M)
        if not rd or not arr or "R1_" in ports or "_R0_addr_d0 <= R0_addr;" not in body:
            raise ValueError(f"{origin}: module {name} is not firtool's one-read-port memory model "
                             "(the shape rtl/testbench/sram.py rewrites); the read-first model does not apply")
        width = arr.group(1) or ""
        # the data the edge reads, from the array before this edge's writes (nonblocking: the
        # write ports' always block updates Memory after every right-hand side was read)
        body = body.replace("_R0_addr_d0 <= R0_addr;",
                            "if (R0_en)\n      _R0_data_q <= Memory[R0_addr];    // read-first: the old data")
        body = re.sub(r"^(\s*)reg(\s+\[\d+:0\])?\s+_R0_addr_d0;\n",
                      lambda r: f"{r.group(1)}reg {width} _R0_data_q;\n", body, flags=re.M)
        body = body.replace(rd.group(0), f"  assign R0_data = _R0_en_d0 ? _R0_data_q : {rd.group(1)}'bx;\n")
        if "_R0_addr_d0" in body:
            raise ValueError(f"{origin}: module {name}: the read address is used beyond the read port")
        return f"// rtl/testbench/sram.py: read-first model of firtool's {name}\nmodule {name}({ports});\n{body}endmodule\n"

    out, n = _MEM.subn(one, text)
    return out, n


def bench_sources(srcs: list[Path], out_dir: Path) -> tuple[list[Path], bytes]:
    """The sources to compile under the chosen model, and the bytes that key the build: the
    sources themselves for firtool's model; for read-first, copies in out_dir with every memory
    rewritten (an error if none has one: the model would change nothing)."""
    if model() == "firtool":
        return srcs, b""
    out, n = [], 0
    for s in srcs:
        t, k = read_first(s.read_text(), str(s))
        n += k
        h = hashlib.sha256(t.encode()).hexdigest()[:16]
        d = out_dir / "sram-read-first" / h
        d.mkdir(parents=True, exist_ok=True)
        f = d / s.name
        if not f.exists():
            tmp = f.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(t)
            tmp.replace(f)
        out.append(f)
    if not n:
        raise ValueError(f"APTA_SRAM=read-first: no memory module in {', '.join(map(str, srcs))} (a one-set "
                         "directory is a register: the SRAM model does not apply)")
    return out, b"sram=read-first"
