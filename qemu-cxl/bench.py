#!/usr/bin/env python3
"""Functional-emulation figures of the CXL emulation (make bench-qemu -> build/bench/qemu-cxl.json).

The memory-server daemon (the Verilated msemu top) serves a rack directory (a file per guest); host processes running
the guest library's driver (qemu-cxl/guest/aptadrv.c `bench`) are the guests. Per object size
(lines of 64 B): uncached get and put, one guest alone, then three guests at once (each on its own
object), a fixed time each. Reported: mean and max latency per op, ops/s, and the daemon's request
rate and RTL cycle rate from its --stats. These are figures of a functional emulation on this
machine (a software RTL model, ring slots in mmapped files), not predictions of hardware; the
workflow runs in TCG guests (tests/test_qemu_workflows.py) record in-guest put latencies."""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import threading
from pathlib import Path

from apta.qemu import harness
from apta.qemu.harness import Driver, build_driver, content

ROOT = harness.ROOT
SIZES = [1, 8, 64, 512, 4096]


def parse(line: str) -> dict:
    d = {k: float(v) for k, v in re.findall(r"(\w+)=(-?[\d.]+)", line)}
    if not line.startswith("OK") or d.get("errs", 1) != 0 or d.get("ops", 0) == 0:
        raise RuntimeError(f"bench failed: {line}")
    return {"ops": int(d["ops"]), "ops_per_s": d["ops_per_s"], "mean_us": d["mean_us"], "max_us": d["max_us"],
            "retries": int(d.get("retries", 0))}


