# The gem5 config of one apta run (sim/gem5/README.md). Started by sim/gem5/eval.py and the
# tests as
#   gem5.opt -d OUTDIR sim/gem5/configs/run_apta.py --plan PLAN --scenario JSON --out RESULT.json
#   gem5.opt -d OUTDIR sim/gem5/configs/run_apta.py --vectors build/vectors/X.jsonl [--mutant M] --out R.json
# with APTA_PYTHON naming the venv's Python. Every value comes from
# sim/params.json through apta.gem5.model.system_spec; the configuration (one of the seven of §IV-A)
# is the scenario's, chosen at run time.
#
# Per compute server c<k>: AptaCore -> L1 (Cache) -> L2XBar -> L2 (Cache) -> SystemXBar ->
# MemCtrl(DDR4-2400 8x8) for its local memory, and the core's fill port through a one-line-per-MSHR
# write buffer (a Cache, as gem5's IOCache) into the L2XBar: fetched objects land in the LLC.
# The SystemXBar routes the CXL window (the memory server's memory) to the server's AptaCxlLink,
# whose device side enters the memory server through a Bridge (its lookup latency) into the
# memory server's crossbar; the memory server's BISnp port for the server enters the link's
# snoop side, which sends the snoops into the SystemXBar (the point of coherence, which snoops
# the L2 and L1). The memory server: AptaMemServer and the links -> NoncoherentXBar ->
# MemCtrl(DDR4-2400 8x8). The protocol engine, the scheduler and the messages of the object
# protocols are sim/src/system.cpp inside AptaWorkflow.
import argparse
import json
import sys

import m5
from m5.objects import (
    AddrRange,
    AptaCore,
    AptaCxlLink,
    AptaMemServer,
    AptaWorkflow,
    Bridge,
    Cache,
    L2XBar,
    MemCtrl,
    NoncoherentXBar,
    Root,
    SrcClockDomain,
    System,
    SystemXBar,
    VoltageDomain,
)
import m5.objects

import os
import subprocess

# gem5's embedded Python is not the venv's and cannot import the apta package (its subpackages
# live in their components' folders, mapped by the editable install): the system spec comes from
# the venv's Python, `python -m apta.gem5.model spec` (APTA_PYTHON, set by sim/gem5/eval.py's gem5_env
# and tests/test_gem5.py; default .venv/bin/python of the working directory).
PYTHON = os.environ.get("APTA_PYTHON", os.path.join(".venv", "bin", "python"))

ap = argparse.ArgumentParser(description="one apta workflow run (or a vector replay) in gem5")
ap.add_argument("--plan", help="plan JSON (sim/plan.py)")
ap.add_argument("--scenario", help="one scenario as JSON text (sim/README.md)")
ap.add_argument("--params", default=None, help="sim/params.json (default: the checkout's)")
ap.add_argument("--vectors", action="append", default=[], help="replay these model vectors through the engine")
ap.add_argument("--mutant", default="", help="a mutant of the engine (vector replay), or of the extension "
                                             "(a workflow run: drop_bisnp)")
ap.add_argument("--link", choices=("packet", "analytical"), default="packet",
                help="the CXL configurations' traffic as packets through the links (the model), or apta-sim's "
                     "analytical link with bulk object copies (what the packets cost: make bench-gem5)")
ap.add_argument("--flush-window", type=int, default=1,
                help="the invalidation handler's clean-invalidates in flight (0: all at once, which stalls "
                     "gem5's caches on dirty lines; tests/test_gem5.py shows it)")
ap.add_argument("--out", required=True, help="result JSON")
args = ap.parse_args()


def fail(msg: str) -> None:
    print(f"apta gem5 config: error: {msg}", file=sys.stderr)
    sys.exit(2)


if not args.vectors and not (args.plan and args.scenario):
    fail("give --plan and --scenario, or --vectors")
if args.mutant and not args.vectors and args.mutant != "drop_bisnp":
    fail(f"--mutant {args.mutant!r}: a workflow run knows drop_bisnp only")
scenario = {}
if args.scenario:
    try:
        scenario = json.loads(args.scenario)
    except json.JSONDecodeError as e:
        fail(f"--scenario: not JSON ({e})")
    if not isinstance(scenario, dict):
        fail("--scenario: a JSON object")
got = None
try:
    got = subprocess.run([PYTHON, "-m", "apta.gem5.model", "spec", *(["--params", args.params] if args.params else []),
                          "--scenario", json.dumps(scenario) if scenario else ""],
                         capture_output=True, text=True, check=False)
    res = json.loads(got.stdout)
except (OSError, json.JSONDecodeError) as e:
    fail(f"{PYTHON} -m apta.gem5.model: {e} {got.stderr[-500:] if got else ''}")
if "error" in res:
    fail(res["error"])
spec, horizon, params_file = res["spec"], res["horizon"], res["params"]  # the file the spec was read from


def cache(c: dict) -> Cache:
    return Cache(size=c["size"], assoc=c["assoc"], tag_latency=c["latency"], data_latency=c["latency"],
                 response_latency=c["latency"], mshrs=c["mshrs"], tgts_per_mshr=16, write_buffers=c["mshrs"])


