#!/usr/bin/env python3
"""Placement by the kube-scheduler with the Apta plugin, the daemon as its control plane.
Stdlib only.

The scheduler plugin's e2e (scheduler-plugin/test/e2e/daemon_test.go, TestDaemonControlPlane)
brings up etcd, kube-apiserver, the scheduler and the mirroring agent against the memory-server
daemon and writes how to reach the apiserver (a JSON file, `Kube.from_file`). `KubePlacer` is the
executor's `placer` (qemu-cxl/executor.py): for every ready function instance it creates a pod
(the e2e's pod template: schedulerName apta-scheduler, label apta.io/function) whose annotations
declare the instance's input objects (the daemon's object ids), the nodes its predecessors ran on,
and s(f) = the daemon's `seq` read after its predecessors finished (TLA-C1); it then waits for the
scheduler's binding and starts the function on the bound node's guest, as a kubelet would, only if
the start is admissible (FRESHNESS.md, TLA-C3): the bound server is live, unfenced, schedulable
for the inputs in the daemon's answer now, and (with the plugin) in the epoch the plugin chose
(`apta.io/placed-epoch`). A start that is not admissible is refused: the pod is deleted and a new
one created. A refusal is a *violation* when the daemon already reported the bound server
unschedulable for the pod's inputs, in the same epoch, when the pod was created: the scheduler
had the answer and placed there anyway. A guest that dies after its pod was created is refused
without a violation (failure detection takes the heartbeat lease).
"""
from __future__ import annotations

import copy
import http.client
import json
import re
import ssl
import time
from pathlib import Path

from apta.qemu.executor import ok_for        # the executor's placement rule, which the plugin's Filter matches


class KubeError(RuntimeError):
    pass


class _SNIConnection(http.client.HTTPSConnection):
    """The test apiserver's certificate names a loopback SNI name, not 127.0.0.1."""

    def __init__(self, host, port, sni, ctx, timeout):
        super().__init__(host, port, context=ctx, timeout=timeout)
        self._sni = sni

    def connect(self):
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._sni)


class Kube:
    """A minimal apiserver client for one namespace: pods only."""

    def __init__(self, access: dict):
        self.acc = access
        m = re.fullmatch(r"https://([^:/]+):(\d+)/?", access["server"])
        if not m:
            raise KubeError(f"kube access: field server: not https://host:port: {access['server']!r}")
        self.host, self.port = m.group(1), int(m.group(2))
        self.ctx = ssl.create_default_context(cadata=access["ca"])
        self.sni = access.get("serverName") or self.host
        self.ns = access["namespace"]

    @classmethod
    def from_file(cls, path) -> "Kube":
        try:
            acc = json.loads(Path(path).read_text())
            for f in ("server", "ca", "token", "namespace", "nodes", "pod", "annotations", "label"):
                if f not in acc:
                    raise KubeError(f"{path}: missing field {f}")
        except (OSError, ValueError) as e:
            raise KubeError(f"{path}: {e}") from None
        return cls(acc)

    def call(self, method: str, path: str, body: dict | None = None, ok=(200, 201)) -> dict:
        c = _SNIConnection(self.host, self.port, self.sni, self.ctx, timeout=10)
        try:
            c.request(method, path, body=None if body is None else json.dumps(body),
                      headers={"Authorization": "Bearer " + self.acc["token"], "Content-Type": "application/json",
                               "Accept": "application/json"})
            r = c.getresponse()
            data = r.read()
        except OSError as e:
            raise KubeError(f"{method} {path}: {e}") from None
        finally:
            c.close()
        if r.status not in ok:
            raise KubeError(f"{method} {path}: HTTP {r.status}: {data[:300]!r}")
        return json.loads(data) if data else {}

    def pods_path(self, name: str = "") -> str:
        return f"/api/v1/namespaces/{self.ns}/pods" + (f"/{name}" if name else "")

    def create_pod(self, pod: dict) -> dict:
        return self.call("POST", self.pods_path(), pod)

    def pods(self) -> dict:
        return {p["metadata"]["name"]: p for p in self.call("GET", self.pods_path())["items"]}

    def delete_pod(self, name: str):
        self.call("DELETE", self.pods_path(name), ok=(200, 202, 404))


