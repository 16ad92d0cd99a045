"""QEMU CXL emulation smoke (issue 8, part 1): 3 TCG guests share one CXL type-3 region.

Each guest boots the image of qemu-cxl/image.py, creates its CXL region, maps it through /dev/mem
and runs qemu-cxl/guest/probe.c, which writes the guest's pattern into its control block
(qemu-cxl/RINGS.md: 4 KiB + g MiB) and watches the others'. Checked: every guest sees every
other's pattern; the host sees all of them in the backing file at the RINGS.md offsets; a guest
whose QEMU process is SIGKILLed goes stale for the others, reboots, rejoins (boot 1) and sees the
others' live data while they see its new pattern; every QEMU process started is gone at the end,
whatever failed (fixture finalizer, PDEATHSIG, atexit).

test_guestlib_in_guests_with_daemon (issue 8, part 2): the guest library's driver
(qemu-cxl/guest/aptadrv.c, static) in 3 guests served by the memory-server daemon on the run's
cxl.mem; a guest killed mid-run is fenced, reboots and rejoins while the others keep working.

Runs when APTA_QEMU=1 (`make test`, `make test-qemu`); then a failing image build (e.g. a Debian
package missing from the mirrors) fails the test with the builder's message instead of skipping.
Cost: ~10 s CPU and ~330 MB per guest, 3 guests at most at once (the library test stops the probe
cluster first); about 1.5 min wall for the module on 2 cores.
"""
import json
import os
import re
import struct
import time

import pytest

from apta import layout

import launch
from harness import Serving, build_driver, content

N = 3
AREA0, AREA = 4096, 1 << 20
MAGIC = 0x3142525041545041  # "APTAPRB1"

pytestmark = pytest.mark.skipif(os.environ.get("APTA_QEMU") != "1",
                                reason="QEMU CXL guests: set APTA_QEMU=1 (make test / make test-qemu)")


def test_probe_offsets_match_layout():
    """probe.c and this test hard-code the RINGS.md guest-area offsets; schema/layout.json is the source."""
    ga = json.loads(layout.LAYOUT_PATH.read_text())["guest_area"]
    assert (ga["offset"], ga["stride"], ga["control"]["offset"], ga["control"]["bytes"]) == (AREA0, AREA, 0, 64)
    fields = {f["name"]: f["offset"] for f in ga["control"]["fields"]}
    assert fields["heartbeat"] == 0 and fields["epoch"] == 8 and fields["state"] == 12
    assert max(fields.values()) < 16  # the probe's pattern (bytes 16..47) is still unused


def ctl(path, g):
    """Guest g's control block as read by the host from the backing file."""
    with open(path, "rb") as f:
        f.seek(AREA0 + g * AREA)
        hb, epoch, state, magic, index, boot, counter = struct.unpack("<QIIQQQQ", f.read(48))
    return dict(heartbeat=hb, epoch=epoch, state=state, magic=magic, index=index, boot=boot, counter=counter)


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


def test_guests_see_each_other_and_host_sees_them(cluster):
    c = cluster
    for g in range(N):
        r = c.guests[g].ready
        assert r["size"] == c.region_bytes, r
        c.wait_for(g, rb"PROBE ALL g=%d n=%d boot=0" % (g, N), timeout=120)
    for g in range(N):
        text = c.console(g)
        assert b"PROBE MAPPED" in text
        for h in range(N):
            if h != g:
                assert b"PROBE SEE g=%d other=%d boot=0" % (g, h) in text, text.decode(errors="replace")
    before = [ctl(c.shared, g) for g in range(N)]
    for g in range(N):
        b = before[g]
        assert b["magic"] == MAGIC and b["index"] == g and b["boot"] == 0 and b["state"] == 2, b
        t_end = time.monotonic() + 15
        while True:  # alive: the host sees the guest's beat counter and heartbeat move
            a = ctl(c.shared, g)
            if a["counter"] > b["counter"] and a["heartbeat"] != b["heartbeat"]:
                break
            assert time.monotonic() < t_end, (g, b, a)
            time.sleep(0.2)


def test_killed_guest_reboots_and_rejoins(cluster):
    c = cluster
    victim = 1
    c.wait_for(victim, rb"PROBE ALL g=%d n=%d boot=0" % (victim, N), timeout=120)
    pid = c.kill(victim)
    assert not launch.pid_alive(pid)
    frozen = ctl(c.shared, victim)
    time.sleep(1.0)
    assert ctl(c.shared, victim)["counter"] == frozen["counter"], "a killed guest's counter still moves"
    for g in range(N):
        if g != victim:  # the survivors notice the silence (2 s without a beat)
            c.wait_for(g, rb"PROBE STALE g=%d other=%d" % (g, victim), timeout=60)
    c.restart(victim)
    r = c.wait_ready(victim, timeout=240)
    assert r["size"] == c.region_bytes
    c.wait_for(victim, rb"PROBE ALL g=%d n=%d boot=1" % (victim, N), timeout=120)
    text = c.console(victim)
    for h in range(N):
        if h != victim:  # the rejoined guest sees the survivors' (boot 0) data
            assert b"PROBE SEE g=%d other=%d boot=0" % (victim, h) in text, text.decode(errors="replace")
    for g in range(N):
        if g != victim:  # and they see its new pattern
            c.wait_for(g, rb"PROBE SEE g=%d other=%d boot=1" % (g, victim), timeout=60)
    now = ctl(c.shared, victim)
    assert now["magic"] == MAGIC and now["index"] == victim and now["boot"] == 1 and now["state"] == 2, now
    for g in range(N):
        if g != victim:
            assert ctl(c.shared, g)["boot"] == 0  # the survivors were never restarted
    assert len(c.guests[victim].boot_wall) == 2


# ---- the guest library in 3 guests, served by the memory-server daemon (issue 8, part 2) ----------
def test_guestlib_in_guests_with_daemon(request, exe, schema, qemu_clusters):
    """qemu-cxl/guest/aptadrv.c (static, over aptacxl.c) in 3 guests; the daemon serves the guests'
    shared file. Guest g puts object 10+g (versions 1, 2, ...) and gets objects 10..12, checking
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
    d = Serving(exe, schema, c.shared, c.dir / "daemon.log", lease_ms)

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
