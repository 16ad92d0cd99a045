"""Trace validation (spec/tla/README.md, "Trace validation"): the RTL memory server's event logs
(rtl/tools/ms_trace.py) checked against spec/tla/Apta.tla by TLC (spec/tla/TraceApta.tla,
spec/tla/trace.py).

* short workflow runs on ms3 with crashes and false suspicions: every log is accepted, and together
  they exercise the fault and invalidation actions (crash, fence, rejoin, BISnp, BIRsp);
* a short core stress (tests/rtl/test_core_stress.py, rtl/tools/core_trace.py) on the one-set
  geometry m3s1w1: its log is accepted, in one TLC run and in chunks (the form the 100k-operation
  log of `make trace-validate` takes); the same log with an ack inserted after a rejoin is rejected
  at that step by both, the chunked check in a later chunk;
* a deliberate bug of the RTL whose histories stay clean (python/apta/history.py sees nothing):
  its log is rejected at a named step;
* a good log corrupted by hand (a get returning an older version; a BIRsp with no BISnp) is
  rejected at exactly the corrupted step;
* a malformed log is refused with the file, the line and the field.

Runs with the RTL (APTA_RTL=1: `make test`, `make test-trace`); the malformed-log test always runs.
`make trace-validate` is the long form: every workflow and seed, one line per log.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from apta.testbench.core_bfm import ROOT, variant_dir

from apta.tla import trace

TRACE_PY = ROOT / "spec" / "tla" / "trace.py"

WORKFLOWS = "pipeline,broadcast-gather"   # short scripts with reads after writes and invalidations
CORE_VARIANT = "m3s1w1"     # one directory set: Apta.tla's directory is fully associative (README)
CORE_OPS = int(os.environ.get("APTA_TRACE_CORE_OPS", "300"))
MUTANT = "sharers_kept_on_commit"       # rtl/Mutants.scala: the old sharers stay after a commit


def _logs(variant: str, tag: str, env: dict) -> tuple[dict, list[Path]]:
    from apta.testbench.runs import run_ms_workflows as _run_ms
    out = ROOT / "build" / "trace" / "ms" / f"{variant}{tag}"
    for p in out.glob("*.ndjson"):
        p.unlink()
    failed, res = _run_ms(variant, tag, env)
    assert not failed and res.get("runs"), f"the workflow run on {variant} failed: {str(res)[:2000]}"
    logs = sorted(out.glob("*.ndjson"))
    assert len(logs) == len(res["runs"]), f"{len(res['runs'])} runs, logs {logs}"
    return res, logs


@pytest.fixture(scope="module")
def good():
    res, logs = _logs("ms3", "-trace", {"APTA_MS_ONLY": WORKFLOWS, "APTA_MS_SEEDS": "3"})
    assert all(r["ok"] for r in res["runs"]), [r for r in res["runs"] if not r["ok"]]
    return [(p, trace.validate(p)) for p in logs]


@pytest.mark.rtl_variants("ms3")
def test_ms_logs_accepted(good):
    """Every log of a clean run is a behaviour of the spec, and the logs cover the fault and
    invalidation actions (a run that never crashed or invalidated would accept trivially)."""
    bad = [trace.line_of(r) for _, r in good if r["result"] != "accepted"]
    assert not bad, "\n".join(bad)
    for p, r in good:
        assert r["matched"] == r["length"] > 0 and r["distinct_states"] > 0, trace.line_of(r)
    seen = {e["ev"] for p, _ in good for e in trace.load_log(p)[1]}
    need = {"place", "get", "put_prepare", "put_line", "commit", "bisnp", "snp_recv", "birsp", "done",
            "crash", "fence", "rejoin", "final"}
    assert need <= seen, f"the logs never show {sorted(need - seen)}"


CORE_CHUNK = 120    # records per TLC run in the chunked checks: the short log takes 2-3 chunks


@pytest.fixture(scope="module")
def core_log():
    from apta.testbench.core_bfm import rtl_dir_overridden
    if rtl_dir_overridden():
        pytest.skip("the log needs the core's result queue (Verilator's public signals of the RTL build), "
                    "which a netlist under RTL_DIR does not keep")
    from apta.testbench.runs import run_stress as _run_stress
    log = ROOT / "build" / "trace" / "core" / f"{CORE_VARIANT}-ops{CORE_OPS}-s1.ndjson"
    res = _run_stress(CORE_VARIANT, CORE_OPS, 1, f"trace-{CORE_VARIANT}", trace_log=log)
    assert res["ops"] >= CORE_OPS and res["violation"] is None
    return log


@pytest.mark.rtl_variants(CORE_VARIANT)
def test_core_stress_log_accepted(core_log):
    """A short core stress (zombie requests, stalls, evictions, fences, rejoins, acks racing them)
    logged at the core's ports: a behaviour of the spec, in one TLC run and in chunks (each chunk's
    run starting in every state the previous one ended in: README.md, "Long logs")."""
    r = trace.validate(core_log)
    assert r["result"] == "accepted" and r["matched"] == r["length"], trace.line_of(r)
    seen = {e["ev"] for e in trace.load_log(core_log)[1]}
    need = {"place", "get", "commit", "bisnp", "birsp", "fence", "rejoin", "refused"}
    assert need <= seen, f"the core log never shows {sorted(need - seen)}"
    # functions are slots that retire: fewer than the log's functions, far fewer than its requests
    meta, _ = trace.load_log(core_log)
    assert len(r["constants"]["TLFunc"]) < len(meta["functions"]) / 2, r["constants"]["TLFunc"]
    c = trace.validate(core_log, chunk=CORE_CHUNK, build=ROOT / "build" / "trace" / "tla-chunked")
    assert c["result"] == "accepted" and c["matched"] == c["length"], trace.line_of(c)
    assert len(c["chunks"]) >= 2 and all(k["start_states"] > 0 for k in c["chunks"][1:]), c["chunks"]


def _ack_after_rejoin(evs) -> int:
    """A BIRsp inserted right after the last rejoin, in the server's new epoch: nothing of that
    epoch was sent to it yet, so no ack can be in flight (a corruption in the log's second half,
    so in a later chunk)."""
    k = max(k for k, e in enumerate(evs) if e["ev"] == "rejoin")
    e = evs[k]
    assert k > len(evs) // 2, "the last rejoin is in the log's first half: pick another corruption"
    evs.insert(k + 1, {"ev": "birsp", "cycle": e["cycle"], "server": e["server"], "epoch": e["epoch"],
                       "obj": "o1"})
    return k + 1


@pytest.mark.rtl_variants(CORE_VARIANT)
def test_core_log_corrupted_rejected_in_its_chunk(core_log, tmp_path):
    """The chunked check names the same first unmatched step as the whole-log check, in a chunk
    after the first (the carried states do not hide a wrong event)."""
    dst = tmp_path / "ack_after_rejoin.ndjson"
    step = _corrupt(core_log, dst, _ack_after_rejoin)
    whole = trace.validate(dst, build=tmp_path / "tla")
    assert whole["result"] == "rejected" and whole["step"] == step, trace.line_of(whole)
    c = trace.validate(dst, chunk=CORE_CHUNK, build=tmp_path / "tla-chunked")
    assert c["result"] == "rejected" and c["step"] == step, trace.line_of(c)
    assert c["chunks"][-1]["chunk"] >= 1 and json.loads(c["event"])["ev"] == "birsp", trace.line_of(c)
    p = subprocess.run([sys.executable, str(TRACE_PY), "--chunk", str(CORE_CHUNK), str(dst)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 1 and f"log step {step} (" in p.stdout, p.stdout + p.stderr


def _corrupt(src: Path, dst: Path, how) -> int:
    """Write src with one event changed by how(events) -> its index among the events; return the
    1-based step of the changed event."""
    lines = src.read_text().splitlines()
    evs = [json.loads(l) for l in lines[1:]]
    k = how(evs)
    dst.write_text("\n".join([lines[0]] + [json.dumps(e) for e in evs]) + "\n")
    return k + 1


def _stale_get(evs) -> int:
    """The last get served from memory that returned a committed version > 0: now it returns the
    initial version 0 (older than what memory held)."""
    for k in range(len(evs) - 1, -1, -1):
        e = evs[k]
        if e["ev"] == "get" and not e["hit"] and all(isinstance(v, int) and v > 0 for v in e["lines"]):
            e["lines"] = [0] * len(e["lines"])
            return k
    raise AssertionError("no get of a committed version in the log")


def _unsolicited_ack(obj):
    def how(evs) -> int:
        """A BIRsp for obj inserted right after the first placement, before any BISnp was sent."""
        first = next(k for k, e in enumerate(evs) if e["ev"] == "place")
        e = evs[first]
        evs.insert(first + 1, {"ev": "birsp", "cycle": e["cycle"], "server": e["server"], "epoch": e["epoch"],
                               "obj": obj})
        return first + 1
    return how


@pytest.mark.rtl_variants("ms3")
@pytest.mark.parametrize("how", ["stale_get", "unsolicited_ack"])
def test_corrupted_log_rejected_at_the_corruption(good, tmp_path, how):
    src = next(p for p, r in good if r["result"] == "accepted" and "pipeline" in p.name)
    obj = sorted(json.loads(src.read_text().splitlines()[0])["objects"])[0]
    dst = tmp_path / f"{how}.ndjson"
    step = _corrupt(src, dst, _stale_get if how == "stale_get" else _unsolicited_ack(obj))
    r = trace.validate(dst, build=tmp_path / "tla")
    assert r["result"] == "rejected" and r["step"] == step, trace.line_of(r)
    assert r["matched"] == step - 1
    # the driver's exit status and line
    p = subprocess.run([sys.executable, str(TRACE_PY), str(dst)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 1 and f"log step {step} (" in p.stdout and "has no matching action" in p.stdout, p.stdout + p.stderr


LONG_GET = 1 << 15   # lines of a get: TLC's stack held 512 when Holds was a \A (a CI run failed)


@pytest.mark.rtl_variants("ms3")
def test_long_gets_validated(good, tmp_path):
    """Gets of LONG_GET lines (a big object) are checked line by line without exhausting TLC's
    stack: the log with every get's lines repeated is accepted, and with the last line of one get
    changed it is rejected at that get, named in a short line."""
    src = next(p for p, r in good if r["result"] == "accepted" and "pipeline" in p.name)
    rows = [json.loads(x) for x in src.read_text().splitlines()]
    gets = [i for i, e in enumerate(rows) if e["ev"] == "get" and e["lines"]]
    for i in gets:
        rows[i]["lines"] = (rows[i]["lines"] * LONG_GET)[:LONG_GET]
    dst = tmp_path / "long.ndjson"
    dst.write_text("".join(json.dumps(e) + "\n" for e in rows))
    r = trace.validate(dst, build=tmp_path / "tla")
    assert r["result"] == "accepted" and r["matched"] == r["length"], trace.line_of(r)
    bad = gets[-1]
    rows[bad]["lines"][-1] += 1
    dst.write_text("".join(json.dumps(e) + "\n" for e in rows))
    r = trace.validate(dst, build=tmp_path / "tla")
    assert r["result"] == "rejected" and r["step"] == bad, trace.line_of(r)   # step: 1-based after meta
    # the rejected get named by its lines' runs (the changed last line shows), not 32768 numbers
    assert len(r["event"]) < 400 and r["event"].endswith(' x1"}'), r["event"][:400]


@pytest.mark.rtl_variants("ms3_mutants")
def test_mutant_log_rejected():
    """The RTL with the old sharers kept on commit: its histories are clean (P1-P4 hold: an extra
    BISnp only costs an ack), but the log shows a BISnp to a server that is no sharer, which no
    action of the spec sends."""
    ms = json.loads((variant_dir("mutants") / "mutants.json").read_text())
    mid = next(m["id"] for m in ms if m["name"] == MUTANT)
    res, logs = _logs("ms3_mutants", f"-trace-mutant-{mid}",
                      {"APTA_MUTANT": str(mid), "APTA_MS_EXPECT_FAIL": "1", "APTA_MS_ONLY": "races",
                       "APTA_MS_SEEDS": "1", "APTA_MS_CYCLES": "20000"})
    assert all(r["ok"] for r in res["runs"]), "the history checker now sees this mutant: pick another"
    results = [trace.validate(p) for p in logs]
    rejected = [r for r in results if r["result"] == "rejected"]
    assert rejected, "\n".join(trace.line_of(r) for r in results)
    for r in rejected:
        assert json.loads(r["event"])["ev"] == "bisnp", trace.line_of(r)
        assert 0 < r["step"] <= r["length"]


def test_malformed_log_named(tmp_path):
    good_meta = {"ev": "meta", "format": trace.FORMAT, "servers": ["c1"], "objects": {"x": {"id": 1, "lines": 1}},
                 "functions": {"f": {"reads": ["x"], "writes": [], "after": []}}, "rule": "all", "epochs": [0],
                 "dir_entries": 1}
    cases = {
        "not JSON": ([json.dumps(good_meta), '{"ev": "place", "fn": "f"', ""], 2, "not JSON"),
        "missing field": ([json.dumps(good_meta), json.dumps({"ev": "place", "fn": "f", "server": "c1"})], 2, "epoch: missing"),
        "wrong type": ([json.dumps(good_meta), json.dumps({"ev": "crash", "server": "c1"}),
                        json.dumps({"ev": "fence", "server": "c1", "epoch": "0"})], 3, "epoch: must be int"),
        "unknown server": ([json.dumps(good_meta), json.dumps({"ev": "crash", "server": "c9"})], 2, "server:"),
        "no meta": ([json.dumps({"ev": "crash", "server": "c1"})], 1, "meta"),
    }
    for name, (lines, line, what) in cases.items():
        p = tmp_path / f"{name.replace(' ', '_')}.ndjson"
        p.write_text("\n".join(lines) + "\n")
        with pytest.raises(trace.TraceLogError) as x:
            trace.load_log(p)
        assert str(x.value).startswith(f"{p}:{line}: ") and what in str(x.value), (name, str(x.value))
        r = subprocess.run([sys.executable, str(TRACE_PY), str(p)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and f"{p}:{line}: " in r.stdout, (name, r.stdout, r.stderr)
