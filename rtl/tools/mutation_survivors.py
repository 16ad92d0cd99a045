"""What a surviving mutant is (mutation.py): argued equivalent (mutation_equivalent.json), proved
equivalent by yosys (the proofs kept per schema), covered by another group's kill
(mutation_covered.json), or an analysed open finding (mutation_open.json).
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from apta.rtl.mutation_groups import HERE, OUT, RUNS, Group
from apta.rtl.mutation_run import write_atomic
from apta.rtl.mutation_schema import SCHEMA_DIRS, Mutant, _module_text, _with_deps, fixed

EQUIVALENT = HERE / "mutation_equivalent.json"


def pinned(entries: dict, group: str, key: str, what: str) -> dict | None:
    """The entry of mutant `key` of `group` in an analysis file (mutation_equivalent.json,
    mutation_covered.json), if it was written for this very mutation: each entry names, per group,
    the mutant's `what` ({"mutants": {group: what}, ...}). Otherwise None."""
    e = entries.get(key)
    return e if e is not None and e["mutants"].get(group) == what else None


def argument(equivalent: dict, group: str, key: str, what: str) -> str | None:
    """The written equivalence argument of mutant `key` of `group` ({"why", "mutants"}), if written
    for this very mutation; otherwise None (the mutant runs; if it survives it is a finding until
    someone argues it again)."""
    e = pinned(equivalent, group, key, what)
    return e["why"] if e else None


def stale_arguments(equivalent: dict, group: str, mutants) -> list[str]:
    """The keys of `group`'s mutants whose argument on record was written for this group's mutant
    of that key and names another mutation now: printed by every run, so that a renumbering cannot
    silently move an argument. (An argument written for other groups only is not this group's.)"""
    return [m.key for m in mutants if group in equivalent.get(m.key, {}).get("mutants", {})
            and argument(equivalent, group, m.key, m.what) is None]
# survivors analysed and not yet killed: the regression's known blind spots, each with what would
# kill it. They fail `make rtl-mutation`; the sample in `make test` fails only on a survivor not here.
OPEN = HERE / "mutation_open.json"
# survivors of one group whose logic is killed in another group's variant, where it is observable
# (m2s1w1's 16-bit epochs never reach the last value; mutants_epochs' 3-bit ones do): key ->
# {"group", "keys" (the other group's mutants of the same logic), "why"}. Such a survivor is
# "covered" only when that group ran in the same invocation and killed every one of those keys;
# otherwise it stays open.
COVERED = HERE / "mutation_covered.json"


def prove_equivalent(group: Group, m: Mutant, timeout: float = 60) -> str | None:
    """The argument that mutant m cannot be told from the design by any input sequence, or None:
    yosys matches the mutated module's signals with the original's by name (equiv_make; one
    expression differs), then proves every matched pair equal for all inputs, registers assumed
    equal at the start of each step (equiv_simple, then equiv_induct by temporal induction)."""
    d = OUT / "equiv" / f"{group.name}-{m.id}"
    d.mkdir(parents=True, exist_ok=True)
    sch = (SCHEMA_DIRS[group.name] / group.file).read_text()
    orig = _with_deps(fixed(sch, 0), m.module)
    if group.env.get("APTA_SRAM") == "read-first":      # the memory the group's tests simulate
        from apta.testbench import sram
        orig = sram.read_first(orig, str(SCHEMA_DIRS[group.name] / group.file))[0]
    mut = _module_text(fixed(sch, m.id), m.module).replace(f"module {m.module}(", f"module {m.module}__mut(", 1)
    (d / "orig.v").write_text(orig)
    (d / "mut.v").write_text(mut)
    # match outputs and registers only: an intermediate wire may differ (it is the mutated one)
    # as long as nothing it feeds does
    wires = re.findall(r"^\s*wire\s+(?:\[[^\]]*\]\s*)?(\w+)", _module_text(orig, m.module), re.M)
    (d / "blacklist").write_text("\n".join(wires) + "\n")
    script = (f"read_verilog -sv -DSYNTHESIS {d / 'orig.v'}; read_verilog -sv -DSYNTHESIS {d / 'mut.v'}; "
              f"hierarchy -check; proc; memory -nomap; flatten; opt_clean; "
              f"equiv_make -blacklist {d / 'blacklist'} {m.module} {m.module}__mut equiv; hierarchy -top equiv; "
              f"equiv_simple -seq 2; equiv_induct -seq 2; equiv_status -assert")
    try:
        r = subprocess.run(["yosys", "-q", "-p", script], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        _PROOF_TIMED_OUT.add(m.key)      # no verdict (cached_proof keeps it as TIMED_OUT)
        return None
    (d / "yosys.log").write_text(r.stdout + r.stderr)
    if r.returncode == 0:
        return (f"yosys proves {m.module} with the mutant equivalent to the original (equiv_make, "
                f"equiv_simple, equiv_induct; every output and register equal under all inputs)")
    return None


_PROOF_TIMED_OUT: set = set()
# kept like a failed proof, so that a later run of the schema does not spend the time again
TIMED_OUT = "no verdict: yosys timed out"


def _proof_file(group: Group) -> Path:
    sram = "-sram-read-first" if group.env.get("APTA_SRAM") == "read-first" else ""
    return RUNS / "proofs" / f"{SCHEMA_DIRS[group.name].name}{sram}.json"


def known_proof(group: Group, m: Mutant) -> str | None:
    """A yosys proof of m that an earlier run of the same schema found, or None."""
    f = _proof_file(group)
    p = json.loads(f.read_text() or "{}").get(m.key) if f.exists() else None
    return None if p == TIMED_OUT else p


def cached_proof(group: Group, m: Mutant) -> str | None:
    """prove_equivalent, its verdict kept per schema (build/rtl-mutation/proofs/<schema dir>.json,
    the schema named by content): a survivor's yosys proof (up to 60 s: the core's take about a
    second, the object map's about 15 on a loaded machine and timed out at 30, none of the memory
    server's OSC proofs finished in 80) runs once, not in every run that
    meets it; a timeout is kept too."""
    import fcntl
    f = _proof_file(group)
    f.parent.mkdir(parents=True, exist_ok=True)
    if f.exists():
        known = json.loads(f.read_text() or "{}")
        if m.key in known:
            return None if known[m.key] == TIMED_OUT else known[m.key]
    proof = prove_equivalent(group, m)
    with open(f.with_suffix(".lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        known = json.loads(f.read_text() or "{}") if f.exists() else {}
        known[m.key] = TIMED_OUT if m.key in _PROOF_TIMED_OUT else proof
        write_atomic(f, json.dumps(known, indent=1))
    return proof
