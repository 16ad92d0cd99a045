"""The six workflows across three QEMU guests: each guest boots the Debian image and runs
the static function runner (qemu-cxl/guest/aptarun.c) on its CXL region; the memory-server daemon
(the Verilated msemu top) serves the guests' shared file; the executor (qemu-cxl/executor.py)
places every function instance through the daemon's control-plane API and compares every output
with the same functions run on the host.

- all six workflows, tiny inputs: outputs equal to the host's, every history passes apta.history;
- during one workflow a guest's QEMU is SIGKILLed while its run is under way and it holds copies:
  the workflow completes with the right outputs (the lost run is re-executed on a live guest), the
  guest is fenced at the lease, reboots, rejoins in epoch 2 and runs functions of later workflows;
  the live guests' put latencies after the kill stay far below the lease (no put waited for the
  dead guest's acks);
- the dead guest owes an ack: every guest first caches `records` and writes its own `tagged` (objects
  outside the workflows); right after the kill a live guest rewrites the victim's `tagged`: the
  daemon shows the unfenced victim owing that ack, and the put returns in milliseconds (with the
  daemon's `--mutant commit-waits-for-acks`, APTA_QEMU_DAEMON_MUTANT, it waits ~2 s for the fence
  and this test fails);
- a guest writes 20 malformed slots into its request ring (`garbage 20`, JOBS.md) while another
  workflow runs on the others: every slot is answered and the workflow is unaffected.
The daemon's API runs as deployed: TLS with the test CA and a bearer token per role
(qemu-cxl/apiauth.py; the executor registers objects as object-manager, reads as reader); an
executor with a wrong token, a wrong CA or plain HTTP fails at its first call (negative control).
APTA_QEMU_PLACER=kube (make test-long): every instance is placed by kube-scheduler with the Apta plugin,
the daemon as its control plane (tests/test_sched_daemon.py's e2e cluster, harness.E2E; qemu-cxl/kube.py); no
start may be a violation. Needs APTA_QEMU=1 (as make test and make test-qemu set it). Results: build/qemu-cxl/runs/pytest-workflows/."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from apta import history
from apta import workflow as wfmod

from apta.qemu import apiauth
from apta.qemu import executor as exmod
from apta.qemu import kube as kubemod
from apta.qemu import launch
from apta.qemu import harness
from apta.qemu.harness import RUNNER_STATIC as RUNNER
from apta.qemu.harness import E2E, KILL_PAUSE_MS, Serving, build_e2e, build_runner, identify_job

N = 3
LEASE_MS = 2000
# a guest is killed in each of these workflows (make test-long: APTA_QEMU_KILL_IN=all), while one of its
# runs has its inputs and has not finished (the guest holds copies: the probe objects, earlier runs)
_KILL = os.environ.get("APTA_QEMU_KILL_IN", "video")
KILL_IN = {"finra", "gemm", "image", "phi", "sentiment", "video"} if _KILL == "all" else set(_KILL.split(","))
GARBAGE_DURING = "gemm"
KUBE = os.environ.get("APTA_QEMU_PLACER", "executor") == "kube"

pytestmark = pytest.mark.skipif(os.environ.get("APTA_QEMU") != "1",
                                reason="QEMU guests: set APTA_QEMU=1 (make test / make test-qemu do)")


def test_six_workflows_in_three_guests(request, exe, schema, tmp_path, qemu_clusters):
    for pc in qemu_clusters:                    # never two clusters at once on 2 cores
        pc.stop_all()
    build_runner(RUNNER)
    c = launch.Cluster(run="pytest-workflows" + ("-all-killed" if len(KILL_IN) > 1 else ""), n=N, script="/apta/aptarun $APTA_GUEST $APTA_BOOT",
                       files=[(RUNNER, "aptarun")], hold=True)
    # APTA_QEMU_DAEMON_MUTANT=commit-waits-for-acks: the negative control of the probe below (it must fail)
    mutant = os.environ.get("APTA_QEMU_DAEMON_MUTANT")
    # the API as deployed: TLS with the test CA, a token per role (qemu-cxl/apiauth.py)
    d = Serving(exe, schema, c.rack, c.dir / "daemon.log", LEASE_MS, extra=["--mutant", mutant] if mutant else [],
                auth=apiauth.ApiAuth(c.dir / "auth"))
    ex = None

    def finalize():
        c.stop_all()
        d.close()
        left = [pid for pid in c.all_pids_ever() if launch.pid_alive(pid)]
        assert not left, f"QEMU processes still alive after the test: {left}"
    request.addfinalizer(finalize)

    t_boot = time.time()
    for g in range(N):
        c.start(g)
    for g in range(N):
        c.wait_ready(g, timeout=240)
    placer = None
    if KUBE:
        build_e2e()
        e2e = E2E(d.port, c.dir / "e2e", True, c.dir, auth=d.auth)
        request.addfinalizer(e2e.close)
        placer = kubemod.KubePlacer(e2e.kube)
    # negative control: an executor with wrong credentials stops at its first call (401, the
    # certificate refused, 400 for plain HTTP); test_executor.py checks it changes nothing
    for case, bad, want in apiauth.wrong_credentials(d.auth):
        with pytest.raises(exmod.ExecutorError, match=want):
            exmod.Executor(c.rack, d.port, guests=N, auth=bad).close()
    ex = exmod.Executor(c.rack, d.port, guests=N, out_dir=c.dir, dead_after_s=LEASE_MS / 1000, auth=d.auth,
                        log=lambda m: print(m, flush=True), placer=placer)
    deadline = time.time() + 120
    while not all(gs.jb.idle() and gs.jb.life[1] >= 1 for gs in ex.G):
        assert time.time() < deadline, [c.console(g)[-800:] for g in range(N)]
        time.sleep(0.1)
    for gs in ex.G:                                # the runners' first lives
        gs.life, gs.alive, gs.fenced = gs.jb.life, True, False
    boot_s = time.time() - t_boot
    print(f"qemu-workflows: {N} guests booted, runners joined in {boot_s:.1f} s", flush=True)

    # The probe objects, outside the workflows: every guest gets `records` and writes its own
    # `tagged` (phi's identify function). At a kill, a live guest rewrites the victim's `tagged`:
    # the dead guest then owes an invalidation ack it will never send, and that put must not wait.
    phi = wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / "phi.json"))
    pref = exmod.host_reference(phi, "tiny", c.dir / "host")
    rl, tl = exmod.pow2_lines(len(pref.initial["records"])), exmod.pow2_lines(pref.sizes["tagged"])
    records = (ex.reserve(rl, pref.initial["records"], "probe records")[0], rl)
    tagged = {g: (ex.reserve(tl, b"", "probe tagged")[0], tl) for g in range(N)}

    for gs in ex.G:
        j = gs.jb.post(identify_job(f"probe/warm@{gs.name}", records, tagged[gs.g]))
        assert gs.jb.wait(j, 60) == 0, gs.jb.read_log()[0]

    kills = []                                  # one per workflow in KILL_IN
    done = threading.Event()
    request.addfinalizer(done.set)

    probe = {}                                  # the live put while the first victim owes its ack

    def watch_owed(victim: int, obj: int):
        """The daemon's view of the victim until its fence: the most acks it owed for obj."""
        while not probe.get("fenced"):
            st = d.server(victim, str(obj))
            if st["fenced"]:
                probe["fenced"] = True
            else:
                probe["owed"] = max(probe.get("owed", 0), st.get("pendingFor", {}).get(str(obj), 0))
            time.sleep(0.02)

    def probe_hook(ex_, ev):
        # after the first kill, the first live idle guest rewrites the victim's `tagged` (unless the
        # victim is fenced by then); its log is read before the executor posts that guest again
        if kills and "job" not in probe and "fenced_after_s" not in kills[0]:
            lg = next((x for x in ex_.G if x.g != kills[0]["g"] and ex_.usable(x)), None)
            if lg is not None:
                probe.update(gs=lg, job=lg.jb.post(identify_job(f"probe/rewrite@{lg.name}", records, tagged[kills[0]["g"]])))
                threading.Thread(target=watch_owed, args=(kills[0]["g"], tagged[kills[0]["g"]][0]), daemon=True).start()
        if "job" in probe and "log" not in probe and probe["gs"].jb.done(probe["job"]):
            probe["log"] = probe["gs"].jb.read_log()[0]
            probe["rc"] = probe["gs"].jb.rc()

    def kill_hook(ex_, ev):
        # a get returned in a run (every guest holds the probe copies, and those of its earlier
        # runs): its function is now computing or putting. The guest is frozen first; if its run
        # has finished meanwhile it is let go and a later get is taken, so the kill is mid-run.
        if ex_.wf.name not in KILL_IN or ev["ev"] != "get_ret" or any(k["workflow"] == ex_.wf.name for k in kills):
            return
        gs = next((x for x in ex_.G if x.run is not None and ev["id"].startswith(x.run.rid + "/")), None)
        if gs is None:
            return
        pid = c.guests[gs.g].proc.pid
        os.kill(pid, signal.SIGSTOP)
        if not launch.frozen(pid) or gs.jb.done(gs.job):
            os.kill(pid, signal.SIGCONT)
            return
        c.kill(gs.g)
        k = dict(workflow=ex_.wf.name, g=gs.g, server=gs.name, run=gs.run.rid, t=time.monotonic() - ex_.t_start)
        kills.append(k)
        threading.Thread(target=harness.reboot_after_fence, args=(c, d, k, LEASE_MS, done), daemon=True).start()
    ex.hooks.append(kill_hook)
    ex.hooks.append(probe_hook)

    def wait_rejoined(k):
        deadline = time.time() + 240
        while not (k.get("rebooted_after_s") and ex.G[k["g"]].alive):
            assert "error" not in k, k
            if time.time() > deadline:
                jb, lay = ex.G[k["g"]].jb, ex.region.lay
                diag = {f: jb.field(f) for f in ("post_seq", "start_seq", "done_seq", "runner_state", "runner_life", "runner_heartbeat")}
                diag["ctl_heartbeat"] = ex.region.guest(k["g"]).u64(lay.ctl("heartbeat"))
                diag["req_ring"] = [ex.region.guest(k["g"]).u64(lay.ring("request") + o) for o in (0, 32)]
                raise AssertionError((k, diag, d.server(k["g"]), c.console(k["g"])[-2000:]))
            ex._watch()
            time.sleep(0.2)
        k["rejoined_epoch"] = ex.G[k["g"]].life[1]

    gjob = {}

    def garbage_hook(ex_, ev):
        # the garbage job's log, read before the executor posts the guest its next job
        if gjob and "log" not in gjob and gjob["gs"].jb.done(gjob["job"]):
            gjob["log"] = gjob["gs"].jb.read_log()[0]
    ex.hooks.append(garbage_hook)

    results, garbage = {}, None
    try:
        order = sorted(wfmod.load_all(), key=lambda w: (w.name not in KILL_IN, w.name))
        for wf in order:
            ref = exmod.host_reference(wf, "tiny", c.dir / "host")
            if wf.name == GARBAGE_DURING:
                gb = max(ex.G, key=lambda x: x.g if x.alive and x.jb.idle() else -1)
                gjob.update(gs=gb, job=gb.jb.post(["garbage 20"]))
            ex.pause_first_reader_ms = KILL_PAUSE_MS if wf.name in KILL_IN else 0   # a kill point mid-run
            res = ex.run(wf, ref, timeout_s=240)
            if wf.name == GARBAGE_DURING:
                gb = gjob["gs"]
                gb.jb.wait(gjob["job"], timeout=60)
                garbage_hook(ex, {})
                garbage = {"guest": gb.name, "workflow": wf.name, "ran_meanwhile": sorted(res["placement"]),
                           **[x["garbage"] for x in gjob["log"] if "garbage" in x][0]}
            results[wf.name] = res
            print(f"qemu-workflows: {wf.name}: {res['instances']} instances, {res['runs']} runs "
                  f"({res['reexecuted']} re-executed), {res['hits']}/{res['gets']} gets hit, {res['puts']} puts, "
                  f"{res['wall_s']:.1f} s, outputs equal, history clean", flush=True)
            if wf.name in KILL_IN:                  # the killed guest reboots and rejoins before the next workflow
                (k,) = [k for k in kills if k["workflow"] == wf.name] or [{"workflow": wf.name, "error": "no kill point"}]
                wait_rejoined(k)
                print(f"qemu-workflows: {k['server']} killed in {wf.name}: fenced after {k['fenced_after_s']} s, "
                      f"rebooted after {k['rebooted_after_s']} s, rejoined in epoch {k['rejoined_epoch']}", flush=True)
        # the last killed guest runs an extra workflow alone
        victim = kills[-1]
        wf = wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / "phi.json"))
        if KUBE:
            placer.pin = victim["server"]
        else:
            for gs in ex.G:
                if gs.g != victim["g"]:
                    gs.alive = False
        again = ex.run(wf, exmod.host_reference(wf, "tiny", c.dir / "host"), timeout_s=120)
    finally:
        ex.close()

    assert [k["workflow"] for k in kills] == [w for w in sorted(KILL_IN)], kills
    # per kill: crash, fence in the old epoch, rejoin in the next; nothing else
    seen = [(e["ev"], e["server"], e.get("epoch")) for e in ex.liveness]
    want = []
    for k in kills:
        old = k["rejoined_epoch"] - 1
        want += [("crash", k["server"], None), ("fence", k["server"], old), ("rejoin", k["server"], old + 1)]
    assert seen == want, (seen, want)
    for k in kills:
        assert results[k["workflow"]]["reexecuted"] >= 1, k
    assert all(rid.split("@")[1].startswith(victim["server"]) for rid in again["placement"])
    s = d.server(victim["g"])
    assert (s["fenced"], s["epoch"], s["live"]) == (False, victim["rejoined_epoch"], True), s
    # the live put while the dead guest owed its ack: it did not wait (the lease is 2 s)
    probe_hook(ex, {})
    assert probe.get("log") is not None and probe["rc"] == 0, probe
    (put,) = [x for x in probe["log"] if "put_us" in x]
    wait_for_fence = time.time() + 10
    while not probe.get("fenced") and time.time() < wait_for_fence:
        time.sleep(0.05)
    assert probe.get("owed", 0) >= 1, ("the victim never owed the ack", probe)
    assert put["put_us"] < LEASE_MS * 1000 / 4, put
    probe_summary = {"guest": probe["gs"].name, "victim": kills[0]["server"], "put_us": put["put_us"], "owed": probe["owed"]}
    print(f"qemu-workflows: {probe_summary['guest']} rewrote an object {probe_summary['victim']} held, "
          f"while it was dead and owed the ack: put {put['put_us'] / 1000:.1f} ms", flush=True)
    # puts of live guests around each kill: none waited for the dead guest (the lease is 2 s)
    around = {}
    for k in kills:
        lat = results[k["workflow"]]["put_latencies"]
        after = [p["us"] for p in lat if p["server"] != k["server"] and p["t"] > k["t"]]
        before = [p["us"] for p in lat if p["t"] <= k["t"]]
        around[k["workflow"]] = {"before_kill": before, "live_after_kill": after}
        assert not after or max(after) < LEASE_MS * 1000 / 4, (k, before, after)
    assert any(a["live_after_kill"] for a in around.values()), around
    assert garbage and garbage["sent"] == 20 and garbage["refused"] + garbage["objerr"] == 20 and garbage["timeouts"] == 0, garbage
    for g in range(N):
        assert b"Kernel panic" not in c.console(g, this_boot=False)
    for name, res in list(results.items()) + [("phi-after-rejoin", again)]:
        rep = history.check_file(res["history"])
        assert not rep.violations, (name, rep.violations)

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None
    summary = {
        "note": "functional emulation: TCG guests, region via /dev/mem (uncached MMIO), 2 shared cores; not a hardware prediction",
        "boot_s": round(boot_s, 1), "lease_ms": LEASE_MS, "kills": kills, "garbage": garbage,
        "put_while_dead_guest_owed_ack": probe_summary,
        "workflows": {n: {k: r[k] for k in ("instances", "runs", "reexecuted", "gets", "hits", "puts", "wall_s")}
                      for n, r in results.items()},
        "put_us_around_kills": {w: {side: {"n": len(v), "p50": pct(v, .5), "max": max(v, default=None)} for side, v in a.items()}
                                for w, a in around.items()},
        "liveness": ex.liveness,
    }
    if KUBE:
        assert not placer.violations(), placer.violations()
        res = e2e.finish()
        summary["scheduler"] = {"starts": len(placer.starts), "refusals": placer.refusals, "bound": res["bound"],
                                "perNode": res["perNode"], "nodes": res["nodes"]}
        for k in kills:                          # the agent mirrored each kill's fence and rejoin
            seen = [x for x in res["nodes"] if x["node"] == "node-" + k["server"]]
            assert any(x["fenced"] == "true" for x in seen), (k, seen)
        print(f"qemu-workflows: placed by kube-scheduler with the Apta plugin: {len(placer.starts)} starts, "
              f"{len(placer.refusals)} refused (guest down), 0 violations", flush=True)
    (c.dir / "workflows-summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(json.dumps(summary, default=str))
