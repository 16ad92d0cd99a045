"""Where the checkout's shared files are. The package does not assume where it is installed: the
checkout is the folder named by APTA_ROOT (a tool's argument, set by its --root or by the caller),
else the working directory or the nearest of its parents that has both `schema/` and `spec/`.
`ROOT`, `SCHEMA` and `BUILD` are found on first use (`from apta.paths import ROOT`), and a clear
error says where the search looked when there is no checkout there."""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

ENV = "APTA_ROOT"


class NoCheckout(RuntimeError):
    """Neither APTA_ROOT nor the working directory (or a parent of it) is an apta checkout."""


def is_checkout(d: Path) -> bool:
    return (d / "schema").is_dir() and (d / "spec").is_dir()


def find_root(start: str | os.PathLike | None = None) -> Path:
    """The checkout: `start` (a tool's argument) or APTA_ROOT if given, which must be a checkout;
    else the working directory or its nearest parent that has schema/ and spec/."""
    given = start if start is not None else os.environ.get(ENV)
    if given:
        d = Path(given).resolve()
        if not is_checkout(d):
            raise NoCheckout(f"{d} ({'argument' if start is not None else ENV}) is not an apta checkout: "
                             "it has no schema/ and spec/")
        return d
    cwd = Path.cwd().resolve()
    for d in (cwd, *cwd.parents):
        if is_checkout(d):
            return d
    raise NoCheckout(f"no apta checkout at {cwd} or any parent (a folder with schema/ and spec/): "
                     f"run from inside the checkout or set {ENV}=<checkout>")


@lru_cache(maxsize=None)
def _root() -> Path:
    return find_root()


def __getattr__(name: str):
    # ROOT, SCHEMA, BUILD: computed when first imported, from the working directory or APTA_ROOT
    if name == "ROOT":
        return _root()
    if name == "SCHEMA":
        return _root() / "schema"
    if name == "BUILD":
        return _root() / "build"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def emit(text: str, out: str | None) -> None:
    """A generator's output: into `out` (its directory created), or stdout without one."""
    import sys
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
    else:
        sys.stdout.write(text)
