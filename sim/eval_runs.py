"""Running apta-sim for the evaluation (eval.py): the scenarios of one workflow (the headline's,
the sensitivity runs', the dataflow runs' and the failure demonstration's), one workflow's plan and
runs, and its objects' sizes."""
from __future__ import annotations

import json
import os
import subprocess

from apta.sim import dataflow as dflow
from apta.sim import plan as planlib
from apta.sim.eval_common import BASE, CONFIGS, JITTER_MODES, log, pval, rdma_link_configs, rdma_links

workflow = planlib.workflow


def run_sim(sim, plan_path, scenarios, out_path, params, quiet=False):
    sc_path = out_path.replace(".json", ".scenarios.json")
    planlib.write_json_atomic(sc_path, {"scenarios": scenarios})
    p = subprocess.run([sim, "--params", params, "--plan", plan_path, "--scenarios", sc_path, "--out", out_path] + (["--quiet"] if quiet else []),
                       stdout=subprocess.PIPE, text=True)  # stderr: the simulator's progress lines
    if p.returncode != 0:
        raise RuntimeError(f"apta-sim failed on {plan_path} (exit {p.returncode}); see the error above")
    with open(out_path) as fh:
        return json.load(fh)


def main_scenarios(params, jitter_runs):
    sc = [{"name": "base", "config": c} for c in CONFIGS]
    sc += [{"name": f"bw{v}", "config": "apta", "overrides": {"links.dm_bandwidth_gbps": v}} for v in pval(params, "sweeps", "bandwidth_gbps")]
    sc += [{"name": f"lat{v}", "config": "apta", "overrides": {"links.dm_latency_ns": v}} for v in pval(params, "sweeps", "latency_ns")]
    cpis = sorted(set(pval(params, "sweeps", "cpi")) | {pval(params, "sweeps", "weak_cpi")})
    sc += [{"name": f"cpi{v}", "config": c, "overrides": {"compute.cpi_int_fp": v}} for v in cpis for c in (BASE, "apta")]
    sc += [{"name": f"jitter{k}", "config": c, "jitter": True, "seed": k}
           for c in ("apta", "cxl_cached") for k in range(1, jitter_runs + 1)]
    return sc


def sensitivity_scenarios(params, jitter_runs):
    """The runs beside the headline: the RDMA configurations under each other RDMA link (base and the
    weak-core CPI of R8), the jitter runs in the other two jitter modes, and message-mode jitter runs
    of the configurations R4 does not use (the figures' error bars). The headline's own runs
    (main_scenarios) are not repeated."""
    weak = pval(params, "sweeps", "weak_cpi")
    sc = []
    for ch in rdma_links(params):
        if ch["headline"]:
            continue
        o = {"links.rdma_latency_ns": ch["latency_ns"], "links.rdma_bandwidth_gbps": ch["bandwidth_gbps"]}
        sc += [{"name": f"rdmalink-{ch['id']}:base", "config": c, "overrides": o} for c in rdma_link_configs(params)]
        sc.append({"name": f"rdmalink-{ch['id']}:cpi{weak}", "config": BASE, "overrides": o | {"compute.cpi_int_fp": weak}})
    for mode, prefix in JITTER_MODES.items():
        cfgs = [c for c in CONFIGS if c not in ("apta", "cxl_cached")] if mode == "message" else ["apta", "cxl_cached"]
        sc += [{"name": f"{prefix}{k}", "config": c, "jitter": True, "seed": k} | ({} if mode == "message" else {"jitter_mode": mode})
               for c in cfgs for k in range(1, jitter_runs + 1)]
    return sc


