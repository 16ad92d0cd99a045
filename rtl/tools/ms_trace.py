"""The event log of a memory-server workflow run, for trace validation against spec/tla/Apta.tla
(spec/tla/TraceApta.tla, spec/tla/trace.py; the mapping is in spec/tla/README.md, "Trace validation").

`MsTrace` watches the run of tests/rtl/test_ms_workflows.py from three places and writes one event
per protocol-relevant message or action, in the order they happened (cycle, then the order below),
as ndjson (`build/trace/ms/<variant><tag>/<workflow>-s<seed>.ndjson`):

* inside the memory server, the coherence core's result queue (`core.respQ.io_enq_*`, the cycle the
  OTC decides): a get `Served` (the get's linearization point; its lines are read from the ObjData
  flits of that get as they leave `io_rsp`) and a put `Committed` (the commit's linearization point);
* the memory server's ports: every flit it consumes (`io_req_<i>`: PutPrepare, PutLine; `io_birsp`:
  ObjBIRsp) and every flit it emits (`io_snp`: ObjBISnp; `io_rsp`: PutRetry, RejoinAck;
  `io_ctrlResp`: the fence took effect);
* the compute-server models and the runner: placements, cache hits, a BISnp received (acked or
  ignored), completions, crashes.

Three things are normalised here, each because the spec has no step for it (the README argues why
each keeps the log a faithful observation):
* a put attempt the OPC refused with PutRetry (staging full) is dropped with its lines: the OPC
  changed nothing, and the retry is the put that the spec's Prepare opens;
* a crash is written just before the fence of the crashed server (the crash itself is seen by
  nobody but the crashed model; the flits it had sent still reach the memory server meanwhile);
* the line data are decoded into versions (compute_server.decode_line); garbage stays a string.

Format (version 1): the first line is `{"ev": "meta", "format": "apta-trace/1", ...}` with the
servers, the objects (id, lines), the functions (task name -> reads, writes, after = task names) and
the scheduler rule; then one event per line, each with `ev` and `cycle`:
  place {fn, server, epoch}          get {fn, server, epoch, obj, hit, lines}
  put_prepare {fn, server, epoch, obj, txn, version}
  put_line {fn, server, epoch, obj, txn, line, size}
  commit {fn, server, epoch, obj, txn, version}
  bisnp {server, epoch, obj}         snp_recv {server, epoch, obj, acked}
  birsp {server, epoch, obj}         done {fn, server}
  crash {server}  fence {server, epoch}  rejoin {server, epoch}   final {obj, lines}
  refused {server, epoch, obj, msg}: a PutPrepare/PutLine the memory server discarded as a zombie
    (err zombie: a fenced server or an old epoch), in the place where it was consumed
Servers are named c1.., objects by their script names, functions by task name.
"""
from __future__ import annotations

import json
from pathlib import Path

from apta import schema
from apta.testbench.compute_server import LIVE, decode_line

FORMAT = "apta-trace/1"
RESULTS = schema.enum("ReqResult")      # the core's resp.result / ReqOp encodings (schema/core.json)
OP_GET = schema.enum("ReqOp").index("Get")


