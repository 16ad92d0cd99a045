"""The cells of the protocol tables, parsed from the one place each is written: the "Cells" table
of rtl/CORE.md (OTC/OIC, the coherence core) and of rtl/MEMSERVER.md (OSC/OPC, the memory-server
top); rows whose first column is a backquoted id.

    from apta import cells; cells.load() -> [Cell(id, situation, outcome), ...]   # the core's
    cells.ids("ms") -> ["osc.get.mem", ...]                             # the memory server's
    cells.guards() -> ["commit.zombie", ...]          # the core's checks the model has no cell for
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .paths import ROOT

CORE_MD = ROOT / "rtl" / "CORE.md"
MEMSERVER_MD = ROOT / "rtl" / "MEMSERVER.md"
TABLES = {"core": CORE_MD, "ms": MEMSERVER_MD}
_ROW = re.compile(r"^\|\s*`([a-z][A-Za-z0-9_.]*)`\s*\|([^|]*)\|([^|]*)\|\s*$")


@dataclass(frozen=True)
class Cell:
    id: str
    situation: str
    outcome: str


def load(path: Path = CORE_MD, section: str = "Cells") -> list[Cell]:
    lines = path.read_text().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith(f"## {section}"))
    except StopIteration:
        raise ValueError(f"{path}: no '## {section}' section") from None
    out: list[Cell] = []
    for n, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        m = _ROW.match(line)
        if m:
            c = Cell(m.group(1), m.group(2).strip(), m.group(3).strip())
            if any(c.id == o.id for o in out):
                raise ValueError(f"{path}:{n}: cell {c.id!r} listed twice")
            out.append(c)
    if not out:
        raise ValueError(f"{path}: the {section} table is empty")
    return out


def guards() -> list[str]:
    """The core's guard outcomes (rtl/CORE.md "Guards"): named by the RTL, the engine and the
    scoreboard, with no cell in the model (so not in the vector suite)."""
    return [c.id for c in load(CORE_MD, "Guards")]


def ids(table: str = "core") -> list[str]:
    if table not in TABLES:
        raise ValueError(f"unknown cell table {table!r} (known: {', '.join(TABLES)})")
    return [c.id for c in load(TABLES[table])]


if __name__ == "__main__":
    for c in load() + load(MEMSERVER_MD):
        print(f"{c.id:18} {c.situation:50} {c.outcome}")
