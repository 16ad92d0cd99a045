#!/usr/bin/env python3
"""Can an API client slow the daemon's ring path? (issue 16, "a daemon no client can stall";
make bench-qemu -> build/bench/daemon-stall.json; tests/test_daemon_http.py runs it shorter.)

Ring gets/s by apta-ringbench (window 8 per guest, 8-line objects) unloaded, then while four
clients never read their answers and 100 connections sit idle, then unloaded again; the ratio is
loaded / mean(unloaded) (the benchmark: the median of 3 such rounds). Meanwhile a fresh client asks GET /v1/status every 0.25 s: its worst
answer time is the API's latency under the attack; the first answer after the 100 idle
connections were opened is reported on its own."""
from __future__ import annotations

import argparse
import json
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import harness
from harness import EXE, ROOT, Rack

OBJ0, LINES = 40, 8           # guest g gets object OBJ0+g (ringbench's convention)
# a query whose answer is ~30 KB (each requested name is echoed in "objects" and "unknown") from a
# request of under 8 KB: more than a small receive window plus the daemon's socket send buffer
BIG_QUERY = "/v1/schedulable?objects=" + ",".join(["9"] * 3800)


def http(port: int, raw: bytes, timeout: float = 10.0) -> tuple[int, dict | str, float]:
    """One request on a fresh connection: (status, JSON answer or raw text, seconds taken)."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        buf = b""
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            buf += b
    dt = time.monotonic() - t0
    head, _, body = buf.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 "):
        return 0, buf.decode(errors="replace"), dt
    code = int(head.split()[1])
    try:
        return code, json.loads(body), dt
    except ValueError:
        return code, body.decode(errors="replace"), dt


def get(port: int, path: str, timeout: float = 10.0) -> tuple[int, dict | str, float]:
    return http(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode(), timeout)


class Attack:
    """`nonreaders` clients that never read: each opens a connection with a tiny receive buffer
    every 0.25 s, asks BIG_QUERY and never reads (keeping its last 8 connections open); and
    `idle` connections that send nothing (one the daemon closes is opened again)."""

    def __init__(self, port: int, nonreaders: int = 4, idle: int = 100):
        self.port, self.n_nonreaders, self.n_idle = port, nonreaders, idle
        self.stop_ev = threading.Event()
        self.threads: list[threading.Thread] = []
        self.socks: list[socket.socket] = []
        self.lock = threading.Lock()
        self.reopened = 0

    def _conn(self, rcvbuf: int | None = None) -> socket.socket:
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(5)
        s.connect(("127.0.0.1", self.port))
        with self.lock:
            self.socks.append(s)
        return s

    def _close(self, s: socket.socket):
        with self.lock:
            if s in self.socks:
                self.socks.remove(s)
        s.close()

    def _nonreader(self):
        held: list[socket.socket] = []
        req = f"GET {BIG_QUERY} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
        while not self.stop_ev.is_set():
            try:
                s = self._conn(rcvbuf=1024)
                s.sendall(req)
                held.append(s)
            except OSError:
                pass
            while len(held) > 8:
                self._close(held.pop(0))
            self.stop_ev.wait(0.25)

    def _idle(self):
        conns = []
        while not self.stop_ev.is_set() and len(conns) < self.n_idle:
            try:
                conns.append(self._conn())
            except OSError:
                self.stop_ev.wait(0.05)
        self.idle_open.set()
        while not self.stop_ev.wait(0.1):
            for i, s in enumerate(conns):
                if self.stop_ev.is_set():
                    break                                                # stop() closes the sockets
                closed = s is None
                if s is not None:
                    try:
                        s.setblocking(False)
                        closed = s.recv(1, socket.MSG_PEEK) is not None  # an answer (408) or EOF
                    except BlockingIOError:
                        closed = False
                    except OSError:
                        closed = True
                if closed:
                    if s is not None:
                        self._close(s)
                    try:
                        conns[i] = self._conn()
                        self.reopened += 1
                    except OSError:
                        conns[i] = None                                 # tried again in 0.1 s

    def start(self):
        self.idle_open = threading.Event()
        self.threads = [threading.Thread(target=self._idle, daemon=True)]
        self.threads += [threading.Thread(target=self._nonreader, daemon=True) for _ in range(self.n_nonreaders)]
        for t in self.threads:
            t.start()
        assert self.idle_open.wait(20), "could not open the idle connections"

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(timeout=5)
        with self.lock:
            for s in self.socks:
                s.close()
            self.socks.clear()


def ring_gets(rack: Rack, secs: float) -> float:
    """Completed ring gets per second over `secs` (apta-ringbench, all three guests)."""
    bench = EXE.parent / "apta-ringbench"
    r = subprocess.run(["nice", "-n", "10", str(bench), str(rack.path), "get", str(OBJ0), str(LINES), str(secs), "8"],
                       capture_output=True, text=True, timeout=secs + 60, check=True)
    d = json.loads(r.stdout)
    assert d["other"] == 0, d
    time.sleep(0.2)                                   # the last window drains
    for g in rack.guests:
        while g._take(g.rsp) is not None:
            pass
    return d["completed"] / d["seconds"]


def measure(rack: Rack, secs: float) -> dict:
    """Unloaded, loaded, unloaded ring gets/s on one daemon, and the API's answer times."""
    for g in range(3):
        rack.register(OBJ0 + g, LINES)
    res: dict = {"unloaded_gets_per_s": [ring_gets(rack, secs)]}
    att = Attack(rack.port)
    pings: list[tuple[int, float]] = []
    stop_ping = threading.Event()

    def ping():
        while not stop_ping.wait(0.25):
            try:
                code, _, dt = get(rack.port, "/v1/status", timeout=10)
            except OSError:
                code, dt = 0, 10.0
            pings.append((code, dt))

    try:
        att.start()
        code, _, dt = get(rack.port, "/v1/status", timeout=10)
        res["first_answer_under_idle"] = {"code": code, "seconds": round(dt, 4)}
        pt = threading.Thread(target=ping, daemon=True)
        pt.start()
        res["loaded_gets_per_s"] = ring_gets(rack, secs)
        stop_ping.set()
        pt.join(timeout=15)
    finally:
        stop_ping.set()
        att.stop()
    res["unloaded_gets_per_s"].append(ring_gets(rack, secs))
    base = sum(res["unloaded_gets_per_s"]) / 2
    res["ratio"] = round(res["loaded_gets_per_s"] / base, 3) if base else 0.0
    res["api_during_load"] = {"answers": len(pings), "all_200": all(c == 200 for c, _ in pings),
                              "max_seconds": round(max((d for _, d in pings), default=0.0), 4)}
    res["idle_reopened"] = att.reopened
    res["seconds_per_run"] = secs
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--secs", type=float, default=5.0, help="seconds per ring-gets run (3 runs per round)")
    ap.add_argument("--rounds", type=int, default=3, help="unloaded/loaded/unloaded rounds; the median ratio is reported")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "bench" / "daemon-stall.json")
    a = ap.parse_args()
    exe = harness.build_daemon()
    with tempfile.TemporaryDirectory() as tmp:
        rack = Rack(exe, harness.load_schema(), Path(tmp))
        try:
            rounds = [measure(rack, a.secs) for _ in range(a.rounds)]
        finally:
            log = rack.close()
    ratios = sorted(r["ratio"] for r in rounds)
    res = {"ratio_median": ratios[len(ratios) // 2], "ratios": [r["ratio"] for r in rounds],
           "first_answer_under_idle_max_s": max(r["first_answer_under_idle"]["seconds"] for r in rounds),
           "api_during_load_max_s": max(r["api_during_load"]["max_seconds"] for r in rounds),
           "api_all_200": all(r["api_during_load"]["all_200"] and r["first_answer_under_idle"]["code"] == 200 for r in rounds),
           "rounds": rounds}
    res["note"] = ("host only; apta-ringbench gets (window 8 per guest, 8-line objects) unloaded / with 4 clients "
                   "that never read + 100 idle connections / unloaded, one daemon, nice 10, shared 2-core machine; "
                   f"{platform.node()}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res))
    if "stats" in log and "--verbose" in sys.argv:
        print(log[-2000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
