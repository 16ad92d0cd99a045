"""The FaaS workflow workloads (workloads/): the workflow files validate, every workflow runs end to end
on tiny inputs, outputs are byte-identical across runs, each application computes what it claims
(checked against oracles computed here), the store API enforces the declared inputs and outputs, and
the validator rejects malformed workflow files naming the file and the field."""

import json
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from apta import hostrun as runner
from apta import workflow as wfmod

WORKFLOWS = wfmod.names()
PAPER_APPS = {"phi", "sentiment", "finra", "video", "image", "gemm"}


@pytest.fixture(scope="session")
def built():
    try:
        runner.build()
    except runner.RunError as e:
        pytest.fail(str(e))
    return runner.BUILD


@pytest.fixture(scope="session")
def results(built, tmp_path_factory):
    """Every workflow run twice on tiny inputs (separate run directories)."""
    out = {}
    for name in WORKFLOWS:
        wf = wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, name + ".json"))
        a = runner.run_workflow(wf, "tiny", built, str(tmp_path_factory.mktemp(name + "-a")))
        b = runner.run_workflow(wf, "tiny", built, str(tmp_path_factory.mktemp(name + "-b")))
        out[name] = (wf, a, b)
    return out


def obj(res, name):
    with open(os.path.join(res["run_dir"], "store", name), "rb") as fh:
        return fh.read()


def ext(res, name, kind="ext_out"):
    with open(os.path.join(res["run_dir"], kind, name), "rb") as fh:
        return fh.read()


# --- workflow files ------------------------------------------------------------------------------

def test_six_paper_workflows_present():
    assert PAPER_APPS <= set(WORKFLOWS)
    labels = {(n, f.get("label", f["name"])) for n in PAPER_APPS
              for f in wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, n + ".json")).functions}
    assert len(labels) == 26  # "26 functions" (Table III lists GEMM's split twice: split and shuffle here)


@pytest.mark.parametrize("name", WORKFLOWS)
def test_workflow_validates_and_matches_table_iv(name):
    wf = wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, name + ".json"))
    both = wfmod.table_iv_units(wf)
    if name in PAPER_APPS:   # the paper's counts are stated, per function phase (the paper's unit)
        assert wf.table_iv is not None
    if wf.table_iv is not None:  # table_iv is optional for any other workflow
        assert both["phase"] == wf.table_iv


def test_table_iv_unit_of_the_paper_is_the_function_phase():
    """Per function phase every paper workflow gives the paper's Table IV; per object only the
    four whose phases each touch one object do: video and GEMM read (and put) several objects in
    one phase. This is what sim/README.md and the report state."""
    differ = set()
    for name in sorted(PAPER_APPS):
        wf = wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, name + ".json"))
        both = wfmod.table_iv_units(wf)
        assert both["phase"] == wf.table_iv, name
        if both["object"] != wf.table_iv:
            differ.add(name)
    assert differ == {"video", "gemm"}
    video = wfmod.table_iv_units(wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, "video.json")))["object"]
    gemm = wfmod.table_iv_units(wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, "gemm.json")))["object"]
    # video: 10 objects got (splitVideo video miss; AnalyzeProcess[0] chunk_0, keyframes hit;
    # [1] chunk_1, keyframes miss; validate part_0, part_1 miss; concat part_0, part_1, manifest
    # hit), 7 put (concat's video invalidates c1's copy)
    assert video == {"gets": {"hit": 5, "miss": 5}, "puts": {"no_inv": 6, "inv": 1}}
    # GEMM: 7 objects got (matrices miss, task_0 hit, task_1 miss, partial_0 hit, partial_1 miss,
    # shuffle_0 hit, shuffle_1 miss), 8 put, none cached elsewhere
    assert gemm == {"gets": {"hit": 3, "miss": 4}, "puts": {"no_inv": 8, "inv": 0}}


