"""The scheduler plugin on a real kind cluster, run by `make test-kind` after `make kind`
built the images and created the cluster (scheduler-plugin/kind/build.sh).

Everything is judged from the cluster's own view: the API server's pods, bindings and leases, the
nodes' annotations written by the agent, the conforming control plane's log of judged starts (the
first three tests), then the memory-server daemon's state and the executor's history.

- the manifests' Deployments run; our kube-scheduler holds the leader-election lease;
- the network rule (docker.sh check) holds, and the check fails on a masquerading rule;
- negative control on the conforming control plane: with a worker fenced (alive), pods of the
  default scheduler preferring it are bound there and logged as violations; the plugin's are not;
- the six workflows on the cluster (README "The workflows on kind"): the daemon on the host serving
  build/kind/rack (the workers' /apta/rack), the manifests' Service pointed at it, a runner per
  worker (runner.yaml), every function a pod placed by our scheduler that admits its own start with
  the placed epoch and ends with its function's rc; outputs equal to the host run's, histories
  clean; a worker `docker stop`ped at a function pod's admission: fenced by the daemon, mirrored by
  the agent, the function placed again elsewhere, nothing bound there until it is back, its runner
  rejoined in the next epoch, a workflow pinned to it completes there;
- negative control on the daemon: a fenced live worker preferred by a workflow's pods: the default
  scheduler binds them there (violations), the plugin does not;
- the function container's own admission: a pod bound with a stale placed epoch ends Failed
  naming both epochs, one with the current epoch is admitted;
- the host-runner e2e's makespans of the same workflows beside the cluster's: build/bench/kind.json.
Needs APTA_KIND=1.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
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
        for w in workers:  # a node left paused or stopped by a failed test
            subprocess.run([DOCKER, "unpause", w], capture_output=True)
            subprocess.run([DOCKER, "start", w], capture_output=True)


def function_pod(name: str, scheduler: str | None = "apta-scheduler", prefer: str | None = None,
                 preds: list[str] = ()) -> dict:
    env = [{"name": "POD", "value": name},
           {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "EPOCH", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['apta.io/placed-epoch']"}}},
           {"name": "APTA_ENDPOINT", "value": ENDPOINT}]
    spec = {"restartPolicy": "Never",
            "containers": [{"name": "fn", "image": "apta-function:dev", "imagePullPolicy": "Never", "env": env,
                            "command": ["/usr/local/bin/apta-report"],
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
    # the lease names a running scheduler pod; a replica that exited released it (holder ""), and
    # its successor takes it within the lease duration, so this waits rather than reads once
    seen = {}

    def held():
        seen["holder"] = kjson("-n", "kube-system", "get", "lease", "apta-scheduler")["spec"].get("holderIdentity", "")
        seen["pods"] = [p["metadata"]["name"] for p in
                        kjson("-n", "kube-system", "get", "pods", "-l", "app=apta-scheduler")["items"]]
        return any(seen["holder"].startswith(p) for p in seen["pods"])
    try:
        wait_for(held, "the apta-scheduler lease held by a running scheduler pod", 90, every=2)
    except AssertionError as e:
        raise AssertionError(f"{e}; last seen {seen}") from None


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


# ---- the workflows on the cluster: the memory-server daemon on the host, runners and function pods
# (scheduler-plugin/README.md "Workflows on kind"). The tests above use the conforming control
# plane of manifests/apta; from here on its Service leads to the daemon instead.

RACK = B / "rack"                     # cluster.yaml's extraMounts: /apta/rack in every worker
LEASE_MS = 2000                       # the daemon's heartbeat lease (a loaded 2-core machine runs the cluster)
OUT = ROOT / "build" / "kind" / "workflows"


class Relay:
    """The daemon's API (127.0.0.1 only) relayed to the cluster's bridge address on this machine
    (the Service apta-controlplane's endpoint): one thread, select() over the pairs of sockets."""

    def __init__(self, host: str, target: int):
        import selectors
        import threading
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind((host, 0))
        self.ls.listen(64)
        self.ls.setblocking(False)
        self.host, self.port, self.target = host, self.ls.getsockname()[1], target
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.ls, selectors.EVENT_READ, None)
        self.stop = False
        self.connections = 0
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()

    def _loop(self):
        import selectors
        while not self.stop:
            for key, _ in self.sel.select(0.2):
                if key.data is None:
                    try:
                        c, _ = self.ls.accept()
                        u = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                    except OSError:
                        continue
                    self.connections += 1
                    for a, b in ((c, u), (u, c)):
                        a.setblocking(False)
                        self.sel.register(a, selectors.EVENT_READ, b)
                    continue
                a, b = key.fileobj, key.data
                try:
                    d = a.recv(65536)
                    if d:
                        b.setblocking(True)
                        b.sendall(d)
                        b.setblocking(False)
                        continue
                except OSError:
                    pass
                for x in (a, b):
                    with contextlib.suppress(KeyError, ValueError):
                        self.sel.unregister(x)
                    x.close()

    def close(self):
        self.stop = True
        self.t.join(5)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