def pod_name(*parts) -> str:
    """A DNS-1123 label (also a valid label value): lowercase alphanumerics and '-', <= 63."""
    s = re.sub(r"[^a-z0-9-]+", "-", "-".join(map(str, parts)).lower()).strip("-")
    return s[:63].rstrip("-")


class KubePlacer:
    """The executor's placer through the scheduler (see the module docstring). `prefer` lists
    servers to mark as preferred with a node affinity, the default scheduler's choice (a test
    makes a fenced guest the preferred one: the plugin must override it)."""

    def __init__(self, kube: Kube, list_every_s: float = 0.02, retry_after_s: float = 0.1):
        self.k = kube
        self.ann = kube.acc["annotations"]
        self.node_of = {s: n for n, s in kube.acc["nodes"].items()}
        self.plugin = bool(kube.acc.get("plugin", True))
        self.list_every_s, self.retry_after_s = list_every_s, retry_after_s
        self.prefer: list[str] = []
        self.pin: str | None = None           # a server every pod must go to (a required node selector)
        self.seq = 0
        self.pods: dict[int, dict] = {}       # instance k -> the pod placing it now
        self.retry_at: dict[int, float] = {}  # instance k -> no new pod before (after a refusal)
        self._listed, self._list_t = {}, -1e9
        self.created: list[dict] = []         # every pod created: name, k, bad servers at creation
        self.bindings: list[dict] = []        # every binding seen: pod, node, server, placed epoch/seq
        self.refusals: list[dict] = []        # every start refused (with "violation": bool)
        self.starts: list[dict] = []          # every start: pod, server, epoch

    def new_workflow(self):
        self.seq += 1
        self.pods = {}
        self.retry_at = {}

    def __call__(self, ex, k: int, inst, ids: list[int]):
        pod = self.pods.get(k)
        if pod is None:
            if time.monotonic() >= self.retry_at.get(k, 0):
                self._create(ex, k, inst, ids)
            return None
        now = time.monotonic()
        if now - self._list_t >= self.list_every_s:
            self._listed, self._list_t = self.k.pods(), now
        cur = self._listed.get(pod["name"])
        node = cur and cur["spec"].get("nodeName")
        if not node:
            return None
        server = self.k.acc["nodes"].get(node)
        gs = next((g for g in ex.G if g.name == server), None)
        a = cur["metadata"].get("annotations") or {}
        if not pod.get("bound"):
            pod["bound"] = True
            self.bindings.append({"pod": pod["name"], "node": node, "server": server,
                                  "placedEpoch": a.get(self.ann["placedEpoch"]), "placedSeq": a.get(self.ann["placedSeq"])})
        if gs is None:
            return self._refuse(ex, k, pod, server, f"node {node} is no guest's", None)
        if gs.alive and not gs.fenced and (gs.run is not None or not gs.jb.idle()):
            return None                                    # the runner is busy: the start waits
        s = next(x for x in ex.api.servers(ids) if x["name"] == server)
        why = []
        if not ok_for(s, pod.get("early")):
            why.append("not schedulable for its inputs" if s["live"] and not s["fenced"] else
                       "fenced" if s["fenced"] else "not live")
        if self.plugin and a.get(self.ann["placedEpoch"]) != str(s["epoch"]):
            why.append(f"placed in epoch {a.get(self.ann['placedEpoch'])}, the server is in epoch {s['epoch']}")
        if not ex.usable(gs):
            why.append("its runner is down")
        if why:
            return self._refuse(ex, k, pod, server, "; ".join(why), s)
        self.starts.append({"pod": pod["name"], "server": server, "epoch": s["epoch"]})
        del self.pods[k]
        return gs

    def _create(self, ex, k: int, inst, ids: list[int]):
        ans = ex.api.schedulable(ids)
        # placed early: every input read with a version, so only fenced and dead servers
        # are excluded (FRESHNESS.md "Early placement"), as the plugin filters such a pod
        vers = ex.early_k.get(k, {})
        versions = {ids[i]: vers[o] for i, o in enumerate(inst.reads) if o in vers}
        bad = {s["name"]: s["epoch"] for s in ans["servers"] if not ok_for(s, bool(versions))}
        after = set(ex.wf.function(inst.function).get("after", []))
        preds = sorted({self.node_of[ex.G[r.guest].name] for j, r in ex.done.items()
                        if ex.insts[j].function in after}
                       # placed early: its predecessors may still run; their nodes are its inputs' producers'
                       | ({self.node_of[g.name] for g in ex.G if g.run is not None and g.run.inst.function in after}
                          if versions else set()))
        attempt = sum(1 for c in self.created if c["k"] == k and c["wf"] == self.seq) + 1
        name = pod_name(f"w{self.seq}", inst.function, inst.index, f"a{attempt}")
        p = self.pod(name, ids, ans, preds, prefer=self.prefer if attempt == 1 else [], pin=self.pin,
                     versions=versions)
        self.k.create_pod(p)
        self.pods[k] = {"name": name, "bad": bad, "early": bool(versions)}
        self.created.append({"pod": name, "k": k, "wf": self.seq, "seq": ans["seq"], "bad": bad, "early": bool(versions)})

    def pod(self, name: str, ids: list[int], ans: dict, preds: list[str] = (), prefer: list[str] = (),
            pin: str | None = None, versions: dict[int, int] | None = None) -> dict:
        """A function pod from the e2e's template: inputs, s(f) from the daemon's answer `ans`,
        predecessor nodes; `prefer` servers by node affinity (steers the default scheduler only:
        a refused pod's next attempt is not steered); `pin` to one server's node; `versions`
        {input id: version} marks a function placed early (apta.io/input-versions)."""
        p = copy.deepcopy(self.k.acc["pod"])
        md = p["metadata"]
        md["name"] = name
        md.pop("creationTimestamp", None)
        md["labels"] = {self.k.acc["label"]: name}
        ann = {self.ann["minSeq"]: str(ans["seq"]), self.ann["minSeqInstance"]: ans["instance"]}
        if ids:
            ann[self.ann["inputs"]] = ",".join(map(str, ids))
        if versions:
            ann[self.ann["inputVersions"]] = ",".join(f"{i}={v}" for i, v in sorted(versions.items()))
        if preds:
            ann[self.ann["predecessorNodes"]] = ",".join(preds)
        md["annotations"] = ann
        if prefer:
            p["spec"]["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100, "preference": {"matchExpressions": [{
                    "key": "kubernetes.io/hostname", "operator": "In", "values": [self.node_of[s] for s in prefer]}]}}]}}
        if pin:
            p["spec"]["nodeSelector"] = {"kubernetes.io/hostname": self.node_of[pin]}
        return p

    def _refuse(self, ex, k, pod, server, why, s):
        was_bad = s is not None and server in pod["bad"] and pod["bad"][server] == s["epoch"] \
            and not ok_for(s, pod.get("early"))
        self.refusals.append({"pod": pod["name"], "server": server, "why": why, "violation": was_bad})
        ex.log(f"  refused {pod['name']} on {server}: {why}" + (" (VIOLATION: known when the pod was created)" if was_bad else ""))
        self.k.delete_pod(pod["name"])
        del self.pods[k]
        self.retry_at[k] = time.monotonic() + self.retry_after_s
        return None

    def waiting(self) -> list[str]:
        """The pods not bound yet, with the scheduler's reason (their PodScheduled condition)."""
        out = []
        for name, p in self.k.pods().items():
            if not p["spec"].get("nodeName"):
                c = [x for x in p.get("status", {}).get("conditions", []) if x.get("type") == "PodScheduled"]
                out.append(f"{name}: {c[0].get('reason')}: {c[0].get('message')}" if c else f"{name}: no condition yet")
        return out

    def violations(self) -> list[dict]:
        return [r for r in self.refusals if r["violation"]]

