"""The figures the READMEs state, from the results files that measured them.

A README holds a figure only inside a generated block:

    <!-- results:NAME -->
    ...what RENDERERS[NAME] makes of docs/results/*.json...
    <!-- results:end -->

`apta-docs record` copies the results a run left in build/ into docs/results/ (small JSON files
of record, each with the command that measured it, the machine and the date); `apta-docs render`
rewrites every block from them; `apta-docs check` (and tests/test_docs.py) fails, naming the file
and line, when a block differs from what its results give, so a hand-edited figure is caught.
Results a fresh clone recomputes in `make test` (the model checking, the vectors) are also
compared with the run's own build/ results there: a record that no longer matches the model is
stale and fails the same way."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from apta import testprofile

BLOCK = re.compile(r"(<!-- results:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- results:end -->)", re.S)


def checkout(start: Path | None = None) -> Path:
    """The checkout a command works on: the git work tree holding START (default: the working
    directory), so the tool runs from any folder of the clone."""
    start = (start or Path.cwd()).resolve()
    for d in (start, *start.parents):
        if (d / "docs" / "results").is_dir() and (d / "schema").is_dir():
            return d
    raise SystemExit(f"apta-docs: {start} is not inside an apta checkout (no docs/results/ and schema/ above it)")


# ---- results of record ----------------------------------------------------------------------------

def machine() -> dict:
    """The machine a record was made on (its date is the record's own field)."""
    m = testprofile.machine()
    return {k: m[k] for k in ("cores", "memory_mib", "loadavg_15m")}


def _verify(root: Path) -> dict:
    """The verdicts, and the states of the models: the figures any run of the same model repeats
    (Rumur's full exploration, TLC's distinct states; not TLC's states generated, which vary with
    its workers, nor a mutant's states before its counterexample)."""
    recs = json.loads((root / "build/verify/summary.json").read_text())
    keep = ("name", "checker", "kind", "config", "result", "violated", "expected", "ok")
    runs = []
    for r in sorted(recs, key=lambda r: (r["checker"], r["kind"], r["name"])):
        run = {k: r[k] for k in keep}
        if r["kind"] == "model":
            run["states"] = r.get("distinct_states", r["states"]) if r["checker"] == "tlc" else r["states"]
        runs.append(run)
    return {"runs": runs}


def _vectors(root: Path) -> dict:
    def fam(p: Path) -> dict:
        c = json.loads(p.read_text())
        return {"scenarios": c["scenarios"], "cells": len(c["cells"]),
                "covered": sum(1 for x in c["cells"] if x["status"] == "covered"),
                "unreachable": sum(1 for x in c["cells"] if x["status"] == "unreachable"),
                "configs": sorted(c["configs"])}
    out = {"core": fam(root / "build/vectors/coverage.json"), "ms": fam(root / "build/vectors/ms/coverage.json")}
    # the model's own scenarios: their images (server renamings, queued: spec/murphi/vectors.py)
    # carry "@<image>" in their id
    out["core"]["model_scenarios"] = sum(1 for p in (root / "build/vectors").glob("*.jsonl")
                                         for line in p.read_text().splitlines()
                                         if line.strip() and "@" not in json.loads(line)["id"])
    return out


def _test_profile(root: Path) -> dict:
    p = json.loads((root / "build/test-profile.json").read_text())
    if not p.get("passed"):
        raise SystemExit("apta-docs: build/test-profile.json is of a failed run; record a passing `make test`")
    return {"wall_s": p["wall_s"], "cpu_s": p["cpu_s"],
            "run_machine": {k: v for k, v in p["machine"].items() if k not in ("host", "date")},
            "phases": [{k: r[k] for k in ("name", "wall_s", "cpu_s")} for r in p["phases"]],
            "pytest_tests": sum(r.get("tests", 0) for r in p["pytest"]),
            "caches": p.get("caches", []),
            "pytest_modules": [{k: r[k] for k in ("name", "parent", "wall_s", "cpu_s")} for r in p["pytest"]]}


def _gem5(root: Path) -> dict:
    """eval-gem5's verdict and cross-check per configuration, R1-R8 from both simulators, and
    calibrate-gem5's microbenchmarks beside their references."""
    r = json.loads((root / "build/eval-gem5/results.json").read_text())
    if not r.get("verdict", {}).get("passed"):
        raise SystemExit("apta-docs: build/eval-gem5/results.json did not pass its verdict; record a passing eval-gem5")
    configs: dict[str, dict] = {}
    for c in r["crosscheck"]["cells"]:
        e = configs.setdefault(c["config"], {"runs": 0, "within": 0, "ratios": []})
        e["runs"] += 1
        e["within"] += bool(c["within"])
        if c["ratio"]:
            e["ratios"].append(round(c["ratio"], 3))
    # where the time differs: each phase's total over the base runs, gem5 over apta-sim
    for app in r["apps"]:
        a = {x["config"]: x for x in app["apta_sim"] if x.get("name") == "base" and x.get("completed")}
        for g in app["gem5"]:
            x = a.get(g["config"])
            if g.get("name") != "base" or not g.get("completed") or x is None:
                continue
            for ph in ("get", "compute", "put"):
                if x.get(f"{ph}_ns"):
                    configs[g["config"]].setdefault(ph, []).append(round(g[f"{ph}_ns"] / x[f"{ph}_ns"], 3))
    for e in configs.values():
        for k in ("ratios", "get", "compute", "put"):
            e.setdefault(k, []).sort()
    cal = json.loads((root / "build/calibrate-gem5/calibration.json").read_text())
    return {"size": r["size"], "workflows": len(r["apps"]), "configs": configs, "r": r.get("r"),
            "jitter_runs": r.get("jitter_runs", 0),
            "calibration": [{k: run[k] for k in ("name", "measures", "references", "link", "overrides")}
                            for run in cal["runs"]]}


def _gem5_bench(root: Path) -> dict:
    """bench-gem5's speed per configuration: gem5's trace events per second, its wall time over
    apta-sim's, and the packet link's wall time over the analytical link's in the same gem5."""
    b = json.loads((root / "build/bench/gem5.json").read_text())
    runs = b.get("runs") or []
    if not runs:
        raise SystemExit("apta-docs: build/bench/gem5.json has no runs; run make bench-gem5")
    med = lambda xs: sorted(xs)[len(xs) // 2]
    configs: dict[str, dict] = {}
    for r in runs:
        e = configs.setdefault(r["config"], {"events_per_s": [], "over_apta_sim": [], "packet_over_analytical": []})
        e["events_per_s"].append(r["gem5_events_per_s"])
        e["over_apta_sim"].append(r["ratio"])
        e["packet_over_analytical"].append(r["packet_over_analytical"])
    return {"gem5": b["gem5"], "runs": len(runs), "apps": sorted({r["app"] for r in runs}),
            "trace_events": sum(r["trace_events"] for r in runs),
            "gem5_wall_s": round(sum(r["gem5_wall_s"] for r in runs), 1),
            "analytical_wall_s": round(sum(r["analytical_link_wall_s"] for r in runs), 1),
            "configs": {c: {k: round(med(v), 3) for k, v in e.items()} | {"runs": len(e["events_per_s"])}
                        for c, e in sorted(configs.items())}}



def _eval_at(root: Path, out: str) -> dict:
    """make eval's stated results beside the paper's, and the tables behind them: the geomean
    speedups, the sensitivity rows, Table IV in both units, the physical limit, the dataflow sweep."""
    A = json.loads((root / out / "results.json").read_text())
    params = json.loads(Path(A["params"]).read_text()) if Path(A["params"]).is_file() else \
        json.loads((root / "sim" / "params.json").read_text())
    from apta.sim.eval_common import BASE, CONFIGS, geomean
    bd, apps = A["breakdown"], A["apps"]
    comm = [(bd[a][BASE]["get_ns"] + bd[a][BASE]["put_ns"]) /
            (bd[a][BASE]["get_ns"] + bd[a][BASE]["put_ns"] + bd[a][BASE]["compute_ns"]) for a in apps]
    F = A["sensitivity"]["families"]
    rows = [r for r in A["bounds"]["rows"] if r["objects"]]
    span = lambda xs: [round(min(xs), 4), round(max(xs), 4), round(geomean(xs), 4)]
    bound = {c: {op: span([r[op][c]["ratio"] for r in rows]) for op in ("get", "put")} for c in CONFIGS}
    if A["bounds"]["rtl"]:
        bound["rtl"] = {op: span([r["rtl"][op]["ratio"] for r in rows]) for op in ("get", "put")}
    D = A["dataflow"]
    return {
        "traces": Path(A["traces"]).name, "jitter_runs": A["jitter_runs"], "wall_s": round(A["wall_s"], 1), "apps": apps,
        "labels": {c: params["configs"][c]["label"] for c in CONFIGS},
        "comparison": [{k: r[k] for k in ("id", "paper", "ours", "deviation_pp", "agrees")} for r in A["comparison"]],
        "geomean_speedup": {c: round(v, 4) for c, v in A["geomean_speedup"].items()},
        "baseline_comm_share": [round(min(comm), 3), round(max(comm), 3)],
        "makespan_ns": {a: {c: bd[a][c]["makespan_ns"] for c in CONFIGS} for a in apps},
        "sweeps": {k: {x: round(v["geomean"], 4) for x, v in A["sweeps"][k].items()} for k in ("bandwidth_gbps", "latency_ns")},
        "rdma_links": [{k: ch[k] for k in ("id", "headline", "label", "latency_ns", "bandwidth_gbps", "rows")} for ch in F["rdma_link"]],
        "weak_cpi": [{"cpi": c["cpi"], "headline": c["headline"], "R8": c["rows"]["R8"]} for c in F["weak_cpi"]],
        "jitter_modes": [{"id": m["id"], "headline": m["headline"], "R4": m["rows"]["R4"], "per_app": m["per_app"]} for m in F["jitter"]],
        "table_iv": {a: {"paper": A["table_iv"][a]["paper"], "phase": A["table_iv"][a]["sim"]["apta"],
                         "object": A["table_iv"][a]["per_object"]["sim"]["apta"], "equal": A["table_iv"][a]["equal"]} for a in apps},
        "bound": {"objects": sum(len(r["objects"]) for r in rows), "bytes": [min(r["bytes"] for r in rows), max(r["bytes"] for r in rows)],
                  "clock_ghz": A["bounds"]["clock_ghz"], "ratios": bound},
        "dataflow": {"invoke_us": D["invoke_us"], "speedup": {x: {a: round(v["per_app"][a]["speedup"], 4) for a in apps}
                                                               | {"geomean": round(v["geomean"], 4)} for x, v in D["sweep"].items()}},
    }


def _eval(root: Path) -> dict:
    return _eval_at(root, "build/eval")


def _eval_without(root: Path) -> dict:
    """make eval with sim/params.json less what the gem5 cross-check added (an unbounded L2 path,
    tCCD_L 0): the same results, to show what the cross-check moved."""
    return _eval_at(root, "build/eval-without")


# name -> (the command that measures it, what it reads from build/)
SOURCES = {
    "verify": ("make verify", _verify),
    "vectors": ("make vectors", _vectors),
    "test-profile": ("make test (from a fresh clone)", _test_profile),
    "gem5": ("make eval-gem5 calibrate-gem5", _gem5),
    "gem5-bench": ("make bench-gem5", _gem5_bench),
    "eval": ("make eval", _eval),
    "eval-without": ("make eval on a copy of sim/params.json with compute.l2_bytes_per_cycle 1e12 and dram.tccd_l_ns 0 "
                     "(sim/eval.py --params COPY --out build/eval-without)", _eval_without),
}


def record(root: Path, names: list[str], run: Path | None = None) -> list[Path]:
    """docs/results/<name>.json of ROOT from the results in RUN's build/ (default: ROOT's own)."""
    out = []
    for name in names:
        command, read = SOURCES[name]
        try:
            data = read(run or root)
        except FileNotFoundError as e:
            raise SystemExit(f"apta-docs record {name}: {e.filename} missing: run `{command}` first")
        doc = {"command": command, "machine": machine(), "date": time.strftime("%Y-%m-%d"), "data": data}
        p = root / "docs" / "results" / f"{name}.json"
        p.write_text(json.dumps(doc, indent=1) + "\n")
        out.append(p)
    return out


def load(root: Path, name: str) -> dict:
    p = root / "docs" / "results" / f"{name}.json"
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise SystemExit(f"{p}: missing (apta-docs record {name})")
    except json.JSONDecodeError as e:
        raise SystemExit(f"{p}:{e.lineno}: not valid JSON ({e.msg})")
    for f in ("command", "machine", "date", "data"):
        if f not in doc:
            raise SystemExit(f"{p}: field {f!r} missing (a results file of record has command, machine, date, data)")
    return doc


# ---- renderers: results -> Markdown ---------------------------------------------------------------

def _mins(s: float) -> str:
    return f"{int(s // 60)} min {int(round(s % 60)):02d} s" if s >= 60 else f"{s:.0f} s"


def _mega(n: int) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.1f} k" if n >= 1e4 else f"{n:,}"


def render_verify(root: Path) -> str:
    doc = load(root, "verify")
    runs = doc["data"]["runs"]
    lines = ["| checker | model runs | states (TLC: distinct) | mutant runs | mutants rejected on their property |",
             "|---|---|---|---|---|"]
    for chk, label in (("rumur", "Rumur (`spec/murphi/`)"), ("tlc", "TLC (`spec/tla/`)")):
        ms = [r for r in runs if r["checker"] == chk and r["kind"] == "model"]
        mu = [r for r in runs if r["checker"] == chk and r["kind"] == "mutant"]
        if not ms and not mu:
            continue
        ok = sum(1 for r in mu if r["ok"])
        lines.append(f"| {label} | {len(ms)} {'configurations' if chk == 'rumur' else 'models'}, "
                     f"{'all pass' if all(r['ok'] for r in ms) else 'FAILING'} | {_mega(sum(r['states'] for r in ms))} "
                     f"| {len(mu)} | {ok} of {len(mu)} |")
    lines.append("")
    lines.append(f"`{doc['command']}` on {doc['machine']['cores']} cores (`docs/results/verify.json`: the run of record).")
    return "\n".join(lines) + "\n"


def render_tla_models(root: Path) -> str:
    """The default suite's models: each run's configuration as check.py describes it, its distinct
    states as pinned (spec/tla/pins.json, written by `check.py --update-pins` from TLC's run)."""
    from apta.tla.check import SUITES
    p = root / "spec" / "tla" / "pins.json"
    try:
        pins = json.loads(p.read_text())["runs"]
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"{p}: no pins ({e}): spec/tla/check.py --update-pins")
    lines = ["| name | configuration | distinct states |", "|---|---|---:|"]
    for run in SUITES["default"]:
        if run.kind != "model":
            continue
        if run.name not in pins or "distinct_states" not in pins[run.name]:
            raise SystemExit(f"{p}: no pinned states for {run.name!r}: spec/tla/check.py --only {run.name} --update-pins")
        lines.append(f"| {run.name} | {run.note} | {pins[run.name]['distinct_states']:,} |")
    return "\n".join(lines) + "\n"