def in_guests(n_guests: int, sizes: list, secs: float, schema_) -> dict:
    """The same uncached gets/puts by the driver in TCG guests (`cmd` mode fed by the guest's
    /apta/run script), n_guests at once, each on its own objects; parsed from the consoles."""
    from apta.qemu import launch
    drv = build_driver(static=True)
    cmds = ["rejoin"] + [f"bench {op} $((10 + 3 * {i} + $APTA_GUEST)) {n} {secs}"
                         for i, n in enumerate(sizes) for op in ("get", "put")]
    script = 'printf "' + "\\n".join(cmds) + '\\n" | /apta/aptadrv $APTA_GUEST cmd'
    c = launch.Cluster(run=f"bench-{n_guests}", n=n_guests, script=script, files=[(drv, "aptadrv")], hold=True)
    d = harness.Serving(harness.EXE, schema_, c.rack, c.dir / "daemon.log", 2000)
    try:
        for i, n in enumerate(sizes):
            for g in range(n_guests):
                o = 10 + 3 * i + g
                d.register(o, n, content(o, 0, n))
        for g in range(n_guests):
            c.start(g)
        out = {}
        for g in range(n_guests):
            c.wait_ready(g, timeout=240)
        for g in range(n_guests):
            c.wait_for(g, rb"APTA EXIT", timeout=60 + 4 * secs * len(sizes))
            text = c.console(g).decode(errors="replace")
            rows = re.findall(r"OK bench (get|put) obj=\d+ lines=(\d+) .*", text)
            lines = [l for l in text.splitlines() if l.startswith("OK bench")]
            if len(lines) != 2 * len(sizes):
                raise RuntimeError(f"guest {g}: {len(lines)} bench lines of {2 * len(sizes)}:\n{text[-2000:]}")
            for l, (op, n) in zip(lines, rows):
                out.setdefault(int(n), {}).setdefault(op, []).append(parse(l))
        return {n: {op: {"mean_us_avg": round(sum(x["mean_us"] for x in v) / len(v), 1),
                         "ops_per_s_total": round(sum(x["ops_per_s"] for x in v), 1), "per_guest": v}
                    for op, v in row.items()} for n, row in out.items()}
    finally:
        c.stop_all()
        d.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build/bench/qemu-cxl.json"))
    ap.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    ap.add_argument("--no-guests", action="store_true", help="host-process guests only (no QEMU)")
    a = ap.parse_args(argv)
    missing = harness.rtl_missing()
    if missing:
        print(f"bench-qemu: {missing}", file=sys.stderr)
        return 2
    params = json.loads(harness.PARAMS_PATH.read_text())
    sizes = [n for n in SIZES if n <= params["linesPerObject"]]
    data_bytes = 3 * max(sizes) * 64 * 2 * 2 + harness.DATA_BYTES   # the map, then power-of-two extents
    drv = build_driver()
    res = {"note": "functional emulation: the Verilated RTL memory server behind rings in per-guest files, host "
                   "processes as guests; not a hardware prediction",
           "machine": {"cpus": os.cpu_count(), "load_before": open("/proc/loadavg").read().split()[:3],
                       "python": platform.python_version()},
           "variant": harness.VARIANT, "seconds_each": a.seconds, "sizes_lines": sizes, "alone": {}, "three_guests": {}}
    with tempfile.TemporaryDirectory() as tmp:
        rack = harness.Rack(harness.EXE, harness.load_schema(), Path(tmp), data_bytes=data_bytes)
        drivers = []
        try:
            objs = {}
            for n in sizes:
                for g in range(3):
                    o = 10 + 3 * sizes.index(n) + g      # distinct slots of the direct-mapped object map
                    rack.register(o, n, content(o, 0, n))
                    objs[(n, g)] = o
            drivers = [Driver(drv, rack.path, g) for g in range(3)]
            for gu in rack.guests:
                gu.alive = False
            for d in drivers:
                d.ok("rejoin")
            for n in sizes:
                row = {}
                for op in ("get", "put"):
                    row[op] = parse(drivers[0].ok(f"bench {op} {objs[(n, 0)]} {n} {a.seconds}", timeout=60)["line"])
                res["alone"][n] = row
                row3 = {}
                for op in ("get", "put"):
                    out = [None] * 3

                    def one(g):
                        out[g] = parse(drivers[g].ok(f"bench {op} {objs[(n, g)]} {n} {a.seconds}", timeout=60)["line"])
                    th = [threading.Thread(target=one, args=(g,)) for g in range(3)]
                    for t in th:
                        t.start()
                    for t in th:
                        t.join()
                    row3[op] = {"per_guest": out, "ops_per_s_total": round(sum(x["ops_per_s"] for x in out), 1),
                                "mean_us_avg": round(sum(x["mean_us"] for x in out) / 3, 1)}
                res["three_guests"][n] = row3
                print(f"bench-qemu: {n:5d} lines: alone get {row['get']['mean_us']:.0f} us ({row['get']['ops_per_s']:.0f}/s), "
                      f"put {row['put']['mean_us']:.0f} us ({row['put']['ops_per_s']:.0f}/s); 3 guests get "
                      f"{row3['get']['ops_per_s_total']:.0f}/s, put {row3['put']['ops_per_s_total']:.0f}/s", flush=True)
        finally:
            for d in drivers:
                d.close()
            log = rack.close()
        stats = [l for l in log.splitlines() if "stats:" in l]
        res["daemon_stats"] = stats[:3]
        m = re.search(r"active \(not idle-waiting\) ([\d.]+) s: (\d+) cycles/s, (\d+) requests/s", log)
        if m:
            res["daemon_active"] = {"seconds": float(m.group(1)), "cycles_per_s": int(m.group(2)), "requests_per_s": int(m.group(3))}
    if not a.no_guests:
        gs = [n for n in sizes if n <= 512] + [max(sizes)]
        for k in (1, 3):
            res[f"tcg_{k}_guests"] = r = in_guests(k, gs, 2 * a.seconds, harness.load_schema())
            for n in gs:
                print(f"bench-qemu: TCG, {k} guest(s), {n:5d} lines: get {r[n]['get']['mean_us_avg']:.0f} us "
                      f"({r[n]['get']['ops_per_s_total']:.0f}/s in all), put {r[n]['put']['mean_us_avg']:.0f} us "
                      f"({r[n]['put']['ops_per_s_total']:.0f}/s)", flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    act = res.get("daemon_active", {})
    print(f"bench-qemu: {len(sizes)} object sizes, 1 and 3 host guests; daemon while active {act.get('cycles_per_s')} "
          f"RTL cycles/s, {act.get('requests_per_s')} requests/s -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
