"""The analysis of eval.py's runs against the paper's claims: R1-R8 (PAPER), Table IV in both
units, the sweeps of Fig. 10, the jitter runs' R4 and error bars, and how far each open choice
moves each result (sensitivity). Pure arithmetic on results: nothing here runs the simulator."""
from __future__ import annotations

import statistics

from apta.sim import plan as planlib
from apta.sim.eval_common import (AGREE_PP, BASE, CACHED, CONFIGS, DEPENDS_PP, JITTER_MODES, PAPER,
                                  geomean, pval, rdma_link_configs, rdma_links)

workflow = planlib.workflow


def r_values(names: list, get, params, r4: float) -> dict:
    """The paper's stated results (PAPER's ids) measured on runs: get(app, scenario name, config) ->
    a run's result; r4: R4, computed from the jitter runs (r4_runs). Fractions: gains for speedups,
    reductions for R4-R6 (1 - ours / baseline)."""
    def ms(a, n, c):
        return get(a, n, c)["makespan_ns"]

    def over(x, y):  # geomean speedup of config x over config y, as a fraction
        return geomean([ms(a, "base", y) / ms(a, "base", x) for a in names]) - 1

    def red(kind, c):  # geomean reduction of total get/put latency vs baseline
        return 1 - geomean([get(a, "base", c)[kind] / get(a, "base", BASE)[kind] for a in names
                            if get(a, "base", BASE)[kind] > 0])

    def vs_base(n, base_n):  # Apta in scenario n over the baseline in scenario base_n, geomean, as a fraction
        return geomean([ms(a, base_n, BASE) / ms(a, n, "apta") for a in names]) - 1

    weak = pval(params, "sweeps", "weak_cpi")
    return {
        "R1": over("apta", "rdma_faas"),
        "R1.net": over("rdmaf_faas", "rdma_faas"),
        "R1.proto": over("rdmaf_apta", "rdmaf_faas"),
        "R1.hw": over("apta", "rdmaf_apta"),
        "R2": over("apta", "cxl_uncached"),
        "R3": over("apta", "cxl_cached"),
        "R4": r4,
        "R5": red("get_ns", "apta"),
        "R5.faas": red("get_ns", "rdma_faas"),
        "R5.cxl": red("get_ns", "cxl_uncached"),
        "R6": red("put_ns", "apta"),
        "R6.cxl": red("put_ns", "cxl_uncached"),
        "R7.bw": vs_base(f"bw{max(pval(params, 'sweeps', 'bandwidth_gbps'))}", "base"),
        "R7.lat": vs_base(f"lat{max(pval(params, 'sweeps', 'latency_ns'))}", "base"),
        "R8": vs_base(f"cpi{weak}", f"cpi{weak}"),
    }


def jitter_names(by: dict, prefix: str) -> list:
    """The jitter runs' scenario names: prefix followed by the run number only ("jitter7", not
    "jitter-operation7" for the prefix "jitter")."""
    return [n for n in by if n.startswith(prefix) and n[len(prefix):].isdigit()]


def r4_runs(apps: dict, names: list, prefix: str) -> dict:
    """R4 from the jitter runs named prefix<k>: per app the makespan's mean, standard deviation and
    CV for Apta and CXL cached, and the reduction 1 - std(Apta) / std(CXL cached); "mean": R4, the
    mean of the reductions over the apps."""
    per = {}
    for a in names:
        d = {}
        for c in ("apta", "cxl_cached"):
            xs = [apps[a]["by"][n][c]["makespan_ns"] for n in jitter_names(apps[a]["by"], prefix)
                  if c in apps[a]["by"][n] and apps[a]["by"][n][c]["completed"]]
            d[c] = {"runs": len(xs), "mean_ns": statistics.mean(xs), "std_ns": statistics.pstdev(xs),
                    "cv": statistics.pstdev(xs) / statistics.mean(xs)}
        d["reduction"] = 1 - d["apta"]["std_ns"] / d["cxl_cached"]["std_ns"] if d["cxl_cached"]["std_ns"] > 0 else float("nan")
        per[a] = d
    return {"per_app": per, "mean": statistics.mean([per[a]["reduction"] for a in names])}


