"""spec/murphi: the results of `make verify` and the checker's handling of bad input.

The heavy model checking runs once, in `make verify` (which `make test` runs first); these tests
read its summary and re-run only the smallest configuration where a test needs Rumur itself.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "spec" / "murphi" / "check.py"
CHECKS = json.loads((ROOT / "spec" / "murphi" / "checks.json").read_text())
SUMMARY = ROOT / "build" / "verify" / "summary.json"
from apta import summary


from apta.murphi import check   # spec/murphi and spec/tla both have a check.py: apta.murphi.check, apta.tla.check

DEFAULT = CHECKS["suites"]["default"]


def run_check(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), "--no-summary", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def records() -> dict[str, dict]:
    if not SUMMARY.exists():
        pytest.fail(f"{SUMMARY} is missing: run `make verify` first (make test does)")
    recs = [r for r in json.loads(SUMMARY.read_text()) if r["checker"] == "rumur"]
    return {r["name"]: r for r in recs}


# --- the verification results --------------------------------------------------------------------
@pytest.mark.parametrize("config", DEFAULT["models"])
def test_configuration_verified(records, config):
    r = records.get(config)
    assert r is not None, f"configuration {config} missing from {SUMMARY}"
    assert r["result"] == "pass" and r["ok"], f"{config}: {r['violated']}"
    pin = CHECKS["configs"][config].get("pin")
    assert pin, f"{config}: no pin in checks.json (spec/murphi/check.py --only {config} --update-pins)"
    assert pin["states"] > 1000, "a real state space, not a trivial one"
    assert {"states": r["states"], "rules_fired": r["rules_fired"]} == pin, \
        f"{config}: the run differs from its pin in checks.json"


@pytest.mark.parametrize("config", DEFAULT["models"])
def test_required_covers_hit(records, config):
    r = records[config]
    required = CHECKS["configs"][config]["covers"]
    assert required, f"{config} requires no cover: every configuration must show what it exercises"
    for c in required:
        assert r["covers"].get(c, 0) > 0, f"{config}: cover {c!r} never hit"


@pytest.mark.parametrize("mutant", DEFAULT["mutants"])
def test_mutant_rejected_on_its_property(records, mutant):
    r = records.get(mutant)
    assert r is not None, f"mutant {mutant} missing from {SUMMARY}"
    expected = CHECKS["mutants"][mutant]["expected"]
    assert r["result"] == "fail", f"{mutant} passed: the property {expected} has no teeth"
    assert expected in r["all_violated"], f"{mutant} failed on {r['all_violated']}, not {expected}"
    assert r["ok"]
    pin = CHECKS["mutants"][mutant].get("pin")
    assert pin and expected in pin["violated"], f"{mutant}: no pin naming {expected} in checks.json"
    assert sorted(r["all_violated"]) == pin["violated"], f"{mutant}: Rumur reported other properties than its pin"


def test_every_property_has_a_mutant():
    """Each invariant, assertion-property, liveness property and the deadlock check of the model is
    the target of at least one mutant."""
    src = (ROOT / "spec" / "murphi" / "apta.m").read_text()
    import re
    props = set(re.findall(r'^(?:invariant|liveness)\s+"([^"]+)"', src, re.M))
    props |= set(re.findall(r'"(P[12]_[a-z_]+)";', src))          # P1 / P2 assertions
    targeted = {CHECKS["mutants"][m]["expected"] for m in DEFAULT["mutants"]}
    untested = sorted(p for p in props | {"deadlock"} if p not in targeted)
    assert not untested, f"properties without a mutant: {untested}"


DEEP = CHECKS["suites"]["deep"]
PROPERTIES = check.properties((ROOT / "spec" / "murphi" / "apta.m").read_text())


@pytest.mark.parametrize("config", DEFAULT["models"])
def test_configuration_is_live_for_some_property(records, config):
    """A configuration counts for a property only where a mutant on it is rejected on that property;
    every configuration of make verify must be shown able to falsify something."""
    live = {p: ms for p, ms in records[config].get("live", {}).items() if ms}
    assert live, f"{config}: no mutant run of the default suite is rejected on it: it proves nothing shown"


@pytest.mark.parametrize("prop", [p for p in PROPERTIES if p != "deadlock"])
def test_every_property_has_two_bug_classes(prop):
    """A second mutant per property, of another switch, so no class of bug depends on one run."""
    switches = {CHECKS["mutants"][m]["switch"] for m in DEFAULT["mutants"]
                if CHECKS["mutants"][m]["expected"] == prop}
    assert len(switches) >= 2, f"{prop}: only {sorted(switches)} in the default suite"


@pytest.mark.parametrize("switch", ["M_OLD_EPOCH_ACK", "M_STALL_PUT_IN_SA", "M_ACK_CLEARS_ALL"])
def test_second_round_bugs_caught_in_two_configurations(switch):
    """Bugs that need a second invalidation round on one object are caught in two configurations,
    not only in racing_puts, at least one of them in make verify (a counter of 2 needs three puts:
    ack_clears_all runs on three_puts here and on three_puts_faults in make verify-deep)."""
    runs = {n: m["config"] for n, m in CHECKS["mutants"].items() if m["switch"] == switch}
    assert any(n in DEFAULT["mutants"] for n in runs), f"{switch}: no run in make verify"
    configs = {c for n, c in runs.items() if n in DEFAULT["mutants"] + DEEP["mutants"]}
    assert len(configs) >= 2, f"{switch}: only on {sorted(configs)}"


# Feature combinations the protocol allows that a configuration must check to completion (default
# or deep suite).
COMBINATIONS = [
    {"2 objects, eviction", "a put", "a fault"},
    {"2 objects, eviction", "2 puts on one object"},
    {"2 objects, eviction", "OPC timeout"},
    {"2 objects, eviction", "silent eviction", "a put"},
    {"2 faults", "2 puts on one object"},
    {"2 faults", "2 objects, eviction"},
    {"2 faults", "3 servers"},
    {"3 servers", "2 puts on one object"},
    {"3 servers", "declared inputs"},
    {"declared inputs", "a put", "a fault"},
    {"2 staging slots", "a fault"},
    {"2-entry directory", "a put", "a fault"},
    {"3 puts on one object"},
]


@pytest.mark.parametrize("combo", COMBINATIONS, ids=lambda c: "+".join(sorted(c)))
def test_feature_combination_has_a_configuration(combo):
    have = [c for c in DEFAULT["models"] + DEEP["models"] if combo <= check.features_of(CHECKS, c)]
    assert have, f"no configuration of the default or deep suite combines {sorted(combo)}"


# Every pair of features: the protocol allows each (a 2-entry directory evicts with 3 objects; the OPC
# timeout needs a put, and "OPC timeout" is counted only where there is one), so none may be left to
# the README's "none yet" (no empty row for a combination the protocol allows).
PAIRS = [{a, b} for i, (a, _) in enumerate(check.FEATURES) for b, _ in check.FEATURES[i + 1:]]


# Pairs whose only configuration did not finish on the development machine (checks.json marks it
# "unfinished" with its numbers): open findings, listed so that a finished configuration must retire them.
OPEN_PAIRS: list[set] = []   # none: entries_slots_two_puts and entries_three_puts close the last three


@pytest.mark.parametrize("pair", PAIRS, ids=lambda c: "+".join(sorted(c)))
def test_every_feature_pair_has_a_configuration(pair):
    configs = [c for c in DEFAULT["models"] + DEEP["models"] if pair <= check.features_of(CHECKS, c)]
    assert configs, f"no configuration of the default or deep suite combines {sorted(pair)}"
    finished = [c for c in configs if "unfinished" not in CHECKS["configs"][c]]
    if pair in OPEN_PAIRS:
        assert not finished, f"{sorted(pair)} is checked by {finished}: remove it from OPEN_PAIRS"
        for c in configs:
            u = CHECKS["configs"][c]["unfinished"]
            assert u["states"] > 0 and u["seconds"] > 0, f"{c}: an unfinished run records its numbers"
    else:
        assert finished, f"{sorted(pair)}: only unfinished configurations {configs}"


def test_readme_tables_are_generated_from_checks():
    r = run_check("--check-tables")
    assert r.returncode == 0, r.stdout + r.stderr


def test_live_report_counts_only_rejected_mutants():
    """The per-configuration report names a property live only where its mutant was rejected."""
    checks = {"mutants": {"m1": {"config": "a", "expected": "P"}, "m2": {"config": "a", "expected": "Q"}}}
    recs = [{"name": "a", "kind": "model", "states": 10, "seconds": 1.0},
            {"name": "m1", "kind": "mutant", "ok": True}, {"name": "m2", "kind": "mutant", "ok": False}]
    text, nowhere = check.live_report(checks, recs, ["P", "Q"])
    assert "P (m1)" in text and "Q (" not in text
    assert nowhere == ["Q"]


def test_mutants_are_switches_of_the_one_model():
    """A mutant is a MUTANT value of apta.m, never a copied model file."""
    src = (ROOT / "spec" / "murphi" / "apta.m").read_text()
    for name, m in CHECKS["mutants"].items():
        assert f"{m['switch']}:" in src, f"{name}: switch {m['switch']} is not declared in apta.m"
        assert src.count(m["switch"]) >= 2, f"{name}: switch {m['switch']} is never used"
    assert not list((ROOT / "spec" / "murphi").glob("*mutant*.m"))


# --- the checker on real Rumur runs -------------------------------------------------------------------
def test_smoke_configuration_passes():
    r = run_check("--only", "smoke")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "smoke" in r.stdout and "pass (ok)" in r.stdout
    assert "every result equals its pin" in r.stdout, r.stdout


def test_violation_prints_counterexample_and_fails():
    """A model that violates a property exits non-zero and prints the trace that breaks it."""
    r = run_check("--only", "smoke", "--set", "MUTANT=M_SCHED_RULE_OFF")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "P1_get_returns_latest_at_placement" in r.stdout
    assert "counterexample" in r.stdout and "-> Rule" in r.stdout


def test_model_that_does_not_parse_reports_rumur_message(tmp_path):
    broken = tmp_path / "broken.m"
    broken.write_text((ROOT / "spec" / "murphi" / "apta.m").read_text().replace(
        "startstate \"all servers", "startstat \"all servers", 1))
    r = run_check("--only", "smoke", "--model", str(broken))
    assert r.returncode == 2
    assert "rumur rejected the model" in r.stderr and "syntax error" in r.stderr


def test_unknown_configuration_is_named():
    r = run_check("--only", "no_such_config")
    assert r.returncode == 2 and "no_such_config" in r.stderr


def test_unknown_suite_is_named():
    r = run_check("--suite", "nope")
    assert r.returncode == 2 and "unknown suite 'nope'" in r.stderr


def test_unknown_constant_is_named():
    with pytest.raises(check.CheckError, match="NOT_A_CONSTANT"):
        check.instantiate("const\n  A: 1;\n", {"NOT_A_CONSTANT": 3}, "checks.json: x")


def test_malformed_checks_file_names_line(tmp_path):
    bad = tmp_path / "checks.json"
    bad.write_text('{\n  "configs": {\n    "x": [1,,2]\n  }\n}\n')
    with pytest.raises(check.CheckError, match=r"checks.json:3:"):
        check.load_checks(bad)


def test_checks_file_missing_field(tmp_path):
    bad = tmp_path / "checks.json"
    data = json.loads(json.dumps(CHECKS))
    del data["mutants"][next(iter(data["mutants"]))]["expected"]
    bad.write_text(json.dumps(data))
    with pytest.raises(check.CheckError, match="missing field 'expected'"):
        check.load_checks(bad)


# --- pure functions -----------------------------------------------------------------------------------
def test_property_names_from_rumur_messages():
    assert check.property_of('invariant "P3_x" failed') == "P3_x"
    assert check.property_of('liveness property "P5_y" violated') == "P5_y"
    assert check.property_of("deadlock") == "deadlock"


def test_parse_output_reads_errors_covers_and_summary():
    xml = """<?xml version="1.0"?><rumur_run>
      <error includes_trace="true"><message>invariant &quot;P3_m&quot; failed</message>
        <transition>Startstate &quot;s&quot;</transition><state><state_component name="x" value="0"/></state>
        <transition>Rule &quot;r&quot;<parameter name="c">Server_1</parameter></transition>
        <state><state_component name="x" value="1"/></state></error>
      <cover_result message="c1" count="3"/><cover_result message="c2" count="0"/>
      <summary states="42" rules_fired="99" errors="1" duration_seconds="0"/></rumur_run>"""
    out = check.parse_output(xml)
    assert out.complete and out.states == 42 and out.rules_fired == 99
    assert [e["property"] for e in out.errors] == ["P3_m"]
    assert out.covers == {"c1": 3, "c2": 0}
    assert "Rule \"r\" [c=Server_1]" in check.format_trace(out.errors[0]["trace"])


def test_parse_output_of_a_killed_verifier():
    out = check.parse_output('<rumur_run><progress states="10" rules_fired="20" duration_seconds="1" '
                             'queue_size="1" thread_id="0"/>')
    assert not out.complete and out.states == 10


def test_summary_expected_ok():
    assert summary.expected_ok("model", "pass", None, None)
    assert not summary.expected_ok("model", "fail", "P1", None)
    assert summary.expected_ok("mutant", "fail", "P1", "P1")
    assert not summary.expected_ok("mutant", "fail", "P3", "P1")
    assert not summary.expected_ok("mutant", "pass", None, "P1")


def test_summary_update_replaces_only_its_checker(tmp_path):
    path = tmp_path / "s.json"
    rec = {f: None for f in summary.FIELDS}
    a = {**rec, "name": "a", "checker": "tlc", "kind": "model"}
    b = {**rec, "name": "b", "checker": "rumur", "kind": "model"}
    summary.update(path, "tlc", [a])
    summary.update(path, "rumur", [b])
    summary.update(path, "rumur", [{**b, "name": "c"}])
    assert sorted(r["name"] for r in json.loads(path.read_text())) == ["a", "c"]
    with pytest.raises(ValueError):
        summary.update(path, "rumur", [{"name": "x"}])


def test_keep_covers_drops_only_unrequired_covers():
    src = 'rule "r" true ==> begin cover "a" x > 0; x := 1; cover "b"\n  y = 2; end;\ncover "c" true;\n'
    out = check.keep_covers(src, {"b"}, "t")
    assert 'cover "b"' in out and 'cover "a"' not in out and 'cover "c"' not in out
    assert "x := 1;" in out
    with pytest.raises(check.CheckError, match="no cover statement named"):
        check.keep_covers(src, {"zzz"}, "t")


@pytest.mark.parametrize("config", sorted(CHECKS["configs"]))
def test_every_required_cover_exists_in_the_model(config):
    names = set(check.COVER_RE.findall((ROOT / "spec" / "murphi" / "apta.m").read_text()))
    missing = set(CHECKS["configs"][config]["covers"]) - names
    assert not missing, f"{config}: unknown covers {missing}"


# The scenarios the default suite must require (and so hit), every one of them.
REQUIRED_SCENARIOS = [
    "put serviced in S^A",
    "fence while a BISnp or its ack is in flight",
    "eviction with a crashed sharer",
    "placement while another server has pending invalidations",
    "zombie put discarded",
    "rejoin in a new epoch",
    "false suspicion: live server fenced",
    "undeclared read rejected",
]


@pytest.mark.parametrize("scenario", REQUIRED_SCENARIOS)
def test_default_suite_requires_scenario(scenario):
    required = {c for cfg in DEFAULT["models"] for c in CHECKS["configs"][cfg]["covers"]}
    assert scenario in required, f"no default configuration requires cover {scenario!r}"


def test_summary_merge_keeps_other_runs_of_the_checker(tmp_path):
    path = tmp_path / "s.json"
    rec = {f: None for f in summary.FIELDS}
    summary.update(path, "rumur", [{**rec, "name": n, "checker": "rumur"} for n in ("a", "b", "gone")])
    summary.update(path, "tlc", [{**rec, "name": "t", "checker": "tlc"}])
    summary.merge(path, "rumur", [{**rec, "name": "b", "checker": "rumur", "ok": True}],
                  known={"a", "b"})
    got = {(r["checker"], r["name"]): r for r in json.loads(path.read_text())}
    assert set(got) == {("rumur", "a"), ("rumur", "b"), ("tlc", "t")}
    assert got[("rumur", "b")]["ok"] is True


# --- pins: the expected result of each run, beside its configuration in checks.json ----------------
def _rec(name: str, kind: str, **kw) -> dict:
    rec = {"name": name, "checker": "rumur", "kind": kind, "config": name, "states": 0, "rules_fired": 0,
           "seconds": 0.5, "result": "pass" if kind == "model" else "fail", "violated": None,
           "expected": None, "all_violated": [], "ok": True}
    return rec | kw


def test_every_default_run_is_pinned():
    for name in DEFAULT["models"]:
        assert CHECKS["configs"][name].get("pin"), f"configuration {name} has no pin"
    for name in DEFAULT["mutants"]:
        assert CHECKS["mutants"][name].get("pin"), f"mutant {name} has no pin"


def test_pin_mismatch_is_a_failure_and_update_pins_rewrites_it(tmp_path):
    """A recorded smoke run with 10% fewer states than its pin fails with a line naming the
    configuration, both numbers and the command that updates the pin; --update-pins (update_pins)
    writes the run's numbers into the checks file, after which the same run matches."""
    checks = json.loads(json.dumps(CHECKS))
    checks["configs"]["smoke"]["pin"] = {"states": 16807, "rules_fired": 80332}
    checks["mutants"]["cxl3_sync_inv"]["pin"] = {"violated": ["P4_live_server_ops_complete",
                                                              "P5_entries_return_to_stable"]}
    run = [_rec("smoke", "model", states=15126, rules_fired=72299),
           _rec("cxl3_sync_inv", "mutant", config="smoke", violated="P4_live_server_ops_complete",
                expected="P4_live_server_ops_complete", all_violated=["P4_live_server_ops_complete"]),
           _rec("deep_three_lines", "model", states=1062653, rules_fired=6132182)]
    checks["configs"]["deep_three_lines"].pop("pin", None)
    lines = check.apply_pins(run, checks)
    assert [r["pin"] for r in run] == ["mismatch", "mismatch", "unpinned"]
    assert [r["ok"] for r in run] == [False, False, True], "a mismatch fails the run; unpinned does not"
    assert len(lines) == 2
    assert "smoke" in lines[0] and "16,807" in lines[0] and "15,126" in lines[0], lines[0]
    assert "configs.smoke.pin" in lines[0] and "--update-pins" in lines[0], lines[0]
    assert "P5_entries_return_to_stable" in lines[1] and "mutants.cxl3_sync_inv.pin" in lines[1], lines[1]
    assert "PIN MISMATCH" in summary.table(run)

    path = tmp_path / "checks.json"
    path.write_text(json.dumps(checks, indent=2) + "\n")
    assert check.update_pins(path, run) == ["smoke", "cxl3_sync_inv", "deep_three_lines"]
    assert all(r["ok"] for r in run)
    new = check.load_checks(path)
    assert new["configs"]["smoke"]["pin"] == {"states": 15126, "rules_fired": 72299}
    assert new["mutants"]["cxl3_sync_inv"]["pin"] == {"violated": ["P4_live_server_ops_complete"]}
    assert new["configs"]["deep_three_lines"]["pin"] == {"states": 1062653, "rules_fired": 6132182}
    again = [_rec("smoke", "model", states=15126, rules_fired=72299)]
    assert check.apply_pins(again, new) == [] and again[0]["pin"] == "match" and again[0]["ok"]
    # nothing but the pins changed
    for section in ("configs", "mutants"):
        for name, entry in new[section].items():
            assert {k: v for k, v in entry.items() if k != "pin"} == \
                {k: v for k, v in checks[section][name].items() if k != "pin"}


