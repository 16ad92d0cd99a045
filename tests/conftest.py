"""Fixtures shared by several test modules (pytest finds them here; no test module imports another).

Each section is one component's; add yours under its own heading."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


# ---- scheduling: make test's lanes run pytest-xdist over both cores ------------------------------

def pytest_collection_modifyitems(config, items):
    """In a pytest-xdist worker (--dist loadfile hands out whole modules), the slowest modules
    first, by their wall time in the run of record (docs/results/test-profile.json): a long
    module started last would leave one core idle while it finishes. Modules it does not list keep
    their order after those it does. Every worker reads the same file, so all collect one order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rec = Path(config.rootpath) / "docs" / "results" / "test-profile.json"
    try:
        wall: dict[str, float] = {}
        for m in json.loads(rec.read_text())["data"]["pytest_modules"]:
            wall[m["name"]] = max(wall.get(m["name"], 0.0), float(m["wall_s"]))
    except (OSError, ValueError, KeyError, TypeError):
        return                                   # no usable record: collection order
    items.sort(key=lambda it: -wall.get(it.nodeid.split("::", 1)[0], 0.0))


# ---- CXL emulation: the memory-server daemon, the function runners, QEMU clusters ---------------
# (qemu-cxl/harness.py holds the stand-ins themselves, shared with qemu-cxl/bench.py; used by
# test_daemon, test_guestlib, test_runner, test_executor, test_sched_daemon, test_qemu_cxl and
# test_qemu_workflows)

def need_rtl():
    """The daemon's RTL variant must be built: skipped without it, failed under APTA_RTL=1."""
    from apta.qemu import harness
    missing = harness.rtl_missing()
    if missing:
        if os.environ.get("APTA_RTL") == "1":
            pytest.fail(missing)
        pytest.skip(missing)


@pytest.fixture(scope="module")
def exe():
    """The memory-server daemon, built (make -C qemu-cxl/daemon)."""
    need_rtl()
    from apta.qemu import harness
    return harness.build_daemon()


@pytest.fixture(scope="module")
def schema():
    """The message schema with the daemon's variant's parameters."""
    need_rtl()
    from apta.qemu import harness
    return harness.load_schema()


@pytest.fixture(scope="module")
def runner_exe(exe):
    """The host build of the function runner (aptarun-host) and the workloads' host builds."""
    from apta.qemu import harness
    return harness.build_runner(harness.RUNNER)


@pytest.fixture
def world(runner_exe, exe, schema, tmp_path, request):
    """A daemon on a fresh region and three runner processes as guests 0..2 (boot 0, epoch 1).
    The API as deployed: TLS with the test CA and a bearer token per role (rack.auth,
    qemu-cxl/apiauth.py). A module may set WORLD_LEASE_MS (test_sched_daemon.py: a pending ack
    must outlive a scheduling) and WORLD_RUNNER_TIMEOUT_MS (the runners' per-request timeout); indirect parametrization may add daemon arguments ({"extra":
    [...]}: a mutant)."""
    from apta.qemu import apiauth
    from apta.qemu import harness
    rack = harness.Rack(exe, schema, tmp_path, lease_ms=getattr(request.module, "WORLD_LEASE_MS", harness.LEASE_MS),
                        extra=getattr(request, "param", {}).get("extra"), data_bytes=harness.WORLD_DATA_BYTES,
                        auth=apiauth.ApiAuth(tmp_path / "auth"))
    w = harness.World(rack, runner_exe, tmp_path, getattr(request.module, "WORLD_RUNNER_TIMEOUT_MS", None))
    try:
        for g in rack.guests:
            g.alive = False                      # the runners heartbeat (library thread)
        for g in range(3):
            w.start(g, 0)
        yield w
    finally:
        w.close()
        log = rack.close()
        sys.stderr.write(log[-2000:])
        for g in range(3):
            p = tmp_path / f"runner{g}.log"
            if p.exists():
                sys.stderr.write(p.read_text()[-1500:])
    assert rack.proc.returncode == 0, log


@pytest.fixture(scope="session")
def qemu_clusters():
    """QEMU clusters a fixture keeps running (test_qemu_cxl's probe cluster): a test that boots
    its own guests stops these first, never two clusters at once on 2 cores."""
    return []


# ---- the simulator ----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def sim() -> Path:
    """apta-sim (sim/), built when missing or older than its sources."""
    root = Path(__file__).resolve().parent.parent
    simdir, build = root / "sim", root / "build" / "simulator"
    binary = build / "apta-sim"
    srcs = [simdir / "CMakeLists.txt", *sorted((simdir / "src").iterdir())]
    if not binary.exists() or binary.stat().st_mtime < max(s.stat().st_mtime for s in srcs):
        subprocess.run(["nice", "-n", "10", "cmake", "-S", str(simdir), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["nice", "-n", "10", "cmake", "--build", str(build), "-j2"], check=True, stdout=subprocess.DEVNULL)
    return binary
