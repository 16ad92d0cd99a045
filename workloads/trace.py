#!/usr/bin/env python3
"""Trace every function instance of the FaaS workflows with the Valgrind tool apttrace (stdlib only).

    python3 workloads/trace.py all --size paper          # build/traces/paper/<app>/<function>.<i>/
    python3 workloads/trace.py phi video --size tiny
    python3 workloads/trace.py --workflow my.json --apps-dir my_apps --size tiny --out /tmp/traces

The format is workloads/TRACES.md. Per workflow this builds the tool (workloads/tracer/, skipped when
its source hash is unchanged) and the workloads, generates the inputs exactly as run.py does (it
uses run.py's functions) and runs every instance in the workflow file's order, each under
`setarch -R valgrind --tool=apttrace` (ASLR off, a fixed environment: deterministic traces).
An instance whose key (tool source hash, function binary, command line, the bytes of every object
and external input it reads) is unchanged is not traced again: it runs natively, only to produce
the objects the next instances read. Each instance is written into a temporary directory and
renamed into place with meta.json last, so nothing is half-written; index.json per app is written
after its last instance. At the end the statistics of every traced app of the size go to
build/traces/<size>/stats.json and stats.md (and are printed).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time

from apta import hostrun as runmod
from apta import workflow as wfmod

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRACER_DIR = os.path.join(HERE, "tracer")
TOOL_BUILD = os.path.join(ROOT, "build", "tracer")
TRACES = os.path.join(ROOT, "build", "traces")
TOOL_NAME = "apttrace"
TOOL_SOURCES = [os.path.join(TRACER_DIR, f) for f in ("apt_main.c", "gen_flops.py", "Makefile")] + \
               [os.path.join(HERE, "include", "apta_store.h")]
EVENTS_RAW = "sigil.events.out-1"
RUN_FD_NUM = 3
RUN_FD = f"/dev/fd/{RUN_FD_NUM}"  # the run directory, as the traced function sees it (tracer_command)
GZIP_LEVEL = 6  # level 9 is ~3x slower for a few percent on this text


class TraceError(RuntimeError):
    pass


def _sha(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_json(path: str, obj) -> None:
    """Write by rename, so a reader never sees half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)


def find_valgrind() -> str:
    vg = shutil.which("valgrind")
    if not vg:
        raise TraceError("valgrind is not installed: `make traces` installs it (tools/install-apt.sh valgrind gcc make "
                         "libc6-dev), or apt-get install valgrind")
    return vg


def valgrind_version(vg: str) -> str:
    return subprocess.run([vg, "--version"], capture_output=True, text=True).stdout.strip()