def render_vectors(root: Path) -> str:
    doc = load(root, "vectors")
    d = doc["data"]
    c, m = d["core"], d["ms"]
    return (f"| table | scenarios | cells covered | unreachable (proven) |\n|---|---|---|---|\n"
            f"| coherence core (`rtl/CORE.md`) | {c['model_scenarios']} from the model, {c['scenarios']} with the "
            f"RTL's server renamings and queued images | {c['covered']}/{c['cells']} | {c['unreachable']} |\n"
            f"| memory server (`rtl/MEMSERVER.md`) | {m['scenarios']} | {m['covered']}/{m['cells']} | {m['unreachable']} |\n"
            f"\n`{doc['command']}` (`docs/results/vectors.json`: the run of record).\n")


VERIFY_PHASES = ("verify-murphi", "verify-tla", "vectors", "verify-summary")


def _wrap(text: str) -> str:
    import textwrap
    return textwrap.fill(text.rstrip("\n"), width=100, break_on_hyphens=False) + "\n"


def render_test_time(root: Path) -> str:
    doc = load(root, "test-profile")
    d = doc["data"]
    mach = d["run_machine"]
    verify = sum(r["wall_s"] for r in d["phases"] if r["name"] in VERIFY_PHASES)
    slow = sorted(d["phases"], key=lambda r: -r["wall_s"])[:6]
    return _wrap(f"A fresh clone's `make test` took **{_mins(d['wall_s'])}** wall and {_mins(d['cpu_s'])} of CPU on "
            f"{mach['cores']} cores and {mach['memory_mib'] // 1024} GiB ({d['pytest_tests']} pytest "
            f"test runs, the netlist regression's repeat of tests/rtl included), of which the model checking and the vectors (`make verify`) took {_mins(verify)}"
            + (f"; other jobs shared the machine (load average {mach['loadavg_15m']} over the last 15 minutes), "
               "so these are upper bounds" if mach.get("loadavg_15m", 0) > mach["cores"] + 0.5 else "")
            + "".join(f"; {c['reused']} of its {c['compiled'] + c['reused']} {c['name']} came from a warm user "
                      "cache, so a cold run takes longer" for c in d.get("caches", []) if c["reused"])
            + ". "
            "Its longest phases (some run side by side): "
            + ", ".join(f"{r['name']} {_mins(r['wall_s'])}" for r in slow)
            + ". Every run writes its own profile to `build/test-profile.json` and prints it as a table; "
            "`docs/results/test-profile.json` is the run of record.\n")


