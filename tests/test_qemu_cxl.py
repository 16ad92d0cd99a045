"""QEMU CXL emulation smoke (per-guest memory): 3 TCG guests, each
with its own CXL type-3 memory backed by its own file of the rack directory (qemu-cxl/RINGS.md).

Each guest boots the image of qemu-cxl/image.py, creates its CXL region, maps it through /dev/mem
and runs qemu-cxl/guest/probe.c, which writes the guest's pattern into its own control block
(RINGS.md) and reads it back every beat. Checked: no guest ever sees another's writes there
(`PROBE ALONE others=0`); the host sees each pattern in that guest's file only, beating; a guest
whose QEMU process is SIGKILLed stops beating, reboots (boot 1) and writes its new pattern while the
others stay at boot 0; every QEMU process started is gone at the end, whatever failed (fixture
finalizer, PDEATHSIG, atexit).

test_guestlib_in_guests_with_daemon: the guest library's driver
(qemu-cxl/guest/aptadrv.c, static) in 3 guests served by the memory-server daemon on the run's
rack directory; a guest killed mid-run is fenced, reboots and rejoins while the others keep working.

test_guest_cannot_reach_another_guest_or_the_data_area: guest A forges the ack and the
Rejoin of guest B in its own ring and writes a marker over every line of its whole CXL memory;
B's file, B's pending ack, epoch and lease, the data area and the object map are unchanged, the
forgeries are refused (wrongPort), A's own broken ring gets A fenced. Negative control: A rebooted
onto B's file (launch.py shared_with, the old shared region) and the same sweep does reach B.

Runs when APTA_QEMU=1 (`make test`, `make test-qemu`); then a failing image build (e.g. a Debian
package missing from the mirrors) fails the test with the builder's message instead of skipping.
Cost: ~10 s CPU and ~330 MB per guest, 3 guests at most at once (each later test stops the earlier
clusters first); about 2.5 min wall for the module on 2 cores.
"""
import hashlib
import json
import os
import re
import struct
import threading
import time

import pytest

from apta.qemu import jobs
from apta.qemu import launch
from apta.qemu.harness import LAY, Guest, Serving, build_driver, content

N = 3
MAGIC = 0x3142525041545041  # "APTAPRB1" (probe.c)
MARKER = b"APTAEVIL"        # aptadrv.c's sweep marker

pytestmark = pytest.mark.skipif(os.environ.get("APTA_QEMU") != "1",
                                reason="QEMU CXL guests: set APTA_QEMU=1 (make test / make test-qemu)")


def ctl(rack, g):
    """Guest g's control block (with the probe's pattern in bytes 16..47) as the host reads it
    from guest g's own file."""
    with open(LAY.guest_path(rack, g), "rb") as f:
        f.seek(LAY.ctl("heartbeat"))
        hb, epoch, state, magic, index, boot, counter = struct.unpack("<QIIQQQQ", f.read(48))
    return dict(heartbeat=hb, epoch=epoch, state=state, magic=magic, index=index, boot=boot, counter=counter)


def test_probe_pattern_fits_the_control_block():
    """probe.c keeps its pattern in control-block bytes 16..47 (its offsets come from apta_layout.h)."""
    c = LAY.raw["guest_area"]["control"]
    assert c["bytes"] >= 48 and max(f["offset"] for f in c["fields"]) < 16