class MsTrace:
    def __init__(self, dut, S, script, runner, models, ids, sizes, meta: dict):
        self.dut, self.S, self.runner, self.models = dut, S, runner, models
        self.ids, self.names = ids, {v: k for k, v in ids.items()}
        self.sizes = sizes
        self.sname = runner.sname
        self.events: list[dict] = []
        self.cycle = 0
        self.run_on: dict[int, str] = {}        # sid -> task of the run placed there (until its fence)
        self.attempts: dict[int, dict] = {}     # sid -> the put attempt the OPC has open or is refusing
        self.open_gets: dict[tuple, dict] = {}  # (sid, obj) -> the served get whose ObjData is still leaving
        self.crashed: dict[int, dict] = {}      # sid -> the crash event, written before its fence
        self.refused = 0
        self.fenced_at: dict[int, int] = {}     # sid -> index in events of its last fence
        self.fenced_bits = 0                    # io_status_fenced last cycle
        self.op_mask = (1 << S.opcode_bits) - 1
        after = {t.name: sorted({u.name for a in t.after for u in script.instances_of(a)}) for t in script.tasks}
        self.meta = {"ev": "meta", "format": FORMAT, "workflow": script.name,
                     "servers": [self.sname[k] for k in range(len(models))],
                     "objects": {o: {"id": ids[o], "lines": sizes[ids[o]]} for o in sorted(script.objects)},
                     "functions": {t.name: {"reads": list(t.reads), "writes": list(t.writes), "after": after[t.name]}
                                   for t in script.tasks},
                     "rule": runner.rule, "epochs": [m.epoch for m in models], **meta}
        try:        # Verilator's public signals; a netlist (RTL_DIR=build/synth) may not have them
            q = dut.core.respQ
            self.respq = (q.io_enq_valid, q.io_enq_ready, q.io_enq_bits_op,
                          q.io_enq_bits_server, q.io_enq_bits_obj, q.io_enq_bits_result)
        except AttributeError:
            self.respq = None
        self.meta["core_probe"] = self.respq is not None   # trace.py refuses a log without it
        # hooks: the runner's history events and the models' snoop handling
        emit = runner.emit

        def emit_hook(ev, **kw):
            self._runner_event(ev, kw)
            return emit(ev, **kw)
        runner.emit = emit_hook
        for m in models:
            m._snoop = self._snoop_hook(m, m._snoop)

    # ---- writing -------------------------------------------------------------------------------
    def add(self, ev, **kw):
        e = {"ev": ev, "cycle": self.cycle, **kw}
        self.events.append(e)
        return e

    def write(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = dict(self.meta, refused_puts=self.refused)
        with open(path, "w") as f:
            for e in [meta] + [e for e in self.events if not e.get("_drop")]:
                f.write(json.dumps({k: v for k, v in e.items() if not k.startswith("_")}) + "\n")

    # ---- the memory server, sampled after ReadOnly() each cycle ---------------------------------
    def sample_core(self, cycle):
        """The coherence core's decisions this cycle (call first in the cycle)."""
        self.cycle = cycle
        if self.respq is None:
            return
        v, r, op, srv, obj, res = self.respq
        if not (int(v.value) and int(r.value)):
            return
        op, sid, o, res = int(op.value), int(srv.value), int(obj.value), RESULTS[int(res.value)]
        if op == OP_GET and res == "Served":
            e = self.add("get", fn=self.run_on.get(sid), server=self.sname[sid], epoch=self._epoch(sid),
                         obj=self.names.get(o, o), hit=False, lines=[])
            self.open_gets[(sid, o)] = e
        elif op != OP_GET and res == "Committed":
            a = self.attempts.get(sid)
            if a is None or a["obj"] != o:
                self.add("commit", fn=self.run_on.get(sid), server=self.sname[sid], epoch=self._epoch(sid),
                         obj=self.names.get(o, o), txn=None, version=None)
            else:
                self.add("commit", fn=a["fn"], server=self.sname[sid], epoch=a["epoch"], obj=self.names[o],
                         txn=a["txn"], version=a["version"])
                self.attempts.pop(sid, None)

    def _epoch(self, sid):
        return int(getattr(self.dut, f"io_status_epoch_{sid}").value)

    def req_fired(self, sid, flit):
        name, m = self.S.decode(flit)
        if name == "PutPrepare":
            put = self.runner.puts.get((sid, m["epoch"], m["txn"]))
            e = self.add("put_prepare", fn=self.run_on.get(sid), server=self.sname[sid], epoch=m["epoch"],
                         obj=self.names.get(m["obj"], m["obj"]), txn=m["txn"], version=put[1] if put else None)
            e["_op"] = flit & self.op_mask
            self.attempts[sid] = {"obj": m["obj"], "txn": m["txn"], "epoch": m["epoch"], "fn": e["fn"],
                                  "version": e["version"], "events": [e]}
        elif name == "PutLine":
            a = self.attempts.get(sid)
            e = self.add("put_line", fn=self.run_on.get(sid), server=self.sname[sid], epoch=m["epoch"],
                         obj=self.names.get(m["obj"], m["obj"]), txn=m["txn"], line=m["line"],
                         size=self.sizes.get(m["obj"]))
            e["_op"] = flit & self.op_mask
            if a is not None and a["txn"] == m["txn"] and a["epoch"] == m["epoch"]:
                a["events"].append(e)
                if a.get("refused"):          # a line of the refused attempt, still arriving
                    e["_drop"] = True

    def birsp_fired(self, flit):
        _, m = self.S.decode(flit)
        self.add("birsp", server=self.sname[m["server"]], epoch=m["epoch"], obj=self.names.get(m["obj"], m["obj"]))

    def snp_out(self, m):
        self.add("bisnp", server=self.sname[m["server"]], epoch=m["epoch"], obj=self.names.get(m["obj"], m["obj"]))

    def rsp_out(self, name, m):
        sid = m.get("server")
        if name == "ObjData":
            e = self.open_gets.get((sid, m["obj"]))
            if e is not None:
                e["lines"].append(decode_line(m["obj"], m["line"], m["data"]))
                if len(e["lines"]) == self.sizes[m["obj"]]:
                    del self.open_gets[(sid, m["obj"])]
        elif name == "PutRetry":             # staging full: the attempt never opened a transaction
            a = self.attempts.get(sid)
            if a is not None and a["txn"] == m["txn"]:
                for e in a["events"]:
                    e["_drop"] = True
                a["events"] = []
                a["refused"] = True
                self.refused += 1
        elif name == "RejoinAck":
            self.add("rejoin", server=self.sname[sid], epoch=m["epoch"])

    def status(self, fenced_bits):
        """io_status_fenced: a server whose bit rises was fenced this cycle (the memory server
        discards its flits from now on; the control plane's echo on io_ctrlResp comes later)."""
        rose = fenced_bits & ~self.fenced_bits
        self.fenced_bits = fenced_bits
        for sid in range(len(self.models)):
            if (rose >> sid) & 1:
                self.fence_done(sid, self._epoch(sid))

    def zombie(self, sid, opcode):
        """err zombie: the memory server discarded a PutPrepare/PutLine of a fenced server or an old
        epoch at its port; the oldest such flit logged since the server's fence becomes `refused`."""
        for e in self.events[self.fenced_at.get(sid, len(self.events)):]:
            if e["ev"] in ("put_prepare", "put_line") and e.get("_op") == opcode and e["server"] == self.sname[sid]:
                kept = {k: e[k] for k in ("cycle", "server", "epoch", "obj")}
                msg = "PutPrepare" if e["ev"] == "put_prepare" else "PutLine"
                e.clear()
                e.update({"ev": "refused", **kept, "msg": msg})
                return

    def fence_done(self, sid, epoch):
        c = self.crashed.pop(sid, None)
        if c is not None:
            self.add("crash", server=c["server"])
        self.add("fence", server=self.sname[sid], epoch=epoch)
        self.fenced_at[sid] = len(self.events)
        self.run_on.pop(sid, None)
        self.attempts.pop(sid, None)

    # ---- the models and the runner ---------------------------------------------------------------
    def _snoop_hook(self, model, orig):
        def hook(m):
            acked = model.status == LIVE and m["epoch"] == model.epoch
            self.add("snp_recv", server=self.sname[model.sid], epoch=m["epoch"],
                     obj=self.names.get(m["obj"], m["obj"]), acked=acked)
            return orig(m)
        return hook

    def _runner_event(self, ev, kw):
        r = self.runner
        if ev == "place":
            sid = self._sid(kw["server"])
            task = kw["run"].split("#")[0]
            self.run_on[sid] = task
            self.add("place", fn=task, server=kw["server"], epoch=kw["epoch"])
        elif ev == "get_ret" and kw.get("hit"):
            sid = next((s for s, run in r.active.items() if run.cur_id == kw["id"]), None)
            if sid is None:
                return
            o = r.active[sid].cur.obj
            self.add("get", fn=self.run_on.get(sid), server=self.sname[sid], epoch=self.models[sid].epoch,
                     obj=self.names[o], hit=True, lines=list(kw["lines"]))
        elif ev == "done":
            sid = next((s for s, run in r.active.items() if run.run == kw["run"]), None)
            self.add("done", fn=kw["run"].split("#")[0], server=self.sname.get(sid, "?"))
        elif ev == "crash":
            sid = self._sid(kw["server"])
            self.crashed[sid] = {"server": kw["server"]}
        elif ev == "final":
            self.add("final", obj=kw["obj"], lines=list(kw["lines"]))

    def _sid(self, name):
        return next(k for k, n in self.sname.items() if n == name)
