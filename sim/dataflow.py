"""The dataflow comparison of `make eval`: Apta against "Apta + dataflow", where a
function is invoked together with its predecessors (DFlow's one-level lookahead) and its gets wait
at the memory server for the version they name. The invocation path (placement and start-up) is a
parameter swept over sweeps.invoke_us; each workflow also runs with a producer's server killed.
sim/README.md "Dataflow" says what is modelled; eval.py calls the functions here."""

from __future__ import annotations

CONFIGS = ("apta", "apta_dataflow")
COUNTERS = ("version_violations", "dag_violations", "stale_reads")


def _pval(params, sec, key):
    return params[sec][key]["value"]


def scenarios(params) -> list:
    """Both configurations at every invocation path of the sweep."""
    return [{"name": f"inv{v}", "config": c, "overrides": {"software.invoke_us": v}}
            for v in _pval(params, "sweeps", "invoke_us") for c in CONFIGS]


def failure_scenarios(plan, by, params) -> list:
    """At the headline invocation path: kill the server of the producer whose output a function
    invoked early waited longest for, halfway through that producer's run in the dataflow
    timeline; both configurations, the plan's servers (so the run is the headline's until the
    failure), the dead server's functions re-placed where most predecessors ran. None when no get
    was held."""
    inv = _pval(params, "sweeps", "dataflow_invoke_us")
    r = by.get(f"inv{inv}", {}).get("apta_dataflow")
    if not r or not r["completed"] or not r["held_gets"]:
        return []
    insts = r["instances"]
    anc = _ancestors(plan)
    best = None
    for k, pi in enumerate(plan["instances"]):
        writes = set(pi["writes"])
        for j, pj in enumerate(plan["instances"]):
            # j, after k in the DAG, reads what k writes and started before k finished: its get
            # waited for k's commit
            if k in anc[j] and writes & set(pj["reads"]) and insts[j]["start_ns"] < insts[k]["end_ns"]:
                wait = insts[k]["end_ns"] - insts[j]["start_ns"]
                if best is None or wait > best[0]:
                    best = (wait, k, j)
    if best is None:
        return []
    _, k, j = best
    x = insts[k]
    t = (x["start_ns"] + x["end_ns"]) / 2
    s = int(x["server"][1:]) - 1
    why = (f"c{s + 1} dies at {t / 1e3:.1f} us running {x['function']}.{x['index']}, "
           f"whose output {insts[j]['function']}.{insts[j]['index']} waits for")
    return [{"name": "dataflow-fail", "config": c, "overrides": {"software.invoke_us": inv},
             "failures": [{"server": s, "at_ns": t}], "why": why} for c in CONFIGS]


def _ancestors(plan) -> list:
    """Per instance, the set of its ancestors in the plan's DAG (deps, transitively)."""
    deps = [p["deps"] for p in plan["instances"]]
    memo = {}

    def up(i):
        if i not in memo:
            memo[i] = set()
            for d in deps[i]:
                memo[i] |= {d} | up(d)
        return memo[i]
    return [up(i) for i in range(len(deps))]


def check(app, results) -> None:
    """Every dataflow run must finish and read only what the DAG allows: the simulator counts a get
    that returned a version older than it named, a read of a version a function not before the
    reader in the DAG wrote, and a stale hit. A run that breaks any is an error, not a number."""
    for r in results:
        if r["config"] not in CONFIGS or not (r["name"].startswith("inv") or r["name"] == "dataflow-fail"):
            continue
        bad = {c: r[c] for c in COUNTERS if r[c]}
        if not r["completed"] or bad:
            raise RuntimeError(f"{app}: dataflow run {r['name']}/{r['config']}: "
                               + (f"did not finish ({r['stall']})" if not r["completed"] else f"violations {bad}"))


