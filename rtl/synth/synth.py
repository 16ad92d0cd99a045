#!/usr/bin/env python3
"""Generic yosys synthesis of the coherence core and the memory server (`make synth`).

1. default variant, hierarchical: `synth -run begin:fine` (coarse: proc, opt, alumacc, share,
   `memory -nomap`), then the fine stage *without* `memory_map` (techmap, abc), so the directory
   array stays one memory cell ($mem_v2) whose bits are reported separately; per module: cells,
   flip-flops (single-bit $_*DFF*_ cells), memory bits. -> build/synth/report.json and the table
   between the markers in rtl/README.md.
2. the stress variant and the model's geometries (m2s1w1, m3s1w1), flattened, full `synth`
   (memories mapped to flip-flops) -> gate-level netlists build/synth/<variant>/CoherenceCore.v
   (+ params.json): the cocotb regression runs on them with RTL_DIR=build/synth (random stress on
   stress, the model's vectors on the other two); and the memory server's vector variant msv ->
   build/synth/msv/MemoryServer.v (the memory-server vectors replay on it).
3. the memory server at the paper's size (default), hierarchical like 1.: cells, flip-flops and
   memory bits per controller.

Usage: rtl/synth/synth.py [--rtl build/rtl] [--out build/synth] [--readme rtl/README.md | --readme '']
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- synth:begin -->", "<!-- synth:end -->"

# fine stage of `synth` (yosys 0.23 `help synth`) minus memory_map
FINE_KEEP_MEM = "opt -fast -full; opt -full; techmap; opt -fast; abc -fast; opt -fast; hierarchy -check; check"


def yosys(script: str, log: Path) -> float:
    """Run a yosys script; its seconds. A script run before on the same Verilog (the files it reads,
    by content) with the same yosys is not run again: its outputs stand, and the seconds are the
    run's that made them (LOG.key holds both), so a re-run of make test does not re-synthesize."""
    read = [Path(w) for w in re.findall(r"read_verilog\s+(?:-\S+\s+)*([^\s;]+)", script)]
    h = hashlib.sha256(script.encode())
    h.update(subprocess.run(["yosys", "-V"], capture_output=True, text=True).stdout.encode())
    for f in read:
        h.update(f.read_bytes())
    stamp = log.with_suffix(".key")
    if stamp.exists() and log.exists():
        key, _, secs = stamp.read_text().partition(" ")
        if key == h.hexdigest():
            return float(secs)
    t = time.time()
    log.parent.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    with open(log, "w") as f:
        r = subprocess.run(["yosys", "-q", "-p", script], stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.exit(f"synth: yosys failed, see {log}")
    secs = time.time() - t
    stamp.write_text(f"{h.hexdigest()} {secs:.3f}")
    return secs


def read_stat(path: Path) -> dict:
    """`stat -json` of yosys 0.23 also prints the hierarchy tree into the JSON: drop those lines."""
    text = "\n".join(l for l in path.read_text().splitlines() if not re.fullmatch(r"\s+[\w$\\.]+\s+\d+", l))
    return json.loads(text)


def memory_bits(netlist: Path) -> dict:
    """bits of the memory cells ($mem_v2: SIZE x WIDTH) per module"""
    bits = {}
    for name, m in json.loads(netlist.read_text())["modules"].items():
        for c in m.get("cells", {}).values():
            if c["type"] == "$mem_v2":
                prm = c["parameters"]
                bits[name] = bits.get(name, 0) + int(prm["SIZE"], 2) * int(prm["WIDTH"], 2)
    return bits


def is_ff(cell_type: str) -> bool:
    return "DFF" in cell_type or "DLATCH" in cell_type


# variants synthesized into flattened netlists build/synth/<variant>/<top>.v: the core's random
# stress and vector geometries, and the memory server's vector variant
NETLIST_VARIANTS = (("stress", "CoherenceCore"), ("m2s1w1", "CoherenceCore"), ("m3s1w1", "CoherenceCore"),
                    ("msv", "MemoryServer"))


# the memory-server top (rtl/MEMSERVER.md) at the paper's scale, synthesized for its controllers' numbers
MS_VARIANT = "default"
MS_CONTROLLERS = ("MemoryServer", "Osc", "VersionTable", "Opc", "ObjMap", "AxiPort", "CoherenceCore", "MsgDecoder")


def synth_memory_server(rtl: Path, out: Path, variant: str) -> dict | None:
    """Hierarchical coarse+fine synth (memories kept) of build/rtl/<variant>/MemoryServer.sv:
    cells / flip-flops / memory bits per controller, each with everything below it."""
    src = rtl / variant / "MemoryServer.sv"
    if not src.exists():
        return None
    d = out / f"ms-{variant}"
    d.mkdir(parents=True, exist_ok=True)
    secs = yosys(f"read_verilog -sv -DSYNTHESIS {src}; synth -top MemoryServer -run begin:fine; "
                 f"{FINE_KEEP_MEM}; tee -q -o {d / 'stat.json'} stat -json; write_json {d / 'netlist.json'}",
                 d / "yosys.log")
    raw = read_stat(d / "stat.json")
    mem_bits = memory_bits(d / "netlist.json")
    mods = {}
    for name, m in raw["modules"].items():
        name = name.lstrip("\\")
        by_type = {k.lstrip("\\"): v for k, v in m.get("num_cells_by_type", {}).items()}
        submods = {k: v for k, v in by_type.items() if not k.startswith("$")}
        mods[name] = {"cells": m["num_cells"] - sum(submods.values()),
                      "flipflops": sum(v for k, v in by_type.items() if is_ff(k)),
                      "memoryBits": mem_bits.get(name, 0), "submodules": submods}

    def total(name: str, key: str) -> int:
        m = mods[name]
        return m[key] + sum(n * total(s, key) for s, n in m["submodules"].items())
    ctl = {n: {k: total(n, k) for k in ("cells", "flipflops", "memoryBits")} for n in MS_CONTROLLERS if n in mods}
    params = json.loads((rtl / variant / "params.json").read_text())
    return {"variant": variant, "seconds": round(secs, 1), "controllers": ctl, "modules": mods,
            "params": {k: params[k] for k in ("servers", "linesPerObject", "stagingSlots", "mapCacheEntries",
                                              "dirSets", "dirWays", "dataBits")}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtl", default=str(ROOT / "build/rtl"))
    ap.add_argument("--out", default=str(ROOT / "build/synth"))
    ap.add_argument("--readme", default=str(ROOT / "rtl/README.md"),
                    help="file whose synth block gets the table; '' = leave every tracked file alone (make test)")
    a = ap.parse_args()
    rtl, out = Path(a.rtl), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    # 1. default, hierarchical, memories kept
    src = rtl / "default" / "CoherenceCore.sv"
    stat = out / "default" / "stat.json"
    secs = yosys(f"read_verilog -sv -DSYNTHESIS {src}; synth -top CoherenceCore -run begin:fine; "
                 f"{FINE_KEEP_MEM}; tee -q -o {stat} stat -json; write_json {out / 'default' / 'netlist.json'}",
                 out / "default" / "yosys.log")
    raw = read_stat(stat)
    mem_bits = memory_bits(out / "default" / "netlist.json")
    mods = {}
    for name, m in raw["modules"].items():
        name = name.lstrip("\\")
        by_type = {k.lstrip("\\"): v for k, v in m.get("num_cells_by_type", {}).items()}
        submods = {k: v for k, v in by_type.items() if not k.startswith("$")}
        mods[name] = {
            "cells": m["num_cells"] - sum(submods.values()),   # this module's own cells
            "flipflops": sum(v for k, v in by_type.items() if is_ff(k)),
            "memoryBits": mem_bits.get(name, 0),
            "submodules": submods,
        }

    def total(name: str, key: str) -> int:      # own + every instance below
        m = mods[name]
        return m[key] + sum(n * total(s, key) for s, n in m["submodules"].items())

    top = {k: total("CoherenceCore", k) for k in ("cells", "flipflops", "memoryBits")}
    params = json.loads((rtl / "default" / "params.json").read_text())

    # 2. flattened gate-level netlists for the cocotb regression (RTL_DIR=build/synth): the stress
    #    variant (random stress) and the model's geometries (the vectors replay on them too)
    netlists = {}
    for v, topname in NETLIST_VARIANTS:
        v_dir = out / v
        v_dir.mkdir(parents=True, exist_ok=True)
        v_stat = v_dir / "stat.json"
        v_secs = yosys(f"read_verilog -sv -DSYNTHESIS {rtl / v / (topname + '.sv')}; synth -flatten -top {topname}; "
                       f"tee -q -o {v_stat} stat -json; write_verilog -noattr {v_dir / (topname + '.v')}",
                       v_dir / "yosys.log")
        shutil.copy(rtl / v / "params.json", v_dir / "params.json")
        v_top = next(iter(read_stat(v_stat)["modules"].values()))
        netlists[v] = {"file": str((v_dir / (topname + ".v")).relative_to(ROOT)), "top": topname, "cells": v_top["num_cells"],
                       "flipflops": sum(n for k, n in v_top["num_cells_by_type"].items() if is_ff(k)),
                       "seconds": round(v_secs, 1)}
    st_secs = netlists["stress"]["seconds"]

    # 3. the memory-server top of the end-to-end variant, hierarchical like 1.: its controllers
    ms = synth_memory_server(rtl, out, MS_VARIANT)

    report = {
        "memoryServer": ms,
        "tool": subprocess.run(["yosys", "-V"], capture_output=True, text=True).stdout.strip(),
        "flow": "generic `synth` (yosys internal gate library), default variant hierarchical; directory "
                "array kept as a memory cell (fine stage without memory_map), its bits under memoryBits",
        "variant": "default",
        "params": {k: params[k] for k in ("servers", "dirSets", "dirWays", "maxPendPerServer", "pendBits", "flitBits")},
        "seconds": round(secs, 1),
        "modules": mods,
        "total": top,
        "stress_netlist": netlists["stress"],
        "netlists": netlists,
    }
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")

    # the README table
    order = sorted(mods, key=lambda n: (n != "CoherenceCore", n))
    lines = [BEGIN,
             f"Default variant ({params['servers']} servers, {params['dirSets']} sets x {params['dirWays']} ways, "
             f"maxPendPerServer {params['maxPendPerServer']}); {report['tool']}, generic `synth` without "
             f"`memory_map` ({secs:.0f} s). Cells and flip-flops are the module's own (submodule instances "
             "not counted); the directory array is one memory cell, its bits in the memory column. "
             "Written by `make synth` (build/synth/report.json).", "",
             "| module | cells | flip-flops | memory bits | instantiates |", "|---|---|---|---|---|"]
    for n in order:
        m = mods[n]
        subs = ", ".join(f"{s}" + (f" x{k}" if k > 1 else "") for s, k in sorted(m["submodules"].items())) or "-"
        lines.append(f"| `{n}` | {m['cells']:,} | {m['flipflops']:,} | {m['memoryBits']:,} | {subs} |")
    lines.append(f"| **total** (CoherenceCore with everything below) | **{top['cells']:,}** | "
                 f"**{top['flipflops']:,}** | **{top['memoryBits']:,}** | |")
    lines += ["", f"Stress variant, flattened with the memories mapped to flip-flops: "
              f"{report['stress_netlist']['cells']:,} cells, {report['stress_netlist']['flipflops']:,} flip-flops "
              f"({st_secs:.0f} s), netlist `build/synth/stress/CoherenceCore.v`; the model's geometries "
              + ", ".join(f"{v} {n['cells']:,} cells" for v, n in netlists.items()
                          if v != "stress" and n["top"] == "CoherenceCore")
              + " (netlists beside it); the memory server's vector variant msv, flattened: "
              + f"{netlists['msv']['cells']:,} cells, {netlists['msv']['flipflops']:,} flip-flops "
              + f"({netlists['msv']['seconds']:.0f} s, `build/synth/msv/MemoryServer.v`).", END]
    if ms:
        mp = ms["params"]
        lines[-1:-1] = ["", f"Memory server (`MemoryServer`, variant {MS_VARIANT}: {mp['servers']} servers, "
                        f"{mp['linesPerObject']} lines per object, {mp['stagingSlots']} staging slots, "
                        f"{mp['mapCacheEntries']} translation-cache entries; {ms['seconds']:.0f} s), the controllers "
                        "with everything they instantiate:", "",
                        "| module | cells | flip-flops | memory bits |", "|---|---|---|---|"]
        for n, m in ms["controllers"].items():
            lines.insert(len(lines) - 1, f"| `{n}` | {m['cells']:,} | {m['flipflops']:,} | {m['memoryBits']:,} |")
    if a.readme:
        readme = Path(a.readme)
        text = readme.read_text()
        block = "\n".join(lines)
        if BEGIN in text:
            text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
        else:
            text = text.rstrip("\n") + "\n\n## Synthesis (yosys)\n\n" + block + "\n"
        readme.write_text(text)
    print(f"synth: default {top['cells']:,} cells, {top['flipflops']:,} flip-flops, {top['memoryBits']:,} memory bits "
          f"({secs:.0f} s); stress netlist {report['stress_netlist']['cells']:,} cells ({st_secs:.0f} s) -> {out}/report.json")


if __name__ == "__main__":
    main()