def dram(lo: int, hi: int, keep_data: bool = False) -> MemCtrl:
    d = getattr(m5.objects, spec["dram"])(range=AddrRange(start=lo, size=hi - lo), null=not keep_data)
    half = f"{spec['dram_ctrl_ns'] / 2}ns"
    d.tCCD_L = f"{spec['dram_tccd_l_ns']}ns"  # one definition with apta-sim's line stream
    return MemCtrl(dram=d, static_frontend_latency=half, static_backend_latency=half)


system = System(mem_mode="timing")
system.clk_domain = SrcClockDomain(clock=spec["cpu_clock"], voltage_domain=VoltageDomain())
system.cache_line_size = spec["line_bytes"]
ranges = spec["local_ranges"] + [spec["ms_range"]]
system.mem_ranges = [AddrRange(start=lo, size=hi - lo) for lo, hi in ranges]

cores = []
for s in range(spec["servers"]):
    lo, hi = spec["local_ranges"][s]
    core = AptaCore(cpi=spec["cpi"], mshrs=spec["mshrs"], line_bytes=spec["line_bytes"], mem_range=AddrRange(start=lo, size=hi - lo),
                    flush_window=args.flush_window)
    core.l1 = cache(spec["l1"])
    core.l2bus = L2XBar(width=spec["l2_bus_bytes"])
    core.l2 = cache(spec["l2"])
    core.membus = SystemXBar()
    core.mem = dram(lo, hi)
    core.port = core.l1.cpu_side
    core.l1.mem_side = core.l2bus.cpu_side_ports
    core.fill = cache(spec["fill"])
    core.fill_port = core.fill.cpu_side
    core.fill.mem_side = core.l2bus.cpu_side_ports
    core.l2bus.mem_side_ports = core.l2.cpu_side
    core.l2.mem_side = core.membus.cpu_side_ports
    core.membus.mem_side_ports = core.mem.port
    setattr(system, f"c{s + 1}", core)
    cores.append(core)
system.system_port = cores[0].membus.cpu_side_ports

lo, hi = spec["ms_range"]
ms_clock = SrcClockDomain(clock=spec["ms_clock"], voltage_domain=VoltageDomain())
system.ms = AptaMemServer(max_outstanding=spec["ms_outstanding"], line_bytes=spec["line_bytes"],
                          mem_range=AddrRange(start=lo, size=hi - lo), clk_domain=ms_clock,
                          mutant="" if args.vectors else args.mutant)
# the memory server's DRAM keeps data: reads of the CXL window return what was written (the
# stale-data check, apta_core.hh)
system.ms_mem = dram(lo, hi, keep_data=True)
# the memory server's fabric: a line per cycle, no latency of its own (the lookups are the bridges')
system.ms_bus = NoncoherentXBar(width=spec["line_bytes"], frontend_latency=0, forward_latency=0,
                                response_latency=0, clk_domain=ms_clock)
system.ms.port = system.ms_bus.cpu_side_ports
system.ms_bus.mem_side_ports = system.ms_mem.port

cxl = spec["cxl"]
for s, core in enumerate(cores):
    n = cxl["credits"]
    core.cxl = AptaCxlLink(ranges=[AddrRange(start=lo, size=hi - lo)], flit_bytes=cxl["flit_bytes"],
                           line_bytes=spec["line_bytes"], gbps=cxl["gbps"], latency=f"{cxl['latency_ns']}ns",
                           jitter_cv=cxl["jitter_cv"], seed=cxl["seed"] * 1000003 + s,
                           req_credits=n, rwd_credits=n, birsp_credits=n, ndr_credits=n, drs_credits=n,
                           bisnp_credits=n, queue_entries=n,
                           # the requests a server can have waiting for a response: its L2's MSHRs
                           # (the credits bound what is on the wire, not what is outstanding)
                           response_entries=spec["mshrs"])
    core.membus.mem_side_ports = core.cxl.host_side
    core.cxl_dev = Bridge(delay=f"{cxl['device_ns']}ns", ranges=[AddrRange(start=lo, size=hi - lo)],
                          req_size=n, resp_size=n, clk_domain=ms_clock)
    core.cxl.dev_side = core.cxl_dev.cpu_side_port
    core.cxl_dev.mem_side_port = system.ms_bus.cpu_side_ports
    system.ms.bisnp_ports = core.cxl.bisnp_dev_side
    core.cxl.bisnp_host_side = core.membus.cpu_side_ports

if not args.vectors:
    system.workflow = AptaWorkflow(plan=args.plan, scenario=json.dumps(scenario), params_file=params_file,
                                   cores=cores, mem_server=system.ms, links=[c.cxl for c in cores],
                                   packet_link=args.link == "packet")

root = Root(full_system=False, system=system)
m5.instantiate()

if args.vectors:
    reports = [json.loads(system.ms.getCCObject().replayVectors(v, args.mutant)) for v in args.vectors]
    for r in reports:
        print(f"vectors {r['vectors']}: " + (f"error {r['error']}" if "error" in r else
              f"{r['scenarios']} scenarios, {r['steps']} steps, {r['failed']} failed"), file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump({"simulator": "gem5", "mutant": args.mutant or "none", "reports": reports}, f)
    bad = any("error" in r or r["failed"] for r in reports)
    sys.exit(1 if bad else 0)

ev = m5.simulate(horizon)
cause = ev.getCause()
print(f"apta gem5: {cause} at {m5.curTick() / 1e3:.1f} ns", file=sys.stderr)
m5.stats.dump()
done = system.workflow.getCCObject().writeResult(args.out)
sys.exit(0)
