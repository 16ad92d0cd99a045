"""The Valgrind tracer (workloads/tracer/, workloads/trace.py) and the trace format (workloads/TRACES.md,
workloads/sigil.py): every app traced at size tiny, determinism, phases against the workflow files,
object bytes against the host run, a micro-program with exactly known counts, bad input.

Valgrind is required: under `make test` (or `make traces`) it is installed, so a missing valgrind
is a failure with the fix in the message, not a skip.
"""

import gzip
import json
import os
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from apta import hostrun as runmod
from apta.workloads import sigil
from apta import workflow as wfmod


from apta.workloads import trace as tracemod

APPS = ("finra", "gemm", "image", "phi", "sentiment", "video")


def _need_valgrind():
    if shutil.which("valgrind") is None:
        pytest.fail("valgrind is not installed: the tracer tests need it. Run `make traces` (installs valgrind, gcc, "
                    "make, libc6-dev via tools/install-apt.sh) or apt-get install valgrind")


@pytest.fixture(scope="module")
def tool_hash():
    _need_valgrind()
    h = tracemod.build_tool()
    runmod.build()
    return h


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, tool_hash):
    """All six apps traced at tiny into a temporary root; returns (root, {app: workflow}, progress lines)."""
    root = str(tmp_path_factory.mktemp("traces"))
    wfs = {a: wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, a + ".json")) for a in APPS}
    lines = []
    for wf in wfs.values():
        tracemod.trace_workflow(wf, "tiny", root, tool_hash=tool_hash, progress=lines.append)
    return root, wfs, lines


def _instances(root, wf):
    index = json.load(open(os.path.join(root, "tiny", wf.name, "index.json")))
    return [(inst, os.path.join(root, "tiny", wf.name, e["dir"])) for inst, e in zip(wf.instances(), index["instances"])]


def _events_bytes(root):
    out = {}
    for app in APPS:
        base = os.path.join(root, "tiny", app)
        for d in sorted(os.listdir(base)):
            p = os.path.join(base, d, sigil.EVENTS_FILE)
            if os.path.exists(p):
                out[(app, d)] = (open(p, "rb").read(), open(os.path.join(base, d, "meta.json"), "rb").read())
    return out


# --- the six apps ----------------------------------------------------------------------------------

def test_every_instance_traced_and_valid(tiny):
    root, wfs, lines = tiny
    assert len(lines) == sum(len(wf.instances()) for wf in wfs.values())
    for wf in wfs.values():
        index = json.load(open(os.path.join(root, "tiny", wf.name, "index.json")))
        assert index["app"] == wf.name and index["size"] == "tiny"
        want = [{"function": i.function, "instance": i.index, "server": i.server, "dir": f"{i.function}.{i.index}"}
                for i in wf.instances()]
        assert index["instances"] == want
        for inst, d in _instances(root, wf):
            t = sigil.load(d)  # validates every line and meta.json against the events
            assert (t.meta["function"], t.meta["instance"], t.meta["server"]) == (inst.function, inst.index, inst.server)
            assert os.path.getsize(os.path.join(d, sigil.PTHREAD_FILE)) == 0
            assert not os.path.exists(os.path.join(d, tracemod.EVENTS_RAW))


def test_phases_follow_the_workflow_file(tiny):
    root, wfs, _ = tiny
    for wf in wfs.values():
        for inst, d in _instances(root, wf):
            t = sigil.load(d)
            want = (["GET"] if inst.reads else []) + ["COMPUTE"] + (["PUT"] if inst.writes else []) + ["END"]
            assert list(t.phases) == want, f"{wf.name} {inst.function}[{inst.index}]"
            assert t.counts("COMPUTE")["events"] > 0
            got = sorted(o["name"] for o in t.meta["objects"] if o["kind"] == "get")
            put = sorted(o["name"] for o in t.meta["objects"] if o["kind"] == "put")
            assert (got, put) == (sorted(inst.reads), sorted(inst.writes))


