"""`make eval`: every workflow x the seven configurations on the trace-replay simulator, the
sensitivity sweeps, the jitter runs and the failure demonstration; results, plots and a report
that puts our numbers beside the numbers the paper states in its text (§IV-C).

    python3 sim/eval.py                      # paper-size traces from build/traces/paper/
    python3 sim/eval.py --size tiny --jitter-runs 5 --out build/eval-tiny
    python3 sim/eval.py --traces DIR --apps phi,video

Writes (each file atomically: temp + rename) OUT/results.json, OUT/fig8.png, OUT/fig9.png,
OUT/fig10.png, OUT/r4.png, OUT/rrows.png, OUT/sensitivity.png, OUT/REPORT.md; the simulator's plans
and raw results in OUT/raw/. Parameters: sim/params.json only (fixed before the first comparison;
never re-fitted); the sensitivity sections re-run the choices the paper leaves open beside it.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import sys
import time

from apta import bounds, schema
from apta.sim import dataflow as dflow
from apta.sim import plan as planlib
# The driver's jobs live in eval_*.py beside it (sim/README.md, Files); their names stay importable
# from here (sim/gem5/eval.py, tests/test_sim.py).
from apta.sim.eval_analysis import (analyse, jitter_errorbars, jitter_names, jitter_stats, moves,
                                    r4_runs, r_values, sensitivity, table_iv_both)
from apta.sim.eval_bound import (bound_runs, bound_section, bound_sizes, bound_table, bound_trace,
                                 fmt_ratio, fmt_us, reference_sizes, rtl_info, size_label)
from apta.sim.eval_common import (AGREE_PP, BASE, CACHED, CONFIGS, DEPENDS_PP, FAMILIES, JITTER_MODES,
                                  PAPER, REDUCTIONS, ROOT, geomean, log, pct, pval, rdma_link_configs,
                                  rdma_links, shown)
from apta.sim.eval_plots import COLORS, PAPER_MARK, paper_value, plots, save_fig
from apta.sim.eval_report import (and_list, crossing, explanations, f4, report, rests_on,
                                  sensitivity_section, table_iv_section)
from apta.sim.eval_runs import (eval_app, failure_scenarios, main_scenarios, object_sizes, run_sim,
                                sensitivity_scenarios)

HERE = os.path.dirname(os.path.abspath(__file__))
workflow = planlib.workflow
PARAMS = os.path.join(HERE, "params.json")
SIM = os.path.join(ROOT, "build", "simulator", "apta-sim")
APPS = workflow.names()   # every workflow file (workloads/workflows/)
MS_BENCH = os.path.join(ROOT, "build", "bench", "ms.json")   # the RTL memory server's get/put cycles (make bench)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="paper", choices=["paper", "tiny"])
    ap.add_argument("--traces", help="trace root with one directory per app (default build/traces/<size>)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "eval"))
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--jobs", type=int, default=2, help="apps simulated in parallel (the machine has 2 cores)")
    ap.add_argument("--jitter-runs", type=int, help="default: links.jitter_runs of params.json (50)")
    ap.add_argument("--params", default=PARAMS)
    ap.add_argument("--sim", default=SIM)
    ap.add_argument("--ms-bench", default=MS_BENCH, help="the RTL memory server's get/put cycles (make bench); "
                    "the bound table says so when it is missing")
    args = ap.parse_args(argv)
    args.traces = os.path.abspath(args.traces or os.path.join(ROOT, "build", "traces", args.size))
    args.out = os.path.abspath(args.out)
    params = schema.load_sim_params(args.params)
    if args.jitter_runs is None:
        args.jitter_runs = pval(params, "links", "jitter_runs")
    if not os.path.exists(args.sim):
        sys.exit(f"eval: {args.sim} missing: build it with `make sim`")
    apps = [a.strip() for a in args.apps.split(",") if a.strip()]
    for a in apps:  # fail early and clearly on a bad workflow or a missing trace
        try:
            planlib.build_plan(os.path.join(workflow.WORKFLOW_DIR, f"{a}.json"), os.path.join(args.traces, a))
        except (workflow.WorkflowError, planlib.TraceMissing) as e:
            sys.exit(f"eval: error: {e}")
    os.makedirs(os.path.join(args.out, "raw"), exist_ok=True)
    t0 = time.time()
    res = {}
    try:
        with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            for app, r in ex.map(lambda a: eval_app(a, args, params), apps):
                res[app] = r
    except (RuntimeError, workflow.WorkflowError, planlib.TraceMissing) as e:
        sys.exit(f"eval: error: {e} (nothing written to {os.path.relpath(args.out, ROOT)}/results.json)")
    A = analyse(res, params)
    try:
        sizes = bound_sizes(res, params)
        log(f"bound: one get and one put alone, {len(sizes)} object sizes x {len(CONFIGS)} configurations")
        ms, ms_why = bounds.load_ms_bench(args.ms_bench)
        A["bounds"] = bound_table(sizes, bound_runs(args, sizes, params), params, ms, ms_why)
    except RuntimeError as e:
        sys.exit(f"eval: error: {e} (nothing written to {os.path.relpath(args.out, ROOT)}/results.json)")
    A["sensitivity"] = sensitivity(res, params, A)
    A["dataflow"] = dflow.analyse(res, params)
    A["errorbars"] = jitter_errorbars(res, A["apps"])
    files, colors = plots(A, params, args.out)
    A["figure_colors"] = colors
    wall = time.time() - t0
    results = {"traces": args.traces, "params": args.params, "jitter_runs": args.jitter_runs, "wall_s": wall,
               "paper": {k: {"what": w, "value": v} for k, (w, v) in PAPER.items()}} | A
    planlib.write_json_atomic(os.path.join(args.out, "results.json"), results)
    text = report(A, params, args, files, wall)
    tmp = os.path.join(args.out, ".REPORT.md.tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, os.path.join(args.out, "REPORT.md"))
    log(f"done in {wall:.0f} s: {os.path.relpath(os.path.join(args.out, 'REPORT.md'), ROOT)}")
    for r in A["comparison"]:
        log(f"{r['id']:9s} paper {pct(r['paper'], r['id']):>5s}  ours {pct(r['ours'], r['id']):>6s}  {'agrees' if r['agrees'] else 'DEVIATES'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
