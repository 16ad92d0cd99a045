"""The groups of mutation testing (mutation.py): each a variant, its generated Verilog file and the
regression's tests in order, cheapest per kill first, each test a function of the mutant's number
that returns its failure or None; and the directories a run works in.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# Each run works in its own directory (the schema, every mutant's files, the equivalence proofs),
# so two runs at once (the `make test` sample beside `make rtl-mutation`) never read or delete each
# other's files; the test children find it in APTA_MUTATION_DIR. The Verilator builds stay shared
# (build/sim/, keyed by the schema's hash, built under a lock: core_bfm.locked_build).
RUNS = ROOT / "build" / "rtl-mutation"
OUT = Path(os.environ.get("APTA_MUTATION_DIR") or
           RUNS / f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}")

STOPPED = "the test stopped before writing its result"


@dataclass
class Group:
    name: str
    variant: str
    top: str
    file: str
    tests: list = field(default_factory=list)
    # the modules mutated (None: every module of the controllers); a group on another variant
    # covers what the main group's variant cannot show (a one-set directory, 16-bit epochs)
    modules: frozenset | None = None
    # a group mutating the same modules on another variant, run before this one: a mutant whose
    # xkey (module, statement with firtool's temporaries named by their definitions, operator,
    # position: the same logic) it killed is covered here, not run again, and a survivor of that
    # group that this one kills is covered there. The plain key would not do: the temporaries'
    # numbers differ between variants, so one statement text can mean different logic in each
    cross: str | None = None
    # the environment of every test of the group (APTA_SRAM: the bench's directory SRAM model)
    env: dict = field(default_factory=dict)


def _core_vectors(variant: str, env: dict) -> str | None:
    """The model's vectors of this geometry (test_core_vectors); the failure or None."""
    from apta.testbench.runs import GEOMETRY, load_core_vectors
    from apta.testbench.core_bfm import run, load_params
    p = load_params(variant)
    scen = [sc for sc in load_core_vectors() if all(sc["params"][k] == p[k] for k in GEOMETRY)]
    if not scen:
        raise RuntimeError(f"no vector matches variant {variant}")
    d = OUT / "runs" / variant / env["APTA_RTL_MUTANT"]
    d.mkdir(parents=True, exist_ok=True)
    sf, rf = d / "vectors.json", d / "vectors-result.json"
    sf.write_text(json.dumps(scen))
    rf.unlink(missing_ok=True)
    n, failed = run(variant, "test_core_vectors", {"APTA_SCENARIOS": sf, "APTA_RESULT": rf},
                    results_name=f"vectors-{env['APTA_RTL_MUTANT']}.xml")
    r = json.loads(rf.read_text()) if rf.exists() else {"failed": [STOPPED]}
    if n != 1 or failed or r["failed"]:
        return (r["failed"] or ["cocotb failure"])[0][:300]
    return None


def _core_stress(variant: str, env: dict, ops: int = 20000, seed: int = 1) -> str | None:
    from apta.testbench.runs import run_stress
    d = OUT / "runs" / variant / env["APTA_RTL_MUTANT"]
    d.mkdir(parents=True, exist_ok=True)
    try:
        run_stress(variant, ops, seed, f"mutant{env['APTA_RTL_MUTANT']}", out_dir=d)
    except AssertionError:
        res = [json.loads(f.read_text()) for f in d.glob("stress-*.json")]
        # the scoreboard's violation, else the reason is in the simulation's log (run_one finds it)
        return str(res[0]["violation"])[:300] if res and res[0].get("violation") else STOPPED
    return None


