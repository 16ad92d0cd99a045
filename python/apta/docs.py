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


# name -> (the command that measures it, what it reads from build/)
SOURCES = {
    "verify": ("make verify", _verify),
    "vectors": ("make vectors", _vectors),
    "test-profile": ("make test (from a fresh clone)", _test_profile),
    "gem5": ("make eval-gem5 calibrate-gem5", _gem5),
    "gem5-bench": ("make bench-gem5", _gem5_bench),
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


RENDERERS = {
    "verify": render_verify,
    "vectors": render_vectors,
    "tla-models": render_tla_models,
    "test-time": render_test_time,
    "gem5-crosscheck": render_gem5_crosscheck,
    "gem5-calibration": render_gem5_calibration,
    "gem5-bench": render_gem5_bench,
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
