"""Host runner of the FaaS workflows: build, generate inputs, run a workflow in DAG order on the host
object store (a directory of files), print per-function times and object bytes.

    .venv/bin/python workloads/run.py phi --size tiny      (the CLI; this module is apta.hostrun)
    .venv/bin/python workloads/run.py all --size paper --repeat 3 --json build/workloads/paper.json
    .venv/bin/python workloads/run.py all --size tiny --check-deterministic

Each run uses build/workloads/runs/<app>-<size>/{store,ext_in,ext_out}/, recreated from scratch:
the generator writes the workflow inputs into store/ and the external inputs into ext_in/, then
every function instance runs as its own process (build/workloads/bin/<app>/<source>) in the order
of the workflow file, with the objects the file declares for it. Functions run one at a time (the
schedule's servers are recorded, not emulated). The digest of a run is the SHA-256 of every object
in store/ and every external output in ext_out/ after the last function.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

from . import workflow as wfmod
from .paths import ROOT as _ROOT

ROOT = str(_ROOT)
HERE = os.path.join(ROOT, "workloads")
BUILD = os.path.join(ROOT, "build", "workloads")


class RunError(RuntimeError):
    pass


def build(build_dir: str = BUILD, quiet: bool = True, apps_dir: str = wfmod.APPS_DIR) -> None:
    """Compile every function and generator of apps_dir (workloads/Makefile), under nice."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None or shutil.which("make") is None:
        raise RunError(f"no C compiler ({cc}) or make on the PATH: run `make workloads` (installs gcc and make) "
                       "or install them (Debian: apt-get install gcc make libc6-dev)")
    cmd = ["nice", "-n", "10", "make", "-C", HERE, f"BUILD={build_dir}", f"APPDIR={apps_dir}", "-j2"] + (["-s"] if quiet else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RunError(f"building the workloads failed:\n{r.stdout}{r.stderr}")


def _digest_dir(d: str) -> dict:
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as fh:
            data = fh.read()
        out[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return out


def prepare_run(wf: wfmod.Workflow, size: str = "tiny", build_dir: str = BUILD, run_dir: str | None = None) -> dict:
    """Recreate the run directory and generate the workflow's inputs into it. Returns the
    directories (store, ext_in, ext_out), the binaries' directory, the generator time and the input
    sizes. Shared by run_workflow and the tracer (workloads/trace.py)."""
    if size not in wf.sizes:
        raise RunError(f"{wf.path}: no size {size!r} (sizes: {', '.join(wf.sizes)})")
    spec = wf.sizes[size]
    run_dir = run_dir or os.path.join(build_dir, "runs", f"{wf.name}-{size}")
    shutil.rmtree(run_dir, ignore_errors=True)
    dirs = {k: os.path.join(run_dir, k) for k in ("store", "ext_in", "ext_out")}
    for d in dirs.values():
        os.makedirs(d)
    bindir = os.path.join(build_dir, "bin", wf.app)

    gen = [os.path.join(bindir, "gen"), dirs["store"], dirs["ext_in"]] + [f"{k}={v}" for k, v in spec["gen"].items()]
    t0 = time.perf_counter()
    r = subprocess.run(gen, capture_output=True, text=True)
    if r.returncode != 0:
        raise RunError(f"{wf.name}: generator failed: {r.stderr.strip()}")
    gen_s = time.perf_counter() - t0
    missing = [o for o in wf.inputs if not os.path.exists(os.path.join(dirs["store"], o))]
    if missing:
        raise RunError(f"{wf.name}: the generator did not write the inputs {missing}")
    inputs = {o: os.path.getsize(os.path.join(dirs["store"], o)) for o in wf.inputs}
    ext_inputs = {o: os.path.getsize(os.path.join(dirs["ext_in"], o)) for o in wf.external_inputs}
    return {"run_dir": run_dir, "dirs": dirs, "bindir": bindir, "generate_s": gen_s, "inputs": inputs,
            "external_inputs": ext_inputs}


def instance_command(wf: wfmod.Workflow, inst: wfmod.Instance, size: str, run: dict) -> list:
    """The command line of one function instance (run: from prepare_run)."""
    params = {**wf.params, **wf.sizes[size].get("params", {}), **inst.params}
    dirs = run["dirs"]
    cmd = [os.path.join(run["bindir"], inst.source), "--function", inst.label, "--store", dirs["store"], "--ext-in", dirs["ext_in"],
           "--ext-out", dirs["ext_out"], "--instance", str(inst.index), "--instances", str(inst.count)]
    for flag, names in (("--get", inst.reads), ("--put", inst.writes), ("--input", inst.inputs), ("--emit", inst.emits)):
        for n in names:
            cmd += [flag, n]
    for k, v in params.items():
        cmd += ["--param", f"{k}={v}"]
    return cmd


def run_instance(wf: wfmod.Workflow, inst: wfmod.Instance, cmd: list, prefix: list = (), env: dict | None = None) -> dict:
    """Run one instance (cmd from instance_command, optionally under a prefix such as a tracer) and
    return its JSON report plus the schedule fields and the wall time."""
    t0 = time.perf_counter()
    r = subprocess.run(list(prefix) + cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RunError(f"{wf.name}: {inst.function}[{inst.index}] on {inst.server} failed (exit {r.returncode}): "
                       f"{r.stderr.strip()}")
    try:
        rec = json.loads(r.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        raise RunError(f"{wf.name}: {inst.function}[{inst.index}] printed no report: {r.stdout!r}") from None
    rec.update(function=inst.function, label=inst.label, server=inst.server, wall_s=wall,
               reads=inst.reads, writes=inst.writes)
    return rec


def run_workflow(wf: wfmod.Workflow, size: str = "tiny", build_dir: str = BUILD, run_dir: str | None = None) -> dict:
    """Generate the inputs and run every instance; returns a result dict (see main)."""
    run = prepare_run(wf, size, build_dir, run_dir)
    records = [run_instance(wf, inst, instance_command(wf, inst, size, run)) for inst in wf.instances()]
    dirs = run["dirs"]
    return {
        "workflow": wf.name, "title": wf.title, "size": size, "generate_s": run["generate_s"],
        "inputs": run["inputs"], "external_inputs": run["external_inputs"],
        "functions": records,
        "objects": _digest_dir(dirs["store"]), "external_outputs": _digest_dir(dirs["ext_out"]),
        "table_iv": wfmod.table_iv(wf), "run_dir": run["run_dir"],
    }


def fingerprint(result: dict) -> dict:
    return {"objects": result["objects"], "external_outputs": result["external_outputs"]}


def _kb(n: int) -> str:
    return f"{n / 1024:.1f}K" if n < 1 << 20 else f"{n / (1 << 20):.2f}M"


def print_result(res: dict, out=sys.stdout) -> None:
    ins = ", ".join(f"{k} {_kb(v)}" for k, v in {**res["inputs"], **res["external_inputs"]}.items())
    print(f"\n{res['title']} ({res['workflow']}, size {res['size']}): inputs {ins}", file=out)
    print(f"  {'function':<20}{'srv':<4}{'get B':>10}{'put B':>10}{'get ms':>9}{'comp ms':>10}{'put ms':>9}{'wall ms':>9}{'rss MB':>8}",
          file=out)
    for r in res["functions"]:
        name = r["label"] + (f"[{r['instance']}]" if any(x["function"] == r["function"] and x is not r for x in res["functions"]) else "")
        print(f"  {name:<20}{r['server']:<4}{r['get_bytes']:>10}{r['put_bytes']:>10}{1e3 * r['get_s']:>9.2f}"
              f"{1e3 * r['compute_s']:>10.2f}{1e3 * r['put_s']:>9.2f}{1e3 * r['wall_s']:>9.1f}{r['maxrss_kb'] / 1024:>8.1f}", file=out)
    t = res["table_iv"]
    tot = sum(r["get_s"] + r["compute_s"] + r["put_s"] for r in res["functions"])
    print(f"  total in functions {1e3 * tot:.1f} ms; gets {t['gets']}, puts {t['puts']} (cache model, workflow.table_iv)", file=out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workflows", nargs="*", default=["all"], help="workflow names (files in workloads/workflows) or 'all'")
    ap.add_argument("--size", choices=wfmod.SIZES, default="tiny")
    ap.add_argument("--repeat", type=int, default=1, help="run each workflow N times (timings: the median run)")
    ap.add_argument("--check-deterministic", action="store_true", help="run twice and compare every output byte")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args(argv)
    names = args.workflows
    if names == ["all"]:
        names = [f[:-5] for f in sorted(os.listdir(wfmod.WORKFLOW_DIR)) if f.endswith(".json")]
    try:
        wfs = [wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, n + ".json")) for n in names]
        if not args.no_build:
            build()
        results = []
        for wf in wfs:
            runs = [run_workflow(wf, args.size) for _ in range(max(1, args.repeat))]
            if args.check_deterministic or args.repeat > 1:
                again = runs[1] if len(runs) > 1 else run_workflow(wf, args.size)
                if fingerprint(again) != fingerprint(runs[0]):
                    diff = [k for k in set(again["objects"]) | set(runs[0]["objects"])
                            if again["objects"].get(k) != runs[0]["objects"].get(k)]
                    raise RunError(f"{wf.name}: outputs differ between two runs: {sorted(diff)}")
            runs.sort(key=lambda r: sum(f["wall_s"] for f in r["functions"]))
            res = runs[len(runs) // 2]
            res["deterministic"] = bool(args.check_deterministic or args.repeat > 1)
            print_result(res)
            results.append(res)
    except (RunError, wfmod.WorkflowError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
