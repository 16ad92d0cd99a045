"""TLC's distributed mode for check.py --distributed-workers: a TLC server here, one worker per
listed host, every process stopped at the end of its run ("Distributed TLC" in spec/tla/README.md).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from apta.tla.config import Run, prepare_cfg
from apta.tla.tlc import parse_tlc, start, stop

HERE = Path(__file__).resolve().parent

# TLC's distributed mode (--distributed-workers HOST,...): a tlc2.tool.distributed.TLCServer here
# (the state queue, the fingerprint set, the trace: the same distinct-state count as one process)
# and one tlc2.tool.distributed.TLCWorker per listed host, which fetches the spec from the server
# and computes successor states. 127.0.0.1/localhost workers are local processes; any other host's
# is started over ssh (BatchMode: a key, no password prompt) and needs java and the two paths
# below at the same place there. Every process runs through TlcRmiLaunch (spec/tla/TlcRmiLaunch.java,
# compiled beside the jar), which binds all of its RMI sockets to one address on fixed ports:
#   server: registry PORT, its objects PORT+1, bound to the server address (127.0.0.1 when every
#           worker is local); worker i (0-based in the list): PORT+2+i, bound to 127.0.0.1 for a
#           local worker, to all interfaces on a remote one (the server connects to it).
# Measured with TLC 2.18 (this jar): distributed TLC checks no temporal property (the mutant
# no-fence, whose AcksRetired is violated in one process, "passes") and reports a violation as a
# trace without naming the invariant or property (the mutant get-sa-to-s: no "Invariant DirShape
# is violated"). So a run with a temporal property, and every mutant, runs in one process as
# before; the other models are checked distributed.
LOCAL_HOSTS = ("127.0.0.1", "localhost")
TLC_PORT = 10997                       # TLC's own default registry port
REGISTER_TIMEOUT = 120                 # default seconds for a worker to register with the server
REPORT_INTERVAL = 30                   # seconds between the server's progress lines
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_SYNTAX = re.compile(rf"^(?:[A-Za-z0-9._-]+@)?{_LABEL}(?:\.{_LABEL})*$")
LAUNCHER = "TlcRmiLaunch"


@dataclass
class Distributed:
    workers: list[str]                 # worker hosts ([user@]host), in the order given
    server_host: str                   # the address the workers reach the server at
    bind: str                          # the address the server's sockets are bound to
    port: int                          # registry; PORT+1 server objects; PORT+2+i worker i
    threads: int | None                # threads per worker (None: the worker host's cores)
    classpath: str                     # jar:launcher directory (the same paths on every host)
    register_timeout: int = REGISTER_TIMEOUT   # seconds for the first worker thread to register


def bare_host(host: str) -> str:
    return host.rsplit("@", 1)[-1]


def is_local(host: str) -> bool:
    return bare_host(host) in LOCAL_HOSTS and "@" not in host


def parse_worker_hosts(text: str) -> list[str]:
    """The worker hosts of --distributed-workers ("h1,h2,..."; a host may repeat: one worker per
    entry). ValueError with the reason for an empty list or entry, a malformed name, or a remote
    name that does not resolve here (the server connects back to each worker by that name)."""
    import socket
    if not text or not text.strip():
        raise ValueError("the worker list is empty (give HOST[,HOST...], e.g. 127.0.0.1,127.0.0.1)")
    hosts = [h.strip() for h in text.split(",")]
    for i, h in enumerate(hosts, 1):
        if not h:
            raise ValueError(f"entry {i} of the worker list {text!r} is empty")
        if not HOST_SYNTAX.match(h):
            raise ValueError(f"worker {h!r}: not a host name or IPv4 address ([user@]host)")
    for h in hosts:
        if is_local(h):
            continue
        try:
            socket.getaddrinfo(bare_host(h), None, socket.AF_INET)
        except (socket.gaierror, UnicodeError) as e:
            raise ValueError(f"worker host {bare_host(h)!r} does not resolve here ({e})") from None
    return hosts


def route_address(host: str) -> str:
    """This machine's address on the route to `host` (a UDP connect sends nothing)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((bare_host(host), 9))
        return s.getsockname()[0]