def render_gem5_crosscheck(root: Path) -> str:
    doc = load(root, "gem5")
    d = doc["data"]
    med = lambda rs: f"{rs[len(rs) // 2]:.2f} ({rs[0]:.2f}–{rs[-1]:.2f})" if rs else "–"
    lines = ["| configuration | runs | within 10% of apta-sim | explained | gem5 / apta-sim: median (range) "
             "| get | compute | put |", "|---|---|---|---|---|---|---|---|"]
    for cfg, e in d["configs"].items():
        lines.append(f"| {cfg} | {e['runs']} | {e['within']} | {e['runs'] - e['within']} | {med(e['ratios'])} "
                     f"| {med(e.get('get', []))} | {med(e.get('compute', []))} | {med(e.get('put', []))} |")
    lines.append("")
    lines.append(f"`make eval-gem5` on the {d['workflows']} workflows' {d['size']} traces, base and failure runs; every "
                 f"cell outside 10% is explained in `sim/gem5/explained.json`. Get, compute, put: each phase's time "
                 f"summed over a base run, gem5 / apta-sim, over the workflows (`docs/results/gem5.json`: the run of record).")
    if d.get("r"):
        R = d["r"]
        lines += ["", "| result | paper | apta-sim | gem5 |", "|---|---|---|---|"]
        from apta.sim.eval_common import pct   # reductions negative, as make eval prints them
        lines += [f"| {k} | {pct(R['paper'][k], k)} | {pct(R['apta_sim'][k], k)} | {pct(R['gem5'][k], k)} |" for k in R["paper"]]
        lines += ["", f"R1–R8 as `make eval` computes them, from both simulators' runs of the same scenarios "
                      f"(R4: {d.get('jitter_runs', 0)} jitter runs per configuration in each)."]
    return "\n".join(lines) + "\n"


