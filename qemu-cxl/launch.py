#!/usr/bin/env python3
"""Start N QEMU guests (TCG), each with its own CXL type-3 memory backed by its own host file.

Stdlib + apta.layout. Each guest: q35 with CXL, a pxb-cxl host bridge with TWO cxl-rp root ports
(with one, QEMU 7.2 silently drops the data), a cxl-type3 device whose persistent memdev is guest
g's own file in the run directory (the rack directory, RINGS.md: build/qemu-cxl/runs/<run>/guest<g>.mem,
memory-backend-file share=on, shared only with the host daemon) and whose label area is a per-guest
file lsa<g>.mem, one CXL fixed memory window of 4 GiB. The memory server's data area
(server.mem, next to them) is never given to a guest. `shared_with={g: h}` backs guest g's device
with guest h's file instead: one region shared by two guests, only as the isolation test's
negative control. No network (-nic none), no
monitor, no display: nothing listens on any port. The serial console is appended to
runs/<run>/guest<g>.log. The kernel command line carries apta.guest=<g> and apta.boot=<k>.

Per-run guest programs: the image's initramfs (qemu-cxl/image.py) is concatenated with a small
uncompressed cpio holding /apta/run (a shell script) and the files given, written once per run to
runs/<run>/initrd.img; no image rebuild is needed to change what the guests run.

Every QEMU process is started in its own session with PR_SET_PDEATHSIG=SIGKILL (it dies if the
launcher dies, even by SIGKILL) and is stopped by PID by Cluster.stop_all(), which runs at exit,
on SIGTERM/SIGHUP/SIGINT (install_signal_handlers) and in the test fixtures' finalizers.
PDEATHSIG fires when the *thread* that forked the QEMU exits, not only the process: call
`start`/`restart` from a thread that outlives the guest (a helper thread that returns kills it).

CLI: python3 qemu-cxl/launch.py [--run NAME] [-n 3] [--seconds 20] [--bench BYTES]
"""
import argparse
import atexit
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from apta import layout as gen_layout
from apta.paths import ROOT as REPO
from apta.qemu import image  # qemu-cxl/image.py

HERE = Path(__file__).resolve().parent   # qemu-cxl/

LAY = gen_layout.load()
BUILD = REPO / "build" / "qemu-cxl"
RUNS = BUILD / "runs"

QEMU = "qemu-system-x86_64"
REGION_BYTES = 256 << 20  # a guest's device (CXL capacity comes in 256 MiB); RINGS.md uses its first 4 MiB
LSA_BYTES = 1 << 20
READY_RE = re.compile(rb"APTA READY region=(0x[0-9a-fA-F]+) size=(0x[0-9a-fA-F]+|\d+) guest=(\d+) uptime=([\d.]+)")
FAIL_RE = re.compile(rb"APTA FAIL[^\n]*|Kernel panic[^\n]*")

_live = {}  # pid -> Popen, every QEMU process started by this module and not yet reaped


def log(msg):
    print(f"[launch {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- process hygiene --------------------------------------------------------------------------
def _child_setup():
    os.nice(10)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the launcher
    except OSError:
        pass


def _stop_pid(p, grace=2.0):
    if p.poll() is None:
        try:
            p.terminate()
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
        except ProcessLookupError:
            pass
    _live.pop(p.pid, None)


def proc_usage(pid):
    """{'cpu_s': user+system CPU seconds, 'rss_peak_mb': VmHWM} of a live process, or {}."""
    try:
        stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        hwm = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM:"))
        tck = os.sysconf("SC_CLK_TCK")
        return {"cpu_s": round((int(stat[11]) + int(stat[12])) / tck, 1), "rss_peak_mb": round(hwm / 1024)}
    except (OSError, StopIteration, IndexError, ValueError):
        return {}


def stop_everything():
    for p in list(_live.values()):
        _stop_pid(p)


atexit.register(stop_everything)


def install_signal_handlers():
    """SIGTERM/SIGHUP -> SystemExit (so finalizers and atexit stop the guests)."""
    def handler(signum, _frame):
        stop_everything()
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) in (signal.SIG_DFL, None):
            signal.signal(s, handler)


# --- guest programs ---------------------------------------------------------------------------
def build_probe():
    """gcc -static the guest probe into build/qemu-cxl/probe (only when the source is newer)."""
    src, dst, hdr = HERE / "guest" / "probe.c", BUILD / "probe", BUILD / "apta_layout.h"
    BUILD.mkdir(parents=True, exist_ok=True)
    text = gen_layout.gen_c(LAY.raw, "schema/layout.json")  # the daemon's Makefile writes the same
    if not hdr.exists() or hdr.read_text() != text:
        hdr.write_text(text)
    if not dst.exists() or dst.stat().st_mtime < max(src.stat().st_mtime, hdr.stat().st_mtime):
        subprocess.run(["nice", "-n", "10", "gcc", "-static", "-O2", "-Wall", "-Werror", f"-I{BUILD}", "-o", str(dst),
                        str(src)], check=True)
    return dst


