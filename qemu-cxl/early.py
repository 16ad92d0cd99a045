#!/usr/bin/env python3
"""Early placement in the QEMU emulation, against placement after completion, with a guest
killed mid-run in every run: the same three guests, daemon and executor run each workflow twice,
side by side (after completion, then early), and the end-to-end makespans are compared.

A run's makespan is the executor's `wall_s`: from the workflow's start (objects registered) to its
end (every output in the memory server's DRAM), re-execution of the killed guest's run included.
The kill is the QEMU workflow test's (tests/test_qemu_workflows.py): at the first `get_ret` of a run
of the workflow, that run's guest is frozen and, if its run has not finished, its QEMU is SIGKILLed
(the guest holds copies; its run is mid-way). So that such a point exists whatever the timing, the
first instance with inputs placed in a run with a kill pauses harness.KILL_PAUSE_MS after its first get
(JOBS.md `pause`), in both modes; the kill ends the pause, so it adds to a makespan only the
executor's time to see the get; the daemon fences it at the lease (2 s), it reboots and
its runner rejoins in the next epoch before the next run starts (the reboot is outside the
makespans unless the workflow waits for it). Every run: outputs equal to the host run's, history
checked by apta.history (P1-P4, V1).

    python3 qemu-cxl/early.py --out build/bench/qemu-early.json [--workflows video,image]

used by `make bench-qemu-early` (all six) and tests/test_qemu_early.py (the short form in make
test). Needs the QEMU image, the daemon and the static runner (`make qemu-image daemon runner`)."""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

from apta import history
from apta import workflow as wfmod

from apta.qemu import apiauth
from apta.qemu import executor as exmod
from apta.qemu import harness
from apta.qemu import kube as kubemod
from apta.qemu import launch

N = 3
LEASE_MS = 2000