def render_gem5_calibration(root: Path) -> str:
    runs = load(root, "gem5")["data"]["calibration"]
    label = lambda r: f"{r['link']['latency_ns']:g} ns link" + (" (Table II)" if not r["overrides"] else "")
    rows = [("load-to-use, CXL window (dependent loads, cold)", "load_latency_cxl_ns", " ns"),
            ("load-to-use, local DDR4", "load_latency_local_ns", " ns"),
            ("ratio", "load_latency_ratio", "x"), ("added over local", "load_latency_added_ns", " ns"),
            ("read bandwidth over the link", "read_gbps", " GB/s"),
            ("logged-put write bandwidth (each line twice)", "put_write_gbps", " GB/s"),
            ("BISnp round trip", "bisnp_round_trip_ns", " ns")]
    lines = ["| microbenchmark | " + " | ".join(label(r) for r in runs) + " |", "|---" * (len(runs) + 1) + "|"]
    lines += [f"| {what} | " + " | ".join(f"{r['measures'].get(k)}{unit}" for r in runs) + " |" for what, k, unit in rows]
    lines += ["", "| published | band | " + " | ".join(label(r) for r in runs) + " | source |",
              "|---" * (len(runs) + 3) + "|"]
    for k, ref in enumerate(runs[0]["references"]):
        lines.append(f"| {ref['what']} | {ref['low']:g}–{ref['high']:g} | "
                     + " | ".join(f"{r['references'][k]['model']}: {r['references'][k]['verdict']}" for r in runs)
                     + f" | {ref['source']} |")
    link = runs[0]["link"]
    lines.append("")
    lines.append(f"The link: {link['flit_bytes']}-byte flits at {link['gbps']:g} Gbit/s; the runs differ in the one-way "
                 f"latency and so in the credits per channel, one round trip of flits ("
                 + " and ".join(str(r["link"]["credits"]) for r in runs)
                 + ") (`make calibrate-gem5`; `docs/results/gem5.json`).")
    return "\n".join(lines) + "\n"