class PlainTokenApi:
    """executor.Api with a bearer token over plain HTTP (the daemon serves the cluster's bridge
    through the relay without TLS, as the manifests' endpoint is http://): executor.Api takes
    `auth` to mean TLS, so the test gives the executor this class instead."""

    def __init__(self, token: str):
        self.token = token

    def make(self, exmod):
        tok = self.token

        class Api(exmod.Api):
            def __init__(self, port, host="127.0.0.1", auth=None):
                self.auth, self.ctx, self.base = self, None, f"http://{host}:{port}"

            def header(self, method, path):
                return {"Authorization": f"Bearer {tok}"}
        return Api


def token(name: str) -> str:
    p = B / "tokens" / name
    if not p.exists():
        p.write_text(base64_token())
    return p.read_text().strip()


def base64_token() -> str:
    import base64
    return base64.b64encode(os.urandom(32)).decode().translate({ord(c): None for c in "/+="})


def gateway() -> str:
    return subprocess.run([DOCKER, "network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", "apta-kind"],
                          capture_output=True, text=True, check=True).stdout.strip()


def pod_template(plugin: bool = True) -> dict:
    """A function pod (KubePlacer fills name, labels, annotations, affinity): function/apta-function
    on the rack directory, with the placed epoch and the inputs from the downward API."""
    from apta.qemu import harness
    ann = lambda k: {"valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{k}']"}}}
    env = [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "EPOCH", **ann("apta.io/placed-epoch")},
           {"name": "INPUTS", **ann("apta.io/inputs")},
           {"name": "ENDPOINT", "value": ENDPOINT}]
    env += [{"name": f"JOB_{f.upper()}", "value": str(harness.LAY.job_field(n))}
            for f, n in (("post", "post_seq"), ("done", "done_seq"), ("rc", "rc"))]
    spec = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "activeDeadlineSeconds": 600,
            "containers": [{"name": "fn", "image": "apta-function:dev", "imagePullPolicy": "Never",
                            "command": ["/usr/local/bin/apta-function"], "env": env,
                            "volumeMounts": [{"name": "rack", "mountPath": "/apta/rack"},
                                             {"name": "token", "mountPath": "/etc/apta-token", "readOnly": True}]}],
            "volumes": [{"name": "rack", "hostPath": {"path": "/apta/rack", "type": "Directory"}},
                        {"name": "token", "secret": {"secretName": "apta-kubelet-token"}}]}
    if plugin:
        spec["schedulerName"] = "apta-scheduler"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "template"}, "spec": spec}


def kube_access(workers: list[str], plugin: bool = True) -> dict:
    """kube.py's access for the kind cluster: its API server (127.0.0.1), a ServiceAccount token
    that may manage pods in NS, the nodes (each worker is the compute server of its name)."""
    import base64
    import yaml
    kc = yaml.safe_load(KUBECONFIG.read_text())
    cl = kc["clusters"][0]["cluster"]
    rbac = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "apta-executor", "namespace": NS}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "apta-executor", "namespace": NS},
             "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "create", "delete"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "apta-executor", "namespace": NS},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "apta-executor"},
             "subjects": [{"kind": "ServiceAccount", "name": "apta-executor", "namespace": NS}]}]
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac}))
    tok = kubectl("-n", NS, "create", "token", "apta-executor", "--duration", "3h").strip()
    return {"server": cl["server"], "ca": base64.b64decode(cl["certificate-authority-data"]).decode(), "token": tok,
            # (manifests/apta's admission policy refuses a pod labelled apta.io/function that is not
            # the plugin's: the default scheduler's pods of the negative control carry another label)
            "namespace": NS, "nodes": {w: w for w in workers}, "pod": pod_template(plugin),
            "label": "apta.io/function" if plugin else "apta.io/negative-control",
            "plugin": plugin,
            "annotations": {"inputs": "apta.io/inputs", "predecessorNodes": "apta.io/predecessor-nodes",
                            "minSeq": "apta.io/min-seq", "minSeqInstance": "apta.io/min-seq-instance",
                            "placedEpoch": "apta.io/placed-epoch", "placedSeq": "apta.io/placed-seq"}}


