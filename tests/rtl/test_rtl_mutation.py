"""apta.rtl.mutation (rtl/tools/mutation.py): the mutant schema generator, and a seeded sample of the mutants run
through the regression (the full run is `make rtl-mutation`)."""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from apta.rtl import mutation

ROOT = Path(__file__).resolve().parents[2]
RTL = ROOT / "build" / "rtl"


@pytest.fixture(autouse=True)
def _generated_verilog_only():
    """Mutants are made of the Chisel-generated Verilog of build/rtl, not of another build."""
    if "RTL_DIR" in os.environ:
        pytest.skip(f"mutation testing uses build/rtl's generated Verilog, not RTL_DIR={os.environ['RTL_DIR']}")


def test_expression_mutants():
    got = {(k, w): m for k, w, m in mutation.expr_mutations("a & ~b == 2'h3", one_bit=True)}
    assert got[("operator", "& -> |")] == "a | ~b == 2'h3"
    assert got[("operator", "== -> !=")] == "a & ~b != 2'h3"
    assert got[("negation", "~ removed")] == "a & b == 2'h3"
    assert got[("constant", "2'h3 -> 2'h2")] == "a & ~b == 2'h2"          # the top value steps down
    assert got[("stuck0", "stuck at 0")] == "1'h0" and ("stuck1", "stuck at 1") in got
    assert len(got) == 6
    # unary reductions, bit selects and string literals are not operators to swap
    assert mutation.expr_mutations('&x[3:0] | "a & b"', one_bit=False) == [
        ("operator", "| -> &", '&x[3:0] & "a & b"')]
    sel = mutation.expr_mutations("c ? x : y", one_bit=False)
    assert sel == [("condition", "select c inverted", "(~c) ? x : y")]


@pytest.mark.rtl_variants("m2s1w1", "stress", "mutants_epochs", "msv", "ms3", simulator=False)
@pytest.mark.parametrize("group", sorted(mutation.GROUPS))
def test_schema_changes_only_logic(group):
    """Every mutant is selected by its own id; strings and assertion blocks (`ifndef SYNTHESIS`)
    are the generated file's, untouched; keys are unique (equivalence arguments attach to them)."""
    g = mutation.GROUPS[group]
    src = RTL / g.variant / g.file
    text, mutants = mutation.schema(src, group)
    assert len(mutants) > 100
    assert [m.id for m in mutants] == list(range(1, len(mutants) + 1))
    ids = Counter(int(x) for x in re.findall(r"apta_mut == (\d+) \?", text))
    assert set(ids) == {m.id for m in mutants} and max(ids.values()) == 1
    assert len({m.key for m in mutants}) == len(mutants)
    strings = lambda t: Counter(re.findall(r'"(?:[^"\\]|\\.)*"', t))
    orig = src.read_text()
    assert strings(text) - strings(orig) == Counter({'"apta_mutant=%d"': text.count('"apta_mutant=%d"')})

    def guarded(t):
        return re.findall(r"`ifndef SYNTHESIS.*?`endif", t, re.S)
    assert guarded(text) == guarded(orig)
    assert {m.controller for m in mutants} <= set(mutation.CONTROLLER.values()) | set(mutation.MS_MODULES.values())


@pytest.mark.rtl_variants("msv", "ms3", simulator=False)
def test_xkeys_name_the_same_logic_on_both_variants():
    """msv's group is covered by ms3's kills through xkeys (mutation._canon): every mutant of either
    memory-server variant has one, and they are unique; a statement that reads only instance
    outputs (`_decs_0_io_out_bits_opcode == 4'h4`) and the dispatcher's `take` (a case-block mux,
    casez_tmp_*) have their mutants' xkeys on both; a statement only one variant has (msv's
    narrower fields) matches nothing on the other."""
    ms = {g: mutation.schema(RTL / g / "MemoryServer.sv", g)[1] for g in ("ms3", "msv")}
    for g, mutants in ms.items():
        assert all(m.xkey for m in mutants), [m.key for m in mutants if not m.xkey][:5]
        assert len({m.xkey for m in mutants}) == len(mutants), g
    x3 = {m.xkey for m in ms["ms3"]}

    def shared(what: str) -> list[bool]:
        return [m.xkey in x3 for m in ms["msv"] if what in m.what]
    assert shared("`_decs_0_io_out_bits_opcode == 4'h4`") and all(shared("`_decs_0_io_out_bits_opcode == 4'h4`"))
    assert shared("(|go) & ((|casez_tmp_1)") and all(shared("(|go) & ((|casez_tmp_1)"))
    assert not all(m.xkey in x3 for m in ms["msv"])


