"""Host-side stand-ins for the CXL emulation's guests, shared by the tests (tests/test_daemon.py,
test_guestlib.py, test_runner.py, test_executor.py, test_sched_daemon.py, test_qemu_cxl.py,
test_qemu_workflows.py) and the benchmark (qemu-cxl/bench.py): no pytest in here.

    Rack         the memory-server daemon on a fresh rack directory (RINGS.md: the daemon's server
                 file, one file per guest); Python plays its guests (Guest), each through its own
                 file only, by reading and writing their rings, heartbeating from one thread
    Serving      the daemon on the QEMU guests' rack directory (launch.py): Rack's API, no guests
    Driver       one guest-library driver process (guest/aptadrv.c) playing guest g
    World        three function-runner processes (guest/aptarun.c) playing guests 0..2 on a Rack
    E2E          the scheduler plugin's e2e cluster with the daemon as its control plane

Offsets come from schema/layout.json (apta.layout), flits from schema/messages.json
(apta.messages), the API from schema/controlplane.yaml. `rtl_missing()` says what is missing to
run any of this (the daemon's RTL variant, build/rtl/msemu, from `make rtl`)."""
from __future__ import annotations

import contextlib
import json
import mmap
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from apta import hostrun as wrun
from apta import layout as gen_layout
from apta import messages
from apta import shm
from apta import workflow as wfmod
from apta.paths import ROOT, SCHEMA

from apta.qemu import apiauth
from apta.qemu import jobs
from apta.qemu import kube as kubemod

VARIANT = "msemu"      # the daemon's default (qemu-cxl/daemon/Makefile)
PARAMS_PATH = ROOT / "build" / "rtl" / VARIANT / "params.json"
EXE = ROOT / "build" / "qemu-cxl" / "daemon" / "apta-memd"
LAY = gen_layout.load()
LINE = 64
DATA_BYTES = 8 << 20       # the data area of a Rack's server file unless told otherwise (sparse file):
                           # the msemu object map (2 MiB) and the allocator's arena above it
SERVING_DATA_BYTES = 192 << 20   # the QEMU runs' data area (sparse)
REFUSED = LAY.raw["refusals"]
SPEC = SCHEMA / "controlplane.yaml"
# Longer than the daemon's default (500 ms): the heartbeat thread runs in this (niced) Python
# process, which a loaded CI machine may starve for a while; a spurious fence would fail a test.
LEASE_MS = 1500
# a run with a kill: its first instance with inputs pauses this long after its first get (JOBS.md
# `pause`), so a kill at a get finds its guest mid-run even when tiny functions end within the
# executor's poll (a CI run had three early tries in a row end before the hook could freeze a guest)
KILL_PAUSE_MS = 1000
SLOT = LAY.raw["ring"]["slot"]


def rtl_missing() -> str | None:
    """None when the daemon's RTL variant is built, else what to run."""
    if not (PARAMS_PATH.exists() and (PARAMS_PATH.parent / "MemoryServer.sv").exists()):
        return f"build/rtl/{VARIANT} missing: run make rtl"
    return None


