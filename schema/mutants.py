#!/usr/bin/env python3
"""schema/mutants.json, the mutant registry: checked against every layer, and the README tables.

    python3 schema/mutants.py --check   # every layer's mutants, their runs and tests agree with the
                                        #   registry, and the README tables are current (the default)
    python3 schema/mutants.py --write   # regenerate the README tables from the registry
    python3 schema/mutants.py --list    # the registry: one line per bug, its switch in each layer

The registry has one entry per deliberate bug (a canonical name, what the bug is) and, for each layer
that has the bug, that layer's switch spelled as the layer spells it, and what must reject it: for
the model checkers (murphi, tla) every run of the switch with its configuration and the property the
checker must report violated; for the others the tests that must fail on it. The layers' own lists
are read from their sources (below, one reader per layer); the check fails when a layer has a mutant
the registry lacks, the registry names one the layer lacks, or a run's configuration, property or
a mutant's catching tests differ from what the layer's own files say. The README tables sit between
`<!-- mutants:begin LAYER -->` and `<!-- mutants:end -->`. Standard library only.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "schema" / "mutants.json"

MODEL_LAYERS = ("murphi", "tla")                 # entries with "runs"; the others have "caught_by"
ENTRY_KEYS = {"switch", "runs", "caught_by", "note", "id", "unit"}
RUN_KEYS = {"config", "fails", "note", "full"}


class RegistryError(Exception):
    pass


# ------------------------------------------------------------------------------------------------
# the registry
# ------------------------------------------------------------------------------------------------
def load(path: Path = REGISTRY) -> dict:
    try:
        reg = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise RegistryError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    problems = validate(reg)
    if problems:
        raise RegistryError(f"{path}:\n  " + "\n  ".join(problems))
    return reg


def validate(reg: dict) -> list[str]:
    """The registry's own shape: every bug described, every layer entry complete."""
    out = []
    layers = reg.get("layers")
    bugs = reg.get("bugs")
    if not isinstance(layers, dict) or not isinstance(bugs, dict):
        return ["needs the objects 'layers' and 'bugs'"]
    for name, b in bugs.items():
        if not isinstance(b.get("bug"), str) or not b["bug"].strip():
            out.append(f"bugs.{name}: no one-line 'bug' description")
        present = [k for k in b if k != "bug"]
        if not present:
            out.append(f"bugs.{name}: in no layer")
        for lname in present:
            e = b[lname]
            where = f"bugs.{name}.{lname}"
            if lname not in layers:
                out.append(f"{where}: unknown layer (layers: {', '.join(layers)})")
                continue
            if not isinstance(e, dict) or not isinstance(e.get("switch"), str):
                out.append(f"{where}: needs a 'switch'")
                continue
            bad = set(e) - ENTRY_KEYS
            if bad:
                out.append(f"{where}: unknown field(s) {sorted(bad)}")
            if lname in MODEL_LAYERS:
                runs = e.get("runs")
                if not isinstance(runs, dict) or not runs:
                    out.append(f"{where}: needs 'runs' (run name -> config and the property it fails)")
                    continue
                for rname, r in runs.items():
                    if not isinstance(r, dict) or not {"config", "fails"} <= set(r) or set(r) - RUN_KEYS:
                        out.append(f"{where}.runs.{rname}: needs 'config' and 'fails' (optional: note, full)")
            elif not isinstance(e.get("caught_by"), list) or not e["caught_by"]:
                out.append(f"{where}: needs 'caught_by' (the tests that must fail on it)")
    return out


def entries(reg: dict, layer: str) -> dict[str, dict]:
    """bug name -> that bug's entry in `layer`."""
    return {b: e[layer] for b, e in reg["bugs"].items() if layer in e}