def build_tool(tool_dir: str = TOOL_BUILD) -> str:
    """Build apttrace into tool_dir unless its source hash is unchanged; returns that hash (part of
    every instance's cache key). The hash covers the sources, the store header (client request
    codes) and the Valgrind version the tool links against."""
    vg = find_valgrind()
    h = hashlib.sha256()
    for f in TOOL_SOURCES:
        h.update(os.path.basename(f).encode() + b"\0" + _sha(f).encode())
    h.update(valgrind_version(vg).encode())
    digest = h.hexdigest()[:16]
    stamp = os.path.join(tool_dir, ".source-hash")
    tool = os.path.join(tool_dir, f"{TOOL_NAME}-amd64-linux")
    if os.path.exists(tool) and os.path.exists(stamp) and open(stamp).read().strip() == digest:
        return digest
    if shutil.which(os.environ.get("CC", "cc")) is None or shutil.which("make") is None:
        raise TraceError("no C compiler or make on the PATH: `make traces` installs them (gcc make libc6-dev)")
    cmd = ["nice", "-n", "10", "make", "-s", "-B", "-C", TRACER_DIR, f"BUILD={os.path.abspath(tool_dir)}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise TraceError(f"building the tracer (workloads/tracer/) failed:\n{r.stdout}{r.stderr}")
    with open(stamp, "w") as fh:
        fh.write(digest + "\n")
    return digest


def tracer_command(out_dir: str, tool_dir: str = TOOL_BUILD, run_dir: str | None = None) -> tuple:
    """(prefix, env) to run a command under apttrace, writing into out_dir. ASLR off and a fixed,
    minimal environment: the client's stack and heap addresses, so the traces, depend only on the
    binary, its arguments and its input. With run_dir, the command runs in / with run_dir open as
    file descriptor 3, and every path (command, out_dir, tool_dir) may be given as RUN_FD/...: see
    relative_command."""
    setarch = shutil.which("setarch")
    if not setarch:
        raise TraceError("setarch (util-linux) is not on the PATH: it turns ASLR off for deterministic traces")
    prefix = [setarch, platform.machine(), "-R", find_valgrind(), "-q", f"--tool={TOOL_NAME}", f"--out-dir={out_dir}"]
    if run_dir is not None:
        # Valgrind puts PWD=<cwd> into the client's environment (overriding ours), so the cwd is
        # on the client's stack too: run in /, reach the run directory through the open fd 3.
        prefix = ["/bin/sh", "-c", f'exec {RUN_FD_NUM}<"$0" && exec "$@"', os.path.abspath(run_dir),
                  shutil.which("env") or "/usr/bin/env", "-C", "/"] + prefix
    # VALGRIND_LIB ends up in the client's environment (LD_PRELOAD=$VALGRIND_LIB/vgpreload_core...).
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C",
           "VALGRIND_LIB": tool_dir if run_dir is not None else os.path.abspath(tool_dir)}
    return prefix, env


def relative_command(cmd: list, run: dict, tool_dir: str, out_dir: str) -> tuple:
    """(cmd, tool_dir, out_dir) rewritten so that no path depends on where the checkout is (issue
    18), for tracer_command(..., run_dir=run["run_dir"]). The client's argv, environment and
    AT_EXECFN sit at the top of its stack: absolute paths of different lengths shift every stack
    address, and with them the alignment, so the instruction counts, of glibc's string and memory
    routines (fetchPortfolios, tiny: 3,955,526 vs 3,955,435 instructions traced from /tmp/x/apta
    and from a longer path). Symlinks in the run directory give the binaries, the tool and the
    output fixed names, all reached as /dev/fd/3/<name>."""
    run_dir = run["run_dir"]
    for name, target in (("bin", run["bindir"]), ("tool", tool_dir), ("out", out_dir)):
        link = os.path.join(run_dir, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(target), link)
    names = {os.path.abspath(d): f"{RUN_FD}/{k}" for k, d in run["dirs"].items()}
    rel = [f"{RUN_FD}/bin/" + os.path.relpath(os.path.abspath(cmd[0]), os.path.abspath(run["bindir"]))]
    rel += [names.get(os.path.abspath(a), a) if os.path.isabs(a) else a for a in cmd[1:]]
    return rel, f"{RUN_FD}/tool", f"{RUN_FD}/out"


def trace_command(cmd: list, out_dir: str, tool_dir: str = TOOL_BUILD) -> tuple:
    """Run any command under the tracer (e.g. a test program issuing the client requests itself).
    Returns (CompletedProcess, the tool's apttrace.json or None)."""
    os.makedirs(out_dir, exist_ok=True)
    prefix, env = tracer_command(out_dir, tool_dir)
    r = subprocess.run(prefix + cmd, capture_output=True, text=True, env=env)
    path = os.path.join(out_dir, "apttrace.json")
    tool = json.load(open(path)) if os.path.exists(path) else None
    return r, tool


def gzip_file(src: str, dst: str) -> None:
    """gzip with mtime 0 and no file name in the header: the same events give the same bytes."""
    with open(src, "rb") as fin, open(dst, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0) as gz:
            shutil.copyfileobj(fin, gz, 1 << 20)


