"""What the gem5 extension (sim/gem5/) needs that runs without gem5: the system's gem5 values
from sim/params.json (one definition for both simulators), the gem5 build checks, gem5's
statistics, and the cross-check of gem5's results against apta-sim's.

The gem5 config script (sim/gem5/configs/run_apta.py) builds its SimObjects from `system_spec`;
sim/gem5/eval.py runs the workflows and writes the comparison from `crosscheck`.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from apta import schema
from apta.paths import ROOT

PARAMS = ROOT / "sim" / "params.json"
GEM5_VERSION = "v24.0.0.1"  # the gem5 release the extension is built and measured against
GEM5_COMMIT = "b1a44b89c7bae73fae2dc547bc1f871452075b85"

# Each memory (a server's local DDR4, the memory server's DDR4) is one DDR4-2400 8x8 channel of
# two ranks: 2 x 8 devices x 1 GiB = 16 GiB, the address range its controller is given.
MEM_BYTES = 16 << 30
# The memory server's DRAM controller queues: gem5's MemCtrl defaults (read 32, write 64
# entries); the memory server keeps up to their sum in flight and lets the controller push back.
MS_OUTSTANDING = 96


class Gem5Error(Exception):
    """A gem5 checkout, build or output that is not what we need (the message says what to do)."""


def _val(p: dict, sec: str, key: str):
    try:
        return p[sec][key]["value"]
    except KeyError:
        raise Gem5Error(f"{PARAMS}: {sec}.{key}: missing (or no 'value')") from None


def load_params(path: str | Path = PARAMS, overrides: dict | None = None) -> dict:
    """sim/params.json with schema references resolved and a scenario's "section.key" overrides
    applied, exactly as apta-sim's Params::load does (unknown keys are errors)."""
    p = schema.load_sim_params(path)
    for k, v in (overrides or {}).items():
        sec, dot, key = k.partition(".")
        if not dot:
            raise Gem5Error(f"overrides: key '{k}' must be section.parameter")
        if sec not in p or not isinstance(p[sec], dict) or key not in p[sec]:
            raise Gem5Error(f"overrides: unknown parameter '{k}' (not in {path})")
        p[sec][key]["value"] = v
    return p


def _ghz(x: float) -> str:
    return f"{x}GHz"


def system_spec(path: str | Path = PARAMS, overrides: dict | None = None, scenario: dict | None = None) -> dict:
    """The gem5 objects' values for Table II's system, from sim/params.json: clocks, caches
    (size, ways, latencies, MSHRs), the cores' CPI, one 16 GiB DDR4-2400 range per compute server
    and one for the memory server, and each compute server's CXL link (`cxl_link_spec`) for the
    scenario's configuration."""
    p = load_params(path, overrides)
    servers = int(_val(p, "compute", "servers"))
    if not 1 <= servers <= 64:
        raise Gem5Error(f"{path}: compute.servers: must be 1..64, got {servers}")
    line = int(_val(p, "compute", "line_bytes"))
    mshrs = int(_val(p, "compute", "mshrs"))
    l1_kb, l2_kb = int(_val(p, "compute", "l1_kb")), int(_val(p, "compute", "l2_kb"))
    spec = {
        "servers": servers,
        "line_bytes": line,
        "cpu_clock": _ghz(_val(p, "compute", "clock_ghz")),
        "ms_clock": _ghz(_val(p, "memory_server", "clock_ghz")),
        "cpi": float(_val(p, "compute", "cpi_int_fp")),
        # Table II gives MSHRs only for the L2; the L1 gets as many, so the L2's count is the
        # bound on a core's outstanding misses, as in apta-sim.
        "l1": {"size": f"{l1_kb}KiB", "assoc": int(_val(p, "compute", "l1_ways")),
               "latency": int(_val(p, "compute", "l1_latency_cycles")), "mshrs": mshrs},
        "l2": {"size": f"{l2_kb}KiB", "assoc": int(_val(p, "compute", "l2_ways")),
               "latency": int(_val(p, "compute", "l2_latency_cycles")), "mshrs": mshrs},
        "l2_bus_bytes": int(_val(p, "compute", "l2_bytes_per_cycle")),
        # gem5's classic caches take a line write from a non-cache only through a cache (its
        # IOCache pattern): fetched objects enter through a write buffer of one line per MSHR that
        # invalidates the core's copies and hands its lines to the L2 as writebacks (DDIO-like).
        "fill": {"size": f"{max(1, mshrs * line // 1024)}KiB", "assoc": 8, "latency": 1, "mshrs": mshrs},
        "llc_bytes": l2_kb * 1024,
        "mshrs": mshrs,
        "local_ranges": [(s * MEM_BYTES, (s + 1) * MEM_BYTES) for s in range(servers)],
        "ms_range": (servers * MEM_BYTES, (servers + 1) * MEM_BYTES),
        "ms_outstanding": MS_OUTSTANDING,
        "dram": "DDR4_2400_8x8",
        # the controller's pipeline, split as gem5 splits it (front end, back end)
        "dram_ctrl_ns": float(_val(p, "dram", "controller_ns")),
        "dram_tccd_l_ns": float(_val(p, "dram", "tccd_l_ns")),
        "cxl": cxl_link_spec(p, scenario or {}),
    }
    return spec