@pytest.fixture(scope="module")
def cluster(request, qemu_clusters):
    try:
        c = launch.Cluster(run="pytest", n=N, script="/apta/probe run $APTA_GUEST {n}", hold=True)
    except SystemExit as e:  # image.py exits with a message when a Debian package is missing
        pytest.fail(f"QEMU guest image could not be built: {e}")
    qemu_clusters.append(c)

    def finalize():
        c.stop_all()
        launch.stop_everything()
        left = [pid for pid in c.all_pids_ever() if launch.pid_alive(pid)]
        summary = {"run": c.run, "pids": c.all_pids_ever(), "left_alive": left,
                   "boot_wall_s": {g.g: g.boot_wall for g in c.guests},
                   "usage": {g.g: g.usage for g in c.guests}}
        (c.dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        assert not left, f"QEMU processes still alive after the test: {left}"
    request.addfinalizer(finalize)
    for g in range(N):
        c.start(g)
    for g in range(N):
        c.wait_ready(g, timeout=240)
    return c


def test_each_guest_alone_in_its_memory_and_host_sees_it(cluster):
    c = cluster
    for g in range(N):
        r = c.guests[g].ready
        assert r["size"] == c.region_bytes, r
        c.wait_for(g, rb"PROBE ALONE g=%d n=%d boot=0 others=0" % (g, N), timeout=120)
    for g in range(N):
        text = c.console(g)
        assert b"PROBE MAPPED" in text and b"PROBE OTHER" not in text, text.decode(errors="replace")
    before = [ctl(c.rack, g) for g in range(N)]
    for g in range(N):
        b = before[g]
        assert b["magic"] == MAGIC and b["index"] == g and b["boot"] == 0 and b["state"] == 2, b
        t_end = time.monotonic() + 15
        while True:  # alive: the host sees the guest's beat counter and heartbeat move in its file
            a = ctl(c.rack, g)
            if a["counter"] > b["counter"] and a["heartbeat"] != b["heartbeat"]:
                break
            assert time.monotonic() < t_end, (g, b, a)
            time.sleep(0.2)


def test_killed_guest_reboots_and_rejoins(cluster):
    c = cluster
    victim = 1
    c.wait_for(victim, rb"PROBE ALONE g=%d n=%d boot=0" % (victim, N), timeout=120)
    pid = c.kill(victim)
    assert not launch.pid_alive(pid)
    frozen = ctl(c.rack, victim)
    time.sleep(1.0)
    assert ctl(c.rack, victim)["counter"] == frozen["counter"], "a killed guest's counter still moves"
    others = {g: ctl(c.rack, g)["counter"] for g in range(N) if g != victim}
    c.restart(victim)
    r = c.wait_ready(victim, timeout=240)
    assert r["size"] == c.region_bytes
    c.wait_for(victim, rb"PROBE ALONE g=%d n=%d boot=1 others=0" % (victim, N), timeout=120)
    now = ctl(c.rack, victim)
    assert now["magic"] == MAGIC and now["index"] == victim and now["boot"] == 1 and now["state"] == 2, now
    for g in others:
        a = ctl(c.rack, g)
        assert a["boot"] == 0 and a["counter"] > others[g], a  # the survivors kept beating, never restarted
    assert len(c.guests[victim].boot_wall) == 2


# ---- the guest library in 3 guests, served by the memory-server daemon ----------------------------
def test_guestlib_in_guests_with_daemon(request, exe, schema, qemu_clusters):
    """qemu-cxl/guest/aptadrv.c (static, over aptacxl.c) in 3 guests; the daemon serves the guests'
    files. Guest g puts object 10+g (versions 1, 2, ...) and gets objects 10..12, checking
    every reply is one whole version and never older than the last one it saw. Guest 1's QEMU is
    SIGKILLed mid-run: the others' gets and puts keep completing, it is fenced (lease), reboots and
    rejoins in epoch 2. The probe is not in these guests (it writes control-block bytes 16..47)."""
    for pc in qemu_clusters:                # never two clusters at once on 2 cores
        pc.stop_all()
    drv = build_driver(static=True)
    secs = 150
    c = launch.Cluster(run="pytest-guestlib", n=N, script=f"/apta/aptadrv $APTA_GUEST loop 10 {N} 8 {secs}",
                       files=[(drv, "aptadrv")], hold=True)

    lease_ms = 2000
    d = Serving(exe, schema, c.rack, c.dir / "daemon.log", lease_ms)

    def finalize():
        c.stop_all()
        d.close()
        left = [pid for pid in c.all_pids_ever() if launch.pid_alive(pid)]
        assert not left, f"QEMU processes still alive after the test: {left}"
        assert d.proc.poll() is not None
    request.addfinalizer(finalize)
    for k in range(N):
        o = 10 + k
        d.register(o, 8, content(o, 0, 8))
    for g in range(N):
        c.start(g)
    for g in range(N):
        c.wait_ready(g, timeout=240)
    for g in range(N):
        c.wait_for(g, rb"DRV JOINED g=%d epoch=1" % g, timeout=60)
    for g in range(N):                       # every guest sees every other guest's puts
        for h in range(N):
            if h != g:
                c.wait_for(g, rb"DRV SEE g=%d obj=%d ver=[1-9]" % (g, 10 + h), timeout=60)

    def progress(g):
        m = re.findall(rb"DRV PROGRESS g=%d epoch=(\d+) v0=(-?\d+) v1=(-?\d+) v2=(-?\d+) puts=(\d+) gets=(\d+) "
                       rb"errs=(\d+) bad=(\d+) put_us=(\d+) get_us=(\d+)" % g, c.console(g))
        return [int(x) for x in m[-1]] if m else None

    victim = 1
    c.wait_for(victim, rb"DRV PROGRESS g=%d" % victim, timeout=60)
    c.kill(victim)
    t0 = time.time()
    while not d.server(victim)["fenced"]:
        assert time.time() - t0 < lease_ms / 1000 + 10, "the killed guest was not fenced"
        time.sleep(0.05)
    fenced_s = time.time() - t0
    at_fence = {g: progress(g) for g in (0, 2)}
    deadline = time.time() + 60
    while True:                              # the survivors' puts and gets keep completing
        now = {g: progress(g) for g in (0, 2)}
        if all(now[g] and at_fence[g] and now[g][4] > at_fence[g][4] + 2 and now[g][5] > at_fence[g][5] + 2 for g in (0, 2)):
            break
        assert time.time() < deadline, (at_fence, now)
        time.sleep(0.5)
    c.restart(victim)
    c.wait_ready(victim, timeout=240)
    c.wait_for(victim, rb"DRV JOINED g=%d epoch=2" % victim, timeout=60)
    for h in (0, 2):
        c.wait_for(victim, rb"DRV SEE g=%d obj=%d ver=[1-9]" % (victim, 10 + h), timeout=60)
    c.wait_for(victim, rb"DRV PROGRESS g=%d epoch=2" % victim, timeout=60)
    s = d.server(victim)
    assert (s["fenced"], s["epoch"], s["live"]) == (False, 2, True), s
    for g in range(N):
        text = c.console(g, this_boot=False)
        assert b"DRV BAD" not in text, text[-3000:].decode(errors="replace")
        if g != victim:
            assert b"DRV ERR" not in text, text[-3000:].decode(errors="replace")
    final = {g: progress(g) for g in range(N)}
    summary = {"fenced_after_kill_s": round(fenced_s, 2), "lease_ms": lease_ms,
               "progress": {g: dict(zip(["epoch", "v0", "v1", "v2", "puts", "gets", "errs", "bad", "put_us", "get_us"], final[g]))
                            for g in range(N) if final[g]},
               "boot_wall_s": {gu.g: gu.boot_wall for gu in c.guests},
               "note": "functional emulation (TCG guests, /dev/mem UC region, 2 shared cores): loop of put own object + "
                       "get 3 objects (8 lines); put_us/get_us = mean per uncached op in the guest"}
    (c.dir / "guestlib-summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


# ---- per-guest isolation (RINGS.md "Trust model") ------------------------------------------------
def reached(paths) -> dict:
    """{file name: lines carrying the sweep's marker} of those of `paths` the marker reached."""
    out = {}
    for p in paths:
        n = p.read_bytes().count(MARKER)
        if n:
            out[p.name] = n
    return out


def digest(path, start: int, end: int | None = None) -> str:
    with open(path, "rb") as f:
        f.seek(start)
        return hashlib.sha256(f.read() if end is None else f.read(end - start)).hexdigest()


def obj_entry(d, obj: int) -> dict:
    """The daemon's answer for object `obj` (map entry, version, sharers, pending) without `seq`,
    which every state change advances (A's fence is one)."""
    code, ans = d.api("GET", f"/v1/objects/{obj}")
    assert code == 200, ans
    return {k: v for k, v in ans.items() if k != "seq"}


def test_guest_cannot_reach_another_guest_or_the_data_area(request, exe, schema, qemu_clusters):
    """Guest A (QEMU) forges B's ack and B's Rejoin in its own request ring, then writes the marker
    over every 64-byte line of its whole CXL memory (aptadrv.c `attack`). Guest B (QEMU) holds a copy
    of OBJ and owes the ack of a put by guest C (this test, a host process on guest 2's file). After
    the attack: every forgery was refused (wrongPort); B still owes the ack, in the same epoch,
    unfenced and live; the marker is in no file but A's (B's, C's, the server file); the data area
    and object map (server file) and B's rings are byte for byte unchanged; A's own ring ran away and
    got A fenced. Then B acks for real and its pending ack clears (the pending check can move).
    Negative control: A rebooted with B's file as its backing (launch.py shared_with: the old shared
    region) runs the same sweep, and the same check finds the marker in B's file."""
    for pc in qemu_clusters:                # never two clusters at once on 2 cores
        pc.stop_all()
    drv = build_driver(static=True)
    A, B, C, OBJ, NL = 0, 1, 2, 20, 8
    script = (f'if [ "$APTA_GUEST" = {A} ]; then\n'
              f'  if [ "$APTA_BOOT" = 0 ]; then exec /apta/aptadrv {A} attack {B} {OBJ} {NL} 600; fi\n'
              f'  exec /apta/aptadrv {A} sweep 600\n'
              f'fi\n'
              f'exec /apta/aptadrv $APTA_GUEST hold {OBJ} {NL} 600')
    c = launch.Cluster(run="pytest-isolation", n=2, script=script, files=[(drv, "aptadrv")], hold=True)
    qemu_clusters.append(c)
    d = Serving(exe, schema, c.rack, c.dir / "daemon.log", 2000)
    host = jobs.Rack(c.rack)                # the host's side: go signals into the guests' job blocks

    def finalize():
        c.stop_all()
        d.close()
        host.close()
        left = [pid for pid in c.all_pids_ever() if launch.pid_alive(pid)]
        assert not left, f"QEMU processes still alive after the test: {left}"
        assert d.proc.poll() is not None
    request.addfinalizer(finalize)
    gc = Guest(d.r, C)                      # guest C: this process, through guest 2's file only
    d.guests.append(gc)                     # ... heartbeating from the rack's thread
    base = d.register(OBJ, NL, content(OBJ, 1, NL))   # the memory server allocates its storage
    for g in (A, B):
        c.start(g)
    for g in (A, B):
        c.wait_ready(g, timeout=240)
    gc.send("Rejoin")
    (n, f), = gc.recv(1, timeout=10)
    assert n == "RejoinAck", (n, f)
    gc.epoch = f["epoch"]
    c.wait_for(A, rb"DRV ATTACK READY g=%d" % A, timeout=120)
    m = c.wait_for(B, rb"DRV HOLD READY g=%d epoch=(\d+) obj=%d ver=1" % (B, OBJ), timeout=120)
    b_epoch = int(m.group(1))
    new = content(OBJ, 2, NL)
    gc.put(OBJ, txn=1, lines=[int.from_bytes(new[64 * l:64 * (l + 1)], "little") for l in range(NL)])
    c.wait_for(A, rb"DRV ACKED g=%d obj=%d acks=1" % (A, OBJ), timeout=60)
    deadline = time.time() + 10
    while d.r.data(base, NL * 64) != new:   # the OPC drains the commit to DRAM asynchronously
        assert time.time() < deadline, "the put never reached the data area"
        time.sleep(0.05)
    want_b = {"pending": 1, "pendingFor": {str(OBJ): 1}, "fenced": False, "epoch": b_epoch, "live": True}
    s = d.server(B, str(OBJ))
    assert {k: s[k] for k in want_b} == want_b, s
    server, fb, fc = LAY.server_path(c.rack), LAY.guest_path(c.rack, B), LAY.guest_path(c.rack, C)
    before = {"data": digest(server, LAY.data_offset), "b_rings": digest(fb, LAY.ring("request"), LAY.job),
              "obj": obj_entry(d, OBJ)}
    assert not reached([fb, fc, server])
    host.guest(A).set_u64(LAY.job_field("post_seq"), 1)          # go: A forges, then sweeps
    m = c.wait_for(A, rb"DRV FORGED ALL g=%d sent=(\d+) refused=(\d+)" % A, timeout=60)
    assert int(m.group(1)) >= 4 and m.group(1) == m.group(2), c.console(A)[-2000:]
    forged = int(m.group(1))
    m = c.wait_for(A, rb"DRV SWEEP DONE lines=(\d+) bytes=(\d+) ms=(\d+)", timeout=300)
    lines, nbytes, sweep_ms = (int(x) for x in m.groups())
    assert nbytes == c.region_bytes and lines == nbytes // 64
    t0 = time.time()
    while not d.server(A)["fenced"]:                             # A's own ring ran away: A is fenced
        assert time.time() - t0 < 10, "A's broken ring did not get it fenced"
        time.sleep(0.05)
    fence_s = time.time() - t0
    log = d.log.read_text()
    assert f"guest {A} request ring head" in log and f"fence: guest {A}" in log, log[-3000:]
    # A wrote all of its own memory (the daemon and A's heartbeat thread rewrote a few lines since)
    a_lines = reached([LAY.guest_path(c.rack, A)]).get(LAY.guest_path(c.rack, A).name, 0)
    assert a_lines > lines - 64, (a_lines, lines)
    assert reached([fb, fc, server]) == {}
    after = {"data": digest(server, LAY.data_offset), "b_rings": digest(fb, LAY.ring("request"), LAY.job),
             "obj": obj_entry(d, OBJ)}
    assert after == before
    s = d.server(B, str(OBJ))
    assert {k: s[k] for k in want_b} == want_b, s               # the forged ack and Rejoin changed nothing
    log = d.log.read_text()
    assert f"fence: guest {B} epoch {b_epoch}" not in log and f"rejoin: guest {B} in epoch {b_epoch + 1}" not in log
    assert gc.get(OBJ, NL) == [int.from_bytes(new[64 * l:64 * (l + 1)], "little") for l in range(NL)]
    host.guest(B).set_u64(LAY.job_field("post_seq"), 1)          # go: B acks for real, gets again
    c.wait_for(B, rb"DRV HOLD DONE g=%d epoch=%d acks=1 rc=0 ver=2" % (B, b_epoch), timeout=60)
    t0 = time.time()
    while d.server(B)["pending"]:
        assert time.time() - t0 < 10, "B's own ack did not clear its pending state"
        time.sleep(0.05)
    # negative control: the old shared region (A's device backed by B's file) lets the same sweep in
    c.kill(A)
    c.shared_with[A] = B
    c.restart(A)
    c.wait_ready(A, timeout=240)
    c.wait_for(A, rb"DRV SWEEP DONE", timeout=300)
    hit = reached([fb])
    assert hit.get(fb.name, 0) > lines - 64, hit
    summary = {"forged_refused": forged, "sweep_lines": lines, "sweep_bytes": nbytes, "sweep_ms_in_guest": sweep_ms,
               "fenced_within_s_of_sweep_done": round(fence_s, 2), "marker_lines_in_other_files": 0,
               "negative_control_lines_in_B": hit.get(fb.name, 0),
               "boot_wall_s": {gu.g: gu.boot_wall for gu in c.guests}}
    (c.dir / "isolation-summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))