def small_workflow(tmp_path):
    """A hand-made workflow on c1/c2 whose two Table IV units differ (sources: empty files)."""
    apps = tmp_path / "apps"
    (apps / "units").mkdir(parents=True)
    for src in ("f1", "f2", "f3"):
        (apps / "units" / f"{src}.c").write_text("")
    doc = {"name": "units", "title": "two Table IV units", "inputs": ["a", "b"],
           "sizes": {"tiny": {"gen": {}}, "paper": {"gen": {}}},
           "functions": [
               {"name": "f1", "source": "f1", "servers": ["c1"], "reads": ["a", "b"], "writes": ["x", "y"]},
               {"name": "f2", "source": "f2", "servers": ["c2"], "after": ["f1"], "reads": ["x", "a"], "writes": ["z"]},
               {"name": "f3", "source": "f3", "servers": ["c1"], "after": ["f2"], "reads": ["z", "b"], "writes": ["x", "w"]}],
           "outputs": ["w"]}
    (tmp_path / "units.json").write_text(json.dumps(doc))
    return wfmod.load(str(tmp_path / "units.json"), apps_dir=str(apps))


# The two units by hand on small_workflow. Caches: c1 = {}, c2 = {} at the start.
#   f1 on c1 gets a, b: neither cached (2 object misses; the phase misses); puts x, y: nobody else
#     holds them (2 no_inv; the phase no_inv). c1 = {a, b, x, y}.
#   f2 on c2 gets x, a: c2 holds neither (2 misses; phase miss); puts z (no_inv; phase no_inv).
#     c2 = {x, a, z}.
#   f3 on c1 gets z (miss: only c2 has it) and b (hit: c1 got it in f1): 1 hit + 1 miss; the phase
#     is a hit under rule "any" (one object cached), a miss under rule "all"; puts x (c2 holds x:
#     inv, c2's copy dropped) and w (no_inv): the phase is one put with invalidation.
# Per phase ("any"): gets 1 hit / 2 miss, puts 2 no_inv / 1 inv.
# Per phase ("all"): gets 0 hit / 3 miss, puts as above.
# Per object:        gets 1 hit / 5 miss, puts 4 no_inv / 1 inv.
SMALL_PHASE = {"gets": {"hit": 1, "miss": 2}, "puts": {"no_inv": 2, "inv": 1}}
SMALL_OBJECT = {"gets": {"hit": 1, "miss": 5}, "puts": {"no_inv": 4, "inv": 1}}


def test_table_iv_both_units_on_a_small_workflow(tmp_path):
    wf = small_workflow(tmp_path)
    assert wf.table_iv is None                       # optional: this file states no counts
    assert wfmod.table_iv(wf) == SMALL_PHASE         # unit "phase" is the default
    assert wfmod.table_iv(wf, unit="phase") == SMALL_PHASE
    assert wfmod.table_iv(wf, unit="object") == SMALL_OBJECT
    assert wfmod.table_iv(wf, rule="all") == {"gets": {"hit": 0, "miss": 3}, "puts": {"no_inv": 2, "inv": 1}}
    assert wfmod.table_iv(wf, rule="all", unit="object") == SMALL_OBJECT   # the rule is per phase only
    assert wfmod.table_iv_units(wf) == {"phase": SMALL_PHASE, "object": SMALL_OBJECT}
    # f3 on c2 instead: c2 holds z (hit) but not b (miss); x is now invalidated at c1 (its writer
    # f1 kept a copy): the same object counts by another path; per phase the get still hits
    assert wfmod.table_iv(wf, schedule={"f3": ["c2"]}, unit="object") == SMALL_OBJECT
    assert wfmod.table_iv(wf, schedule={"f3": ["c2"]}) == SMALL_PHASE
    with pytest.raises(ValueError, match="unit"):
        wfmod.table_iv(wf, unit="lines")


def test_other_schedule_changes_table_iv():
    wf = wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, "phi.json"))
    # anonymize on c2: its get hits (c2 got `tagged`), analytics on c1 now misses `anonymized`
    assert wfmod.table_iv(wf, schedule={"anonymize": ["c2"]})["gets"] == {"hit": 1, "miss": 3}
    wf = wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, "sentiment.json"))
    assert wfmod.table_iv(wf, schedule={"sentimentAnalysis": ["c1"]})["puts"] == {"no_inv": 2, "inv": 0}


# --- end to end, determinism ---------------------------------------------------------------------

@pytest.mark.parametrize("name", WORKFLOWS)
def test_runs_end_to_end_and_is_deterministic(results, name):
    wf, a, b = results[name]
    assert len(a["functions"]) == len(wf.instances())
    for o in wf.outputs:
        assert a["objects"][o]["bytes"] > 0, o
    assert runner.fingerprint(a) == runner.fingerprint(b)
    for r in a["functions"]:  # the host store's report: bytes moved by get and put, phase times
        assert (r["get_bytes"] > 0) == bool(r["reads"]) and (r["put_bytes"] > 0) == bool(r["writes"]), r
        assert min(r["get_s"], r["compute_s"], r["put_s"]) >= 0