@pytest.mark.rtl_variants("m2s1w1", "stress", "mutants_epochs", "ms3", "msv", simulator=False)
def test_an_argument_counts_only_for_the_mutation_it_was_written_for():
    """A key (statement hash, operator, position) can come to name another mutation: an argument
    counts only where its group and the mutant's `what` are the ones on record. Every argument on
    record names at least one group's mutant, and each one still exists in that group's schema
    (else it is stale: argue it again or remove it)."""
    eq = {"Opc:0:operator:& -> |#3": {"why": "x | x = x", "mutants": {"ms3": "& -> | in `a & a`"}}}
    assert mutation.argument(eq, "ms3", "Opc:0:operator:& -> |#3", "& -> | in `a & a`") == "x | x = x"
    assert mutation.argument(eq, "ms3", "Opc:0:operator:& -> |#3", "& -> | in `a & b | c`") is None
    assert mutation.argument(eq, "msv", "Opc:0:operator:& -> |#3", "& -> | in `a & a`") is None
    m = mutation.Mutant(1, "Opc:0:operator:& -> |#3", "Opc", "OPC", 1, "operator", "& -> | in `a & b`")
    assert mutation.stale_arguments(eq, "ms3", [m]) == ["Opc:0:operator:& -> |#3"]
    assert mutation.stale_arguments(eq, "msv", [m]) == []          # not written for msv: not msv's
    on_record = json.loads(mutation.EQUIVALENT.read_text())
    assert all(e["why"] and e["mutants"] for e in on_record.values())
    whats = {gname: {(x.key, x.what) for x in mutation.schema(ROOT / "build" / "rtl" / g.variant / g.file, gname)[1]}
             for gname, g in mutation.GROUPS.items()}
    stale = [(k, gname) for k, e in on_record.items() for gname, what in e["mutants"].items()
             if (k, what) not in whats[gname]]
    assert not stale, f"arguments whose mutation is gone from the group's schema: {stale}"
    # a covered mutant likewise, and the other group's mutants that cover it must exist there
    covered = json.loads(mutation.COVERED.read_text())
    keys = {g: {k for k, _ in w} for g, w in whats.items()}
    stale = [(k, gname) for k, c in covered.items() for gname, what in c["mutants"].items()
             if (k, what) not in whats[gname]]
    stale += [(k, c["group"]) for k, c in covered.items() for x in c["keys"] if x not in keys[c["group"]]]
    assert all(c["mutants"] for c in covered.values()) and not stale, f"stale covered entries: {stale}"


@pytest.mark.rtl_variants("m2s1w1", "ms3")
def test_a_seeded_sample_of_mutants_is_killed(tmp_path):
    """APTA_MUTATION_SAMPLE mutants (default 12) of each of APTA_MUTATION_GROUPS (default: the core
    and the memory server on ms3; `make rtl-mutation` runs every group in full), seeded by APTA_MUTATION_SEED (default:
    the day, so the sample moves over the whole set across runs; the seed is printed): the
    unmutated schema passes every test, and every sampled mutant is killed, argued equivalent, or
    one of the analysed open findings (rtl/tools/mutation_open.json); a new survivor fails."""
    import datetime
    seed = int(os.environ.get("APTA_MUTATION_SEED", datetime.date.today().toordinal()))
    n = os.environ.get("APTA_MUTATION_SAMPLE", "12")
    out = tmp_path / "rtl-mutation.json"
    groups = os.environ.get("APTA_MUTATION_GROUPS", "core,ms3")
    rc = mutation.main(["--groups", groups, "--sample", n, "--seed", str(seed), "--jobs", "2", "--allow-open", "--fresh",
                        "--out", str(out)])
    rep = json.loads(out.read_text()) if out.exists() else {}
    surv = [f"#{m['id']} {m['module']}:{m['line']} {m['what']}" for g in rep.get("groups", {}).values()
            for m in g["mutants"] if m["status"] == "survived"]
    assert rc == 0, f"seed {seed}: " + ("\n".join(surv) or f"exit {rc} (the unmutated schema fails a test)")