def cache_key(tool_hash: str, cmd: list, inst: wfmod.Instance, run: dict) -> str:
    h = hashlib.sha256()
    h.update(f"tool {tool_hash}\n".encode())
    h.update(f"binary {_sha(cmd[0])}\n".encode())
    # the argv with the run's directories by name: the key (in meta.json) is the same from any checkout
    names = {os.path.abspath(d): k for k, d in run["dirs"].items()}
    argv = [os.path.basename(cmd[0])] + [names.get(os.path.abspath(a), a) if os.path.isabs(a) else a for a in cmd[1:]]
    h.update(("argv " + "\0".join(argv) + "\n").encode())
    for d, names in ((run["dirs"]["store"], inst.reads), (run["dirs"]["ext_in"], inst.inputs)):
        for n in names:
            p = os.path.join(d, n)
            h.update(f"{n} {_sha(p) if os.path.exists(p) else 'missing'}\n".encode())
    return h.hexdigest()[:24]


def _load_json(path: str):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError):
        return None


def trace_instance(wf: wfmod.Workflow, inst: wfmod.Instance, size: str, run: dict, cmd: list, final: str,
                   key: str, tool_dir: str) -> dict:
    """Trace one instance into final/ (via a temporary directory); returns its meta.json."""
    where = f"{wf.name}: {inst.function}[{inst.index}]"
    tmp = final + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        rcmd, rtool, rtmp = relative_command(cmd, run, tool_dir, tmp)
        prefix, env = tracer_command(rtmp, rtool, run_dir=run["run_dir"])
        t0 = time.perf_counter()
        try:
            rec = runmod.run_instance(wf, inst, rcmd, prefix=prefix, env=env)
        except runmod.RunError as e:
            raise TraceError(f"{e}\n  (under the tracer; function source {inst.source}.c of {wf.path})") from None
        trace_s = time.perf_counter() - t0
        tool = _load_json(os.path.join(tmp, "apttrace.json"))
        if tool is None:
            raise TraceError(f"{where}: the tracer wrote no {tmp}/apttrace.json")
        if not tool["complete"]:
            raise TraceError(f"{where}: incomplete trace: no '& END' marker or phases out of order "
                             f"(phases {[p['phase'] for p in tool['phases']]}); is {cmd[0]} linked with the store library?")
        st = tool["stats"]
        for k in ("get_bytes", "put_bytes"):
            if st[k] != rec[k]:
                raise TraceError(f"{where}: the tracer saw {k} = {st[k]} but the function reports {rec[k]}")
        t1 = time.perf_counter()
        gzip_file(os.path.join(tmp, EVENTS_RAW), os.path.join(tmp, EVENTS_RAW + ".gz"))
        gz_s = time.perf_counter() - t1
        os.remove(os.path.join(tmp, EVENTS_RAW))
        os.remove(os.path.join(tmp, "apttrace.json"))
        meta = {"app": wf.name, "size": size, "function": inst.function, "label": inst.label, "instance": inst.index,
                "server": inst.server, "phases": tool["phases"], "objects": tool["objects"],
                "stats": {**st, "event_file_bytes": tool["event_file_bytes"],
                          "trace_bytes": os.path.getsize(os.path.join(tmp, EVENTS_RAW + ".gz"))},
                "cache_key": key}
        # timings are not deterministic: kept out of meta.json
        _write_json(os.path.join(tmp, "run.json"), {"trace_s": trace_s, "gzip_s": gz_s, "native_report": rec,
                                                     "command": cmd})
        _write_json(os.path.join(tmp, "meta.json"), meta)  # last: it marks the directory complete
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        return meta
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def trace_workflow(wf: wfmod.Workflow, size: str, out_root: str = TRACES, build_dir: str = runmod.BUILD,
                   tool_dir: str = TOOL_BUILD, tool_hash: str | None = None, force: bool = False,
                   progress=print, counter: list | None = None) -> dict:
    """Trace every instance of wf (or reuse its cached trace); returns the app's index.json."""
    tool_hash = tool_hash or build_tool(tool_dir)
    app_dir = os.path.join(out_root, size, wf.name)
    os.makedirs(app_dir, exist_ok=True)
    index_path = os.path.join(app_dir, "index.json")
    if os.path.exists(index_path):
        os.remove(index_path)  # rewritten after the last instance: no index while the app is incomplete
    # a fixed run directory per (size, app): the paths in argv are on the client's stack
    run = runmod.prepare_run(wf, size, build_dir, os.path.join(out_root, size, ".run", wf.name))
    instances = wf.instances()
    counter = counter if counter is not None else [0, len(instances)]
    entries = []
    for inst in instances:
        counter[0] += 1
        name = f"{inst.function}.{inst.index}"
        final = os.path.join(app_dir, name)
        cmd = runmod.instance_command(wf, inst, size, run)
        key = cache_key(tool_hash, cmd, inst, run)
        meta = _load_json(os.path.join(final, "meta.json"))
        tag = f"[{counter[0]}/{counter[1]}] {size} {wf.name} {name} ({inst.server})"
        if meta and meta.get("cache_key") == key and not force and os.path.exists(os.path.join(final, EVENTS_RAW + ".gz")):
            runmod.run_instance(wf, inst, cmd)  # natively: the next instances read its objects
            how = "cached"
        else:
            meta = trace_instance(wf, inst, size, run, cmd, final, key, tool_dir)
            how = f"traced in {_load_json(os.path.join(final, 'run.json'))['trace_s']:.1f} s"
        st = meta["stats"]
        progress(f"{tag}: {how}: {st['instructions']:,} instructions, {st['events']:,} events, "
                 f"{st['trace_bytes'] / 1024:.0f} KB")
        entries.append({"function": inst.function, "instance": inst.index, "server": inst.server, "dir": name})
    index = {"app": wf.name, "size": size, "instances": entries}
    _write_json(index_path, index)
    shutil.rmtree(run["run_dir"], ignore_errors=True)
    return index