# ------------------------------------------------------------------------------------------------
# the layers, read from their sources
# ------------------------------------------------------------------------------------------------
# Each reader returns {"where": what it read, "switches": {switch: attrs}, and optionally "runs":
# {run: {"switch", "config", "fails"[, "full"]}} (model checkers) and "lists": {label: [switches]}
# (other places of the layer that list its mutants, which must name the same ones)}. attrs may hold
# "id" and "unit" (rtl) and "caught_by" (the tests the layer's own files make catch the switch).
def _read(root: Path, rel: str) -> str:
    path = root / rel
    if not path.exists():
        raise RegistryError(f"{rel}: missing (the registry's reader needs it)")
    return path.read_text()


def read_murphi(root: Path) -> dict:
    src = _read(root, "spec/murphi/apta.m")
    switches = set(re.findall(r"^\s*(M_[A-Z0-9_]+)\s*:\s*\d+\s*;", src, re.M)) - {"M_NONE"}
    checks = json.loads(_read(root, "spec/murphi/checks.json"))
    runs = {n: {"switch": m.get("switch"), "config": m.get("config"), "fails": m.get("expected")}
            for n, m in checks.get("mutants", {}).items()}
    return {"where": "spec/murphi/apta.m's M_* constants", "runs_where": "spec/murphi/checks.json",
            "switches": {s: {} for s in switches}, "runs": runs}


