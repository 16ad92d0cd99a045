"""`make calibrate-gem5`: microbenchmarks through gem5's CXL model, beside published measurements
of real CXL.mem devices.

    python -m apta.gem5.calibrate --gem5 GEM5 [--out build/calibrate-gem5] [--override links.dm_latency_ns=250]

Each microbenchmark is a one-function trace (workloads/TRACES.md) and plan (sim/plan.py) run by
sim/gem5/configs/run_apta.py in one configuration:

  chase_cxl      dependent loads of distinct lines of an object in the CXL window (CXL cached, cold:
                 every load misses and crosses the link): load-to-use latency
  chase_local    the same chase over the server's local DDR4: the local latency, for the ratio
  stream_read    the object's lines read in bursts of one MSHR-full each (CXL cached, cold): read
                 bandwidth over the link
  put_stream     a logged put of the object (CXL uncached: the log, then the lines in place, each
                 line written through): write bandwidth over the link
  bisnp          CXL cached: c1 reads an object, c2 then puts it (the memory server snoops c1's
                 caches line by line: the BISnp round trip, from gem5's statistics), c1 reads it
                 again (every line must be the new version: the stale-data check)

Each runs twice: with Table II's link (the paper's pessimistic OpenCAPI-like 500 ns one way, the
parameters every evaluation uses), and with the link of a directly attached CXL.mem device, whose
one-way latency `--device-link-ns` (default: half of the 70 ns Pond measured as CXL's added load
latency, since a load crosses the link twice) is the only change. The report puts each beside the
published figures of `REFERENCES` with its source.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from apta.gem5 import model as g5
from apta.paths import ROOT

LINE = 64
OBJECT_BASE, LOCAL_BASE = 0x10000000, 0x40000000

# Published measurements of real CXL.mem devices the model is compared with. A band is the range
# the source reports over its devices.
REFERENCES = [
    {"measure": "load_latency_ratio", "low": 2.0, "high": 5.0,
     "what": "CXL memory load latency over local DRAM, three CXL memory-expansion cards",
     "source": "Liu et al., 'Exploring and Evaluating Real-world CXL: Use Cases and System Adoption', "
               "arXiv 2405.14209 (2024): '2-5x higher latency than local DRAM'"},
    {"measure": "load_latency_added_ns", "low": 70.0, "high": 90.0,
     "what": "load latency CXL memory adds over NUMA-local DRAM, a pool directly attached to 8-16 sockets "
             "(no switch)",
     "source": "Li et al., 'Pond: CXL-Based Memory Pooling Systems for Cloud Platforms', ASPLOS 2023: "
               "70-90 ns over NUMA-local DRAM"},
]


# ---- the microbenchmarks' traces and plans ---------------------------------------------------------
def _event(ops: int, reads: list[int] = (), writes: list[int] = ()) -> str:
    rd = " ".join(f"{a:#x} {a + LINE - 1:#x}" for a in reads)
    wr = " ".join(f"{a:#x} {a + LINE - 1:#x}" for a in writes)
    return f"@ {ops},0,{len(reads)},{len(writes)}" + (f" $ {wr}" if writes else "") + (f" * {rd}" if reads else "")


def write_trace(d: Path, app: str, function: str, server: str, objects: list[dict], phases: dict[str, list[str]]) -> None:
    """One instance's trace directory (workloads/TRACES.md): `phases` maps GET/COMPUTE/PUT to events."""
    d.mkdir(parents=True, exist_ok=True)
    lines, meta_phases, n = ["@ 1,0,0,0"], [], 1       # the tracer's start-up event, dropped by the loader
    for ph in ("GET", "COMPUTE", "PUT"):
        if ph in phases:
            meta_phases.append({"phase": ph, "first_event": n + 1})
            lines.append(f"& {ph}")
            lines += phases[ph]
            n += len(phases[ph])
    lines.append("& END")
    with gzip.GzipFile(d / "sigil.events.out-1.gz", "wb", mtime=0) as fh:
        fh.write(("\n".join(lines) + "\n").encode())
    (d / "sigil.pthread.out").write_text("")
    meta = {"app": app, "size": "micro", "function": function, "instance": 0, "server": server,
            "phases": meta_phases, "objects": objects, "stats": {"events": n - 1}}
    (d / "meta.json").write_text(json.dumps(meta))


