"""QEMU CXL emulation smoke (issue 8, part 1): 3 TCG guests share one CXL type-3 region.

Each guest boots the image of qemu-cxl/image.py, creates its CXL region, maps it through /dev/mem
and runs qemu-cxl/guest/probe.c, which writes the guest's pattern into its control block
(qemu-cxl/RINGS.md: 4 KiB + g MiB) and watches the others'. Checked: every guest sees every
other's pattern; the host sees all of them in the backing file at the RINGS.md offsets; a guest
whose QEMU process is SIGKILLed goes stale for the others, reboots, rejoins (boot 1) and sees the
others' live data while they see its new pattern; every QEMU process started is gone at the end,
whatever failed (fixture finalizer, PDEATHSIG, atexit).

Runs when APTA_QEMU=1 (`make test`, `make test-qemu`); then a failing image build (e.g. a Debian
package missing from the mirrors) fails the test with the builder's message instead of skipping.
Cost: ~10 s CPU and ~330 MB per guest, 3 guests at most at once; about 1.5-3 min wall on 2 cores.
"""
import json
import os
import struct
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "qemu-cxl"))

N = 3
AREA0, AREA = 4096, 1 << 20
MAGIC = 0x3142525041545041  # "APTAPRB1"

pytestmark = pytest.mark.skipif(os.environ.get("APTA_QEMU") != "1",
                                reason="QEMU CXL guests: set APTA_QEMU=1 (make test / make test-qemu)")


def test_probe_offsets_match_layout():
    """probe.c and this test hard-code the RINGS.md guest-area offsets; layout.json is the source."""
    lj = REPO / "qemu-cxl" / "layout.json"
    if not lj.exists():
        pytest.skip("qemu-cxl/layout.json not present")
    ga = json.loads(lj.read_text())["guest_area"]
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
def cluster(request):
    import launch  # noqa: E402  (qemu-cxl/launch.py)
    try:
        c = launch.Cluster(run="pytest", n=N, script="/apta/probe run $APTA_GUEST {n}", hold=True)
    except SystemExit as e:  # image.py exits with a message when a Debian package is missing
        pytest.fail(f"QEMU guest image could not be built: {e}")

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
    from launch import pid_alive
    assert not pid_alive(pid)
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