def test_object_bytes_equal_the_host_run(tiny):
    root, wfs, _ = tiny
    for wf in wfs.values():
        res = runmod.run_workflow(wf, "tiny")
        for rec, (inst, d) in zip(res["functions"], _instances(root, wf)):
            st = sigil.load(d).meta["stats"]
            assert (st["get_bytes"], st["put_bytes"]) == (rec["get_bytes"], rec["put_bytes"]), f"{wf.name} {inst.function}"


def test_object_lines_read_in_get_and_written_in_put(tiny):
    root, wfs, _ = tiny
    for wf in wfs.values():
        for inst, d in _instances(root, wf):
            t = sigil.load(d)
            get_lines = set().union(*(sigil.lines_of(e.read_ranges) for e in t.phases.get("GET", [])))
            put_lines = set().union(*(sigil.lines_of(e.write_ranges) for e in t.phases.get("PUT", [])))
            for o in t.meta["objects"]:
                if o["len"] == 0:
                    continue
                a = int(o["addr"], 16)
                lines = set(range(a // 64, (a + o["len"] - 1) // 64 + 1))
                where = get_lines if o["kind"] == "get" else put_lines
                assert lines <= where, f"{wf.name} {inst.function}: {o['kind']} {o['name']} not in its phase"
            # the GET phase is the store traffic, not host file I/O: one read per object line, plus
            # the library's bookkeeping (and, between two gets, whatever the function computes there:
            # GEMM's shuffle parses one partial before it gets the other)
            gets = [o for o in t.meta["objects"] if o["kind"] == "get" and o["len"]]
            n_lines = sum((int(o["addr"], 16) + o["len"] - 1) // 64 - int(o["addr"], 16) // 64 + 1 for o in gets)
            if "GET" in t.phases:
                assert t.counts("GET")["reads"] >= n_lines
                if len(gets) == 1:
                    assert t.counts("GET")["reads"] <= n_lines + 100, f"{wf.name} {inst.function}: host I/O left in GET?"


def test_event_and_instruction_counts_are_sane(tiny):
    root, wfs, _ = tiny
    for wf in wfs.values():
        for inst, d in _instances(root, wf):
            st = sigil.load(d).meta["stats"]
            assert st["instructions"] >= st["iops"] + st["flops"] > 0
            # every instruction is an iop, a flop or has a memory access (at most a few each)
            assert st["instructions"] <= st["iops"] + st["flops"] + st["reads"] + st["writes"]
            assert st["events"] >= (st["reads"] + st["writes"]) / 1000
            assert st["events"] <= st["instructions"] / 20 + 50, "events should aggregate many instructions"
            assert 0 < st["trace_bytes"] < st["event_file_bytes"]


def test_flops_where_the_code_is_floating_point(tiny):
    root, wfs, _ = tiny
    predict = sigil.load(_instances(root, wfs["image"])[1][1]).meta["stats"]
    assert predict["flops"] > 0.05 * predict["instructions"]  # a CNN
    csv = sigil.load(_instances(root, wfs["sentiment"])[0][1]).meta["stats"]
    assert csv["flops"] < 0.001 * csv["instructions"]  # a CSV parser


def test_traces_are_deterministic_and_cached(tiny, tool_hash):
    root, wfs, _ = tiny
    before = _events_bytes(root)
    lines = []
    for wf in wfs.values():
        tracemod.trace_workflow(wf, "tiny", root, tool_hash=tool_hash, progress=lines.append)
    assert all(": cached:" in s for s in lines), lines
    for wf in wfs.values():  # trace again for real: byte-identical events and meta.json
        tracemod.trace_workflow(wf, "tiny", root, tool_hash=tool_hash, force=True, progress=lines.append)
    after = _events_bytes(root)
    assert before.keys() == after.keys()
    differ = [k for k in before if before[k] != after[k]]
    assert not differ, f"traces differ between two runs: {differ}"


def test_stats_table(tiny):
    root, wfs, _ = tiny
    stats = tracemod.write_stats("tiny", root)
    assert set(stats["apps"]) == set(APPS)
    md = open(os.path.join(root, "tiny", "stats.md")).read()
    assert "| phi | identifyPHI | c1 |" in md and "**all**" in md
    on_disk = json.load(open(os.path.join(root, "tiny", "stats.json")))
    assert on_disk["total"]["instructions"] == sum(a["total"]["instructions"] for a in stats["apps"].values()) > 0


# --- a micro-program with known counts ------------------------------------------------------------

PROBE_GEN = r'''
#include "apta_util.h"
int gen_main(const apta_gen_args *a) {
  long n = apta_gen_long(a, "doubles", 0);
  apta_buf b = {0};
  for (long i = 0; i < n; i++) apta_buf_f64(&b, (double)i);
  apta_gen_write(a, 0, "in", b.data, b.len);
  return 0;
}
'''

# Per iteration of the main loop, exactly: 10 instructions; iops 4 (add, add, dec, jnz); flops 3
# (addsd, mulsd, addsd with a memory operand); reads 3 (movsd load, addsd's operand, add's operand);
# writes 1 (movsd store). The strided loop first writes one byte every 128 bytes: one range per write.
# Then `rep movsb` copies 8 bytes per iteration, line-aligned: per 64-byte line one instruction, one
# read and one write (hardware moves whole lines; Valgrind would count every byte).
PROBE_FN = r'''
#include "apta_store.h"
#include "apta_util.h"
static double outbuf[4096] __attribute__((aligned(64)));
static unsigned char strided[128 * 128] __attribute__((aligned(64)));
int apta_function(void) {
  apta_bytes in = apta_get("in");
  long n = apta_param_long("iters", 1);
  long k = apta_param_long("strided", 1);
  if ((size_t)(n + 2) * 8 > in.len || n > 4096 || k > 128) return 1;
  const double *src = (const double *)in.data;
  double *dst = outbuf;
  unsigned char *p = strided;
  long acc = 0;
  double two = 2.0, half = 0.5;
  __asm__ volatile(
      "3: movb $1, (%[p])\n\t"
      "add $128, %[p]\n\t"
      "dec %[k]\n\t"
      "jnz 3b\n\t"
      "1: movsd (%[src]), %%xmm0\n\t"
      "addsd %[two], %%xmm0\n\t"
      "mulsd %[half], %%xmm0\n\t"
      "addsd 8(%[src]), %%xmm0\n\t"
      "movsd %%xmm0, (%[dst])\n\t"
      "add $8, %[src]\n\t"
      "add $8, %[dst]\n\t"
      "add (%[src]), %[acc]\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [src] "+r"(src), [dst] "+r"(dst), [acc] "+r"(acc), [n] "+r"(n), [k] "+r"(k), [p] "+r"(p)
      : [two] "x"(two), [half] "x"(half)
      : "xmm0", "memory", "cc");
  long iters = apta_param_long("iters", 1);
  static unsigned char copy[4096 * 8] __attribute__((aligned(64)));
  const void *s2 = in.data;
  void *d2 = copy;
  size_t cnt = (size_t)iters * 8;
  __asm__ volatile("rep movsb" : "+S"(s2), "+D"(d2), "+c"(cnt) : : "memory");
  apta_put(iters == 2000 ? "out_b" : "out_a", outbuf, (size_t)iters * 8);
  return acc == 42; /* uses acc; never true */
}
'''
PER_1000_ITERS = {"instructions": 10000 + 125, "iops": 4000, "flops": 3000, "reads": 3000 + 125, "writes": 1000 + 125}


def _probe_workflow(tmp_path, fn_src=PROBE_FN, name="probe"):
    apps = tmp_path / "apps"
    (apps / name).mkdir(parents=True)
    (apps / name / "gen.c").write_text(PROBE_GEN)
    (apps / name / "probe_fn.c").write_text(fn_src)
    # two functions, same code, 1000 and 2000 iterations (same number of digits: the same
    # parameter parsing), so their COMPUTE phases differ by exactly 1000 iterations
    doc = {"name": name, "title": "counting probe", "inputs": ["in"], "outputs": ["out_a", "out_b"],
           "sizes": {"tiny": {"gen": {"doubles": 2100}}, "paper": {"gen": {"doubles": 2100}}},
           "params": {"strided": 100},
           "functions": [
               {"name": "probeA", "source": "probe_fn", "servers": ["c1"], "reads": ["in"], "writes": ["out_a"],
                "params": {"iters": 1000}},
               {"name": "probeB", "source": "probe_fn", "servers": ["c2"], "reads": ["in"], "writes": ["out_b"],
                "params": {"iters": 2000}}]}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return wfmod.load(str(path), apps_dir=str(apps)), str(apps)


def test_micro_program_counts_exactly(tmp_path, tool_hash):
    wf, apps = _probe_workflow(tmp_path)
    build = str(tmp_path / "build")
    runmod.build(build, apps_dir=apps)
    out = str(tmp_path / "traces")
    tracemod.trace_workflow(wf, "tiny", out, build_dir=build, tool_hash=tool_hash, progress=lambda s: None)
    a = sigil.load(os.path.join(out, "tiny", "probe", "probeA.0"))
    b = sigil.load(os.path.join(out, "tiny", "probe", "probeB.0"))
    ca, cb = a.meta["stats"]["by_phase"]["COMPUTE"], b.meta["stats"]["by_phase"]["COMPUTE"]
    for k, want in PER_1000_ITERS.items():
        assert cb[k] - ca[k] == want, f"{k}: {cb[k]} - {ca[k]} != {want}"
    # the loop's stores cover the output buffer's lines; the PUT phase writes them once more
    put = next(o for o in b.meta["objects"] if o["kind"] == "put")
    lo = int(put["addr"], 16) // 64
    lines = set(range(lo, lo + 2000 * 8 // 64))
    assert lines <= set().union(*(sigil.lines_of(e.write_ranges) for e in b.phases["COMPUTE"]))
    assert lines <= set().union(*(sigil.lines_of(e.write_ranges) for e in b.phases["PUT"]))
    assert b.counts("PUT")["writes"] >= len(lines)
    # the strided writes need 100 ranges: an event is closed early at exactly 64
    ranges = [len(e.write_ranges) for e in b.phases["COMPUTE"]]
    assert max(ranges) == sigil.MAX_RANGES
    first_full = next(e for e in b.phases["COMPUTE"] if len(e.write_ranges) == sigil.MAX_RANGES)
    assert first_full.reads + first_full.writes < sigil.MAX_ACCESSES
    # every other event of the sequential loop is closed at exactly 1000 accesses
    full = [e for e in b.phases["COMPUTE"] if e.reads + e.writes == sigil.MAX_ACCESSES]
    assert len(full) >= 7  # 8000 loop accesses in B


def test_micro_program_plain_valgrind_client_requests(tmp_path, tool_hash):
    """A program that issues the client requests itself (no store library) traces too, and a
    program without any marker gives an empty, incomplete trace."""
    src = tmp_path / "p.c"
    src.write_text(r'''
#include "apta_store.h"
int main(void) {
  static double v[512];
  apta_phase(APTA_PHASE_COMPUTE, "p");
  for (int i = 0; i < 512; i++) v[i] = v[i] * 1.5 + 1.0;
  apta_phase(APTA_PHASE_END, "p");
  return v[3] > 0 ? 0 : 1;
}
''')
    exe = str(tmp_path / "p")
    cc = os.environ.get("CC", "cc")
    assert os.system(f"{cc} -O1 -I{ROOT}/workloads/include {src} -o {exe}") == 0
    r, tool = tracemod.trace_command([exe], str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert tool["complete"] and tool["function"] == "p"
    assert [p["phase"] for p in tool["phases"]] == ["COMPUTE", "END"]
    st = tool["stats"]
    assert st["reads"] >= 512 and st["writes"] >= 512 and st["flops"] >= 512
    text = open(tmp_path / "out" / tracemod.EVENTS_RAW).read().splitlines()
    assert text[0] == "& COMPUTE" and text[-1] == "& END"

    plain = tmp_path / "q.c"
    plain.write_text("int main(void) { return 0; }\n")
    assert os.system(f"{cc} {plain} -o {tmp_path / 'q'}") == 0
    r, tool = tracemod.trace_command([str(tmp_path / "q")], str(tmp_path / "out2"))
    assert r.returncode == 0 and tool["complete"] is False and tool["stats"]["events"] == 0
    assert open(tmp_path / "out2" / tracemod.EVENTS_RAW).read() == ""


# --- bad input -------------------------------------------------------------------------------------

def test_unknown_app_and_missing_workflow_file(capsys):
    assert tracemod.main(["nosuchapp", "--size", "tiny"]) == 1
    err = capsys.readouterr().err
    assert "nosuchapp" in err and "nosuchapp.json" in err and "known:" in err
    assert tracemod.main(["--workflow", "/nonexistent/flow.json", "--size", "tiny"]) == 1
    assert "/nonexistent/flow.json" in capsys.readouterr().err


def test_a_failing_function_names_itself_and_leaves_nothing(tmp_path, tool_hash):
    bad = PROBE_FN.replace('apta_bytes in = apta_get("in");', 'apta_bytes in = apta_get("in"); apta_get("undeclared");')
    wf, apps = _probe_workflow(tmp_path, bad, name="broken")
    build = str(tmp_path / "build")
    runmod.build(build, apps_dir=apps)
    out = str(tmp_path / "traces")
    with pytest.raises(tracemod.TraceError) as e:
        tracemod.trace_workflow(wf, "tiny", out, build_dir=build, tool_hash=tool_hash, progress=lambda s: None)
    msg = str(e.value)
    assert "broken" in msg and "probeA" in msg and "undeclared" in msg and "probe_fn.c" in msg
    app_dir = os.path.join(out, "tiny", "broken")
    assert sorted(os.listdir(app_dir)) == [], os.listdir(app_dir)  # no instance dir, no .tmp, no index.json


BAD_LINES = [
    ("@ 1,2,3", "counts"),
    ("@ 1,x,0,0", "flops"),
    ("@ 1,2,-3,0", "reads"),
    ("@ 0,0,600,500 $ 0x0 0x3f * 0x40 0x7f", "reads"),
    ("@ 0,0,1,0 * 0x41 0x7f", "read range 0 start"),
    ("@ 0,0,1,0 * 0x40 0x7e", "read range 0 end"),
    ("@ 0,0,1,0 * 0x40 zz", "read range 0 end"),
    ("@ 0,0,1,0 * 0x40 0x7f 0x80 0xbf", "read range 1 start"),  # touches: not merged
    ("@ 0,0,0,1 $ 0x80 0xbf 0x0 0x3f", "write range 1 start"),  # not sorted
    ("@ 0,0,0,1", "write ranges"),  # a write without a range
    ("@ 0,0,1,0 $ 0x0 0x3f", "write ranges"),  # a range without a write
    ("@ 0,0,1,1 * 0x0 0x3f $ 0x40 0x7f", "write ranges"),  # $ after *
    ("@ 0,0,1,0 * 0x0", "read ranges"),
    ("@ 0,0,0,65 $ " + " ".join(f"{hex(128 * i)} {hex(128 * i + 63)}" for i in range(65)), "write ranges"),
    ("& LUNCH", "phase"),
    ("# 1 2", "event"),
    ("^ 3", "event"),
    ("? what", "event"),
]


@pytest.mark.parametrize("line,field", BAD_LINES)
def test_validator_names_line_and_field(line, field):
    with pytest.raises(sigil.TraceFormatError) as e:
        sigil.parse_line(line, "f.gz", 7)
    assert (e.value.file, e.value.line, e.value.field) == ("f.gz", 7, field)
    assert str(e.value).startswith(f"f.gz:7: {field}: ")


def _write_trace(d, lines, meta=None):
    os.makedirs(d, exist_ok=True)
    with gzip.open(os.path.join(d, sigil.EVENTS_FILE), "wt") as fh:
        fh.write("".join(s + "\n" for s in lines))
    open(os.path.join(d, sigil.PTHREAD_FILE), "w").close()
    if meta is not None:
        json.dump(meta, open(os.path.join(d, "meta.json"), "w"))


GOOD = ["& GET", "@ 0,0,2,0 * 0x1000 0x107f", "& COMPUTE", "@ 5,1,1,1 $ 0x2000 0x203f * 0x1000 0x103f", "& END"]


def _good_meta():
    c = {"instructions": 9, "iops": 5, "flops": 1, "reads": 3, "writes": 1, "events": 2}
    return {"app": "x", "size": "tiny", "function": "f", "instance": 0, "server": "c1",
            "phases": [{"phase": "GET", "first_event": 1, "events": 1}, {"phase": "COMPUTE", "first_event": 2, "events": 1},
                       {"phase": "END", "first_event": 3, "events": 0}],
            "objects": [{"kind": "get", "name": "o", "addr": "0x1000", "len": 128}],
            "stats": {**c, "get_bytes": 128, "put_bytes": 0,
                      "by_phase": {"GET": {"iops": 0, "flops": 0, "reads": 2, "writes": 0, "events": 1},
                                   "COMPUTE": {"iops": 5, "flops": 1, "reads": 1, "writes": 1, "events": 1}}}}


def test_validator_on_files(tmp_path):
    d = str(tmp_path / "ok")
    _write_trace(d, GOOD, _good_meta())
    t = sigil.load(d)
    assert list(t.phases) == ["GET", "COMPUTE", "END"] and t.counts()["reads"] == 3

    cases = [
        (GOOD[:1] + ["@ 0,0,2,0 * 0x1000 0x1070"] + GOOD[2:], 2, "read range 0 end"),
        (["& PUT"] + GOOD[1:], 1, "phase"),                       # first marker must be GET or COMPUTE
        (GOOD[:3] + ["& GET"] + GOOD[3:], 4, "phase"),            # backwards
        (GOOD + ["@ 1,0,0,0"], 6, "phase"),                       # after END
        (GOOD[:-1], 4, "phase"),                                  # no END
        (["@ 1,0,0,0"] + GOOD, 1, "phase"),                       # before the first marker
    ]
    for i, (lines, lineno, field) in enumerate(cases):
        d = str(tmp_path / f"bad{i}")
        _write_trace(d, lines, _good_meta())
        with pytest.raises(sigil.TraceFormatError) as e:
            sigil.load(d)
        assert (e.value.file, e.value.line, e.value.field) == (sigil.EVENTS_FILE, lineno, field), str(e.value)

    d = str(tmp_path / "nometa")
    _write_trace(d, GOOD)
    with pytest.raises(sigil.TraceFormatError, match="meta.json: missing"):
        sigil.load(d)
    m = _good_meta()
    m["stats"]["reads"] = 4
    d = str(tmp_path / "badmeta")
    _write_trace(d, GOOD, m)
    with pytest.raises(sigil.TraceFormatError, match=r"meta.json:0: stats.reads: 4 but the events add up to 3"):
        sigil.load(d)