def cxl_link_spec(p: dict, scenario: dict) -> dict:
    """One compute server's CXL link (sim/gem5/cxl_link.hh) from sim/params.json: 68-byte flits at
    the DM link's bandwidth and one-way latency (jittered as the scenario asks), each channel's
    credits for `links.cxl_credit_round_trips` round trips of flits, and the memory server's
    lookup in front of its DRAM: the directory's (OTC, §IV-B) in CXL cached, none in CXL uncached."""
    flit = int(_val(p, "links", "flit_bytes"))
    gbps = float(_val(p, "links", "dm_bandwidth_gbps"))
    lat = float(_val(p, "links", "dm_latency_ns"))
    if gbps <= 0 or lat < 0 or flit <= 0:
        raise Gem5Error(f"{PARAMS}: links: dm_bandwidth_gbps > 0, dm_latency_ns >= 0 and flit_bytes > 0, "
                        f"got {gbps}, {lat}, {flit}")
    flit_ns = flit * 8 / gbps
    trips = float(_val(p, "links", "cxl_credit_round_trips"))
    if trips <= 0:
        raise Gem5Error(f"{PARAMS}: links.cxl_credit_round_trips: must be positive, got {trips}")
    credits = math.ceil(trips * (2 * lat + flit_ns) / flit_ns)
    config = scenario.get("config", "")
    configs = p.get("configs", {})
    if config and config not in configs:
        raise Gem5Error(f"scenario {scenario.get('name')!r}: config: unknown configuration {config!r}")
    directory = bool(config) and configs[config].get("gran") == "line" and configs[config].get("cache") == "sync"
    lookup_ns = _val(p, "memory_server", "otc_lookup_cycles") / _val(p, "memory_server", "clock_ghz")
    return {
        "flit_bytes": flit,
        "gbps": gbps,
        "latency_ns": lat,
        "flit_ns": round(flit_ns, 6),
        "jitter_cv": float(_val(p, "links", "jitter_cv")) if scenario.get("jitter") else 0.0,
        "seed": int(scenario.get("seed", 1)),
        "credits": credits,
        "device_ns": round(lookup_ns, 6) if directory else 0.0,
    }


def horizon_ticks(scenario: dict) -> int:
    """gem5 ticks (ps) for a scenario's horizon_ns (apta-sim's default 1e12 ns when absent)."""
    h = scenario.get("horizon_ns", 1e12)
    if not isinstance(h, (int, float)) or h <= 0 or math.isinf(h):
        raise Gem5Error(f"scenario {scenario.get('name')!r}: horizon_ns: a positive number, got {h!r}")
    return int(h * 1000)


# ---- the gem5 checkout and build ------------------------------------------------------------------
def check_source(src: str | Path) -> str:
    """The gem5 checkout the user names: it must exist and be the release we build against.
    Returns its version line; raises Gem5Error with what to provide otherwise."""
    s = Path(src)
    if not (s / "SConstruct").is_file() or not (s / "src" / "base" / "version.cc").is_file():
        raise Gem5Error(f"GEM5_SRC={src}: not a gem5 source checkout (no SConstruct, src/base/version.cc); "
                        f"get gem5 {GEM5_VERSION} (sim/gem5/README.md) and name it: make gem5 GEM5_SRC=<dir>")
    text = (s / "src" / "base" / "version.cc").read_text()
    m = re.search(r'gem5Version\s*=\s*"([^"]+)"', text)
    found = m.group(1) if m else "unknown"
    want = GEM5_VERSION.lstrip("v")
    if found != want:
        raise Gem5Error(f"GEM5_SRC={src}: gem5 {found}, the extension is built against {want} "
                        f"(commit {GEM5_COMMIT}); check out that release")
    return found


