"""Traces do not depend on where the checkout is (workloads/TRACES.md "Deterministic"):
finra built from copies of its sources under two directories of different path lengths, with the
tracer copied there too, traces at size tiny into byte-identical event files and meta.json (its
cache key hashes the binary: -ffile-prefix-map keeps the path out of the debug info). Absolute paths on
the traced function's stack (argv, VALGRIND_LIB, Valgrind's PWD) would shift its addresses and
change its instruction counts, so the tracer names everything through /dev/fd/3."""

import os
import shutil
import subprocess

import pytest

from apta import hostrun as runmod
from apta import workflow as wfmod

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


from apta.workloads import trace as tracemod
APP = "finra"  # tiny: seven instances, a few seconds under the tracer


def _trace_from(base: str, tool_hash: str) -> str:
    """Build the app from a copy of its sources under base (a fresh 'checkout'), copy the tracer
    there and trace from there."""
    build = os.path.join(base, "build")
    src = os.path.join(base, "workloads")
    for d in ("include", "lib", os.path.join("apps", APP)):
        shutil.copytree(os.path.join(ROOT, "workloads", d), os.path.join(src, d))
    shutil.copy(os.path.join(ROOT, "workloads", "Makefile"), src)
    r = subprocess.run(["make", "-s", "-j2", "-C", src, f"BUILD={os.path.join(build, 'workloads')}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    shutil.copytree(tracemod.TOOL_BUILD, os.path.join(build, "tracer"), symlinks=True)
    wf = wfmod.load(os.path.join(wfmod.WORKFLOW_DIR, APP + ".json"))
    out = os.path.join(build, "traces")
    tracemod.trace_workflow(wf, "tiny", out, os.path.join(build, "workloads"), os.path.join(build, "tracer"),
                            tool_hash=tool_hash, progress=lambda s: None)
    return os.path.join(out, "tiny", APP)


def test_traces_identical_from_two_directories(tmp_path):
    if shutil.which("valgrind") is None:
        pytest.fail("valgrind is not installed: run `make traces` (installs it) or apt-get install valgrind")
    tool_hash = tracemod.build_tool()
    runmod.build()
    a = _trace_from(str(tmp_path / "x" / "apta"), tool_hash)
    b = _trace_from(str(tmp_path / "a-much-longer-directory-name-for-a-checkout" / "sub" / "apta"), tool_hash)
    names = sorted(d for d in os.listdir(a) if os.path.isdir(os.path.join(a, d)))
    assert names == sorted(d for d in os.listdir(b) if os.path.isdir(os.path.join(b, d))) and len(names) == 7
    for name in names:
        for f in (tracemod.EVENTS_RAW + ".gz", "meta.json"):
            with open(os.path.join(a, name, f), "rb") as fa, open(os.path.join(b, name, f), "rb") as fb:
                assert fa.read() == fb.read(), f"{name}/{f} differs between the two checkouts"
