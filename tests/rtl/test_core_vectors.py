"""Replay of the Murphi-derived vectors (build/vectors/*.jsonl, rtl/CORE.md "Test vectors") on
CoherenceCore: every scenario on the variant whose servers/dirSets/dirWays equal its params (no
match is an error), one Verilator build and one simulation per variant, reset between scenarios.

Per step: its stimuli are driven back to back (a queued image's two control flits wait on the ctrl
channel: spec/murphi/vectors_output.py queued_images) and the core run idle; then the step's messages are compared
(resp and ackResult and ctrlResp in order, snp as a multiset, nothing else, no decodeErr) and the
state (io_query of every object of the scenario, io_status). A mismatch names the scenario id, the
step, the model's rule, the field, expected and got. Three passes: outputs ready, random
backpressure, and backpressure with contention (`replay`'s doc: inputs that change no state of
the model compete with every stimulus, each with the answer the schema or CORE.md gives it: illegal
flits, queries, acks and requests of an absent object, stale Fences).
"""
from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest

from apta.testbench.core_bfm import ROOT, Core, Req, load_params, rtl_dir_overridden, rtl_root
from apta.testbench.runs import GEOMETRY, VECTORS, match_variant
from apta.testbench.runs import core_variants as variants, load_core_vectors as load_all


SNP_KEYS = ("server", "epoch", "obj", "base", "size")


class Mismatch(AssertionError):
    pass


def _diff(where, field, exp, got):
    raise Mismatch(f"{where}: {field}: expected {exp!r}, got {got!r}")


def _sub(exp: dict, got: dict) -> bool:
    return all(k in got and got[k] == v for k, v in exp.items())


BACKPRESSURE = 0.5      # the second pass: each output's ready is high with this probability per cycle


