#!/usr/bin/env python3
"""Can an API client slow the daemon's ring path? (daemon/README.md "The HTTP layer";
make bench-qemu -> build/bench/daemon-stall.json; tests/test_daemon_http.py runs it shorter.)

Ring gets/s by apta-ringbench (window 8 per guest, 8-line objects) unloaded, then while four
clients never read their answers and 100 connections sit idle, then unloaded again; the ratio is
loaded / mean(unloaded) (the benchmark: the median of 3 such rounds). Meanwhile a fresh client asks GET /v1/status every 0.25 s: its worst
answer time is the API's latency under the attack; the first answer after the 100 idle
connections were opened is reported on its own. The attacking clients run in a process of their
own session at nice 19 (AttackProcess), the daemon and apta-ringbench in sessions of their own
(on Linux each session is one CPU share): the clients' own CPU comes out of their share, as on
another host, not out of the guests' load generator's.

--tls: the same against a daemon serving TLS with bearer tokens (qemu-cxl/apiauth.py; the
clients send a reader's token, the idle connections and the non-readers complete their TLS
handshakes), plus 4 clients that stall in the handshake (two send half a ClientHello, two a whole
one and then nothing), each opened again when the daemon closes it; -> daemon-stall-tls.json."""
from __future__ import annotations

import argparse
import json
import os
import platform
import select
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from apta.qemu import apiauth
from apta.qemu import harness
from apta.qemu.harness import EXE, ROOT, Rack

OBJ0, LINES = 40, 8           # guest g gets object OBJ0+g (ringbench's convention)
# a query whose answer is ~30 KB (each requested name is echoed in "objects" and "unknown") from a
# request of under 8 KB: more than a small receive window plus the daemon's socket send buffer
BIG_QUERY = "/v1/schedulable?objects=" + ",".join(["9"] * 3800)


def http(port: int, raw: bytes, timeout: float = 10.0, ctx: ssl.SSLContext | None = None) -> tuple[int, dict | str, float]:
    """One request on a fresh connection (TLS with `ctx`): (status, JSON answer or raw text,
    seconds taken, handshake included)."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s0:
        s = ctx.wrap_socket(s0, server_hostname="127.0.0.1") if ctx else s0
        s.sendall(raw)
        buf = b""
        while True:
            try:
                b = s.recv(65536)
            except (ConnectionResetError, ssl.SSLEOFError):
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


def get(port: int, path: str, timeout: float = 10.0, ctx: ssl.SSLContext | None = None,
        headers: str = "") -> tuple[int, dict | str, float]:
    return http(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode(), timeout, ctx)


def client_hello(ctx: ssl.SSLContext) -> bytes:
    """The first flight of a TLS client with `ctx` (its ClientHello records), made in memory."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx.wrap_bio(inc, out, server_hostname="127.0.0.1")
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def closed_by_peer(s: socket.socket) -> bool:
    """The daemon answered (408) or closed. Plain: the socket is readable. TLS: readable may be
    only a TLS 1.3 session ticket (which the read below consumes): an answer or EOF is needed."""
    try:
        if not select.select([s], [], [], 0)[0]:
            return False
        if not isinstance(s, ssl.SSLSocket):
            return True
        s.setblocking(False)
        try:
            s.recv(1)                     # an answer's first byte, or b"" at EOF
            return True
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            return False                  # a ticket, no application data
        finally:
            s.settimeout(5)
    except (OSError, ValueError):
        return True