def chase_order(lines: int) -> list[int]:
    """Every line once, consecutive loads far apart (k x stride mod lines, the stride about 0.618 of
    the object and coprime with its size): no neighbour follows a line, so no row buffer or
    prefetch-like locality helps a load."""
    from math import gcd
    stride = max(1, int(lines * 0.618))
    while lines > 2 and (gcd(stride, lines) != 1 or stride in (1, lines - 1)):
        stride += 1
    return [k * stride % lines for k in range(lines)]


def microbenchmarks(root: Path, lines: int, mshrs: int) -> dict[str, dict]:
    """Write every microbenchmark's traces and plan under root; name -> {plan, config, measure}."""
    order = chase_order(lines)
    obj = lambda kind, name: {"kind": kind, "name": name, "addr": hex(OBJECT_BASE), "len": lines * LINE}
    heap = [OBJECT_BASE + k * LINE for k in order]
    local = [LOCAL_BASE + k * LINE for k in order]
    seq = [OBJECT_BASE + k * LINE for k in range(lines)]
    bursts = [_event(0, reads=seq[k:k + mshrs]) for k in range(0, lines, mshrs)]
    specs = {
        "chase_cxl": ("cxl_cached", [("bench", "c1", [obj("get", "heap")], {"COMPUTE": [_event(0, [a]) for a in heap]})]),
        "chase_local": ("cxl_cached", [("bench", "c1", [], {"COMPUTE": [_event(0, [a]) for a in local]})]),
        "stream_read": ("cxl_cached", [("bench", "c1", [obj("get", "heap")], {"COMPUTE": bursts})]),
        "put_stream": ("cxl_uncached", [("bench", "c1", [obj("put", "heap")],
                                         {"PUT": [_event(0, writes=seq[k:k + mshrs]) for k in range(0, lines, mshrs)]})]),
        # the re-read after the put hits c1's caches unless the put's BISnp invalidated them
        "bisnp": ("cxl_cached", [("reader", "c1", [obj("get", "heap")], {"COMPUTE": bursts}),
                                 ("writer", "c2", [obj("put", "heap")],
                                  {"PUT": [_event(0, writes=seq[k:k + mshrs]) for k in range(0, lines, mshrs)]}),
                                 ("rereader", "c1", [obj("get", "heap")], {"COMPUTE": bursts})]),
    }
    out = {}
    for name, (config, fns) in specs.items():
        insts = []
        for k, (fn, server, objects, phases) in enumerate(fns):
            d = root / name / f"{fn}.0"
            write_trace(d, name, fn, server, objects, phases)
            insts.append({"function": fn, "label": fn, "index": 0, "server": int(server[1:]) - 1,
                          "deps": list(range(k)), "reads": [o["name"] for o in objects if o["kind"] == "get"],
                          "writes": [o["name"] for o in objects if o["kind"] == "put"], "trace": str(d.resolve())})
        plan = {"app": name, "objects": ["heap"], "instances": insts}
        (root / f"{name}.plan.json").write_text(json.dumps(plan))
        out[name] = {"plan": str(root / f"{name}.plan.json"), "config": config}
    return out


# ---- the arithmetic ------------------------------------------------------------------------------------
def measures(results: dict[str, dict], lines: int, mshrs: int) -> dict[str, float | None]:
    """What the microbenchmarks measured, from their result documents (each with "gem5_stats"):
    load-to-use latencies (ns), their ratio, bandwidths (GB/s payload) and the BISnp round trip."""
    def inst(name: str, k: int = 0) -> dict:
        r = results.get(name)
        if not r or not r.get("completed"):
            raise g5.Gem5Error(f"microbenchmark {name}: no completed run")
        return r["instances"][k]
    cxl = inst("chase_cxl")["compute_ns"] / lines
    local = inst("chase_local")["compute_ns"] / lines
    rd = inst("stream_read")["compute_ns"]
    put = inst("put_stream")["put_ns"]
    stats = results["bisnp"].get("gem5_stats", {}) if results.get("bisnp") else {}
    return {
        "load_latency_cxl_ns": round(cxl, 1),
        "load_latency_local_ns": round(local, 1),
        "load_latency_ratio": round(cxl / local, 2) if local > 0 else None,
        "load_latency_added_ns": round(cxl - local, 1),
        "read_gbps": round(lines * LINE / rd, 2) if rd > 0 else None,            # bytes per ns = GB/s
        # a logged put writes every line twice (the log, then in place) plus the log's flag and clear
        "put_write_gbps": round((2 * lines + 3) * LINE / put, 2) if put > 0 else None,
        "bisnp_round_trip_ns": stats.get("bisnp_round_trip_ns"),
    }