def build_daemon() -> Path:
    """`make -C qemu-cxl/daemon` (the Verilated model is cached by the hash of the .sv)."""
    r = subprocess.run(["nice", "-n", "10", "make", "-s", "-C", str(ROOT / "qemu-cxl" / "daemon")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return EXE


FUZZ_CORPUS = ROOT / "qemu-cxl" / "daemon" / "fuzz" / "corpus"


def sync_fuzz_seeds(target: str, seeds: dict[str, bytes]) -> list[str]:
    """The committed seed corpus of a daemon fuzz target (qemu-cxl/daemon/fuzz/corpus/<target>/)
    against the seeds the tests derive from their probes: what differs, one line each. With
    APTA_WRITE_FUZZ_SEEDS=1 it writes them instead; a file not among `seeds` is a problem too."""
    d = FUZZ_CORPUS / target
    out = []
    for name, data in seeds.items():
        f = d / name
        if os.environ.get("APTA_WRITE_FUZZ_SEEDS") == "1":
            d.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
        elif not f.exists():
            out.append(f"{f.relative_to(ROOT)}: missing (APTA_WRITE_FUZZ_SEEDS=1 writes it)")
        elif f.read_bytes() != data:
            out.append(f"{f.relative_to(ROOT)}: differs from its probe (APTA_WRITE_FUZZ_SEEDS=1 rewrites it)")
    out += [f"{f.relative_to(ROOT)}: no probe of that name" for f in sorted(d.glob("*")) if f.name not in seeds]
    return out


def seed_name(what: str) -> str:
    """A probe's description as a file name ("Content-Length 2abc" -> content-length-2abc)."""
    return re.sub(r"[^a-z0-9]+", "-", what.lower()).strip("-")


def load_schema() -> messages.Schema:
    """The message schema with the daemon's variant's parameters."""
    p = json.loads(PARAMS_PATH.read_text())
    raw = json.loads(messages.SCHEMA_PATH.read_text())
    s = messages.Schema(raw, {k: p[k] for k in raw["parameters"] if k in p})
    assert s.flit_bits == p["flitBits"]
    return s


def spec_check(name: str, ans: dict):
    """`ans` conforms to components.schemas.<name> of controlplane.yaml (the one definition of the
    API): the required fields present, no others, each of its JSON type (integers >= 0), nested
    schemas ($ref, arrays, maps) checked the same way."""
    import yaml
    schemas = yaml.safe_load(SPEC.read_text())["components"]["schemas"]

    def check(sch: dict, v, where: str):
        if "$ref" in sch:
            sch = schemas[sch["$ref"].rsplit("/", 1)[1]]
        t = sch.get("type")
        py = {"string": str, "integer": int, "boolean": bool, "array": list, "object": dict}.get(t)
        assert py is None or (isinstance(v, py) and not (py is int and isinstance(v, bool))), (where, v, t)
        if t == "integer":
            assert v >= 0, (where, v)
        if t == "array":
            for i, x in enumerate(v):
                check(sch.get("items", {}), x, f"{where}[{i}]")
        if t == "object" and "properties" in sch:
            assert set(sch.get("required", [])) <= set(v) <= set(sch["properties"]), (where, sorted(v), sch)
            for k, x in v.items():
                check(sch["properties"][k], x, f"{where}.{k}")
        elif t == "object" and isinstance(sch.get("additionalProperties"), dict):
            for k, x in v.items():
                check(sch["additionalProperties"], x, f"{where}.{k}")
    check(schemas[name], ans, name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_proc(p: subprocess.Popen):
    """SIGKILL (a crashed host) and reap, if it still runs."""
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
        p.wait()


# ---- the daemon and Python guests on its rings ------------------------------------------------
class Region:
    """The rack's files as the tests see them: `m` is the server file (header + the data area, the
    daemon's alone), guest(g) guest g's own file. A Python Guest touches only its own."""

    def __init__(self, rack: Path, s: messages.Schema):
        self.rack = Path(rack)
        self.f = open(LAY.server_path(rack), "r+b")
        self.m = mmap.mmap(self.f.fileno(), 0)
        self.s = s
        self.nbytes = (s.flit_bits + 7) // 8
        self._g: dict[int, tuple] = {}

    def guest(self, g: int) -> mmap.mmap:
        if g not in self._g:
            f = open(LAY.guest_path(self.rack, g), "r+b")
            self._g[g] = (f, mmap.mmap(f.fileno(), 0))
        return self._g[g][1]

    def u64(self, off: int) -> int:
        return shm.load64(self.m, off)

    def set_u64(self, off: int, v: int):
        shm.store64(self.m, off, v)

    def data(self, addr: int, n: int) -> bytes:
        return bytes(self.m[LAY.data_offset + addr: LAY.data_offset + addr + n])

    def set_data(self, addr: int, b: bytes):
        self.m[LAY.data_offset + addr: LAY.data_offset + addr + len(b)] = b

    def close(self):
        self.m.close()
        self.f.close()
        for f, m in self._g.values():
            m.close()
            f.close()


class Guest:
    """Compute server g: produces into its request ring, consumes its response and invalidation
    rings, heartbeats while `alive`."""

    def __init__(self, r: Region, g: int):
        self.r, self.g, self.s = r, g, r.s
        self.m = r.guest(g)                            # its own file: the only memory it writes
        self.req, self.rsp, self.inv = (LAY.ring(w) for w in ("request", "response", "invalidation"))
        self.seq = 0
        self.epoch = 0
        self.alive = True

    def u64(self, off: int) -> int:
        return shm.load64(self.m, off)

    def set_u64(self, off: int, v: int):
        shm.store64(self.m, off, v)

    def put_slot(self, flit: int, flit_bits: int | None = None, nbytes: int | None = None):
        m = self.m
        head, tail = self.u64(self.req), self.u64(self.req + LAY.raw["ring"]["tail_offset"])
        deadline = time.time() + 5
        while head - tail >= LAY.slots:
            assert time.time() < deadline, "request ring full"
            time.sleep(0.001)
            tail = self.u64(self.req + LAY.raw["ring"]["tail_offset"])
        o = LAY.slot(self.req, head)
        m[o:o + LAY.slot_bytes] = bytes(LAY.slot_bytes)
        struct.pack_into("<HHI", m, o, self.s.flit_bits if flit_bits is None else flit_bits, 0, self.seq)
        n = nbytes or self.r.nbytes
        m[o + SLOT["flit_offset"]: o + SLOT["flit_offset"] + n] = flit.to_bytes(n, "little")
        self.seq += 1
        self.set_u64(self.req, head + 1)           # after the slot (x86 stores are ordered)

    def send(self, name: str, **f):
        f.setdefault("server", self.g)
        f.setdefault("epoch", self.epoch)
        self.put_slot(self.s.encode(name, **f))

    def _take(self, ring: int):
        head = self.u64(ring)
        tail_off = ring + LAY.raw["ring"]["tail_offset"]
        tail = self.u64(tail_off)
        if tail >= head:
            return None
        o = LAY.slot(ring, tail)
        fb, refused, seq = struct.unpack_from("<HHI", self.m, o)
        flit = int.from_bytes(self.m[o + SLOT["flit_offset"]: o + SLOT["flit_offset"] + self.r.nbytes], "little")
        self.set_u64(tail_off, tail + 1)
        assert fb == self.s.flit_bits
        if refused:
            return ("refused", {"code": refused, "seq": seq, "flit": flit})
        return self.s.decode(flit)

    def recv(self, n: int = 1, ring: str = "rsp", timeout: float = 5.0) -> list:
        out, deadline = [], time.time() + timeout
        r = self.rsp if ring == "rsp" else self.inv
        while len(out) < n:
            m = self._take(r)
            if m is None:
                assert time.time() < deadline, f"guest {self.g}: {len(out)}/{n} {ring} flits after {timeout}s: {out}"
                time.sleep(0.0005)
                continue
            out.append(m)
        return out

    def quiet(self, ring: str = "rsp", wait: float = 0.2) -> bool:
        time.sleep(wait)
        return self._take(self.rsp if ring == "rsp" else self.inv) is None

    def get(self, obj: int, size: int) -> list[int]:
        self.send("ObjGet", obj=obj)
        got = self.recv(size)
        assert all(n == "ObjData" and f["obj"] == obj and f["epoch"] == self.epoch for n, f in got), got
        assert [f["line"] for _, f in got] == list(range(size))
        return [f["data"] for _, f in got]

    def put(self, obj: int, txn: int, lines: list[int]):
        self.send("PutPrepare", obj=obj, txn=txn)
        for l, d in enumerate(lines):
            self.send("PutLine", obj=obj, txn=txn, line=l, data=d)
        (n, f), = self.recv(1)
        assert (n, f["obj"], f["txn"]) == ("PutCommit", obj, txn), (n, f)


def make_rack(rack: Path, guests: int, data_bytes: int, guest_bytes: int | None = None):
    """A rack directory (RINGS.md): the server file with a data area of `data_bytes`, and one file
    per guest (sparse; existing guest files are kept: the QEMU runs made them)."""
    rack.mkdir(parents=True, exist_ok=True)
    with open(LAY.server_path(rack), "wb") as f:
        f.truncate(LAY.data_offset + data_bytes)
    for g in range(guests):
        p = LAY.guest_path(rack, g)
        if not p.exists():
            with open(p, "wb") as f:
                f.truncate(guest_bytes or LAY.guest_bytes)


class Rack:
    """A daemon on a fresh rack directory (a data area of `data_bytes`), three guests heartbeating
    from one thread, each through its own file."""

    def __init__(self, exe: Path, s: messages.Schema, tmp: Path, lease_ms: int = LEASE_MS,
                 extra: list[str] | None = None, data_bytes: int = DATA_BYTES, token: str | None = None,
                 auth: apiauth.ApiAuth | None = None):
        self.token = token                                 # bearer token of api() (daemon run with --token-file)
        self.auth = auth                                   # TLS + a token per role (qemu-cxl/apiauth.py)
        self.path = tmp / "rack"                           # the rack directory
        self.data_bytes = data_bytes
        make_rack(self.path, s.params["servers"], data_bytes)
        extra = (extra or []) + (["--trace"] if os.environ.get("APTA_DAEMON_TRACE") else [])
        self._start(exe, s, self.path, tmp / "daemon.log", lease_ms, extra, guests=s.params["servers"])

    def _start(self, exe: Path, s: messages.Schema, path: Path, log: Path, lease_ms: int, extra,
               guests: int):
        """Starts the daemon on the rack directory `path` (--init), Python guests 0..guests-1
        heartbeating from one thread, and waits until it serves and answers the API."""
        self.port = free_port()
        self.log = log
        auth = getattr(self, "auth", None)
        self.ctx = auth.context() if auth else None        # TLS client context (None: plain HTTP)
        self.proc = subprocess.Popen(
            ["nice", "-n", "10", str(exe), "--file", str(LAY.server_path(path)), "--init", "--port", str(self.port),
             "--lease-ms", str(lease_ms), "--stats", *(auth.daemon_args() if auth else []), *extra],
            # its own session, as a service: on a shared host (Linux autogroups) it then gets its
            # own CPU share instead of sharing the test process's with the test's clients
            stdout=subprocess.DEVNULL, stderr=open(log, "w"), start_new_session=True)
        self.r = Region(path, s)
        self.guests = [Guest(self.r, g) for g in range(guests)]
        self.stop = threading.Event()
        self.hb = threading.Thread(target=self._heartbeat, daemon=True)
        self.hb.start()
        deadline = time.time() + 20
        try:
            while True:                                    # serving and answering the API
                assert self.proc.poll() is None, log.read_text()
                try:
                    if self.r.m[0:8] == LAY.raw["magic"].encode() and self.api("GET", "/v1/status")[0] == 200:
                        break
                except OSError:
                    pass
                assert time.time() < deadline, "daemon did not come up: " + log.read_text()
                time.sleep(0.05)
        except BaseException:
            self.stop.set()                                # not left running (its own session: no ^C reaches it)
            kill_proc(self.proc)
            raise

    def _heartbeat(self):
        while not self.stop.is_set():
            for g in self.guests:
                if g.alive:
                    g.set_u64(LAY.ctl("heartbeat"), time.monotonic_ns())
            time.sleep(0.01)

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.ctx else 'http'}://127.0.0.1:{self.port}"

    def api(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        auth = getattr(self, "auth", None)
        h = {"Authorization": f"Bearer {self.token}"} if getattr(self, "token", None) else \
            auth.header(method, path) if auth else {}
        req = urllib.request.Request(self.endpoint + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **h})
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.ctx) as r:
                code, ans = r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            code, ans = e.code, json.loads(e.read())
        # every answer conforms to the spec: the API's one definition
        p = path.split("?")[0]
        spec_check("Error" if code != 200 else "RegisterAnswer" if method == "POST" and p == "/v1/objects" else
                   "ChangeAnswer" if method == "POST" else
                   "ObjectAnswer" if p.startswith("/v1/objects/") else "SchedulableAnswer", ans)
        return code, ans

    def register(self, obj: int, size: int, data: bytes | None = None) -> int:
        """Register object `obj` of `size` lines: the memory server allocates its storage and answers
        the base (controlplane.yaml registerObject); `data` is then written there (the host's view
        of the data area, as the Object Manager loads an initial object). Returns the base."""
        code, ans = self.api("POST", "/v1/objects", {"obj": obj, "size": size})
        assert code == 200, ans
        if data is not None:
            self.r.set_data(ans["base"], data)
        return ans["base"]

    def server(self, g: int, objects: str | None = None) -> dict:
        code, ans = self.api("GET", "/v1/schedulable" + (f"?objects={objects}" if objects else ""))
        assert code == 200, ans
        return ans["servers"][g]

    def close(self) -> str:
        self.stop.set()
        self.hb.join(timeout=2)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.r.close()
        return self.log.read_text()

    @classmethod
    @contextlib.contextmanager
    def running(cls, *args, **kw):
        """A rack for one test: stopped even when the test fails, its log shown, and a clean exit
        (by SIGTERM, not a crash) asserted."""
        r = cls(*args, **kw)
        try:
            yield r
        finally:
            log = r.close()
            sys.stderr.write(log[-3000:])
        assert r.proc.returncode == 0, log


class Serving(Rack):
    """The daemon on the QEMU guests' rack directory (launch.py's run directory: it made the guest
    files; the server file is made here). Rack's API helpers, no heartbeats from Python: the
    guests are the QEMU guests."""

    def __init__(self, exe: Path, s: messages.Schema, path: Path, log: Path, lease_ms: int, extra=(),
                 auth: apiauth.ApiAuth | None = None, data_bytes: int = SERVING_DATA_BYTES):
        self.path, self.auth = path, auth
        make_rack(path, s.params["servers"], data_bytes)
        self._start(exe, s, path, log, lease_ms, list(extra), guests=0)


# ---- the guest library's driver as guests ----------------------------------------------------
GUESTLIB_OUT = ROOT / "build" / "qemu-cxl" / "guestlib"
GUEST_SRC = ROOT / "qemu-cxl" / "guest"


def reboot_after_fence(cluster, daemon: "Serving", k: dict, lease_ms: int, done: threading.Event):
    """The QEMU tests' reboot of a killed guest k["g"] (run on a thread of its own): wait for the
    daemon to fence it (k["error"] if not within the lease + 20 s), restart and boot it, record
    k["fenced_after_s"] and k["rebooted_after_s"], then hold the thread until `done`
    (PR_SET_PDEATHSIG: the QEMU this thread forked dies with the thread)."""
    t0 = time.time()
    while not daemon.server(k["g"])["fenced"]:
        if time.time() - t0 > lease_ms / 1000 + 20:
            k["error"] = "not fenced"
            return
        time.sleep(0.05)
    k["fenced_after_s"] = round(time.time() - t0, 2)
    cluster.restart(k["g"])
    cluster.wait_ready(k["g"], timeout=240)
    k["rebooted_after_s"] = round(time.time() - t0, 2)
    done.wait()


def build_driver(static: bool = False) -> Path:
    """cc the library + driver (host build, or -static for the QEMU guests) against the generated
    headers (made by the daemon's Makefile: build_daemon())."""
    out = GUESTLIB_OUT / ("aptadrv-static" if static else "aptadrv-host")
    GUESTLIB_OUT.mkdir(parents=True, exist_ok=True)
    srcs = [GUEST_SRC / "aptacxl.c", GUEST_SRC / "aptadrv.c"]
    deps = srcs + [GUEST_SRC / "aptacxl.h", ROOT / "build/qemu-cxl/apta_layout.h", ROOT / "build/qemu-cxl/apta_msg.h"]
    if out.exists() and all(out.stat().st_mtime >= d.stat().st_mtime for d in deps):
        return out
    cmd = ["nice", "-n", "10", "gcc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread",
           f"-I{ROOT / 'build/qemu-cxl'}", f"-I{GUEST_SRC}", "-o", str(out)] + [str(s) for s in srcs]
    if static:
        cmd.insert(4, "-static")
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def content(obj: int, ver: int, n: int) -> bytes:
    """aptadrv.c's fill(): line l of obj at version ver."""
    return b"".join(struct.pack("<III", obj, ver, l) + bytes((obj * 7 + ver * 13 + l * 3 + k) & 0xFF for k in range(12, LINE))
                    for l in range(n))


class Driver:
    """One aptadrv process playing guest g, mapping only guest g's file of the rack directory: one
    command line in, one answer line out."""

    def __init__(self, drv: Path, rack: Path, g: int):
        self.g = g
        self.p = subprocess.Popen(["nice", "-n", "10", str(drv), "--region", str(LAY.guest_path(rack, g)), str(g), "cmd"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def cmd(self, line: str, timeout: float = 15.0) -> dict:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        assert r, f"guest {self.g}: no answer to {line!r} in {timeout}s"
        ans = self.p.stdout.readline().strip()
        assert ans, f"guest {self.g}: driver exited on {line!r} (rc {self.p.poll()})"
        d = {"ok": ans.startswith("OK"), "line": ans}
        d.update({k: float(v) if "." in v else int(v) for k, v in re.findall(r"(\w+)=(-?[\d.]+)", ans)})
        return d

    def ok(self, line: str, **kw) -> dict:
        d = self.cmd(line, **kw)
        assert d["ok"], (self.g, line, d["line"])
        return d

    def kill(self):
        kill_proc(self.p)

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
                self.p.wait(timeout=3)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()


# ---- the function runner as guests (qemu-cxl/JOBS.md) -----------------------------------------
RUNNER = ROOT / "build" / "qemu-cxl" / "runner" / "aptarun-host"
RUNNER_STATIC = ROOT / "build" / "qemu-cxl" / "runner" / "aptarun-static"
WORLD_DATA_BYTES = 32 << 20     # a World's data area: the six workflows' tiny objects
SIZE = "tiny"


def build_runner(target: Path = RUNNER) -> Path:
    """The runner (`make -C qemu-cxl/guest`) and the workloads' host builds (the reference runs)."""
    r = subprocess.run(["nice", "-n", "10", "make", "-s", "-C", str(ROOT / "qemu-cxl" / "guest"), "-j2", str(target)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    wrun.build()
    return target


class Runner:
    """One aptarun process playing guest g in life `boot`, mapping only guest g's file."""

    def __init__(self, exe: Path, rack: Path, g: int, boot: int, log: Path, timeout_ms: int | None = None):
        self.g, self.boot = g, boot
        self.log = log
        opts = ["--timeout-ms", str(timeout_ms)] if timeout_ms else []
        self.p = subprocess.Popen(["nice", "-n", "10", str(exe), "--region", str(LAY.guest_path(rack, g)), *opts, str(g), str(boot)],
                                  stdout=subprocess.DEVNULL, stderr=open(log, "a"))

    def kill(self):
        kill_proc(self.p)

    def close(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()


class World:
    """Runner processes on a Rack's guest files, and the executor's side of their job blocks."""

    def __init__(self, rack: Rack, exe: Path, tmp: Path, runner_timeout_ms: int | None = None):
        self.rack, self.exe, self.tmp = rack, exe, tmp
        self.runner_timeout_ms = runner_timeout_ms   # aptarun --timeout-ms (None: its default)
        self.r = jobs.Rack(rack.path)
        self.jb = [jobs.JobBlock(self.r, g) for g in range(3)]
        self.next_obj = 100            # the memory server allocates each object's storage
        self.runners: list[Runner] = []

    def start(self, g: int, boot: int, min_epoch: int = 1) -> Runner:
        ru = Runner(self.exe, self.rack.path, g, boot, self.tmp / f"runner{g}.log", self.runner_timeout_ms)
        deadline = time.time() + 15
        while not (self.jb[g].life[0] == boot and self.jb[g].life[1] >= min_epoch and self.jb[g].idle()):
            assert ru.p.poll() is None, f"runner {g} exited: {ru.log.read_text()[-2000:]}"
            assert time.time() < deadline, f"runner {g} not idle: {ru.log.read_text()[-2000:]}"
            time.sleep(0.01)
        self.runners.append(ru)
        return ru

    def place(self, data: bytes, lines: int | None = None, raw: bytes | None = None) -> tuple[int, int]:
        """A new CXL object holding `data` (object format), registered with the daemon."""
        lines = lines or jobs.obj_lines(len(data))
        raw = raw if raw is not None else jobs.encode_object(data, lines)
        # a fresh id: an executor on the same rack may have registered some (the allocating daemon
        # answers 409 exists to a second registration)
        while self.rack.api("GET", f"/v1/objects/{self.next_obj}")[0] != 404:
            self.next_obj += 1
        obj = self.next_obj
        self.next_obj += 1
        base = self.rack.register(obj, lines)
        self.r.data_write(base, raw)
        self.bases = getattr(self, "bases", {})
        self.bases[obj] = (base, lines)
        return obj, lines

    def read_obj(self, obj: int, want: bytes | None = None, timeout: float = 5.0) -> bytes:
        """The object's data in the memory server's DRAM (the OPC drains a commit asynchronously)."""
        base, lines = self.bases[obj]
        deadline = time.time() + timeout
        while True:
            try:
                d = jobs.decode_object(self.r.data_read(base, lines * jobs.LINE), f"object {obj}")
                if want is None or d == want:
                    return d
            except ValueError:
                if time.time() > deadline:
                    raise
            if time.time() > deadline:
                return d
            time.sleep(0.01)

    def job(self, g: int, directives: list[str], inputs: dict | None = None, timeout: float = 30.0):
        jb = self.jb[g]
        deadline = time.time() + timeout
        while not jb.idle():
            assert time.time() < deadline, f"guest {g} runner not idle"
            time.sleep(0.002)
        t0 = time.perf_counter()
        j = jb.post(directives, inputs)
        rc = jb.wait(j, timeout)
        wall = time.perf_counter() - t0
        recs, _ = jb.read_log()
        return rc, recs, jb.emits(recs), wall

    def close(self):
        for ru in self.runners:
            ru.close()
        self.r.close()


def phi_records(tmp: Path) -> bytes:
    """phi's `records` input (tiny), from the host run's generator."""
    wf = wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, "phi.json"))
    run = wrun.prepare_run(wf, SIZE, run_dir=str(tmp / "phi-gen"))
    return (Path(run["dirs"]["store"]) / "records").read_bytes()


def identify_job(rid: str, records: tuple[int, int], tagged: tuple[int, int]) -> list[str]:
    """phi's identify function as a job: gets `records`, puts `tagged` ((object id, lines) each)."""
    return [f"run {rid}", "fn phi identify_phi", f"get records {records[0]} {records[1]}",
            f"put tagged {tagged[0]} {tagged[1]}"]


# ---- the scheduler plugin's e2e cluster against the daemon -------------------------------------
E2E_BIN = ROOT / "build" / "scheduler" / "e2e.test"


class E2E:
    """The scheduler plugin's e2e binary in its daemon mode; stopped (and its process group
    killed) at close, even when the test fails."""

    def __init__(self, port: int, out: Path, plugin: bool, tmp: Path, auth: apiauth.ApiAuth | None = None):
        """`auth`: the daemon serves TLS with tokens (apiauth.ApiAuth): the e2e's agent and plugin
        get its CA and the reader's token, and first check that wrong ones fail closed."""
        self.kube_path, self.result_path = tmp / f"kube-{plugin}.json", out / f"e2e-result-{'plugin' if plugin else 'no-plugin'}.json"
        self.log_path = out / f"e2e-{'plugin' if plugin else 'no-plugin'}.log"
        (out / ("plugin" if plugin else "no-plugin")).mkdir(parents=True, exist_ok=True)
        for p in (self.kube_path, self.result_path):
            p.unlink(missing_ok=True)
        env = {**os.environ, "APTA_E2E_ENDPOINT": f"{'https' if auth else 'http'}://127.0.0.1:{port}", "APTA_E2E_KUBE": str(self.kube_path),
               "APTA_E2E_RESULT": str(self.result_path), "APTA_E2E_PLUGIN": "1" if plugin else "0", "APTA_E2E_WAIT": "15m",
               "APTA_E2E_DIR": str(out / ("plugin" if plugin else "no-plugin"))}
        if auth:
            env.update(APTA_E2E_CA_FILE=str(auth.pki.ca), APTA_E2E_TOKEN_FILE=str(auth.token_path("reader")))
        self.log = open(self.log_path, "w")
        # run from the package directory: the e2e reads ../../manifests/apta
        self.p = subprocess.Popen(["nice", "-n", "5", str(E2E_BIN), "-test.run", "^TestDaemonControlPlane$", "-test.v"],
                                  cwd=ROOT / "scheduler-plugin" / "test" / "e2e", env=env, stdin=subprocess.PIPE,
                                  stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 180
        while not self.kube_path.exists():
            if self.p.poll() is not None:
                raise AssertionError(f"the e2e exited at start:\n{self.tail()}")
            if time.time() > deadline:
                raise AssertionError(f"the e2e cluster not up after 180 s:\n{self.tail()}")
            time.sleep(0.2)
        self.kube = kubemod.Kube.from_file(self.kube_path)

    def tail(self, n: int = 4000) -> str:
        self.log.flush()
        return self.log_path.read_text()[-n:]

    def finish(self, timeout: float = 120) -> dict:
        """Driver done: the e2e checks the pods it bound and exits; its verdict and observations."""
        self.p.stdin.close()
        rc = self.p.wait(timeout=timeout)
        assert rc == 0, f"the e2e against the daemon failed (rc {rc}):\n{self.tail()}"
        return json.loads(self.result_path.read_text())

    def close(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
                self.p.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.p.wait()
        self.log.close()


def build_e2e() -> Path:
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "e2e-bin"], capture_output=True, text=True)
    assert r.returncode == 0 and E2E_BIN.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    return E2E_BIN