class Bench:
    """Three QEMU guests running aptarun, the daemon (TLS, a token per role), an executor; `close()`
    stops every process it started, also after a failure."""

    def __init__(self, run: str, log=print, kube: bool = False):
        """`kube`: every instance is placed by kube-scheduler with the Apta plugin (the e2e cluster
        against the daemon, as tests/test_qemu_workflows.py's APTA_QEMU_PLACER=kube): an early
        instance's pod carries apta.io/input-versions, so the binding path is what it hides."""
        self.log = log
        self.e2e = self.placer = None
        self.arming = False                      # kube placement: a kill thread is aimed at a run
        harness.build_runner(harness.RUNNER_STATIC)
        self.c = launch.Cluster(run=run, n=N, script="/apta/aptarun $APTA_GUEST $APTA_BOOT",
                                files=[(harness.RUNNER_STATIC, "aptarun")], hold=True)
        self.d = self.ex = None
        self.done = threading.Event()            # releases the reboot threads at close
        self.kill_in: str | None = None          # the run (workflow/mode) a guest is killed in
        self.kills: list[dict] = []
        try:
            self.d = harness.Serving(harness.build_daemon(), harness.load_schema(), self.c.rack,
                                     self.c.dir / "daemon.log", LEASE_MS, auth=apiauth.ApiAuth(self.c.dir / "auth"))
            t0 = time.time()
            for g in range(N):
                self.c.start(g)
            for g in range(N):
                self.c.wait_ready(g, timeout=240)
            if kube:
                harness.build_e2e()
                self.e2e = harness.E2E(self.d.port, self.c.dir / "e2e", True, self.c.dir, auth=self.d.auth)
                self.placer = kubemod.KubePlacer(self.e2e.kube)
            self.ex = exmod.Executor(self.c.rack, self.d.port, guests=N, out_dir=self.c.dir,
                                     dead_after_s=LEASE_MS / 1000, auth=self.d.auth, log=log, placer=self.placer)
            deadline = time.time() + 120
            while not all(gs.jb.idle() and gs.jb.life[1] >= 1 for gs in self.ex.G):
                if time.time() > deadline:
                    raise RuntimeError(f"runners did not join: {[self.c.console(g)[-800:] for g in range(N)]}")
                time.sleep(0.1)
            for gs in self.ex.G:
                gs.life, gs.alive, gs.fenced = gs.jb.life, True, False
            self.boot_s = round(time.time() - t0, 1)
            self.ex.hooks.append(self._kill_hook)
        except BaseException:
            self.close()
            raise

    def _kill_hook(self, ex, ev):
        if self.kill_in is None or any(k["in"] == self.kill_in for k in self.kills):
            return
        if self.placer is not None:
            # kube placement: the executor's loop also lists pods, so it reads a tiny run's first
            # get_ret after the run ended; the kill is aimed at a run just placed instead (one that
            # reads inputs: its guest then holds copies), once its job is posted
            if ev["ev"] == "place" and ev.get("inputs") and not self.arming:
                self.arming = True
                threading.Thread(target=self._kill_posted, args=(ex, ev["server"], ev["run"]), daemon=True).start()
            return
        if ev["ev"] != "get_ret":
            return
        gs = next((x for x in ex.G if x.run is not None and ev["id"].startswith(x.run.rid + "/")), None)
        if gs is None:
            return
        self._kill(ex, gs)

    def _kill_posted(self, ex, server: str, rid: str):
        try:
            gs = next(x for x in ex.G if x.name == server)
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and not (gs.run is not None and gs.run.rid == rid):
                time.sleep(0.001)
            if gs.run is not None and gs.run.rid == rid:
                self._kill(ex, gs)
        finally:
            self.arming = False

    def _kill(self, ex, gs):
        run, job = gs.run, gs.job                # read once: a kill thread races the executor's loop
        if run is None:
            return
        pid = self.c.guests[gs.g].proc.pid
        os.kill(pid, signal.SIGSTOP)
        if not launch.frozen(pid) or gs.jb.done(job):
            os.kill(pid, signal.SIGCONT)         # its run finished meanwhile: a later get is taken
            return
        self.c.kill(gs.g)
        k = {"in": self.kill_in, "g": gs.g, "server": gs.name, "run": run.rid,
             "t": round(time.monotonic() - ex.t_start, 3)}
        self.kills.append(k)
        threading.Thread(target=harness.reboot_after_fence, args=(self.c, self.d, k, LEASE_MS, self.done),
                         daemon=True).start()

    def _rejoined(self, k: dict, timeout: float = 240):
        deadline = time.time() + timeout
        while not (k.get("rebooted_after_s") and self.ex.G[k["g"]].alive):
            if "error" in k or time.time() > deadline:
                raise RuntimeError(f"killed guest did not come back: {k}: {self.c.console(k['g'])[-1500:]}")
            self.ex._watch()
            time.sleep(0.2)
        k["rejoined_epoch"] = self.ex.G[k["g"]].life[1]

    def run(self, wf, early: bool, kill: bool = True) -> dict:
        """One run of wf (outputs and history checked by the executor, ExecutorError otherwise);
        its summary with the kill."""
        mode = "early" if early else "after"
        self.ex.early = early
        self.kill_in = f"{wf.name}/{mode}" if kill else None
        self.ex.pause_first_reader_ms = harness.KILL_PAUSE_MS if kill else 0
        ref = exmod.host_reference(wf, "tiny", self.c.dir / "host")
        res = self.ex.run(wf, ref, timeout_s=300)
        rep = history.check_file(res["history"])
        if not rep.ok:
            raise exmod.ExecutorError(f"{wf.name} ({mode}): {rep}")
        k = next((k for k in self.kills if k["in"] == self.kill_in), None)
        if k:
            self._rejoined(k)
        Path(res["history"]).rename(Path(res["history"]).with_name(f"history-{wf.name}-{mode}.jsonl"))
        out = {k_: res[k_] for k_ in ("instances", "runs", "reexecuted", "gets", "hits", "puts", "wall_s",
                                      "early_runs", "early_before_commit", "stopped")}
        out["killed"] = k
        out["history_ok"] = True
        if self.placer:                         # the plugin never let a pod start where it must not
            if self.placer.violations():
                raise exmod.ExecutorError(f"{wf.name} ({mode}): placement violations {self.placer.violations()}")
            out["pods"] = sum(1 for c in self.placer.created if c["wf"] == self.placer.seq)
            out["pods_early"] = sum(1 for c in self.placer.created if c["wf"] == self.placer.seq and c.get("early"))
        self.log(f"qemu-early: {wf.name} {mode}: {json.dumps(out, default=str)}")
        return out

    def run_killed(self, wf, early: bool, tries: int = 3) -> dict:
        """`run` again (fresh objects) until a guest was killed in it: a run whose functions all
        finished before the kill hook could freeze one has no kill point, and a makespan without a
        kill is not comparable. `tries` = the runs it took."""
        for t in range(1, tries + 1):
            r = self.run(wf, early)
            if r["killed"]:
                break
        r["tries"] = t
        return r

    def close(self):
        self.done.set()
        if self.ex:
            self.ex.close()
        if self.e2e:
            self.e2e.close()
        self.c.stop_all()
        if self.d:
            self.d.close()
        left = [pid for pid in self.c.all_pids_ever() if launch.pid_alive(pid)]
        if left:
            raise RuntimeError(f"QEMU processes still alive: {left}")