def render_gem5_bench(root: Path) -> str:
    d = load(root, "gem5-bench")["data"]
    lines = ["| configuration | runs | gem5 trace events / s (median) | gem5 wall / apta-sim wall | packet link / analytical link (wall) |",
             "|---|---|---|---|---|"]
    lines += [f"| {c} | {e['runs']} | {e['events_per_s']:,.0f} | {e['over_apta_sim']:,.0f}x | {e['packet_over_analytical']:.2f} |"
              for c, e in d["configs"].items()]
    lines += ["", f"`make bench-gem5`: the base runs of {len(d['apps'])} workflows ({d['trace_events']:,} trace events), "
              f"{d['gem5_wall_s']:g} s of gem5 with the packet link and {d['analytical_wall_s']:g} s with the analytical "
              f"one, medians per configuration; gem5 {d['gem5']['version']} (`docs/results/gem5-bench.json`: the run of record)."]
    return "\n".join(lines) + "\n"




def render_murphi_results(root: Path) -> str:
    """What each Murphi suite proves, from the pins in spec/murphi/checks.json (a run whose states
    differ from its pin fails, so the pins are what every passing run measured)."""
    c = json.loads((root / "spec/murphi/checks.json").read_text())
    cfg, suites = c["configs"], c["suites"]
    pinned = lambda s: [m for m in suites[s]["models"] if "states" in cfg[m].get("pin", {})]
    default, deep = pinned("default"), pinned("deep")
    big = max(deep, key=lambda m: cfg[m]["pin"]["states"])
    lines = ["| claim | figure | command |", "|---|---|---|",
             f"| every property, deadlock freedom and both liveness properties hold in the default suite | "
             f"{len(default)} configurations, {sum(cfg[m]['pin']['states'] for m in default):,} states | `make verify-murphi` |",
             f"| each mutant run is rejected on exactly its pinned properties | {len(suites['default']['mutants'])} mutant runs "
             f"(default), {len(suites['deep']['mutants'])} (deep) | `make verify-murphi`, `make verify-deep` |",
             f"| the deep configurations pass, each a complete exploration | {len(deep)} configurations, up to "
             f"{cfg[big]['pin']['states']:,} states (`{big}`) | `make verify-deep` |"]
    for s, v in suites.items():
        for m in v["models"]:
            u = cfg[m].get("unfinished")
            if u:
                lines += ["", _wrap(f"`{m}` (suite `{s}`) did not finish: stopped at {u['states']:,} states after "
                                    f"{_mins(u['seconds'])} ({u['note']}; its `unfinished` record in checks.json).").rstrip("\n")]
    return "\n".join(lines) + "\n"