async def replay(core: Core, sc: dict, mutant: int = 0, backpressure: bool = False,
                 contention: bool = False):
    """One scenario; raises Mismatch at the first difference. With `backpressure` the outputs'
    ready toggles at random (seeded): the same messages must come out, only later. With
    `contention` each stimulus also competes with illegal flits on the ack and ctrl channels
    (each must be refused with the decodeErr the schema's codec gives, core_scoreboard.flit_error)
    with queries of the scenario's objects (each answered once, in order) and with legal acks of
    an object no step names (each answered not applied): none changes the model's state, so the
    step's expectations stay the model's."""
    from apta.testbench.core_scoreboard import flit_error, illegal_flit, malformed_flit
    await core.reset(mutant=mutant)
    seen = {k: [] for k in ("resp", "snp", "ackResult", "ctrlResp", "decodeErr", "queryResp")}
    fired = Counter()
    injected = {0: [], 1: []}     # the decodeErr each injected illegal flit must give, per channel
    queried: list[int] = []
    noop_acks: list[int] = []      # legal acks of an object no scenario step names: never applied
    bad_reqs: list = []            # requests of an illegal size for that object: dropped
    stale: list = []               # stale Fences (an epoch the server has neither before nor after
                                   # the step): echoed, nothing else (CORE.md `ctrl`)
    epochs = [0] * core.n          # each server's epoch before the step (reset: 0)
    objs = sorted({o["obj"] for o in sc["objects"].values()}) or [0]
    stranger = max(objs) + 1000

    def grab(b):
        if b.port in seen:
            seen[b.port].append(b.data)
        elif b.port.endswith(".fire"):
            fired[b.port[:-5]] += 1

    def errs(ch):
        return sum(d["channel"] == ch for d in seen["decodeErr"])

    def waiting():
        return (len(seen["resp"]) < fired["req"] or len(seen["ctrlResp"]) + errs(1) < fired["ctrl"]
                or len(seen["ackResult"]) + errs(0) < fired["ack"]
                or len(seen["queryResp"]) < fired["query"])

    def contend(port: str | None = None, after: list | None = None):
        """Before a stimulus on `port` (None: after it): first a legal ack of an object the
        directory does not hold (it competes with the stimulus in the cycle the stimulus is
        valid, misses, and is answered not applied), then illegal flits on both flit channels
        (not ahead of a ctrl stimulus, which the ack must meet), then queries: in the cycles the
        stimulus waits or enters, every input is valid. After a stimulus also a stale Fence of a
        random server (`after`: the epochs the step leaves), which the control unit echoes with
        the flit's own server and epoch while the step's flits wait behind it or its answer."""
        c = core.rng.randrange(core.n)
        noop_acks.append(c)
        core.send_ack(core.ack_flit(c, core.rng.randrange(1 << core.p["epochBits"]), stranger))
        # and a request of an illegal size (CORE.md: Drop, decodeErr channel 2 fieldRange size)
        r = Req(core.rng.choice(["Get", "Commit"]), core.rng.randrange(core.n), 0, stranger, 0,
                core.rng.choice([0, core.p["linesPerObject"] + 1]))
        bad_reqs.append(r)
        core.send_req(r)
        for ch, send in ((0, core.send_ack), (1, core.send_ctrl)):
            if ch == 1 and port == "ctrl":
                continue
            for _ in range(core.rng.randrange(1, 3)):
                f = (illegal_flit if core.rng.random() < 0.5 else lambda S, r, _: malformed_flit(S, r))(core.S, core.rng, ch)
                injected[ch].append(flit_error(core.S, f, ch))
                send(f)
        for _ in range(core.rng.randrange(1, 4)):
            o = core.rng.choice(objs)
            queried.append(o)
            core.query.q.append(o)
        if port is None:
            c = core.rng.randrange(core.n)
            mask = (1 << core.p["epochBits"]) - 1
            e = next(x for x in ((epochs[c] + k) & mask for k in range(2, 6)) if x not in (epochs[c], after[c]))
            stale.append({"op": "Fence", "server": c, "epoch": e})
            core.send_ctrl(core.ctrl_flit("Fence", c, e))

    core.listeners.append(grab)
    try:
        for si, step in enumerate(sc["steps"]):
            where = f"{sc['id']} ({sc.get('_where', '')}) step {si} rule {step['rule']!r}"
            for k in seen:
                seen[k].clear()
            fired.clear()
            injected[0].clear(), injected[1].clear(), queried.clear(), noop_acks.clear(), bad_reqs.clear()
            stale.clear()
            after = step["expect"].get("state", {}).get("epoch", epochs)
            # a step's stimuli go back to back (two control flits queue: spec/murphi/vectors.py
            # queued_images), then the core runs until idle
            for st in step["stimuli"]:
                if contention:
                    contend(st["port"])
                if st["port"] == "req":
                    core.send_req(Req(st["op"], st["server"], st["epoch"], st["obj"], st["base"], st["size"]))
                elif st["port"] == "ack":
                    core.send_ack(core.ack_flit(st["server"], st["epoch"], st["obj"]))
                else:
                    core.send_ctrl(core.ctrl_flit(st["op"], st["server"], st["epoch"]))
                if contention:
                    contend(after=after)
            await core.settle(quiet=8, full_ready=not backpressure, waiting=waiting)
            epochs = list(after)
            exp = step["expect"]
            key = lambda d: (d.get("op"), d.get("server"), d.get("epoch"))
            stale_keys = {key(d) for d in stale}
            echoes = [{k: d.get(k) for k in ("op", "server", "epoch")} for d in seen["ctrlResp"] if key(d) in stale_keys]
            seen["ctrlResp"] = [d for d in seen["ctrlResp"] if key(d) not in stale_keys]
            if echoes != stale:
                _diff(where, "ctrlResp echoes of the stale Fences (contention)", stale, echoes)
            for ch in (0, 1):
                got = [(d["channel"], d["code"], d["field"], d["opcode"]) for d in seen["decodeErr"]
                       if d["channel"] == ch]
                if got != injected[ch]:
                    _diff(where, f"decodeErr of channel {ch} (channel, code, field, opcode)", injected[ch], got)
            want2 = [(2, core.S.errors["fieldRange"], core.S.field_ids["size"],
                      core.S.messages["ObjGet" if r.op == "Get" else "PutCommit"].opcode) for r in bad_reqs]
            got2 = [(d["channel"], d["code"], d["field"], d["opcode"]) for d in seen["decodeErr"] if d["channel"] not in (0, 1)]
            if got2 != want2:
                _diff(where, "decodeErr of the requests of an illegal size (contention)", want2, got2)
            drops = [d for d in seen["resp"] if d["obj"] == stranger]
            seen["resp"] = [d for d in seen["resp"] if d["obj"] != stranger]
            if [(d["op"], d["server"], d["result"]) for d in drops] != [(r.op, r.server, "Drop") for r in bad_reqs]:
                _diff(where, "resp of the requests of an illegal size (contention)",
                      [(r.op, r.server, "Drop") for r in bad_reqs], drops)
            extra = [d for d in seen["ackResult"] if d["obj"] == stranger]
            seen["ackResult"] = [d for d in seen["ackResult"] if d["obj"] != stranger]
            want = [{"server": c, "obj": stranger, "applied": False, "settled": False} for c in noop_acks]
            if extra != want:
                _diff(where, "ackResult of the acks of an absent object (contention)", want, extra)
            if [d["obj"] for d in seen["queryResp"]] != queried:
                _diff(where, "queryResp objects (contention)", queried, [d["obj"] for d in seen["queryResp"]])
            for port in ("resp", "ackResult", "ctrlResp"):
                e, g = exp.get(port, []), seen[port]
                if len(e) != len(g):
                    _diff(where, port, e, g)
                for i, (a, b) in enumerate(zip(e, g)):
                    for k, v in a.items():
                        if b.get(k) != v:
                            _diff(where, f"{port}[{i}].{k}", v, b.get(k))
            e = Counter(tuple(d.get(k) for k in SNP_KEYS) for d in exp.get("snp", []))
            g = Counter(tuple(d.get(k) for k in SNP_KEYS) for d in seen["snp"])
            if e != g:
                _diff(where, f"snp (multiset of {SNP_KEYS})", sorted(e.elements()), sorted(g.elements()))
            state = exp.get("state")
            if state is None:
                continue
            objs = sorted({o["obj"] for o in sc["objects"].values()} | {int(k) for k in state.get("objects", {})})
            q = await core.query_all(objs)
            for ok, want in state.get("objects", {}).items():
                r = q[int(ok)]
                if "hit" in want and r["hit"] != want["hit"]:
                    _diff(where, f"query obj {ok}.hit", want["hit"], r["hit"])
                if want.get("state") and r["hit"] != (want["state"] != "I"):
                    _diff(where, f"query obj {ok}.hit", want["state"] != "I", r["hit"])
                for k, v in want.items():
                    if k != "hit" and r.get(k) != v:
                        _diff(where, f"query obj {ok}.{k}", v, r.get(k))
            status = core.read_status()
            for k, v in state.items():
                if k != "objects" and status.get(k) != v:
                    _diff(where, f"status.{k}", v, status.get(k))
    finally:
        core.listeners.remove(grab)


