"""The profile `make test` writes of itself (python/apta/testprofile.py): phases with their wall
and CPU time and exit status, pytest modules nested in their phase, a malformed log line named."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from apta import testprofile

SCRIPT = Path(testprofile.__file__)


def _env(log: Path) -> dict:
    # the apta package is importable from any directory: the venv's editable install; the profiled
    # pytest runs as if started inside an xdist worker (make test's batch lane), whose variable it inherits
    return dict(os.environ, APTA_PROFILE_LOG=str(log), APTA_PROFILE_T0="0", PYTEST_XDIST_WORKER="gw0")


def test_phases_measured_and_failure_kept(tmp_path):
    log, out = tmp_path / "p.ndjson", tmp_path / "p.json"
    subprocess.run([sys.executable, SCRIPT, "start", log], check=True)
    busy = [sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"]
    assert subprocess.run([sys.executable, SCRIPT, "run", "busy", "--", *busy], env=_env(log)).returncode == 0
    r = subprocess.run([sys.executable, SCRIPT, "run", "fails", "--", sys.executable, "-c", "raise SystemExit(3)"],
                       env=_env(log))
    assert r.returncode == 3                       # the phase's own status, so make stops there
    with open(log, "a") as f:
        f.write("{not json\n")
    rep = subprocess.run([sys.executable, SCRIPT, "report", log, out], capture_output=True, text=True)
    assert rep.returncode == 0
    assert f"{log}:3: not a profile record" in rep.stderr
    s = json.loads(out.read_text())
    busy_rec, fail_rec = s["phases"]
    assert busy_rec["name"] == "busy" and busy_rec["rc"] == 0 and busy_rec["cpu_s"] >= 0.4
    assert fail_rec["name"] == "fails" and fail_rec["rc"] == 3
    assert s["passed"] is False and "FAILED" in rep.stdout.splitlines()[-2]
    assert s["machine"]["cores"] == os.cpu_count()


def _profiled_pytest(tmp_path: Path, phase: str, modules: dict[str, str], *pytest_args: str) -> dict:
    """Run pytest with the plugin on `modules` (name -> source) as phase `phase`; the report."""
    log, out = tmp_path / "p.ndjson", tmp_path / "p.json"
    (tmp_path / "t").mkdir()
    for name, src in modules.items():
        (tmp_path / "t" / name).write_text(src)
    subprocess.run([sys.executable, SCRIPT, "start", log], check=True)
    subprocess.run([sys.executable, SCRIPT, "run", phase, "--", sys.executable, "-m", "pytest", "-q", *pytest_args,
                    "-p", "apta.testprofile", "-p", "no:cacheprovider", str(tmp_path / "t")],
                   env=_env(log), cwd=tmp_path, capture_output=True)
    subprocess.run([sys.executable, SCRIPT, "report", log, out], check=True, capture_output=True)
    return json.loads(out.read_text())


def test_pytest_modules_nested_in_their_phase(tmp_path):
    s = _profiled_pytest(tmp_path, "suite", {
        "test_a.py": "def test_one():\n    pass\n\ndef test_two():\n    assert False\n",
        "test_b.py": "def test_one():\n    sum(range(10**6))\n"})
    mods = {Path(r["name"]).name: r for r in s["pytest"]}
    assert set(mods) == {"test_a.py", "test_b.py"}
    assert mods["test_a.py"]["tests"] == 2 and mods["test_a.py"]["rc"] == 1
    assert mods["test_b.py"]["rc"] == 0 and mods["test_b.py"]["parent"] == "suite"
    assert s["phases"][0]["rc"] == 1
    assert [f["name"].split("/")[-1] for f in s["failed_tests"]] == ["test_a.py::test_two"]


def test_failures_named_under_xdist(tmp_path):
    """Under pytest-xdist (make test's batch lane) a failure is recorded once, by the controller."""
    s = _profiled_pytest(tmp_path, "lane", {
        "test_a.py": "def test_ok():\n    pass\n\ndef test_bad():\n    assert False\n",
        "test_b.py": "def test_ok():\n    pass\n"}, "-n", "2", "--dist", "loadfile")
    assert [f["name"].split("/")[-1] for f in s["failed_tests"]] == ["test_a.py::test_bad"]
    assert {Path(r["name"]).name: r["tests"] for r in s["pytest"]} == {"test_a.py": 2, "test_b.py": 1}


def test_no_log_no_records(tmp_path, monkeypatch):
    monkeypatch.delenv("APTA_PROFILE_LOG", raising=False)
    testprofile.record("build", "x", 1.0)          # outside a profiled run: nothing, no error
    assert not list(tmp_path.iterdir())


def test_cache_use_summed_and_shown(tmp_path, monkeypatch):
    """A run that took verifiers from the user cache says how many, so its times are not read as cold."""
    log, out = tmp_path / "p.ndjson", tmp_path / "p.json"
    monkeypatch.setenv("APTA_PROFILE_LOG", str(log))
    monkeypatch.setenv("APTA_PROFILE_T0", "0")
    testprofile.record("cache", "rumur-verifiers", 0.0, compiled=2, reused=50)
    testprofile.record("cache", "rumur-verifiers", 0.0, compiled=3, reused=0)
    rep = subprocess.run([sys.executable, SCRIPT, "report", log, out], capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    assert json.loads(out.read_text())["caches"] == [{"name": "rumur-verifiers", "compiled": 5, "reused": 50}]
    assert "cache rumur-verifiers: 5 compiled, 50 reused" in rep.stdout
