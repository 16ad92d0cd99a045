"""TLA+ system-level proof (spec/tla): TLC's verdicts on the models and mutants.

The suite results come from spec/tla/check.py: if build/verify/summary.json
holds TLC records of every default run made from the current spec/tla files
(same spec_digest: `make verify` just ran), they are read; otherwise
check.py's default suite is run into a temporary summary.  The negative
tests run check.py on broken copies of spec/tla.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "tla"
CHECK = SPEC / "check.py"
SUMMARY = ROOT / "build" / "verify" / "summary.json"

from apta import summary

from apta.tla import check   # spec/murphi and spec/tla both have a check.py: apta.murphi.check, apta.tla.check

DEFAULT = {r.name: r for r in check.SUITES["default"]}
PINS = check.load_pins(SPEC / check.PINS_FILE)

# The mutants the TLA+ suite must have, and the property each must be rejected on
# (written here independently of check.py's table).
REQUIRED_MUTANTS = {
    "sched-rule-off": "GetFresh",        # scheduler rule off -> P1
    "stale-view": "GetFresh",            # view staler than contract C1 -> P1
    "no-fence": "AcksRetired",           # no fencing -> P5
    "old-epoch-ack": "AckAccounting",    # old-epoch ack accepted (protocol lemma)
    "old-epoch-ack-p1": "GetFresh",      # ... and its consequence on P1
    "early-put-ack": "Refinement",       # put acknowledged before the OPC commits
    # early placement with versioned gets (AptaFlow.tla)
    "release-old": "GetRequired",        # a held get released with the old version -> V1
    "hit-ignores-version": "GetRequired",  # a cache hit ignoring the required version -> V1
    "early-unversioned": "GetRequired",  # an early-placed function reads without a version -> V1
    "fence-drops-holds": "FlowCompletion",  # held gets dropped at the producer's fence -> P4
}


def run_check(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _fresh(path: Path) -> bool:
    """summary.json has every default TLC run, made from the current spec/tla."""
    if not path.exists():
        return False
    digest = check.spec_digest(SPEC)
    recs = {r["name"]: r for r in json.loads(path.read_text()) if r.get("checker") == "tlc"}
    return all(n in recs and recs[n].get("spec_digest") == digest and "depth" in recs[n] for n in DEFAULT)


@pytest.fixture(scope="session")
def results(tmp_path_factory) -> dict[str, dict]:
    path = SUMMARY
    if not _fresh(path):
        tmp = tmp_path_factory.mktemp("tla")
        path = tmp / "summary.json"
        p = run_check("--summary", str(path), "--build-dir", str(tmp / "build"))
        assert path.exists(), f"check.py wrote no summary:\n{p.stdout}\n{p.stderr}"
    return {r["name"]: r for r in json.loads(path.read_text()) if r["checker"] == "tlc"}


# ------------------------------------------------------------------ suite results
@pytest.mark.parametrize("name", list(DEFAULT))
def test_default_run_as_expected(results, name):
    assert name in results, f"{name} missing from the summary"
    r = results[name]
    for f in summary.FIELDS + ("distinct_states",):
        assert f in r, f"{name}: record lacks {f}"
    pin = PINS.get(name)
    assert pin, f"{name}: no pin in spec/tla/pins.json (spec/tla/check.py --only {name} --update-pins)"
    if r["kind"] == "model":
        assert r["result"] == "pass", f"model {name} failed on {r['violated']}"
        assert r["distinct_states"] == pin["distinct_states"], f"{name}: distinct states differ from the pin"
        # the depth is exact with one worker; with several TLC may report a longer path
        if r.get("workers") == 1:
            assert r["depth"] == pin["depth"], f"{name}: depth differs from the pin"
        else:
            assert r["depth"] >= pin["depth"], f"{name}: depth below the pin"
    else:
        assert r["result"] == "fail" and r["violated"] == DEFAULT[name].expected, \
            f"mutant {name}: expected a violation of {DEFAULT[name].expected}, got {r['violated']}"
        assert pin == {"violated": r["violated"]}, f"{name}: violated property differs from the pin"
    assert r["ok"] is True
    assert r.get("pin") == "match", f"{name}: pin status {r.get('pin')}"


@pytest.mark.parametrize("name,prop", sorted(REQUIRED_MUTANTS.items()))
def test_required_mutant_rejected(results, name, prop):
    r = results[name]
    assert r["kind"] == "mutant" and r["result"] == "fail" and r["violated"] == prop


def test_models_are_not_trivial(results):
    # The main safety and liveness models explore real state spaces.
    assert results["pipeline"]["distinct_states"] > 10_000
    assert results["live"]["distinct_states"] > 500
    assert results["flow"]["distinct_states"] > 10_000 and results["flow-live"]["distinct_states"] > 500
    for w in ("pipeline", "broadcast", "bgather", "scatter", "mapreduce", "diamond"):
        assert results[w]["result"] == "pass"


# ------------------------------------------------------------------ config generation
def test_mutant_cfg_is_one_switch():
    run = DEFAULT["no-fence"]
    base = (SPEC / run.cfg).read_text()
    text, temporal = check.render_cfg(run, base)
    assert 'Mutant = "NoFence"' in text and 'Mutant = "none"' not in text
    assert temporal == ["AcksRetired"]
    assert "SYMMETRY" not in text and "CHECK_DEADLOCK FALSE" in text
    # every other constant is the base model's
    base_consts = [l.strip() for l in base.splitlines() if "=" in l and "Mutant" not in l]
    for l in base_consts:
        assert l.split("\\*")[0].strip() in text


def test_liveness_models_have_no_symmetry():
    for r in DEFAULT.values():
        text, temporal = check.render_cfg(r, (SPEC / r.cfg).read_text())
        if temporal:
            assert "SYMMETRY" not in text, r.name


# ------------------------------------------------------------------ bad input
def _copy_spec(tmp_path: Path) -> Path:
    d = tmp_path / "tla"
    shutil.copytree(SPEC, d, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return d


def _run_on(d: Path, tmp_path: Path, *names: str) -> subprocess.CompletedProcess:
    args = ["--spec-dir", str(d), "--summary", str(tmp_path / "s.json"),
            "--build-dir", str(tmp_path / "build")]
    for n in names:
        args += ["--only", n]
    return run_check(*args, timeout=600)


def test_syntax_error_reports_sany(tmp_path):
    d = _copy_spec(tmp_path)
    apta = d / "Apta.tla"
    apta.write_text(apta.read_text().replace("Spec == Init /\\ [][Next]_vars",
                                             "Spec == Init /\\ [][Next]_vars /\\ (", 1))
    p = _run_on(d, tmp_path, "early-put-ack")
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert "does not parse" in out and "Parse Error" in out, out
    assert "Apta" in out


def test_semantic_error_reports_sany(tmp_path):
    d = _copy_spec(tmp_path)
    apta = d / "Apta.tla"
    apta.write_text(apta.read_text().replace("Settle(o) ==\n", "Settle(o) ==\n  /\\ NoSuchThing\n", 1))
    p = _run_on(d, tmp_path, "early-put-ack")
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert "NoSuchThing" in out and "Semantic errors" in out, out


def test_unknown_name_is_reported(tmp_path):
    p = run_check("--only", "no-such-model", "--summary", str(tmp_path / "s.json"))
    assert p.returncode == 2
    assert "no-such-model" in p.stderr


def test_failing_model_prints_trace(tmp_path):
    # The pipeline model with the scheduler rule switched off must fail with a trace.
    d = _copy_spec(tmp_path)
    cfg = d / "pipeline.cfg"
    cfg.write_text(cfg.read_text().replace('Mutant = "none"', 'Mutant = "SchedRuleOff"'))
    p = _run_on(d, tmp_path, "pipeline")
    assert p.returncode == 1
    assert "Invariant GetFresh is violated" in p.stdout
    assert "State 1: <Initial predicate>" in p.stdout
    rec = json.loads((tmp_path / "s.json").read_text())
    assert rec[0]["name"] == "pipeline" and rec[0]["ok"] is False


def test_mutant_not_rejected_fails(tmp_path):
    # Neutralise the StaleView switch: the mutant then passes, which is an error.
    d = _copy_spec(tmp_path)
    apta = d / "Apta.tla"
    text = apta.read_text()
    assert 'Mutant = "StaleView" \\/ VSeq' in text
    apta.write_text(text.replace('Mutant = "StaleView" \\/ VSeq', 'Mutant = "Disabled" \\/ VSeq'))
    p = _run_on(d, tmp_path, "stale-view-undeclared")
    assert p.returncode == 1
    assert "UNEXPECTED" in p.stdout


# ------------------------------------------------------------------ pins
def _rec(name: str, kind: str, **kw) -> dict:
    rec = {"name": name, "checker": "tlc", "kind": kind, "config": name, "states": 0, "rules_fired": 0,
           "distinct_states": 0, "seconds": 1.0, "result": "pass" if kind == "model" else "fail",
           "violated": None, "expected": None, "ok": True, "depth": None, "workers": 2}
    return rec | kw


def test_every_default_run_is_pinned():
    assert set(DEFAULT) <= set(PINS), f"unpinned default runs: {sorted(set(DEFAULT) - set(PINS))}"
    for name, pin in PINS.items():
        assert name in check.ALL_RUNS, f"pins.json pins {name}, which check.py does not run"
        want = {"distinct_states", "depth"} if check.ALL_RUNS[name].kind == "model" else {"violated"}
        assert set(pin) == want, (name, pin)


def test_pin_mismatch_is_a_failure_and_update_pins_rewrites_it(tmp_path):
    """Recorded runs against doctored pins: fewer distinct states, a shallower graph with one
    worker, another violated property each fail with a line naming run, pin and actual and the
    command that updates it; update_pins (--update-pins) writes the run, after which it matches."""
    pins = {"pipeline": {"distinct_states": 127156, "depth": 64},
            "store": {"distinct_states": 190, "depth": 22},
            "broadcast": {"distinct_states": 923, "depth": 23},
            "early-put-ack": {"violated": "Refinement"}}
    run = [_rec("pipeline", "model", distinct_states=12715, depth=64),
           _rec("store", "model", distinct_states=190, depth=21, workers=1),
           _rec("broadcast", "model", distinct_states=923, depth=24, workers=2),   # several workers: >=
           _rec("early-put-ack", "mutant", violated="GetFresh", expected="GetFresh"),
           _rec("live-deep", "model", distinct_states=32616, depth=40, workers=1)]
    lines = check.apply_pins(run, pins)
    assert [r["pin"] for r in run] == ["mismatch", "mismatch", "match", "mismatch", "unpinned"]
    assert [r["ok"] for r in run] == [False, False, True, False, True]
    assert "pipeline" in lines[0] and "127,156" in lines[0] and "12,715" in lines[0], lines[0]
    assert "runs.pipeline" in lines[0] and "--update-pins" in lines[0], lines[0]
    assert "depth 22" in lines[1] and "depth 21" in lines[1], lines[1]
    assert "violated Refinement" in lines[2] and "violated GetFresh" in lines[2], lines[2]

    path = tmp_path / "pins.json"
    path.write_text(json.dumps({"doc": "x", "runs": pins}))
    with pytest.raises(SystemExit, match="one-worker"):       # a depth pin needs -workers 1
        check.update_pins(path, run)
    for r in run:
        r["workers"] = 1
    assert check.update_pins(path, run) == ["pipeline", "store", "broadcast", "early-put-ack", "live-deep"]
    new = check.load_pins(path)
    assert new["pipeline"] == {"distinct_states": 12715, "depth": 64}
    assert new["early-put-ack"] == {"violated": "GetFresh"} and new["live-deep"]["depth"] == 40
    again = [_rec("pipeline", "model", distinct_states=12715, depth=64, workers=1)]
    assert check.apply_pins(again, new) == [] and again[0]["pin"] == "match"


def test_update_pins_runs_one_worker():
    p = run_check("--update-pins", "--workers", "2", "--only", "store")
    assert p.returncode == 2 and "one worker" in p.stderr