def test_a_failed_run_is_not_compared_and_pins_nothing(tmp_path):
    rec = _rec("smoke", "model", states=5, rules_fired=5, result="fail", violated="P1", ok=False)
    assert check.apply_pins([rec], CHECKS) == [] and rec["pin"] == "not compared"
    path = tmp_path / "checks.json"
    path.write_text((ROOT / "spec" / "murphi" / "checks.json").read_text())
    assert check.update_pins(path, [rec]) == []
    assert path.read_text() == (ROOT / "spec" / "murphi" / "checks.json").read_text()


def test_thread_count_does_not_change_the_state_count():
    """Rumur's states and rules fired do not depend on the verifier threads (models run with all
    cores in make verify): smoke with 1 and 2 threads both equal the pin."""
    pin = CHECKS["configs"]["smoke"]["pin"]
    for threads in ("1", "2"):
        r = run_check("--only", "smoke", "--threads", threads)
        assert r.returncode == 0, r.stdout + r.stderr
        row = next(l for l in r.stdout.splitlines() if l.startswith("smoke "))
        assert f"{pin['states']:,}" in row and f"{pin['rules_fired']:,}" in row, row


def test_malformed_pin_is_named(tmp_path):
    bad = tmp_path / "checks.json"
    data = json.loads(json.dumps(CHECKS))
    data["configs"]["smoke"]["pin"] = {"states": "many"}
    bad.write_text(json.dumps(data))
    with pytest.raises(check.CheckError, match=r"configs.smoke.pin"):
        check.load_checks(bad)