def table_iv_both(apps: dict, names: list) -> tuple[dict, dict]:
    """Table IV per app in both units, from the workflow model (python/apta/workflow.py) and from
    the simulated object caches of every cached configuration, and which unit the paper's counts
    are in. Per app: "paper" (the file's counts or None), "workflow_py" / "sim" / "equal" in the
    paper's unit, one count per function phase ("unit": "phase"), and "per_object" with the same
    fields counted per object ("equal": the per-object counts equal the paper's)."""
    out = {}
    for a in names:
        wf = apps[a]["wf"]
        base = apps[a]["by"]["base"]
        both = workflow.table_iv_units(wf)
        t = {"unit": "phase", "paper": wf.table_iv, "workflow_py": both["phase"],
             "workflow_py_all": workflow.table_iv(wf, rule="all"),
             "sim": {c: base[c]["table_iv"] for c in CACHED},
             "per_object": {"workflow_py": both["object"], "sim": {c: base[c].get("table_iv_objects") for c in CACHED}}}
        po = t["per_object"]
        po["sim_equals_workflow_py"] = all(v == both["object"] for v in po["sim"].values())
        # a workflow file may state no paper counts (table_iv is optional): nothing to compare
        t["equal"] = None if wf.table_iv is None else (
            all(v == wf.table_iv for v in t["sim"].values()) and t["workflow_py"] == wf.table_iv)
        po["equal"] = None if wf.table_iv is None else (po["sim_equals_workflow_py"] and both["object"] == wf.table_iv)
        out[a] = t
    stated = [a for a in names if out[a]["paper"] is not None]
    # workflows with a GET or PUT phase that touches more than one object (where the units can differ)
    multi = [a for a in names if any(len(i.reads) > 1 or len(i.writes) > 1 for i in apps[a]["wf"].instances())]
    unit = {"stated": stated, "multi_object_phases": multi,
            "phase_equal": [a for a in stated if out[a]["equal"]],
            "object_equal": [a for a in stated if out[a]["per_object"]["equal"]],
            "rule_all_differs": [a for a in stated if out[a]["workflow_py_all"] != out[a]["paper"]]}
    unit["paper_unit"] = ("phase" if stated and len(unit["phase_equal"]) == len(stated) else
                          "object" if stated and len(unit["object_equal"]) == len(stated) else None)
    return out, unit


def moves(values: dict) -> dict:
    """How far a result moves over the choices of one open question: values {choice id: result as a
    fraction}; the lowest and highest (with their choices) and the span between them in percentage
    points."""
    if not values:
        raise ValueError("moves: no values")
    lo = min(values, key=values.get)
    hi = max(values, key=values.get)
    return {"min": values[lo], "max": values[hi], "lo": lo, "hi": hi, "span_pp": (values[hi] - values[lo]) * 100}


def jitter_stats(apps: dict, names: list, prefix: str, config: str) -> dict:
    """The links' jitter as the simulator measured it in the runs prefix<k> of one configuration,
    averaged over the apps and runs: latency draws per jittered message, the latency's CV (its std /
    mean) and the lag-1 correlation of consecutive latencies on a channel."""
    xs = [apps[a]["by"][n][config]["jitter_stats"] for a in names for n in jitter_names(apps[a]["by"], prefix)
          if config in apps[a]["by"][n] and apps[a]["by"][n][config].get("jitter_stats")]
    xs = [x for x in xs if x["messages"] > 0]
    if not xs:
        return {}
    return {"runs": len(xs), "draws_per_message": statistics.mean(x["draws"] / x["messages"] for x in xs),
            "cv": statistics.mean(x["cv"] for x in xs), "lag1": statistics.mean(x["lag1"] for x in xs),
            "messages": statistics.mean(x["messages"] for x in xs)}


def jitter_errorbars(apps: dict, names: list) -> dict:
    """Error bars of the figures from the message-mode jitter runs (jitter<k>): per app and
    configuration the standard deviation over the runs of the speedup over RDMA and of the get and put
    time normalized to RDMA (both of run k), and the same of their geomean over the apps. Only
    configurations with jitter runs in every app."""
    out = {"runs": 0}
    ks = sorted(set.intersection(*[set(jitter_names(apps[a]["by"], "jitter")) for a in names]), key=lambda n: int(n[6:]))
    have = [c for c in CONFIGS if ks and all(c in apps[a]["by"][n] and apps[a]["by"][n][c]["completed"] for a in names for n in ks)]
    if BASE not in have:
        return out
    out["runs"] = len(ks)
    for key, field in (("speedup", "makespan_ns"), ("get_norm", "get_ns"), ("put_norm", "put_ns")):
        per, gm = {}, {}
        for c in have:
            runs = {a: [] for a in names}
            for n in ks:
                for a in names:
                    b, x = apps[a]["by"][n][BASE][field], apps[a]["by"][n][c][field]
                    if b > 0 and x > 0:
                        runs[a].append(b / x if key == "speedup" else x / b)
            for a in names:
                per.setdefault(a, {})[c] = statistics.pstdev(runs[a]) if len(runs[a]) > 1 else 0.0
            if all(len(runs[a]) == len(ks) for a in names):
                gm[c] = statistics.pstdev([geomean([runs[a][k] for a in names]) for k in range(len(ks))])
        out[key] = per
        out[key + "_geomean"] = gm
    return out