# ---- the cocotb test ---------------------------------------------------------------------------
try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def core_vectors(dut):
        from apta.testbench.core_bfm import start_clock
        variant = os.environ["APTA_VARIANT"]
        scen = json.loads(Path(os.environ["APTA_SCENARIOS"]).read_text())
        p = load_params(variant)
        start_clock(dut)
        core = Core(dut, p)
        mutant = int(os.environ.get("APTA_MUTANT", "0"))     # mutants_* variants only
        fails, t0 = [], time.time()
        import random
        core.rng = random.Random(int(os.environ.get("APTA_SEED", "1")))
        # each scenario with outputs always ready, then under backpressure, then under backpressure
        # with illegal flits and queries competing with every stimulus
        # a generated mutant (rtl/tools/mutation.py) needs one difference: the first is the evidence
        first_only = os.environ.get("APTA_RTL_MUTANT", "0") != "0"
        for bp, cont in ((False, False), (True, False), (True, True)):
            core.ready_p = {k: BACKPRESSURE if bp else 1.0 for k in core.ready_p}
            for sc in scen:
                try:
                    await replay(core, sc, mutant, backpressure=bp, contention=cont)
                except (Mismatch, AssertionError) as e:
                    fails.append(("[contention] " if cont else "[backpressure] " if bp else "") + str(e))
                    if first_only:
                        break
            if fails and first_only:
                break
        out = os.environ.get("APTA_RESULT")
        if out:
            Path(out).write_text(json.dumps({"variant": variant, "scenarios": len(scen), "failed": fails,
                                             "cycles": core.cycle_no, "seconds": round(time.time() - t0, 1)},
                                            indent=1))
        assert not fails, f"{len(fails)} of {len(scen)} scenarios differ:\n" + "\n".join(fails[:20])


