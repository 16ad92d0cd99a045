"""Exploring the model for vectors (vectors.py): the trap model (apta.m with one trap invariant per
target cell), the trap verifier's runs and their traces, and one configuration's iteration of
runs until nothing new is found, each trace translated as it is found (vectors_core.py,
vectors_ms.py)."""
from __future__ import annotations

import re
import subprocess
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from apta import cells
from apta.murphi import check
from apta.murphi.check import CheckError
from apta.murphi.vectors_core import Translator
from apta.murphi.vectors_ms import MsTranslator

CC_FLAGS = ["-std=c11", "-O0", "-mcx16", "-w"]   # small state spaces: compile time dominates
MAX_ERRORS = 300                                  # per run; traps repeat, the first of each counts
_PRINT = threading.Lock()                         # configurations run two at a time


def say(msg: str) -> None:
    with _PRINT:
        print(msg, flush=True)


def murphi_name(cell: str) -> str:
    return "V_" + cell.replace(".", "_")


def model_cells(source: str, origin: str) -> list[str]:
    """The VCell enum of apta.m, checked against the cell tables of rtl/CORE.md then
    rtl/MEMSERVER.md (same cells, same order). Returns every cell id (core, then memory server)."""
    m = re.search(r"\bVCell\s*:\s*enum\s*\{([^}]*)\}", source)
    if not m:
        raise CheckError(f"{origin}: no VCell enum (the cell ghost of VECTOR_CELLS)")
    enum = [re.sub(r"--.*", "", x).strip() for x in re.sub(r"--[^\n]*", "", m.group(1)).split(",")]
    ids = cells.ids() + cells.ids("ms")
    want = [murphi_name(c) for c in ids]
    if enum != want:
        missing = sorted(set(want) - set(enum))
        extra = sorted(set(enum) - set(want))
        raise CheckError(f"{origin}: VCell enum differs from the cells of rtl/CORE.md + rtl/MEMSERVER.md "
                         f"(missing {missing}, extra {extra}, or another order)")
    return ids


PROPERTY_RE = re.compile(r'^(?:invariant|liveness)\s+"[^"]*"[^;]*;', re.M)


def trap_source(source: str, constants: dict, traps: list[str], origin: str) -> str:
    src = check.instantiate(source, {**constants, "VECTOR_CELLS": True}, origin)
    src = check.keep_covers(src, set(), origin)
    # The model's own properties are make verify's job; here they would only stop a mutant's run
    # (and liveness would add a second pass). Its assertions stay: a failing one is an error.
    src = PROPERTY_RE.sub("", src)
    src += "\n-- trap properties (spec/murphi/vectors.py)\n"
    src += "".join(f'invariant "trap: {c}" !VecHit({murphi_name(c)});\n' for c in traps)
    return src


# ---------------------------------------------------------------------------------------------
# running the trap verifier
# ---------------------------------------------------------------------------------------------
@dataclass
class TrapRun:
    found: dict[str, list] = field(default_factory=dict)   # cell -> trace [(rule, params, state)]
    errors: int = 0
    other: list[str] = field(default_factory=list)         # errors that are not traps
    states: int = 0
    complete: bool = False
    seconds: float = 0.0


def _params(t: ET.Element) -> dict[str, int]:
    out = {}
    for p in t.findall("parameter"):
        m = re.search(r"(\d+)$", (p.text or "").strip())
        if m:
            out[p.get("name")] = int(m.group(1))
    return out


def parse_traps(path: Path) -> TrapRun:
    """Stream the machine-readable output: keep the first (shortest) trace of each trap."""
    res = TrapRun()
    text = path.read_text(errors="replace")
    if "</rumur_run>" not in text:
        text += "</rumur_run>"
    for _, el in ET.iterparse(_StringSource(text), events=("end",)):
        if el.tag == "error":
            res.errors += 1
            msg = (el.findtext("message") or "").strip()
            prop = check.property_of(msg)
            if not prop.startswith("trap: "):
                res.other.append(msg)
            else:
                cell = prop[len("trap: "):]
                if cell not in res.found:
                    trace, state = [], {}
                    pending = None
                    for t in el:
                        if t.tag == "transition":
                            txt = (t.text or "").strip()
                            pending = (re.sub(r'^(Rule|Startstate)\s+"(.*)"$', r"\2", txt), _params(t))
                        elif t.tag == "state":
                            for c in t.findall("state_component"):
                                state[c.get("name")] = c.get("value")
                            trace.append((pending[0], pending[1], dict(state)))
                    res.found[cell] = trace
            el.clear()
        elif el.tag == "summary":
            res.states = int(el.get("states"))
            res.complete = True
        elif el.tag == "progress":
            res.states = max(res.states, int(el.get("states")))
    return res