def sensitivity(apps: dict, params, A: dict) -> dict:
    """The R rows under each open choice (FAMILIES): RDMA link (every R row recomputed with the RDMA
    configurations' runs on that link), weak-core CPI (R8 at every CPI of the sweep) and jitter mode
    (R4 per mode). "moves": per R row and family with a span of at least DEPENDS_PP, moves()."""
    names = A["apps"]
    head = {r["id"]: r["ours"] for r in A["comparison"]}
    rcfg = rdma_link_configs(params)
    fams = {"rdma_link": [], "weak_cpi": [], "jitter": []}
    for ch in rdma_links(params):
        if ch["headline"]:
            rows = dict(head)
        else:
            pre = f"rdmalink-{ch['id']}:"

            def get(a, n, c, pre=pre):
                by = apps[a]["by"]
                return by[pre + n][c] if c in rcfg and c in by.get(pre + n, {}) else by[n][c]
            rows = r_values(names, get, params, head["R4"])
        fams["rdma_link"].append(ch | {"rows": rows})
    weak = pval(params, "sweeps", "weak_cpi")
    for v, sw in A["sweeps"]["cpi"].items():
        fams["weak_cpi"].append({"id": f"CPI {v}", "cpi": float(v), "headline": float(v) == weak, "rows": {"R8": sw["geomean"] - 1},
                                 "per_app": {a: sw["per_app"][a] - 1 for a in names}})
    for mode, prefix in JITTER_MODES.items():
        if not all(jitter_names(apps[a]["by"], prefix) for a in names):
            continue
        r = r4_runs(apps, names, prefix)
        fams["jitter"].append({"id": mode, "headline": mode == "message", "rows": {"R4": r["mean"]},
                               "per_app": {a: r["per_app"][a]["reduction"] for a in names}, "r4": r["per_app"],
                               "stats": {c: jitter_stats(apps, names, prefix, c) for c in ("apta", "cxl_cached")}})
    mv = {}
    for rid in PAPER:
        for f, chs in fams.items():
            vals = {c["id"]: c["rows"][rid] for c in chs if rid in c["rows"]}
            if len(vals) > 1:
                m = moves(vals)
                if m["span_pp"] >= DEPENDS_PP:
                    mv.setdefault(rid, {})[f] = m
    return {"families": fams, "moves": mv, "depends_pp": DEPENDS_PP,
            "jitter_corr_us": pval(params, "links", "jitter_corr_us"), "jitter_cv": pval(params, "links", "jitter_cv")}


def analyse(apps: dict, params) -> dict:
    names = list(apps)
    ms = {a: {c: apps[a]["by"]["base"][c]["makespan_ns"] for c in CONFIGS} for a in names}
    spd = {a: {c: ms[a][BASE] / ms[a][c] for c in CONFIGS} for a in names}
    gm = {c: geomean([spd[a][c] for a in names]) for c in CONFIGS}

    get_norm = {a: {c: apps[a]["by"]["base"][c]["get_ns"] / apps[a]["by"]["base"][BASE]["get_ns"] for c in CONFIGS} for a in names}
    put_norm = {a: {c: apps[a]["by"]["base"][c]["put_ns"] / apps[a]["by"]["base"][BASE]["put_ns"] for c in CONFIGS} for a in names}

    def sweep(prefix, values, cfg="apta", base_of=None):
        out = {}
        for v in values:
            xs = []
            for a in names:
                b = apps[a]["by"][base_of(v)][BASE]["makespan_ns"] if base_of else ms[a][BASE]
                xs.append(b / apps[a]["by"][f"{prefix}{v}"][cfg]["makespan_ns"])
            out[str(v)] = {"per_app": dict(zip(names, xs)), "geomean": geomean(xs)}
        return out

    bws, lats = pval(params, "sweeps", "bandwidth_gbps"), pval(params, "sweeps", "latency_ns")
    cpis = sorted(set(pval(params, "sweeps", "cpi")) | {pval(params, "sweeps", "weak_cpi")})
    bw = sweep("bw", bws)
    lat = sweep("lat", lats)
    cpi = sweep("cpi", cpis, base_of=lambda v: f"cpi{v}")
    r4 = r4_runs(apps, names, "jitter")
    ours = r_values(names, lambda a, n, c: apps[a]["by"][n][c], params, r4["mean"])
    r4 = r4["per_app"]
    table_iv, unit = table_iv_both(apps, names)
    breakdown = {a: {c: {k: apps[a]["by"]["base"][c][k] for k in ("makespan_ns", "get_ns", "compute_ns", "put_ns")} for c in CONFIGS} for a in names}
    failure = {a: [{k: r[k] for k in ("config", "completed", "stall", "makespan_ns", "why")} | {"normal_makespan_ns": ms[a][r["config"]]}
                   for r in apps[a]["failure"]] for a in names}
    comparison = []
    for k, (what, paper) in PAPER.items():
        v = ours[k]
        dev = (v - paper) * 100
        comparison.append({"id": k, "what": what, "paper": paper, "ours": v, "deviation_pp": dev,
                           "agrees": abs(dev) <= AGREE_PP})
    obj = [b for a in names for b in apps[a]["object_bytes"].values()]
    return {"apps": names, "object_bytes": {"min": min(obj), "max": max(obj)}, "speedup": spd, "geomean_speedup": gm, "get_norm": get_norm, "put_norm": put_norm,
            "sweeps": {"bandwidth_gbps": bw, "latency_ns": lat, "cpi": cpi}, "r4": r4, "table_iv": table_iv, "table_iv_unit": unit,
            "breakdown": breakdown, "failure": failure, "comparison": comparison}