# ---- pytest side --------------------------------------------------------------------------------
@pytest.mark.rtl_variants()
def test_vectors_replay():
    from apta.testbench.core_bfm import run
    scen = load_all()
    vs = variants()
    groups, unmatched = {}, []
    for sc in scen:
        v = match_variant(sc["params"], vs)
        if v is None:
            unmatched.append(sc["id"])
        else:
            groups.setdefault(v, []).append(sc)
    from apta.testbench.core_bfm import declared_variants
    declared = declared_variants()
    if unmatched and declared is not None:
        # another build (netlists, one variant): a scenario is dropped only when the variant of its
        # geometry (rtl/variants.json) is one the build does not declare; a declared one must be there
        from apta import schema          # AptaParams' defaults: what a variant's params override
        known = {v["name"]: {**schema.params(), **v["params"]} for v in
                 json.loads((ROOT / "rtl" / "variants.json").read_text())["variants"] if not v["name"].startswith("mutants")}
        by_id = {sc["id"]: sc for sc in scen}
        from apta.testbench.core_bfm import has_verilog, variant_dir
        owed = sorted({n for i in unmatched for n, p in known.items() if n in declared
                       and not has_verilog(variant_dir(n))
                       and all(p.get(k) == by_id[i]["params"][k] for k in GEOMETRY)})
        assert not owed, f"RTL_DIR={rtl_root()} declares {owed} but holds no Verilog for them"
        print(f"\nvectors: {len(unmatched)} scenarios not replayed: no variant of their geometry in RTL_DIR "
              f"(it declares {sorted(declared)})")
        if not groups:
            import pytest
            pytest.skip(f"no vector's geometry matches a variant RTL_DIR={rtl_root()} declares ({sorted(declared)})")
    else:
        assert not unmatched, (f"{len(unmatched)} scenarios match no RTL variant (servers/dirSets/dirWays) "
                               f"of {sorted(vs)}: {unmatched[:5]}")
    print("\nvectors replayed per variant: " + ", ".join(f"{v} {len(scs)}" for v, scs in sorted(groups.items())))
    report = {}
    for v, scs in sorted(groups.items()):
        bdir = ROOT / "build" / "sim" / "vectors"
        bdir.mkdir(parents=True, exist_ok=True)
        sf = bdir / f"{v}.json"
        sf.write_text(json.dumps(scs))
        res = bdir / f"{v}-result.json"
        if res.exists():
            res.unlink()
        n, failed = run(v, "test_core_vectors", {"APTA_SCENARIOS": sf, "APTA_RESULT": res},
                        results_name="vectors.xml")
        r = json.loads(res.read_text()) if res.exists() else {"failed": ["simulation crashed"]}
        report[v] = r
        assert n == 1 and failed == 0, f"variant {v}: " + "\n".join(r["failed"][:20])
    (ROOT / "build" / "coverage").mkdir(parents=True, exist_ok=True)
    (ROOT / "build" / "coverage" / "vectors-replay.json").write_text(json.dumps(
        {v: {k: r.get(k) for k in ("scenarios", "cycles", "seconds")} for v, r in report.items()}, indent=1))