TINY = """var x: 0..1;
startstate begin x := 0; end;
rule "flip" true ==> begin x := 1 - x; end;
invariant "in range" x <= 1;
"""


def test_verifier_cache_reuses_by_content_and_toolchain(tmp_path, monkeypatch):
    """A verifier compiled in one checkout is reused by another with the same model and flags
    (the user cache); a different model, or APTA_CACHE=off, compiles."""
    monkeypatch.setenv("APTA_CACHE", str(tmp_path / "cache"))
    before = dict(check.BUILD_STATS)
    a = check.build("tiny", TINY, 1, 1, base=tmp_path / "a", cc_flags=check.CC_FLAGS_QUICK)
    assert check.BUILD_STATS["compiled"] == before["compiled"] + 1
    b = check.build("tiny", TINY, 1, 1, base=tmp_path / "b", cc_flags=check.CC_FLAGS_QUICK)
    assert check.BUILD_STATS["reused"] == before["reused"] + 1
    assert a.name == b.name and a.read_bytes() == b.read_bytes()
    assert subprocess.run([str(b)], capture_output=True).returncode == 0      # it runs
    check.build("tiny", TINY.replace("x <= 1", "x >= 0"), 1, 1, base=tmp_path / "c", cc_flags=check.CC_FLAGS_QUICK)
    assert check.BUILD_STATS["compiled"] == before["compiled"] + 2
    monkeypatch.setenv("APTA_CACHE", "off")
    check.build("tiny", TINY, 1, 1, base=tmp_path / "d", cc_flags=check.CC_FLAGS_QUICK)
    assert check.BUILD_STATS["compiled"] == before["compiled"] + 3
