"""The physical limit (eval.py's bound table and its report section): one get and one put per
object size, alone on an idle system, against one round trip + size / link bandwidth, and the RTL
memory server's measured cycles (build/bench/ms.json) against the DM link's limit."""
from __future__ import annotations

import os

from apta import bounds
from apta.sim import plan as planlib
from apta.sim.eval_common import CONFIGS, geomean, pval
from apta.sim.eval_runs import run_sim


def reference_sizes(params) -> dict:
    """Sizes shown beside the workflows' objects: one line (compute.line_bytes), a 4 KiB page and a
    2 MiB huge page."""
    line = pval(params, "compute", "line_bytes")
    return {line: "one line", 4096: "a 4 KiB page", 2 << 20: "a 2 MiB huge page"}


def bound_sizes(apps: dict, params) -> dict:
    """{S: {"objects": ["app:object", ...], "reference": label or None}}: every size an object of
    the evaluated workflows has (its largest over the traces) and the reference sizes."""
    out = {}
    for a in sorted(apps):
        for o, S in sorted(apps[a]["object_bytes"].items()):
            out.setdefault(S, {"objects": [], "reference": None})["objects"].append(f"{a}:{o}")
    for S, label in reference_sizes(params).items():
        out.setdefault(S, {"objects": [], "reference": None})["reference"] = label
    return out


def object_reads(size: int, addr: int = 1 << 28, line: int = 64, per_event: int = 1000) -> list:
    """The events of a GET phase that reads an object of SIZE bytes at ADDR once, one access per
    line, PER_EVENT lines an event: what the tracer writes for a get (workloads/TRACES.md)."""
    n = -(-size // line)
    return [f"@ 0,0,{min(per_event, n - i)},0 $ * {hex(addr + i * line)} {hex(addr + min(n, i + per_event) * line - 1)}"
            for i in range(0, n, per_event)]


def bound_trace(d: str, phases: list, kind: str, name: str, size: int) -> str:
    """A trace directory (workloads/TRACES.md) with one object and no compute: the get's phase
    reads the object once (as a traced get does; for CXL cached these loads are the transfer), so
    the phase time is the store operation and that read."""
    import gzip
    os.makedirs(d, exist_ok=True)
    with gzip.open(os.path.join(d, "sigil.events.out-1.gz"), "wt") as fh:
        fh.write("\n".join(phases) + "\n")
    with open(os.path.join(d, "sigil.pthread.out"), "w"):
        pass
    planlib.write_json_atomic(os.path.join(d, "meta.json"),
                              {"objects": [{"kind": kind, "name": name, "addr": hex(1 << 28), "len": size}]})
    return d


def bound_runs(args, sizes, params) -> dict:
    """Per size S: a plan of two instances on c1, one after the other: `get` gets object o of S
    bytes (a workflow input nobody caches: a miss) and reads it once, then `put` puts object p of S bytes (nobody else
    holds it: no invalidation). Every configuration in one simulator run per size (a fresh system
    each, so nothing of another size is in flight). Returns {S: {config: {"get_ns", "put_ns"}}}."""
    root = os.path.join(args.out, "raw", "bound")
    out = {}
    for S in sorted(sizes):
        d = os.path.join(root, f"s{S}")
        g = bound_trace(os.path.join(d, "get.0"), ["& GET", *object_reads(S, line=pval(params, "compute", "line_bytes")),
                                                    "& COMPUTE", "& END"], "get", "o", S)
        p = bound_trace(os.path.join(d, "put.0"), ["& GET", "& COMPUTE", "& PUT", "& END"], "put", "p", S)
        plan = {"app": f"bound{S}", "objects": ["o", "p"], "instances": [
            {"function": "get", "index": 0, "server": 0, "deps": [], "reads": ["o"], "writes": [], "trace": g},
            {"function": "put", "index": 0, "server": 0, "deps": [0], "reads": [], "writes": ["p"], "trace": p}]}
        pp = os.path.join(d, "plan.json")
        planlib.write_json_atomic(pp, plan)
        res = run_sim(args.sim, pp, [{"name": "bound", "config": c} for c in CONFIGS], os.path.join(d, "results.json"), args.params, quiet=True)
        out[S] = {}
        for r in res["results"]:
            gi, pi = r["instances"]
            if not r["completed"] or gi["get_hit"] or pi["put_inv"]:
                raise RuntimeError(f"bound run of {S} B on {r['config']}: not a lone miss and put ({r['stall']})")
            out[S][r["config"]] = {"get_ns": gi["get_ns"], "put_ns": pi["put_ns"]}
    return out


def rtl_info(ms: dict, line: int, clock: float) -> dict:
    """What the report says about ms.json: variant, measured line counts, the streaming rate of its
    largest get (lines per cycle between the first and the last ObjData, as measured)."""
    big = max(ms["rows"], key=lambda r: r["lines"])
    lpc = big.get("get_lines_per_cycle") or big["lines"] / (big["get_last_data"] - big.get("get_first_data", 0) + 1)
    return {"variant": ms.get("variant"), "linesPerObject": ms.get("linesPerObject"), "lines": [r["lines"] for r in ms["rows"]],
            "line_bytes": line, "get_lines_per_cycle": lpc, "get_gbps": lpc * line * 8 * clock}


def bound_table(sizes: dict, times: dict, params, ms: dict | None, ms_why: str) -> dict:
    """Per size: the limit of each configuration's link, the simulated get and put times and their
    ratios to it, and the RTL memory server's cycles (ms.json) at memory_server.clock_ghz against
    the DM link's limit (Apta's link). `sizes`: bound_sizes()."""
    clock = pval(params, "memory_server", "clock_ghz")
    line = pval(params, "compute", "line_bytes")
    dm = bounds.link_of(params, "apta")
    rows = []
    for S in sorted(sizes):
        row = {"bytes": S, "objects": sizes[S]["objects"], "reference": sizes[S]["reference"], "limit_ns": {}, "get": {}, "put": {}}
        for c in CONFIGS:
            lim = bounds.limit_ns(S, *bounds.link_of(params, c))
            row["limit_ns"][c] = lim
            for op in ("get", "put"):
                t = times[S][c][f"{op}_ns"]
                row[op][c] = {"ns": t, "ratio": bounds.ratio(t, lim)}
        if ms:
            rc = bounds.rtl_cycles(ms, S, line)
            lim = bounds.limit_ns(S, *dm)
            row["rtl"] = {"lines": rc["lines"], "how": rc["how"]}
            for op in ("get", "put"):
                t = bounds.rtl_ns(rc[op], clock)
                row["rtl"][op] = {"cycles": rc[op], "ns": t, "ratio": bounds.ratio(t, lim)}
        else:
            row["rtl"] = None
        rows.append(row)
    links = {l: {"latency_ns": params["links"][f"{l}_latency_ns"]["value"], "bandwidth_gbps": params["links"][f"{l}_bandwidth_gbps"]["value"]}
             for l in sorted({params["configs"][c]["link"] for c in CONFIGS})}
    return {"clock_ghz": clock, "clock_source": params["memory_server"]["clock_ghz"]["source"], "links": links,
            "rtl": rtl_info(ms, line, clock) if ms else None,
            "rtl_missing": None if ms else ms_why, "rows": rows}


def fmt_us(ns: float) -> str:
    us = ns / 1e3
    return f"{us:.3f}" if us < 1 else f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:,.0f}"


