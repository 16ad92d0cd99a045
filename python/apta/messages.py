#!/usr/bin/env python3
"""The apta message schema (schema/messages.json): Python codec, and the Chisel generator.

As a module (pure stdlib)::

    from apta.messages import load
    s = load()                                   # defaults of the schema; load(servers=4) overrides
    flit = s.encode("PutLine", server=3, epoch=1, obj=7, txn=2, line=5, data=0xAB)
    name, fields = s.decode(flit)                # ("PutLine", {...}); MessageError if malformed

As a script::

    python -m apta.messages scala --out build/gen/Messages.scala   # Chisel bundles + opcodes
    python -m apta.messages table                                  # layout of every message
    python -m apta.messages c --variant-params build/rtl/ms3/params.json --out build/qemu-cxl/apta_msg.h

A flit is an unsigned integer of `flit_bits` bits: the opcode in the low `opcodeBits` bits, then
the message's fields in schema order, first field lowest; bits above the last field are reserved
(zero). The Chisel side (generated below) uses exactly the same layout.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import schema
from .paths import SCHEMA, emit

SCHEMA_PATH = SCHEMA / "messages.json"


class MessageError(ValueError):
    """A malformed message. `field` names the offending field (None: the message as a whole)."""

    def __init__(self, text: str, message: str | None = None, field: str | None = None,
                 error: str = "fieldRange"):
        where = message or "message"
        if field:
            where += f".{field}"
        super().__init__(f"{where}: {text}")
        self.message, self.field, self.error = message, field, error


def _clog2(n: int) -> int:
    """Bits to index n things (at least 1), like chisel3.util.log2Up."""
    return max(1, (n - 1).bit_length())


_EXPR = re.compile(r"^\s*([A-Za-z_]\w*|\d+)\s*(?:([+-])\s*(\d+))?\s*$")


def _expr(text, env: dict) -> int:
    """A width/min/max: an int, a parameter name, or 'name +/- int'."""
    if isinstance(text, int):
        return text
    m = _EXPR.match(str(text))
    if not m:
        raise ValueError(f"schema: cannot read expression {text!r}")
    base, op, k = m.groups()
    if base.isdigit():
        v = int(base)
    elif base in env:
        v = env[base]
    else:
        raise ValueError(f"schema: unknown parameter {base!r} in {text!r}")
    if op:
        v = v + int(k) if op == "+" else v - int(k)
    return v


@dataclass(frozen=True)
class Field:
    name: str
    width: int
    lo: int          # bit offset in the flit
    min: int
    max: int
    default: int | None = None   # a field the encoder may omit (schema "default": the versioned get's version)


@dataclass(frozen=True)
class Message:
    name: str
    opcode: int
    channel: str
    fields: tuple    # of Field
    bits: int        # opcode + fields


class Schema:
    def __init__(self, raw: dict, overrides: dict | None = None):
        self.raw = raw
        params = {k: v["default"] for k, v in raw["parameters"].items()}
        for k, v in (overrides or {}).items():
            if k not in params:
                raise ValueError(f"schema: unknown parameter {k!r}")
            params[k] = int(v)
        for k, d in raw["derived"].items():
            if "clog2" in d:
                params[k] = _clog2(params[d["clog2"]])
            elif "clog2p1" in d:
                params[k] = _clog2(params[d["clog2p1"]] + 1)
            else:
                raise ValueError(f"schema: derived parameter {k!r} has no rule")
        self.params = params
        self.opcode_bits = raw["opcodeBits"]
        self.errors = {k: v["code"] for k, v in raw["errors"].items()}
        self.field_ids = {name: i + 1 for i, name in enumerate(raw["fields"])}  # 0 = no field
        self.messages: dict[str, Message] = {}
        self.by_opcode: dict[int, Message] = {}
        for m in raw["messages"]:
            lo, fields = self.opcode_bits, []
            for fname in m["fields"]:
                fd = raw["fields"][fname]
                w = _expr(fd["width"], params)
                fields.append(Field(fname, w, lo, _expr(fd.get("min", 0), params),
                                    _expr(fd.get("max", (1 << w) - 1), params), fd.get("default")))
                lo += w
            msg = Message(m["name"], m["opcode"], m["channel"], tuple(fields), lo)
            if msg.opcode in self.by_opcode or not 0 < msg.opcode < (1 << self.opcode_bits):
                raise ValueError(f"schema: bad or duplicate opcode {msg.opcode} ({msg.name})")
            self.messages[msg.name] = msg
            self.by_opcode[msg.opcode] = msg
        self.flit_bits = max(m.bits for m in self.messages.values())

    # ---- codec ---------------------------------------------------------------------------------
    def encode(self, name: str, fields: dict | None = None, **kw) -> int:
        """Pack a message into a flit; every field required (but one with a schema default, which
        an omitted field takes), each within its range."""
        vals = dict(fields or {}, **kw)
        msg = self.messages.get(name)
        if msg is None:
            raise MessageError(f"unknown message type {name!r}", name, error="badOpcode")
        known = {f.name for f in msg.fields}
        extra = sorted(set(vals) - known)
        if extra:
            raise MessageError(f"unexpected field(s) {', '.join(extra)}", name, extra[0])
        flit = msg.opcode
        for f in msg.fields:
            if f.name not in vals and f.default is None:
                raise MessageError("missing field", name, f.name)
            v = vals.get(f.name, f.default)
            if isinstance(v, bool) or not isinstance(v, int):
                raise MessageError(f"not an integer: {v!r}", name, f.name)
            if not f.min <= v <= f.max:
                raise MessageError(f"{v} out of range {f.min}..{f.max} ({f.width} bits)", name, f.name)
            flit |= v << f.lo
        return flit

    def decode(self, flit: int) -> tuple[str, dict]:
        """Unpack a flit; MessageError (with .error = the schema's error name) if malformed."""
        if isinstance(flit, bool) or not isinstance(flit, int) or flit < 0:
            raise MessageError(f"flit must be a non-negative integer, got {flit!r}", error="reservedBits")
        if flit >> self.flit_bits:
            raise MessageError(f"flit wider than {self.flit_bits} bits", error="reservedBits")
        op = flit & ((1 << self.opcode_bits) - 1)
        msg = self.by_opcode.get(op)
        if msg is None:
            raise MessageError(f"unknown opcode {op}", field="opcode", error="badOpcode")
        out = {}
        for f in msg.fields:
            v = (flit >> f.lo) & ((1 << f.width) - 1)
            if not f.min <= v <= f.max:
                raise MessageError(f"{v} out of range {f.min}..{f.max}", msg.name, f.name)
            out[f.name] = v
        if flit >> msg.bits:
            raise MessageError(f"reserved bits {msg.bits}..{self.flit_bits - 1} not zero",
                               msg.name, error="reservedBits")
        return msg.name, out

    def check(self, flit: int) -> tuple[int, int]:
        """(error code, field id) exactly as the RTL decoder reports them (0, 0 when legal)."""
        try:
            self.decode(flit)
            return 0, 0
        except MessageError as e:
            return self.errors[e.error], self.field_ids.get(e.field, 0)


def load(path: Path | str = SCHEMA_PATH, **overrides) -> Schema:
    return Schema(json.loads(Path(path).read_text()), overrides)


# ---- Chisel generator --------------------------------------------------------------------------
def _scala_expr(text) -> str:
    """Schema expression -> Scala over the implicit AptaParams `p`."""
    if isinstance(text, int):
        return str(text)
    base, op, k = _EXPR.match(str(text)).groups()
    s = base if base.isdigit() else f"p.{base}"
    return f"({s} {op} {k})" if op else s


def gen_scala(raw: dict, schema_name: str) -> str:
    ob = raw["opcodeBits"]
    fields = raw["fields"]
    fid = {name: i + 1 for i, name in enumerate(fields)}
    L = [f"// GENERATED by python/apta/messages.py from {schema_name}: do not edit (regenerated by the build).",
         "package apta", "", "import chisel3._", "import chisel3.util._", "",
         "/** Opcodes (low bits of every flit). */", "object MsgOpcode {", f"  val width = {ob}"]
    for m in raw["messages"]:
        L.append(f"  val {m['name']} = {m['opcode']}  // {m['channel']}, {m['dir']}: {m['doc']}")
    L.append("  val all: Seq[(String, Int)] = Seq(" +
             ", ".join(f'"{m["name"]}" -> {m["name"]}' for m in raw["messages"]) + ")")
    L += ["}", "", "/** Error codes of the message decoder. */", "object MsgError {"]
    codes = raw["errors"]
    L.append(f"  val width = {max(1, max(v['code'] for v in codes.values()).bit_length())}")
    for k, v in codes.items():
        L.append(f"  val {k} = {v['code']}  // {v['doc']}")
    L += ["}", "", "/** Field ids reported with a fieldRange error (0 = none, or the opcode). */",
          "object MsgField {", f"  val width = {max(1, len(fields).bit_length())}", "  val none = 0"]
    for name in fields:
        L.append(f"  val {name} = {fid[name]}")
    L += ["}", ""]
    for m in raw["messages"]:
        n = m["name"]
        L.append(f"/** {n} ({m['channel']}, {m['dir']}; {m['cxl']}): {m['doc']} */")
        L.append(f"class {n}Msg(implicit p: AptaParams) extends Bundle {{")
        for f in m["fields"]:
            L.append(f"  /** {fields[f]['doc']} */")
            L.append(f"  val {f} = UInt({_scala_expr(fields[f]['width'])}.W)")
        L.append("}")
        L.append(f"object {n}Msg {{")
        widths = [_scala_expr(fields[f]["width"]) for f in m["fields"]]
        L.append("  /** opcode + fields: the bits of the flit this message uses */")
        L.append("  def bits(implicit p: AptaParams): Int = MsgOpcode.width + " + " + ".join(widths))
        # fromFlit
        L.append(f"  def fromFlit(f: UInt)(implicit p: AptaParams): {n}Msg = {{")
        L.append(f"    val m = Wire(new {n}Msg)")
        L.append("    var lo = MsgOpcode.width")
        for f, w in zip(m["fields"], widths):
            L.append(f"    m.{f} := f(lo + {w} - 1, lo); lo += {w}")
        L.append("    m")
        L.append("  }")
        # toFlit
        L.append(f"  def toFlit(m: {n}Msg)(implicit p: AptaParams): UInt =")
        L.append(f"    Cat({', '.join(f'm.{f}' for f in reversed(m['fields']))}, "
                 f"MsgOpcode.{n}.U(MsgOpcode.width.W)).pad(Messages.flitBits)")
        # range check: Seq of (field id, out of range)
        L.append("  /** (field id, out of range) for each field with a range narrower than its width */")
        L.append("  def rangeErrors(f: UInt)(implicit p: AptaParams): Seq[(Int, Bool)] = {")
        L.append("    val m = fromFlit(f)")
        L.append("    Seq[Option[(Int, Bool)]](")
        checks = []
        for f, w in zip(m["fields"], widths):
            fd = fields[f]
            lo = _scala_expr(fd.get("min", 0))
            hi = _scala_expr(fd["max"]) if "max" in fd else f"((BigInt(1) << {w}) - 1)"
            checks.append(f"      Messages.rangeCheck(MsgField.{f}, m.{f}, {w}, BigInt({lo}), BigInt({hi}))"
                          if "max" in fd else
                          f"      Messages.rangeCheck(MsgField.{f}, m.{f}, {w}, BigInt({lo}), {hi})")
        L.append(",\n".join(checks))
        L.append("    ).flatten")
        L.append("  }")
        L.append("}")
        L.append("")
    L += ["object Messages {",
          "  /** width of a flit: the widest message */",
          "  def flitBits(implicit p: AptaParams): Int = Seq(" +
          ", ".join(f"{m['name']}Msg.bits" for m in raw["messages"]) + ").max",
          "  /** elaboration-time: a comparator only where the range is narrower than the field */",
          "  def rangeCheck(id: Int, v: UInt, w: Int, lo: BigInt, hi: BigInt): Option[(Int, Bool)] = {",
          "    val top = (BigInt(1) << w) - 1",
          "    val tooLow = if (lo > 0) Some(v < lo.U) else None",
          "    val tooHigh = if (hi < top) Some(v > hi.U) else None",
          "    (tooLow ++ tooHigh).reduceOption(_ || _).map(b => (id, b))",
          "  }",
          "  /** opcode, message bits and field range errors of every message of the schema */",
          "  def table(f: UInt)(implicit p: AptaParams): Seq[(Int, Int, Seq[(Int, Bool)])] = Seq(" +
          ", ".join(f"(MsgOpcode.{m['name']}, {m['name']}Msg.bits, {m['name']}Msg.rangeErrors(f))"
                    for m in raw["messages"]) + ")",
          "}", ""]
    return "\n".join(L)


# ---- C generator ------------------------------------------------------------------------------
def gen_c(s: "Schema", schema_name: str, variant: str | None = None) -> str:
    """C99/C++ header: one struct + pack/unpack per message over a little-endian byte array of
    ceil(flitBits/8) bytes, and `apta_check` with exactly Schema.check's (error, field id).
    Fields up to 64 bits are integers; wider ones (data) are little-endian byte arrays."""
    nbytes = (s.flit_bits + 7) // 8
    L = [f"/* GENERATED by python/apta/messages.py from {schema_name}"
         + (f" for variant {variant}" if variant else "") + ": do not edit.",
         " * A flit is flitBits bits, little-endian in APTA_FLIT_BYTES bytes: opcode in the low bits, then",
         " * the message's fields in schema order, first field lowest; bits above the last field are zero. */",
         "#ifndef APTA_MSG_H", "#define APTA_MSG_H", "#include <stdint.h>", "#include <string.h>", "",
         f"#define APTA_FLIT_BITS {s.flit_bits}u", f"#define APTA_FLIT_BYTES {nbytes}u",
         f"#define APTA_OPCODE_BITS {s.opcode_bits}u"]
    for k, v in s.params.items():
        L.append(f"#define APTA_P_{k} {v}u")
    n = s.params["servers"]
    L.append("/* X(i) for every compute server i (the RTL's io_req_<i>, io_status_epoch_<i> ...) */")
    L.append("#define APTA_FOR_EACH_SERVER(X) " + " ".join(f"X({i})" for i in range(n)))
    L.append("")
    for m in s.messages.values():
        L.append(f"#define APTA_OP_{m.name} {m.opcode}u")
    chans = {}
    for m in s.messages.values():
        chans.setdefault(m.channel, 0)
        chans[m.channel] |= 1 << m.opcode
    for c, mask in chans.items():
        L.append(f"#define APTA_CHANNEL_{c.upper()}_OPS 0x{mask:x}u  /* bit op set: opcode op travels on {c} */")
    for k, v in s.errors.items():
        L.append(f"#define APTA_MSGERR_{k} {v}")
    for k, v in s.field_ids.items():
        L.append(f"#define APTA_FIELD_{k} {v}")
    L += ["",
          "/* bits lo .. lo+w-1 (w <= 64) of a flit */",
          "static inline uint64_t apta_bits_get(const uint8_t *f, unsigned lo, unsigned w) {",
          "  uint64_t v = 0;",
          "  for (unsigned i = 0; i < w; i++) v |= (uint64_t)((f[(lo + i) >> 3] >> ((lo + i) & 7)) & 1u) << i;",
          "  return v;",
          "}",
          "static inline void apta_bits_put(uint8_t *f, unsigned lo, unsigned w, uint64_t v) {",
          "  for (unsigned i = 0; i < w; i++) {",
          "    unsigned b = lo + i;",
          "    f[b >> 3] = (uint8_t)((f[b >> 3] & ~(1u << (b & 7))) | (((v >> i) & 1u) << (b & 7)));",
          "  }",
          "}",
          "/* a wide field as ceil(w/8) little-endian bytes */",
          "static inline void apta_bytes_get(const uint8_t *f, unsigned lo, unsigned w, uint8_t *out) {",
          "  memset(out, 0, (w + 7) / 8);",
          "  for (unsigned i = 0; i < w; i++)",
          "    out[i >> 3] |= (uint8_t)(((f[(lo + i) >> 3] >> ((lo + i) & 7)) & 1u) << (i & 7));",
          "}",
          "static inline void apta_bytes_put(uint8_t *f, unsigned lo, unsigned w, const uint8_t *in) {",
          "  for (unsigned i = 0; i < w; i++) apta_bits_put(f, lo + i, 1, (in[i >> 3] >> (i & 7)) & 1u);",
          "}",
          "/* true if any bit at or above `lo` is set */",
          "static inline int apta_bits_above(const uint8_t *f, unsigned lo) {",
          "  for (unsigned b = lo; b < APTA_FLIT_BYTES * 8; b++) if ((f[b >> 3] >> (b & 7)) & 1u) return 1;",
          "  return 0;",
          "}",
          "static inline unsigned apta_opcode(const uint8_t *f) { return (unsigned)apta_bits_get(f, 0, APTA_OPCODE_BITS); }",
          ""]
    names = ", ".join(f'"{s.by_opcode[o].name}"' if o in s.by_opcode else "0" for o in range(1 << s.opcode_bits))
    L.append("static inline const char *apta_msg_name(unsigned op) {")
    L.append(f"  static const char *const names[{1 << s.opcode_bits}] = {{{names}}};")
    L.append(f"  return op < {1 << s.opcode_bits} && names[op] ? names[op] : \"?\";")
    L.append("}")
    L.append("")

    def ctype(f):
        return "uint32_t" if f.width <= 32 else "uint64_t" if f.width <= 64 else None

    for m in s.messages.values():
        L.append(f"typedef struct {{")
        for f in m.fields:
            t = ctype(f)
            L.append(f"  {t} {f.name};" if t else f"  uint8_t {f.name}[{(f.width + 7) // 8}];"
                     f"  /* {f.width} bits, little-endian */")
        L.append(f"}} apta_{m.name};")
        L.append(f"/* {m.name}: a flit (every byte written; values are masked to their field width) */")
        L.append(f"static inline void apta_pack_{m.name}(uint8_t *flit, const apta_{m.name} *m) {{")
        L.append("  memset(flit, 0, APTA_FLIT_BYTES);")
        L.append(f"  apta_bits_put(flit, 0, APTA_OPCODE_BITS, APTA_OP_{m.name});")
        for f in m.fields:
            if ctype(f):
                L.append(f"  apta_bits_put(flit, {f.lo}, {f.width}, m->{f.name});")
            else:
                L.append(f"  apta_bytes_put(flit, {f.lo}, {f.width}, m->{f.name});")
        L.append("}")
        L.append(f"static inline void apta_unpack_{m.name}(const uint8_t *flit, apta_{m.name} *m) {{")
        for f in m.fields:
            if ctype(f):
                L.append(f"  m->{f.name} = ({ctype(f)})apta_bits_get(flit, {f.lo}, {f.width});")
            else:
                L.append(f"  apta_bytes_get(flit, {f.lo}, {f.width}, m->{f.name});")
        L.append("}")
        L.append("")
    L += ["/* (error, field id) of a flit exactly as Schema.check and the RTL decoder: 0 when legal.",
          " * *field gets the offending field's APTA_FIELD_ id (0 for none). Unpack only legal flits. */",
          "static inline int apta_check(const uint8_t *f, int *field) {",
          "  *field = 0;",
          "  if (apta_bits_above(f, APTA_FLIT_BITS)) return APTA_MSGERR_reservedBits;",
          "  switch (apta_opcode(f)) {"]
    for m in s.messages.values():
        L.append(f"  case APTA_OP_{m.name}:")
        for f in m.fields:
            if f.width > 64:
                continue          # full-width byte arrays: every value is legal
            full = (1 << f.width) - 1
            conds = []
            if f.min > 0:
                conds.append(f"v < {f.min}ull")
            if f.max < full:
                conds.append(f"v > {f.max}ull")
            if conds:
                L.append(f"    {{ uint64_t v = apta_bits_get(f, {f.lo}, {f.width}); "
                         f"if ({' || '.join(conds)}) {{ *field = APTA_FIELD_{f.name}; return APTA_MSGERR_fieldRange; }} }}")
        L.append(f"    return apta_bits_above(f, {m.bits}) ? APTA_MSGERR_reservedBits : APTA_MSGERR_none;")
    L += ["  default:", "    return APTA_MSGERR_badOpcode;", "  }", "}", "",
          "/* Unpacks a flit by its opcode and packs it again into `out` (the fields a decoder keeps,",
          " * re-serialized): 1, or 0 with `out` untouched for an unknown opcode. A legal flit repacks",
          " * to the same bytes (the daemon's fuzz target checks that of every slot it accepts). */",
          "static inline int apta_repack(const uint8_t *f, uint8_t *out) {",
          "  switch (apta_opcode(f)) {"]
    for m in s.messages.values():
        L.append(f"  case APTA_OP_{m.name}: {{ apta_{m.name} m; apta_unpack_{m.name}(f, &m); "
                 f"apta_pack_{m.name}(out, &m); return 1; }}")
    L += ["  default:", "    return 0;", "  }", "}", "", "#endif", ""]
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["scala", "table", "c"])
    ap.add_argument("--schema", default=str(SCHEMA_PATH))
    ap.add_argument("--out", help="output file (scala, c)")
    ap.add_argument("--variant-params", help="c: build/rtl/<variant>/params.json, whose values of the "
                    "schema's parameters override the defaults (the flit width of that RTL)")
    a = ap.parse_args(argv)
    raw = json.loads(Path(a.schema).read_text())
    s = Schema(raw)  # validates the schema (opcodes, expressions) before generating anything
    if a.what == "c":
        variant = None
        if a.variant_params:
            vp = json.loads(Path(a.variant_params).read_text())
            s = Schema(raw, {k: vp[k] for k in raw["parameters"] if k in vp})
            variant = vp.get("variant")
            if "flitBits" in vp and vp["flitBits"] != s.flit_bits:
                raise SystemExit(f"{a.variant_params}: flitBits {vp['flitBits']} != schema's {s.flit_bits}")
        text = gen_c(s, "schema/messages.json", variant)
        emit(text, a.out)
    elif a.what == "scala":
        text = gen_scala(raw, "schema/messages.json") + schema.gen_scala()
        emit(text, a.out)
    else:
        print(f"flit {s.flit_bits} bits, opcode bits 0..{s.opcode_bits - 1}; params {s.params}")
        for m in s.messages.values():
            print(f"{m.opcode:2} {m.name:10} {m.channel:5} " +
                  " ".join(f"{f.name}[{f.lo + f.width - 1}:{f.lo}]" for f in m.fields))
    return 0


if __name__ == "__main__":
    sys.exit(main())