# ---- gem5's statistics ---------------------------------------------------------------------------------
_STAT = re.compile(r"^(\S+)\s+(-?[0-9.eE+-]+|nan|inf)\s")


def parse_stats(text: str, where: str = "stats.txt") -> dict:
    """The first dump of a gem5 stats.txt as {name: float}. Malformed input raises Gem5Error
    naming the line."""
    out: dict[str, float] = {}
    begun = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("---------- Begin Simulation Statistics"):
            if begun:
                break
            begun = True
            continue
        if line.startswith("---------- End Simulation Statistics"):
            break
        if not line.strip() or not begun:
            continue
        m = _STAT.match(line)
        if not m:
            raise Gem5Error(f"{where}:{n}: not a statistic line: {line[:60]!r}")
        out[m.group(1)] = float(m.group(2))
    if not begun:
        raise Gem5Error(f"{where}: no statistics dump")
    return out


def cache_and_dram_stats(stats: dict) -> dict:
    """What the cross-check reads of gem5's statistics: per-run L1/L2 hits and misses (summed over
    the compute servers), and the memory server's DRAM row-buffer hit rates."""
    def total(pattern: str) -> float:
        rx = re.compile(pattern)
        return sum(v for k, v in stats.items() if rx.fullmatch(k))
    return {
        "l1_hits": int(total(r"system\.c\d+\.l1\.demandHits::total")),
        "l1_misses": int(total(r"system\.c\d+\.l1\.demandMisses::total")),
        "l2_hits": int(total(r"system\.c\d+\.l2\.demandHits::total")),
        "l2_misses": int(total(r"system\.c\d+\.l2\.demandMisses::total")),
        "ms_read_row_hits": int(total(r"system\.ms_mem\.dram\.readRowHits")),
        "ms_reads": int(total(r"system\.ms_mem\.dram\.readBursts")),
        "ms_write_row_hits": int(total(r"system\.ms_mem\.dram\.writeRowHits")),
        "ms_writes": int(total(r"system\.ms_mem\.dram\.writeBursts")),
        # where the time of a miss goes: the L1's mean miss latency, and the mean DRAM access
        # latency per burst (queueing included) of the local memories and the memory server's
        "l1_miss_ns": _mean(stats, r"system\.c\d+\.l1\.demandMissLatency::total", r"system\.c\d+\.l1\.demandMisses::total"),
        "local_dram_ns": _mean(stats, r"system\.c\d+\.mem\.dram\.totMemAccLat", r"system\.c\d+\.mem\.dram\.readBursts"),
        "ms_dram_ns": _mean(stats, r"system\.ms_mem\.dram\.totMemAccLat", r"system\.ms_mem\.dram\.readBursts"),
        **cxl_link_stats(stats),
    }


CXL_CHANNELS = ("m2s_req", "m2s_rwd", "m2s_birsp", "s2m_ndr", "s2m_drs", "s2m_bisnp")


def cxl_link_stats(stats: dict) -> dict:
    """The compute servers' CXL links (sim/gem5/cxl_link.hh), summed over the servers: flits per
    channel, messages that waited for credits, requests refused, the mean time of a message in
    the link and of a BISnp's round trip (ns; None without samples)."""
    def total(name: str) -> int:
        rx = re.compile(rf"system\.c\d+\.cxl\.{name}")
        return int(sum(v for k, v in stats.items() if rx.fullmatch(k) and not math.isnan(v)))

    def mean(hist: str) -> float | None:
        n = w = 0.0
        for k, v in stats.items():
            m = re.fullmatch(rf"(system\.c\d+\.cxl)\.{hist}::samples", k)
            if m and v > 0 and not math.isnan(stats.get(f"{m.group(1)}.{hist}::mean", math.nan)):
                n += v
                w += v * stats[f"{m.group(1)}.{hist}::mean"]
        return round(w / n, 2) if n else None
    return {
        "cxl_flits": {ch: total(f"flits::{ch}") for ch in CXL_CHANNELS},
        "cxl_credit_stalls": sum(total(f"creditStalls::{ch}") for ch in CXL_CHANNELS),
        "cxl_refused": total("refusedRequests"),
        "cxl_message_ns": mean("latency"),
        "bisnp_round_trip_ns": mean("snoopRoundTrip"),
    }


def _mean(stats: dict, ticks: str, count: str) -> float | None:
    """sum(ticks) / sum(count) in ns over the statistics matching the two patterns (None: neither)."""
    tv = [v for k, v in stats.items() if re.fullmatch(ticks, k) and not math.isnan(v)]
    n = sum(v for k, v in stats.items() if re.fullmatch(count, k) and not math.isnan(v))
    return round(sum(tv) / n / 1000, 2) if tv and n else None


