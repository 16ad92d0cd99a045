"""Running a mutant through its group's tests (mutation.py): each test in a child process
(`python -m apta.rtl.mutation _one ...`) under a time budget, in an order that finds a kill soon,
and the verdicts kept per schema and tests so that a stopped run goes on where it stopped.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from apta.rtl.mutation_groups import CASE_ENV, GROUPS, OUT, ROOT, RUNS, STOPPED, Group
from apta.rtl.mutation_schema import SCHEMA_DIRS, Mutant, _module_text, fixed


class HarnessError(RuntimeError):
    """A test child that gave no verdict (an import error, a crash of the runner)."""


def verdict_file(group: Group, schema_dir: Path) -> Path:
    """build/rtl-mutation/verdicts/<group>-<hash>.jsonl: each mutant's verdict (the killing test or
    none) as it is reached, so that a full run that stops (its terminal closed, the machine
    restarted) goes on where it stopped. The hash names everything a verdict depends on: the
    schema (the design and every mutant), the group's tests, and the files they read (tests/rtl,
    rtl/testbench, python/apta, the vectors, compared by content); a change to any of them starts over.
    The driver (mutation.py and its modules beside it) is not hashed (its edits would discard hours
    of verdicts): after changing how a group's test runs (the _core_*/_ms_* functions of
    mutation_groups.py), run with --fresh."""
    h = hashlib.sha256(schema_dir.name.encode() + json.dumps([n for n, _ in group.tests]).encode()
                       + json.dumps(group.env, sort_keys=True).encode())
    # (this driver and its own test are not inputs of a verdict: the group's test list above is)
    for f in sorted([*(ROOT / "tests" / "rtl").glob("*.py"), *(ROOT / "rtl" / "testbench").glob("*.py"),
                      *(ROOT / "python" / "apta").glob("*.py"), *(ROOT / "schema").glob("*.json")]):
        if f.name not in ("mutation.py", "test_rtl_mutation.py"):
            h.update(f.name.encode() + f.read_bytes())
    for f in sorted((ROOT / "build" / "vectors").rglob("*.jsonl")):
        # the generator's key order varies from run to run (a step's merged expectations): by content
        h.update(f.name.encode() + "\n".join(json.dumps(json.loads(x), sort_keys=True)
                                             for x in f.read_text().splitlines() if x.strip()).encode())
    return RUNS / "verdicts" / f"{group.name}-{h.hexdigest()[:16]}.jsonl"


def earlier_kills(group: Group, schema_dir: Path, mutants: list[Mutant]) -> dict[int, dict]:
    """--keep-kills: the kills any earlier run of this group reached on the same schema (the same
    design and mutants), whatever the tests were then, and, by key, those reached on an earlier
    schema of the variant whose mutated module is unchanged (another module's fix since then, say);
    a test since weakened, or a changed module's effect on an unchanged one, would leave such a
    kill standing, so this is for closing survivors quickly, never for the measured run."""
    out = {}
    names = {n for n, _ in group.tests}
    here = fixed((schema_dir / group.file).read_text(), 0)
    by_key = {m.key: m for m in mutants}
    same: dict[tuple[str, str], bool] = {}          # (earlier schema, module): the module unchanged

    def unchanged(old: str, module: str) -> bool:
        if (old, module) not in same:
            f = RUNS / "schema" / old / group.file
            try:
                same[(old, module)] = f.exists() and \
                    _module_text(fixed(f.read_text(), 0), module) == _module_text(here, module)
            except AttributeError:      # the module is gone
                same[(old, module)] = False
        return same[(old, module)]

    for f in sorted((RUNS / "verdicts").glob(f"{group.name}-*.jsonl"), key=lambda f: f.stat().st_mtime):
        for i, v in read_verdicts(f).items():
            if v.get("by") not in names:
                continue
            if v.get("schema") == schema_dir.name:
                out[i] = v
            elif (m := by_key.get(v.get("key"))) and v.get("schema", "").startswith(group.variant + "-") \
                    and unchanged(v["schema"], m.module):
                out[m.id] = dict(v, id=m.id, carried_from=v["schema"])
    return out


def read_verdicts(path: Path) -> dict[int, dict]:
    """The verdicts of an earlier run of the same inputs (a torn last line, from a run killed while
    writing it, is ignored: that mutant runs again)."""
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                v = json.loads(line)
                out[int(v["id"])] = v
            except (ValueError, KeyError, TypeError):
                continue
    return out


# A test whose simulation holds only some modules cannot tell a mutant of another from the design:
# the decoder test's top is MsgDecoder alone.
REACHES = {"decoder": frozenset({"MsgDecoder"})}
# A mutant of a module that one of the group's tests is written for runs that test first (the others
# after it, in the group's order): the allocator's and the map's mutants pass the smoke tests, which
# never register or remove an object, so the group's order would cost each of them the smoke run
# first; the top's (mostly the dispatcher's) run the server-port tests first; the version table's
# (most of them one of its 64 counter lanes) the hold-table tests, the only ones that read a
# version. Its "killed by" is then the first test in that order.
FIRST = {"ExtentAlloc": "ms-alloc", "ObjMap": "ms-alloc", "MemoryServer": "ms-ports", "VersionTable": "ms-hold"}


def run_one(group: Group, mid: int, budget: dict, times: dict | None = None,
            module: str | None = None, first: str | None = None,
            only: str | None = None, case: tuple[str, str] | None = None) -> tuple[str | None, str | None, float]:
    """(the killing test, its failure) or (None, None) for a survivor, each test in a child
    process so that a hung or crashing simulation costs only its budget (seconds per test name);
    `times` receives each test's wall time. A mutant of `module` skips the tests that do not
    simulate it (REACHES); `first` (the test that killed a mutant of the same statement) runs
    before the module's FIRST and the group's order; `only`: that test alone, in a directory of its
    own (the unmutated run's tests run side by side); `case` (test, cocotb test): that test runs
    the cocotb test that killed a mutant before this one alone first (_ms_module). None of these
    changes a verdict, only how soon a kill is seen."""
    t0 = time.monotonic()
    rdir = OUT / "runs" / group.variant / (str(mid) if only is None else f"{mid}-{only}")
    rdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, APTA_RTL_MUTANT=str(mid), RTL_DIR=str(SCHEMA_DIRS[group.name]),
               APTA_MUTATION_DIR=str(OUT), APTA_OUT_DIR=str(rdir), **group.env)
    if mid:
        env["APTA_SIM_PREBUILT"] = "1"      # the unmutated run built every simulator of the group
    order = [n for n, _ in group.tests if only in (None, n)]
    for lead in (FIRST.get(module), first):
        if lead in order:
            order.remove(lead)
            order.insert(0, lead)
    for name in order:
        if module is not None and name in REACHES and module not in REACHES[name]:
            continue
        cmd = [sys.executable, "-m", "apta.rtl.mutation", "_one", group.name, name, str(mid)]
        t1 = time.monotonic()
        # its own process group: on a timeout the simulator the child started goes too
        cenv = dict(env, **{CASE_ENV: case[1]}) if case and case[0] == name else env
        p = subprocess.Popen(cmd, env=cenv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=budget[name])
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.communicate()
            return name, f"timeout: no verdict in {budget[name]:.0f} s (the design hangs)", time.monotonic() - t0
        r = subprocess.CompletedProcess(cmd, p.returncode, out, err)
        last = (r.stdout.strip().splitlines() or [""])[-1]
        if r.returncode != 0 or not last.startswith("MUTATION-RESULT "):
            # the harness itself broke (not a verdict on the mutant): never counted as a kill
            raise HarnessError(f"{group.name} mutant {mid} test {name}: exit {r.returncode}: "
                               f"{(r.stderr or r.stdout)[-600:]}")
        res = json.loads(last[len("MUTATION-RESULT "):])
        if times is not None:       # the test's own time: without the simulator builds it made
            times[name] = time.monotonic() - t1 - res["build_seconds"]
        if res["failure"]:
            why = res["failure"]
            if why == STOPPED or "cocotb failure" in why:   # the reason is in the simulation's log
                m = re.search(r"(Assertion failed: [^\n]+|\w*(?:Error|Mismatch): [^\n]+)", r.stdout)
                why = m.group(1).strip() if m else why
            return name, why[:300], time.monotonic() - t0
    return None, None, time.monotonic() - t0


def _child(group: str, test: str, mid: str) -> int:
    g = GROUPS[group]               # (`python -m apta.rtl.mutation _one ...`: the simulator loads the cocotb module from tests/rtl)
    fn = dict(g.tests)[test]
    env = {"APTA_RTL_MUTANT": mid}
    import io, contextlib
    from apta.testbench import core_bfm
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        failure = fn(g.variant, env)
    print("MUTATION-RESULT " + json.dumps({"failure": failure, "build_seconds": core_bfm.BUILD_SECONDS[0]}))
    return 0


def write_atomic(path: Path, text: str) -> None:
    """A results file two runs may both write is replaced whole, never read half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)
