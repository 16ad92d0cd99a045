"""`make bench` part for the simulator: trace events replayed per second on one core, and trace
loading from the text against the binary trace cache.

    python3 sim/bench.py [--size paper] [--out build/bench/sim.json] [--rounds 3] [--compare-sim OTHER]

For every workflow with traces under build/traces/<size>/ (else synthetic traces made by
python/apta/sim_synth.py under build/bench/sim-traces/), after making sure the binary trace caches
are current (`apta-sim --cache-traces`, as `make traces` does):

* load: the plan loaded from the text (`--trace-source text`: gunzip + parse) and from the binary
  cache (`--trace-source cache`), alternately `rounds` times each in this one run; the medians of
  this process's CPU time (and of wall time) and their ratio, text / cache;
* replay: the Apta configuration three times in one process, `rounds` processes; the replay rate
  (events through L1/L2/DRAM per CPU second of the replay loop: the figure the target of >= 5 M
  events/s refers to, as the median over the workflows), the end-to-end rate (all of a run: replay
  + the event-driven network/memory-server part, wall time), and the last `make eval` wall time.

With --compare-sim (e.g. a build of another commit) the other simulator's replay runs alternate
with this one's, so the speed-up is a ratio measured side by side (its traces loaded from the text).
The machine's load average is recorded: other jobs on the cores slow both sides alike.
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
from apta.sim import plan as planlib

APPS = planlib.workflow.names()   # every workflow file
REPLAY_RUNS = 3                   # Apta runs per process


def sim_run(sim: str, plan: str, scenarios: str, out: str, source: str | None) -> dict:
    cmd = ["nice", "-n", "10", sim, "--plan", plan, "--scenarios", scenarios, "--out", out, "--quiet"]
    if source:
        cmd += ["--trace-source", source]
    subprocess.run(cmd, check=True)
    return json.load(open(out))


def replay_row(doc: dict) -> dict:
    res = doc["results"]
    ev = res[0]["trace_events"]
    return {"replay_events_per_s": statistics.median(ev / y["replay_s"] for y in res),
            "replay_lines_per_s": statistics.median(y["line_accesses"] / y["replay_s"] for y in res),
            "run_events_per_s": statistics.median(ev / y["wall_s"] for y in res)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", default="paper")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "sim.json"))
    ap.add_argument("--sim", default=os.path.join(ROOT, "build", "simulator", "apta-sim"))
    ap.add_argument("--rounds", type=int, default=3, help="alternating text/cache loads and replay processes per workflow")
    ap.add_argument("--compare-sim", help="another apta-sim build whose replay runs alternate with this one's")
    a = ap.parse_args()
    traces = os.path.join(ROOT, "build", "traces", a.size)
    synthetic = not all(os.path.exists(os.path.join(traces, x, "index.json")) for x in APPS)
    if synthetic:
        from apta import sim_synth
        traces = os.path.join(ROOT, "build", "bench", "sim-traces", "tiny")
        for x in APPS:
            sim_synth.make_traces(os.path.join(planlib.workflow.WORKFLOW_DIR, f"{x}.json"),
                                  os.path.dirname(traces), "tiny", compute_events=20000)
    subprocess.run(["nice", "-n", "10", a.sim, "--cache-traces", traces], check=True, stdout=subprocess.DEVNULL)
    work = os.path.join(ROOT, "build", "bench", "sim-work")
    load_sc = os.path.join(work, "load.json")
    replay_sc = os.path.join(work, "replay.json")
    planlib.write_json_atomic(load_sc, {"scenarios": []})
    planlib.write_json_atomic(replay_sc, {"scenarios": [{"name": f"r{k}", "config": "apta"} for k in range(REPLAY_RUNS)]})
    rows = []
    for x in APPS:
        plan = planlib.build_plan(os.path.join(planlib.workflow.WORKFLOW_DIR, f"{x}.json"), os.path.join(traces, x))
        pp = os.path.join(work, f"{x}.plan.json")
        planlib.write_json_atomic(pp, plan)
        out = os.path.join(work, f"{x}.out.json")
        load = {"text": [], "cache": []}
        for _ in range(a.rounds):
            for src in ("text", "cache"):
                d = sim_run(a.sim, pp, load_sc, out, src)
                if (d["traces_from_cache"] > 0) != (src == "cache"):
                    raise SystemExit(f"sim/bench.py: {x}: --trace-source {src} loaded {d['traces_from_cache']} traces from the cache")
                load[src].append((d["trace_load_cpu_s"], d["trace_load_s"]))
        runs, other = [], []
        for _ in range(a.rounds):
            runs.append(sim_run(a.sim, pp, replay_sc, out, "cache"))
            if a.compare_sim:
                other.append(sim_run(a.compare_sim, pp, replay_sc, out + ".other", None))
        res = runs[0]["results"]
        med = {k: statistics.median(replay_row(r)[k] for r in runs) for k in replay_row(runs[0])}
        lt = {src: {"cpu_s": statistics.median(c for c, _ in v), "wall_s": statistics.median(w for _, w in v)} for src, v in load.items()}
        row = {"app": x, "trace_events": res[0]["trace_events"], "line_accesses": res[0]["line_accesses"],
               "l1_misses": res[0]["l1_misses"], **med,
               "load_text_cpu_s": lt["text"]["cpu_s"], "load_cache_cpu_s": lt["cache"]["cpu_s"],
               "load_text_wall_s": lt["text"]["wall_s"], "load_cache_wall_s": lt["cache"]["wall_s"],
               "load_ratio_cpu": lt["text"]["cpu_s"] / lt["cache"]["cpu_s"],
               "load_ratio_wall": lt["text"]["wall_s"] / lt["cache"]["wall_s"],
               "parse_events_per_s": runs[0]["trace_events"] / lt["text"]["cpu_s"],
               "cache_load_events_per_s": runs[0]["trace_events"] / lt["cache"]["cpu_s"]}
        if a.compare_sim:
            row["compare_replay_events_per_s"] = statistics.median(replay_row(r)["replay_events_per_s"] for r in other)
            row["replay_speedup"] = row["replay_events_per_s"] / row["compare_replay_events_per_s"]
        rows.append(row)
        print(f"{x:9s} {row['trace_events']:8d} events  replay {row['replay_events_per_s'] / 1e6:5.2f} M events/s "
              f"({row['replay_lines_per_s'] / 1e6:5.1f} M line accesses/s)  run {row['run_events_per_s'] / 1e6:5.2f} M/s  "
              f"load text {row['load_text_cpu_s'] * 1e3:7.1f} ms, cache {row['load_cache_cpu_s'] * 1e3:6.1f} ms "
              f"(x{row['load_ratio_cpu']:.0f} CPU, x{row['load_ratio_wall']:.0f} wall)"
              + (f"  vs --compare-sim {row['compare_replay_events_per_s'] / 1e6:5.2f} M/s (x{row['replay_speedup']:.2f})"
                 if a.compare_sim else ""))
    tot_ev = sum(r["trace_events"] for r in rows)
    med_replay = statistics.median(r["replay_events_per_s"] for r in rows)
    summary = {"traces": os.path.relpath(traces, ROOT), "synthetic": synthetic, "rounds": a.rounds,
               "replay_events_per_s_median": med_replay,
               "replay_events_per_s": tot_ev / sum(r["trace_events"] / r["replay_events_per_s"] for r in rows),
               "run_events_per_s": tot_ev / sum(r["trace_events"] / r["run_events_per_s"] for r in rows),
               "target_events_per_s": 5e6, "target_met": med_replay >= 5e6,
               "load_text_cpu_s": sum(r["load_text_cpu_s"] for r in rows),
               "load_cache_cpu_s": sum(r["load_cache_cpu_s"] for r in rows),
               "load_ratio_cpu": sum(r["load_text_cpu_s"] for r in rows) / sum(r["load_cache_cpu_s"] for r in rows),
               "load_ratio_wall": sum(r["load_text_wall_s"] for r in rows) / sum(r["load_cache_wall_s"] for r in rows),
               "load_ratio_cpu_median": statistics.median(r["load_ratio_cpu"] for r in rows),
               "load_ratio_target": 10, "parse_events_per_s": tot_ev / sum(r["load_text_cpu_s"] for r in rows),
               "cache_load_events_per_s": tot_ev / sum(r["load_cache_cpu_s"] for r in rows),
               "load_average": os.getloadavg(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if a.compare_sim:
        summary["compare_sim"] = a.compare_sim
        summary["compare_replay_events_per_s_median"] = statistics.median(r["compare_replay_events_per_s"] for r in rows)
        summary["replay_speedup_median"] = statistics.median(r["replay_speedup"] for r in rows)
    ev_path = os.path.join(ROOT, "build", "eval", "results.json")
    if os.path.exists(ev_path):
        summary["last_eval_wall_s"] = json.load(open(ev_path)).get("wall_s")
    planlib.write_json_atomic(a.out, {"summary": summary, "apps": rows})
    print(f"all: replay {med_replay / 1e6:.2f} M events/s median over the workflows (target 5: "
          f"{'met' if summary['target_met'] else 'NOT met'}; {summary['replay_events_per_s'] / 1e6:.2f} M/s over all events), "
          f"run {summary['run_events_per_s'] / 1e6:.2f} M/s; load text {summary['load_text_cpu_s']:.2f} s vs cache "
          f"{summary['load_cache_cpu_s']:.3f} s CPU (x{summary['load_ratio_cpu']:.0f}; wall x{summary['load_ratio_wall']:.0f})"
          + (f"; x{summary['replay_speedup_median']:.2f} the replay of {a.compare_sim}" if a.compare_sim else "")
          + f"; load average {summary['load_average'][0]:.1f} -> {os.path.relpath(a.out, ROOT)}")


if __name__ == "__main__":
    main()
