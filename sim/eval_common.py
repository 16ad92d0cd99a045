"""What every part of the evaluation (eval.py) shares: the seven configurations, the numbers the
paper states with the tolerance for agreeing with them, the choices the paper leaves open (RDMA
links, jitter modes), and how a stated result is printed. One place, so the runs, the analysis,
the plots and the report cannot disagree on them."""
from __future__ import annotations

import math
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = ["rdma", "rdma_faas", "rdmaf_faas", "rdmaf_apta", "cxl_uncached", "cxl_cached", "apta"]
CACHED = ("rdma_faas", "rdmaf_faas", "rdmaf_apta", "cxl_cached", "apta")   # the configurations with object caches
BASE = "rdma"

# The numbers the paper states in its text (§IV-C); fractions. Table IV lives in the workflow files.
PAPER = {
    "R1": ("Apta over RDMA+FaaS, geomean speedup", 0.42),
    "R1.net": ("RDMA_f+FaaS over RDMA+FaaS (faster network only)", 0.07),
    "R1.proto": ("RDMA_f+Apta over RDMA_f+FaaS (Apta's protocol in software)", 0.12),
    "R1.hw": ("Apta over RDMA_f+Apta (hardware controllers)", 0.18),
    "R2": ("Apta over CXL uncached, geomean speedup", 0.24),
    "R3": ("Apta over CXL cached, geomean speedup", 0.10),
    "R4": ("lower std. dev. of execution time, Apta vs CXL cached (jitter, mean over apps)", 0.32),
    "R5": ("get latency reduction vs baseline, Apta (geomean)", 0.90),
    "R5.faas": ("get latency reduction vs baseline, RDMA+FaaS", 0.57),
    "R5.cxl": ("get latency reduction vs baseline, CXL uncached", 0.71),
    "R6": ("put latency reduction vs baseline, Apta (geomean)", 0.81),
    "R6.cxl": ("put latency reduction vs baseline, CXL uncached", 0.63),
    "R7.bw": ("Apta speedup over baseline at 200 Gbps (geomean)", 0.90),
    "R7.lat": ("Apta speedup over baseline at 600 ns (geomean)", 0.84),
    "R8": ("Apta speedup over baseline with weaker cores (geomean)", 0.78),
}
AGREE_PP = 5.0  # "agreement within a few percentage points"
DEPENDS_PP = 0.5  # a result "rests on" an open choice when it moves by at least this many percentage points over it
REDUCTIONS = ("R4", "R5", "R5.faas", "R5.cxl", "R6", "R6.cxl")  # stated as "x% lower"

# The sensitivity sections: the choices the paper leaves open, each choice with its source. Extra
# runs beside the frozen headline (sim/params.json is never re-fitted to them).
FAMILIES = {"rdma_link": "RDMA link", "weak_cpi": "weak-core CPI", "jitter": "jitter mode"}
JITTER_MODES = {  # mode -> the jitter runs' scenario-name prefix (sim/README.md "Links" defines the modes)
    "message": "jitter", "operation": "jitter-operation", "correlated": "jitter-correlated"}


def rdma_links(params) -> list:
    """The RDMA link (one-way latency, bandwidth per direction) under which the RDMA configurations
    are re-run: the headline's literal reading of §II-A first, then NICs with a cited source and the
    DM link as a bracket."""
    lk = params["links"]

    def link(id, label, latency_ns, bandwidth_gbps, source):
        return {"id": id, "headline": id == "literal", "label": label, "latency_ns": latency_ns,
                "bandwidth_gbps": bandwidth_gbps, "source": source}
    return [
        link("literal", "§II-A taken literally (the headline)",
             lk["rdma_latency_ns"]["value"], lk["rdma_bandwidth_gbps"]["value"],
             "sim/params.json links.rdma_*: " + lk["rdma_latency_ns"]["source"].split(". ")[0]),
        link("cx3-fdr", "the paper's NIC at its line rate (ConnectX-3 FDR), §II-A's latency", lk["rdma_latency_ns"]["value"], 56,
             "the paper, §II: 'one-sided RDMA verbs, which runs over an Infiniband network (Mellanox ConnectX-3 NIC on "
             "PCIe-gen3 x16)'; ConnectX-3 runs InfiniBand up to FDR (NVIDIA MLNX_OFED documentation Rev 4.9-2.2.6.0 LTS, "
             "Introduction: 'ConnectX-3/ConnectX-3 Pro, mlx4, InfiniBand: SDR, QDR, FDR10, FDR'), 56 Gb/s per FDR port "
             "(IBM POWER8 documentation, 'PCIe3 2-port 56 Gb FDR IB Adapter x16 (FC EC33)': 'Each port maximum of 56 Gb'). "
             "The paper states no latency for it, so §II-A's is kept: this row moves the bandwidth only"),
        link("cx4-edr", "a measured RDMA NIC: ConnectX-4 EDR, back to back", 830, 100,
             "D. Potter, master's thesis, RWTH Aachen University, 2018 (git.dennispotter.eu/Dennis/masters-thesis): "
             "tables/mtu_performance.tex, ib_send_lat (perftest, one-way = half the round trip), RC, 32 B, MTU 4096: "
             "0.83 us; tables/benchmark_testsystem.tex: 2x Mellanox ConnectX-4 MT27700, PCIe Gen 3 x16, 100 Gbit/s, "
             "0.5 m passive copper cable (no switch). Bandwidth: the 100 Gbit/s line rate, not a measured throughput"),
        link("rmmap-cx4", "RMMAP's RDMA (ConnectX-4, 100 Gbps, 'lower than 2 us')", 1000, 100,
             "papers/rmmap-serdes-free-state-transfer.txt §4.1: 'RDMA is a high speed (up to 400 Gbps [60]) and low "
             "latency (lower than 2 us) networking feature'; §5 testbed: 'two 100 Gbps ConnectX-4 MCX455A InfiniBand "
             "NICs'. Read as a round trip below 2 us: 1 us one-way, an upper bound"),
        link("dm", "bracket: the RDMA configurations on the DM link", lk["dm_latency_ns"]["value"], lk["dm_bandwidth_gbps"]["value"],
             "ours, not a NIC: Table II's DM link, the limit in which RDMA differs from DM only by its protocol; the "
             "paper's R1.net (+7% for the faster network) says its measured RDMA sits close to it"),
    ]


def rdma_link_configs(params) -> list:
    return [c for c in CONFIGS if params["configs"][c]["link"] == "rdma"]


def pval(params, sec, key):
    return params[sec][key]["value"]


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def log(msg):
    print(f"[eval {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- a stated result as the report and the plots print it ----------------------------------------
def pct(x, rid=None):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{-x * 100:+.0f}%" if rid in REDUCTIONS else f"{x * 100:+.0f}%"


def shown(x: float, rid: str) -> float:
    """A result in percent as the report prints it (reductions negative)."""
    return -x * 100 if rid in REDUCTIONS else x * 100
