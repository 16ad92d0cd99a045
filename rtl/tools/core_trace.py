"""The event log of a coherence-core stress run (tests/rtl/test_core_stress.py with APTA_TRACE_LOG),
for trace validation against spec/tla/Apta.tla (spec/tla/trace.py; spec/tla/README.md, "Trace
validation"). Same format as rtl/tools/ms_trace.py (its docstring), written once at the end.

The core has no compute servers and no functions: every request the stress sends is one function
of the spec, placed on the request's server at the request's first decision by the core (the
result queue `respQ.io_enq_*`, the OTC's decision: the linearization point), in cycle order:
* a Get: `place` at its first Stall or Served, `get` (no data: the core has none) when Served;
* a Commit: `place`, `put_prepare` and its one `put_line` at the first decision (the OPC's put is
  complete when it asks the core to commit), `commit` when Committed (versions: commit order);
* a Drop (a zombie: the request's server fenced or its epoch old): `refused`; a Drop of a request
  with an illegal size (the stress's malformed requests; the spec has none) is not logged;
* `bisnp` (io_snp), `birsp` (every legal ObjBIRsp consumed at io_ack; illegal flits are not
  logged), `fence` (io_status_fenced rises), `rejoin` (RejoinAck on io_ctrlResp; a Rejoin of an
  unfenced server fences it first, CORE.md `rejoin.live`, so a `fence` is written before it).
A compute server's receipt of a BISnp is not observable here: the log's meta says so
(`hidden_recv_inv`) and the trace spec lets the spec's RecvInv happen unlogged.
"""
from __future__ import annotations

import json
from collections import deque
from pathlib import Path

from apta.testbench.core_bfm import OPS, RESULTS           # the port encodings (schema/core.json)
from apta.rtl.ms_trace import FORMAT