def _directed(module: str, variant: str, env: dict, extra: dict | None = None) -> str | None:
    """A directed cocotb test of the core (one test function, its failures in APTA_RESULT)."""
    from apta.testbench.core_bfm import run
    d = OUT / "runs" / variant / env["APTA_RTL_MUTANT"]
    d.mkdir(parents=True, exist_ok=True)
    rf = d / f"{module}.json"
    rf.unlink(missing_ok=True)
    n, failed = run(variant, module, {"APTA_RESULT": rf, **(extra or {})},
                    results_name=f"{module}-{env['APTA_RTL_MUTANT']}.xml")
    r = json.loads(rf.read_text()) if rf.exists() else {"failed": [STOPPED]}
    if n != 1 or failed or r["failed"]:
        return (r["failed"] or ["cocotb failure"])[0][:300]
    return None


def _core_ctrl(variant: str, env: dict) -> str | None:
    """test_core_ctrl: control flits back to back under ctrlResp backpressure, on every server;
    stale fences and rejoins after another server's walk."""
    return _directed("test_core_ctrl", variant, env)


def _core_extent(variant: str, env: dict) -> str | None:
    """test_core_extent: which request's base/size an entry keeps, seen in the BISnps."""
    return _directed("test_core_extent", variant, env)


def _core_flow(variant: str, env: dict) -> str | None:
    """test_core_flow: the resp-slot credit, inputs held through reset, io_idle."""
    return _directed("test_core_flow", variant, env)


def _core_arbitration(variant: str, env: dict) -> str | None:
    """test_core_arbitration: a Fence and a Commit in the same cycle, the Fence first."""
    return _directed("test_core_arbitration", variant, env)


def _core_epochs(variant: str, env: dict) -> str | None:
    """test_core_epochs (the epoch rule up to the last value and past it) on its 3-bit variant,
    the variant's deliberate-bug port at 0 (the design as written)."""
    return _directed("test_core_epochs", variant, env, {"APTA_MUTANT": 0})


def _core_decoder(variant: str, env: dict) -> str | None:
    """test_msg_decoder on the MsgDecoder inside the variant's core, with the variant's codec."""
    from apta.testbench.core_bfm import build, simulate
    runner, bdir = build(variant, top="MsgDecoder")
    n, failed = simulate(runner, bdir, "MsgDecoder", "test_msg_decoder", {"APTA_VARIANT": variant},
                         results_name=f"decoder-{env['APTA_RTL_MUTANT']}.xml")
    return "cocotb failure" if n != 1 or failed else None


def _ms_vectors(variant: str, env: dict) -> str | None:
    from apta.testbench.runs import load_ms_vectors, run_ms_vectors
    r = run_ms_vectors(variant, load_ms_vectors(), [0], stoppable=True, bdir=OUT / "runs" / variant / env["APTA_RTL_MUTANT"])
    if r is None:
        return STOPPED
    fails = r["failed"]["0"]
    return fails[0][:300] if fails else None


# The cocotb test that killed a module's previous mutant (`first ...` in its failure), run alone first
CASE_ENV = "APTA_MUTATION_TESTCASE"
FIRST_CASE = re.compile(r", first (\w+)")


def _ms_module(variant: str, module: str, what: str, at_least: int) -> str | None:
    """A memory-server cocotb module on the mutant: None if it passes, else how many of its tests
    failed and the first (a mutation run skips a module's tests after its first failure). With
    CASE_ENV set (run_one: the cocotb test that killed the module's previous mutant), that
    test runs alone first; a mutant it does not kill runs the whole module."""
    from apta.testbench.ms_bfm import build_ms, run_ms, run_ms_named
    if (case := os.environ.get(CASE_ENV)):
        from apta.testbench.core_bfm import results_path
        results_path(build_ms(variant)[1], f"{module}.xml").unlink(missing_ok=True)
        n, failed = run_ms(variant, module, {"APTA_MS_VARIANT": variant}, testcase=case)
        if n == 1 and failed:
            return f"{what} test failed, first {case} (run alone first)"
    n, failed, first = run_ms_named(variant, module, {"APTA_MS_VARIANT": variant})
    if not failed and n >= at_least:
        return None
    return f"{failed} of {n} {what} tests failed" + (f", first {first[0]}" if first else "")


