"""The guest library (qemu-cxl/guest/aptacxl.c) against the memory-server daemon, on the host
(no QEMU): the library and its driver (qemu-cxl/guest/aptadrv.c) are built natively into
build/qemu-cxl/guestlib/, the daemon runs on a rack directory (qemu-cxl/harness.py's Rack),
and three driver processes (harness.Driver) play guests 0..2, each on its own mmap'ed guest file exactly as QEMU
guests would on their CXL region. Needs build/rtl/msemu (`make rtl`); the daemon is built by the
`exe` fixture (tests/conftest.py)."""
from __future__ import annotations

import json
import os
import select
import sys
import time

import pytest

from apta.qemu.harness import GUESTLIB_OUT as OUT
from apta.qemu.harness import PARAMS_PATH, Driver, Rack, build_driver, content

OBJS = {1: 8, 2: 4, 3: 8}     # obj -> size in lines (the memory server allocates the storage)


# this module's own `world` (driver processes as guests), not conftest's runner world
@pytest.fixture
def world(exe, schema, tmp_path):
    drv = build_driver()
    rack = Rack(exe, schema, tmp_path)
    drivers: list[Driver] = []
    try:
        for o, size in OBJS.items():
            rack.register(o, size, content(o, 0, size))
        drivers += [Driver(drv, rack.path, g) for g in range(3)]
        for g in rack.guests:
            g.alive = False                  # the drivers heartbeat now (library helper thread)
        for d in drivers:                    # every life starts with Rejoin (RINGS.md)
            assert d.ok("rejoin")["epoch"] == 1
        yield rack, drivers, drv
    finally:
        for d in drivers:
            d.close()
        log = rack.close()
        sys.stderr.write(log[-2000:])
    assert rack.proc.returncode == 0, log


def test_get_put_cache_invalidate(world):
    rack, (d0, d1, d2), _ = world
    a = d0.ok("get 1 8")
    assert (a["ver"], a["cached"]) == (0, 0)
    assert d0.ok("get 1 8")["cached"] == 1                      # served from the copy
    assert d1.ok("get 2 4")["ver"] == 0
    assert d2.ok("get 1 8")["ver"] == 0
    assert rack.server(0, "1")["caches"] == ["1"]
    # guest 1 puts object 1: guests 0 and 2 hold copies, are snooped, ack, drop the copy
    p = d1.ok("put 1 8 5")
    assert p["ver"] == 5
    deadline = time.time() + 5
    while True:                                                  # before the acks: pending in the API
        s0 = rack.server(0, "1")
        if s0["pending"]:
            assert s0["pendingFor"] == {"1": 1} and not s0["schedulableFor"]
            break
        if time.time() > deadline:
            pytest.fail("guest 0 never showed a pending ack for object 1")
        time.sleep(0.01)
    assert d0.ok("cached 1")["line"].endswith(" 0")             # the poll drops the copy and acks
    deadline = time.time() + 5
    while rack.server(0)["pending"]:
        assert time.time() < deadline, "the ack did not clear the pending state"
        time.sleep(0.01)
    s0 = rack.server(0, "1")
    assert s0["schedulable"] and s0["schedulableFor"] and s0["caches"] == []
    g = d0.ok("get 1 8")                                         # the new version, fetched again
    assert (g["ver"], g["cached"]) == (5, 0)
    g = d2.ok("get 1 8")                                         # guest 2 acks inside its get
    assert (g["ver"], g["cached"]) == (5, 0)
    assert d1.ok("get 1 8")["cached"] == 1                      # the writer keeps its new version
    code, ans = rack.api("GET", "/v1/objects/1")
    assert code == 200 and ans["version"] == 1 and ans["pending"] == {} and set(ans["sharers"]) == {"cs0", "cs1", "cs2"}
    # puts from all three on the same object; every get sees one whole, newest committed version
    for v in range(6, 12):
        d = (d0, d1, d2)[v % 3]
        d.ok(f"put 1 8 {v}")
        for r in (d0, d1, d2):
            assert r.ok("get 1 8")["ver"] == v
    # errors: an unknown object (ObjErr unknownObj = 4), a size over linesPerObject
    e = d0.cmd("get 77 8")
    assert not e["ok"] and e["rc"] == -3 and e["code"] == 4
    e = d0.cmd("put 77 8 1")
    assert not e["ok"] and e["rc"] == -3 and e["code"] == 4
    max_lines = json.loads(PARAMS_PATH.read_text())["linesPerObject"]
    assert d0.cmd(f"get 1 {max_lines + 1}")["rc"] == -4                # ACX_EARG: beyond linesPerObject
    st = d2.ok("stats")
    assert st["acks"] >= 1 and st["refusals"] == 0 and st["timeouts"] == 0
    assert rack.api("GET", "/v1/status")[1]["servers"][2]["schedulable"]