def compare(m: dict, refs: list[dict] = REFERENCES) -> list[dict]:
    """Each reference beside the model's figure: inside its band, or how far outside (model / the
    nearer bound)."""
    rows = []
    for ref in refs:
        v = m.get(ref["measure"])
        row = dict(ref, model=v)
        if v is None:
            row["verdict"] = "not measured"
        elif ref["low"] <= v <= ref["high"]:
            row["verdict"] = "inside"
        else:
            bound = ref["low"] if v < ref["low"] else ref["high"]
            row["verdict"] = f"{v / bound:.2f}x the {'lower' if v < ref['low'] else 'upper'} bound"
        rows.append(row)
    return rows


DEVICE_LINK_NS = 35.0   # half of Pond's 70 ns (REFERENCES): a load crosses the link there and back


def calibrate(args, name: str, overrides: dict, out: Path) -> dict:
    """Every microbenchmark with these parameter overrides: the measures beside the references."""
    from apta.gem5 import eval as g5eval
    spec = g5.system_spec(args.params, overrides)
    benches = microbenchmarks(out / "traces", args.lines, spec["mshrs"])
    results = {}
    for bench, b in benches.items():
        sc = {"name": bench, "config": b["config"], "overrides": overrides}
        r = g5eval.run_gem5(args.gem5, Path(b["plan"]), sc, out / "raw" / name / bench, args.params, args.timeout)
        results[bench] = r
        print(f"[calibrate-gem5] {name}: {bench} ({b['config']}): " + ("done" if r.get("completed") else f"FAILED {r.get('stall')}"),
              flush=True)
    m = measures(results, args.lines, spec["mshrs"])
    print(f"[calibrate-gem5] {name}: load-to-use {m['load_latency_cxl_ns']} ns over CXL, {m['load_latency_local_ns']} ns "
          f"local ({m['load_latency_ratio']}x); read {m['read_gbps']} GB/s, logged-put write {m['put_write_gbps']} GB/s; "
          f"BISnp round trip {m['bisnp_round_trip_ns']} ns", flush=True)
    return {"name": name, "overrides": overrides, "link": spec["cxl"], "measures": m, "references": compare(m)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gem5", required=True)
    ap.add_argument("--out", default=str(ROOT / "build" / "calibrate-gem5"))
    ap.add_argument("--lines", type=int, default=4096, help="lines per microbenchmark object")
    ap.add_argument("--params", default=str(ROOT / "sim" / "params.json"))
    ap.add_argument("--override", action="append", default=[], metavar="section.key=value",
                    help="a parameter override for every run (e.g. links.dm_latency_ns=250)")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--device-link-ns", type=float, default=DEVICE_LINK_NS,
                    help="the one-way link latency of the directly attached device run (0: no such run)")
    args = ap.parse_args(argv)
    overrides = {}
    for o in args.override:
        k, eq, v = o.partition("=")
        if not eq:
            ap.error(f"--override {o!r}: section.key=value")
        overrides[k] = json.loads(v)
    if args.device_link_ns < 0:
        ap.error(f"--device-link-ns {args.device_link_ns}: a latency is not negative (0: no device run)")
    out = Path(args.out)
    runs = [calibrate(args, "table-ii", overrides, out)]
    if args.device_link_ns:
        runs.append(calibrate(args, "device", dict(overrides, **{"links.dm_latency_ns": args.device_link_ns}), out))
    doc = {"lines": args.lines, "runs": runs}
    (out / "calibration.json").write_text(json.dumps(doc, indent=1) + "\n")
    print("calibrate-gem5: " + "; ".join(
        f"{r['name']} ({r['link']['latency_ns']:g} ns link): " + ", ".join(f"{x['measure']} {x['verdict']}" for x in r["references"])
        for r in runs) + f" -> {out / 'calibration.json'}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except g5.Gem5Error as e:
        print(f"calibrate-gem5: error: {e}", file=sys.stderr)
        sys.exit(1)