def make_placer(kubemod, access: dict):
    class KindPlacer(kubemod.KubePlacer):
        """KubePlacer whose starts are the function pods' own: a bound pod's container admits its
        start (function/apta-function: the daemon's answer and the placed epoch) and announces it
        in admit/<pod>; only then is the function's job posted to the node's runner. A pod whose
        container refused ends Failed: the start is refused (a violation if the daemon reported the
        server unschedulable for the pod's inputs when the pod was created) and a new pod made."""

        def __call__(self, ex, k, inst, ids):
            pod = self.pods.get(k)
            if pod is not None:
                now = time.monotonic()
                if now - self._list_t >= self.list_every_s:
                    self._listed, self._list_t = self.k.pods(), now
                cur = self._listed.get(pod["name"])
                if cur is None and pod.get("seen"):      # gone (evicted from a lost node): a new pod
                    del self.pods[k]
                    return None
                node = cur and cur["spec"].get("nodeName")
                if not node:
                    return None
                pod["seen"] = True
                server = self.k.acc["nodes"].get(node)
                gs = next((g for g in ex.G if g.name == server), None)
                st = (cur.get("status", {}).get("containerStatuses") or [{}])[0].get("state", {})
                if cur["status"].get("phase") == "Failed" or "terminated" in st:
                    msg = st.get("terminated", {}).get("message", "").strip() or cur["status"].get("reason", "failed")
                    s = next((x for x in ex.api.servers(ids) if x["name"] == server), None)
                    self.pod_refusals.append({"pod": pod["name"], "server": server, "why": msg})
                    return self._refuse(ex, k, pod, server, f"its container: {msg}", s)
                adm = RACK / "admit" / pod["name"]
                if not adm.exists():
                    # not admitted yet: waits for its node's runner, unless that server is lost
                    # (then KubePlacer refuses the start: a new pod)
                    if gs is not None and (not gs.alive or gs.fenced):
                        return super().__call__(ex, k, inst, ids)
                    return None
                if not pod.get("admitted"):
                    pod["admitted"] = True
                    self.admitted.append({"pod": pod["name"], "server": server, "wf": self.seq})
                    self.on_admit(ex, pod["name"], server)
                if gs is None or int(adm.read_text().split()[-1]) != gs.jb.post_seq:
                    return None
            return super().__call__(ex, k, inst, ids)

    p = KindPlacer(kubemod.Kube(access), list_every_s=0.25, retry_after_s=0.5)
    p.pod_refusals, p.admitted = [], []
    p.on_admit = lambda ex, pod, server: None
    return p


def pod_times(p: dict) -> dict:
    """The cluster's own timestamps of a pod (1 s resolution): created, scheduled, container started."""
    out = {"created": ts(p["metadata"]["creationTimestamp"])}
    for c in p["status"].get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "True":
            out["scheduled"] = ts(c["lastTransitionTime"])
    st = (p["status"].get("containerStatuses") or [{}])[0].get("state", {})
    for k in ("running", "terminated"):
        if st.get(k, {}).get("startedAt"):
            out["started"] = ts(st[k]["startedAt"])
    return out


