"""schema/mutants.json, the mutant registry: one entry per deliberate bug, with each layer's switch
and what must reject it. These tests read every layer's mutants from its own sources (Murphi's
apta.m and checks.json, TLA's Apta.tla and check.py, rtl/Mutants.scala, the simulator's
parse_mutant, the daemon's --mutant, the daemon fuzzers' mutant switches, the scheduler e2e's plugin switch) and the README tables
generated from the registry, and show on doctored inputs that a difference is reported.
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from apta.schema_tools import mutants

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "schema" / "mutants.py"


@pytest.fixture(scope="module")
def reg() -> dict:
    return mutants.load()


@pytest.fixture(scope="module")
def layers() -> dict:
    return mutants.read_layers(ROOT)


# --- the repository as it is --------------------------------------------------------------------
def test_every_layer_agrees_with_the_registry(reg, layers):
    problems = mutants.compare(reg, layers)
    assert not problems, "\n".join(problems)


def test_readme_tables_are_generated_from_the_registry(reg):
    problems = mutants.sync_readmes(reg)
    assert not problems, "\n".join(problems) + "\n(python3 schema/mutants.py --write)"


def test_every_layer_has_mutants(layers):
    for name, layer in layers.items():
        assert layer["switches"], f"no mutant read from {name} ({layer['where']}): is the reader broken?"


def test_check_command_passes():
    p = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "agree with every layer" in p.stdout


def test_model_checker_mutants_are_rejected_on_a_property_of_their_run(reg):
    """Each Murphi and TLA run named in the registry targets exactly one property, the one its
    checker's configuration expects (compared by test_every_layer_agrees_with_the_registry)."""
    for layer in mutants.MODEL_LAYERS:
        for bug, e in mutants.entries(reg, layer).items():
            assert e["runs"], (bug, layer)
            for run, spec in e["runs"].items():
                assert spec["fails"] and spec["config"], (bug, layer, run)


# --- doctored lists: each kind of difference is reported --------------------------------------
def _doctor(layers: dict) -> dict:
    return copy.deepcopy(layers)


def test_layer_mutant_missing_from_the_registry(reg, layers):
    d = _doctor(layers)
    d["sim"]["switches"]["put_never_commits"] = {"caught_by": set()}
    d["rtl"]["switches"]["ack_twice"] = {"id": 13, "unit": "core", "caught_by": set()}
    problems = mutants.compare(reg, d)
    assert any("sim: put_never_commits" in p and "missing from the registry" in p for p in problems), problems
    assert any("rtl: ack_twice" in p and "missing from the registry" in p for p in problems), problems


def test_registry_names_a_mutant_the_layer_lacks(reg, layers):
    d = _doctor(layers)
    del d["daemon"]["switches"]["commit-waits-for-acks"]
    del d["murphi"]["switches"]["M_NO_FORWARD"]
    problems = mutants.compare(reg, d)
    assert any("daemon:" in p and "commit-waits-for-acks" in p and "does not have" in p for p in problems), problems
    assert any("murphi:" in p and "M_NO_FORWARD" in p and "does not have" in p for p in problems), problems


def test_expected_property_differs_from_the_layer(reg, layers):
    d = _doctor(layers)
    d["murphi"]["runs"]["sched_rule_off"]["fails"] = "P3_memory_holds_latest_commit"
    d["tla"]["runs"]["get-sa-to-s"]["config"] = "live.cfg"
    d["tla"]["runs"]["old-epoch-ack"]["full"] = False
    problems = mutants.compare(reg, d)
    assert any("run sched_rule_off" in p and "P3_memory_holds_latest_commit" in p
               and "P1_get_returns_latest_at_placement" in p for p in problems), problems
    assert any("run get-sa-to-s" in p and "live.cfg" in p for p in problems), problems
    assert any("run old-epoch-ack" in p and "full" in p for p in problems), problems