def test_runner_cli_checks_determinism(built):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "workloads", "run.py"), "phi", "--size", "tiny",
                        "--check-deterministic", "--no-build"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "identifyPHI" in r.stdout and "hit" in r.stdout


# --- semantic checks per application -------------------------------------------------------------

def test_phi_deidentified_has_no_identifiers(results):
    _, res, _ = results["phi"]
    records = obj(res, "records").decode()
    deid = obj(res, "deidentified").decode()
    names = set()
    for m in re.finditer(r"^Patient: (\w+) (\w+)$", records, re.M):
        names |= {m.group(1), m.group(2)}
    names |= set(re.findall(r"Dr\. (\w+)", records))
    names |= set(re.findall(r"Contact \w+ (\w+) at", records))
    assert len(names) >= 6
    for n in names:
        assert not re.search(rf"\b{n}\b", deid), f"name {n} survived de-identification"
    for pat in (r"\d{4}-\d{2}-\d{2}", r"\(\d{3}\) \d{3}-\d{4}", r"\d{3}-\d{2}-\d{4}", r"@example\.org"):
        assert not re.search(pat, deid), pat
    assert deid.count("[NAME]") >= 4 * records.count("RECORD ")
    anon = obj(res, "anonymized").decode()
    assert not any(n in anon for n in names)
    report = obj(res, "analytics").decode()
    rows = len(anon.strip().splitlines()) - 1
    assert f"rows {rows}\n" in report
    k = wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, "phi.json")).sizes["tiny"].get("params", {}).get("k", 3)
    kmin = int(re.search(r"k_min (\d+)", report).group(1))
    assert kmin >= k


def parse_reviews(data):
    assert data[:4] == b"REVS"
    n, scored = struct.unpack_from("<II", data, 4)
    off, out = 12, []
    for _ in range(n):
        rid, prod, rating, date, score, label, tl = struct.unpack_from("<IIBIfBI", data, off)
        off += 22
        out.append((rid, prod, rating, score, label, data[off:off + tl].decode()))
        off += tl
    assert off == len(data)
    return scored, out


def test_sentiment_scores_agree_with_ratings(results):
    _, res, _ = results["sentiment"]
    scored, revs = parse_reviews(obj(res, "reviews"))
    csv_rows = obj(res, "reviews_csv").decode().count("\n") - 1
    assert scored == 1 and len(revs) == csv_rows
    five = [r for r in revs if r[2] == 5]
    one = [r for r in revs if r[2] == 1]
    assert five and one
    assert sum(r[4] == 1 for r in five) / len(five) >= 0.7
    assert sum(r[4] == 2 for r in one) / len(one) >= 0.7
    assert all(-1 <= r[3] <= 1 for r in revs)
    msgs = [json.loads(line) for line in ext(res, "sns_messages").decode().splitlines()]
    alerts = [m for m in msgs if m["Subject"] == "negative review"]
    assert len(alerts) == sum(r[3] <= -0.5 for r in revs)
    assert {m["Message"]["product"] for m in msgs if m["Subject"] == "digest"} == {r[1] for r in revs}
    db = ext(res, "reviews_db")
    ix = db.rindex(b"RVIX")
    nprod, nrows = struct.unpack_from("<II", db, ix + 4)
    assert nrows == len(revs) and nprod == len({r[1] for r in revs})
    assert sum(struct.unpack_from("<I", db, p + 8)[0] for p in range(0, ix, 4096)) == len(revs)