class _StringSource:
    """iterparse wants a file object; this one reads a str."""
    def __init__(self, text: str):
        self.text, self.pos = text.encode(), 0

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = len(self.text) - self.pos
        chunk = self.text[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk


def run_traps(exe: Path, timeout: float, label: str) -> TrapRun:
    log = exe.parent / "output.xml"
    t0 = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.Popen([str(exe)], stdout=f, stderr=subprocess.STDOUT)
        last = t0
        while p.poll() is None:
            time.sleep(0.2)
            now = time.monotonic()
            if now - t0 > timeout:
                p.kill(); p.wait()
                raise CheckError(f"{label}: trap verifier timed out after {timeout:.0f} s")
            if now - last >= 15:
                last = now
                n = check._last_progress(log)
                say(f"    ... {label}: still running after {now - t0:.0f} s"
                    + (f" ({n:,} states)" if n else ""))
    res = parse_traps(log)
    res.seconds = time.monotonic() - t0
    if res.errors:
        log.unlink()             # traces of repeated traps: tens of MB; the scenarios keep what counts
    return res


# ---------------------------------------------------------------------------------------------
# one configuration: iterate trap runs
# ---------------------------------------------------------------------------------------------
@dataclass
class ConfigResult:
    config: str
    scenarios: list[dict]
    covered: list[str]
    unreachable: list[str]
    iterations: int
    seconds: float
    exhaustive: bool
    ms_scenarios: list[dict] | None = None      # None: not a memory-server configuration


def generate(config: str, constants: dict, targets: list[str], source: str, out: Path,
             timeout: float, ms: bool = False) -> ConfigResult:
    """Trap runs until nothing new; every trace of a core cell becomes a core scenario and, in a
    memory-server configuration (ms), every trace also a memory-server scenario."""
    origin = f"vectors: {config}"
    model_cells(source, origin)
    core_ids = set(cells.ids())
    tr = Translator(config, constants)
    mtr = MsTranslator(config, constants) if ms else None
    ms_scenarios = [] if ms else None
    remaining = list(targets)
    scenarios, t0, it, exhaustive = [], time.monotonic(), 0, False
    while remaining:
        it += 1
        src = trap_source(source, constants, remaining, origin)
        exe = check.build(f"{config}/it{it}", src, MAX_ERRORS, 1,
                          ["--deadlock-detection", "off"], base=out / "model", cc_flags=CC_FLAGS)
        (exe.parent / "model.c").unlink(missing_ok=True)      # 2.5 MB each; the verifier is cached
        res = run_traps(exe, timeout, f"{config} iteration {it}")
        if res.other:
            raise CheckError(f"{origin}: the trap model failed on something else: {res.other[0]}")
        new = [c for c in remaining if c in res.found]
        for c in new:
            if c in core_ids:
                scenarios.append(tr.scenario(c, res.found[c]))
            if mtr is not None:
                ms_scenarios.append(mtr.scenario(c, res.found[c]))
        remaining = [c for c in remaining if c not in res.found]
        say(f"  {config} iteration {it}: {len(remaining) + len(new)} trap(s), {res.states:,} states, "
            f"{res.seconds:.1f} s: found {', '.join(new) or 'none'}")
        if not new:
            if not res.complete or res.errors:
                raise CheckError(f"{origin}: run {it} ended early without a trap "
                                 f"({res.errors} error(s), complete={res.complete})")
            exhaustive = True
            break
    order = {c: i for i, c in enumerate(cells.ids() + cells.ids("ms"))}
    scenarios.sort(key=lambda sc: order[sc["cell"]])
    if ms_scenarios is not None:
        ms_scenarios.sort(key=lambda sc: order[sc["cell"]])
    covered = [c for c in targets if c not in remaining]
    return ConfigResult(config, scenarios, covered, remaining, it, time.monotonic() - t0, exhaustive,
                        ms_scenarios)