def measure(names: list[str], run: str, log=print, no_kill: bool = False, kube: bool = False,
            slow_producer_ms: int = 0) -> dict:
    """Each workflow after completion, then early, a guest killed in each run; the makespan ratios
    (`no_kill`: the same pair again without a kill; `kube`: placed by kube-scheduler;
    `slow_producer_ms`: one more early run, without a kill, whose producers of an early instance's
    inputs (those placed after completion) wait that long before their function (JOBS.md `delay`),
    so that successors placed early start before the commit they name whatever the machine's
    timing: at tiny sizes a producer often commits before its successor's job is posted)."""
    b = Bench(run, log, kube=kube)
    try:
        per = {}
        for name in names:
            wf = wfmod.load(str(Path(wfmod.WORKFLOW_DIR) / f"{name}.json"))
            after, early = b.run_killed(wf, early=False), b.run_killed(wf, early=True)
            per[name] = {"after": after, "early": early,
                         "speedup": round(after["wall_s"] / early["wall_s"], 3)
                         if after["killed"] and early["killed"] else None}
            if no_kill:                          # the same pair without a kill: what early placement saves
                a0, e0 = b.run(wf, early=False, kill=False), b.run(wf, early=True, kill=False)
                per[name]["no_kill"] = {"after_s": a0["wall_s"], "early_s": e0["wall_s"],
                                        "speedup": round(a0["wall_s"] / e0["wall_s"], 3),
                                        "early_before_commit": e0["early_before_commit"]}
            if slow_producer_ms:
                b.ex.producer_delay_ms = slow_producer_ms
                try:
                    sp_ = b.run(wf, early=True, kill=False)
                finally:
                    b.ex.producer_delay_ms = 0
                per[name]["slow_producer"] = {k: sp_[k] for k in ("wall_s", "early_runs", "early_before_commit", "history_ok")}
        sp = [p["speedup"] for p in per.values() if p["speedup"]]
        return {
            "note": "functional emulation: TCG guests on 2 shared cores, region via /dev/mem (uncached MMIO); "
                    "makespan = executor wall time of a workflow with one guest SIGKILLed mid-run (fenced at the "
                    f"{LEASE_MS} ms lease, rebooted, rejoined); speedup = after-completion makespan / early makespan",
            "placer": "kube-scheduler with the Apta plugin" if kube else "the executor's own",
            "boot_s": b.boot_s, "lease_ms": LEASE_MS, "workflows": per,
            "geomean_speedup": round(math.exp(sum(map(math.log, sp)) / len(sp)), 3) if sp else None,
            "early_before_commit": sum(p["early"]["early_before_commit"] for p in per.values()),
            **({"slow_producer_ms": slow_producer_ms,
                "early_before_commit_slow_producer": sum(p["slow_producer"]["early_before_commit"] for p in per.values())}
               if slow_producer_ms else {}),
            **({"geomean_speedup_no_kill": round(math.exp(sum(math.log(p["no_kill"]["speedup"]) for p in per.values())
                                                          / len(per)), 3)} if no_kill else {}),
        }
    finally:
        b.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/bench/qemu-early.json")
    ap.add_argument("--workflows", default="finra,gemm,image,phi,sentiment,video")
    ap.add_argument("--no-kill-too", action="store_true", help="each pair again without a kill")
    ap.add_argument("--placer", choices=("executor", "kube"), default="executor",
                    help="kube: every pod placed by kube-scheduler with the Apta plugin")
    a = ap.parse_args()
    res = measure(a.workflows.split(","), "bench-early" + ("-kube" if a.placer == "kube" else ""),
                  log=lambda m: print(m, flush=True), no_kill=a.no_kill_too, kube=a.placer == "kube")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1, default=str) + "\n")
    print(json.dumps({n: p["speedup"] for n, p in res["workflows"].items()} | {"geomean": res["geomean_speedup"]}))
    if any(p["speedup"] is None for p in res["workflows"].values()):
        sys.exit("a run had no kill point in 3 tries: its ratio is missing")


if __name__ == "__main__":
    main()
