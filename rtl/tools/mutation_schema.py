"""The mutant schema of a generated Verilog file (mutation.py): every single-point mutation found in
the modules of a group's controllers, each selected by its number at run time, and the schema's
directory under build/rtl-mutation/schema/.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from apta.rtl.mutation_groups import GROUPS, RUNS, Group

# The controller each module belongs to (rtl/README.md); modules not named here are not mutated.
CONTROLLER = {
    "DirUpdate": "OTC", "Otc": "OTC",
    "ServerTable": "OIC", "SnpIssuer": "OIC",
    "CtrlUnit": "core top", "ChannelFront": "core top",
    "ChannelFront_1": "core top", "CoherenceCore": "core top", "MsgDecoder": "core top",
}
MS_MODULES = {"Osc": "OSC", "VersionTable": "OSC", "Opc": "OPC", "ObjMap": "OPC", "ExtentAlloc": "OPC",
              "AxiPort": "memory-server top", "MemoryServer": "memory-server top"}
# Chisel's library queues and arbiters and the memory primitives are not ours to mutate.

SWAP = {"==": "!=", "!=": "==", "&": "|", "|": "&", "+": "-", "-": "+", "<": ">=", ">=": "<",
        ">": "<=", "<=": ">", "&&": "||", "||": "&&", "^": "|"}
TOKEN = re.compile(r"""\s*(?:
    (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<lit>\d+'[hHbBdDoO][0-9a-fA-F_xXzZ]+)
  | (?P<num>\d+)
  | (?P<id>[A-Za-z_$][\w$]*(?:\.[A-Za-z_][\w$]*)*)
  | (?P<op>===|!==|==|!=|<=|>=|&&|\|\||<<<|>>>|<<|>>|~&|~\||~\^|\^~|[-+*/%&|^~!<>?:()\[\]{},;=@#'.])
)""", re.X)


@dataclass
class Mutant:
    id: int                 # the schema's number (1..); 0 is the unmutated design
    key: str                # stable across regenerations: module:hash(statement):kind:position
    module: str
    controller: str
    line: int               # 1-based line of the statement in the generated file
    kind: str               # operator, negation, constant, reset, stuck0, stuck1, condition
    what: str               # e.g. "== -> !=" in "wire dec = io_dec_valid & io_dec_bits == 2'h0;"
    status: str = "pending"  # killed, survived, equivalent, pending
    by: str | None = None
    seconds: float = 0.0
    why: str | None = None   # for an equivalent mutant: the argument
    cached: bool = False     # the verdict came from an earlier, interrupted run (verdict_file)
    # the key with firtool's temporaries named by their definitions (_canon): the same logic's
    # mutant on another variant has the same xkey (None: not comparable); used by Group.cross
    xkey: str | None = None


def tokens(text: str) -> list[tuple[str, str, int, int]]:
    """(kind, text, start, end) of an expression; raises ValueError on what it cannot read."""
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = TOKEN.match(text, i)
        if not m or m.end() == i:
            raise ValueError(f"cannot tokenize at {text[i:i + 20]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind), m.end(kind)))
        i = m.end()
    return out


def _operand_end(tok) -> bool:
    return tok is not None and (tok[0] in ("id", "lit", "num") or tok[1] in (")", "]", "}"))


def expr_mutations(expr: str, one_bit: bool) -> list[tuple[str, str, str]]:
    """(kind, description, mutated expression) for every single-point mutation of `expr`."""
    toks = tokens(expr)
    out = []
    depth_br = 0
    for n, (k, t, s, e) in enumerate(toks):
        prev = toks[n - 1] if n else None
        if t == "[":
            depth_br += 1
        elif t == "]":
            depth_br -= 1
        if depth_br:                   # bit selects are wiring, not logic
            continue
        if k == "op" and t in SWAP and _operand_end(prev):
            out.append(("operator", f"{t} -> {SWAP[t]}", expr[:s] + SWAP[t] + expr[e:]))
        elif k == "op" and t in ("~", "!") and not _operand_end(prev):
            out.append(("negation", f"{t} removed", expr[:s] + expr[e:]))
        elif k == "lit":
            w, v = t.split("'")
            width, base, digits = int(w), v[0].lower(), v[1:].replace("_", "")
            if any(c in "xXzZ" for c in digits):
                continue
            val = int(digits, {"h": 16, "b": 2, "d": 10, "o": 8}[base])
            new = val ^ 1 if width == 1 else (val + 1 if val + 1 < (1 << width) else val - 1)
            out.append(("constant", f"{t} -> {width}'h{new:x}", expr[:s] + f"{width}'h{new:x}" + expr[e:]))
        elif k == "op" and t == "?" and prev is not None and prev[0] == "id":
            out.append(("condition", f"select {prev[1]} inverted", expr[:prev[2]] + f"(~{prev[1]})" + expr[prev[3]:]))
    if one_bit and not (len(toks) == 1 and toks[0][0] == "lit"):
        out.append(("stuck0", "stuck at 0", "1'h0"))
        out.append(("stuck1", "stuck at 1", "1'h1"))
    return out


DECL = re.compile(r"^\s*(?:input|output|wire|reg|logic)\s+(?:\[(\d+):(\d+)\]\s*)?(\w+)")
CONT = re.compile(r"^\s+(\w+)\s*[,)]?\s*$")


TEMP = re.compile(r"\b(_\w+|casez_tmp\w*)\b")   # firtool's temporaries: their numbers differ by variant
# an instance's output wire (`_<instance>_io_<port>`, connected in the instance's port list, never
# assigned): named by the instance and its port, not numbered, so the same name in two variants
INST_OUT = re.compile(r"_[A-Za-z]\w*?_io_\w+")
NUMBERED = re.compile(r".*_(?:T|GEN)(?:_\d+)?$")


def _temp_defs(body: list[str]) -> dict[str, str]:
    """A module's temporaries defined by `wire ... name = expr;` or, declared before a use that
    comes first (`wire name;`), by `assign name = expr;` (one or more lines): name -> expr; and a
    case-block mux (`always_comb begin casez (sel) ... casez_tmp_N = ...; endcase`): name ->
    the block's text with its own name left out."""
    defs, k = {}, 0
    while k < len(body):
        if re.match(r"^\s*always_comb begin\s*$", body[k]) and k + 1 < len(body) and \
                re.match(r"^\s*casez \(", body[k + 1]):
            j = k + 1
            while j < len(body) and "endcase" not in body[j]:
                j += 1
            block = " ".join(" ".join(body[k + 1:j]).split())
            targets = set(re.findall(r"\b(\w+) = ", block))
            if len(targets) == 1 and TEMP.fullmatch(t := targets.pop()):
                defs[t] = block.replace(f"{t} = ", "= ")
            k = j + 1
            continue
        m = re.match(r"^\s*(?:wire\b[^=;]*?|assign)\s*\b(\w+)\s*=(?!=)(.*)$", body[k])
        if m and TEMP.fullmatch(m.group(1)):
            text, j = m.group(2), k
            while not text.rstrip().endswith(";") and j + 1 < len(body):
                j += 1
                text += " " + body[j]
            defs[m.group(1)] = " ".join(text.rstrip()[:-1].split())
            k = j
        k += 1
    return defs


def _canon(text: str, defs: dict[str, str], memo: dict) -> str | None:
    """`text` with every temporary replaced by a name made from its definition (recursively), so
    that the same logic reads the same in two variants whatever firtool numbered it; an instance's
    output wire keeps its name (INST_OUT), a case-block mux is defined by its block (_temp_defs);
    None if a temporary has no definition (a register named like one)."""
    def name(t: str, depth: int = 0) -> str | None:
        if t not in memo:
            memo[t] = None                       # a cycle (none in combinational wires) stays None
            d = defs.get(t)
            if d is None and INST_OUT.fullmatch(t) and not NUMBERED.fullmatch(t):
                memo[t] = t
                return t
            c = None if d is None or depth > 200 else sub(d, depth + 1)
            memo[t] = None if c is None else "T" + hashlib.sha1(c.encode()).hexdigest()[:12]
        return memo[t]

    def sub(x: str, depth: int) -> str | None:
        bad = []

        def rep(m):
            n = name(m.group(1), depth)
            if n is None:
                bad.append(m.group(1))
                return m.group(1)
            return n
        y = TEMP.sub(rep, x)
        return None if bad else y
    return sub(" ".join(text.split()), 0)


def _widths(body: list[str]) -> dict[str, int]:
    """name -> width from the module's declarations (firtool's port lists continue a width on
    the next lines: `output [7:0] io_epochs_0,\\n io_epochs_1,`)."""
    w, last = {}, None
    for l in body:
        m = DECL.match(l)
        if m:
            last = int(m.group(1)) - int(m.group(2)) + 1 if m.group(1) else 1
            w[m.group(3)] = last
            continue
        m = CONT.match(l)
        if m and last is not None and not l.strip().startswith(("end", "begin")):
            w.setdefault(m.group(1), last)
        elif l.strip() and not CONT.match(l):
            last = None
    return w


def _controller(module: str, group: str) -> str | None:
    g = GROUPS[group]
    if g.modules is not None and module not in g.modules:
        return None
    if g.top == "CoherenceCore":
        return CONTROLLER.get(module)
    return MS_MODULES.get(module)


def _parenthesized(lines: list[str], i: int, text: str) -> tuple[int, str, str]:
    """`text` follows an opening parenthesis on line i: (the last line it spans, what is inside
    the matching parenthesis, what follows it)."""
    j = i
    while text.count("(") + 1 > text.count(")"):
        j += 1
        text += "\n" + lines[j]
    depth, k = 1, 0
    for k, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0:
            break
    return j, text[:k], text[k + 1:]


def schema(src: Path, group: str) -> tuple[str, list[Mutant]]:
    """The mutant schema of a generated Verilog file and its mutants."""
    lines = src.read_text().splitlines()
    out, mutants = [], []
    i = 0
    module = ctl = None
    widths: dict[str, int] = {}
    defs: dict[str, str] = {}
    memo: dict = {}
    ifdef = 0
    in_reset = 0
    header_done = False

    seen_keys: Counter = Counter()

    def add(stmt, lineno, kind, what, desc):
        """A mutant with a key that survives regeneration: the module, a hash of the whole
        statement (target and expression), the mutation, and the occurrence among equal ones."""
        h = hashlib.sha1(" ".join(stmt.split()).encode()).hexdigest()[:10]
        base = f"{module}:{h}:{kind}:{what}"
        mid = len(mutants) + 1
        cs, cw = _canon(stmt, defs, memo), _canon(what, defs, memo)
        xbase = (f"{module}:{hashlib.sha1(cs.encode()).hexdigest()[:10]}:{kind}:{cw}"
                 if cs is not None and cw is not None else None)
        xkey = f"{xbase}#{seen_keys[xbase]}" if xbase else None
        mutants.append(Mutant(mid, f"{base}#{seen_keys[base]}", module, ctl, lineno, kind, desc, xkey=xkey))
        seen_keys[base] += 1
        if xbase:
            seen_keys[xbase] += 1
        return mid

    def emit_mutants(text, lineno, one_bit, reset, stmt):
        found = []
        for kind, what, mexpr in expr_mutations(text, one_bit):
            if reset and kind == "constant":
                kind = "reset"
            mid = add(stmt, lineno, kind, what, f"{what} in `{' '.join(text.split())[:120]}`")
            found.append((mid, mexpr))
        return found

    def chain(found, orig):
        s = f"({orig})"
        for mid, m in reversed(found):
            s = f"apta_mut == {mid} ? ({m}) : {s}"
        return s

    while i < len(lines):
        l = lines[i]
        st = l.strip()
        m = re.match(r"^module\s+(\w+)", l)
        if m:
            module, header_done = m.group(1), False
            ctl = _controller(module, group)
            end = next(j for j in range(i, len(lines)) if lines[j].startswith("endmodule"))
            widths = _widths(lines[i:end])
            defs, memo = _temp_defs(lines[i:end]), {}
        if module is None or ctl is None:
            out.append(l)
            i += 1
            continue
        if not header_done:
            out.append(l)
            if st.endswith(");") or st == ");":
                header_done = True
                out.append("  integer apta_mut;  // mutation schema: the live mutant (0 = none), +apta_mutant=K")
                out.append('  initial if (!$value$plusargs("apta_mutant=%d", apta_mut)) apta_mut = 0;')
            i += 1
            continue
        if st.startswith("`if"):
            ifdef += 1
        elif st.startswith("`endif"):
            ifdef -= 1
        if st.startswith("endmodule"):
            module = None
        if ifdef or st.startswith("`") or st.startswith("//"):
            out.append(l)
            i += 1
            continue
        if re.match(r"^if \(reset\)", st):
            in_reset = 1
        elif in_reset:
            in_reset += st.count("begin") - len(re.findall(r"\bend\b", st))
            if in_reset <= 0 or st.startswith("else"):
                in_reset = 0
        # gather one statement
        am = re.match(r"^(\s*)(wire\b[^=;]*?|assign\s+[^=;]+?|[\w\[\]:.]+\s*)(<=|=)(?!=)(.*)$", l)
        im = re.match(r"^(\s*(?:end\s+)?(?:else\s+)?if\s*)\((.*)$", l)
        pm = re.match(r"^(\s*\.\w+\s*)\((.*)$", l)
        if am and (am.group(2).startswith(("wire", "assign")) or am.group(3) == "<="):
            j, text = i, am.group(4)
            while not text.rstrip().endswith(";"):
                j += 1
                text += "\n" + lines[j]
            rhs = text.rstrip()[:-1]
            lhs = am.group(2).split()[-1].split("[")[0]
            one_bit = widths.get(lhs) == 1
            found = emit_mutants(rhs, i + 1, one_bit, in_reset > 0, f"{am.group(2)}{am.group(3)}{rhs}")
            if found:
                out.append(f"{am.group(1)}{am.group(2)}{am.group(3)} {chain(found, rhs.strip())};")
            else:
                out.extend(lines[i:j + 1])
            i = j + 1
            continue
        if im:
            j, cond, rest = _parenthesized(lines, i, im.group(2))
            found = emit_mutants(cond, i + 1, False, False, f"if ({cond})")
            mid = add(f"if ({cond})", i + 1, "condition", "if inverted",
                      f"if inverted: `if ({' '.join(cond.split())[:120]})`")
            found.append((mid, f"!({cond})"))
            out.append(f"{im.group(1)}({chain(found, cond)}){rest}")
            i = j + 1
            continue
        if pm and re.search(r"[&|^~!?+\-<>=]|'h", pm.group(2)):
            j, expr, rest = _parenthesized(lines, i, pm.group(2))
            found = emit_mutants(expr, i + 1, False, False, f"{pm.group(1)}({expr})")
            out.append(f"{pm.group(1)}({chain(found, expr)}){rest}" if found else "\n".join(lines[i:j + 1]))
            i = j + 1
            continue
        out.append(l)
        i += 1
    return "\n".join(out) + "\n", mutants



def fixed(schema_text: str, mid: int) -> str:
    """The schema with mutant `mid` made permanent (0: none) and the selector removed: plain
    Verilog for yosys."""
    t = re.sub(r"apta_mut == (\d+) \?", lambda m: "1'h1 ?" if int(m.group(1)) == mid else "1'h0 ?", schema_text)
    return "\n".join(l for l in t.splitlines() if "apta_mut" not in l) + "\n"


def _module_text(text: str, name: str) -> str:
    m = re.search(rf"^module {re.escape(name)}\(.*?^endmodule\n", text, re.S | re.M)
    return m.group(0)


def _with_deps(text: str, name: str) -> str:
    """The text before the first module (firtool's macros) and module `name` with every module it
    instantiates, recursively: all a proof about `name` needs (the memory server's proofs read the
    whole design before, and timed out)."""
    mods = {m.group(1): m.group(0) for m in re.finditer(r"^module (\w+)\(.*?^endmodule\n", text, re.S | re.M)}
    first = re.search(r"^module ", text, re.M)
    out, todo, seen = [text[:first.start()] if first else ""], [name], set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        out.append(mods[n])
        todo += [i for i in re.findall(r"^\s*(\w+)\s+\w+\s*\(", mods[n], re.M) if i in mods and i not in seen]
    return "".join(out)


SCHEMA_DIRS: dict[str, Path] = {}     # group -> the directory generate() put its schema in


def generate(group: Group, rtl: Path) -> tuple[Path, list[Mutant]]:
    """build/rtl-mutation/schema/<variant>-<hash of its files>/: the schema and the variant's
    params.json. Named by content, so that runs of the same Verilog share it and with it the
    Verilator build (whose dependency file names the sources' paths: a new path rebuilds); written
    to a temporary directory and renamed, so a concurrent run sees it whole or not at all."""
    src = rtl / group.variant / group.file
    if not src.exists():
        raise FileNotFoundError(f"{src} missing: run `make rtl` first")
    text, mutants = schema(src, group.name)
    files = {group.file: text, "params.json": json.dumps(json.loads((rtl / group.variant / "params.json").read_text()), indent=1)}
    if (rtl / group.variant / "MsgDecoder.sv").exists() and group.file != "MsgDecoder.sv":
        files["MsgDecoder.sv"] = (rtl / group.variant / "MsgDecoder.sv").read_text()
    h = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:12]
    d = RUNS / "schema" / f"{group.variant}-{h}"
    if not d.exists():
        tmp = RUNS / "schema" / f".{d.name}.{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, t in files.items():
            (tmp / name).write_text(t)
        try:
            tmp.rename(d)
        except OSError:                 # another run renamed the same content first
            shutil.rmtree(tmp, ignore_errors=True)
    SCHEMA_DIRS[group.name] = d
    return d, mutants
