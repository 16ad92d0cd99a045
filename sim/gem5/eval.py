"""`make eval-gem5`: the workflows' traces in gem5 and in apta-sim, side by side.

    python3 sim/gem5/eval.py --gem5 build/gem5/gem5.opt                  # paper traces, 7 configs + failures
    python3 sim/gem5/eval.py --gem5 BIN --size tiny --apps phi --out build/eval-gem5-tiny
    python3 sim/gem5/eval.py --gem5 BIN --bench build/bench/gem5.json    # + the speed record

For each workflow: its plan (sim/plan.py), the seven configurations and the failure runs of
`make eval` (sim/eval.py chooses the victim from apta-sim's own timeline; both simulators run that
same scenario), each one gem5 process (sim/gem5/configs/run_apta.py) and all of them in one apta-sim
process. Writes OUT/results.json (both simulators' runs, gem5's cache and DRAM statistics, the
cross-check of apta.gem5.crosscheck) and OUT/REPORT.md; gem5's output directories in OUT/raw/.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from apta import workflow
from apta.gem5 import model as g5
from apta.paths import ROOT
from apta.sim import eval as simeval
from apta.sim import plan as planlib

SIM = ROOT / "sim"
CONFIG_SCRIPT = SIM / "gem5" / "configs" / "run_apta.py"
CONFIGS = simeval.CONFIGS


def log(msg: str) -> None:
    print(f"[eval-gem5 {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def gem5_env() -> dict:
    # gem5's embedded Python does not import the apta package: the config script asks this
    # Python (the venv's) for the system spec, `python -m apta.gem5.model spec`
    return dict(os.environ, APTA_PYTHON=sys.executable, APTA_ROOT=str(ROOT))


def run_gem5(gem5: str, plan_path: Path, scenario: dict, outdir: Path, params: str, timeout: float,
             link: str = "packet") -> dict:
    """One scenario in gem5: its result document plus gem5's statistics, or a failed run. LINK
    analytical: apta-sim's link model inside gem5 (what the packet-level link costs, make bench-gem5)."""
    outdir.mkdir(parents=True, exist_ok=True)
    res = outdir / "result.json"
    res.unlink(missing_ok=True)
    cmd = [gem5, "-r", "-e", "-d", str(outdir), str(CONFIG_SCRIPT), "--plan", str(plan_path),
           "--scenario", json.dumps(scenario), "--params", params, "--link", link, "--out", str(res)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=gem5_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"config": scenario["config"], "name": scenario["name"], "completed": False,
                "stall": f"gem5 run exceeded {timeout:.0f} s (wall)", "error": "timeout", "table_iv": None}
    wall = time.monotonic() - t0
    if p.returncode != 0 or not res.exists():
        err = (outdir / "simerr.txt").read_text()[-2000:] if (outdir / "simerr.txt").exists() else ""
        return {"config": scenario["config"], "name": scenario["name"], "completed": False,
                "stall": f"gem5 exited {p.returncode}", "error": err, "table_iv": None}
    r = json.loads(res.read_text())
    stats = g5.parse_stats((outdir / "stats.txt").read_text(), str(outdir / "stats.txt"))
    r["gem5_stats"] = g5.cache_and_dram_stats(stats)
    r["process_wall_s"] = wall
    return r


def run_all(args, app: str, plan_path: Path, scenarios: list[dict], link: str = "packet") -> list[dict]:
    """Scenarios in gem5, one process each, args.jobs at a time."""
    runs = []
    raw = Path(args.out) / "raw"
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = {ex.submit(run_gem5, args.gem5, plan_path, sc,
                          raw / app / f"{sc['name']}-{sc['config']}{'' if link == 'packet' else '-' + link}",
                          args.params, args.timeout, link): sc for sc in scenarios}
        for f in cf.as_completed(futs):
            sc, r = futs[f], f.result()
            runs.append(r)
            ms = f"{r['makespan_ns'] / 1000:.1f} us" if r.get("completed") else f"STALLED ({r.get('stall')})"
            log(f"{app} {sc['name']:5s} {sc['config']:13s} gem5 {ms}{'' if link == 'packet' else ' (' + link + ' link)'}")
    return runs


