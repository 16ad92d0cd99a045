"""Every figure in a README's results block is what docs/results gives (python/apta/docs.py), and
the results of record agree with this run's own build/ results where `make test` recomputed them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from apta import docs

ROOT = Path(__file__).resolve().parents[1]


def test_every_results_block_matches_its_record():
    problems = docs.check(ROOT)
    assert not problems, "\n".join(problems) + "\n(regenerate with `make docs`; never edit a results block by hand)"


def test_results_blocks_have_records():
    """Every block a README holds has its renderer and its results of record."""
    names = {m.group("name") for p in docs.markdown_files(ROOT) for m, _ in docs.blocks(p.read_text())}
    assert names <= set(docs.RENDERERS), f"blocks without a renderer: {names - set(docs.RENDERERS)}"
    assert {"verify", "vectors", "test-time"} <= names, "README.md states what make verify proves and what make test costs"


def test_hand_edited_figure_is_caught(tmp_path):
    # a README whose verify block has one figure changed by hand: reported at the block's line
    readme = next(p for p in docs.markdown_files(ROOT) if "<!-- results:verify -->" in p.read_text())
    text = readme.read_text()
    body = text.split("<!-- results:verify -->\n", 1)[1].split("<!-- results:end -->", 1)[0]
    edited = text.replace(body, body.replace("|", "| 1", 1), 1)
    assert edited != text
    fake = tmp_path / "README.md"
    fake.write_text(edited)
    problems = docs.check(ROOT, [fake])
    line = edited[:edited.index("<!-- results:verify -->")].count("\n") + 1
    assert problems == [f"{fake}:{line}: block 'verify' differs from what docs/results gives"]
    docs.check(ROOT, [fake], write=True)
    assert fake.read_text() == text                  # rendering restores it


def test_unknown_block_named(tmp_path):
    fake = tmp_path / "X.md"
    fake.write_text("a\n<!-- results:nope -->\nx\n<!-- results:end -->\n")
    with pytest.raises(SystemExit, match=r"X\.md:2: unknown results block 'nope'"):
        docs.check(ROOT, [fake])


def test_malformed_record_named(tmp_path):
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "verify.json").write_text('{"command": "make verify",\n "data": {}}\n')
    with pytest.raises(SystemExit, match=r"verify\.json: field 'machine' missing"):
        docs.load(tmp_path, "verify")
    (tmp_path / "docs" / "results" / "verify.json").write_text('{"command": \n')
    with pytest.raises(SystemExit, match=r"verify\.json:2: not valid JSON"):
        docs.load(tmp_path, "verify")


def _fresh(name: str) -> dict:
    try:
        return docs.SOURCES[name][1](ROOT)
    except FileNotFoundError as e:
        pytest.skip(f"{e.filename} missing: run `{docs.SOURCES[name][0]}` (make test does)")


@pytest.mark.parametrize("name", [n for n in ("verify", "vectors") if (ROOT / "docs" / "results" / f"{n}.json").exists()])
def test_record_agrees_with_this_run(name):
    """The deterministic figures of record (states, verdicts, scenarios, cells) equal this run's:
    a model or vector change without `make record docs` fails here."""
    rec = docs.load(ROOT, name)["data"]
    assert rec == _fresh(name), f"docs/results/{name}.json is stale: run `make {name}` then `make record docs`"


def test_record_keeps_command_machine_date():
    for p in sorted((ROOT / "docs" / "results").glob("*.json")):
        doc = json.loads(p.read_text())
        assert {"command", "machine", "date", "data"} <= set(doc), p
        assert doc["machine"]["cores"] >= 1, p


def test_gem5_record_and_blocks_from_a_run(tmp_path):
    """eval-gem5's and calibrate-gem5's results become the record, and the README blocks are made
    from it; a run that failed its verdict is not recorded."""
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "schema").mkdir()
    cell = lambda cfg, ratio, within: {"app": "phi", "run": "base", "config": cfg, "ratio": ratio, "within": within}
    run = lambda sim, cfg, get: {"name": "base", "config": cfg, "completed": True, "get_ns": get, "compute_ns": 10.0,
                                 "put_ns": 0, "simulator": sim}
    apps = [{"apta_sim": [run("apta-sim", "apta", 100.0)], "gem5": [run("gem5", "apta", 150.0)]},
            {"apta_sim": [run("apta-sim", "apta", 100.0)], "gem5": [run("gem5", "apta", 90.0)]}]
    r = {"paper": {"R1": 0.42, "R5": 0.90}, "apta_sim": {"R1": 1.01, "R5": 0.91}, "gem5": {"R1": 0.99, "R5": 0.88}}
    ev = {"size": "tiny", "apps": apps, "verdict": {"passed": True, "problems": []}, "r": r, "jitter_runs": 10,
          "crosscheck": {"cells": [cell("apta", 1.02, True), cell("apta", 0.97, True), cell("cxl_cached", 1.4, False)]}}
    link = lambda ns: {"flit_bytes": 68, "gbps": 80.0, "latency_ns": ns, "credits": 149}
    measures = lambda cxl: {"load_latency_cxl_ns": cxl, "load_latency_local_ns": 90.0, "load_latency_ratio": round(cxl / 90, 1),
                            "load_latency_added_ns": cxl - 90, "read_gbps": 8.1, "put_write_gbps": 4.0,
                            "bisnp_round_trip_ns": 1020.0}
    ref = lambda model, verdict: [{"what": "ratio", "low": 2, "high": 5, "model": model, "verdict": verdict,
                                   "source": "somewhere"}]
    cal = {"lines": 4096, "runs": [
        {"name": "table-ii", "overrides": {}, "link": link(500.0), "measures": measures(1100.0),
         "references": ref(12.2, "2.44x the upper bound")},
        {"name": "device", "overrides": {"links.dm_latency_ns": 35}, "link": link(35.0), "measures": measures(200.0),
         "references": ref(2.2, "inside")}]}
    for d, f, data in (("eval-gem5", "results.json", ev), ("calibrate-gem5", "calibration.json", cal)):
        (tmp_path / "build" / d).mkdir(parents=True)
        (tmp_path / "build" / d / f).write_text(json.dumps(data))
    docs.record(tmp_path, ["gem5"])
    cc = docs.render_gem5_crosscheck(tmp_path)
    # the phases: get 1.5 and 0.9 (median of two: the upper), compute equal, no put time (none)
    assert "| apta | 2 | 2 | 0 | 1.02 (0.97–1.02) | 1.50 (0.90–1.50) | 1.00 (1.00–1.00) | – |" in cc
    assert "| cxl_cached | 1 | 0 | 1 | 1.40 (1.40–1.40) | – | – | – |" in cc
    # R1-R8 from both simulators, reductions negative as make eval prints them
    assert "| R1 | +42% | +101% | +99% |" in cc and "| R5 | -90% | -91% | -88% |" in cc and "(R4: 10 jitter runs" in cc
    cb = docs.render_gem5_calibration(tmp_path)
    assert "| microbenchmark | 500 ns link (Table II) | 35 ns link |" in cb and "| ratio | 12.2x | 2.2x |" in cb
    assert "| ratio | 2–5 | 12.2: 2.44x the upper bound | 2.2: inside | somewhere |" in cb and "(149 and 149)" in cb
    ev["verdict"] = {"passed": False, "problems": ["x"]}
    (tmp_path / "build" / "eval-gem5" / "results.json").write_text(json.dumps(ev))
    with pytest.raises(SystemExit, match="did not pass its verdict"):
        docs.record(tmp_path, ["gem5"])


def test_gem5_bench_record_is_medians_per_configuration(tmp_path):
    """bench-gem5's runs become medians per configuration; a bench with no runs is not recorded."""
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "schema").mkdir()
    run = lambda app, cfg, eps, ratio, pa: {"app": app, "config": cfg, "name": "base", "trace_events": 1000,
                                            "gem5_wall_s": 2.0, "apta_sim_wall_s": 0.002, "gem5_events_per_s": eps,
                                            "ratio": ratio, "analytical_link_wall_s": 1.5, "packet_over_analytical": pa}
    bench = {"gem5": {"version": "v24.0.0.1", "commit": "c"},
             "runs": [run("phi", "apta", 100.0, 900.0, 1.1), run("gemm", "apta", 300.0, 700.0, 0.9),
                      run("video", "apta", 200.0, 800.0, 1.3), run("phi", "rdma", 50.0, 1000.0, 1.0)]}
    (tmp_path / "build" / "bench").mkdir(parents=True)
    (tmp_path / "build" / "bench" / "gem5.json").write_text(json.dumps(bench))
    docs.record(tmp_path, ["gem5-bench"])
    t = docs.render_gem5_bench(tmp_path)
    assert "| apta | 3 | 200 | 800x | 1.10 |" in t and "| rdma | 1 | 50 | 1,000x | 1.00 |" in t
    assert "3 workflows (4,000 trace events), 8 s of gem5 with the packet link and 6 s" in t
    bench["runs"] = []
    (tmp_path / "build" / "bench" / "gem5.json").write_text(json.dumps(bench))
    with pytest.raises(SystemExit, match="no runs"):
        docs.record(tmp_path, ["gem5-bench"])