def test_finra_audit_rules_find_injected_violations(results):
    _, res, _ = results["finra"]
    truth = dict(line.split() for line in ext(res, "_truth", "ext_in").decode().splitlines())
    for rule in ("volume", "trdate", "lastpx", "side"):
        lines = ext(res, f"audit_{rule}").decode().strip().splitlines()[1:]
        assert len(lines) == int(truth[rule]), rule
        assert int(truth[rule]) > 0, rule
    # margin: recompute from the feed
    cash, loan, lmv, smv = {}, {}, {}, {}
    for line in ext(res, "portfolio_feed", "ext_in").decode().splitlines():
        f = line.split(",")
        if f[0] == "A":
            cash[f[1]], loan[f[1]] = float(f[2]), float(f[3])
        elif f[0] == "P":
            q, mark = int(f[3]), float(f[4])
            (lmv if q >= 0 else smv).setdefault(f[1], 0.0)
            if q >= 0:
                lmv[f[1]] += q * mark
            else:
                smv[f[1]] += -q * mark
    calls = set()
    for a in cash:
        eq = cash[a] - loan[a] + lmv.get(a, 0.0) - smv.get(a, 0.0)
        if eq < 0.25 * lmv.get(a, 0.0) + 0.30 * smv.get(a, 0.0):
            calls.add(a)
    got = {line.split(",")[0] for line in ext(res, "margin_calls").decode().strip().splitlines()[1:]}
    assert got == calls
    p = obj(res, "portfolios")
    assert p[:4] == b"PRT1" and struct.unpack_from("<I", p, 20)[0] == 1  # margined