def plan_file(out: str, app: str) -> Path:
    """Where eval_app writes an app's plan (the bench's analytical-link runs read it there)."""
    return Path(out) / "raw" / f"{app}.plan.json"


def eval_app(app: str, args) -> tuple[dict, dict]:
    """The app's runs in both simulators, and its inputs (workflow and plan) for R1-R8."""
    wf_path = os.path.join(workflow.WORKFLOW_DIR, f"{app}.json")
    wf = workflow.load(wf_path)
    plan = planlib.build_plan(wf_path, os.path.join(args.traces, app), wf=wf)
    raw = Path(args.out) / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    plan_path = plan_file(args.out, app)
    planlib.write_json_atomic(str(plan_path), plan)
    base = [{"name": "base", "config": c} for c in args.configs]
    if args.results:  # the scenarios behind R1-R8: sweeps and jitter runs (sim/eval.py's), in both
        base = simeval.main_scenarios(simeval.schema.load_sim_params(args.params), args.jitter_runs)
    sim_res = simeval.run_sim(args.sim, str(plan_path), base, str(raw / f"{app}.apta-sim.json"), args.params)
    log(f"{app}: {len(plan['instances'])} instances, {sim_res['trace_events']} trace events")
    runs = run_all(args, app, plan_path, base)
    sim_runs = sim_res["results"]
    if not args.no_failures:
        # a failure run kills the server that holds a copy a later put must invalidate, right
        # after it cached it: each simulator's victim and time come from its own base timeline
        # (sim/eval.py's rule), so both crash at the same point of the workflow
        fails = {}
        for sim, results in (("apta_sim", sim_runs), ("gem5", runs)):
            by = {r["config"]: r for r in results if r.get("completed") and r.get("name") == "base"}
            fails[sim] = [{k: v for k, v in f.items() if k != "why"} | {"name": "fail"}
                          for f in simeval.failure_scenarios(plan, by)]
        if fails["apta_sim"]:
            fres = simeval.run_sim(args.sim, str(plan_path), fails["apta_sim"],
                                   str(raw / f"{app}.apta-sim.failure.json"), args.params)
            sim_runs = sim_runs + fres["results"]
        runs += run_all(args, app, plan_path, fails["gem5"])
    for r in runs + sim_runs:
        r["app"] = app
    return {"app": app, "trace_events": sim_res["trace_events"], "apta_sim": sim_runs, "gem5": runs,
            "failure_scenarios": fails if not args.no_failures else {}}, {"wf": wf, "plan": plan}


CROSSCHECKED = ("base", "fail")  # the scenarios compared cell by cell; the sweeps enter through R1-R8


def results_r(results: dict, inputs: dict, params: dict) -> dict:
    """R1-R8 (sim/eval.py's analysis) from each simulator's runs of the same scenarios."""
    out = {}
    for sim in ("apta_sim", "gem5"):
        apps = {}
        for a in results["apps"]:
            by = {}
            for r in a[sim]:
                if r.get("name") != "fail":
                    by.setdefault(r["name"], {})[r["config"]] = r
            fail = [dict(r, why="") for r in a[sim] if r.get("name") == "fail"]
            plan = inputs[a["app"]]["plan"]
            apps[a["app"]] = {"wf": inputs[a["app"]]["wf"], "plan": plan, "by": by, "failure": fail,
                              "object_bytes": simeval.object_sizes(plan)}
        A = simeval.analyse(apps, params)
        out[sim] = {c["id"]: c["ours"] for c in A["comparison"]}
        out.setdefault("paper", {c["id"]: c["paper"] for c in A["comparison"]})
        out.setdefault("what", {c["id"]: c["what"] for c in A["comparison"]})
    return out