def test_runs_missing_on_either_side(reg, layers):
    d = _doctor(layers)
    del d["tla"]["runs"]["no-fence-completion"]
    d["murphi"]["runs"]["no_fencing_twice"] = {"switch": "M_NO_FENCING", "config": "smoke",
                                               "fails": "P5_entries_return_to_stable"}
    problems = mutants.compare(reg, d)
    assert any("no-fence-completion" in p and "is not one of spec/tla/check.py" in p for p in problems), problems
    assert any("no_fencing_twice" in p and "missing from the registry" in p for p in problems), problems


def test_rtl_id_unit_and_catching_tests(reg, layers):
    d = _doctor(layers)
    d["rtl"]["switches"]["get_SA_to_S"]["id"] = 9
    d["rtl"]["switches"]["osc_no_forward"]["caught_by"].discard(mutants.RTL_MS_VECTORS)
    d["sim"]["switches"]["ack_old_epoch"]["caught_by"] = set()       # dropped from test_sim's list
    problems = mutants.compare(reg, d)
    assert any("get_SA_to_S: id is 9" in p for p in problems), problems
    assert any("osc_no_forward" in p and "test_ms_vectors" in p for p in problems), problems
    assert any("sim: ack_old_epoch" in p and "none" in p for p in problems), problems


def test_layer_lists_that_disagree_with_the_layer(reg, layers):
    d = _doctor(layers)
    d["sim"]["lists"]["main.cpp's usage"] = ["sa_get_to_s"]
    problems = mutants.compare(reg, d)
    assert any("main.cpp's usage" in p for p in problems), problems


def test_registry_shape_is_validated(reg):
    bad = copy.deepcopy(reg)
    bad["bugs"]["sa_get_to_s"]["bug"] = ""
    del bad["bugs"]["no_fencing"]["tla"]["runs"]["no-fence"]["fails"]
    bad["bugs"]["accept_in_SI"]["rtl"]["caught_by"] = []
    bad["bugs"]["stale_view"]["qemu"] = {"switch": "x"}
    problems = mutants.validate(bad)
    assert any("sa_get_to_s" in p and "description" in p for p in problems), problems
    assert any("no-fence" in p and "'fails'" in p for p in problems), problems
    assert any("accept_in_SI.rtl" in p and "caught_by" in p for p in problems), problems
    assert any("stale_view.qemu" in p and "unknown layer" in p for p in problems), problems


def test_a_test_reference_that_does_not_exist(reg):
    bad = copy.deepcopy(reg)
    bad["bugs"]["sa_get_to_s"]["sim"]["caught_by"] = ["tests/test_sim.py::test_no_such_thing[sa_get_to_s]"]
    bad["bugs"]["sched_rule_off"]["scheduler"]["caught_by"][1] += "-typo"
    problems = mutants.compare(bad, mutants.read_layers(ROOT))
    assert any("test_no_such_thing" in p for p in problems), problems
    assert any("no subtest 'negative-control-plugin-disabled-typo'" in p for p in problems), problems


# --- doctored sources in a copy of the repository --------------------------------------------------
def _copy(tmp_path: Path, reg: dict) -> Path:
    """The files the readers, the test references and the READMEs need, copied under tmp_path."""
    files = {"schema/mutants.json", "spec/murphi/apta.m", "spec/murphi/checks.json", "spec/tla/Apta.tla",
             "spec/tla/check.py", "rtl/Mutants.scala", "tests/rtl/test_ms_vectors.py",
             "sim/src/directory.cpp", "sim/src/directory.hpp", "sim/src/main.cpp", "sim/src/model.cpp", "tests/test_sim.py",
             "qemu-cxl/daemon/memd.cpp", "tests/test_runner.py", "qemu-cxl/daemon/Makefile",
             "scheduler-plugin/test/e2e/daemon_test.go", "sim/gem5/apta_mem_server.cc", "sim/gem5/configs/run_apta.py"}
    files |= set(mutants.readmes(reg).values())
    files |= {ref.split("::")[0] for b in reg["bugs"].values() for e in b.values()
              if isinstance(e, dict) for ref in e.get("caught_by", [])}
    root = tmp_path / "repo"
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, root / f)
    return root


