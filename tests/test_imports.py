"""One way to import: every component's Python is a subpackage of the installed `apta`
distribution (pyproject.toml, [tool.setuptools.package-dir]). No tracked Python file edits
sys.path or loads a module by its file path, and pytest adds nothing to sys.path."""
from __future__ import annotations

import re
import subprocess
import tomllib

import pytest

from apta.paths import ROOT

FORBIDDEN = re.compile(r"sys\.path\.(insert|append)\s*\(|spec_from_file_location\s*\(|apta\.paths\s+import\s+[^\n]*\bload_script\b|paths\.load_script\s*\(")


def violations(text: str) -> list[str]:
    return [m.group(0) for m in FORBIDDEN.finditer(text)]


def test_the_detector_flags_bad_samples():
    bad = ["sys.path.insert(0, 'x')", "sys.path.append(p)", "importlib.util.spec_from_file_location('m', p)",
           "from apta.paths import ROOT, load_script", "paths.load_script('m', p)"]
    assert all(violations(b) for b in bad)
    assert not violations("from apta.murphi import check\nworkflow.load_script(p)\n")


def test_no_tracked_python_file_edits_sys_path_or_loads_by_path():
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    me = "tests/test_imports.py"
    bad = {f: v for f in files if f != me and (v := violations((ROOT / f).read_text()))}
    assert not bad, bad


def test_pytest_has_no_pythonpath():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "pythonpath" not in cfg.get("tool", {}).get("pytest", {}).get("ini_options", {})


def test_no_test_module_imports_another():
    files = subprocess.run(["git", "ls-files", "tests/*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    pat = re.compile(r"^\s*(from\s+test_\w+\s+import|import\s+test_\w+)", re.M)
    bad = [f for f in files if pat.search((ROOT / f).read_text())]
    assert not bad, bad