def report(results: dict, cc: g5.CrossCheck) -> str:
    v = results["verdict"]
    L = ["# apta-sim and gem5 on the same traces", "",
         f"gem5 {g5.GEM5_VERSION} (commit {g5.GEM5_COMMIT}), NULL ISA, classic caches. Both simulators run "
         "sim/src/system.cpp's protocols, protocol engine and scheduler. In gem5 the compute servers' caches and "
         "local DDR4 and the memory server's DRAM are gem5's (DDR4-2400 8x8, banks and row buffers), fetched "
         "objects are written into the L2, and in the CXL configurations every load, store, logged-put write and "
         "back-invalidation crosses a packet-level CXL link (sim/gem5/cxl_link.hh); apta-sim models all of these "
         "analytically (sim/README.md). A failure run's victim and time come from each simulator's own base "
         "timeline (the same rule as make eval).", "",
         f"**Verdict: {'passed' if v['passed'] else 'FAILED'}**" + ("" if v["passed"] else ": " + "; ".join(v["problems"])),
         "",
         f"Makespan per workflow x configuration; within = |gem5 / apta-sim - 1| <= {g5.TOLERANCE:.0%}, or the "
         f"cell is explained (sim/gem5/explained.json).", "",
         "| app | config | run | apta-sim (us) | gem5 (us) | gem5 / apta-sim | within | Table IV equal |",
         "|---|---|---|---|---|---|---|---|"]
    explained = g5.load_explained()
    whys = []
    for c in cc.cells:
        f = lambda x: f"{x / 1000:.1f}" if x else "stalled"
        ratio = f"{c.ratio:.3f}" if c.ratio else "-"
        e = None if c.within else g5.explanation(c, results["size"], explained)
        if e:
            whys.append(f"- {c.app} {c.run} {c.config}: {e['why']}")
        within = "yes" if c.within else f"explained ({len(whys)})" if e else "**no**"
        L.append(f"| {c.app} | {c.config} | {c.run} | {f(c.apta_sim_ns)} | {f(c.gem5_ns)} | {ratio} | "
                 f"{within} | {'yes' if c.table_iv_equal else '**no**'} |")
    if whys:
        L += ["", "Explained cells:", ""] + [f"{i}. {w[2:]}" for i, w in enumerate(whys, 1)]
    L += ["", "Ranking of the configurations per workflow (fastest first) equal in both: " +
          ", ".join(f"{a} {'yes' if v else '**no**'}" for a, v in cc.ranking_equal.items()), ""]
    for a, sw in cc.swaps.items():
        for x, y, gap in sw:
            L.append(f"- {a}: gem5 puts {y} before {x}; apta-sim has {x} faster by {gap:.1%}")
    L.append("")
    if "r" in results:
        R = results["r"]
        L += ["## R1-R8 from both simulators", "",
              f"sim/eval.py's analysis of each simulator's own runs of the same scenarios (sweeps, and "
              f"{results['jitter_runs']} jitter runs per configuration for R4).", "",
              "| result | what | paper | apta-sim | gem5 |", "|---|---|---|---|---|"]
        for k in R["paper"]:
            L.append(f"| {k} | {R['what'][k]} | {simeval.pct(R['paper'][k], k)} | {simeval.pct(R['apta_sim'][k], k)} | "
                     f"{simeval.pct(R['gem5'][k], k)} |")
        L.append("")
    L += ["## Speed", "", "| app | trace events | apta-sim wall (s) | gem5 wall (s, sum of runs) | gem5 / apta-sim |",
          "|---|---|---|---|---|"]
    for a in results["apps"]:
        sw = sum(r.get("wall_s", 0) for r in a["apta_sim"])
        gw = sum(r.get("process_wall_s", 0) for r in a["gem5"])
        L.append(f"| {a['app']} | {a['trace_events']} | {sw:.2f} | {gw:.1f} | {gw / sw if sw else float('nan'):.0f}x |")
    L += ["", "## gem5's caches and DRAM", "",
          "apta-sim charges an L2 miss its fixed DRAM latency (dram.latency_ns, closed page, no controller or "
          "crossbar latency, bandwidth as a floor); gem5's columns say what a miss costs there (ns).", "",
          "| app | config | L1 hits | L1 misses | L2 misses | L1 miss (ns) | local DRAM access (ns) | "
          "MS DRAM access (ns) | MS DRAM read row hits | CXL flits | CXL message (ns) | credit stalls | "
          "BISnp | BISnp round trip (ns) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in results["apps"]:
        for r in sorted(a["gem5"], key=lambda r: (r.get("name", ""), r["config"])):
            s = r.get("gem5_stats")
            if s:
                rh = f"{s['ms_read_row_hits'] / s['ms_reads']:.0%}" if s["ms_reads"] else "-"
                ns = lambda k: "-" if s.get(k) is None else f"{s[k]:.0f}"
                fl = s.get("cxl_flits", {})
                L.append(f"| {a['app']} | {r['config']} {r.get('name', '')} | {s['l1_hits']} | {s['l1_misses']} | "
                         f"{s['l2_misses']} | {ns('l1_miss_ns')} | {ns('local_dram_ns')} | {ns('ms_dram_ns')} | {rh} | "
                         f"{sum(fl.values())} | {ns('cxl_message_ns')} | {s.get('cxl_credit_stalls', 0)} | "
                         f"{fl.get('s2m_bisnp', 0)} | {ns('bisnp_round_trip_ns')} |")
    return "\n".join(L) + "\n"


def plot(results: dict, cc: g5.CrossCheck, out: Path) -> list[str]:
    """crosscheck.png: per workflow, gem5's makespan over apta-sim's for each configuration (base
    runs), the tolerance band shaded; speedups.png: Fig. 8's speedups over RDMA from each simulator."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    apps = [a["app"] for a in results["apps"]]
    cfgs = [c for c in CONFIGS if any(x.config == c for x in cc.cells)]
    cell = {(x.app, x.config): x for x in cc.cells if x.run == "base"}
    colors = plt.get_cmap("tab10").colors
    w = 0.8 / len(cfgs)
    files = []
    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.axhspan(1 - g5.TOLERANCE, 1 + g5.TOLERANCE, color="0.9", label=f"within {g5.TOLERANCE:.0%}")
    for j, c in enumerate(cfgs):
        ys = [cell[(a, c)].ratio if (a, c) in cell and cell[(a, c)].ratio else float("nan") for a in apps]
        ax.bar([i + (j - (len(cfgs) - 1) / 2) * w for i in range(len(apps))], ys, w, label=c, color=colors[j])
    ax.axhline(1, color="k", lw=0.6)
    ax.set_xticks(range(len(apps)), apps)
    ax.set_ylabel("makespan gem5 / apta-sim")
    ax.set_ylim(0.8, max(1.3, max((x.ratio or 1) for x in cc.cells) + 0.05))
    ax.legend(ncol=4, fontsize=7, loc="upper left")
    files.append(str(out / "crosscheck.png"))
    fig.savefig(files[-1], dpi=110, bbox_inches="tight")
    plt.close(fig)
    if "rdma" in cfgs:
        fig, axs = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
        for ax, (sim, key) in zip(axs, (("apta-sim", "apta_sim_ns"), ("gem5", "gem5_ns"))):
            for j, c in enumerate(cfgs):
                ys = [getattr(cell[(a, "rdma")], key) / getattr(cell[(a, c)], key)
                      if (a, c) in cell and getattr(cell[(a, c)], key) and getattr(cell[(a, "rdma")], key) else float("nan")
                      for a in apps]
                ax.bar([i + (j - (len(cfgs) - 1) / 2) * w for i in range(len(apps))], ys, w, label=c, color=colors[j])
            ax.set_xticks(range(len(apps)), apps)
            ax.set_title(sim)
        axs[0].set_ylabel("speedup over RDMA (Fig. 8)")
        axs[0].legend(ncol=2, fontsize=7)
        files.append(str(out / "speedups.png"))
        fig.savefig(files[-1], dpi=110, bbox_inches="tight")
        plt.close(fig)
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gem5", required=True, help="gem5.opt built with the extension (make gem5)")
    ap.add_argument("--size", default="paper")
    ap.add_argument("--traces", help="trace root (default build/traces/SIZE)")
    ap.add_argument("--apps", help="comma-separated workflows (default: every workflow)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--no-failures", action="store_true")
    ap.add_argument("--results", action="store_true",
                    help="also the sweeps and jitter runs, and R1-R8 from both simulators")
    ap.add_argument("--jitter-runs", type=int, default=10, help="jitter runs per configuration (R4) with --results")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=4 * 3600, help="wall seconds per gem5 run")
    ap.add_argument("--params", default=str(SIM / "params.json"))
    ap.add_argument("--sim", default=str(ROOT / "build" / "simulator" / "apta-sim"))
    ap.add_argument("--out", default=str(ROOT / "build" / "eval-gem5"))
    ap.add_argument("--bench", help="also write the speed record here (make bench-gem5)")
    args = ap.parse_args(argv)
    args.traces = args.traces or str(ROOT / "build" / "traces" / args.size)
    args.configs = [c for c in args.configs.split(",") if c]
    bad = [c for c in args.configs if c not in CONFIGS]
    if bad:
        ap.error(f"--configs: unknown {bad} (known: {CONFIGS})")
    if not os.access(args.gem5, os.X_OK):
        ap.error(f"--gem5 {args.gem5}: not an executable; build it with make gem5 GEM5_SRC=<gem5 checkout>")
    apps = args.apps.split(",") if args.apps else workflow.names()
    t0 = time.monotonic()
    results = {"gem5": {"version": g5.GEM5_VERSION, "commit": g5.GEM5_COMMIT}, "size": args.size, "apps": [],
               "jitter_runs": args.jitter_runs if args.results else 0}
    inputs = {}
    for app in apps:
        res, inputs[app] = eval_app(app, args)
        results["apps"].append(res)
    cc = g5.crosscheck([r for a in results["apps"] for r in a["apta_sim"] if r.get("name") in CROSSCHECKED],
                       [r for a in results["apps"] for r in a["gem5"] if r.get("name") in CROSSCHECKED])
    results["crosscheck"] = cc.to_json()
    problems = g5.verdict(cc, [r for a in results["apps"] for r in a["gem5"]], args.size, g5.load_explained())
    results["verdict"] = {"passed": not problems, "problems": problems}
    if args.results:
        results["r"] = results_r(results, inputs, simeval.schema.load_sim_params(args.params))
    out = Path(args.out)
    planlib.write_json_atomic(str(out / "results.json"), results)
    (out / "REPORT.md").write_text(report(results, cc))
    plot(results, cc, out)
    if args.bench:
        speed = []
        for a in results["apps"]:
            # the same base runs with the analytical link, side by side: what the packets cost
            base = [{"name": "base", "config": r["config"]} for r in a["gem5"] if r.get("name") == "base"]
            analytical = {r["config"]: r for r in run_all(args, a["app"], plan_file(args.out, a["app"]),
                                                          base, link="analytical")}
            for r in a["gem5"]:
                s = next((x for x in a["apta_sim"] if x["config"] == r["config"] and x.get("name") == r.get("name")), None)
                if r.get("completed") and s:
                    an = analytical.get(r["config"]) if r.get("name") == "base" else None
                    speed.append({"app": a["app"], "config": r["config"], "name": r.get("name"),
                                  "trace_events": a["trace_events"],
                                  "gem5_wall_s": r["process_wall_s"], "apta_sim_wall_s": s["wall_s"],
                                  "gem5_events_per_s": r["trace_events"] / r["process_wall_s"],
                                  "ratio": r["process_wall_s"] / s["wall_s"] if s["wall_s"] else None,
                                  "analytical_link_wall_s": an["process_wall_s"] if an and an.get("completed") else None,
                                  "packet_over_analytical": r["process_wall_s"] / an["process_wall_s"]
                                  if an and an.get("completed") else None})
        planlib.write_json_atomic(args.bench, {"gem5": results["gem5"], "runs": speed})
    n = len(cc.cells)
    within = n - len(cc.outside())
    for p in problems:
        print(f"eval-gem5: {p}", file=sys.stderr)
    print(f"eval-gem5: {'passed' if not problems else f'FAILED ({len(problems)} problems)'}: {len(apps)} workflows, "
          f"{n} runs per simulator; makespan within {g5.TOLERANCE:.0%} of apta-sim in {within}/{n} "
          f"(the rest explained: {n - within - sum(1 for p in problems if 'not explained' in p)}); Table IV equal in "
          f"{sum(c.table_iv_equal for c in cc.cells)}/{n}; ranking equal in "
          f"{sum(cc.ranking_equal.values())}/{len(cc.ranking_equal)} ({time.monotonic() - t0:.0f} s) -> {out / 'REPORT.md'}")
    return 1 if problems else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (g5.Gem5Error, RuntimeError) as e:
        print(f"eval-gem5: error: {e}", file=sys.stderr)
        sys.exit(1)