def _check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--check", "--root", str(root)],
                          capture_output=True, text=True)


def test_doctored_sources_fail_the_check(tmp_path, reg):
    root = _copy(tmp_path, reg)
    assert _check(root).returncode == 0, _check(root).stderr           # the copy is complete
    checks = json.loads((root / "spec/murphi/checks.json").read_text())
    checks["mutants"]["sa_get_to_s"]["expected"] = "P1_stale_copies_are_pending"
    (root / "spec/murphi/checks.json").write_text(json.dumps(checks, indent=2))
    cpp = root / "sim/src/directory.cpp"
    cpp.write_text(cpp.read_text().replace(
        '  if (s == "ack_old_epoch")', '  if (s == "drop_acks") return Mutant::AckOldEpoch;\n  if (s == "ack_old_epoch")', 1))
    scala = root / "rtl/Mutants.scala"
    scala.write_text(scala.read_text().replace(
        "  val all: Seq[Mutant]", '  val ackTwice = Mutant(13, "ack_twice", "an ack decrements twice")\n  val all: Seq[Mutant]', 1))
    mk = root / "qemu-cxl/daemon/Makefile"
    mk.write_text(mk.read_text().replace("FUZZ_MUTANTS := ", "FUZZ_MUTANTS := cl-atoi ", 1))
    g5 = root / "tests/test_gem5.py"     # the stale-data test no longer runs the gem5 mutant
    g5.write_text(g5.read_text().replace('["", "drop_bisnp"]', '[""]', 1))
    p = _check(root)
    assert p.returncode == 1
    assert "fuzz: cl-atoi" in p.stderr, p.stderr                         # a fuzz mutant the registry lacks
    assert "run sa_get_to_s: the property it must violate is 'P1_stale_copies_are_pending'" in p.stderr, p.stderr
    assert "sim: drop_acks" in p.stderr and "rtl: ack_twice" in p.stderr, p.stderr
    assert "directory.cpp's 'known:' message" in p.stderr, p.stderr       # the layer's own list lags too
    assert "gem5: drop_bisnp: the layer's tests that must catch it are none" in p.stderr, p.stderr


def test_stale_readme_table_fails_and_write_fixes_it(tmp_path, reg):
    root = _copy(tmp_path, reg)
    readme = root / "sim/README.md"
    readme.write_text(readme.read_text().replace("| `sa_get_to_s` |", "| `sa_get_to_S` |", 1))
    p = _check(root)
    assert p.returncode == 1 and "sim/README.md: the sim mutant table differs" in p.stderr, p.stderr
    w = subprocess.run([sys.executable, str(SCRIPT), "--write", "--root", str(root)], capture_output=True, text=True)
    assert w.returncode == 0, w.stderr
    assert _check(root).returncode == 0
    assert readme.read_text() == (ROOT / "sim/README.md").read_text()


def test_rtl_measured_tables_name_the_registry_mutants(tmp_path, reg):
    root = _copy(tmp_path, reg)
    readme = root / "rtl/README.md"
    readme.write_text(readme.read_text().replace("| 3 accept_in_SI |", "| 3 accept_in_S |", 1))
    problems = mutants.sync_readmes(reg, root)
    assert any("mutant 3 accept_in_S," in p for p in problems), problems


def test_readme_without_markers_is_reported(tmp_path, reg):
    root = _copy(tmp_path, reg)
    readme = root / "qemu-cxl/daemon/README.md"
    readme.write_text(readme.read_text().replace("<!-- mutants:begin daemon -->", "", 1))
    problems = mutants.sync_readmes(reg, root)
    assert any("no block <!-- mutants:begin daemon -->" in p for p in problems), problems
