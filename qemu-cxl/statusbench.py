#!/usr/bin/env python3
"""Does a status query cost more with more registered objects? (make bench-qemu ->
build/bench/daemon-status.json; tests/test_daemon.py::test_status_queries_do_not_walk_the_objects
is the short regression, counting work.)

For each N (10 and 100,000): a fresh daemon (variant msemu: 131,072 map entries) on a region whose
data area holds the object map and N one-line objects; N registrations through the API (the memory
server allocates each object's storage), then one put outstanding against a sharer (so the answer
has an ack owed and a pending object to name), then GET /v1/status `--queries` times on fresh
connections (after a pause that lets the registrations' closed connections leave the host's TCP
tables). Reported per N: the answer time (median, p90, max), and the directory queries the daemon
issued and the RTL cycles it ran for the status answers (its --stats line), per answer. A daemon that queried every
registered object on each answer would make N queries per answer."""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from apta.qemu import harness
from apta.qemu.harness import EXE, ROOT, Rack
from apta.qemu.stall import get, http


def register_all(port: int, n: int, threads: int = 4):
    def reg(o: int):
        body = json.dumps({"obj": o, "size": 1}).encode()
        raw = (b"POST /v1/objects HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
        code, ans, _ = http(port, raw)
        if code != 200:
            raise RuntimeError(f"registration of object {o}: {code} {ans}")
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(reg, range(1, n + 1)))


def measure(n: int, queries: int, tmp: Path, pause: float) -> dict:
    P = json.loads(harness.PARAMS_PATH.read_text())
    data = P["allocBase"] + n * 64 + (4 << 20)
    d = tmp / f"n{n}"
    d.mkdir()
    rack = Rack(EXE, harness.load_schema(), d, data_bytes=data)
    try:
        t0 = time.monotonic()
        register_all(rack.port, n)
        reg_s = time.monotonic() - t0
        g0, g1, _ = rack.guests
        g1.get(1, 1)
        g0.put(1, txn=1, lines=[7])                 # cs1 owes an ack for object 1
        time.sleep(pause)      # the registrations' closed connections (TIME_WAIT) leave the host's tables
        times = []
        for _ in range(queries):
            code, ans, dt = get(rack.port, "/v1/status")
            assert code == 200 and ans["servers"][1]["pending"] == 1, ans
            times.append(dt * 1e6)
    finally:
        log = rack.close()
    m = re.search(r"api: (\d+) directory queries for status/object answers \((\d+) cycles\), (\d+) objects registered", log)
    dq, cyc, registered = int(m.group(1)), int(m.group(2)), int(m.group(3))
    times.sort()
    return {"objects": registered, "status_answers": queries, "registration_s": round(reg_s, 1),
            "directory_queries": dq, "directory_queries_per_answer": round(dq / queries, 2),
            "rtl_cycles_per_answer": round(cyc / queries, 2),
            "answer_us": {"median": round(statistics.median(times), 1), "p90": round(times[int(0.9 * len(times))], 1),
                          "max": round(times[-1], 1)}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build/bench/daemon-status.json"))
    ap.add_argument("--objects", default="10,100000", help="comma-separated object counts")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--pause", type=float, default=65.0, help="seconds between the registrations and the queries")
    a = ap.parse_args(argv)
    missing = harness.rtl_missing()
    if missing:
        print(f"statusbench: {missing}", file=sys.stderr)
        return 2
    res = {"note": "functional emulation: the Verilated msemu memory server; GET /v1/status on a fresh "
                   "connection each, one ack owed; directory queries = io_query the daemon issued for answers",
           "machine": {"cpus": os.cpu_count(), "load_before": open("/proc/loadavg").read().split()[:3],
                       "python": platform.python_version()},
           "variant": harness.VARIANT, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in map(int, a.objects.split(",")):
            r = measure(n, a.queries, Path(tmp), a.pause)
            print(json.dumps(r), flush=True)
            res["runs"].append(r)
    lo, hi = res["runs"][0], res["runs"][-1]
    res["answer_median_ratio"] = round(hi["answer_us"]["median"] / lo["answer_us"]["median"], 2)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {a.out}: median answer {lo['answer_us']['median']} us with {lo['objects']} objects, "
          f"{hi['answer_us']['median']} us with {hi['objects']} (ratio {res['answer_median_ratio']}); "
          f"directory queries per answer {lo['directory_queries_per_answer']} vs {hi['directory_queries_per_answer']}, "
          f"RTL cycles per answer {lo['rtl_cycles_per_answer']} vs {hi['rtl_cycles_per_answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