# --- statistics --------------------------------------------------------------------------------
STAT_COLS = ("instructions", "iops", "flops", "reads", "writes", "get_bytes", "put_bytes", "events", "trace_bytes")


def collect_stats(size: str, out_root: str = TRACES) -> dict:
    """The statistics of every complete app (index.json present) under out_root/size."""
    base = os.path.join(out_root, size)
    apps = {}
    for app in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        index = _load_json(os.path.join(base, app, "index.json"))
        if not index:
            continue
        rows = []
        for e in index["instances"]:
            d = os.path.join(base, app, e["dir"])
            meta = _load_json(os.path.join(d, "meta.json"))
            runinfo = _load_json(os.path.join(d, "run.json")) or {}
            row = {"function": e["function"], "label": meta.get("label", e["function"]), "instance": e["instance"],
                   "server": e["server"], "trace_s": round(runinfo.get("trace_s", 0.0), 3)}
            row.update({k: meta["stats"][k] for k in STAT_COLS})
            rows.append(row)
        total = {k: sum(r[k] for r in rows) for k in STAT_COLS + ("trace_s",)}
        total["trace_s"] = round(total["trace_s"], 3)
        apps[app] = {"instances": rows, "total": total}
    return {"size": size, "apps": apps,
            "total": {k: round(sum(a["total"][k] for a in apps.values()), 3) for k in STAT_COLS + ("trace_s",)}}


def _human(n: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f}{unit}"
    return str(int(n))


