"""The memory-server daemon's command line (qemu-cxl/daemon/options.cpp, CLI11): every option's
value is checked before anything is opened. A bad value, an unknown option, a missing value or
an option given twice stops it with exit status 2 and one stderr line naming the option (and the
value); good options still start it.

The bad cases name a rack that does not exist, so a daemon that took a bad value would not
start either but exit 1 (no server file), never 2: the test fails fast instead of hanging.
Every process is run with a timeout (subprocess.run kills it then) or killed in a finally."""
from __future__ import annotations

import json
import subprocess
import time
import urllib.request

import pytest

from apta.qemu.harness import DATA_BYTES, LAY, free_port, kill_proc, make_rack

NOWHERE = "nowhere/server.mem"     # relative to tmp_path: never created

# (the arguments after --file NOWHERE --init, the option the message must name, the value it must quote)
BAD = {
    "lease-ms not a number": (["--lease-ms", "abc"], "--lease-ms", "abc"),
    "lease-ms negative": (["--lease-ms", "-1"], "--lease-ms", "-1"),
    "lease-ms zero": (["--lease-ms", "0"], "--lease-ms", "0"),
    "lease-ms trailing garbage": (["--lease-ms", "500ms"], "--lease-ms", "500ms"),
    "lease-ms float": (["--lease-ms", "1e3"], "--lease-ms", "1e3"),
    "lease-ms hex": (["--lease-ms", "0x10"], "--lease-ms", "0x10"),
    "lease-ms space": (["--lease-ms", " 500"], "--lease-ms", " 500"),
    "lease-ms empty": (["--lease-ms", ""], "--lease-ms", ""),
    "lease-ms over a day": (["--lease-ms", "86400001"], "--lease-ms", "86400001"),
    "lease-ms past 64 bits": (["--lease-ms", "18446744073709551617"], "--lease-ms", "18446744073709551617"),
    "port not a number": (["--port", "abc"], "--port", "abc"),
    "port trailing garbage": (["--port", "7660x"], "--port", "7660x"),
    "port out of range": (["--port", "70000"], "--port", "70000"),
    "port zero": (["--port", "0"], "--port", "0"),
    "port negative": (["--port", "-1"], "--port", "-1"),
    "port as --port=": (["--port=7660x"], "--port", "7660x"),
    "slots not a power of two": (["--slots", "100"], "--slots", "100"),
    "slots too many": (["--slots", "2048"], "--slots", "2048"),
    "slots hex": (["--slots", "0x100"], "--slots", "0x100"),
    "rejoin-rate negative": (["--rejoin-rate", "-1"], "--rejoin-rate", "-1"),
    "rejoin-rate nan": (["--rejoin-rate", "nan"], "--rejoin-rate", "nan"),
    "rejoin-rate trailing garbage": (["--rejoin-rate", "1/s"], "--rejoin-rate", "1/s"),
    "rejoin-burst zero": (["--rejoin-burst", "0"], "--rejoin-burst", "0"),
    "rejoin-burst too large": (["--rejoin-burst", "1e9"], "--rejoin-burst", "1e9"),
    "names too few": (["--names", "a,b"], "--names", "a,b"),
    "names empty name": (["--names", "a,,c"], "--names", "a,,c"),
    "names twice the same": (["--names", "a,b,a"], "--names", "a,b,a"),
    "names with a slash": (["--names", "a,b/c,d"], "--names", "a,b/c,d"),
    "mutant unknown": (["--mutant", "nope"], "--mutant", "nope"),
    "guest-file without %u": (["--guest-file", "g%s.mem"], "--guest-file", "g%s.mem"),
    "qemu-pidfile two %u": (["--qemu-pidfile", "q%u-%u.pid"], "--qemu-pidfile", "q%u-%u.pid"),
    "token-file empty path": (["--port", "7660", "--token-file", ""], "--token-file", ""),
    "trace-log empty path": (["--trace-log", ""], "--trace-log", ""),
    "unknown option": (["--lease", "500"], "--lease", None),
    "unknown short option": (["-p", "7660"], "-p", None),
    "positional argument": (["stray"], "stray", None),
    "missing value at the end": (["--port"], "--port", None),
    "option taken for a value": (["--lease-ms", "--stats"], "--lease-ms", None),
    "option given twice": (["--port", "7660", "--port", "7661"], "--port", None),
    "flag with a value": (["--stats=false"], "--stats", None),
    "slots without init": (None, "--slots", None),
    "missing file": (None, "--file", None),
}


