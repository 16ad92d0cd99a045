"""The scheduler plugin on a real kind cluster (issue 20), run by `make test-kind` after `make kind`
built the images and created the cluster (scheduler-plugin/kind/build.sh).

Everything is judged from the cluster's own view: the API server's pods, bindings and leases, the
nodes' annotations written by the agent, and the conforming control plane's log (the Deployment
of manifests/apta), where every function pod's start is judged (fenced server? another epoch than
the placement chose?). The test reaches the control plane by `kubectl port-forward` on 127.0.0.1.

- the manifests' Deployments run; our kube-scheduler holds the leader-election lease;
- a workflow of function pods (a pipeline, then a fan-out) placed by the Apta plugin: every pod
  bound with apta.io/placed-epoch and placed-seq, started, its start judged clean;
- a worker's node container `docker stop`ped mid-workflow and fenced by the test (the failure
  detector): the pods of the workflow's next stage that prefer it are bound elsewhere, nothing is
  bound there until it rejoins; after `docker start` and the rejoin (epoch 2) pods preferring it
  are bound there again, in epoch 2; the agent mirrored fenced=true then epoch 2;
- negative control, the default scheduler: with a worker fenced (alive), pods preferring it are
  bound there and the control plane logs their starts as violations;
- the network rule (docker.sh check) holds, and the check fails on a masquerading rule.
Needs APTA_KIND=1.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
B = ROOT / "build" / "kind"
KUBECONFIG = B / "kubeconfig"
KUBECTL = [str(B / "bin" / "kubectl"), "--kubeconfig", str(KUBECONFIG)]
DOCKER = "/usr/bin/docker"
NS = "apta-functions"
ENDPOINT = "http://apta-controlplane.kube-system.svc:7400"

pytestmark = pytest.mark.skipif(os.environ.get("APTA_KIND") != "1",
                                reason="the kind cluster test: set APTA_KIND=1 (make test-kind)")


def kubectl(*args, input: str | None = None, check=True) -> str:
    r = subprocess.run(KUBECTL + list(args), input=input, capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def kjson(*args) -> dict:
    return json.loads(kubectl(*args, "-o", "json"))


def wait_for(cond, what: str, timeout: float = 120.0, every: float = 0.5):
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.time() < deadline, f"{what}: not after {timeout} s"
        time.sleep(every)


def ts(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


class ControlPlane:
    """The conforming control plane of manifests/apta, through a port-forward on 127.0.0.1."""

    def __init__(self):
        # the one control-plane pod (build.sh's rollout restart may leave the old one terminating:
        # a port-forward to it dies with it, and its state with it)
        def one():
            ps = kjson("-n", "kube-system", "get", "pods", "-l", "app=apta-controlplane")["items"]
            ok = [p for p in ps if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
            return ok[0]["metadata"]["name"] if len(ps) == 1 and ok else None
        self.pod = wait_for(one, "a single running control-plane pod", 120)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(KUBECTL + ["-n", "kube-system", "port-forward", "--address", "127.0.0.1",
                                                f"pod/{self.pod}", f"{self.port}:7400"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.token = (B / "tokens" / "failure-detector").read_text().strip()
        wait_for(self._up, "port-forward to the control plane", 30)

    def _up(self):
        try:
            self.call("GET", "/v1/status")
            return True
        except OSError:
            return False

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        assert self.proc.poll() is None, f"the port-forward to {self.pod} ended: {self.proc.stdout.read()}"
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def server(self, name: str) -> dict:
        return next(s for s in self.call("GET", "/v1/status")["servers"] if s["name"] == name)

    def invocations(self) -> dict[str, dict]:
        return {e["pod"]: e for e in self.call("GET", "/v1/log") if e["op"] == "invoke"}

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def cluster():
    assert KUBECONFIG.exists(), "no cluster: make kind first (make test-kind does)"
    workers = sorted(n["metadata"]["name"] for n in kjson("get", "nodes")["items"]
                     if "node-role.kubernetes.io/control-plane" not in n["metadata"]["labels"])
    assert len(workers) == 3, workers
    kubectl("create", "namespace", NS, check=False)
    tok = (B / "tokens" / "kubelet").read_text().strip()
    kubectl("-n", NS, "apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "apta-kubelet-token"},
        "type": "Opaque", "stringData": {"token": tok}}))
    cp = ControlPlane()
    known = {s["name"] for s in cp.call("GET", "/v1/status")["servers"]}
    for w in workers:
        if w not in known:
            cp.call("POST", "/v1/servers", {"server": w})
    try:
        yield {"workers": workers, "cp": cp}
    finally:
        cp.close()
        for w in workers:  # a node left stopped by a failed test
            subprocess.run([DOCKER, "start", w], capture_output=True)


def function_pod(name: str, scheduler: str | None = "apta-scheduler", prefer: str | None = None,
                 preds: list[str] = ()) -> dict:
    env = [{"name": "POD", "value": name},
           {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "EPOCH", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['apta.io/placed-epoch']"}}},
           {"name": "APTA_ENDPOINT", "value": ENDPOINT}]
    spec = {"restartPolicy": "Never",
            "containers": [{"name": "fn", "image": "apta-function:dev", "imagePullPolicy": "Never", "env": env,
                            "volumeMounts": [{"name": "token", "mountPath": "/etc/apta-token", "readOnly": True}]}],
            "volumes": [{"name": "token", "secret": {"secretName": "apta-kubelet-token"}}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "apta.io/compute-server", "operator": "Exists"}]}]}}}}
    if prefer:
        spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": 100, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [prefer]}]}}]
    meta = {"name": name, "annotations": {}}
    if scheduler:
        spec["schedulerName"] = scheduler
        meta["labels"] = {"apta.io/function": name.split("-")[0]}
        if preds:
            meta["annotations"]["apta.io/predecessor-nodes"] = ",".join(preds)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def run_stage(names: list[str], **kw) -> dict[str, dict]:
    for n in names:
        kubectl("-n", NS, "apply", "-f", "-", input=json.dumps(function_pod(n, **kw)))
    return {n: wait_for(lambda n=n: bound(n), f"pod {n} bound", 60) for n in names}


def bound(name: str) -> dict | None:
    p = kjson("-n", NS, "get", "pod", name)
    return p if p["spec"].get("nodeName") else None


def finished(name: str) -> dict | None:
    p = kjson("-n", NS, "get", "pod", name)
    return p if p["status"].get("phase") in ("Succeeded", "Failed") else None


def test_manifests_run_with_leader_election(cluster):
    for d in ("apta-scheduler", "apta-agent", "apta-controlplane"):
        dep = kjson("-n", "kube-system", "get", "deployment", d)
        assert dep["status"].get("availableReplicas") == 1, (d, dep["status"])
    # deployment.yaml keeps them off the compute servers, whose failures they handle
    workers = set(cluster["workers"])
    for app in ("apta-scheduler", "apta-agent", "apta-controlplane"):
        for p in kjson("-n", "kube-system", "get", "pods", "-l", f"app={app}")["items"]:
            assert p["spec"].get("nodeName") not in workers, (app, p["spec"].get("nodeName"))
    lease = kjson("-n", "kube-system", "get", "lease", "apta-scheduler")
    holder = lease["spec"].get("holderIdentity", "")
    pods = [p["metadata"]["name"] for p in kjson("-n", "kube-system", "get", "pods", "-l", "app=apta-scheduler")["items"]]
    assert any(holder.startswith(p) for p in pods), (holder, pods)


def test_network_rule_holds_and_its_check_has_teeth():
    check = [str(ROOT / "scheduler-plugin" / "kind" / "docker.sh"), "check"]
    assert subprocess.run(check, capture_output=True).returncode == 0
    subnet = subprocess.run([DOCKER, "network", "inspect", "-f", "{{(index .IPAM.Config 0).Subnet}}", "apta-kind"],
                            capture_output=True, text=True, check=True).stdout.strip()
    rule = ["POSTROUTING", "-s", subnet, "!", "-o", "apta-kind0", "-j", "MASQUERADE"]
    subprocess.run(["iptables", "-t", "nat", "-I"] + rule, check=True)
    try:
        r = subprocess.run(check, capture_output=True, text=True)
    finally:
        subprocess.run(["iptables", "-t", "nat", "-D"] + rule, check=True)
    assert r.returncode != 0 and "masquerading" in r.stderr, r.stderr


def test_workflow_with_a_worker_stopped(cluster):
    cp, workers = cluster["cp"], cluster["workers"]
    victim = workers[1]
    t0 = time.time()
    # stage 1: a pipeline of three functions
    placed = {}
    prev: list[str] = []
    for i in range(3):
        n = f"wf-s1-{i}"
        p = run_stage([n], preds=prev)[n]
        placed[n] = p
        wait_for(lambda n=n: finished(n), f"{n} finished", 90)
        prev = [p["spec"]["nodeName"]]
    t_pipeline = time.time() - t0
    # stage 2 starts; its pods prefer the victim; the victim's node container is stopped and the
    # failure detector (this test) fences it before any of them is created
    assert cp.server(victim)["epoch"] == 1
    subprocess.run([DOCKER, "stop", "-t", "1", victim], check=True, capture_output=True)
    cp.call("POST", f"/v1/servers/{victim}/fence")
    wait_for(lambda: kjson("get", "node", victim)["metadata"].get("annotations", {}).get("apta.io/fenced") == "true",
             "the agent mirrors the fence", 30)
    s2 = [f"wf-s2-{i}" for i in range(4)]
    t2 = time.time()
    got = run_stage(s2, prefer=victim)
    placed.update(got)
    assert all(p["spec"]["nodeName"] != victim for p in got.values()), {n: p["spec"]["nodeName"] for n, p in got.items()}
    for n in s2:
        wait_for(lambda n=n: finished(n), f"{n} finished", 90)
    t_fanout = time.time() - t2
    # the victim comes back: docker start, Ready, rejoin in epoch 2; pods preferring it go there
    subprocess.run([DOCKER, "start", victim], check=True, capture_output=True)
    wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                         for c in kjson("get", "node", victim)["status"]["conditions"]), f"{victim} Ready", 180)
    cp.call("POST", f"/v1/servers/{victim}/rejoin")
    assert cp.server(victim)["epoch"] == 2
    wait_for(lambda: kjson("get", "node", victim)["metadata"].get("annotations", {}).get("apta.io/epoch") == "2",
             "the agent mirrors epoch 2", 30)
    s3 = [f"wf-s3-{i}" for i in range(2)]
    got = run_stage(s3, prefer=victim)
    placed.update(got)
    assert any(p["spec"]["nodeName"] == victim for p in got.values()), "nothing placed on the rejoined worker"
    for n in s3:
        wait_for(lambda n=n: finished(n), f"{n} finished", 90)
    makespan = time.time() - t0
    # the control plane's view: every pod bound with its placement epoch, started, judged clean
    inv = cp.invocations()
    lat = []
    for n in placed:
        p = kjson("-n", NS, "get", "pod", n)
        a = p["metadata"]["annotations"]
        assert "apta.io/placed-epoch" in a and "apta.io/placed-seq" in a, (n, a)
        want = "2" if (n.startswith("wf-s3") and p["spec"]["nodeName"] == victim) else "1"
        assert a["apta.io/placed-epoch"] == want, (n, p["spec"]["nodeName"], a)
        assert p["status"]["phase"] == "Succeeded", (n, p["status"])
        assert n in inv, f"{n}: no start in the control plane's log"
        assert not inv[n].get("violation"), inv[n]
        started = p["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"]
        lat.append(ts(started) - ts(p["metadata"]["creationTimestamp"]))
    out = {"makespan_s": round(makespan, 1), "pipeline_3_pods_s": round(t_pipeline, 1),
           "fanout_4_pods_with_a_worker_down_s": round(t_fanout, 1), "pods": len(placed),
           "pod_start_latency_s": {"min": min(lat), "median": sorted(lat)[len(lat) // 2], "max": max(lat)}}
    (B / "test-kind.json").write_text(json.dumps(out, indent=1))
    print("kind workflow:", out)


def test_negative_control_default_scheduler(cluster):
    cp, workers = cluster["cp"], cluster["workers"]
    victim = workers[2]
    cp.call("POST", f"/v1/servers/{victim}/fence")
    try:
        names = [f"neg-{i}" for i in range(3)]
        got = run_stage(names, scheduler=None, prefer=victim)
        for n in names:
            wait_for(lambda n=n: finished(n), f"{n} finished", 90)
        on_victim = [n for n, p in got.items() if p["spec"]["nodeName"] == victim]
        inv = cp.invocations()
        violations = [n for n in names if inv.get(n, {}).get("violation")]
        assert on_victim and violations, (on_victim, {n: inv.get(n) for n in names})
        # the plugin, same preference, same fenced worker: never there
        got = run_stage(["pos-0", "pos-1"], prefer=victim)
        assert all(p["spec"]["nodeName"] != victim for p in got.values())
    finally:
        with contextlib.suppress(Exception):
            cp.call("POST", f"/v1/servers/{victim}/rejoin")