@pytest.fixture(scope="module")
def daemon_world(cluster):
    """The memory-server daemon on build/kind/rack (the workers' /apta/rack), its API relayed to the
    cluster's bridge address, the Service apta-controlplane pointed at it (the plugin and the agent
    of manifests/apta now read the daemon), routes back to the pods' networks, the runners'
    DaemonSet. All of it undone at the end, even on failure."""
    from apta.qemu import harness
    workers = cluster["workers"]
    exe = harness.build_daemon()
    schema = harness.load_schema()
    assert schema.params["servers"] == len(workers), (schema.params["servers"], workers)
    names = {"scheduler": "reader", "agent": "reader", "kubelet": "kubelet",
             "failure-detector": "failure-detector", "executor": "object-manager"}
    tf = B / "tokens" / "daemon-tokens.csv"
    tf.write_text("".join(f"{token(n)},apta-{n},{r}\n" for n, r in names.items()))
    undo = []
    rack = relay = None
    try:
        for p in (RACK / "admit").glob("*"):
            p.unlink()
        # function pods of an earlier run on the same cluster (their names would be taken)
        for lab in ("apta.io/function", "apta.io/negative-control"):
            kubectl("-n", NS, "delete", "pods", "-l", lab, "--grace-period=0", "--force", check=False)
        rack = harness.Rack(exe, schema, B, lease_ms=LEASE_MS, data_bytes=harness.WORLD_DATA_BYTES,
                            token=token("executor"),
                            extra=["--names", ",".join(workers), "--token-file", str(tf), "--rejoin-rate", "0"])
        undo.append(rack.close)
        (RACK / "guests").write_text("".join(f"{w} {g} {harness.LAY.guest_path(RACK, g).name}\n"
                                             for g, w in enumerate(workers)))
        gw = gateway()
        relay = Relay(gw, rack.port)
        undo.append(relay.close)
        # the pods reach the relay from their own addresses: this machine routes the answers back
        # to each node's pod network through that node (never off the machine)
        # (again after a node's restart: docker may give it another address)
        def route_pods():
            for n in kjson("get", "nodes")["items"]:
                cidr = n["spec"].get("podCIDR")
                ip = subprocess.run([DOCKER, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                                     n["metadata"]["name"]], capture_output=True, text=True, check=True).stdout.strip()
                subprocess.run(["ip", "route", "replace", cidr, "via", ip, "dev", "apta-kind0"], check=True)
                if cidr not in routed:
                    routed.add(cidr)
                    undo.append(lambda cidr=cidr: subprocess.run(["ip", "route", "del", cidr], capture_output=True))
        routed: set = set()
        route_pods()
        # the manifests' Service now leads to the daemon (its conforming control plane scaled to 0)
        kubectl("-n", "kube-system", "scale", "deployment", "apta-controlplane", "--replicas=0")
        kubectl("-n", "kube-system", "patch", "service", "apta-controlplane", "--type=merge", "-p", '{"spec": {"selector": null}}')
        kubectl("-n", "kube-system", "apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "apta-controlplane", "namespace": "kube-system"},
            "subsets": [{"addresses": [{"ip": gw}], "ports": [{"port": relay.port}]}]}))
        again = bool(kubectl("-n", NS, "get", "daemonset", "apta-runner", "--ignore-not-found", "-o", "name"))
        kubectl("apply", "-f", str(ROOT / "scheduler-plugin" / "kind" / "runner.yaml"))
        if again:  # runners of an earlier daemon (a second run on the same cluster) start again at once
            kubectl("-n", NS, "delete", "pod", "-l", "app=apta-runner", "--wait=false")
        undo.append(lambda: kubectl("-n", NS, "delete", "daemonset", "apta-runner", "--wait=false", check=False))
        # the runners rejoin (epoch 1); then the Python heartbeats of the Rack stop: theirs count
        wait_for(lambda: all(rack.server(g)["epoch"] >= 1 for g in range(len(workers))), "three runners rejoined", 120)
        for g in rack.guests:
            g.alive = False
        # the agent mirrors the daemon's view onto the nodes
        wait_for(lambda: all(kjson("get", "node", w)["metadata"].get("annotations", {}).get("apta.io/epoch") == str(rack.server(g)["epoch"])
                             for g, w in enumerate(workers)), "the agent mirrors the daemon's epochs onto the workers", 60)
        yield {"rack": rack, "relay": relay, "workers": workers, "cp": cluster["cp"], "route_pods": route_pods}
    finally:
        for f in reversed(undo):
            with contextlib.suppress(Exception):
                f()
        if rack is not None:
            sys.stderr.write(rack.log.read_text()[-1500:])