class Attack:
    """`nonreaders` clients that never read: each opens a connection with a tiny receive buffer
    every 0.25 s, asks BIG_QUERY and never reads (keeping its last 8 connections open); and
    `idle` connections that send nothing (one the daemon closes is opened again). With `ctx`
    (TLS): every connection completes its handshake first, the non-readers send `headers` (a
    token), and `stallers` more connections stall in the handshake (half of them after half a
    ClientHello, the others after a whole one), opened again when the daemon closes them."""

    def __init__(self, port: int, nonreaders: int = 4, idle: int = 100, ctx: ssl.SSLContext | None = None,
                 headers: str = "", stallers: int = 0):
        self.port, self.n_nonreaders, self.n_idle = port, nonreaders, idle
        self.ctx, self.headers, self.n_stallers = ctx, headers, stallers
        self.stop_ev = threading.Event()
        self.threads: list[threading.Thread] = []
        self.socks: list[socket.socket] = []
        self.lock = threading.Lock()
        self.reopened = 0
        self.stalls_closed = 0        # handshake stallers the daemon closed (its read timeout)

    def _conn(self, rcvbuf: int | None = None, tls: bool = True) -> socket.socket:
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(5)
        s.connect(("127.0.0.1", self.port))
        if self.ctx and tls:
            try:
                s = self.ctx.wrap_socket(s, server_hostname="127.0.0.1")
            except OSError:
                s.close()
                raise
        with self.lock:
            self.socks.append(s)
        return s

    def _staller(self, i: int):
        hello = client_hello(self.ctx)
        part = hello[:len(hello) // 2] if i % 2 == 0 else hello
        s = None
        while not self.stop_ev.is_set():
            if s is None:
                try:
                    s = self._conn(tls=False)
                    s.sendall(part)
                except OSError:
                    s = None
            elif closed_by_peer(s):
                try:                                        # the server's flight (a whole hello) or EOF
                    eof = s.recv(65536, socket.MSG_DONTWAIT) == b""
                except BlockingIOError:
                    eof = False
                except OSError:
                    eof = True
                if eof:
                    self._close(s)
                    s = None
                    self.stalls_closed += 1
                    continue
            self.stop_ev.wait(0.1)

    def _close(self, s: socket.socket):
        with self.lock:
            if s in self.socks:
                self.socks.remove(s)
        s.close()

    def _nonreader(self):
        held: list[socket.socket] = []
        req = f"GET {BIG_QUERY} HTTP/1.1\r\nHost: 127.0.0.1\r\n{self.headers}\r\n".encode()
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
                closed = s is None or closed_by_peer(s)                 # an answer (408) or EOF
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
        self.threads += [threading.Thread(target=self._staller, args=(i,), daemon=True) for i in range(self.n_stallers)]
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


class AttackProcess:
    """`Attack` in a child process of its own session (so, on Linux, its own autogroup: one CPU
    share beside the daemon's, as a client on another host would be, instead of the test
    process's share, which the guests' load generator also uses) at nice 19. Its TLS handshakes
    cost the Python clients about 20% of a core. Stopped by closing its stdin; stop() returns
    what it counted."""

    def __init__(self, port: int, ca: Path | None = None, token: str = "", stallers: int = 0):
        args = [sys.executable, str(Path(__file__).resolve()), "--attack", str(port), "--stallers", str(stallers)]
        if ca:
            args += ["--ca", str(ca), "--token", token]
        self.res: dict = {}
        self.p = subprocess.Popen(["nice", "-n", "19", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, start_new_session=True)
        line = self.p.stdout.readline()                # "ready" once the idle connections are open
        if line.strip() != "ready":
            self.stop()
            raise AssertionError(f"the attacking process did not start: {line!r}")

    def stop(self) -> dict:
        if self.p.poll() is None:
            try:
                out, _ = self.p.communicate(input="", timeout=30)
                self.res = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
            except (subprocess.TimeoutExpired, ValueError):
                self.p.kill()
                self.p.wait()
        return self.res


def attack_main(port: int, ca: str | None, token: str, stallers: int) -> int:
    """The child of AttackProcess: attack until stdin closes, then print the counts."""
    ctx = None
    if ca:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    att = Attack(port, ctx=ctx, headers=f"Authorization: Bearer {token}\r\n" if token else "", stallers=stallers)
    att.start()
    print("ready", flush=True)
    sys.stdin.read()
    att.stop()
    print(json.dumps({"idle_reopened": att.reopened, "handshake_stalls_closed": att.stalls_closed}), flush=True)
    return 0


def ring_gets(rack: Rack, secs: float) -> float:
    """Completed ring gets per second over `secs` (apta-ringbench, all three guests)."""
    bench = EXE.parent / "apta-ringbench"
    # its own session (autogroup), like the daemon's: the guests are other machines, the attacking
    # clients in this process must not take the guests' CPU share
    r = subprocess.run(["nice", "-n", "10", str(bench), str(rack.path), "get", str(OBJ0), str(LINES), str(secs), "8"],
                       capture_output=True, text=True, timeout=secs + 60, check=True, start_new_session=True)
    d = json.loads(r.stdout)
    assert d["other"] == 0, d
    time.sleep(0.2)                                   # the last window drains
    for g in rack.guests:
        while g._take(g.rsp) is not None:
            pass
    return d["completed"] / d["seconds"]


def measure(rack: Rack, secs: float, stallers: int = 4) -> dict:
    """Unloaded, loaded, unloaded ring gets/s on one daemon, and the API's answer times. A rack
    serving TLS (rack.auth) is attacked over TLS, with `stallers` handshake stallers too."""
    for g in range(3):                                # once per rack: later rounds reuse them
        if rack.api("GET", f"/v1/objects/{OBJ0 + g}")[0] == 404:
            rack.register(OBJ0 + g, LINES)
    res: dict = {"tls": rack.ctx is not None, "unloaded_gets_per_s": [ring_gets(rack, secs)]}
    hdr = f"Authorization: Bearer {rack.auth.tokens['reader']}\r\n" if rack.auth else ""
    att = None
    pings: list[tuple[int, float]] = []
    stop_ping = threading.Event()

    def ping():
        while not stop_ping.wait(0.25):
            try:
                code, _, dt = get(rack.port, "/v1/status", timeout=10, ctx=rack.ctx, headers=hdr)
            except OSError:
                code, dt = 0, 10.0
            pings.append((code, dt))

    try:
        att = AttackProcess(rack.port, ca=rack.auth.trust if rack.auth else None,
                            token=rack.auth.tokens["reader"] if rack.auth else "", stallers=stallers if rack.ctx else 0)
        code, _, dt = get(rack.port, "/v1/status", timeout=10, ctx=rack.ctx, headers=hdr)
        res["first_answer_under_idle"] = {"code": code, "seconds": round(dt, 4)}
        pt = threading.Thread(target=ping, daemon=True)
        pt.start()
        res["loaded_gets_per_s"] = ring_gets(rack, secs)
        stop_ping.set()
        pt.join(timeout=15)
    finally:
        stop_ping.set()
        counts = att.stop() if att else {}
    res["unloaded_gets_per_s"].append(ring_gets(rack, secs))
    base = sum(res["unloaded_gets_per_s"]) / 2
    res["ratio"] = round(res["loaded_gets_per_s"] / base, 3) if base else 0.0
    res["api_during_load"] = {"answers": len(pings), "all_200": all(c == 200 for c, _ in pings),
                              "max_seconds": round(max((d for _, d in pings), default=0.0), 4)}
    res["idle_reopened"] = counts.get("idle_reopened")
    if rack.ctx:
        res["handshake_stallers"] = stallers
        res["handshake_stalls_closed"] = counts.get("handshake_stalls_closed")
    res["seconds_per_run"] = secs
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--secs", type=float, default=5.0, help="seconds per ring-gets run (3 runs per round)")
    ap.add_argument("--rounds", type=int, default=3, help="unloaded/loaded/unloaded rounds; the median ratio is reported")
    ap.add_argument("--tls", action="store_true", help="the daemon serves TLS with tokens; 4 more clients stall in the handshake")
    ap.add_argument("--attack", type=int, metavar="PORT", help=argparse.SUPPRESS)     # AttackProcess's child
    ap.add_argument("--ca", help=argparse.SUPPRESS)
    ap.add_argument("--token", default="", help=argparse.SUPPRESS)
    ap.add_argument("--stallers", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help="default build/bench/daemon-stall[-tls].json")
    a = ap.parse_args()
    if a.attack:
        return attack_main(a.attack, a.ca, a.token, a.stallers)
    a.out = a.out or ROOT / "build" / "bench" / f"daemon-stall{'-tls' if a.tls else ''}.json"
    exe = harness.build_daemon()
    with tempfile.TemporaryDirectory() as tmp:
        rack = Rack(exe, harness.load_schema(), Path(tmp), auth=apiauth.ApiAuth(Path(tmp) / "auth") if a.tls else None)
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
                   "that never read + 100 idle connections" + (" + 4 handshake stallers, all over TLS with tokens" if a.tls else "") +
                   f" / unloaded, one daemon, nice 10, shared 2-core machine; {platform.node()}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res))
    if "stats" in log and "--verbose" in sys.argv:
        print(log[-2000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