def stats_markdown(stats: dict) -> str:
    head = ("| app | function | srv | instructions | iops | flops | reads | writes | get B | put B | events | "
            "instr/event | trace KB | trace s |")
    out = [f"Trace statistics, size `{stats['size']}` (workloads/trace.py; counts as in workloads/TRACES.md)", "",
           head, "|" + "---|" * (head.count("|") - 1)]

    def line(app, fn, srv, r):
        ipe = r["instructions"] / r["events"] if r["events"] else 0
        return (f"| {app} | {fn} | {srv} | {_human(r['instructions'])} | {_human(r['iops'])} | {_human(r['flops'])} | "
                f"{_human(r['reads'])} | {_human(r['writes'])} | {r['get_bytes']} | {r['put_bytes']} | {r['events']} | "
                f"{ipe:.0f} | {r['trace_bytes'] / 1024:.0f} | {r['trace_s']:.1f} |")
    for app, a in stats["apps"].items():
        multi = {r["function"] for r in a["instances"] if r["instance"] > 0}
        for r in a["instances"]:
            fn = r["label"] + (f"[{r['instance']}]" if r["function"] in multi else "")
            out.append(line(app, fn, r["server"], r))
        out.append(line(f"**{app}**", "**total**", "", a["total"]))
    if stats["apps"]:
        out.append(line("**all**", "", "", stats["total"]))
    return "\n".join(out) + "\n"


def write_stats(size: str, out_root: str = TRACES) -> dict:
    stats = collect_stats(size, out_root)
    base = os.path.join(out_root, size)
    os.makedirs(base, exist_ok=True)
    _write_json(os.path.join(base, "stats.json"), stats)
    md = stats_markdown(stats)
    with open(os.path.join(base, "stats.md.tmp"), "w") as fh:
        fh.write(md)
    os.replace(os.path.join(base, "stats.md.tmp"), os.path.join(base, "stats.md"))
    return stats


# --- command line ------------------------------------------------------------------------------
def load_workflows(names: list, files: list, apps_dir: str) -> list:
    if files:
        for f in files:
            if not os.path.isfile(f):
                raise TraceError(f"no workflow file {f}")
        return [wfmod.load(f, apps_dir=apps_dir) for f in files]
    known = sorted(f[:-5] for f in os.listdir(wfmod.WORKFLOW_DIR) if f.endswith(".json"))
    if names in ([], ["all"]):
        names = known
    out = []
    for n in names:
        path = os.path.join(wfmod.WORKFLOW_DIR, n + ".json")
        if not os.path.isfile(path):
            raise TraceError(f"unknown app {n!r}: no workflow file {path} (known: {', '.join(known)})")
        out.append(wfmod.load(path, apps_dir=apps_dir))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workflows", nargs="*", default=["all"], help="app names (workloads/workflows/<app>.json) or 'all'")
    ap.add_argument("--size", choices=wfmod.SIZES, default="paper")
    ap.add_argument("--workflow", action="append", default=[], help="a workflow file (instead of app names)")
    ap.add_argument("--apps-dir", default=wfmod.APPS_DIR, help="function sources of --workflow files")
    ap.add_argument("--out", default=TRACES, help="traces root (default build/traces)")
    ap.add_argument("--build-dir", default=runmod.BUILD, help="workloads build directory")
    ap.add_argument("--tool-dir", default=TOOL_BUILD)
    ap.add_argument("--force", action="store_true", help="trace again even if cached")
    ap.add_argument("--no-build", action="store_true", help="do not build the workloads")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        wfs = load_workflows(args.workflows, args.workflow, args.apps_dir)
        tool_hash = build_tool(args.tool_dir)
        if not args.no_build:
            runmod.build(args.build_dir, apps_dir=args.apps_dir)
        counter = [0, sum(len(wf.instances()) for wf in wfs)]
        for wf in wfs:
            trace_workflow(wf, args.size, args.out, args.build_dir, args.tool_dir, tool_hash, args.force,
                           progress=lambda s: print(s, flush=True), counter=counter)
        stats = write_stats(args.size, args.out)
    except (TraceError, runmod.RunError, wfmod.WorkflowError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print()
    print(stats_markdown(stats))
    print(f"traces in {os.path.join(args.out, args.size)} ({time.perf_counter() - t0:.1f} s); "
          f"statistics in stats.json and stats.md there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