# ---- make eval: the results beside the paper's ------------------------------------------------------
# The short label of each stated result (sim/eval_common.py PAPER has the long ones) and, for a result
# that deviates, why: a mechanism with our measured quantities, from the record. A deviating result
# without a why fails the render, so a result that changes side is explained, not left blank.
EVAL_LABELS = {
    "R1": "R1 Āpta over RDMA+FaaS", "R1.net": "... RDMA_f+FaaS over RDMA+FaaS",
    "R1.proto": "... RDMA_f+Āpta over RDMA_f+FaaS", "R1.hw": "... Āpta over RDMA_f+Āpta",
    "R2": "R2 Āpta over CXL uncached", "R3": "R3 Āpta over CXL cached",
    "R4": "R4 std. dev. vs CXL cached ({jitter_runs} jitter runs)", "R5": "R5 get latency, Āpta",
    "R5.faas": "... RDMA+FaaS", "R5.cxl": "... CXL uncached", "R6": "R6 put latency, Āpta", "R6.cxl": "... CXL uncached",
    "R7.bw": "R7 Āpta over baseline at 200 Gbps", "R7.lat": "... at 600 ns", "R8": "R8 weaker cores (CPI {cpi:g})",
}


def _eval_why(d: dict, rid: str, above: bool) -> str | None:
    """Why result RID deviates (ABOVE: ours is above the paper's), from the record D."""
    lit = next(ch for ch in d["rdma_links"] if ch["headline"])
    dm = next((ch for ch in d["rdma_links"] if ch["id"] == "dm"), None)
    lo, hi = d["baseline_comm_share"]
    sw = lambda k: [(x, g) for x, g in sorted(d["sweeps"][k].items(), key=lambda kv: float(kv[0]))]
    bw, lat = sw("bandwidth_gbps"), sw("latency_ns")
    cpi = [(c["cpi"], c["R8"]) for c in d["weak_cpi"]]
    r8 = next(r["paper"] for r in d["comparison"] if r["id"] == "R8")
    from apta.sim.eval_report import crossing
    brk = crossing(cpi, r8)
    why = {
        "R1": f"§II-A's RDMA taken literally ({lit['latency_ns']:g} ns, {lit['bandwidth_gbps']:g} Gbps): the baseline "
              f"spends {lo * 100:.0f}–{hi * 100:.0f}% of its time moving objects",
        "R1.net": "same cause: RDMA_f gets the DM link's "
                  + (f"{dm['bandwidth_gbps'] / lit['bandwidth_gbps']:.0f}x " if dm else "") + "bandwidth",
        "R1.proto": "our C functions compute little: a saved version check per hit is small against transfers"
                    if not above else "our functions hit more often than the paper's",
        "R1.hw": "short compute makes the 2.2x factor and 14 µs per call weigh more" if above else
                 "our functions' transfers are small against their compute",
        "R2": "128 MSHRs of line reads nearly fill the link, so the bulk get gains less" if not above else
              "CXL's line-granular get and redo-logged put cost more here than in the paper's CXL",
        "R3": "CXL cached's loads fetch the object's lines on demand, each event's misses 128 at a time, where "
              "Āpta streams it once; its put is redo-logged" if above else
              "CXL cached's caches hit like Āpta's, so it gains less than R2",
        "R4": "per-message jitter: CXL's thousands of line messages see the running maximum, Āpta's few average out",
        "R5.faas": "its version check rides the slow RDMA link; the misses are the large objects",
        "R5.cxl": "the slow literal RDMA baseline",
        "R6.cxl": "the slow literal RDMA baseline",
        "R7.bw": f"the baseline; the shape holds ({bw[0][1]:.2f}x at {bw[0][0]} Gbps → {bw[-1][1]:.2f}x at {bw[-1][0]} Gbps)",
        "R7.lat": f"the baseline; latency matters little ({lat[0][1]:.2f}x at {lat[0][0]} ns, {lat[-1][1]:.2f}x at {lat[-1][0]} ns)",
        "R8": "the paper states no CPI; ours was fixed a priori"
              + (f", the paper's lies between {brk[0][0]:g} and {brk[1][0]:g}" if brk else ""),
    }
    return why.get(rid)


def render_sim_results(root: Path) -> str:
    from apta.sim.eval_common import AGREE_PP, pct
    d = load(root, "eval")["data"]
    headline_cpi = next(c["cpi"] for c in d["weak_cpi"] if c["headline"])
    lines = ["| result | paper | ours | off by | | why |", "|---|---|---|---|---|---|"]
    agree = []
    for r in d["comparison"]:
        rid = r["id"]
        if r["agrees"]:
            agree.append(rid)
            why = ""
        else:
            why = _eval_why(d, rid, r["ours"] > r["paper"])
            if why is None:
                raise SystemExit(f"docs/results/eval.json: {rid} deviates from the paper and python/apta/docs.py "
                                 "_eval_why() does not say why")
        label = EVAL_LABELS[rid].format(jitter_runs=d["jitter_runs"], cpi=headline_cpi)
        lines.append(f"| {label} | {pct(r['paper'], rid)} | {pct(r['ours'], rid)} | {abs(r['deviation_pp']):.0f} pp "
                     f"| {'agrees' if r['agrees'] else 'deviates'} | {why} |")
    t4 = all(t["equal"] for t in d["table_iv"].values())
    lines.append(f"| Table IV, per function phase | | | | {'equal' if t4 else 'differs'} | "
                 f"{'all ' + str(len(d['table_iv'])) + ' applications' if t4 else ', '.join(a for a, t in d['table_iv'].items() if not t['equal'])} |")
    g = d["geomean_speedup"]
    lines += ["", _wrap(f"A result agrees within {AGREE_PP:g} percentage points of the paper's (`AGREE_PP`): "
                        + (", ".join(agree) if agree else "none") + f" of {len(d['comparison'])}. Geomean speedup over "
                        "RDMA (Fig. 8): " + ", ".join(f"{d['labels'][c].replace('Apta', 'Āpta')} {v:.2f}" for c, v in g.items() if c != "rdma")
                        + f". `make eval` on the {d['traces']} traces, {_mins(d['wall_s'])} (`docs/results/eval.json`: "
                        "the run of record).").rstrip("\n")]
    return "\n".join(lines) + "\n"