def _newc(entries):
    """An uncompressed newc cpio archive of entries [(path, mode, data-bytes or None for a dir)]."""
    out, ino = bytearray(), 1000
    for name, mode, data in entries + [("TRAILER!!!", 0, b"")]:
        data = data or b""
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08X}" for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0))
        out += hdr.encode() + nb
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
        ino += 1
    out += b"\0" * (-len(out) % 512)
    return bytes(out)


def make_initrd(base_initrd, dest, script, files=()):
    """dest = the image initramfs + a cpio with /apta/run (script) and files [(host path, guest name)]."""
    entries = [("apta", 0o40755, None),
               ("apta/run", 0o100755, ("#!/bin/sh\n" + script + "\n").encode())]
    for host, name in files:
        entries.append((f"apta/{name}", 0o100755, Path(host).read_bytes()))
    tmp = Path(str(dest) + ".tmp")
    with open(tmp, "wb") as f, open(base_initrd, "rb") as b:
        shutil.copyfileobj(b, f)
        # the kernel reads an uncompressed cpio after a compressed one only at a 4-byte aligned offset
        f.write(b"\0" * (-f.tell() % 4))
        f.write(_newc(entries))
    tmp.rename(dest)
    return dest


# --- the cluster ------------------------------------------------------------------------------
class Guest:
    def __init__(self, g):
        self.g = g
        self.proc = None
        self.boot = -1
        self.log_offset = 0
        self.t_start = None
        self.ready = None  # dict once READY was seen for the current boot
        self.boot_wall = []  # seconds from spawn to READY, per boot
        self.usage = []  # per finished boot: CPU seconds and peak RSS of its QEMU process


