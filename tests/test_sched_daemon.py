"""The scheduler plugin's e2e with the memory-server daemon as its control plane.

The daemon (qemu-cxl/daemon, the Verilated msemu top) serves a rack directory; three `aptarun-host`
processes are guests g0..g2 (qemu-cxl/harness.py's World, the `world` fixture of
tests/conftest.py; in QEMU guests with a guest killed in every workflow:
tests/test_qemu_workflows.py with APTA_QEMU_PLACER=kube, make test-long); the scheduler plugin's
e2e binary (TestDaemonControlPlane, run by harness.E2E) brings up etcd, kube-apiserver,
kube-scheduler with the Apta plugin and the mirroring agent, all pointed at the daemon; the
executor places every function instance by creating a pod and starting it on the
guest of the node the scheduler bound it to (qemu-cxl/kube.py). The daemon's state changes only
through the guests' ring traffic and the heartbeat lease: no emulation endpoint exists there.

- the six workflows: outputs equal to the host's, histories clean, every start admissible
  (bound server schedulable for the inputs, in the epoch the plugin chose), no violation;
- a guest is killed and fenced; the next workflow's pods prefer its node (the default scheduler's
  choice): none is bound there; the guest's runner restarts, rejoins in epoch 2, and the next
  workflow uses it again (the agent mirrored fenced=true, then epoch 2);
- a live guest owing an invalidation ack for an object (frozen after caching it, the object then
  rewritten by another guest) is avoided by a pod reading that object though the pod prefers it;
- negative control, the scheduler without the plugin (a second cluster): the same preferences put
  pods on the fenced guest (the executor refuses those starts as violations) and the probe pod on
  the guest owing the ack.
The daemon's API runs as deployed: TLS with the test CA (qemu-cxl/apiauth.py) and a
bearer token per role: the executor registers as object-manager and reads as reader, the agent
and the plugin read with the CA and a reader's token. Negative control: before the real
scheduler starts, one with a wrong token and one trusting another CA each leave a pod unbound
with the refusal in its FailedScheduling event (the e2e's "credentials").
Needs APTA_SCHED_DAEMON=1 (make test-sched-daemon, part of make test)."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from apta import workflow as wfmod

from apta.qemu import executor as exmod
from apta.qemu import kube as kubemod
from apta.qemu.harness import E2E, ROOT, build_e2e, identify_job, phi_records

WORLD_LEASE_MS = 4000            # the world's heartbeat lease: a frozen guest owes its ack this long
OUT = ROOT / "build" / "qemu-cxl" / "sched-daemon"

pytestmark = pytest.mark.skipif(os.environ.get("APTA_SCHED_DAEMON") != "1",
                                reason="the scheduler e2e against the daemon: set APTA_SCHED_DAEMON=1 (make test-sched-daemon)")


@pytest.fixture(scope="module")
def e2e_bin():
    return build_e2e()


def wait_for(cond, what: str, timeout: float = 30.0, every: float = 0.05):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, f"{what}: not after {timeout} s"
        time.sleep(every)


def run_wf(ex, name: str, tmp: Path, timeout_s: float = 120) -> dict:
    wf = wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / f"{name}.json"))
    try:
        res = ex.run(wf, exmod.host_reference(wf, "tiny", tmp), timeout_s=timeout_s)
    except exmod.ExecutorError as e:
        raise AssertionError(f"{e}; pods waiting: {ex.placer.waiting()}") from None
    assert res["outputs_equal"] and not res["violations"], res
    return res


def on(placer: kubemod.KubePlacer, server: str, since: int) -> list[dict]:
    return [b for b in placer.bindings[since:] if b["server"] == server]


def pending_probe(w, e2e, placer, tmp_path) -> dict:
    """cs1 gets and writes `tagged`, then freezes (SIGSTOP: no acks, no heartbeat); cs2 writes
    `tagged` again: cs1 now owes an invalidation ack for it (real RTL state: the daemon's answer),
    until the lease fences it. Meanwhile a pod reading `tagged` and preferring cs1's node (the
    default scheduler's choice) is created; where it is bound, and cs1's state before and after."""
    records, tagged = w.place(phi_records(tmp_path)), w.place(b"", 2000)

    def identify(g):
        rc, recs, _, _ = w.job(g, identify_job(f"probe/identify@{g}", records, tagged))
        assert rc == 0, recs
    identify(1)
    w.runners[1].p.send_signal(signal.SIGSTOP)
    try:
        identify(2)
        ans = exmod.Api(w.rack.port, auth=w.rack.auth).schedulable([tagged[0]])
        before = next(s for s in ans["servers"] if s["name"] == "cs1")
        assert before["live"] and not before["fenced"] and not before["schedulableFor"] \
            and before.get("pendingFor", {}).get(str(tagged[0])), before
        name = kubemod.pod_name("probe", "pending", placer.seq, len(placer.created))
        e2e.kube.create_pod(placer.pod(name, [tagged[0]], ans, prefer=["cs1"]))
        wait_for(lambda: e2e.kube.pods()[name]["spec"].get("nodeName"), "the probe pod bound", 20)
        node = e2e.kube.pods()[name]["spec"]["nodeName"]
        after = w.rack.server(1)
        assert not after["fenced"], f"cs1 fenced before the probe was bound: the lease ({WORLD_LEASE_MS} ms) is too short"
        return {"node": node, "before": before, "after": after}
    finally:
        w.runners[1].p.send_signal(signal.SIGCONT)
        w.runners[1].kill()


@contextlib.contextmanager
def scheduled(w, plugin: bool, tmp_path):
    """The e2e cluster (with or without the plugin) against the world's daemon, and an executor
    placing through it; both stopped at the end, even on failure."""
    e2e = E2E(w.rack.port, OUT, plugin, tmp_path, auth=w.rack.auth)
    ex = None
    try:
        placer = kubemod.KubePlacer(e2e.kube)
        ex = exmod.Executor(w.rack.path, w.rack.port, guests=3, out_dir=OUT / ("plugin" if plugin else "no-plugin"),
                            first_obj=100, placer=placer, auth=w.rack.auth)
        yield e2e, placer, ex
    finally:
        if ex:
            ex.close()
        e2e.close()


def kill_and_fence(w, ex, g: int):
    w.runners[g].kill()
    wait_for(lambda: w.rack.server(g)["fenced"], "the killed guest fenced", 20)
    wait_for(lambda: (ex._watch(), not ex.G[g].alive)[1], "the executor saw the crash", 10)


def test_workflows_placed_by_the_scheduler(world, e2e_bin, tmp_path):
    w = world
    with scheduled(w, True, tmp_path) as (e2e, placer, ex):
        summary = {}
        for wf in wfmod.load_all():
            t0 = time.time()
            res = run_wf(ex, wf.name, tmp_path)
            summary[wf.name] = {k: res[k] for k in ("instances", "runs", "hits", "wall_s")}
            print(f"sched-daemon: {wf.name}: {len(placer.starts)} starts so far, {res['runs']} runs, {time.time() - t0:.1f}s")
        assert not placer.violations() and not placer.refusals, placer.refusals
        assert len(placer.starts) == sum(s["runs"] for s in summary.values())
        # every start happened in the epoch the plugin chose (the placer refuses others)
        assert all(b["placedEpoch"] and b["placedSeq"] for b in placer.bindings), placer.bindings
        used = {s["server"] for s in placer.starts}
        assert len(used) >= 2, f"the scheduler used only {used}"

        # a guest dies and is fenced: pods preferring its node are bound elsewhere
        victim = ex.G[0]
        kill_and_fence(w, ex, 0)
        n0 = len(placer.bindings)
        placer.prefer = [victim.name]
        res = run_wf(ex, "finra", tmp_path)
        assert not on(placer, victim.name, n0), "a pod was bound to the fenced guest"
        assert not placer.violations(), placer.violations()

        # it reboots, rejoins in epoch 2, and pods preferring it are started there
        w.start(0, 1, min_epoch=2)
        wait_for(lambda: (ex._watch(), victim.alive and victim.life == (1, 2))[1], "the rejoin seen", 20)
        n1 = len(placer.bindings)
        run_wf(ex, "video", tmp_path)
        back = on(placer, victim.name, n1)
        assert back and all(b["placedEpoch"] == "2" for b in back), placer.bindings[n1:]
        assert not placer.violations(), placer.violations()
        # a live guest owing an ack for an input is avoided, though preferred
        probe = pending_probe(w, e2e, placer, tmp_path)
        assert probe["node"] != "node-cs1", probe
        print(f"sched-daemon: pod reading an object cs1 owes an ack for, preferring cs1: bound to {probe['node']}")
        result = e2e.finish()
        # the daemon served TLS with tokens to the agent and the plugin; the negative control ran
        # first: a wrong token (401) and a wrong CA each left its pod unbound (fail closed)
        creds = {x["case"]: x for x in result.get("credentials") or []}
        assert result["tls"] and set(creds) == {"wrong-token", "wrong-ca"} and not any(x["bound"] for x in creds.values()) \
            and "401" in creds["wrong-token"]["message"] and "unknown authority" in creds["wrong-ca"]["message"], result
        fenced = [x for x in result["nodes"] if x["node"] == "node-" + victim.name]
        assert any(x["fenced"] == "true" for x in fenced) and fenced[-1]["epoch"] == "2" \
            and fenced[-1]["fenced"] == "false", fenced
        (OUT / "plugin-summary.json").write_text(json.dumps({
            "workflows": summary, "starts": len(placer.starts), "refusals": placer.refusals,
            "bindings": len(placer.bindings), "e2e": result}, indent=1) + "\n")
        print(f"sched-daemon: {len(placer.starts)} starts, {len(placer.refusals)} refused, 0 violations; "
              f"{result['bound']} pods bound; {victim.name} fenced, avoided, rejoined in epoch 2 and used again")


def test_negative_control_without_the_plugin(world, e2e_bin, tmp_path):
    """The default scheduler follows the preference onto the fenced guest: the executor refuses
    those starts and counts them as violations (the check has teeth)."""
    w = world
    with scheduled(w, False, tmp_path) as (e2e, placer, ex):
        kill_and_fence(w, ex, 0)
        placer.prefer = [ex.G[0].name]
        run_wf(ex, "finra", tmp_path)           # completes: a refused pod's next attempt has no preference
        v = placer.violations()
        print(f"sched-daemon negative control: {len(v)} violations, {len(placer.refusals)} refusals")
        assert v and all(x["server"] == ex.G[0].name for x in v), placer.refusals
        probe = pending_probe(w, e2e, placer, tmp_path)
        print(f"sched-daemon negative control: the pending probe bound to {probe['node']}")
        assert probe["node"] == "node-cs1", probe
        e2e.finish()
