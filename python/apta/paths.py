"""Where the repository's shared files are. The package is installed editable (`pip install -e .`
from the repository root), so the repository is two levels above this file."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schema"
BUILD = ROOT / "build"


def load_script(name: str, path: Path):
    """Import a component's script by its path under `name` (for tests of scripts that are not
    modules of a package, e.g. spec/murphi/check.py and spec/tla/check.py, which share a file name)."""
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def emit(text: str, out: str | None) -> None:
    """A generator's output: into `out` (its directory created), or stdout without one."""
    import sys
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
    else:
        sys.stdout.write(text)