class CoreTrace:
    def __init__(self, core, objects: dict, meta: dict):
        self.core, self.dut, self.S, self.p = core, core.dut, core.S, core.p
        self.n = self.p["servers"]
        self.sname = {k: f"c{k + 1}" for k in range(self.n)}
        self.oname = {o: f"o{o}" for o in objects}
        self.events: list[dict] = []
        self.functions: dict[str, dict] = {}
        self.reqs: deque = deque()                  # fired requests, in order, awaiting their decision
        self.waiting: dict[tuple, deque] = {}       # (op, sid, obj, epoch) -> functions of stalled requests
        self.fenced_bits = 0
        self.owes: dict[tuple, int] = {}            # (sid, obj) -> BISnps of its epoch not yet acked (as logged)
        self.logged_fence = [False] * self.n        # a fence written since the server's last rejoin
        self.cycle = 0
        try:
            q = self.dut.respQ                      # Verilator's public signals of the RTL build
        except AttributeError:
            raise AssertionError("APTA_TRACE_LOG: the core's result queue respQ is not visible "
                                 "(a netlist?): the log needs the core's decisions") from None
        self.respq = (q.io_enq_valid, q.io_enq_ready, q.io_enq_bits_op, q.io_enq_bits_server,
                      q.io_enq_bits_obj, q.io_enq_bits_result)
        self.meta = {"ev": "meta", "format": FORMAT, "servers": [self.sname[k] for k in range(self.n)],
                     "objects": {self.oname[o]: {"id": o, "lines": 1} for o in sorted(objects)},
                     "rule": "declared", "epochs": [0] * self.n,
                     "dir_entries": self.p["dirSets"] * self.p["dirWays"],
                     "hidden_recv_inv": True, "data": False, "core_probe": True, **meta}

    def add(self, ev, **kw):
        self.events.append({"ev": ev, "cycle": self.cycle, **kw})

    def _epoch(self, sid):
        return int(getattr(self.dut, f"io_status_epoch_{sid}").value)

    def _fn(self, kind, sid, obj):
        name = f"{kind}{len(self.functions) + 1}"
        o = self.oname[obj]
        self.functions[name] = {"reads": [o] if kind == "g" else [], "writes": [o] if kind == "p" else [],
                                "after": []}
        self.add("place", fn=name, server=self.sname[sid], epoch=self._epoch(sid))
        if kind == "p":
            for ev, extra in (("put_prepare", {"txn": 0, "version": None}),
                              ("put_line", {"txn": 0, "line": 0, "size": 1})):
                self.add(ev, fn=name, server=self.sname[sid], epoch=self._epoch(sid), obj=o, **extra)
        return name

    # ---- one cycle, after Core.cycle() (still in its ReadOnly phase) ----------------------------
    def on_cycle(self, beats):
        self.cycle = self.core.cycle_no
        v, r, op, srv, obj, res = self.respq
        if int(v.value) and int(r.value):
            self._decision(OPS[int(op.value)], int(srv.value), int(obj.value), RESULTS[int(res.value)])
        bits = int(self.dut.io_status_fenced.value)
        rose, self.fenced_bits = bits & ~self.fenced_bits, bits
        for sid in range(self.n):
            if (rose >> sid) & 1:
                self._fence(sid)
        for b in beats:
            if b.port == "req.fire":
                self.reqs.append(b.item)
            elif b.port == "ack.fire":
                flit = b.item[0] if isinstance(b.item, tuple) else b.item
                try:
                    name, m = self.S.decode(flit)
                except Exception:
                    continue                          # an illegal flit: the core reports it, no event
                if name == "ObjBIRsp" and m["obj"] in self.oname:
                    self.add("birsp", server=self.sname[m["server"]], epoch=m["epoch"], obj=self.oname[m["obj"]])
                    k = (m["server"], m["obj"])
                    if self.owes.get(k) and m["epoch"] == self._epoch(m["server"]) and not (bits >> m["server"]) & 1:
                        self.owes[k] -= 1
            elif b.port == "snp":
                d = b.data
                self.add("bisnp", server=self.sname[d["server"]], epoch=d["epoch"], obj=self.oname[d["obj"]])
                k = (d["server"], d["obj"])
                self.owes[k] = self.owes.get(k, 0) + 1
            elif b.port == "ctrlResp" and b.data.get("op", b.data.get("name")) == "RejoinAck":
                sid = b.data["server"]
                if not self.logged_fence[sid]:
                    self._fence(sid, self._old_epoch(b.data["epoch"]))
                self.add("rejoin", server=self.sname[sid], epoch=b.data["epoch"])
                self.logged_fence[sid] = False

    def _old_epoch(self, new):
        return (new - 1) & ((1 << self.p["epochBits"]) - 1)

    def _fence(self, sid, epoch=None):
        for k in [k for k in self.owes if k[0] == sid]:
            del self.owes[k]
        self.add("fence", server=self.sname[sid], epoch=self._epoch(sid) if epoch is None else epoch)
        self.logged_fence[sid] = True

    def _decision(self, op, sid, obj, res):
        if not self.reqs:
            raise AssertionError(f"cycle {self.cycle}: a core decision with no request fired")
        rq = self.reqs.popleft()
        assert (rq.op, rq.server, rq.obj) == (op, sid, obj), f"decision {op} {sid} {obj} for request {rq}"
        key = (op, sid, obj, rq.epoch)   # a request the stress abandoned at a fence stays in its epoch
        new = not rq.tag
        legal = 1 <= rq.size <= self.p["linesPerObject"]
        if res == "Drop":
            if not new and self.waiting.get(key):
                self.waiting[key].popleft()
            if legal:
                self.add("refused", server=self.sname[sid], epoch=rq.epoch, obj=self.oname[obj], msg=op)
            return
        f = None if new else self.waiting[key].popleft()
        # a get is placed (the spec's scheduler: no invalidation pending for its input) once its
        # server owes no ack for the object: at once, or at the decision after its ack (a get by a
        # server that still owes is the core's Stall, CORE.md)
        if f is None and (op == "Commit" or res == "Served" or not self.owes.get((sid, obj))):
            f = self._fn("g" if op == "Get" else "p", sid, obj)
        if res == "Stall":
            self.waiting.setdefault(key, deque()).append(f)
        elif res == "Served":
            self.add("get", fn=f, server=self.sname[sid], epoch=self._epoch(sid), obj=self.oname[obj],
                     hit=False, lines=[])
        else:
            self.add("commit", fn=f, server=self.sname[sid], epoch=self._epoch(sid), obj=self.oname[obj],
                     txn=0, version=None)

    def write(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as f:
            f.write(json.dumps(dict(self.meta, functions=self.functions)) + "\n")
            for e in self.events:
                f.write(json.dumps(e) + "\n")


if __name__ == "__main__":      # make trace-validate: core_trace.py VARIANT OPS SEED LOG (one logged stress)
    import os
    import sys
    from apta.testbench.runs import run_stress
    if len(sys.argv) != 5 or sys.argv[1] in ("-h", "--help"):
        sys.exit("usage: python -m apta.rtl.core_trace VARIANT OPS SEED LOG  (one logged stress run of the core)")
    variant, ops, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out = Path(sys.argv[4]).resolve()
    os.environ.pop("APTA_TRACE_LOG", None)
    res = run_stress(variant, ops, seed, f"trace-{variant}-s{seed}", trace_log=out)
    print(f"core stress {variant} seed {seed}: {res['ops']} ops, {res['cycles']} cycles -> {out}")
