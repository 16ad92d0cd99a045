#!/usr/bin/env python3
"""What tracing costs the daemon (spec/tla/README.md "The QEMU emulation"): apta-ringbench's gets
and puts through the default daemon, the tracing build without a log, and the tracing build
writing its log, in rounds (interleaved, so a shared machine's load hits all three alike).

    python3 qemu-cxl/trace_cost.py [--rounds 3] [--seconds 3] [--out build/bench/daemon-trace.json]

Per run: the daemon's active cycles/s and requests/s (its --stats), the bench's completions/s, and
per second of the daemon's CPU time (its rusage: on a shared machine the load moves wall-clock rates
2x from round to round, CPU-time rates much less); the median of the rounds per configuration. Needs make daemon and make -C qemu-cxl/daemon trace."""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from apta.qemu import harness

D = harness.ROOT / "build" / "qemu-cxl" / "daemon"
LINES = 8


def one(exe: Path, extra: list[str], op: str, seconds: float, tmp: Path) -> dict:
    s = harness.load_schema()
    rack = tmp / "rack"                        # the rack directory (qemu-cxl/RINGS.md)
    harness.make_rack(rack, s.params["servers"], 16 << 20)
    port = harness.free_port()
    log = tmp / "daemon.log"
    p = subprocess.Popen([str(exe), "--file", str(harness.LAY.server_path(rack)), "--init", "--port", str(port), "--lease-ms", "600000",
                          "--stats", *extra], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        r = harness.Region(rack, s)
        deadline = time.time() + 20
        while r.m[0:8] != harness.LAY.raw["magic"].encode():
            assert p.poll() is None and time.time() < deadline, log.read_text()
            time.sleep(0.05)
        r.close()
        api = harness.Rack.__new__(harness.Rack)
        api.port, api.token, api.auth, api.ctx = port, None, None, None   # plain HTTP, no tokens
        while True:
            try:
                if api.api("GET", "/v1/status")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        for g in range(s.params["servers"]):
            api.register(1 + g, LINES)   # the memory server allocates the storage
        out = subprocess.run([str(D / "apta-ringbench"), str(rack), op, "1", str(LINES), str(seconds), "8"],
                             capture_output=True, text=True, check=True).stdout
        bench = json.loads(out.strip().splitlines()[-1])
    finally:
        p.send_signal(signal.SIGTERM)
        _, _, ru = os.wait4(p.pid, 0)          # the daemon's CPU time: a measure the machine's load barely moves
    st = log.read_text()
    m = re.search(r"active \(not idle-waiting\) ([\d.]+) s: (\d+) cycles/s, (\d+) requests/s", st)
    cycles = int(re.search(r"s, (\d+) cycles \(", st).group(1))
    cpu = ru.ru_utime + ru.ru_stime
    return {"active_s": float(m.group(1)), "cycles_per_s": int(m.group(2)), "requests_per_s": int(m.group(3)),
            "completions_per_s": round(bench["completed"] / bench["seconds"]), "cpu_s": round(cpu, 3),
            "cycles_per_cpu_s": round(cycles / cpu), "completions_per_cpu_s": round(bench["completed"] / cpu)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", type=Path, default=harness.ROOT / "build" / "bench" / "daemon-trace.json")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        confs = {"default": (D / "apta-memd", []), "trace build, no log": (D / "apta-memd-trace", []),
                 "trace build, logging": (D / "apta-memd-trace", ["--trace-log", str(tmp / "trace.ndjson")])}
        res = {c: {op: [] for op in ("get", "put")} for c in confs}
        for k in range(a.rounds):
            for op in ("get", "put"):
                for c, (exe, extra) in confs.items():
                    x = one(exe, extra, op, a.seconds, tmp)
                    if "--trace-log" in extra:
                        x["log_bytes_per_s"] = round((tmp / "trace.ndjson").stat().st_size / a.seconds)
                    res[c][op].append(x)
                    print(f"round {k + 1} {op} {c}: {x}", flush=True)
    summary = {c: {op: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for op, runs in ops.items()}
               for c, ops in res.items()}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"runs": res, "median": summary}, indent=1))
    for c, ops in summary.items():
        print(f"{c}: " + "; ".join(f"{op} {v['cycles_per_cpu_s']:,} cycles and {v['completions_per_cpu_s']:,} "
                                   f"completions per CPU s ({v['completions_per_s']:,}/s wall)"
                                   for op, v in ops.items()))


if __name__ == "__main__":
    main()