def _run(exe, *args, timeout=20):
    return subprocess.run([str(exe), *map(str, args)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("case", list(BAD))
def test_bad_command_line_exits_2_naming_the_option(exe, tmp_path, case):
    args, option, value = BAD[case]
    nowhere = tmp_path / NOWHERE
    if case == "slots without init":
        argv = ["--file", nowhere, "--slots", "256"]
    elif case == "missing file":
        argv = ["--init", "--port", "7660"]
    else:
        argv = ["--file", nowhere, "--init", *args]
    r = _run(exe, *argv)
    assert r.returncode == 2, (argv, r.returncode, r.stderr)
    assert option in r.stderr, (argv, r.stderr)
    if value is not None:
        assert f'"{value}"' in r.stderr, (argv, r.stderr)         # the value, quoted as given
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("apta-memd: "), r.stderr  # one clear line
    assert not nowhere.parent.exists()


def test_help_lists_every_option(exe):
    r = _run(exe, "--help")
    assert r.returncode == 0, r.stderr
    for o in ("--file", "--guest-file", "--init", "--slots", "--port", "--token-file", "--tls-cert-file",
              "--tls-private-key-file", "--client-ca-file", "--lease-ms", "--rejoin-rate", "--rejoin-burst",
              "--names", "--stats", "--trace", "--trace-log", "--qemu-pidfile", "--mutant"):
        assert o in r.stdout, (o, r.stdout)


@pytest.mark.parametrize("form", ["spaced", "equals"])
def test_good_options_start(exe, tmp_path, form):
    """Every value option with a good value (the limits included): the daemon serves, the API
    answers with the names given, the lease is the one given; then SIGTERM stops it (exit 0)."""
    rack = tmp_path / "rack"
    make_rack(rack, 3, DATA_BYTES)
    port = free_port()
    opts = {"--file": LAY.server_path(rack), "--guest-file": rack / "guest%u.mem", "--slots": 256, "--port": port,
            "--lease-ms": 86400000, "--rejoin-rate": "0.5", "--rejoin-burst": "1e6", "--names": "w-0,w.1,W_2",
            "--qemu-pidfile": tmp_path / "q%u.pid", "--mutant": "commit-waits-for-acks"}
    argv = ["--init", "--stats"]
    for k, v in opts.items():
        argv += [f"{k}={v}"] if form == "equals" else [k, str(v)]
    p = subprocess.Popen([str(exe), *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        err, deadline = "", time.time() + 30
        while "serving" not in err:
            assert time.time() < deadline and p.poll() is None, err
            err += p.stderr.readline()
        assert "256 ring slots" in err and "lease 86400000 ms" in err, err
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/status", timeout=10) as resp:
            ans = json.load(resp)
        assert [s["name"] for s in ans["servers"]] == ["w-0", "w.1", "W_2"], ans
        p.terminate()
        rest = p.communicate(timeout=20)[1]
        assert p.returncode == 0, err + rest
        assert "stats:" in rest, rest
    finally:
        kill_proc(p)
        if p.stderr:
            p.stderr.close()


def test_port_limits_and_rejoin_rate_zero(exe, tmp_path):
    """The edges of the ranges are accepted: --port 65535 (may be taken: then exit 1, not 2),
    --lease-ms 1, --rejoin-rate 0 (no limit), --rejoin-burst 1."""
    rack = tmp_path / "rack"
    make_rack(rack, 3, DATA_BYTES)
    p = subprocess.Popen([str(exe), "--file", str(LAY.server_path(rack)), "--init", "--port", "65535", "--lease-ms", "1",
                          "--rejoin-rate", "0", "--rejoin-burst", "1"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        err, deadline = "", time.time() + 30
        while "serving" not in err:
            assert time.time() < deadline, err
            if p.poll() is not None:
                err += p.stderr.read()
                assert p.returncode == 1 and "cannot listen" in err, err   # the port is someone else's
                return
            err += p.stderr.readline()
        assert "lease 1 ms" in err, err
        p.terminate()
        assert p.wait(timeout=20) == 0
    finally:
        kill_proc(p)
        if p.stderr:
            p.stderr.close()