def fmt_ratio(r: float) -> str:
    return f"{r:.2f}x" if r >= 0.995 else f"{r:.2g}x"


def size_label(S: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if S >= k and S % k == 0:
            return f"{S // k} {unit}"
    return f"{S:,} B"


def bound_section(A, params) -> list:
    """The bound table: simulated get/put time per configuration and object size against the
    physical limit, and the RTL memory server's measured cycles at the stated clock."""
    B = A["bounds"]
    lk = B["links"]
    labels = {c: params["configs"][c]["label"] for c in CONFIGS}
    L = ["", "## Physical limit: get and put time against one round trip + size / link bandwidth", "",
         "An object of S bytes cannot cross a link faster than one round trip plus S x 8 / bandwidth. Limit per "
         "configuration from its link in `sim/params.json`: "
         + "; ".join(f"{l.upper()} link {v['latency_ns']:g} ns one-way, {v['bandwidth_gbps']:g} Gbps "
                     f"(used by {', '.join(labels[c] for c in CONFIGS if params['configs'][c]['link'] == l)})" for l, v in lk.items())
         + ". Simulated: one get of an S-byte object no server caches (a miss: a hit has no remote transfer) and then one put "
         "of an S-byte object no other server holds (no invalidation), on c1 with nothing else running, no compute, "
         "each size a fresh run (`raw/bound/`). Ratio = time / limit; above 1 is the memory server (OTC, OSC, DDR4), the "
         "68-byte flits, CXL's per-line requests and redo log, and the RDMA_f configurations' software factor and calls.", ""]
    if B["rtl"]:
        r = B["rtl"]
        L.append(f"RTL: the memory server's measured cycles (`build/bench/ms.json`, variant {r['variant']}, "
                 f"{min(r['lines'])}-{max(r['lines'])} lines measured; get = ObjGet accepted -> last ObjData, put = first PutLine "
                 f"accepted -> PutCommit; its DRAM is a model RAM with no latency) at **{B['clock_ghz']:g} GHz** "
                 f"(`memory_server.clock_ghz` of sim/params.json: {B['clock_source']}), over the DM link's limit: the memory "
                 "server's own share of the bound, with the link's round trip and serialization excluded. "
                 "Sizes between measured line counts are interpolated (†), beyond the largest extrapolated on the last two "
                 f"rows (‡). Its largest measured get streams {r['get_gbps']:,.0f} Gbps ({r['get_lines_per_cycle']:g} "
                 f"{'line' if r['get_lines_per_cycle'] == 1 else 'lines'} of {r['line_bytes']} B per cycle at {B['clock_ghz']:g} GHz), {r['get_gbps'] / lk['dm']['bandwidth_gbps']:.1f}x the DM link's "
                 f"{lk['dm']['bandwidth_gbps']:g} Gbps, so for large objects its share of the bound tends to "
                 f"{lk['dm']['bandwidth_gbps'] / r['get_gbps']:.3f}.")
    else:
        L.append(f"RTL: **not measured here**: {B['rtl_missing']}; the RTL column is empty.")
    wf_rows = [r for r in B["rows"] if r["objects"]]
    if wf_rows:
        L += ["", f"Over the {sum(len(r['objects']) for r in wf_rows)} objects of the workflows "
              f"({size_label(min(r['bytes'] for r in wf_rows))} to {size_label(max(r['bytes'] for r in wf_rows))}), "
              "time / limit, min-max (geomean over the distinct sizes):", "",
              "| configuration | get | put |", "|---|---|---|"]
        def span(xs):
            return f"{fmt_ratio(min(xs))}-{fmt_ratio(max(xs))} ({fmt_ratio(geomean(xs))})"
        for c in CONFIGS:
            L.append(f"| {labels[c]} | {span([r['get'][c]['ratio'] for r in wf_rows])} | {span([r['put'][c]['ratio'] for r in wf_rows])} |")
        if B["rtl"]:
            L.append(f"| RTL memory server at {B['clock_ghz']:g} GHz | {span([r['rtl']['get']['ratio'] for r in wf_rows])} | "
                     f"{span([r['rtl']['put']['ratio'] for r in wf_rows])} |")
    for op in ("get", "put"):
        L += ["", f"### {op.capitalize()}: time in us and time / limit", "",
              "| size | objects | " + " | ".join(f"limit {l.upper()} (us)" for l in lk) + " | "
              + " | ".join(labels[c] for c in CONFIGS) + f" | RTL at {B['clock_ghz']:g} GHz |",
              "|---|---|" + "---|" * (len(lk) + len(CONFIGS) + 1)]
        for r in B["rows"]:
            what = ", ".join(r["objects"]) + (f"{'; ' if r['objects'] else ''}({r['reference']})" if r["reference"] else "")
            lims = []
            for l in lk:
                c = next(c for c in CONFIGS if params["configs"][c]["link"] == l)
                lims.append(fmt_us(r["limit_ns"][c]))
            cells = [f"{fmt_us(r[op][c]['ns'])} ({fmt_ratio(r[op][c]['ratio'])})" for c in CONFIGS]
            if r["rtl"]:
                x = r["rtl"]
                mark = {"measured": "", "interpolated": " †", "extrapolated": " ‡"}[x["how"]]
                t = f"{x[op]['ns']:.1f} ns" if x[op]["ns"] < 1000 else f"{fmt_us(x[op]['ns'])} us"
                rtl = f"{x[op]['cycles']:,.0f} cyc = {t} ({fmt_ratio(x[op]['ratio'])}){mark}"
            else:
                rtl = "not measured (no ms.json)"
            L.append(f"| {size_label(r['bytes'])} | {what} | " + " | ".join(lims) + " | " + " | ".join(cells) + f" | {rtl} |")
    return L