def executor_for(dw, placer, first_obj: int):
    from apta.qemu import executor as exmod
    from unittest import mock
    with mock.patch.object(exmod, "Api", PlainTokenApi(token("executor")).make(exmod)):
        return exmod.Executor(RACK, dw["rack"].port, guests=len(dw["workers"]), out_dir=OUT, first_obj=first_obj,
                              placer=placer, dead_after_s=LEASE_MS / 1000)


def run_workflows(dw, tmp_path, stop_during: str | None = None) -> dict:
    """The six workflows through the cluster: the executor (qemu-cxl/executor.py) on this machine
    registers objects and posts jobs, the KindPlacer places by pods; with `stop_during`, the
    worker running that workflow's second function is `docker stop`ped at its placement and
    started again once the workflow is over."""
    from apta.qemu import executor as exmod
    from apta.qemu import kube as kubemod
    from unittest import mock
    from apta import workflow as wfmod
    placer = make_placer(kubemod, kube_access(dw["workers"]))
    with mock.patch.object(exmod, "Api", PlainTokenApi(token("executor")).make(exmod)):
        ex = exmod.Executor(RACK, dw["rack"].port, guests=len(dw["workers"]), out_dir=OUT, first_obj=100,
                            placer=placer, dead_after_s=LEASE_MS / 1000)
    stopped = {}

    def on_admit(ex_, pod, server):
        # the workflow's second admitted function pod: its node container is stopped right there,
        # before the function's job is posted (a tiny function would finish before any stop); the
        # daemon fences the silent worker when its runner's lease runs out; the agent mirrors that
        if ex_.wf.name != stop_during or stopped or len([a for a in placer.admitted if a["wf"] == placer.seq]) != 2:
            return
        g = dw["workers"].index(server)
        stopped["epoch"] = dw["rack"].server(g)["epoch"]
        stopped.update(node=server, pod=pod, k=next(k for k, p in placer.pods.items() if p["name"] == pod), admitted_wall=time.time())
        subprocess.run([DOCKER, "stop", "-t", "1", server], check=True, capture_output=True)
        stopped["stopped_wall"] = time.time()
        stopped["daemon_fenced"] = wait_for(lambda: (lambda s: s["fenced"] and s)(dw["rack"].server(g)),
                                            "the daemon fences the stopped worker", 30, 0.05)
        stopped["fenced_wall"] = time.time()

        def mirrored():
            try:
                wait_for(lambda: kjson("get", "node", server)["metadata"].get("annotations", {}).get("apta.io/fenced") == "true",
                         "the agent mirrors the fence onto the node", 60)
                stopped["mirrored_wall"] = time.time()
            except BaseException as e:  # noqa: BLE001 (reported by the test)
                stopped["error"] = repr(e)
        stopped["thread"] = threading.Thread(target=mirrored, daemon=True)
        stopped["thread"].start()
    placer.on_admit = on_admit
    res = {}
    try:
        for wf in wfmod.load_all():
            t0 = time.time()
            try:
                r = ex.run(wf, exmod.host_reference(wf, "tiny", tmp_path), timeout_s=240)
            except exmod.ExecutorError as e:
                raise AssertionError(f"{e}; pods waiting: {placer.waiting()}") from None
            r["makespan_s"] = round(time.time() - t0, 2)
            res[wf.name] = r
            print(f"kind: {wf.name}: {r['instances']} instances, {r['runs']} runs, {r['makespan_s']} s")
            if stopped and "started_wall" not in stopped:
                stopped["thread"].join(120)
                subprocess.run([DOCKER, "start", stopped["node"]], check=True, capture_output=True)
                stopped["started_wall"] = time.time()
                # the node's runner comes back (kubelet restarts the DaemonSet's pod) and rejoins
                g = dw["workers"].index(stopped["node"])
                dw["route_pods"]()
                wait_for(lambda: (ex._watch(), ex.G[g].alive and not ex.G[g].fenced)[1],
                         f"{stopped['node']}'s runner rejoined", 240)
                stopped["rejoined_wall"] = time.time()
        pinned = None
        if stopped:
            # the rejoined worker takes work again: a workflow whose pods must go there (a required
            # node selector; the plugin still filters a fenced or stale-epoch server out)
            placer.pin = stopped["node"]
            wf = next(w for w in wfmod.load_all() if w.name == "image")
            pinned = ex.run(wf, exmod.host_reference(wf, "tiny", tmp_path), timeout_s=240)
            placer.pin = None
    finally:
        ex.close()
    return {"results": res, "placer": placer, "executor": ex, "stopped": stopped, "pinned": pinned}


