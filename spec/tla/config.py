"""A TLC run of spec/tla (a model or a mutant) and the configuration TLC reads for it.

A model is a checked-in .cfg; a deep run or a mutant is its base .cfg with constants overridden
(the mutant: Mutant = "<name>", one switch of the real spec) and, for a mutant, the property list
replaced, written to build/tla/cfg/. The runs themselves are the suites of check.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

# The store contract (P1-P3) and the refinement: what the mutants are checked against.
CONTRACT_INVARIANTS = ["TypeOK", "GetFresh", "NoTornGet", "NoTornCache", "MemoryLatest"]
REFINEMENT = ["RefinementInit", "Refinement"]
# The same for early placement and versioned gets (AptaFlow.tla, refined to StoreFlow.tla):
# V1 (GetRequired) for the early functions, P1 (FlowGetFresh) for the others.
FLOW_CONTRACT = ["FlowTypeOK", "GetRequired", "FlowGetFresh", "NoTornGet", "NoTornCache",
                 "MemoryLatest"]
FLOW_REFINEMENT = ["FlowRefinementInit", "FlowRefinement"]
SAFETY_PROPERTIES = set(REFINEMENT) | set(FLOW_REFINEMENT)   # every other PROPERTY is temporal


@dataclass
class Run:
    name: str
    kind: str                      # "model" | "mutant"
    cfg: str                       # base configuration in spec/tla
    module: str = "MCApta.tla"
    const: dict = field(default_factory=dict)   # constant overrides of the base .cfg
    expected: str | None = None    # mutant: the property TLC must report violated
    invariants: list | None = None  # None: the base .cfg's
    properties: list | None = None  # None: the base .cfg's
    deadlock: bool = True          # check deadlock (TLC's default)
    note: str = ""

    @property
    def generated(self) -> bool:
        return bool(self.const) or self.invariants is not None or self.properties is not None \
            or not self.deadlock

    @property
    def config_label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.const.items())
        return self.cfg + (f"+{extra}" if extra else "")


def mutant(name, cfg, mut, expected, *, full=False, temporal=None, const=None, note="",
           flow=False):
    """A mutant: the base .cfg with Mutant = mut, checked against the contract
    (or, with full=True, every invariant of the base .cfg) and the refinement,
    plus the one temporal property it targets; deadlock is not checked.
    flow=True: a model of AptaFlow.tla (module MCAptaFlow), its contract and refinement."""
    c = {"Mutant": f'"{mut}"'}
    c.update(const or {})
    contract, refinement = (FLOW_CONTRACT, FLOW_REFINEMENT) if flow else (CONTRACT_INVARIANTS, REFINEMENT)
    return Run(name, "mutant", cfg, module="MCAptaFlow.tla" if flow else "MCApta.tla",
               const=c, expected=expected,
               invariants=None if full else contract,
               properties=refinement + ([temporal] if temporal else []),
               deadlock=False, note=note)



SECTION = re.compile(r"^(CONSTANTS?|SPECIFICATION|INIT|NEXT|SYMMETRY|CONSTRAINTS?|"
                     r"INVARIANTS?|PROPERTY|PROPERTIES|CHECK_DEADLOCK|VIEW|ACTION_CONSTRAINTS?)\b")


def parse_cfg(text: str) -> list[tuple[str, list[str]]]:
    """The .cfg as (keyword, lines) sections, comments dropped."""
    sections: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        line = raw.split("\\*", 1)[0].rstrip()
        if not line.strip():
            continue
        m = SECTION.match(line)
        if m:
            rest = line[m.end():].strip()
            sections.append((m.group(1), [rest] if rest else []))
        elif sections:
            sections[-1][1].append(line.strip())
        else:
            raise ValueError(f"cfg line outside a section: {raw!r}")
    return sections


def names_in(sections, keys) -> list[str]:
    return [w for k, ls in sections if k in keys for l in ls for w in l.split()]


def render_cfg(run: Run, base: str) -> tuple[str, list[str]]:
    """The .cfg text for `run` and the temporal properties it checks."""
    sections = parse_cfg(base)
    consts = [l for k, ls in sections if k.startswith("CONSTANT") for l in ls]
    seen = set()
    out_consts = []
    for l in consts:
        m = re.match(r"(\w+)\s*(=|<-)", l)
        if m and m.group(1) in run.const and m.group(2) == "=":
            out_consts.append(f"{m.group(1)} = {run.const[m.group(1)]}")
            seen.add(m.group(1))
        else:
            out_consts.append(l)
    missing = set(run.const) - seen
    if missing:
        raise SystemExit(f"check.py: {run.name}: {run.cfg} sets no constant(s) {sorted(missing)}")
    invs = run.invariants if run.invariants is not None else names_in(sections, ("INVARIANT", "INVARIANTS"))
    props = run.properties if run.properties is not None else names_in(sections, ("PROPERTY", "PROPERTIES"))
    keep = [(k, ls) for k, ls in sections
            if k in ("SPECIFICATION", "INIT", "NEXT", "SYMMETRY", "CONSTRAINT", "CONSTRAINTS", "VIEW")]
    if any(p not in SAFETY_PROPERTIES for p in props):
        keep = [(k, ls) for k, ls in keep if k != "SYMMETRY"]   # no SYMMETRY with liveness
    lines = [f"\\* generated by spec/tla/check.py for {run.name} from {run.cfg}", "CONSTANTS"]
    lines += [f"  {l}" for l in out_consts]
    for k, ls in keep:
        lines.append(k + (" " + " ".join(ls) if ls else ""))
    if invs:
        lines.append("INVARIANTS")
        lines += [f"  {i}" for i in invs]
    if props:
        lines.append("PROPERTIES")
        lines += [f"  {p}" for p in props]
    if not run.deadlock:
        lines.append("CHECK_DEADLOCK FALSE")
    return "\n".join(lines) + "\n", [p for p in props if p not in SAFETY_PROPERTIES]



def prepare_cfg(run: Run, spec_dir: Path, build: Path) -> tuple[Path, list[str]]:
    """The .cfg TLC reads for `run` (generated into build/cfg/ if it is not a checked-in one)
    and the temporal properties it checks."""
    base = (spec_dir / run.cfg).read_text()
    text, temporal = render_cfg(run, base)
    if not run.generated:
        return spec_dir / run.cfg, temporal
    cfg_path = build / "cfg" / f"{run.name}.cfg"
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(text)
    return cfg_path, temporal