def _ms_smoke(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_smoke", "smoke", 7)


def _ms_alloc(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_alloc", "allocator", 3)


def _ms_hold(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_hold", "hold-table", 6)


def _ms_timeout(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_timeout", "timeout", 2)


def _ms_ports(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_ports", "server-port", 4)


def _ms_workflows(variant: str, env: dict) -> str | None:
    from apta.testbench.runs import run_ms_workflows
    failed, res = run_ms_workflows(variant, f"-mutant{env['APTA_RTL_MUTANT']}", {"APTA_MS_SEEDS": "1"})
    runs = res.get("runs", [])
    bad = [r for r in runs if not r["ok"]]
    if failed or not runs or bad:
        return (f"{bad[0]['workflow']}: {bad[0]['violations']} {bad[0]['errors']}" if bad else "cocotb failure")[:300]
    return None


GROUPS = {
    # cheapest per kill first: the vectors (a few seconds, most kills), the decoder test (a
    # second; MsgDecoder's mutants only, REACHES), the directed tests, the stress (the longest)
    "core": Group("core", "m2s1w1", "CoherenceCore", "CoherenceCore.sv",
                  [("vectors", _core_vectors), ("decoder", _core_decoder), ("ctrl", _core_ctrl),
                   ("extent", _core_extent), ("flow", _core_flow), ("arbitration", _core_arbitration),
                   ("stress", _core_stress)]),
    # m2s1w1's directory is one register (one set): the set index, the forwarding of the last write
    # to the next read of its set and the multi-cycle init and fence walks exist only with 2+ sets;
    # on the read-first SRAM model (rtl/testbench/sram.py), where a missing forward reads stale ways
    "core-sets": Group("core-sets", "stress", "CoherenceCore", "CoherenceCore.sv",
                       [("ctrl", _core_ctrl), ("extent", _core_extent), ("flow", _core_flow),
                        ("stress", _core_stress)],
                       modules=frozenset({"Otc", "CtrlUnit"}), env={"APTA_SRAM": "read-first"}),
    # the refusal of a Rejoin at the last epoch value needs 2^16 - 1 rejoins at 16-bit epochs:
    # the control unit and the server table again with 3-bit epochs (m2s1w1's geometry otherwise),
    # test_core_epochs first, then the core group's tests but the stress (its scoreboard does not
    # model the last epoch)
    "core-epochs": Group("core-epochs", "mutants_epochs", "CoherenceCore", "CoherenceCore.sv",
                         [("epochs", _core_epochs), ("vectors", _core_vectors), ("ctrl", _core_ctrl),
                          ("extent", _core_extent), ("flow", _core_flow)],
                         modules=frozenset({"CtrlUnit", "ServerTable"})),
    # two staging slots and a bigger directory: the directed races of the smoke tests, the server
    # ports (refusals, round-robin), the allocator and its translation cache, the hold table of
    # versioned gets, the workflows
    "ms3": Group("ms3", "ms3", "MemoryServer", "MemoryServer.sv",
                 [("ms-smoke", _ms_smoke), ("ms-ports", _ms_ports), ("ms-alloc", _ms_alloc), ("ms-hold", _ms_hold),
                  ("ms-workflows", _ms_workflows)]),
    # the memory server in the model's geometry: its vectors (the model's steps, its cells), the
    # server ports, the allocator tests, the hold table (its one entry), the OPC's timeout (ms3 has
    # none), then the workflows with crashes. The smoke tests need ms3's two staging slots; what ms3
    # killed is covered here (the same statement's mutant), so this group runs what only msv's
    # Verilog has and ms3's survivors
    "msv": Group("msv", "msv", "MemoryServer", "MemoryServer.sv",
                 [("ms-vectors", _ms_vectors), ("ms-ports", _ms_ports), ("ms-alloc", _ms_alloc),
                  ("ms-hold", _ms_hold), ("ms-timeout", _ms_timeout), ("ms-workflows", _ms_workflows)],
                 cross="ms3"),
}