# ---- the cross-check -------------------------------------------------------------------------------------
TOLERANCE = 0.10  # makespan within +-10% of apta-sim's (the bound)


@dataclass
class Cell:
    app: str
    run: str      # the scenario's name: "base", or "fail" (a failure run)
    config: str
    apta_sim_ns: float | None
    gem5_ns: float | None
    ratio: float | None = None
    within: bool = False
    table_iv_equal: bool = False


@dataclass
class CrossCheck:
    cells: list[Cell] = field(default_factory=list)
    ranking_equal: dict[str, bool] = field(default_factory=dict)
    # per workflow, the pairs of configurations the two simulators order differently, with
    # apta-sim's gap between them (slower / faster - 1): a near tie swapped is not a reversal
    swaps: dict[str, list] = field(default_factory=dict)

    def outside(self) -> list[Cell]:
        return [c for c in self.cells if not c.within]

    def to_json(self) -> dict:
        return {"tolerance": TOLERANCE,
                "cells": [c.__dict__ for c in self.cells],
                "ranking_equal": self.ranking_equal,
                "swaps": self.swaps,
                "outside": len(self.outside())}


def _by(results: list[dict], where: str) -> dict:
    out = {}
    for r in results:
        for k in ("app", "config", "completed", "table_iv"):
            if k not in r:
                raise Gem5Error(f"{where}: a result without '{k}'")
        key = (r["app"], r.get("name", "base"), r["config"])
        if key in out:
            raise Gem5Error(f"{where}: two results for {key}")
        out[key] = r
    return out


def ranking(results: dict, app: str) -> list[str]:
    """Configurations of one workflow's base runs, fastest first (unfinished runs last, by name)."""
    rs = [r for (a, run, _), r in results.items() if a == app and run == "base"]
    done = sorted((r for r in rs if r["completed"]), key=lambda r: (r["makespan_ns"], r["config"]))
    stalled = sorted(r["config"] for r in rs if not r["completed"])
    return [r["config"] for r in done] + stalled


def crosscheck(apta_sim: list[dict], gem5: list[dict]) -> CrossCheck:
    """Compare the two simulators' results on the same traces: per workflow x configuration the
    makespan ratio (gem5 / apta-sim) and whether it is within TOLERANCE, Table IV's counts, and per
    workflow whether the configurations rank the same. A result is a run's JSON with "app" added;
    runs pair up by (app, scenario name, configuration)."""
    a, g = _by(apta_sim, "apta-sim results"), _by(gem5, "gem5 results")
    cc = CrossCheck()
    for key in sorted(set(a) | set(g)):
        ra, rg = a.get(key), g.get(key)
        ma = ra["makespan_ns"] if ra and ra["completed"] else None
        mg = rg["makespan_ns"] if rg and rg["completed"] else None
        c = Cell(key[0], key[1], key[2], ma, mg)
        if ma and mg:
            c.ratio = mg / ma
            c.within = abs(c.ratio - 1) <= TOLERANCE
        else:
            # both stalled (CXL cached after a crash) agree; one stalled alone does not
            c.within = bool(ra and rg) and ma is None and mg is None
        c.table_iv_equal = bool(ra and rg) and ra["table_iv"] == rg["table_iv"]
        cc.cells.append(c)
    for app in sorted({k[0] for k in a} & {k[0] for k in g}):
        ra, rg = ranking(a, app), ranking(g, app)
        cc.ranking_equal[app] = ra == rg
        ms = {k[2]: r["makespan_ns"] for k, r in a.items() if k[0] == app and k[1] == "base" and r["completed"]}
        cc.swaps[app] = [(x, y, round(ms[y] / ms[x] - 1, 4)) for i, x in enumerate(ra) for y in ra[i + 1:]
                         if x in rg and y in rg and rg.index(y) < rg.index(x) and x in ms and y in ms]
    return cc


# ---- the verdict of eval-gem5 ----------------------------------------------------------------------------
# A cell outside the tolerance passes only with an explanation: which workflow, configuration, run
# and trace size, the band of ratios the explanation covers (null: one simulator stalled, the other
# did not) and why, from gem5's statistics. Anything else outside fails the run.
EXPLAINED = Path(__file__).resolve().parent / "explained.json"
_EXPLAINED_KEYS = {"app", "config", "run", "size", "ratio", "why"}