def ensure_launcher(jar: Path) -> Path:
    """TlcRmiLaunch compiled (javac, a JDK) into <jar's directory>/tlc-rmi-launch-<sha1>/."""
    src = HERE / f"{LAUNCHER}.java"
    out = jar.parent / f"tlc-rmi-launch-{hashlib.sha1(src.read_bytes()).hexdigest()[:12]}"
    if (out / f"{LAUNCHER}.class").exists():
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit(f"check.py: --distributed-workers needs javac (a JDK, e.g. Debian's "
                         f"default-jdk-headless) to compile {src}")
    tmp = out.with_name(out.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    p = subprocess.run([javac, "--release", "11", "-d", str(tmp), str(src)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"check.py: javac {src} failed:\n{p.stdout}{p.stderr}")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


def port_free(addr: str, port: int) -> bool:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
            return True
        except OSError:
            return False


RMI_OPENS = ["--add-opens", "java.rmi/sun.rmi.server=ALL-UNNAMED",      # the worker's own port
             "--add-opens", "java.rmi/sun.rmi.transport=ALL-UNNAMED"]   # in TLC's messages


def worker_cmd(d: Distributed, i: int, tmpdir: Path) -> list[str]:
    """The command that starts worker i: a local java, or ssh running java on the worker host."""
    host = d.workers[i]
    local = is_local(host)
    java = [shutil.which("java") or "java"] if local else ["java"]
    threads = [f"-Dtlc2.tool.distributed.TLCWorker.threadCount={d.threads}"] if d.threads else []
    cmd = java + ["-XX:+UseParallelGC"] + ([f"-Djava.io.tmpdir={tmpdir}"] if local else []) + [
        f"-Djava.rmi.server.hostname={'127.0.0.1' if local else bare_host(host)}",
        f"-Dtlc2.tool.distributed.TLCServer.port={d.port}", *threads, *RMI_OPENS,
        "-cp", d.classpath, LAUNCHER, "127.0.0.1" if local else "0.0.0.0", str(d.port + 2 + i),
        "tlc2.tool.distributed.TLCWorker", d.server_host]
    if local:
        return cmd
    import shlex
    # -tt: the remote java gets SIGHUP when this ssh is stopped
    return ["ssh", "-tt", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", host,
            "exec " + " ".join(shlex.quote(a) for a in cmd)]


def server_cmd(d: Distributed, run: Run, java: str, tmpdir: Path, library: str, states_dir: Path,
               cfg_path: Path) -> list[str]:
    return [java, "-XX:+UseParallelGC", f"-Djava.io.tmpdir={tmpdir}", f"-DTLA-Library={library}",
            f"-Djava.rmi.server.hostname={d.server_host}",
            f"-Dtlc2.tool.distributed.TLCServer.port={d.port}",
            f"-Dtlc2.tool.distributed.TLCServer.report={REPORT_INTERVAL * 1000}",
            "-cp", d.classpath, LAUNCHER, d.bind, str(d.port + 1),
            "tlc2.tool.distributed.TLCServer", *([] if run.deadlock else ["-deadlock"]),
            "-metadir", str(states_dir), "-config", str(cfg_path), run.module]


def distributed_setup(hosts: list[str], args, jar: Path) -> Distributed | str:
    """The distributed configuration of this invocation (printed), or why there is none."""
    import socket
    local = all(is_local(h) for h in hosts)
    remote = [h for h in hosts if not is_local(h)]
    server_host = args.distributed_server_host
    if server_host is None:
        try:
            server_host = "127.0.0.1" if local else route_address(remote[0])
        except OSError as e:
            return f"no route to {bare_host(remote[0])} ({e}); give --distributed-server-host"
    try:
        bind = socket.gethostbyname(server_host)
    except OSError as e:
        return f"server host {server_host!r} does not resolve ({e})"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((bind, 0))
        except OSError as e:
            return f"server host {server_host!r} ({bind}) is not an address of this machine ({e})"
    far = [h for h in remote if not socket.gethostbyname(bare_host(h)).startswith("127.")]
    if far and bind.startswith("127."):
        return (f"server host {server_host!r} is a loopback address, which the remote workers "
                f"({', '.join(far)}) cannot reach; give --distributed-server-host")
    threads = args.distributed_threads
    if threads is None and local:
        threads = max(1, (os.cpu_count() or 1) // len(hosts))
    launcher = ensure_launcher(jar)
    d = Distributed(hosts, server_host, bind, args.distributed_port, threads,
                    f"{jar}{os.pathsep}{launcher}", args.distributed_register_timeout)
    print(f"check.py: distributed TLC: server {server_host}:{d.port} (listening on {bind}, ports "
          f"{d.port}-{d.port + 1}); {len(hosts)} worker(s): "
          + ", ".join(f"{h} (port {d.port + 2 + i})" for i, h in enumerate(hosts))
          + f"; {threads or 'all'} thread(s) per worker", flush=True)
    if remote:
        print(f"check.py: remote workers run over ssh (a key, no prompt) and need java >= 11 and, "
              f"at the same paths, {jar} and {launcher}/; e.g.\n    "
              + " ".join(worker_cmd(d, hosts.index(remote[0]), Path("/tmp"))), flush=True)
    return d


def distributed_unsupported(run: Run, temporal: list[str]) -> str | None:
    """Why distributed TLC cannot check `run` (it then runs in one process), or None."""
    if temporal:
        return f"distributed TLC checks no temporal property ({', '.join(temporal)})"
    if run.kind == "mutant":
        return "distributed TLC does not name the violated property a mutant must be rejected on"
    return None


# what a worker prints when its parse of the spec fetched from the server failed
PARSE_FAILED = "Fatal errors while parsing TLA+ spec"


def parse_race(worker_log: Path) -> bool:
    """The worker whose log this is died parsing the spec (which it does before it registers)."""
    return worker_log.exists() and PARSE_FAILED in worker_log.read_text(errors="replace")


def run_tlc_distributed(run: Run, java: list[str], spec_dir: Path, build: Path, d: Distributed,
                        timeout: int, progress=print) -> dict:
    """`run` on a TLC server with d.workers; the record as run_tlc's, plus "distributed" (the
    hosts). Fails (error "workers") if no worker registers within d.register_timeout seconds or
    a worker process ends before the server; every process started is stopped on return."""
    cfg_path, temporal = prepare_cfg(run, spec_dir, build)
    library = next(a for a in java if a.startswith("-DTLA-Library=")).split("=", 1)[1]
    # workers fetch the modules and the .cfg from the server by file name: build/cfg/ on its path
    library += os.pathsep + str(build / "cfg")
    tmpdir = Path(next(a for a in java if a.startswith("-Djava.io.tmpdir=")).split("=", 1)[1])
    states_dir = build / "states" / run.name
    shutil.rmtree(states_dir, ignore_errors=True)
    logs = build / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{run.name}.out"
    wlogs = [logs / f"{run.name}.worker{i}.out" for i in range(len(d.workers))]
    wtmp = [build / "tmp" / f"{run.name}.worker{i}" for i in range(len(d.workers))]
    busy = [p for p in [d.port, d.port + 1] if not port_free(d.bind, p)] + \
        [d.port + 2 + i for i, h in enumerate(d.workers)
         if is_local(h) and not port_free("127.0.0.1", d.port + 2 + i)]
    procs: list[tuple[str, subprocess.Popen, object]] = []
    cmd = server_cmd(d, run, java[0], tmpdir, library, states_dir, cfg_path)
    t0 = time.monotonic()
    rc, error, note = -1, None, ""

    def elapsed() -> str:
        return f"{time.monotonic() - t0:5.0f} s"

    retried = [False] * len(d.workers)

    def launch(i: int, again: bool = False) -> tuple[str, subprocess.Popen, object]:
        wcmd = worker_cmd(d, i, wtmp[i])
        wtmp[i].mkdir(parents=True, exist_ok=True)
        wf = open(wlogs[i], "a" if again else "w")
        wf.write(("\ncheck.py: started again\n" if again else "") + " ".join(wcmd) + "\n")
        wf.flush()
        return (f"worker {i} ({d.workers[i]})", start(wcmd, wf), wf)

    def tail(path: Path, n: int = 15) -> str:
        lines = [l for l in path.read_text(errors="replace").splitlines()
                 if not l.startswith(("Parsing file", "Semantic processing"))]
        return "\n".join("      | " + l for l in lines[-n:])

    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        if busy:
            f.write(f"\ncheck.py: port(s) {busy} in use on this machine: another distributed TLC "
                    f"run? (--distributed-port)\n")
            error = "ports"
        try:
            if error is None:
                procs.append(("server", start(cmd, f, cwd=spec_dir), f))
            shown, ready_at, workers_started = 0, None, False
            deadline = t0 + timeout
            while error is None:
                server = procs[0][1]
                try:
                    rc = server.wait(timeout=0.5)
                    break                                        # the server has finished
                except subprocess.TimeoutExpired:
                    pass
                out = log.read_text(errors="replace")
                lines = out.splitlines()
                for l in lines[shown:]:
                    if l.startswith(("Progress(", "Registration for worker", "TLC server at")):
                        progress(f"    [{elapsed()}] {l}", flush=True)
                shown = len(lines)
                if ready_at is None and "TLC server at" in out:
                    ready_at = time.monotonic()
                if ready_at is not None and not workers_started:
                    workers_started = True
                    for i in range(len(d.workers)):
                        procs.append(launch(i))
                    progress(f"    [{elapsed()}] started {len(d.workers)} worker(s) on "
                             f"{', '.join(d.workers)}; server {d.server_host}:{d.port}", flush=True)
                registered = out.count("Registration for worker")     # one per worker thread
                now = time.monotonic()
                if now > deadline:
                    f.write(f"\ncheck.py: TLC timed out after {timeout} s\n")
                    rc, error = -1, "timeout"
                    break
                if workers_started and registered == 0 and now - ready_at > d.register_timeout:
                    note = (f"no worker registered with the server within {d.register_timeout} s "
                            f"(can the workers reach {d.server_host}:{d.port} and {d.port + 1}?)")
                    error = "workers"
                    break
                for i, (name, p, wf) in enumerate(procs[1:]):
                    if p.poll() is not None and not retried[i] and parse_race(wlogs[i]):
                        # TLC's server can answer two workers' first module fetches wrongly when
                        # they come at once (seen in CI: "Module-Table lookup failure"); the
                        # worker has not registered, so starting it again loses nothing
                        retried[i] = True
                        wf.close()
                        progress(f"    [{elapsed()}] {name} failed parsing the spec before it "
                                 f"registered (a TLC race between workers); starting it again",
                                 flush=True)
                        procs[1 + i] = launch(i, again=True)
                gone = [(name, p) for name, p, _ in procs[1:] if p.poll() is not None]
                if gone:
                    # a worker ends after the server's "Worker: <uri> Sent: ..." lines (the end of
                    # the run): the server then prints its results and exits
                    ending = "Worker: rmi://" in log.read_text(errors="replace")
                    try:
                        rc = server.wait(timeout=30 if ending else 1)
                        break
                    except subprocess.TimeoutExpired:
                        note = "; ".join(f"{name} exited (status {p.returncode}) before the server "
                                         f"finished" for name, p in gone)
                        error = "workers"
                        break
            if error == "workers" and note:
                f.write(f"\ncheck.py: {note}\n")
        finally:
            if procs and procs[0][1].poll() is None:
                stop(procs[0][1])
            # after a finished run the workers end by themselves (the server told them to)
            grace = time.monotonic() + (5 if error is None else 0)
            while time.monotonic() < grace and any(p.poll() is None for _, p, _ in procs[1:]):
                time.sleep(0.1)
            for _, p, _ in procs[1:]:
                stop(p)
            for _, _, wf in procs[1:]:
                wf.close()
    seconds = time.monotonic() - t0
    out = log.read_text(errors="replace").split("\n", 1)[1]
    shutil.rmtree(states_dir, ignore_errors=True)
    for t in wtmp:
        shutil.rmtree(t, ignore_errors=True)
    rec, perror = parse_tlc(run, out, rc if error is None else -1, seconds, temporal, spec_dir)
    if error is None:
        error = perror
    if error in ("workers", "ports"):
        rec["result"], rec["ok"] = "fail", False
        out += "".join(f"\n{p.name}:\n{tail(p)}" for p in wlogs if p.exists())
    rec["workers"] = len(d.workers) * d.threads if d.threads else None
    rec["distributed"] = list(d.workers)
    return rec | {"_out": out, "_error": error, "_log": str(log)}