def _answer(d: Driver, timeout: float) -> str | None:
    """The driver's answer line within `timeout` s, or None (its get is still waiting)."""
    r, _, _ = select.select([d.p.stdout], [], [], timeout)
    return d.p.stdout.readline().strip() if r else None


def test_versioned_get_waits_for_its_commit(world):
    """acx_get_v: a get naming commit 1 of object 1 waits (held by the memory server) until
    guest 1's put commits, then returns that put's data; a cached copy whose version is not known to
    be at least the one named is a miss (guest 0's unversioned copy does not answer a get of
    version 1), a copy from a get of version 1 answers a later get of version 1; a get naming a
    version already committed is served at once."""
    rack, (d0, d1, d2), _ = world
    assert d0.ok("get 1 8")["ver"] == 0                          # a copy of version 0
    d0.p.stdin.write("getv 1 8 1\n")
    d0.p.stdin.flush()
    assert _answer(d0, 0.5) is None, "served before version 1 was committed (from the old copy?)"
    assert d1.ok("put 1 8 5")["ver"] == 5
    line = _answer(d0, 10)
    assert line and line.startswith("OK getv obj=1 ver=5 cached=0"), line
    a = d2.ok("getv 1 8 1")                                       # committed: at once
    assert (a["ver"], a["cached"]) == (5, 0), a
    assert d2.ok("getv 1 8 1")["cached"] == 1                     # its copy is at least version 1
    d2.p.stdin.write("getv 1 8 2\n")
    d2.p.stdin.flush()
    assert _answer(d2, 0.3) is None
    d1.ok("put 1 8 6")
    line = _answer(d2, 10)
    assert line and line.startswith("OK getv obj=1 ver=6"), line
    assert d0.ok("getv 1 8 2")["ver"] == 6                        # its copy was invalidated by the commit


def test_versioned_get_retries_a_full_hold_table_and_fails_cancelled(world, schema):
    """Guest 2's life is played by raw flits here: it fills the memory server's hold table
    (holdSlots gets of versions nobody writes); guest 0's versioned get is answered GetRetry and
    the library resends it after a back-off until an entry frees (the control plane cancels the
    filler objects), then it is held and served by guest 1's commit. A get whose version the
    control plane cancels fails with ACX_ECANCELLED (-7), the filler gets with GetCancelled."""
    rack, (d0, d1, d2), _ = world
    d2.close()
    slots = json.loads(PARAMS_PATH.read_text())["holdSlots"]
    g2 = rack.guests[2]
    g2.alive = True
    g2.epoch = rack.server(2)["epoch"]
    for o in range(50, 50 + slots):                               # held: never registered, version 0
        g2.send("ObjGet", obj=o, version=1)
    time.sleep(0.2)
    d0.p.stdin.write("getv 2 4 1\n")
    d0.p.stdin.flush()
    time.sleep(0.5)
    for o in range(50, 50 + slots):
        assert rack.api("POST", "/v1/cancel", {"object": str(o), "version": 1})[0] == 200
    assert _answer(d0, 0.5) is None                               # now held (its resend found a free entry)
    d1.ok("put 2 4 3")
    line = _answer(d0, 10)
    assert line and line.startswith("OK getv obj=2 ver=3"), line
    st = d0.ok("stats")
    assert st["get_retries"] >= 1, st
    got = g2.recv(slots)
    assert sorted(f["obj"] for n, f in got if n == "GetCancelled") == list(range(50, 50 + slots)), got
    d0.p.stdin.write("getv 3 8 1\n")
    d0.p.stdin.flush()
    assert _answer(d0, 0.3) is None
    assert rack.api("POST", "/v1/cancel", {"object": "3", "version": 1})[0] == 200
    line = _answer(d0, 10)
    assert line == "ERR getv obj=3 rc=-7 code=0", line
    assert d0.ok("stats")["cancelled"] == 1