def geomean(xs):
    import math
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def analyse(apps: dict, params) -> dict:
    """Per invocation path: each workflow's makespans and the speedup of dataflow over Apta, the
    geomean; what the held gets cost; the failure runs."""
    names = sorted(apps)
    sweep = {}
    for v in _pval(params, "sweeps", "invoke_us"):
        row = {}
        for a in names:
            b = apps[a]["by"][f"inv{v}"]
            x, y = b["apta"], b["apta_dataflow"]
            row[a] = {"apta_ns": x["makespan_ns"], "dataflow_ns": y["makespan_ns"], "speedup": x["makespan_ns"] / y["makespan_ns"],
                      "held_gets": y["held_gets"], "hold_wait_ns": y["hold_wait_ns"], "get_retries": y["get_retries"]}
        sweep[v] = {"per_app": row, "geomean": geomean([row[a]["speedup"] for a in names])}
    fail = {}
    for a in names:
        runs = {r["config"]: r for r in apps[a].get("dataflow_failure", [])}
        if runs:
            fail[a] = {c: {"completed": r["completed"], "makespan_ns": r["makespan_ns"], "preemptions": r["preemptions"],
                           "restarts": sum(i["restarts"] for i in r["instances"]), "why": r["why"]} for c, r in runs.items()}
    # the simulator says which functions it invoked early (one rule, sim/src/system.cpp)
    early = {a: sorted({x["function"] for x in apps[a]["by"][f"inv{_pval(params, 'sweeps', 'dataflow_invoke_us')}"]["apta_dataflow"]["instances"]
                        if x["early"]}) for a in names}
    return {"invoke_us": _pval(params, "sweeps", "invoke_us"), "headline_us": _pval(params, "sweeps", "dataflow_invoke_us"),
            "sweep": sweep, "failure": fail, "early_functions": early}


def plot(D, out, save_fig, plt, app_colors) -> str:
    xs = D["invoke_us"]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for a, col in app_colors.items():
        ax.plot([x / 1e3 for x in xs], [D["sweep"][x]["per_app"][a]["speedup"] for x in xs], marker=".", lw=0.8, color=col, label=a)
    ax.plot([x / 1e3 for x in xs], [D["sweep"][x]["geomean"] for x in xs], marker="o", lw=2, color="black", label="geomean")
    ax.axvline(D["headline_us"] / 1e3, color="0.6", ls=":", lw=0.8)
    ax.set_xscale("symlog", linthresh=0.04)
    ax.set_xlabel("invocation path (ms)")
    ax.set_ylabel("makespan speedup over Apta")
    ax.set_title("Apta + dataflow over Apta, by invocation path")
    ax.legend(fontsize=7, ncol=2)
    path = "dataflow.png"
    save_fig(fig, f"{out}/{path}")
    return path


def report_section(D) -> list:
    xs = D["invoke_us"]
    L = ["", "## Beyond the paper: dataflow invocation (Apta + dataflow over Apta)", "",
         "A function is invoked together with its predecessors (DFlow's one-level lookahead) and its gets name the "
         "version they need; the memory server holds each until that version commits. Columns: the invocation path "
         "(placement to first instruction). Cells: Apta's makespan / Apta + dataflow's, in ms, and the speedup.", "",
         "| app | functions invoked early | " + " | ".join(f"{x / 1e3:g} ms" for x in xs) + " |",
         "|---|---|" + "---|" * len(xs)]
    for a, row in sorted(D["early_functions"].items()):
        cells = []
        for x in xs:
            c = D["sweep"][x]["per_app"][a]
            cells.append(f"{c['apta_ns'] / 1e6:.2f} / {c['dataflow_ns'] / 1e6:.2f} ({c['speedup']:.2f}x)")
        L.append(f"| {a} | {', '.join(row) or '-'} | " + " | ".join(cells) + " |")
    L.append("| **geomean** | | " + " | ".join(f"**{D['sweep'][x]['geomean']:.2f}x**" for x in xs) + " |")
    h = D["sweep"][D["headline_us"]]["per_app"]
    L += ["", f"At {D['headline_us'] / 1e3:g} ms (our kube-scheduler binding): held gets per workflow "
          + ", ".join(f"{a} {c['held_gets']} ({c['hold_wait_ns'] / 1e3:.0f} us waited)" for a, c in sorted(h.items()))
          + ". A function reading an object with two writers in the workflow (finra's portfolios, sentiment's reviews) "
          "is invoked after its predecessors finish: a re-executed first writer's second commit would look like the "
          "second writer's (sim/README.md \"Dataflow\").", ""]
    if D["failure"]:
        L += ["| app | what | Apta (ms) | Apta + dataflow (ms) | re-executions | early functions stopped |", "|---|---|---|---|---|---|"]
        for a, f in sorted(D["failure"].items()):
            x, y = f["apta"], f["apta_dataflow"]
            L.append(f"| {a} | {y['why']} | {x['makespan_ns'] / 1e6:.2f} | {y['makespan_ns'] / 1e6:.2f} | {y['restarts']} | {y['preemptions']} |")
        L.append("")
        L.append("Every dataflow run finished with no get older than it named, no read of a version written by a "
                 "function not before the reader, and no stale hit (eval checks it and fails otherwise).")
    return L
