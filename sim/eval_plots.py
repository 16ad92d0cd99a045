"""eval.py's figures (Figs. 8-10, R4, every stated result with its ranges, the sensitivity runs)
from the analysis, each written atomically. Without matplotlib there are no plots, and the rest
of the evaluation still runs."""
from __future__ import annotations

import os

from apta.sim import dataflow as dflow
from apta.sim.eval_common import CONFIGS, FAMILIES, PAPER, REDUCTIONS, geomean, log, pval, shown

# One fixed colour per configuration, the same in every figure.
COLORS = {"rdma": "#7f7f7f", "rdma_faas": "#1f77b4", "rdmaf_faas": "#17becf", "rdmaf_apta": "#9467bd",
          "cxl_uncached": "#ff7f0e", "cxl_cached": "#d62728", "apta": "#2ca02c"}
PAPER_MARK = {"marker": "D", "color": "black", "markersize": 6, "zorder": 5}  # the paper's stated numbers


def save_fig(fig, path):
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    os.replace(tmp, path)


def paper_value(rid: str) -> float:
    """A stated result as a ratio to the baseline-normalized quantity it describes: a speedup +42% ->
    1.42, a reduction of 90% -> 0.10."""
    v = PAPER[rid][1]
    return 1 - v if rid in REDUCTIONS else 1 + v



