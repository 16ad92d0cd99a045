"""The executor (qemu-cxl/executor.py) on the host, no QEMU: the daemon serves a rack directory
(qemu-cxl/harness.py's Rack), three `aptarun-host` processes are guests 0..2 (harness.World, the
`world` fixture of tests/conftest.py), and the executor runs the six workflows (tiny inputs) by
placing every function instance through the daemon's control-plane API. Checked: every output
object, every put and every external output equals the host run's (apta.hostrun), and the recorded
history passes apta.history. Then a runner is SIGKILLed as a function is placed on it, while it
holds copies: the workflow completes with the right outputs, the function is re-executed
elsewhere, the guest is fenced, a new runner process rejoins in the next epoch and gets work again.
Negative controls: a wrong reference output and a history with a stale read are reported.
The daemon's API is served as deployed (the `world` fixture: TLS, a token per role); an executor
with wrong credentials fails closed and changes nothing."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from apta import history
from apta import workflow as wfmod

from apta.qemu import executor as exmod
from apta.qemu.harness import ROOT

OUT = ROOT / "build" / "qemu-cxl" / "executor"


def make(world, out: Path) -> exmod.Executor:
    return exmod.Executor(world.rack.path, world.rack.port, guests=3, out_dir=out, first_obj=100, auth=world.rack.auth)


def test_six_workflows_on_three_runners(world, tmp_path):
    ex = make(world, OUT / "host")
    summary = {}
    try:
        for wf in wfmod.load_all():
            ref = exmod.host_reference(wf, "tiny", tmp_path)
            res = ex.run(wf, ref)
            assert res["outputs_equal"] and not res["violations"] and res["reexecuted"] == 0
            assert res["runs"] == res["instances"] == len(wf.instances())
            summary[wf.name] = {k: res[k] for k in ("instances", "runs", "gets", "hits", "puts", "wall_s")}
            print(f"executor: {wf.name}: {json.dumps(summary[wf.name])}")
    finally:
        ex.close()
    assert sum(s["hits"] for s in summary.values()) >= 3        # locality: copies reused on their guest
    (OUT / "host-summary.json").write_text(json.dumps(summary, indent=1) + "\n")


def test_runner_killed_mid_workflow(world, tmp_path):
    """SIGKILL of guest g's runner as the 3rd instance is placed on it (it holds copies from the
    runs before): the instance is re-executed on a live guest, g is fenced, a new runner process
    rejoins in epoch 2 and runs later functions."""
    w = world
    wf = wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / "finra.json"))
    ref = exmod.host_reference(wf, "tiny", tmp_path)
    ex = make(w, OUT / "host-kill")
    killed = {}

    def restart(g):
        deadline = time.time() + 20
        while not w.rack.server(g)["fenced"]:
            assert time.time() < deadline
            time.sleep(0.02)
        killed["fenced_after_s"] = time.time() - killed["t"]
        w.start(g, 1, min_epoch=2)

    def hook(ex_, ev):
        if ev["ev"] == "place" and not killed and sum(e["ev"] == "place" for e in ex_.history) >= 3:
            g = next(gs.g for gs in ex_.G if gs.name == ev["server"])
            if not ex_.G[g].runs:                    # holds no copies yet: wait for a later placement
                return
            w.runners[g].kill()
            killed.update(g=g, t=time.time(), run=ev["run"])
            threading.Thread(target=restart, args=(g,), daemon=True).start()
    ex.hooks.append(hook)
    try:
        res = ex.run(wf, ref)
        # a later workflow uses the rejoined guest again
        deadline = time.time() + 20
        while ex.G[killed["g"]].life != (1, 2) or not ex.G[killed["g"]].alive:
            assert time.time() < deadline, "the rejoin was not seen"
            ex._watch()
            time.sleep(0.05)
        res2 = ex.run(wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / "video.json")), exmod.host_reference(
            wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / "video.json")), "tiny", tmp_path))
    finally:
        ex.close()
    assert killed, "no placement to kill at"
    assert res["reexecuted"] >= 1 and res["outputs_equal"] and not res["violations"]
    name = ex.G[killed["g"]].name
    # the re-execution does not wait for the fence: it may land in the next workflow's history
    seen = [(e["ev"], e["server"], e.get("epoch")) for e in ex.liveness]
    assert seen == [("crash", name, None), ("fence", name, 1), ("rejoin", name, 2)], seen
    used = [rid for rid in res2["placement"] if rid.split("@")[1].startswith(name)]
    assert used, f"the rejoined guest {name} got no run of the next workflow: {sorted(res2['placement'])}"
    # no put of a live guest waited for the dead one's acks (the lease is 1.5 s)
    after = [p["us"] for p in res["put_latencies"] if p["t"] >= 0 and p["server"] != name]
    assert after and max(after) < 1_000_000, after
    (OUT / "host-kill-summary.json").write_text(json.dumps({"killed": killed, "finra": res, "video": res2},
                                                           indent=1, default=str) + "\n")


def test_negative_controls(world, tmp_path):
    """The executor's judgement can fail: a reference with one output byte changed is reported, and
    the recorded history with one get's digest replaced by the input's older version is a P1
    violation."""
    wf = wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / "sentiment.json"))
    ref = exmod.host_reference(wf, "tiny", tmp_path)
    ex = make(world, OUT / "host-neg")
    try:
        res = ex.run(wf, ref)
        lines = Path(res["history"]).read_text().splitlines()
        out = next(o for o in ref.final if o not in ref.initial)
        ref.final[out] = ref.final[out][:-1] + bytes([ref.final[out][-1] ^ 1])
        with pytest.raises(exmod.ExecutorError, match="differs from the host run"):
            ex.run(wf, ref)
    finally:
        ex.close()
    # a get of an object some put acked before its run was placed returns the object's initial
    # contents instead: a stale read
    evs = [json.loads(x) for x in lines]
    acked = {e["id"] for e in evs if e["ev"] == "put_ack"}
    written = {e["obj"] for e in evs if e["ev"] == "put" and e["id"] in acked}
    gets = {e["id"]: e["obj"] for e in evs if e["ev"] == "get" and e["obj"] in written}
    k = next(i for i, e in enumerate(evs) if e["ev"] == "get_ret" and e["id"] in gets)
    evs[k]["digest"] = exmod.jobs.digest_hex(ref.initial.get(gets[evs[k]["id"]], b""))
    assert not history.check_lines(lines).violations
    rep = history.check_lines([json.dumps(e) for e in evs])
    assert rep.violations and any("P1" in str(v) for v in rep.violations), rep.violations


def test_wrong_credentials_fail_closed(world, tmp_path):
    """The executor against the daemon's TLS + token API: a wrong token (401), a CA
    other than the daemon's (certificate refused), plain HTTP (400) stop it before it does
    anything; a reader's token where the object manager's is needed registers nothing (403); the
    right credentials then work (the positive side of the same calls)."""
    from apta.qemu import apiauth
    auth = world.rack.auth
    seq0 = world.rack.api("GET", "/v1/status")[1]["seq"]
    for _, bad, want in apiauth.wrong_credentials(auth):
        with pytest.raises(exmod.ExecutorError, match=want):
            exmod.Executor(world.rack.path, world.rack.port, guests=3, first_obj=100, auth=bad).close()
    ex = exmod.Executor(world.rack.path, world.rack.port, guests=3, first_obj=100,
                        auth=auth.variant(tokens={"object-manager": auth.tokens["reader"]}))
    try:
        with pytest.raises(exmod.ExecutorError, match="HTTP 403.*role object-manager required"):
            ex.reserve(2, b"x")
    finally:
        ex.close()
    assert world.rack.api("GET", "/v1/status")[1]["seq"] == seq0          # nothing changed
    assert apiauth.role_for("POST", "/v1/objects") == "object-manager"
    ex = make(world, tmp_path / "ok")
    try:
        ex.reserve(2, b"x")
    finally:
        ex.close()
    assert world.rack.api("GET", "/v1/status")[1]["seq"] > seq0


def test_early_placement_with_a_killed_runner(world, tmp_path):
    """Early placement (executor.py `early=True`, the workflow runner's Early mode): the six
    workflows with their one-writer instances placed as soon as their ancestors are placed, reading
    with versioned gets the memory server holds until the producer's commit. In video, as an early
    instance is placed, the runner of one of its ancestors still running is SIGKILLed; the
    workflow completes (the lost run re-executed, held gets still served by the re-executed commit),
    outputs equal the host run's, every history passes apta.history, V1 included. Some instances
    must have started before an input they name had committed (else nothing was early)."""
    w = world
    ex = exmod.Executor(w.rack.path, w.rack.port, guests=3, out_dir=OUT / "host-early", first_obj=100,
                        auth=w.rack.auth, early=True)
    killed = {}

    def restart(g):
        deadline = time.time() + 20
        while not w.rack.server(g)["fenced"]:
            assert time.time() < deadline
            time.sleep(0.02)
        w.start(g, 1, min_epoch=2)

    def hook(ex_, ev):
        # as an early instance is placed, the runner of one of its ancestors still running is killed:
        # the producer dies while its successor waits for its commit
        if ex_.wf.name != "video" or killed or ev["ev"] != "place":
            return
        k = ex_.placing
        if k not in ex_.early_k:
            return
        gs = next((x for x in ex_.G if x.run is not None and x.run.k in ex_.anc[k] and not x.jb.done(x.job)), None)
        if gs is None:
            return
        w.runners[gs.g].kill()
        killed.update(g=gs.g, run=gs.run.rid, t=time.time())
        threading.Thread(target=restart, args=(gs.g,), daemon=True).start()
    ex.hooks.append(hook)
    summary = {}
    try:
        for wf in sorted(wfmod.load_all(), key=lambda x: x.name != "video"):
            res = ex.run(wf, exmod.host_reference(wf, "tiny", tmp_path))
            assert res["outputs_equal"] and not res["violations"], res
            rep = history.check_file(res["history"])
            assert rep.ok, rep
            mins = [e["min"] for e in ex.history if e["ev"] == "get" and "min" in e]
            assert set(mins) <= {1} and (bool(mins) == bool(res["early"])), (mins, res["early"])
            summary[wf.name] = {k: res[k] for k in ("instances", "runs", "reexecuted", "early_runs",
                                                    "early_before_commit", "stopped", "wall_s")}
            print(f"executor early: {wf.name}: {json.dumps(summary[wf.name])}")
    finally:
        ex.close()
    assert killed and summary["video"]["reexecuted"] >= 1, (killed, summary["video"])
    assert sum(s["early_runs"] for s in summary.values()) > 0
    assert sum(s["early_before_commit"] for s in summary.values()) > 0, summary
    (OUT / "host-early-summary.json").write_text(json.dumps({"killed": killed, "workflows": summary}, indent=1) + "\n")


def _flaky_server(drops: int):
    """A loopback HTTP server that closes its first `drops` connections unanswered (as the daemon
    drops a handshake not done in time), then answers {"ok": true}; returns (port, requests seen)."""
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    seen = []

    def serve():
        with srv:
            for k in range(drops + 1):
                c, _ = srv.accept()
                with c:
                    seen.append(c.recv(65536).split(b" ", 1)[0].decode())
                    if k >= drops:
                        body = b'{"ok": true}'
                        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                  + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1], seen


def test_a_read_is_retried_after_a_dropped_connection():
    port, seen = _flaky_server(drops=2)
    assert exmod.Api(port).call("GET", "/v1/schedulable") == {"ok": True}
    assert seen == ["GET", "GET", "GET"]


def test_a_write_is_not_retried_after_a_dropped_connection():
    port, seen = _flaky_server(drops=1)
    with pytest.raises(exmod.ExecutorError, match="POST /v1/objects"):
        exmod.Api(port).call("POST", "/v1/objects", {"id": 1})
    assert seen == ["POST"]