def test_video_keyframes_and_concatenated_frames(results):
    wf, res, _ = results["video"]
    gen = wf.sizes["tiny"]["gen"]
    cuts = [int(x) for x in ext(res, "_truth", "ext_in").decode().split()]
    k = obj(res, "keyframes")
    n = struct.unpack_from("<I", k, 4)[0]
    assert list(struct.unpack_from(f"<{n}I", k, 8)) == cuts
    v = obj(res, "video")
    assert v[:4] == b"VID1"
    w, h, frames, first = struct.unpack_from("<IIII", v, 4)
    assert (w, h, frames, first) == (gen["width"] // 2, gen["height"] // 2, gen["frames"], 0)
    assert len(v) == 20 + w * h * frames
    m = obj(res, "manifest")
    assert m[:4] == b"MANI" and struct.unpack_from("<IIIII", m, 4) == (2, gen["frames"], w, h, 1)


def test_image_prediction_is_a_distribution(results):
    _, res, _ = results["image"]
    p = obj(res, "prediction")
    assert p[:4] == b"PRED"
    n, top = struct.unpack_from("<II", p, 4)
    probs = struct.unpack_from(f"<{n}f", p, 12)
    assert n == 10 and abs(sum(probs) - 1) < 1e-5 and all(0 <= x <= 1 for x in probs)
    assert top == max(range(n), key=lambda i: probs[i])
    assert len(set(probs)) > 1  # not a constant output
    img = obj(res, "rendered")
    m = re.match(rb"P6\n# top1 (\d+) \w+ ([0-9.]+)\n(\d+) (\d+)\n255\n", img)
    assert m and int(m.group(1)) == top and abs(float(m.group(2)) - probs[top]) < 1e-4
    assert len(img) == m.end() + 3 * int(m.group(3)) * int(m.group(4))


def read_csr(data, off):
    rows, cols, nnz = struct.unpack_from("<III", data, off)
    off += 12
    ptr = struct.unpack_from(f"<{rows + 1}I", data, off)
    off += 4 * (rows + 1)
    col = struct.unpack_from(f"<{nnz}I", data, off)
    off += 4 * nnz
    val = struct.unpack_from(f"<{nnz}d", data, off)
    off += 8 * nnz
    dense = [[0.0] * cols for _ in range(rows)]
    for i in range(rows):
        for p in range(ptr[i], ptr[i + 1]):
            dense[i][col[p]] = val[p]
    return dense, off


def test_gemm_equals_dense_product(results):
    _, res, _ = results["gemm"]
    m = obj(res, "matrices")
    assert m[:4] == b"SPMM"
    A, off = read_csr(m, 4)
    B, off = read_csr(m, off)
    assert off == len(m)
    ref = [[sum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]
    C = []
    for j in range(2):
        r = obj(res, f"result_{j}")
        assert r[:4] == b"RSLT"
        _, r0, r1 = struct.unpack_from("<III", r, 4)
        rows, end = read_csr(r, 16)
        assert end == len(r) and len(rows) == r1 - r0 and r0 == len(C)
        C += rows
    assert C == ref  # small integer values: exact
    assert any(any(row) for row in C)


# --- the store API contract ----------------------------------------------------------------------

def _invoke(built, tmp_path, *args):
    store, ei, eo = (tmp_path / d for d in ("s", "ei", "eo"))
    for d in (store, ei, eo):
        d.mkdir(exist_ok=True)
    subprocess.run([os.path.join(built, "bin", "phi", "gen"), str(store), str(ei), "records=2"], check=True)
    cmd = [os.path.join(built, "bin", "phi", "identify_phi"), "--function", "identifyPHI", "--store", str(store),
           "--ext-in", str(ei), "--ext-out", str(eo), *args]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_store_rejects_undeclared_and_unread(built, tmp_path):
    r = _invoke(built, tmp_path, "--get", "records", "--put", "tagged")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["get_bytes"] == os.path.getsize(tmp_path / "s" / "records") and rep["put_bytes"] > rep["get_bytes"]
    r = _invoke(built, tmp_path, "--get", "other", "--put", "tagged")
    assert r.returncode == 3 and "get(records): not a declared input" in r.stderr
    r = _invoke(built, tmp_path, "--get", "records", "--get", "extra", "--put", "tagged")
    assert r.returncode == 3 and "before every declared input was read" in r.stderr
    r = _invoke(built, tmp_path, "--get", "records", "--put", "tagged", "--put", "more")
    assert r.returncode == 3 and "declared outputs never written: tagged, more" in r.stderr


PHASE_PROBE = r'''
#include <stdio.h>
#include "apta_store.h"
void apta_phase_hook(int phase, const char *function) { fprintf(stderr, "phase %d %s\n", phase, function); }
void apta_object_hook(int kind, const char *name, const void *addr, size_t len) {
  fprintf(stderr, "object %d %s %zu %d\n", kind, name, len, kind == APTA_OBJ_GET ? (int)((unsigned long)addr % 64) : 0);
}
int apta_function(void) {
  apta_bytes a = apta_get("a"), b = apta_get("b");
  fprintf(stderr, "compute\n");
  char out[3] = {(char)a.len, (char)b.len, 0};
  apta_put("c", out, 3);
  return 0;
}
'''


def test_phase_markers_bracket_get_compute_put(tmp_path):
    """The fallback hooks (no Valgrind header) see GET, the objects, COMPUTE, PUT, END in order."""
    src = tmp_path / "probe.c"
    src.write_text(PHASE_PROBE)
    exe = tmp_path / "probe"
    wl = os.path.join(ROOT, "workloads")
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-DAPTA_NO_VALGRIND", "-D_POSIX_C_SOURCE=200809L",
                    "-I", os.path.join(wl, "include"), str(src), os.path.join(wl, "lib", "apta_store_host.c"), os.path.join(wl, "lib", "apta_store_core.c"),
                    os.path.join(wl, "lib", "apta_util.c"), "-o", str(exe), "-lm"], check=True)
    store = tmp_path / "s"
    store.mkdir()
    (store / "a").write_bytes(b"xyz")
    (store / "b").write_bytes(b"12345")
    r = subprocess.run([str(exe), "--function", "probe", "--store", str(store), "--ext-in", str(tmp_path),
                        "--ext-out", str(tmp_path), "--get", "a", "--get", "b", "--put", "c"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == ["phase 1 probe", "object 1 a 3 0", "object 1 b 5 0", "phase 2 probe", "compute",
                                     "phase 3 probe", "object 2 c 3 0", "phase 4 probe"]
    assert (store / "c").read_bytes() == bytes([3, 5, 0])


def test_missing_compiler_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "no-such-cc-apta")
    with pytest.raises(runner.RunError, match="no C compiler"):
        runner.build(str(tmp_path))


# --- validator -----------------------------------------------------------------------------------

def _mutate(tmp_path, change, base="phi"):
    with open(os.path.join(wfmod.WORKFLOW_DIR, base + ".json")) as fh:
        doc = json.load(fh)
    change(doc)
    p = tmp_path / f"{base}-bad.json"
    p.write_text(json.dumps(doc))
    return str(p)


def _fns(doc):
    return {f["name"]: f for f in doc["functions"]}


@pytest.mark.parametrize("change, field, message", [
    (lambda d: _fns(d)["identifyPHI"]["after"].append("analytics"), "functions[", "cycle: "),
    (lambda d: _fns(d)["analytics"]["reads"].append("nosuch"), "functions[3].reads[1]", "unknown object 'nosuch'"),
    (lambda d: _fns(d)["deIdentify"].pop("reads"), "functions[1].reads", "missing required field"),
    (lambda d: d.pop("sizes"), "sizes", "missing required field"),
    (lambda d: d["sizes"].pop("paper"), "sizes.paper", "missing required field"),
    (lambda d: _fns(d)["deIdentify"]["reads"].append("analytics"), "functions[1].reads[1]", "before any function writes it"),
    (lambda d: _fns(d)["anonymize"]["after"].append("nosuch"), "functions[2].after[1]", "unknown function 'nosuch'"),
    (lambda d: _fns(d)["anonymize"].update(writes=["deidentified"]), "functions[", "not ordered by the DAG"),
    (lambda d: _fns(d)["analytics"].update(source="nosuch"), "functions[3].source", "no function source"),
    (lambda d: _fns(d)["analytics"].update(servers=["gpu0"]), "functions[3].servers", "compute servers"),
    (lambda d: _fns(d)["analytics"].update(reeds=[]), "functions[3].reeds", "unknown field"),
    (lambda d: d["functions"].reverse(), "functions[", "listed later"),
])
def test_validator_rejects(tmp_path, change, field, message):
    path = _mutate(tmp_path, change)
    with pytest.raises(wfmod.WorkflowError) as e:
        wfmod.load(path)
    assert e.value.file == path
    assert e.value.field.startswith(field), e.value.field
    assert message in e.value.msg
    assert str(e.value).startswith(f"{path}: {e.value.field}: ")


def test_validator_reports_bad_json_with_line(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"name": "x",\n "title": }\n')
    with pytest.raises(wfmod.WorkflowError, match=r"broken.json: line 2: invalid JSON"):
        wfmod.load(str(p))


# --- a seventh workflow needs only a file and its sources ----------------------------------------

WC_GEN = r'''
#include "apta_util.h"
int gen_main(const apta_gen_args *a) {
  long n = apta_gen_long(a, "words", 50);
  apta_rng r = apta_rng_seed(7);
  apta_buf b = {0};
  static const char *const W[] = {"cxl", "object", "cache", "put", "get"};
  for (long i = 0; i < n; i++) apta_buf_printf(&b, "%s ", W[apta_rng_below(&r, 5)]);
  apta_gen_write(a, 0, "text", b.data, b.len);
  return 0;
}
'''
WC_FN = r'''
#include "apta_store.h"
#include "apta_util.h"
int apta_function(void) {
  apta_bytes t = apta_get("text");
  long words = 0;
  for (size_t i = 0; i < t.len; i++) words += t.data[i] == ' ';
  apta_buf b = {0};
  apta_buf_printf(&b, "%ld\n", words);
  apta_put("count", b.data, b.len);
  return 0;
}
'''


def test_seventh_workflow_without_code_changes(tmp_path):
    apps = tmp_path / "apps"
    (apps / "wordcount").mkdir(parents=True)
    (apps / "wordcount" / "gen.c").write_text(WC_GEN)
    (apps / "wordcount" / "count_words.c").write_text(WC_FN)
    doc = {"name": "wordcount", "title": "Word count", "inputs": ["text"], "outputs": ["count"],
           "sizes": {"tiny": {"gen": {"words": 40}}, "paper": {"gen": {"words": 100000}}},
           "functions": [{"name": "count", "source": "count_words", "servers": ["c1"], "reads": ["text"], "writes": ["count"]}]}
    path = tmp_path / "wordcount.json"
    path.write_text(json.dumps(doc))
    wf = wfmod.load(str(path), apps_dir=str(apps))
    build = str(tmp_path / "build")
    runner.build(build, apps_dir=str(apps))
    res = runner.run_workflow(wf, "tiny", build)
    assert obj(res, "count") == b"40\n"
    shutil.rmtree(build)


def test_every_workflow_file_is_a_workflow_of_the_evaluation(tmp_path):
    """make eval, bench and the simulator's tests take their workflows from the directory, so a
    seventh workflow file joins them without editing a list."""
    for n in ("zeta", "alpha"):
        (tmp_path / f"{n}.json").write_text("{}")
    (tmp_path / "notes.md").write_text("not a workflow")
    assert wfmod.names(str(tmp_path)) == ["alpha", "zeta"]
    assert PAPER_APPS <= set(wfmod.names())