def test_put_retry_under_contention(world):
    """Three writers, two staging slots: PutRetry happens and every put still commits (same txn)."""
    rack, drivers, _ = world
    for d, o in zip(drivers, (1, 3, 2)):
        d.p.stdin.write(f"bench put {o} {OBJS[o]} 1.0\n")
        d.p.stdin.flush()
    res = []
    for d in drivers:
        select.select([d.p.stdout], [], [], 20)
        res.append(d.p.stdout.readline())
    for line in res:
        assert line.startswith("OK bench put") and " errs=0 " in line, res
    for d in drivers:
        for o, n in OBJS.items():
            assert d.ok(f"getnc {o} {n}")["ver"] >= 1000


def test_killed_guest_is_fenced_and_rejoins(world, tmp_path):
    rack, drivers, drv = world
    d0, d1, d2 = drivers
    assert d2.ok("get 2 4")["ver"] == 0                          # guest 2 holds a copy of object 2
    d2.kill()                                                    # stops heartbeating, owes nothing yet
    t0 = time.time()
    d0.ok("put 2 4 7")                                           # snoops guest 2: it can never ack
    while not rack.server(2)["fenced"]:
        assert time.time() - t0 < 6, "not fenced after the lease"
        time.sleep(0.02)
    fenced_after = time.time() - t0
    assert not rack.server(2)["live"] and rack.server(2)["epoch"] == 1
    assert rack.server(0)["schedulable"] and rack.server(1)["schedulable"]
    assert d1.ok("get 2 4")["ver"] == 7 and d0.ok("put 2 4 8")["ver"] == 8
    d2 = drivers[2] = Driver(drv, rack.path, 2)                  # restarted: a new life rejoins
    assert d2.ok("rejoin")["epoch"] == 2
    s = rack.server(2)
    assert (s["fenced"], s["epoch"], s["live"], s["schedulable"]) == (False, 2, True, True)
    assert d2.ok("get 2 4")["ver"] == 8
    d1.ok("put 2 4 9")
    assert d2.ok("get 2 4")["ver"] == 9
    log = rack.log.read_text()
    assert "fence: guest 2 epoch 1 (heartbeat lease expired)" in log and "rejoin: guest 2 in epoch 2" in log
    print(f"fenced {fenced_after:.2f} s after the kill (lease 1.5 s)")


def test_latency_and_throughput(world):
    """Functional-emulation figures on the host (no QEMU): one guest at a time, uncached gets and
    puts of 8-line objects -> build/qemu-cxl/guestlib/bench.txt."""
    rack, (d0, d1, d2), _ = world
    secs = os.environ.get("APTA_GUESTLIB_BENCH_S", "1.0")
    lines = [d0.ok(f"bench get 1 8 {secs}", timeout=30)["line"], d0.ok(f"bench get 2 4 {secs}", timeout=30)["line"],
             d0.ok(f"bench put 1 8 {secs}", timeout=30)["line"], d0.ok(f"bench put 2 4 {secs}", timeout=30)["line"]]
    for l in lines:
        assert " errs=0 " in l and "ops=0 " not in l, l
    (OUT / "bench.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