class Cluster:
    def __init__(self, run=None, n=3, script="/apta/probe run $APTA_GUEST {n}", files=None,
                 region_bytes=REGION_BYTES, hold=True, mem="256M", fresh=True, shared_with=None):
        self.manifest = image.ensure_image()
        self.run = run or time.strftime("run-%Y%m%d-%H%M%S")
        self.dir = RUNS / self.run
        if fresh and self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.n, self.hold, self.mem, self.region_bytes = n, hold, mem, region_bytes
        self.rack = self.dir                  # the rack directory: guest<g>.mem, server.mem (RINGS.md)
        self.shared_with = dict(shared_with or {})
        for g in range(n):
            p = LAY.guest_path(self.rack, g)
            if not p.exists():
                with open(p, "wb") as f:
                    f.truncate(region_bytes)  # sparse
        if files is None:
            files = [(build_probe(), "probe")]
        self.initrd = make_initrd(self.manifest["initrd"], self.dir / "initrd.img", script.replace("{n}", str(n)), files)
        self.guests = [Guest(g) for g in range(n)]

    def backing(self, g):
        """The file guest g's cxl-type3 device is backed by: its own, unless shared_with says otherwise."""
        return LAY.guest_path(self.rack, self.shared_with.get(g, g))

    def log_path(self, g):
        return self.dir / f"guest{g}.log"

    def cmdline(self, g, boot):
        return (f"console=ttyS0 loglevel=3 iomem=relaxed panic=-1 rdinit=/init "
                f"apta.guest={g} apta.boot={boot} apta.hold={1 if self.hold else 0}")

    def qemu_argv(self, g, boot):
        lsa = self.dir / f"lsa{g}.mem"
        if not lsa.exists():
            with open(lsa, "wb") as f:
                f.truncate(LSA_BYTES)
        return [QEMU, "-M", "q35,cxl=on", "-accel", "tcg", "-cpu", "qemu64", "-smp", "1",
                "-m", f"{self.mem},maxmem=4G,slots=4",
                "-nodefaults", "-display", "none", "-nic", "none", "-monitor", "none", "-no-reboot",
                "-chardev", f"file,id=con0,path={self.log_path(g)},append=on", "-serial", "chardev:con0",
                "-kernel", self.manifest["vmlinuz"], "-initrd", str(self.initrd),
                "-append", self.cmdline(g, boot),
                "-object", f"memory-backend-file,id=cxl-mem0,share=on,mem-path={self.backing(g)},size={self.region_bytes}",
                "-object", f"memory-backend-file,id=cxl-lsa0,share=on,mem-path={lsa},size={LSA_BYTES}",
                "-device", "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1",
                "-device", "cxl-rp,port=0,bus=cxl.1,id=root_port13,chassis=0,slot=2",
                "-device", "cxl-rp,port=1,bus=cxl.1,id=root_port14,chassis=0,slot=3",
                "-device", "cxl-type3,bus=root_port13,memdev=cxl-mem0,lsa=cxl-lsa0,id=cxl-pmem0",
                "-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"]

    def start(self, g):
        gu = self.guests[g]
        if gu.proc is not None and gu.proc.poll() is None:
            raise RuntimeError(f"guest {g} is already running (pid {gu.proc.pid})")
        gu.boot += 1
        lp = self.log_path(g)
        with open(lp, "ab") as f:
            f.write(f"\n=== apta launch.py: guest {g} boot {gu.boot} at {time.time():.3f} ===\n".encode())
        gu.log_offset = lp.stat().st_size
        argv = self.qemu_argv(g, gu.boot)
        (self.dir / f"guest{g}.argv.json").write_text(json.dumps(argv, indent=1))
        gu.t_start = time.monotonic()
        gu.ready = None
        gu.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(self.dir / f"qemu{g}.out", "ab"),
                                   stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_child_setup)
        _live[gu.proc.pid] = gu.proc
        _all_started.add(gu.proc.pid)
        log(f"guest {g} boot {gu.boot}: pid {gu.proc.pid}")
        return gu.proc.pid

    def console(self, g, this_boot=True):
        gu = self.guests[g]
        data = self.log_path(g).read_bytes()
        return data[gu.log_offset:] if this_boot else data

    def wait_for(self, g, pattern, timeout=120.0):
        """Wait until regex pattern (bytes) appears on guest g's console in its current boot."""
        gu, rx = self.guests[g], re.compile(pattern)
        t_end = time.monotonic() + timeout
        while True:
            text = self.console(g)
            m = rx.search(text)
            if m:
                return m
            f = FAIL_RE.search(text)
            if f:
                raise RuntimeError(f"guest {g}: {f.group(0).decode(errors='replace')}\n{self.tail(g)}")
            if gu.proc.poll() is not None:
                raise RuntimeError(f"guest {g}: QEMU exited with {gu.proc.returncode} before {pattern!r}\n"
                                   f"{self.tail(g)}\n{(self.dir / f'qemu{g}.out').read_text(errors='replace')[-2000:]}")
            if time.monotonic() > t_end:
                raise TimeoutError(f"guest {g}: no {pattern!r} within {timeout} s\n{self.tail(g)}")
            time.sleep(0.1)

    def wait_ready(self, g, timeout=120.0):
        m = self.wait_for(g, READY_RE.pattern, timeout)
        gu = self.guests[g]
        gu.ready = {"region": int(m.group(1), 16), "size": int(m.group(2), 0), "guest": int(m.group(3)),
                    "uptime": float(m.group(4)), "wall": round(time.monotonic() - gu.t_start, 2)}
        gu.boot_wall.append(gu.ready["wall"])
        if gu.ready["guest"] != g:
            raise RuntimeError(f"guest {g} reported guest={gu.ready['guest']}")
        log(f"guest {g} boot {gu.boot}: READY region={m.group(1).decode()} size={gu.ready['size']} "
            f"in {gu.ready['wall']} s wall ({gu.ready['uptime']} s guest uptime)")
        return gu.ready

    def tail(self, g, nbytes=3000):
        return self.console(g, this_boot=False)[-nbytes:].decode(errors="replace")

    def kill(self, g):
        """Kill guest g's QEMU process at once (SIGKILL, like a crashed host) and reap it."""
        p = self.guests[g].proc
        self.guests[g].usage.append(proc_usage(p.pid))
        p.kill()
        p.wait(timeout=10)
        _live.pop(p.pid, None)
        log(f"guest {g}: killed pid {p.pid}")
        return p.pid

    def restart(self, g):
        if self.guests[g].proc is not None and self.guests[g].proc.poll() is None:
            self.kill(g)
        return self.start(g)

    def pids(self):
        return [gu.proc.pid for gu in self.guests if gu.proc is not None]

    def all_pids_ever(self):
        return sorted(_all_started)

    def stop_all(self):
        for gu in self.guests:
            if gu.proc is not None:
                if gu.proc.poll() is None:
                    gu.usage.append(proc_usage(gu.proc.pid))
                _stop_pid(gu.proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop_all()


_all_started = set()


def pid_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def frozen(pid: int, timeout: float = 2.0) -> bool:
    """Every thread of the process is stopped (SIGSTOP takes effect asynchronously)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            states = [open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()[0]
                      for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            return False
        if all(st in "tT" for st in states):
            return True
        time.sleep(0.001)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default=None, help="run name (build/qemu-cxl/runs/<run>)")
    ap.add_argument("-n", type=int, default=3, help="guests (default 3)")
    ap.add_argument("--seconds", type=float, default=20, help="keep the guests up this long after READY")
    ap.add_argument("--bench", type=int, default=0, help="instead: guest 0 runs `probe bench BYTES`")
    ap.add_argument("--script", default=None, help="guest shell command for /apta/run ($APTA_GUEST etc.)")
    a = ap.parse_args()
    install_signal_handlers()
    script = a.script or (f"/apta/probe bench {a.bench}" if a.bench else "/apta/probe run $APTA_GUEST {n}")
    n = 1 if a.bench and not a.script else a.n
    with Cluster(run=a.run, n=n, script=script, hold=True) as c:
        for g in range(n):
            c.start(g)
        for g in range(n):
            c.wait_ready(g)
        t_end = time.monotonic() + a.seconds
        while time.monotonic() < t_end:
            time.sleep(0.5)
        for g in range(n):
            print(f"--- guest {g} ---\n" + c.console(g).decode(errors="replace"))
        c.stop_all()
        print(json.dumps({"run": c.run, "boot_wall_s": [gu.boot_wall for gu in c.guests],
                          "usage": [gu.usage for gu in c.guests]}))


if __name__ == "__main__":
    main()