def render_sim_rdma_links(root: Path) -> str:
    from apta.sim.eval_common import PAPER, pct
    d = load(root, "eval")["data"]
    # the results the link moves (the others are the same on every row)
    rids = [rid for rid in PAPER if len({round(ch["rows"][rid], 4) for ch in d["rdma_links"]}) > 1]
    lines = ["| link (one-way, per direction) | " + " | ".join(rids) + " |", "|---|" + "---|" * len(rids)]
    for ch in d["rdma_links"]:
        lines.append(f"| {ch['id']}: {ch['latency_ns']:g} ns, {ch['bandwidth_gbps']:g} Gbps{' (headline)' if ch['headline'] else ''} | "
                     + " | ".join(pct(ch["rows"][r], r) for r in rids) + " |")
    lines.append("| **paper** (§IV-C) | " + " | ".join(pct(PAPER[r][1], r) for r in rids) + " |")
    return "\n".join(lines) + "\n"


def render_sim_weak_cpi(root: Path) -> str:
    from apta.sim.eval_common import PAPER, pct
    d = load(root, "eval")["data"]
    head = next(c["cpi"] for c in d["weak_cpi"] if c["headline"])
    return _wrap(f"**Weak-core CPI (R8).** Ours, fixed before any run, is {head:g} (`sweeps.weak_cpi`). R8 over the "
                 "sweep: " + ", ".join(f"{'**' if c['headline'] else ''}CPI {c['cpi']:g} {pct(c['R8'], 'R8')}{'**' if c['headline'] else ''}"
                                       for c in d["weak_cpi"]) + f"; paper {pct(PAPER['R8'][1], 'R8')}.")


def render_sim_jitter_modes(root: Path) -> str:
    from apta.sim.eval_common import PAPER, pct
    d = load(root, "eval")["data"]
    apps = d["apps"]
    lines = [f"Jitter mode (R4), {d['jitter_runs']} runs per mode (modes: sim/README.md \"Links\"):", "",
             "| mode | R4 | " + " | ".join(apps) + " |", "|---|---|" + "---|" * len(apps)]
    for m in d["jitter_modes"]:
        lines.append(f"| {m['id']}{' (headline)' if m['headline'] else ''} | {pct(m['R4'], 'R4')} | "
                     + " | ".join(pct(m["per_app"][a], "R4") for a in apps) + " |")
    lines.append(f"| **paper** | {pct(PAPER['R4'][1], 'R4')} |" + " |" * len(apps))
    return "\n".join(lines) + "\n"


def render_sim_table_iv(root: Path) -> str:
    from apta.sim.eval_report import f4
    d = load(root, "eval")["data"]
    lines = ["| app | paper | per function phase (simulated) | per object (simulated) |", "|---|---|---|---|"]
    lines += [f"| {a} | {f4(t['paper'])} | {f4(t['phase'])} | {f4(t['object'])} |" for a, t in d["table_iv"].items()]
    return "\n".join(lines) + "\n"


def render_sim_bound(root: Path) -> str:
    d = load(root, "eval")["data"]
    b = d["bound"]
    n = lambda x: f"{x:.2f}" if x < 10 else f"{x:.3g}"
    f = lambda x: f"{n(x[0])}–{n(x[1])} ({n(x[2])})"
    lines = [f"Over the workflows' {b['objects']} objects ({b['bytes'][0]:,} B to {b['bytes'][1]:,} B), time / limit, "
             "min–max (geomean over the distinct sizes):", "", "| configuration | get (a miss) | put |", "|---|---|---|"]
    for c, r in b["ratios"].items():
        name = f"RTL memory server at {b['clock_ghz']:g} GHz" if c == "rtl" else d["labels"][c].replace("Apta", "Āpta")
        lines.append(f"| {name} | {f(r['get'])} | {f(r['put'])} |")
    if "rtl" not in b["ratios"]:
        lines += ["", "The RTL row needs `build/bench/ms.json` (`make bench`) before `make eval`; the run of record had none."]
    return "\n".join(lines) + "\n"


