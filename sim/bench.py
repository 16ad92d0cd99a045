"""`make bench` part for the simulator: trace events replayed per second on one core.

    python3 sim/bench.py [--size paper] [--out build/bench/sim.json]

For every workflow with traces under build/traces/<size>/ (else synthetic traces made by
python/apta/sim_synth.py under build/bench/sim-traces/): the Apta configuration three times in one
process; reports the trace parse rate, the replay rate (events through L1/L2/DRAM per second of
replay loop, the figure the target of >= 5 M events/s refers to), the end-to-end rate (all of a
run: replay + the event-driven network/memory-server part), and the last `make eval` wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
import plan as planlib

APPS = planlib.workflow.names()   # every workflow file


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", default="paper")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "sim.json"))
    ap.add_argument("--sim", default=os.path.join(ROOT, "build", "simulator", "apta-sim"))
    a = ap.parse_args()
    traces = os.path.join(ROOT, "build", "traces", a.size)
    synthetic = not all(os.path.exists(os.path.join(traces, x, "index.json")) for x in APPS)
    if synthetic:
        from apta import sim_synth
        traces = os.path.join(ROOT, "build", "bench", "sim-traces", "tiny")
        for x in APPS:
            sim_synth.make_traces(os.path.join(planlib.workflow.WORKFLOW_DIR, f"{x}.json"),
                                  os.path.dirname(traces), "tiny", compute_events=20000)
    work = os.path.join(ROOT, "build", "bench", "sim-work")
    rows = []
    for x in APPS:
        plan = planlib.build_plan(os.path.join(planlib.workflow.WORKFLOW_DIR, f"{x}.json"), os.path.join(traces, x))
        pp = os.path.join(work, f"{x}.plan.json")
        planlib.write_json_atomic(pp, plan)
        sp = os.path.join(work, "scenarios.json")
        planlib.write_json_atomic(sp, {"scenarios": [{"name": f"r{k}", "config": "apta"} for k in range(3)]})
        out = os.path.join(work, f"{x}.out.json")
        subprocess.run(["nice", "-n", "10", a.sim, "--plan", pp, "--scenarios", sp, "--out", out, "--quiet"], check=True)
        r = json.load(open(out))
        res = r["results"]
        ev = res[0]["trace_events"]
        rows.append({"app": x, "trace_events": ev, "line_accesses": res[0]["line_accesses"],
                     "parse_events_per_s": r["trace_events"] / r["trace_load_s"],
                     "replay_events_per_s": statistics.median(ev / y["replay_s"] for y in res),
                     "replay_lines_per_s": statistics.median(y["line_accesses"] / y["replay_s"] for y in res),
                     "run_events_per_s": statistics.median(ev / y["wall_s"] for y in res)})
        print(f"{x:9s} {ev:8d} events  replay {rows[-1]['replay_events_per_s'] / 1e6:5.2f} M events/s "
              f"({rows[-1]['replay_lines_per_s'] / 1e6:5.1f} M line accesses/s)  run {rows[-1]['run_events_per_s'] / 1e6:5.2f} M/s  "
              f"parse {rows[-1]['parse_events_per_s'] / 1e6:5.2f} M/s")
    tot_ev = sum(r["trace_events"] for r in rows)
    summary = {"traces": os.path.relpath(traces, ROOT), "synthetic": synthetic,
               "replay_events_per_s": tot_ev / sum(r["trace_events"] / r["replay_events_per_s"] for r in rows),
               "run_events_per_s": tot_ev / sum(r["trace_events"] / r["run_events_per_s"] for r in rows),
               "parse_events_per_s": tot_ev / sum(r["trace_events"] / r["parse_events_per_s"] for r in rows),
               "target_events_per_s": 5e6, "load_average": os.getloadavg()[0], "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    ev_path = os.path.join(ROOT, "build", "eval", "results.json")
    if os.path.exists(ev_path):
        summary["last_eval_wall_s"] = json.load(open(ev_path)).get("wall_s")
    planlib.write_json_atomic(a.out, {"summary": summary, "apps": rows})
    print(f"all: replay {summary['replay_events_per_s'] / 1e6:.2f} M events/s (target 5), run {summary['run_events_per_s'] / 1e6:.2f} M/s, "
          f"parse {summary['parse_events_per_s'] / 1e6:.2f} M/s -> {os.path.relpath(a.out, ROOT)}")


if __name__ == "__main__":
    main()