def read_tla(root: Path) -> dict:
    src = _read(root, "spec/tla/Apta.tla")
    m = re.search(r"^Mutants\s*==\s*\{([^}]*)\}", src, re.M)
    if not m:
        raise RegistryError("spec/tla/Apta.tla: no `Mutants == {...}` definition")
    switches = set(re.findall(r'"([^"]+)"', m.group(1))) - {"none"}
    runs = {}
    for node in ast.walk(ast.parse(_read(root, "spec/tla/check.py"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "mutant":
            try:
                name, cfg, sw, expected = (ast.literal_eval(a) for a in node.args[:4])
                kw = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg == "full"}
            except ValueError:
                raise RegistryError(f"spec/tla/check.py:{node.lineno}: a mutant(...) whose name, cfg, "
                                    f"switch or property is not a literal") from None
            runs[name] = {"switch": sw, "config": cfg, "fails": expected, "full": bool(kw.get("full"))}
    return {"where": "spec/tla/Apta.tla's Mutants", "runs_where": "spec/tla/check.py's mutant(...) runs",
            "switches": {s: {} for s in switches}, "runs": runs}


RTL_MUTANT = re.compile(r'=\s*Mutant\(\s*(\d+)\s*,\s*"([^"]+)"\s*,\s*"(?:[^"\\]|\\.)*"\s*(?:,\s*"(\w+)"\s*)?\)')
RTL_TESTS = {"core": "tests/rtl/test_core_mutants.py::test_mutants_caught",       # takes unit "core"
             "ms": "tests/rtl/test_ms_mutants.py::test_ms_mutants_caught",         # takes unit "ms"
             "epoch": "tests/rtl/test_core_epochs.py::test_epoch_mutant_caught",   # takes unit "epoch"
             "sram": "tests/rtl/test_core_sram.py::test_forwarding_is_needed_only_with_a_read_first_sram"}
RTL_MS_VECTORS = "tests/rtl/test_ms_vectors.py::test_ms_vectors_catch_mutants"   # its `must` set


def read_rtl(root: Path) -> dict:
    src = _read(root, "rtl/Mutants.scala")
    found = RTL_MUTANT.findall(src)
    if len(found) != len(re.findall(r"=\s*Mutant\(", src)):
        raise RegistryError("rtl/Mutants.scala: a `= Mutant(...)` the reader cannot parse "
                            "(id, \"name\", \"doc\"[, \"unit\"] with one string literal each)")
    vec = _read(root, "tests/rtl/test_ms_vectors.py")
    m = re.search(r"\bmust\s*=\s*\{([^}]*)\}", vec)
    must = set(re.findall(r'"([^"]+)"', m.group(1))) if m else set()
    switches = {}
    for mid, name, unit in found:
        unit = unit or "core"
        tests = {RTL_TESTS[unit]} if unit in RTL_TESTS else set()
        if name in must:
            tests.add(RTL_MS_VECTORS)
        switches[name] = {"id": int(mid), "unit": unit, "caught_by": tests}
    unknown = must - set(switches)
    lists = {"tests/rtl/test_ms_vectors.py's must set": sorted(must)} if unknown else {}
    return {"where": "rtl/Mutants.scala", "switches": switches, "lists": lists, "subset_lists": True}


def _parametrized(test_src: str, needle: str) -> list[tuple[str, str]]:
    """(decorator text, test function) of every parametrized test whose decorator contains needle."""
    out = []
    for m in re.finditer(r"@pytest\.mark\.parametrize\((.*?)\)\s*\ndef (\w+)", test_src, re.S):
        if needle in m.group(1):
            out.append((m.group(1), m.group(2)))
    return out


def read_sim(root: Path) -> dict:
    cpp = _read(root, "sim/src/directory.cpp")
    names = re.findall(r'if \(s == "([^"]+)"\) return Mutant::\w+;', cpp)
    lists = {}
    known = re.search(r"unknown mutant[^(]*\(known: ([^)]*)\)", cpp)
    if known:
        lists["directory.cpp's 'known:' message"] = [s.strip() for s in known.group(1).split(",")]
    hpp = re.search(r"parse_mutant\(const std::string& s\);\s*//([^\n]*)", _read(root, "sim/src/directory.hpp"))
    if hpp:
        lists["directory.hpp's parse_mutant comment"] = [s for s in re.findall(r'"([^"]*)"', hpp.group(1)) if s]
    usage = re.search(r'"[^"\n]*--mutant ([\w|]+)\]', _read(root, "sim/src/main.cpp"))   # the usage string
    if usage:
        lists["main.cpp's usage"] = usage.group(1).split("|")
    tested = {}
    for deco, fn in _parametrized(_read(root, "tests/test_sim.py"), '"mutant,'):
        for n in re.findall(r'\(\s*"([^"]+)"\s*,', deco):
            tested.setdefault(n, set()).add(f"tests/test_sim.py::{fn}[{n}]")
    # the dataflow scenarios' mutants (a scenario's "mutant", sim/src/model.cpp). Each list names
    # one of the two kinds; it is completed with the other kind's switches, so that it must still
    # name every one of its own
    model = _read(root, "sim/src/model.cpp")
    scen = re.findall(r's\.mutant != "(\w+)"', model)
    vec = [n for n in names if n not in ("", "none")]
    lists = {k: v + scen for k, v in lists.items()}
    msg = re.search(r'\.mutant: ([^"]*)got', model)
    if msg:
        lists["model.cpp's scenario mutant message"] = re.findall(r"'(\w+)'", msg.group(1)) + vec
    return {"where": "sim/src/directory.cpp's parse_mutant and model.cpp's scenario mutants",
            "switches": {n: {"caught_by": tested.get(n, set())} for n in vec + scen}, "lists": lists}


def read_daemon(root: Path) -> dict:
    src = _read(root, "qemu-cxl/daemon/memd.cpp")
    i = src.find('a == "--mutant"')
    if i < 0:
        return {"where": "qemu-cxl/daemon/memd.cpp", "switches": {}}
    names = re.findall(r'\bm\s*[!=]=\s*"([^"]+)"', src[i:i + 600])
    lists = {"memd.cpp's usage": re.findall(r"--mutant ([a-z0-9][a-z0-9-]*)", src)}
    tested = {}
    for deco, fn in _parametrized(_read(root, "tests/test_runner.py"), '"--mutant"'):
        ids = re.search(r"ids=\[([^\]]*)\]", deco)
        ids = re.findall(r'"([^"]+)"', ids.group(1)) if ids else []
        for n in re.findall(r'"--mutant",\s*"([^"]+)"', deco):
            for pid in [p for p in ids if n in p] or [n]:
                tested.setdefault(n, set()).add(f"tests/test_runner.py::{fn}[{pid}]")
    return {"where": "qemu-cxl/daemon/memd.cpp's --mutant",
            "switches": {n: {"caught_by": tested.get(n, set())} for n in names}, "lists": lists}


def read_scheduler(root: Path) -> dict:
    src = _read(root, "scheduler-plugin/test/e2e/daemon_test.go")
    sw = {}
    for var, off in re.findall(r'os\.Getenv\("(APTA_E2E_PLUGIN)"\)\s*!=\s*"(\w+)"', src):
        sw[f"{var}={off}"] = {}
    return {"where": "scheduler-plugin/test/e2e/daemon_test.go", "switches": sw}


def read_fuzz(root: Path) -> dict:
    mk = _read(root, "qemu-cxl/daemon/Makefile")
    m = re.search(r"^FUZZ_MUTANTS := (.*)$", mk, re.M)
    names = m.group(1).split() if m else []
    lists = {"the Makefile's MUTANT_FLAG_<name>": re.findall(r"^MUTANT_FLAG_([\w-]+) :=", mk, re.M)}
    test = _read(root, "tests/test_daemon_fuzz.py")
    block = re.search(r"^MUTANTS = \{(.*?)^\}", test, re.M | re.S)
    tested = set(re.findall(r'^\s+"([\w-]+)": \(', block.group(1), re.M)) if block else set()
    fn = "tests/test_daemon_fuzz.py::test_mutant_fails_on_its_reproducer"
    return {"where": "qemu-cxl/daemon/Makefile's FUZZ_MUTANTS",
            "switches": {n: {"caught_by": {f"{fn}[{n}]"} if n in tested else set()} for n in names},
            "lists": lists}


def read_gem5(root: Path) -> dict:
    cc = _read(root, "sim/gem5/apta_mem_server.cc")
    names = re.findall(r'p\.mutant == "(\w+)"', cc)
    lists = {"run_apta.py's --mutant check": re.findall(r'args\.mutant != "(\w+)"',
                                                        _read(root, "sim/gem5/configs/run_apta.py"))}
    tested = {}
    for deco, fn in _parametrized(_read(root, "tests/test_gem5.py"), '"mutant"'):
        for n in re.findall(r'"(\w+)"', deco):
            if n in names:
                tested.setdefault(n, set()).add(f"tests/test_gem5.py::{fn}[{n}]")
    return {"where": "sim/gem5/apta_mem_server.cc's mutant parameter",
            "switches": {n: {"caught_by": tested.get(n, set())} for n in names}, "lists": lists}


READERS = {"murphi": read_murphi, "tla": read_tla, "rtl": read_rtl, "sim": read_sim,
           "daemon": read_daemon, "fuzz": read_fuzz, "scheduler": read_scheduler, "gem5": read_gem5}


def read_layers(root: Path = ROOT) -> dict[str, dict]:
    return {name: fn(root) for name, fn in READERS.items()}


# ------------------------------------------------------------------------------------------------
# the comparison
# ------------------------------------------------------------------------------------------------
def resolve_test(root: Path, ref: str) -> str | None:
    """A test reference `path::function[param]` (pytest) or `path::TestFunc/subtest` (Go) must
    exist: the file, the function, the parameter id or subtest name. Returns a problem or None."""
    if "::" not in ref:
        return f"{ref}: not a test reference (path::test)"
    path, test = ref.split("::", 1)
    f = root / path
    if not f.exists():
        return f"{ref}: no file {path}"
    src = f.read_text()
    m = re.fullmatch(r"(\w+)(?:\[([^\]]+)\]|/([\w-]+))?", test)
    if not m:
        return f"{ref}: cannot read the test name"
    fn, param, sub = m.groups()
    if not re.search(rf"^(?:async )?def {fn}\(|^func {fn}\(", src, re.M):
        return f"{ref}: {path} defines no test {fn}"
    if param and f'"{param}"' not in src:
        return f"{ref}: {path} has no parameter id {param!r}"
    if sub and f't.Run("{sub}"' not in src:
        return f"{ref}: {path} has no subtest {sub!r}"
    return None


def compare(reg: dict, layers: dict[str, dict], root: Path = ROOT) -> list[str]:
    """Every difference between the registry and the layers' own lists, one line each."""
    out = []
    for lname, actual in layers.items():
        mine = entries(reg, lname)
        by_switch: dict[str, list[str]] = {}
        for bug, e in mine.items():
            by_switch.setdefault(e["switch"], []).append(bug)
        for sw, bugs in by_switch.items():
            if len(bugs) > 1:
                out.append(f"{lname}: switch {sw} is registered under several bugs: {', '.join(bugs)}")
        have = actual["switches"]
        for sw in sorted(set(have) - set(by_switch)):
            out.append(f"{lname}: {sw} ({actual['where']}) is missing from the registry "
                       f"(add it to a bug of schema/mutants.json)")
        for sw in sorted(set(by_switch) - set(have)):
            out.append(f"{lname}: the registry's bug {by_switch[sw][0]} names {sw}, which "
                       f"{actual['where']} does not have")
        for label, names in actual.get("lists", {}).items():
            extra, missing = set(names) - set(have), set(have) - set(names)
            if extra or (missing and not actual.get("subset_lists")):
                out.append(f"{lname}: {label} lists {sorted(names)}, {actual['where']} has {sorted(have)}")
        for sw, attrs in sorted(have.items()):
            if sw not in by_switch:
                continue
            bug = by_switch[sw][0]
            e = mine[bug]
            for k in ("id", "unit"):
                if k in attrs and e.get(k) != attrs[k]:
                    out.append(f"{lname}: {sw}: {k} is {attrs[k]!r} in {actual['where']}, "
                               f"{e.get(k)!r} in the registry (bug {bug})")
            if "caught_by" in attrs and set(e.get("caught_by", [])) != attrs["caught_by"]:
                out.append(f"{lname}: {sw}: the layer's tests that must catch it are "
                           f"{sorted(attrs['caught_by']) or 'none'}, the registry (bug {bug}) says "
                           f"{sorted(e.get('caught_by', []))}")
        if "runs" in actual:
            want = {r: (bug, e["switch"], spec) for bug, e in mine.items()
                    for r, spec in e.get("runs", {}).items()}
            runs, where = actual["runs"], actual.get("runs_where", actual["where"])
            for r in sorted(set(runs) - set(want)):
                out.append(f"{lname}: run {r} (switch {runs[r]['switch']}, {where}) is missing "
                           f"from the registry")
            for r in sorted(set(want) - set(runs)):
                out.append(f"{lname}: the registry's run {r} (bug {want[r][0]}) is not one of {where}")
            for r in sorted(set(want) & set(runs)):
                bug, sw, spec = want[r]
                got = runs[r]
                expect = {"switch": sw, "config": spec["config"], "fails": spec["fails"]}
                if "full" in got:
                    expect["full"] = bool(spec.get("full", False))
                for k, v in expect.items():
                    if got.get(k) != v:
                        what = {"fails": "the property it must violate", "config": "its configuration",
                                "switch": "its switch", "full": "full (every invariant)"}[k]
                        out.append(f"{lname}: run {r}: {what} is {got.get(k)!r} in {where}, "
                                   f"{v!r} in the registry (bug {bug})")
    for bug, b in reg["bugs"].items():
        for lname, e in b.items():
            if lname == "bug" or not isinstance(e, dict):
                continue
            for ref in e.get("caught_by", []):
                p = resolve_test(root, ref)
                if p:
                    out.append(f"bug {bug} ({lname}): {p}")
    return out


# ------------------------------------------------------------------------------------------------
# the README tables
# ------------------------------------------------------------------------------------------------
BEGIN, END = "<!-- mutants:begin {} -->", "<!-- mutants:end -->"
BLOCK = re.compile(r"<!-- mutants:begin (\w+) -->\n(.*?)<!-- mutants:end -->", re.S)
NOTICE = "<!-- generated from schema/mutants.json by `python3 schema/mutants.py --write`: edit the registry, not this table -->"


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def _code(s: str) -> str:
    return f"`{s}`"


def _elsewhere(reg: dict, bug: str, layer: str) -> str:
    parts = []
    for lname, e in reg["bugs"][bug].items():
        if lname in ("bug", layer) or not isinstance(e, dict):
            continue
        label = reg["layers"][lname].get("label", lname)
        parts.append(f"{label} {e['id']} {_code(e['switch'])}" if "id" in e else f"{label} {_code(e['switch'])}")
    return "; ".join(parts) or "—"


def _what(reg: dict, bug: str, e: dict, run: dict | None = None) -> str:
    text = reg["bugs"][bug]["bug"]
    if e.get("note"):                         # how this layer's switch differs from the bug as stated
        text += f" (here: {e['note']})"
    if (run or {}).get("note"):               # what this run of the switch adds
        text += f"; {run['note']}"
    return _cell(text)


def _test(ref: str) -> str:
    path, test = ref.split("::", 1)
    return _code(f"{path.rsplit('/', 1)[-1]}::{test}")


def render(reg: dict, layer: str) -> str:
    """The table of `layer`'s mutants (markdown, without the markers)."""
    mine = entries(reg, layer)
    rows: list[list[str]] = []
    if layer == "murphi":
        # one row per switch and property: its runs differ only in their configuration and are named
        # after the first (`name`, `name@config`); a run with a note of its own keeps its own row,
        # which states the bug once: a later row of the same switch gives only that note
        head = ["mutant", "switch", "run on", "the bug", "must violate", "elsewhere"]
        for bug, e in mine.items():
            groups: dict[tuple, list[str]] = {}
            for r, spec in e["runs"].items():
                groups.setdefault((spec["fails"], spec.get("note")), []).append(r)
            for k, ((fails, note), runs) in enumerate(groups.items()):
                first = runs[0]
                on = [e["runs"][r]["config"] if r in (first, f"{first}@{e['runs'][r]['config']}")
                      else f"{e['runs'][r]['config']} ({_code(r)})" for r in runs]
                what = _cell(note) if k and note else _what(reg, bug, e, e["runs"][first])
                rows.append([_code(first), _code(e["switch"]), ", ".join(on), what, _code(fails),
                             _elsewhere(reg, bug, layer)])
    elif layer == "tla":
        contract = reg["layers"]["tla"].get("contract", {})
        head = ["run", "switch", "the bug", "base", "rejected on", "elsewhere"]
        for bug, e in mine.items():
            for r, spec in e["runs"].items():
                base = spec["config"].removesuffix(".cfg") + (", full" if spec.get("full") else "")
                prop = _code(spec["fails"]) + (f" ({contract[spec['fails']]})" if spec["fails"] in contract else "")
                rows.append([r, _code(e["switch"]), _what(reg, bug, e, spec), base, prop,
                             _elsewhere(reg, bug, layer)])
    elif layer == "rtl":
        head = ["id", "mutant", "unit", "the bug", "must be caught by", "elsewhere"]
        for bug, e in sorted(mine.items(), key=lambda kv: kv[1]["id"]):
            rows.append([str(e["id"]), _code(e["switch"]), e["unit"], _what(reg, bug, e),
                         ", ".join(_test(t) for t in e["caught_by"]), _elsewhere(reg, bug, layer)])
    else:
        head = ["fuzz mutant" if layer == "fuzz" else "`--mutant`", "the bug", "must be caught by", "elsewhere"]
        for bug, e in mine.items():
            rows.append([_code(e["switch"]), _what(reg, bug, e),
                         ", ".join(_test(t) for t in e["caught_by"]), _elsewhere(reg, bug, layer)])
    lines = [NOTICE, "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def readmes(reg: dict) -> dict[str, str]:
    """layer -> the README (relative path) that carries its table."""
    return {n: l["readme"] for n, l in reg["layers"].items() if l.get("readme")}


def sync_readmes(reg: dict, root: Path = ROOT, write: bool = False) -> list[str]:
    """Compare (or, with write, rewrite) every README block with its rendering; also the rtl
    README's measured tables, whose rows start with `| <id> <name> |`."""
    out = []
    for layer, rel in readmes(reg).items():
        path = root / rel
        if not path.exists():
            out.append(f"{rel}: missing (layers.{layer}.readme)")
            continue
        text = path.read_text()
        blocks = {m.group(1): m for m in BLOCK.finditer(text)}
        if layer not in blocks:
            out.append(f"{rel}: no block {BEGIN.format(layer)} ... {END} (add the two markers, then --write)")
            continue
        want = render(reg, layer)
        if blocks[layer].group(2) != want:
            if write:
                m = blocks[layer]
                text = text[:m.start(2)] + want + text[m.end(2):]
                path.write_text(text)
                print(f"mutants.py: wrote the {layer} table of {rel}")
            else:
                out.append(f"{rel}: the {layer} mutant table differs from schema/mutants.json "
                           f"(python3 schema/mutants.py --write)")
        for other in set(blocks) - {layer}:
            if readmes(reg).get(other) != rel:
                out.append(f"{rel}: a block for layer {other!r}, whose readme is not this file")
    rtl = reg["layers"].get("rtl", {}).get("readme")
    if rtl and (root / rtl).exists():
        ids = {e["id"]: e["switch"] for e in entries(reg, "rtl").values()}
        for mid, name in re.findall(r"^\| (\d+) (\w+) \|", (root / rtl).read_text(), re.M):
            if ids.get(int(mid)) != name:
                out.append(f"{rtl}: a measured table names mutant {mid} {name}, the registry "
                           f"{mid} {ids.get(int(mid))}")
    return out


def check(root: Path = ROOT, path: Path | None = None) -> list[str]:
    """Everything --check reports (the registry's shape, the layers, the READMEs)."""
    try:
        reg = load(path or root / "schema" / "mutants.json")
        layers = read_layers(root)
    except RegistryError as e:
        return [str(e)]
    return compare(reg, layers, root) + sync_readmes(reg, root)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="compare with the layers and the READMEs (default)")
    g.add_argument("--write", action="store_true", help="regenerate the README tables")
    g.add_argument("--list", action="store_true", help="print the registry")
    ap.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    try:
        reg = load(root / "schema" / "mutants.json")
    except RegistryError as e:
        print(f"mutants.py: {e}", file=sys.stderr)
        return 1
    if args.list:
        layers = list(reg["layers"])
        for bug, b in reg["bugs"].items():
            where = ", ".join(f"{l}={b[l]['switch']}" for l in layers if l in b)
            print(f"{bug:26} {where}")
        return 0
    if args.write:
        problems = sync_readmes(reg, root, write=True)
        for p in problems:
            print(f"mutants.py: {p}", file=sys.stderr)
        return 1 if problems else 0
    problems = check(root)
    for p in problems:
        print(f"mutants.py: {p}", file=sys.stderr)
    if problems:
        print(f"mutants.py: {len(problems)} problem(s); the registry is schema/mutants.json", file=sys.stderr)
        return 1
    counts = {l: len(entries(reg, l)) for l in reg["layers"]}
    print(f"mutants.py: {len(reg['bugs'])} bugs in schema/mutants.json agree with every layer "
          f"({', '.join(f'{l} {n}' for l, n in counts.items())}) and the README tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