def render_sim_dataflow(root: Path) -> str:
    d = load(root, "eval")["data"]["dataflow"]
    xs = [str(x) for x in d["invoke_us"]]
    us = lambda x: "0" if x == "0" else f"{int(x) / 1000:g} ms" if int(x) >= 500 else f"{x} µs"
    apps = [a for a in d["speedup"][xs[0]] if a != "geomean"]
    lines = ["| invocation path | " + " | ".join(us(x) for x in xs) + " |", "|---|" + "---|" * len(xs)]
    lines += [f"| {a} | " + " | ".join(f"{d['speedup'][x][a]:.2f}" for x in xs) + " |" for a in apps]
    lines.append("| **geomean** | " + " | ".join(f"**{d['speedup'][x]['geomean']:.2f}**" for x in xs) + " |")
    return "\n".join(lines) + "\n"


def render_sim_with_without(root: Path) -> str:
    from apta.sim.eval_common import PAPER, pct
    rows = ("R1", "R2", "R3", "R4", "R6.cxl", "R7.bw", "R8")
    lines = ["| | Āpta geomean speedup | " + " | ".join(rows) + " |", "|---|---|" + "---|" * len(rows)]
    for name, what in (("eval", "with (the headline)"), ("eval-without", "without")):
        d = load(root, name)["data"]
        ours = {r["id"]: r["ours"] for r in d["comparison"]}
        lines.append(f"| {what} | {d['geomean_speedup']['apta']:.2f} | " + " | ".join(pct(ours[r], r) for r in rows) + " |")
    lines.append("| **paper** | | " + " | ".join(pct(PAPER[r][1], r) for r in rows) + " |")
    return "\n".join(lines) + "\n"


RENDERERS = {
    "verify": render_verify,
    "vectors": render_vectors,
    "tla-models": render_tla_models,
    "test-time": render_test_time,
    "gem5-crosscheck": render_gem5_crosscheck,
    "gem5-calibration": render_gem5_calibration,
    "gem5-bench": render_gem5_bench,
    "murphi-results": render_murphi_results,
    "sim-results": render_sim_results,
    "sim-rdma-links": render_sim_rdma_links,
    "sim-weak-cpi": render_sim_weak_cpi,
    "sim-jitter-modes": render_sim_jitter_modes,
    "sim-table-iv": render_sim_table_iv,
    "sim-bound": render_sim_bound,
    "sim-dataflow": render_sim_dataflow,
    "sim-with-without": render_sim_with_without,
}


# ---- blocks in the Markdown -------------------------------------------------------------------------

def markdown_files(root: Path) -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "*.md"], cwd=root, capture_output=True, text=True, check=True).stdout
        return [root / p for p in out.split()]
    except (OSError, subprocess.CalledProcessError):
        return sorted(p for p in root.rglob("*.md") if "build" not in p.parts and ".venv" not in p.parts)


def blocks(text: str):
    for m in BLOCK.finditer(text):
        yield m, text.count("\n", 0, m.start()) + 1


def render_text(root: Path, text: str, where: str) -> tuple[str, list[str]]:
    """TEXT with every block rendered afresh, and a line per block that differed."""
    diffs: list[str] = []
    out, pos = [], 0
    for m, line in blocks(text):
        name = m.group("name")
        if name not in RENDERERS:
            raise SystemExit(f"{where}:{line}: unknown results block {name!r} (known: {', '.join(sorted(RENDERERS))})")
        body = RENDERERS[name](root)
        if body != m.group("body"):
            diffs.append(f"{where}:{line}: block {name!r} differs from what docs/results gives")
        out += [text[pos:m.start()], m.group(1), body, m.group(4)]
        pos = m.end()
    out.append(text[pos:])
    return "".join(out), diffs


def check(root: Path, files: list[Path] | None = None, write: bool = False) -> list[str]:
    problems: list[str] = []
    for p in files or markdown_files(root):
        text = p.read_text()
        if "<!-- results:" not in text:
            continue
        new, diffs = render_text(root, text, str(p.relative_to(root)) if p.is_relative_to(root) else str(p))
        if write and new != text:
            p.write_text(new)
        problems += diffs
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="apta-docs", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="copy a run's results from build/ into docs/results/")
    r.add_argument("names", nargs="+", choices=sorted(SOURCES))
    r.add_argument("--run", type=Path, help="the checkout whose build/ holds the run (default: this one)")
    sub.add_parser("render", help="rewrite every results block of the tracked Markdown")
    sub.add_parser("check", help="fail if a results block differs from docs/results")
    a = ap.parse_args(argv)
    root = checkout()
    if a.cmd == "record":
        for p in record(root, a.names, a.run):
            print(f"apta-docs: recorded {p.relative_to(root)}")
        return 0
    problems = check(root, write=a.cmd == "render")
    if a.cmd == "render":
        print(f"apta-docs: rendered ({len(problems)} block(s) changed)")
        return 0
    for line in problems:
        print(line)
    print(f"apta-docs: {'every results block matches docs/results' if not problems else f'{len(problems)} block(s) differ: run `make docs`'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