@pytest.mark.rtl_variants("m2s1w1", simulator=False)
def test_equivalence_proof_tells_dead_code_from_a_bug():
    """On the one-way directory of m2s1w1 the cold-sharer preference cannot change the victim
    (DirUpdate's `sharers == 0` feeds `S & (~(S & cold) | cold)` = S): yosys proves that mutant
    equivalent; a spurious decodeErr valid out of reset (a real bug) is not proven."""
    import shutil
    if shutil.which("yosys") is None:
        pytest.fail("yosys missing (make synth installs it)")
    g = mutation.GROUPS["core"]
    mutation.generate(g, RTL)
    _, mutants = mutation.schema(RTL / g.variant / g.file, "core")
    dead = next(m for m in mutants if m.module == "DirUpdate" and m.kind == "stuck1"
                and "`io_ways_0_sharers == 2'h0`" in m.what)
    bug = next(m for m in mutants if m.module == "CoherenceCore" and m.kind == "reset"
               and m.line and "io_decodeErr_r_valid_REG <=" in (RTL / g.variant / g.file).read_text().splitlines()[m.line - 1])
    assert mutation.prove_equivalent(g, dead)
    assert mutation.prove_equivalent(g, bug) is None


@pytest.mark.rtl_variants("m2s1w1")
def test_two_runs_at_once_keep_apart(tmp_path):
    """Two runs of the same mutants at once (the `make test` sample beside `make rtl-mutation`):
    each works in its own directory (APTA_MUTATION_DIR: every mutant's result files, cocotb's
    results XML through APTA_OUT_DIR), they share one schema directory and Verilator build (named
    by content, built under a lock), and both give every mutant the verdict a run alone gives.
    The mutants: MsgDecoder's, run through the decoder test only (seconds each)."""
    import subprocess
    import sys
    g = mutation.GROUPS["core"]
    _, mutants = mutation.schema(RTL / g.variant / g.file, "core")
    picked = [m for m in mutants if m.module == "MsgDecoder" and m.kind == "operator"][:3]
    assert len(picked) == 3
    sel = "^(" + "|".join(re.escape(m.key) for m in picked) + ")$"
    env = {k: v for k, v in os.environ.items() if k not in ("APTA_MUTATION_DIR", "APTA_OUT_DIR")}
    procs = [subprocess.Popen([sys.executable, "-m", "apta.rtl.mutation", "--groups", "core", "--tests", "decoder",
                               "--select", sel, "--jobs", "1", "--allow-open", "--fresh", "--out", str(tmp_path / f"{i}.json")],
                              env=env, cwd=mutation.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    reps = []
    for i, (p, out) in enumerate(zip(procs, outs)):
        assert (tmp_path / f"{i}.json").exists(), f"run {i} wrote no report (exit {p.returncode}):\n{out[-3000:]}"
        reps.append(json.loads((tmp_path / f"{i}.json").read_text()))
    assert reps[0]["workdir"] != reps[1]["workdir"]
    verdicts = [{m["key"]: (m["status"], m["by"]) for m in r["groups"]["core"]["mutants"]} for r in reps]
    assert set(verdicts[0]) == {m.key for m in picked}
    assert verdicts[0] == verdicts[1], outs
    # the decoder test tells these mutants from the design (each is an operator of its decode logic)
    assert all(v == ("killed", "decoder") for v in verdicts[0].values()), verdicts[0]