def failure_scenarios(plan, base):
    """For each cached configuration: kill the server holding a copy that a later put must
    invalidate, right after it cached it (chosen from that configuration's own timeline)."""
    out = []
    for cfg in ("apta", "cxl_cached", "rdmaf_apta"):
        r = base.get(cfg)
        if not r or not r["completed"]:
            continue
        insts = r["instances"]
        order = sorted(range(len(insts)), key=lambda k: insts[k]["start_ns"])
        victim = None
        for k in order:
            if not insts[k]["put_inv"]:
                continue
            writes = set(plan["instances"][k]["writes"])
            srv = insts[k]["server"]
            before = [j for j in order if insts[j]["end_ns"] <= insts[k]["start_ns"] and insts[j]["server"] != srv
                      and writes & (set(plan["instances"][j]["reads"]) | set(plan["instances"][j]["writes"]))]
            if before:
                j = max(before, key=lambda j: insts[j]["end_ns"])
                victim = (int(insts[j]["server"][1:]) - 1, insts[j]["end_ns"] + 1.0, plan["instances"][k]["function"])
                break
        if victim:
            s, t, writer = victim
            out.append({"name": "fail", "config": cfg, "failures": [{"server": s, "at_ns": t}],
                        "why": f"c{s + 1} dies at {t / 1000:.1f} us holding a copy that {writer}'s put invalidates"})
    return out


def eval_app(app, args, params):
    wf_path = os.path.join(workflow.WORKFLOW_DIR, f"{app}.json")
    wf = workflow.load(wf_path)
    traces = os.path.join(args.traces, app)
    plan = planlib.build_plan(wf_path, traces, wf=wf)
    raw = os.path.join(args.out, "raw")
    plan_path = os.path.join(raw, f"{app}.plan.json")
    planlib.write_json_atomic(plan_path, plan)
    sc = main_scenarios(params, args.jitter_runs) + sensitivity_scenarios(params, args.jitter_runs) + dflow.scenarios(params)
    log(f"{app}: {len(plan['instances'])} instances, {len(sc)} scenarios")
    res = run_sim(args.sim, plan_path, sc, os.path.join(raw, f"{app}.results.json"), args.params)
    dflow.check(app, res["results"])
    by = {}
    for r in res["results"]:
        by.setdefault(r["name"], {})[r["config"]] = r
    dsc = dflow.failure_scenarios(plan, by, params)
    dres = []
    if dsc:
        why = dsc[0].pop("why")
        for d in dsc[1:]:
            d.pop("why")
        dres = run_sim(args.sim, plan_path, dsc, os.path.join(raw, f"{app}.dataflow-failure.json"), args.params)["results"]
        dflow.check(app, dres)
        for r in dres:
            r["why"] = why
    fsc = failure_scenarios(plan, by["base"])
    fres = []
    if fsc:
        why = {f["config"]: f.pop("why") for f in fsc}
        fr = run_sim(args.sim, plan_path, fsc, os.path.join(raw, f"{app}.failure.json"), args.params)
        for r in fr["results"]:
            r["why"] = why[r["config"]]
            fres.append(r)
    for c in CONFIGS:
        r = by["base"][c]
        log(f"{app:9s} {c:13s} makespan {r['makespan_ns'] / 1e3:10.1f} us  get {r['get_ns'] / 1e3:9.1f} us  "
            f"put {r['put_ns'] / 1e3:9.1f} us  speedup {by['base'][BASE]['makespan_ns'] / r['makespan_ns']:.2f}")
    for v in pval(params, "sweeps", "invoke_us"):
        x, y = by[f"inv{v}"]["apta"], by[f"inv{v}"]["apta_dataflow"]
        log(f"{app:9s} invocation {v / 1e3:6g} ms: Apta {x['makespan_ns'] / 1e3:10.1f} us  Apta + dataflow {y['makespan_ns'] / 1e3:10.1f} us  "
            f"speedup {x['makespan_ns'] / y['makespan_ns']:.2f}  held gets {y['held_gets']}")
    return app, {"wf": wf, "plan": plan, "raw": res, "by": by, "failure": fres, "dataflow_failure": dres, "object_bytes": object_sizes(plan)}


def object_sizes(plan):
    """Each object's largest size over the plan's traces (bytes)."""
    sizes = {}
    for i in plan["instances"]:
        with open(os.path.join(i["trace"], "meta.json")) as fh:
            for o in json.load(fh)["objects"]:
                sizes[o["name"]] = max(sizes.get(o["name"], 0), o["len"])
    return sizes