def test_tla_model_table_follows_the_pins(tmp_path):
    """The TLA+ model table is the pins' states: a changed pin changes the table, a missing pin is
    named with the command that writes it."""
    (tmp_path / "spec" / "tla").mkdir(parents=True)
    pins = json.loads((ROOT / "spec" / "tla" / "pins.json").read_text())
    table = docs.render_tla_models(ROOT)
    pins["runs"]["pipeline"]["distinct_states"] += 1
    (tmp_path / "spec" / "tla" / "pins.json").write_text(json.dumps(pins))
    assert docs.render_tla_models(tmp_path) != table
    del pins["runs"]["pipeline"]
    (tmp_path / "spec" / "tla" / "pins.json").write_text(json.dumps(pins))
    with pytest.raises(SystemExit, match=r"no pinned states for 'pipeline'.*--only pipeline --update-pins"):
        docs.render_tla_models(tmp_path)


def _eval_record(tmp_path, edit) -> Path:
    """A checkout in TMP_PATH holding this repo's eval record with EDIT applied to its data."""
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "schema").mkdir()
    doc = json.loads((ROOT / "docs/results/eval.json").read_text())
    edit(doc["data"])
    (tmp_path / "docs/results/eval.json").write_text(json.dumps(doc))
    return tmp_path


def test_eval_results_say_why_a_result_deviates(tmp_path):
    """The R table is made from the record: a result that agrees has no why, one that deviates has the
    mechanism for its side; a deviating result with no mechanism stops the render, naming it."""
    row = lambda d, rid: next(r for r in d["comparison"] if r["id"] == rid)

    def r3_above(d):
        row(d, "R3").update(ours=row(d, "R3")["paper"] + 0.2, deviation_pp=20.0, agrees=False)
    t = docs.render_sim_results(_eval_record(tmp_path / "a", r3_above))
    line = next(l for l in t.splitlines() if l.startswith("| R3 "))
    assert "| 20 pp | deviates | CXL cached's loads fetch the object's lines on demand" in line
    assert "R3" not in t.split("(`AGREE_PP`): ")[1].split(" of ")[0]

    def r5_off(d):
        row(d, "R5").update(ours=0.5, deviation_pp=-40.0, agrees=False)
    with pytest.raises(SystemExit, match="R5 deviates from the paper and .* does not say why"):
        docs.render_sim_results(_eval_record(tmp_path / "b", r5_off))