def load_explained(path: str | Path = EXPLAINED) -> list[dict]:
    """The committed explanations, checked: every entry names app, config, run, size (each a name
    or "*"), ratio ([low, high] or null) and why; a malformed one raises Gem5Error naming it."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise Gem5Error(f"{path}: {e}") from None
    entries = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise Gem5Error(f"{path}: an object with a list 'cells'")
    for i, e in enumerate(entries):
        where = f"{path}: cells[{i}]"
        if not isinstance(e, dict) or set(e) != _EXPLAINED_KEYS:
            raise Gem5Error(f"{where}: needs exactly the keys {sorted(_EXPLAINED_KEYS)}")
        for k in ("app", "config", "run", "size", "why"):
            if not isinstance(e[k], str) or not e[k]:
                raise Gem5Error(f"{where}.{k}: a non-empty string")
        r = e["ratio"]
        if r is not None and not (isinstance(r, list) and len(r) == 2 and all(isinstance(x, (int, float)) for x in r)
                                  and 0 < r[0] <= r[1]):
            raise Gem5Error(f"{where}.ratio: [low, high] with 0 < low <= high, or null")
    return entries


def explanation(c: Cell, size: str, explained: list[dict]) -> dict | None:
    """The entry that explains cell c at this trace size, if one does (its ratio inside the band)."""
    for e in explained:
        if all(e[k] in ("*", v) for k, v in (("app", c.app), ("config", c.config), ("run", c.run), ("size", size))):
            if e["ratio"] is None and c.ratio is None:
                return e
            if e["ratio"] is not None and c.ratio is not None and e["ratio"][0] <= c.ratio <= e["ratio"][1]:
                return e
    return None


def verdict(cc: CrossCheck, gem5_runs: list[dict], size: str, explained: list[dict]) -> list[str]:
    """Why eval-gem5 fails (empty: it passes): a gem5 run that errored or timed out, Table IV
    differing, or a cell outside the tolerance that no explanation covers."""
    problems = [f"{r.get('app')} {r.get('name')} {r.get('config')}: gem5 run failed: "
                f"{r.get('stall')} {str(r['error'])[-300:]}".rstrip() for r in gem5_runs if r.get("error")]
    for c in cc.cells:
        tag = f"{c.app} {c.run} {c.config}"
        if not c.table_iv_equal:
            problems.append(f"{tag}: Table IV differs between the simulators")
        if not c.within and explanation(c, size, explained) is None:
            what = f"gem5 / apta-sim {c.ratio:.3f}" if c.ratio is not None else (
                f"apta-sim {'stalled' if c.apta_sim_ns is None else 'completed'}, "
                f"gem5 {'stalled' if c.gem5_ns is None else 'completed'}")
            problems.append(f"{tag}: {what}, outside {TOLERANCE:.0%} and not explained in {EXPLAINED.name}")
    return problems


def load_results(path: str | Path) -> list[dict]:
    """A results file of apta-sim (`{"app", "results": [...]}`) or a list of gem5 run results,
    as a list of runs each with "app"."""
    data = json.loads(Path(path).read_text())
    if isinstance(data, dict) and "results" in data:
        return [dict(r, app=data.get("app")) for r in data["results"]]
    if isinstance(data, list):
        return data
    raise Gem5Error(f"{path}: neither apta-sim results nor a list of gem5 results")


def main(argv=None) -> int:
    import argparse
    import sys
    ap = argparse.ArgumentParser(description="checks for the gem5 extension (sim/gem5/)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check-source", help="is DIR the gem5 release the extension builds against?")
    c.add_argument("dir")
    # gem5's embedded Python is not the venv's, so configs/run_apta.py asks the venv's Python
    # (APTA_PYTHON, set by sim/gem5/eval.py's gem5_env) for these instead of importing the package
    s = sub.add_parser("spec", help="the system spec and horizon of sim/params.json as JSON (for configs/run_apta.py)")
    s.add_argument("--params", default=None, help="sim/params.json")
    s.add_argument("--scenario", default="", help="one scenario as JSON text")
    args = ap.parse_args(argv)
    if args.cmd == "spec":
        scenario = json.loads(args.scenario) if args.scenario else {}
        try:
            out = {"spec": system_spec(args.params or PARAMS, scenario.get("overrides"), scenario),
                   "horizon": horizon_ticks(scenario) if scenario else None,
                   "params": str(Path(args.params or PARAMS).resolve())}
        except Gem5Error as e:
            out = {"error": str(e)}
        print(json.dumps(out))
        return 2 if "error" in out else 0
    try:
        v = check_source(args.dir)
    except Gem5Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"gem5 {v} at {args.dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

