"""The enums and error codes of schema/: the coherence core's port enums (schema/core.json) and the
memory server's error codes (schema/messages.json "msErrors"), for Python, and their generated forms:

    python -m apta.schema c --out build/gen/apta_enums.h      # C/C++ (simulator, daemon)
    python -m apta.schema go [--out FILE]                      # Go (scheduler-plugin/pkg/schema)
    python -m apta.schema docs [--check]                       # the forms checked in: the tables in
                                                               #   rtl/CORE.md, rtl/MEMSERVER.md; the Go file

The Scala form (ChiselEnum objects, MsErrCode, ParamDefaults) is part of the generated Messages.scala
(`python -m apta.messages scala`), so the RTL build regenerates it from schema/ every time. The Go form
is checked in (`go build` runs no generator), so `docs` writes it and `docs --check` finds it stale.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

from .paths import ROOT, SCHEMA, emit

CORE_PATH = SCHEMA / "core.json"
MESSAGES_PATH = SCHEMA / "messages.json"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


class SchemaError(ValueError):
    """A malformed schema file: the message names the file and the field."""


@lru_cache(maxsize=None)
def _core(path: Path | None = None) -> dict:
    path = path or CORE_PATH
    raw = json.loads(path.read_text())
    for name, e in raw.get("enums", {}).items():
        vals = [v[0] for v in e.get("values", [])]
        if not _NAME.match(name) or not vals or len(set(vals)) != len(vals) or not all(map(_NAME.match, vals)):
            raise SchemaError(f"{path}: enums.{name}: needs a name and distinct alphanumeric values")
    return raw


@lru_cache(maxsize=None)
def _ms_errors(path: Path | None = None) -> tuple:
    path = path or MESSAGES_PATH
    raw = json.loads(path.read_text())
    codes = raw["msErrors"]["codes"]
    width = raw["fields"]["code"]["width"]
    seen: set = set()
    for i, c in enumerate(codes):
        where = f"{path}: msErrors.codes[{i}]"
        if not _NAME.match(c.get("name", "")) or not isinstance(c.get("code"), int):
            raise SchemaError(f"{where}: needs a name and an integer code")
        if not 0 < c["code"] < (1 << width) or c["code"] in seen:
            raise SchemaError(f"{where}: code {c['code']} duplicate or outside 1..{(1 << width) - 1} "
                              f"(fields.code.width {width})")
        seen.add(c["code"])
    obj = sorted(c["code"] for c in codes if c["answer"] == "ObjErr")
    lo, hi = raw["fields"]["code"]["min"], raw["fields"]["code"]["max"]
    if not obj or obj[0] != lo or obj[-1] != hi:
        raise SchemaError(f"{path}: fields.code range {lo}..{hi} must span exactly the msErrors answered "
                          f"ObjErr ({obj})")
    return tuple(codes), width


def enum(name: str) -> tuple[str, ...]:
    """The names of enum `name` in encoding order (index = value)."""
    try:
        return tuple(v[0] for v in _core()["enums"][name]["values"])
    except KeyError:
        raise SchemaError(f"{CORE_PATH}: no enum {name!r} (known: {', '.join(_core()['enums'])})") from None


def enums() -> dict[str, tuple[str, ...]]:
    return {n: enum(n) for n in _core()["enums"]}


def ms_errors() -> dict[int, str]:
    """memory-server error code -> name"""
    return {c["code"]: c["name"] for c in _ms_errors()[0]}


def ms_error_code(name: str) -> int:
    for c in _ms_errors()[0]:
        if c["name"] == name:
            return c["code"]
    raise SchemaError(f"{MESSAGES_PATH}: no msErrors code named {name!r}")


def params() -> dict[str, int]:
    """The RTL's default geometry and limits (schema/params.json) and message-field parameters
    (schema/messages.json "parameters"), name -> value."""
    raw = json.loads((SCHEMA / "params.json").read_text())
    out = {k: v["default"] for k, v in json.loads(MESSAGES_PATH.read_text())["parameters"].items()}
    out.update({k: v["default"] for k, v in raw["parameters"].items()})
    return out


VARIANTS_PATH = "rtl/variants.json"   # under ROOT: Elaborate's parameter sets


def variant_params(name: str) -> dict[str, int]:
    """The parameters of RTL variant `name` (rtl/variants.json) that schema/ defines: params() with the
    variant's overrides, as Elaborate resolves them. A boolean switch (mutantPort) is not a parameter
    here; any other name schema/ lacks is an error."""
    path = ROOT / VARIANTS_PATH
    for v in json.loads(path.read_text())["variants"]:
        if v.get("name") == name:
            out = params()
            for k, val in v.get("params", {}).items():
                if isinstance(val, bool):
                    continue
                if k not in out or not isinstance(val, int):
                    raise SchemaError(f"{path}: variant {name}: parameter {k!r} is not an integer of schema/")
                out[k] = val
            return out
    raise SchemaError(f"{path}: no variant {name!r}")


def load_sim_params(path) -> dict:
    """sim/params.json with every {"schema": NAME} entry given its "value" from params() (the same
    resolution as apta-sim's Params::load)."""
    raw = json.loads(Path(path).read_text())
    ps = params()
    for sec, entries in raw.items():
        if not isinstance(entries, dict):
            continue
        for key, e in entries.items():
            if isinstance(e, dict) and "schema" in e:
                if e["schema"] not in ps:
                    raise SchemaError(f"{path}: {sec}.{key}: schema parameter {e['schema']!r} is not in schema/")
                e["value"] = ps[e["schema"]]
    return raw


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


# ---- Scala (appended to the generated Messages.scala) -------------------------------------------
def gen_scala() -> str:
    L = ["", "// ---- schema/core.json: the coherence core's port enums (rtl/CORE.md) ----", ""]
    for name, e in _core()["enums"].items():
        # a ChiselEnum whose values are the schema's encodings (the ports stay UInt of its width)
        L.append(f"/** `{e['port']}`: {e['doc']} */")
        L.append(f"object {name} extends ChiselEnum {{")
        for i, (v, doc) in enumerate(e["values"]):
            L.append(f"  val {v} = Value({i}.U)  // {doc}")
        L.append("}")
        L.append("")
    L += ["// ---- schema/params.json + schema/messages.json parameters: AptaParams' defaults ----", "",
          "object ParamDefaults {"]
    for k, v in params().items():
        L.append(f"  val {k} = {v}")
    L += ["}", ""]
    codes, width = _ms_errors()
    L += ["// ---- schema/messages.json msErrors: the memory server's error port (rtl/MEMSERVER.md) ----", "",
          "object MsErrCode {", f"  val width = {width}"]
    for c in codes:
        L.append(f"  val {c['name']} = {c['code']}  // answer: {c['answer']}; {c['cause']}")
    L.append("  val all: Seq[(String, Int)] = Seq(" + ", ".join(f'"{c["name"]}" -> {c["name"]}' for c in codes) + ")")
    L += ["}", ""]
    return "\n".join(L)


# ---- C / C++ ------------------------------------------------------------------------------------
def gen_c() -> str:
    L = ["/* GENERATED by `python -m apta.schema c` from schema/core.json and schema/messages.json: do not",
         "   edit. The coherence core's port enums and the memory server's error codes. */",
         "#ifndef APTA_ENUMS_H", "#define APTA_ENUMS_H", ""]
    for name, e in _core()["enums"].items():
        up = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
        L.append(f"/* {e['port']}: {e['doc']} */")
        for i, (v, _doc) in enumerate(e["values"]):
            L.append(f"#define APTA_{up}_{v.upper()} {i}")
        L.append(f"#define APTA_{up}_COUNT {len(e['values'])}")
        L.append(f"static const char* const APTA_{up}_NAME[{len(e['values'])}] = {{" +
                 ", ".join(f'"{v}"' for v, _ in e["values"]) + "};")
        L.append("")
    codes, width = _ms_errors()
    L.append(f"/* memory-server error codes (io_err_bits_code, {width} bits) */")
    for c in codes:
        L.append(f"#define APTA_ERR_{re.sub(r'(?<!^)(?=[A-Z])', '_', c['name']).upper()} {c['code']}")
    names = ["none"] + ["?"] * ((1 << width) - 1)
    for c in codes:
        names[c["code"]] = c["name"]
    L.append(f"static const char* const APTA_ERR_NAME[{1 << width}] = {{" + ", ".join(f'"{n}"' for n in names) + "};")
    L += ["", "#endif", ""]
    return "\n".join(L)


# ---- Go (checked in: scheduler-plugin/pkg/schema) -----------------------------------------------
GO_FILE = "scheduler-plugin/pkg/schema/schema_generated.go"   # under ROOT
# The RTL variants the Go code mirrors: msemu, the CXL emulation's memory server (the daemon's
# VARIANT), whose allocator the conforming control plane copies (pkg/controlplane/alloc.go).
GO_VARIANTS = ("msemu",)


def _go_ident(name: str) -> str:
    return name[:1].upper() + name[1:]


def _go_comment(text: str, indent: str = "") -> list[str]:
    """text as // lines of at most 100 columns."""
    out, line = [], ""
    for w in text.split():
        if line and len(indent) + 3 + len(line) + 1 + len(w) > 100:
            out.append(f"{indent}// {line}")
            line = w
        else:
            line = f"{line} {w}" if line else w
    return out + ([f"{indent}// {line}"] if line else [])


def gen_go() -> str:
    L = ["// Code generated by `python -m apta.schema go` from schema/core.json, schema/params.json,",
         "// schema/messages.json and rtl/variants.json. DO NOT EDIT.", "",
         "// Package schema is schema/'s facts for Go: the coherence core's port enums (schema/core.json,",
         "// values = the RTL's encodings, names = the wire's spelling) and the memory server's parameters,",
         "// their defaults and the RTL variants the Go code mirrors.",
         "package schema", "", 'import "strconv"', ""]
    core = _core()["enums"]
    for name, e in core.items():
        L += _go_comment(f"{name} is `{e['port']}`: {e['doc']}.")
        L += [f"type {name} uint8", "", "const ("]
        for i, (v, doc) in enumerate(e["values"]):
            L += _go_comment(doc, "\t")   # a comment line ends gofmt's alignment: none to pad
            L.append(f"\t{name}{_go_ident(v)} {name} = {i}")
        L += [")", "",
              f"// {name}Count is the number of {name} values.",
              f"const {name}Count = {len(e['values'])}", "",
              "// String is the schema's name of v.",
              f'func (v {name}) String() string {{ return enumName(enumNames["{name}"], int(v), "{name}") }}',
              ""]
    L.append("// enumNames is each enum's names in encoding order (index = value).")
    L.append("var enumNames = map[string][]string{")
    width = max(len(n) for n in core) + 3
    for name, e in core.items():
        key = f'"{name}":'
        L.append(f"\t{key.ljust(width)} {{" + ", ".join(f'"{v}"' for v, _ in e["values"]) + "},")
    L += ["}", "",
          "func enumName(names []string, v int, enum string) string {",
          "\tif v >= 0 && v < len(names) {", "\t\treturn names[v]", "\t}",
          '\treturn enum + "(" + strconv.Itoa(v) + ")"', "}", ""]
    docs = {k: v["doc"] for k, v in json.loads(MESSAGES_PATH.read_text())["parameters"].items()}
    docs.update({k: v["doc"] for k, v in json.loads((SCHEMA / "params.json").read_text())["parameters"].items()})
    defaults = params()
    L += _go_comment("Params is the memory server's geometry and limits: rtl/AptaParams.scala's parameters as "
                     'schema/params.json and schema/messages.json ("parameters") define them.')
    L.append("type Params struct {")
    for k in defaults:
        L += _go_comment(docs[k], "\t")
        L.append(f"\t{_go_ident(k)} int")
    L += ["}", ""]

    def literal(var: str, values: dict) -> list[str]:
        w = max(len(_go_ident(k)) for k in values) + 1
        return [f"var {var} = Params{{"] + [f"\t{(_go_ident(k) + ':').ljust(w)} {v}," for k, v in values.items()] + ["}", ""]

    L.append("// Defaults is AptaParams' defaults (the default variant's).")
    L += literal("Defaults", defaults)
    for name in GO_VARIANTS:
        vp = variant_params(name)
        over = [k for k in vp if vp[k] != defaults[k]]
        L += _go_comment(f"{_go_ident(name)} is the RTL variant {name} (rtl/variants.json): Defaults with "
                         f"{', '.join(over) if over else 'nothing'} overridden.")
        L += literal(_go_ident(name), vp)
    return "\n".join(L)


# ---- the tables in the contracts (rtl/CORE.md, rtl/MEMSERVER.md) --------------------------------
def _md_errors() -> str:
    rows = ["| code | name | cause | answer to the sender |", "|---|---|---|---|"]
    for c in _ms_errors()[0]:
        rows.append(f"| {c['code']} | {c['name']} | {c['cause']} | {c['answer']} |")
    return "\n".join(rows)


def _md_enums() -> str:
    rows = ["| enum | port | encoding |", "|---|---|---|"]
    for name, e in _core()["enums"].items():
        rows.append(f"| {name} | `{e['port']}` | " + ", ".join(f"{i} {v}" for i, (v, _) in enumerate(e["values"])) + " |")
    return "\n".join(rows)


def _md_map_codes() -> str:
    e = _core()["enums"]["MapUpdCode"]
    rows = ["| code | name | meaning |", "|---|---|---|"]
    for i, (v, doc) in enumerate(e["values"]):
        rows.append(f"| {i} | {v} | {doc} |")
    return "\n".join(rows)


DOC_TABLES = {  # marker name -> (file, generator)
    "ms-errors": (ROOT / "rtl" / "MEMSERVER.md", _md_errors),
    "map-codes": (ROOT / "rtl" / "MEMSERVER.md", _md_map_codes),
    "core-enums": (ROOT / "rtl" / "CORE.md", _md_enums),
}


# Generated files kept in the tree, path under ROOT -> generator: `docs` writes and checks them with
# the tables, so the drift test of the tables covers them too.
CHECKED_IN = {GO_FILE: gen_go}


def sync_docs(check: bool) -> list[str]:
    """Rewrite (or, with check, compare) each generated table between `<!-- schema:NAME -->` and
    `<!-- /schema:NAME -->`, and each file of CHECKED_IN; returns the files that differ."""
    stale = []
    for rel, gen in CHECKED_IN.items():
        path = ROOT / rel
        text = gen()
        if not path.exists() or path.read_text() != text:
            stale.append(rel)
            if not check:
                emit(text, str(path))
    for name, (path, gen) in DOC_TABLES.items():
        text = path.read_text()
        pat = re.compile(rf"(<!-- schema:{name} -->\n)(?:.*?\n)?(<!-- /schema:{name} -->)", re.S)
        if not pat.search(text):
            raise SchemaError(f"{path}: no <!-- schema:{name} --> ... <!-- /schema:{name} --> markers")
        new = pat.sub(lambda m: m.group(1) + gen() + "\n" + m.group(2), text)
        if new != text:
            stale.append(f"{path.relative_to(ROOT)} ({name})")
            if not check:
                path.write_text(new)
    return stale


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["c", "go", "docs", "print"])
    ap.add_argument("--out", help="c, go: output file (default stdout)")
    ap.add_argument("--check", action="store_true", help="docs: fail if a table or checked-in file is out of date")
    a = ap.parse_args(argv)
    if a.what in ("c", "go"):
        emit(gen_c() if a.what == "c" else gen_go(), a.out)
    elif a.what == "docs":
        stale = sync_docs(a.check)
        if stale and a.check:
            print("out of date (run `python -m apta.schema docs`): " + ", ".join(stale), file=sys.stderr)
            return 1
        print(("rewrote: " + ", ".join(stale)) if stale else "tables up to date")
    else:
        for n, vals in enums().items():
            print(f"{n:12} {', '.join(vals)}")
        print("msErrors     " + ", ".join(f"{k} {v}" for k, v in ms_errors().items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