def plots(A, params, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        log("matplotlib missing (pip install -r requirements.txt): no plots")
        return [], {}
    names, files = A["apps"], []
    labels = {c: params["configs"][c]["label"] for c in CONFIGS}
    E = A.get("errorbars") or {"runs": 0}
    used = {}  # figure -> {configuration: the colour its bars were drawn in}: what the test checks
    paper_handle = Line2D([], [], linestyle="none", label="paper (stated)", **PAPER_MARK)
    err_note = (f"error bars: +-1 std. dev. over {E['runs']} jitter runs (per-message jitter)" if E["runs"] else "no jitter runs: no error bars")

    def bars(ax, data, configs, title, ylabel, fig, key):
        groups = names + ["geomean"]
        w = 0.8 / len(configs)
        for k, c in enumerate(configs):
            ys = [data[a][c] for a in names] + [geomean([data[a][c] for a in names])]
            err = None
            if E["runs"] and c in E[key + "_geomean"]:
                err = [E[key][a][c] for a in names] + [E[key + "_geomean"][c]]
            cont = ax.bar([g + k * w for g in range(len(groups))], ys, w, label=labels[c], color=COLORS[c],
                          yerr=err, capsize=2, error_kw={"lw": 0.8})
            used.setdefault(fig, {})[c] = matplotlib.colors.to_hex(cont.patches[0].get_facecolor())
        ax.set_xticks([g + 0.4 - w / 2 for g in range(len(groups))])
        ax.set_xticklabels(groups, rotation=20)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        return w

    fig, ax = plt.subplots(figsize=(11, 4.3))
    bars(ax, A["speedup"], CONFIGS, "Fig. 8: speedup over RDMA without caching (ours)", "speedup", "fig8", "speedup")
    ax.axhline(1, color="k", lw=0.5)
    ax.legend(fontsize=7, ncol=4, loc="upper left")
    ax.text(1.0, -0.2, err_note + ". The paper states only ratios between configurations (R1-R3): "
            "drawn beside ours in rrows.png.", transform=ax.transAxes, ha="right", fontsize=7)
    save_fig(fig, os.path.join(out, "fig8.png")); files.append("fig8.png")
    plt.close(fig)

    # Fig. 9: the paper's stated geomean reductions (R5, R6) as markers on the geomean group
    stated = {"get_norm": {"rdma_faas": "R5.faas", "cxl_uncached": "R5.cxl", "apta": "R5"},
              "put_norm": {"cxl_uncached": "R6.cxl", "apta": "R6"}}
    fig, axs = plt.subplots(1, 2, figsize=(13, 4.4))
    sel = ["rdma", "rdma_faas", "cxl_uncached", "apta"]
    for ax, key, title in ((axs[0], "get_norm", "Fig. 9 (left): total get latency, normalized"),
                           (axs[1], "put_norm", "Fig. 9 (right): total put latency, normalized")):
        w = bars(ax, A[key], sel, title, "normalized to RDMA", "fig9", key)
        g = len(names)
        for k, c in enumerate(sel):
            if c in stated[key]:
                ax.plot(g + k * w, paper_value(stated[key][c]), **PAPER_MARK)
        if key == "put_norm":  # §IV-C: "RDMA and RDMA+FaaS see the same put latencies"
            ax.plot(g + sel.index("rdma_faas") * w, 1.0, **PAPER_MARK)
    hs = [Patch(color=COLORS[c], label=labels[c]) for c in sel] + [paper_handle]
    fig.legend(handles=hs, loc="upper center", ncol=len(hs), fontsize=8, bbox_to_anchor=(0.5, -0.03))
    fig.text(0.5, -0.11, err_note + "; paper markers on the geomean group: R5, R6 and 'RDMA and RDMA+FaaS see the same put latencies'",
             ha="center", fontsize=7)
    save_fig(fig, os.path.join(out, "fig9.png")); files.append("fig9.png")
    plt.close(fig)

    # Fig. 10: per-app lines in fixed colours, geomean, the paper's R7/R8 as markers
    app_colors = {a: plt.get_cmap("Dark2")(k % 8) for k, a in enumerate(names)}  # apps, not configurations: another palette
    fig, axs = plt.subplots(1, 3, figsize=(14, 4.2))
    sw = A["sweeps"]
    for ax, key, xl in zip(axs, ("bandwidth_gbps", "latency_ns", "cpi"), ("DM bandwidth (Gbps)", "DM link latency (ns)", "int/fp CPI")):
        xs = [float(v) for v in sw[key]]
        for a in names:
            ax.plot(xs, [sw[key][v]["per_app"][a] for v in sw[key]], marker=".", lw=0.8, color=app_colors[a])
        ax.plot(xs, [sw[key][v]["geomean"] for v in sw[key]], "k-o", lw=2)
        ax.set_xlabel(xl)
        ax.set_ylabel("Apta speedup over baseline")
        if key == "cpi":
            ax.set_xscale("log")
            ax.minorticks_off()
            ax.set_xticks(xs)
            ax.set_xticklabels([str(v) for v in sw[key]])
            ax.axhline(paper_value("R8"), color="k", ls="--", lw=0.8)
            ax.text(xs[0], paper_value("R8"), " paper R8 (its CPI is not stated)", fontsize=7, va="bottom")
            ax.axvline(pval(params, "sweeps", "weak_cpi"), color="0.6", ls=":", lw=0.8)
        elif key == "bandwidth_gbps":
            ax.plot(max(xs), paper_value("R7.bw"), **PAPER_MARK)
        else:
            ax.plot(max(xs), paper_value("R7.lat"), **PAPER_MARK)
    hs = [Line2D([], [], color=app_colors[a], marker=".", label=a) for a in names]
    hs += [Line2D([], [], color="k", marker="o", lw=2, label="geomean"), paper_handle]
    fig.legend(handles=hs, loc="upper center", ncol=len(hs), fontsize=8, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("Fig. 10: sensitivity (ours); paper: R7 at 200 Gbps / 600 ns, R8 (dashed, CPI not stated; ours at the dotted CPI)")
    save_fig(fig, os.path.join(out, "fig10.png")); files.append("fig10.png")
    plt.close(fig)

    # R4: what R4 reports. (a) the standard deviations themselves, (b) the reduction per app and
    # mode, their mean (= R4) and the paper's -32%
    S = A.get("sensitivity", {}).get("families", {})
    modes = S.get("jitter") or [{"id": "message", "per_app": {a: A["r4"][a]["reduction"] for a in names},
                                 "rows": {"R4": next(r["ours"] for r in A["comparison"] if r["id"] == "R4")}}]
    mode_colors = {"message": "#444444", "operation": "#bcbd22", "correlated": "#8c564b"}
    fig, axs = plt.subplots(1, 2, figsize=(14, 4.2))
    xs = range(len(names))
    for k, c in enumerate(("cxl_cached", "apta")):
        cont = axs[0].bar([x + (k - 0.5) * 0.4 for x in xs], [A["r4"][a][c]["std_ns"] / 1e3 for a in names], 0.4,
                          color=COLORS[c], label=labels[c])
        used.setdefault("r4", {})[c] = matplotlib.colors.to_hex(cont.patches[0].get_facecolor())
    axs[0].set_yscale("log")
    fmt = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    axs[0].yaxis.set_major_formatter(fmt)
    axs[0].yaxis.set_minor_formatter(fmt)
    axs[0].tick_params(axis="y", which="minor", labelsize=7)
    axs[0].set_xticks(list(xs)); axs[0].set_xticklabels(names, rotation=20)
    axs[0].set_ylabel("std. dev. of the makespan (us, log)")
    axs[0].set_title(f"(a) std. dev. over the jitter runs (per message, {A['r4'][names[0]]['apta']['runs']} runs)", fontsize=10)
    axs[0].legend(fontsize=8)
    groups = names + ["mean (R4)"]
    w = 0.8 / len(modes)
    for k, m in enumerate(modes):
        ys = [-m["per_app"][a] * 100 for a in names] + [-m["rows"]["R4"] * 100]
        axs[1].bar([g + k * w for g in range(len(groups))], ys, w, color=mode_colors.get(m["id"], "0.5"),
                   label=f"jitter per {m['id']}" + (" (headline)" if m["id"] == "message" else "") if m["id"] != "correlated"
                   else f"correlated (tau {A.get('sensitivity', {}).get('jitter_corr_us', '?')} us)")
    axs[1].plot(len(names) + 0.4 - w / 2, -PAPER["R4"][1] * 100, **PAPER_MARK)
    axs[1].axhline(0, color="k", lw=0.5)
    axs[1].set_xticks([g + 0.4 - w / 2 for g in range(len(groups))]); axs[1].set_xticklabels(groups, rotation=20)
    axs[1].set_ylabel("Apta's std. dev. vs CXL cached's (%)")
    axs[1].set_title("(b) R4: change of the std. dev., per app and jitter mode", fontsize=10)
    h1, _ = axs[1].get_legend_handles_labels()
    axs[1].legend(handles=h1 + [paper_handle], fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axs[1].set_ylim(min(-100, axs[1].get_ylim()[0]), max(5, axs[1].get_ylim()[1]))
    fig.suptitle("Result 4: standard deviation of the makespan under Gaussian link jitter (ours)")
    save_fig(fig, os.path.join(out, "r4.png")); files.append("r4.png")
    plt.close(fig)

    # every stated result: paper (marker), ours (dot) and how far each open choice moves it (bars)
    sens = A.get("sensitivity")
    if sens:
        fam_colors = {"rdma_link": "#1f77b4", "weak_cpi": "#ff7f0e", "jitter": "#9467bd"}
        rows = [r for r in A["comparison"]]
        fig, ax = plt.subplots(figsize=(10, 0.42 * len(rows) + 1.6))
        for y, r in enumerate(rows):
            rid = r["id"]
            for k, (f, m) in enumerate(sens["moves"].get(rid, {}).items()):
                a, b = sorted((shown(m["min"], rid), shown(m["max"], rid)))
                ax.plot([a, b], [y + 0.18 * (k + 1)] * 2, color=fam_colors[f], lw=3, solid_capstyle="butt")
            ax.plot(shown(r["ours"], rid), y, "o", color=COLORS["apta"], zorder=4)
            ax.plot(shown(r["paper"], rid), y, **PAPER_MARK)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([f"{r['id']}" for r in rows])
        ax.invert_yaxis()
        ax.axvline(0, color="k", lw=0.5)
        ax.set_xlabel("result (%): speedups as gains, R4-R6 as changes (negative = lower)")
        hs = [Line2D([], [], color=COLORS["apta"], marker="o", linestyle="none", label="ours (headline)"), paper_handle]
        hs += [Line2D([], [], color=fam_colors[f], lw=3, label=f"range over the {FAMILIES[f]} choices") for f in FAMILIES]
        ax.legend(handles=hs, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3)
        ax.set_title("Every stated result: the paper's, ours, and how far the choices the paper leaves open move ours", fontsize=10)
        ax.grid(axis="x", lw=0.3)
        save_fig(fig, os.path.join(out, "rrows.png")); files.append("rrows.png")
        plt.close(fig)

        # the sensitivity sections' plots: RDMA link choices, weak-core CPI, jitter modes
        fig, axs = plt.subplots(1, 3, figsize=(16, 4.6), gridspec_kw={"width_ratios": [2.2, 1, 1]})
        chs = sens["families"]["rdma_link"]
        rids = [rid for rid in PAPER if "rdma_link" in sens["moves"].get(rid, {})]
        cmap = plt.get_cmap("Blues")
        w = 0.8 / len(chs)
        for k, ch in enumerate(chs):
            axs[0].bar([g + k * w for g in range(len(rids))], [shown(ch["rows"][rid], rid) for rid in rids], w,
                       color=cmap(0.35 + 0.6 * k / max(1, len(chs) - 1)),
                       label=f"{ch['id']}: {ch['latency_ns']:g} ns, {ch['bandwidth_gbps']:g} Gbps" + (" (headline)" if ch["headline"] else ""))
        for g, rid in enumerate(rids):
            axs[0].plot(g + 0.4 - w / 2, shown(PAPER[rid][1], rid), **PAPER_MARK)
        axs[0].axhline(0, color="k", lw=0.5)
        axs[0].set_xticks([g + 0.4 - w / 2 for g in range(len(rids))]); axs[0].set_xticklabels(rids)
        axs[0].set_ylabel("result (%)")
        axs[0].set_title("(a) RDMA link of the RDMA configurations (one-way latency, bandwidth)", fontsize=10)
        h0, _ = axs[0].get_legend_handles_labels()
        axs[0].legend(handles=h0 + [paper_handle], fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3)
        cp = sens["families"]["weak_cpi"]
        axs[1].plot([c["cpi"] for c in cp], [c["rows"]["R8"] * 100 for c in cp], "k-o")
        axs[1].axhline(PAPER["R8"][1] * 100, color="k", ls="--", lw=0.8)
        axs[1].text(cp[0]["cpi"], PAPER["R8"][1] * 100, " paper R8", fontsize=7, va="bottom")
        axs[1].axvline(pval(params, "sweeps", "weak_cpi"), color="0.6", ls=":", lw=0.8)
        axs[1].set_xscale("log"); axs[1].minorticks_off()
        axs[1].set_xticks([c["cpi"] for c in cp]); axs[1].set_xticklabels([f"{c['cpi']:g}" for c in cp])
        axs[1].set_xlabel("int/fp CPI of both systems' cores (dotted: headline)")
        axs[1].set_ylabel("R8: Apta over the baseline (%)")
        axs[1].set_title("(b) weak-core CPI", fontsize=10)
        jm = sens["families"]["jitter"]
        axs[2].bar(range(len(jm)), [-m["rows"]["R4"] * 100 for m in jm], 0.6, color=[mode_colors.get(m["id"], "0.5") for m in jm])
        axs[2].plot(range(len(jm)), [-PAPER["R4"][1] * 100] * len(jm), linestyle="none", **PAPER_MARK)
        axs[2].axhline(0, color="k", lw=0.5)
        axs[2].set_xticks(range(len(jm))); axs[2].set_xticklabels([m["id"] + (" (headline)" if m["headline"] else "") for m in jm], rotation=15)
        axs[2].set_ylabel("R4: std. dev. change (%)")
        axs[2].set_title("(c) jitter mode", fontsize=10)
        fig.suptitle("Sensitivity to the choices the paper leaves open (extra runs; the headline's parameters unchanged)")
        save_fig(fig, os.path.join(out, "sensitivity.png")); files.append("sensitivity.png")
        plt.close(fig)
    if "dataflow" in A:
        files.append(dflow.plot(A["dataflow"], out, save_fig, plt, app_colors))
    return files, used