STOP_DURING = "gemm"                  # the workflow whose second placement's worker is docker-stopped
MEASURED: dict = {}                   # for build/bench/kind.json (test_host_runner_makespans writes it)


def test_six_workflows_on_the_cluster_with_a_worker_stopped(daemon_world, tmp_path):
    dw = daemon_world
    rack, workers = dw["rack"], dw["workers"]
    r = run_workflows(dw, tmp_path, stop_during=STOP_DURING)
    res, placer, ex, st = r["results"], r["placer"], r["executor"], r["stopped"]
    # the six workflows: outputs equal to the host's and histories clean (ex.run raises otherwise)
    assert sorted(res) == sorted(w.name for w in __import__("apta.workflow", fromlist=["x"]).load_all())
    assert all(x["outputs_equal"] and not x["violations"] for x in res.values()), res
    # the stop: a worker's node container stopped after a run was placed there; the daemon fenced
    # it (the lease); the run was placed again elsewhere; the node came back and its runner
    # rejoined in epoch 2 (the daemon's state)
    victim = st.get("node")
    assert victim and st.get("rejoined_wall"), st
    g = workers.index(victim)
    e0 = st["epoch"]                  # the stopped worker's epoch (1 unless its runner restarted)
    assert st["daemon_fenced"]["epoch"] == e0, (st["daemon_fenced"], e0)
    assert "error" not in st, st
    # the function admitted on the stopped worker was placed again: a new pod, started elsewhere
    wf_seq = next(c["wf"] for c in placer.created if c["pod"] == st["pod"])
    again = [c["pod"] for c in placer.created if c["k"] == st["k"] and c["wf"] == wf_seq and c["pod"] != st["pod"]]
    started = [x for x in placer.starts if x["pod"] in again]
    assert len(started) == 1 and started[0]["server"] != victim, (st, again, placer.starts)
    assert st["pod"] not in {x["pod"] for x in placer.starts}
    now = rack.server(g)
    assert now["epoch"] == e0 + 1 and not now["fenced"] and now["live"], (now, e0)
    assert [e["ev"] for e in ex.liveness if e["server"] == victim][:3] == ["crash", "fence", "rejoin"], ex.liveness
    wait_for(lambda: kjson("get", "node", victim)["metadata"].get("annotations", {}).get("apta.io/epoch") == str(e0 + 1),
             "the agent mirrors the new epoch", 60)
    # the control plane's view: every binding carries the plugin's placed epoch and seq; nothing
    # was bound to the victim from its fence until its rejoin (PodScheduled, 1 s resolution); what
    # was bound there afterwards was placed in epoch 2, and something was
    assert placer.bindings and all(b["placedEpoch"] and b["placedSeq"] for b in placer.bindings), placer.bindings
    assert not placer.violations(), placer.violations()
    live = {p["metadata"]["name"]: p for p in kjson("-n", NS, "get", "pods")["items"]}
    on_victim = []
    for b in placer.bindings:
        if b["node"] != victim:
            continue
        p = live.get(b["pod"])
        t = pod_times(p).get("scheduled") if p else None
        on_victim.append((b["pod"], b["placedEpoch"], t))
        if b["placedEpoch"] == str(e0):
            assert t is None or t <= st["fenced_wall"] + 1, (b, t, st)
        else:
            assert b["placedEpoch"] == str(e0 + 1) and (t is None or t >= st["started_wall"] - 1), (b, t, st)
    pinned = r["pinned"]
    assert pinned and pinned["outputs_equal"] and not pinned["violations"] and set(pinned["placement"].values()) == {victim}, pinned
    after = [x for x in on_victim if x[1] == str(e0 + 1)]
    assert after, f"nothing placed on {victim} after its rejoin: {on_victim}"
    # every instance ran once to completion in a pod that ended Succeeded (the function's rc 0)
    # (the kubelet reports a container's exit a moment after the job's end)
    want = sum(x["instances"] for x in res.values()) + pinned["instances"]

    def succeeded():
        nonlocal live
        live = {p["metadata"]["name"]: p for p in kjson("-n", NS, "get", "pods")["items"]}
        return [s_["pod"] for s_ in placer.starts if live.get(s_["pod"], {}).get("status", {}).get("phase") == "Succeeded"]
    with contextlib.suppress(AssertionError):
        wait_for(lambda: len(succeeded()) == want, "every started pod Succeeded", 30)
    ok = succeeded()
    assert len(ok) == want == len(placer.starts), (len(ok), want, [s_["pod"] for s_ in placer.starts if s_["pod"] not in ok])
    # measured: makespans and the cluster's own pod timestamps
    times = [pod_times(live[n]) for n in ok]
    sched = sorted(t["scheduled"] - t["created"] for t in times if "scheduled" in t)
    start = sorted(t["started"] - t["created"] for t in times if "started" in t)
    med = lambda xs: xs[len(xs) // 2]
    MEASURED["cluster"] = {
        "makespan_s": {n: x["makespan_s"] for n, x in res.items()},
        "runs": {n: x["runs"] for n, x in res.items()}, "instances": {n: x["instances"] for n, x in res.items()},
        "stopped_during": STOP_DURING, "stopped_node": victim, "stopped_in_epoch": e0,
        "fenced_after_stop_s": round(st["fenced_wall"] - st["stopped_wall"], 2),
        "agent_mirrored_after_stop_s": round(st["mirrored_wall"] - st["stopped_wall"], 2),
        "rejoined_after_start_s": round(st["rejoined_wall"] - st["started_wall"], 1),
        "pods_succeeded": len(ok), "pods_created": len(placer.created), "starts_refused": len(placer.refusals),
        "pod_created_to_scheduled_s": {"median": med(sched), "max": sched[-1], "n": len(sched)},
        "pod_created_to_started_s": {"median": med(start), "max": start[-1], "n": len(start)},
        "on_victim": on_victim}
    print("kind workflows:", json.dumps(MEASURED["cluster"]))


def test_negative_control_default_scheduler_on_the_daemon(daemon_world, tmp_path):
    """The daemon fences a live worker (the failure detector's API call); a workflow's pods prefer
    it. The default scheduler binds them there: their containers refuse the start (fenced), which
    KubePlacer counts as violations (the daemon reported the server unschedulable when the pods were
    created); the workflow still completes on the others. The plugin, same preference: none."""
    from apta.qemu import executor as exmod
    from apta.qemu import kube as kubemod
    from apta import workflow as wfmod
    dw = daemon_world
    workers, rack = dw["workers"], dw["rack"]
    victim = workers[0]
    g = 0
    wf = next(w for w in wfmod.load_all() if w.name == "sentiment")
    ref = exmod.host_reference(wf, "tiny", tmp_path)
    req = urllib.request.Request(f"http://127.0.0.1:{rack.port}/v1/servers/{victim}/fence", method="POST", data=b"",
                                 headers={"Authorization": f"Bearer {token('failure-detector')}"})
    urllib.request.urlopen(req, timeout=10).read()
    try:
        wait_for(lambda: rack.server(g)["fenced"], "the daemon fenced the worker", 10, 0.05)
        wait_for(lambda: kjson("get", "node", victim)["metadata"].get("annotations", {}).get("apta.io/fenced") == "true",
                 "the agent mirrors the fence", 60)
        out = {}
        for plugin in (False, True):
            placer = make_placer(kubemod, kube_access(workers, plugin))
            placer.prefer = [victim]
            # ids of their own: an earlier executor's objects a server still caches stay registered
            ex = executor_for(dw, placer, first_obj=10000 * (2 if plugin else 1))
            try:
                r = ex.run(wf, ref, timeout_s=240)
            finally:
                ex.close()
            assert r["outputs_equal"] and not r["violations"], r
            assert victim not in set(r["placement"].values()), r["placement"]
            out[plugin] = {"bound_on_fenced": sorted({b["pod"] for b in placer.bindings + placer.refusals if b["server"] == victim}),
                           "violations": placer.violations(), "pod_refusals": placer.pod_refusals}
        assert out[False]["bound_on_fenced"] and out[False]["violations"], out[False]
        assert all("fenced" in x["why"] for x in out[False]["pod_refusals"]), out[False]
        assert not out[True]["bound_on_fenced"] and not out[True]["violations"], out[True]
        MEASURED["negative_control_daemon"] = {"default_scheduler": {k: len(v) for k, v in out[False].items()},
                                               "plugin": {k: len(v) for k, v in out[True].items()}}
    finally:
        # the fenced runner comes back: a new runner pod, a Rejoin
        kubectl("-n", NS, "delete", "pod", "-l", "app=apta-runner", "--field-selector", f"spec.nodeName={victim}", "--wait=false")
        wait_for(lambda: not rack.server(g)["fenced"], "the worker's new runner rejoined", 120)


def test_function_container_admits_only_the_placed_epoch(daemon_world):
    """The function pod's own admission (function/apta-function), bound directly to a worker (no
    scheduler): a pod whose apta.io/placed-epoch is not the server's current epoch ends Failed,
    its termination message naming both; the same pod with the current epoch is admitted
    (admit/<pod> names the epoch and the runner's post_seq) and waits for its job."""
    dw = daemon_world
    w, g = dw["workers"][1], 1
    e = dw["rack"].server(g)["epoch"]

    def pod(name, epoch):
        p = pod_template(plugin=False)
        p["metadata"] = {"name": name, "labels": {"apta.io/negative-control": name},
                         "annotations": {"apta.io/placed-epoch": str(epoch)}}
        p["spec"]["nodeName"] = w
        kubectl("-n", NS, "apply", "-f", "-", input=json.dumps(p))
    try:
        pod("admit-stale", e + 5)
        p = wait_for(lambda: (lambda p: p["status"].get("phase") == "Failed" and p)(kjson("-n", NS, "get", "pod", "admit-stale")),
                     "the stale-epoch pod refused", 90)
        msg = p["status"]["containerStatuses"][0]["state"]["terminated"].get("message", "")
        assert f"placed in epoch {e + 5}, {w} is in epoch {e}" in msg, msg
        assert not (RACK / "admit" / "admit-stale").exists()
        pod("admit-current", e)
        adm = RACK / "admit" / "admit-current"
        wait_for(adm.exists, "the current-epoch pod admitted", 90)
        from apta.qemu import jobs
        r = jobs.Rack(RACK)
        try:
            post = jobs.JobBlock(r, g).post_seq
        finally:
            r.close()
        assert adm.read_text().split() == [str(e), str(post)], (adm.read_text(), e, post)
        assert kjson("-n", NS, "get", "pod", "admit-current")["status"].get("phase") == "Running"
    finally:
        # (the admitted pod holds its node's runner until deleted)
        kubectl("-n", NS, "delete", "pod", "admit-stale", "admit-current", "--grace-period=0", "--force",
                "--ignore-not-found", check=False)


def test_host_runner_makespans(tmp_path):
    """The same six workflows with the host-runner e2e (tests/test_executor.py's setup: the daemon
    and three aptarun-host processes on this machine, no cluster), beside the cluster's; then
    build/bench/kind.json."""
    from apta.qemu import executor as exmod
    from apta.qemu import harness
    from apta import workflow as wfmod
    exe, schema = harness.build_daemon(), harness.load_schema()
    rack = harness.Rack(exe, schema, tmp_path, data_bytes=harness.WORLD_DATA_BYTES)
    w = harness.World(rack, harness.build_runner(harness.RUNNER), tmp_path)
    ex = None
    try:
        for g in rack.guests:
            g.alive = False
        for g in range(3):
            w.start(g, 0)
        ex = exmod.Executor(rack.path, rack.port, guests=3, first_obj=100)
        host = {}
        for wf in wfmod.load_all():
            t0 = time.time()
            r = ex.run(wf, exmod.host_reference(wf, "tiny", tmp_path))
            assert r["outputs_equal"] and not r["violations"]
            host[wf.name] = round(time.time() - t0, 2)
    finally:
        if ex:
            ex.close()
        w.close()
        rack.close()
    MEASURED["host_runner_makespan_s"] = host
    timings = [json.loads(l) for l in (B / "timings.jsonl").read_text().splitlines()] if (B / "timings.jsonl").exists() else []
    MEASURED["make_kind_runs"] = timings[-10:]
    cs = B / "create-seconds"
    MEASURED["kind_create_cluster_s"] = int(cs.read_text()) if cs.exists() else None
    out = ROOT / "build" / "bench" / "kind.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(MEASURED, indent=1))
    print("kind bench:", json.dumps({k: v for k, v in MEASURED.items() if k != "cluster"}))
