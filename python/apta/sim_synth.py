"""Synthetic traces in the format of workloads/TRACES.md, for the simulator's tests and benchmark
(the real ones come from the Valgrind tracer, `make traces`). Deterministic: every instance gets
its objects at fixed addresses, a GET phase that reads every line of each object it gets, a
COMPUTE phase of `compute_events` events over a local working set and the objects, and a PUT
phase that writes every line of each object it puts.
"""
from __future__ import annotations

import gzip
import json
import os

from . import workflow

LINE = 64


def _ranges(start: int, nbytes: int, per_event: int = 16):
    """Line-aligned inclusive ranges of at most per_event lines covering [start, start+nbytes)."""
    lines = max(1, (nbytes + LINE - 1) // LINE)
    for k in range(0, lines, per_event):
        n = min(per_event, lines - k)
        s = start + k * LINE
        yield s, s + n * LINE - 1, n


def write_instance(d: str, app: str, size: str, inst, sizes: dict, compute_events: int, ops: int = 400) -> None:
    os.makedirs(d, exist_ok=True)
    objects, lines_out = [], []
    addr = 0x10000000
    for kind, names in (("get", inst.reads), ("put", inst.writes)):
        for n in names:
            objects.append({"kind": kind, "name": n, "addr": hex(addr), "len": sizes.get(n, 4096)})
            addr += 0x01000000
    gets = [o for o in objects if o["kind"] == "get"]
    puts = [o for o in objects if o["kind"] == "put"]
    local = 0x40000000
    phases = []

    def phase(name):
        phases.append({"phase": name, "first_event": len([x for x in lines_out if x.startswith("@")]) + 1})
        lines_out.append(f"& {name}")

    lines_out.append("@ 10,0,2,1 * 0x7000 0x703f $ 0x7040 0x707f")  # start-up: dropped
    if gets:
        phase("GET")
        for o in gets:
            for s, e, n in _ranges(int(o["addr"], 16), o["len"]):
                lines_out.append(f"@ {n},0,{n},0 * {s:#x} {e:#x}")
    phase("COMPUTE")
    for k in range(compute_events):
        ls = local + (k % 64) * 16 * LINE
        rd = f"* {ls:#x} {ls + 16 * LINE - 1:#x}"
        if gets:
            o = gets[k % len(gets)]
            off = (k * 8 * LINE) % max(LINE, o["len"] - 8 * LINE)
            base = int(o["addr"], 16) + off // LINE * LINE
            rd += f" {base:#x} {base + 8 * LINE - 1:#x}"
        lines_out.append(f"@ {ops},{ops // 4},24,8 $ {ls:#x} {ls + 8 * LINE - 1:#x} {rd}")
    if puts:
        phase("PUT")
        for o in puts:
            for s, e, n in _ranges(int(o["addr"], 16), o["len"]):
                lines_out.append(f"@ {n},0,0,{n} $ {s:#x} {e:#x}")
    lines_out.append("& END")
    with gzip.GzipFile(os.path.join(d, "sigil.events.out-1.gz"), "wb", mtime=0) as fh:
        fh.write(("\n".join(lines_out) + "\n").encode())
    open(os.path.join(d, "sigil.pthread.out"), "w").close()
    meta = {"app": app, "size": size, "function": inst.function, "instance": inst.index, "server": inst.server,
            "phases": phases, "objects": objects, "stats": {"events": compute_events}}
    with open(os.path.join(d, "meta.json"), "w") as fh:
        json.dump(meta, fh)


def make_traces(wf_path: str, root: str, size: str = "tiny", sizes: dict | None = None,
                compute_events: int = 50) -> str:
    """Write build/traces/<size>/<app>/-shaped directories under `root`; returns the app's dir."""
    wf = workflow.load(wf_path)
    app_dir = os.path.join(root, size, wf.name)
    index = {"app": wf.name, "size": size, "instances": []}
    for inst in wf.instances():
        d = os.path.join(app_dir, f"{inst.function}.{inst.index}")
        write_instance(d, wf.name, size, inst, sizes or {}, compute_events)
        index["instances"].append({"function": inst.function, "instance": inst.index, "server": inst.server,
                                   "dir": os.path.relpath(d, app_dir)})
    with open(os.path.join(app_dir, "index.json"), "w") as fh:
        json.dump(index, fh)
    return app_dir


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", required=True)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--events", type=int, default=50)
    ap.add_argument("--object-bytes", type=int, default=4096)
    a = ap.parse_args()
    for f in sorted(os.listdir(workflow.WORKFLOW_DIR)):
        if f.endswith(".json"):
            wf = workflow.load(os.path.join(workflow.WORKFLOW_DIR, f))
            make_traces(wf.path, a.root, a.size, {o: a.object_bytes for o in wf.objects()}, a.events)
