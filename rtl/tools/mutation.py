"""Mutation testing of the RTL regression (`make rtl-mutation`; a seeded sample in `make test`).

Single-point mutants of the generated Verilog of one variant per group (the core on m2s1w1, the
model's geometry, so the vectors replay on it; the memory server's own modules on msv), built as
one *mutant schema*: every mutation site becomes `apta_mut == K ? (mutated) : (original)`, with
`apta_mut` read from the plusarg `+apta_mutant=K` (0 = the design as generated). One Verilator
build per group instead of one per mutant; the tests run unchanged through RTL_DIR with
APTA_RTL_MUTANT=K (core_bfm.simulate passes it on as the plusarg).

Operators (one mutant each): a binary operator swapped (== !=, & |, + -, < >=, > <=, && ||, ^ |),
a negation (~ !) removed, a sized constant off by one, a 1-bit right-hand side stuck at 0 and at 1,
an `if` condition or a `?:` select inverted; constants in a reset branch count as "reset" mutants.
Never inside string literals, assertions (`ifndef SYNTHESIS` blocks) or memory primitives.

A mutant is killed by the first test (in the group's order, cheapest first) that fails on it: a
wrong output, a scoreboard or history violation, an RTL assertion, a timeout. A survivor that is
listed in mutation_equivalent.json (keyed by a stable id: module, hash of the statement, operator,
position) is "equivalent" and carries its argument there; any other survivor is a finding. An
argument names, per group, the mutation it is about (the mutant's `what`): a key can come to name
another mutation (firtool renumbers a statement's operators, or the same statement text on another
variant sits in other logic), and then the argument does not count there (`argument`). A mutant
with a written argument is not run (`--run-argued` runs it): its run cannot turn it into a finding,
since it survives as equivalent or is killed, and it costs every test (about 40 s on the memory
server, 40% of a full ms3 run's time).
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections import Counter
from dataclasses import dataclass, field, asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# Each run works in its own directory (the schema, every mutant's files, the equivalence proofs),
# so two runs at once (the `make test` sample beside `make rtl-mutation`) never read or delete each
# other's files; the test children find it in APTA_MUTATION_DIR. The Verilator builds stay shared
# (build/sim/, keyed by the schema's hash, built under a lock: core_bfm.locked_build).
RUNS = ROOT / "build" / "rtl-mutation"
OUT = Path(os.environ.get("APTA_MUTATION_DIR") or
           RUNS / f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}")
EQUIVALENT = HERE / "mutation_equivalent.json"


def pinned(entries: dict, group: str, key: str, what: str) -> dict | None:
    """The entry of mutant `key` of `group` in an analysis file (mutation_equivalent.json,
    mutation_covered.json), if it was written for this very mutation: each entry names, per group,
    the mutant's `what` ({"mutants": {group: what}, ...}). Otherwise None."""
    e = entries.get(key)
    return e if e is not None and e["mutants"].get(group) == what else None


def argument(equivalent: dict, group: str, key: str, what: str) -> str | None:
    """The written equivalence argument of mutant `key` of `group` ({"why", "mutants"}), if written
    for this very mutation; otherwise None (the mutant runs; if it survives it is a finding until
    someone argues it again)."""
    e = pinned(equivalent, group, key, what)
    return e["why"] if e else None


def stale_arguments(equivalent: dict, group: str, mutants) -> list[str]:
    """The keys of `group`'s mutants whose argument on record was written for this group's mutant
    of that key and names another mutation now: printed by every run, so that a renumbering cannot
    silently move an argument. (An argument written for other groups only is not this group's.)"""
    return [m.key for m in mutants if group in equivalent.get(m.key, {}).get("mutants", {})
            and argument(equivalent, group, m.key, m.what) is None]
# survivors analysed and not yet killed: the regression's known blind spots, each with what would
# kill it. They fail `make rtl-mutation`; the sample in `make test` fails only on a survivor not here.
OPEN = HERE / "mutation_open.json"
# survivors of one group whose logic is killed in another group's variant, where it is observable
# (m2s1w1's 16-bit epochs never reach the last value; mutants_epochs' 3-bit ones do): key ->
# {"group", "keys" (the other group's mutants of the same logic), "why"}. Such a survivor is
# "covered" only when that group ran in the same invocation and killed every one of those keys;
# otherwise it stays open.
COVERED = HERE / "mutation_covered.json"

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

STOPPED = "the test stopped before writing its result"
STMT_RUN = 20       # the most mutants of one statement run in turn in one job (main)


class HarnessError(RuntimeError):
    """A test child that gave no verdict (an import error, a crash of the runner)."""
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


# ---- the groups: a variant, its file, and the regression's tests in order -----------------------
@dataclass
class Group:
    name: str
    variant: str
    top: str
    file: str
    tests: list = field(default_factory=list)
    # the modules mutated (None: every module of the controllers); a group on another variant
    # covers what the main group's variant cannot show (a one-set directory, 16-bit epochs)
    modules: frozenset | None = None
    # a group mutating the same modules on another variant, run before this one: a mutant whose
    # xkey (module, statement with firtool's temporaries named by their definitions, operator,
    # position: the same logic) it killed is covered here, not run again, and a survivor of that
    # group that this one kills is covered there. The plain key would not do: the temporaries'
    # numbers differ between variants, so one statement text can mean different logic in each
    cross: str | None = None
    # the environment of every test of the group (APTA_SRAM: the bench's directory SRAM model)
    env: dict = field(default_factory=dict)


def _core_vectors(variant: str, env: dict) -> str | None:
    """The model's vectors of this geometry (test_core_vectors); the failure or None."""
    from apta.testbench.runs import GEOMETRY, load_core_vectors
    from apta.testbench.core_bfm import run, load_params
    p = load_params(variant)
    scen = [sc for sc in load_core_vectors() if all(sc["params"][k] == p[k] for k in GEOMETRY)]
    if not scen:
        raise RuntimeError(f"no vector matches variant {variant}")
    d = OUT / "runs" / variant / env["APTA_RTL_MUTANT"]
    d.mkdir(parents=True, exist_ok=True)
    sf, rf = d / "vectors.json", d / "vectors-result.json"
    sf.write_text(json.dumps(scen))
    rf.unlink(missing_ok=True)
    n, failed = run(variant, "test_core_vectors", {"APTA_SCENARIOS": sf, "APTA_RESULT": rf},
                    results_name=f"vectors-{env['APTA_RTL_MUTANT']}.xml")
    r = json.loads(rf.read_text()) if rf.exists() else {"failed": [STOPPED]}
    if n != 1 or failed or r["failed"]:
        return (r["failed"] or ["cocotb failure"])[0][:300]
    return None


def _core_stress(variant: str, env: dict, ops: int = 20000, seed: int = 1) -> str | None:
    from apta.testbench.runs import run_stress
    d = OUT / "runs" / variant / env["APTA_RTL_MUTANT"]
    d.mkdir(parents=True, exist_ok=True)
    try:
        run_stress(variant, ops, seed, f"mutant{env['APTA_RTL_MUTANT']}", out_dir=d)
    except AssertionError:
        res = [json.loads(f.read_text()) for f in d.glob("stress-*.json")]
        # the scoreboard's violation, else the reason is in the simulation's log (run_one finds it)
        return str(res[0]["violation"])[:300] if res and res[0].get("violation") else STOPPED
    return None


def _directed(module: str, variant: str, env: dict, extra: dict | None = None) -> str | None:
    """A directed cocotb test of the core (one test function, its failures in APTA_RESULT)."""
    from apta.testbench.core_bfm import run
    d = OUT / "runs" / variant / env["APTA_RTL_MUTANT"]
    d.mkdir(parents=True, exist_ok=True)
    rf = d / f"{module}.json"
    rf.unlink(missing_ok=True)
    n, failed = run(variant, module, {"APTA_RESULT": rf, **(extra or {})},
                    results_name=f"{module}-{env['APTA_RTL_MUTANT']}.xml")
    r = json.loads(rf.read_text()) if rf.exists() else {"failed": [STOPPED]}
    if n != 1 or failed or r["failed"]:
        return (r["failed"] or ["cocotb failure"])[0][:300]
    return None


def _core_ctrl(variant: str, env: dict) -> str | None:
    """test_core_ctrl: control flits back to back under ctrlResp backpressure, on every server;
    stale fences and rejoins after another server's walk."""
    return _directed("test_core_ctrl", variant, env)


def _core_extent(variant: str, env: dict) -> str | None:
    """test_core_extent: which request's base/size an entry keeps, seen in the BISnps."""
    return _directed("test_core_extent", variant, env)


def _core_flow(variant: str, env: dict) -> str | None:
    """test_core_flow: the resp-slot credit, inputs held through reset, io_idle."""
    return _directed("test_core_flow", variant, env)


def _core_arbitration(variant: str, env: dict) -> str | None:
    """test_core_arbitration: a Fence and a Commit in the same cycle, the Fence first."""
    return _directed("test_core_arbitration", variant, env)


def _core_epochs(variant: str, env: dict) -> str | None:
    """test_core_epochs (the epoch rule up to the last value and past it) on its 3-bit variant,
    the variant's deliberate-bug port at 0 (the design as written)."""
    return _directed("test_core_epochs", variant, env, {"APTA_MUTANT": 0})


def _core_decoder(variant: str, env: dict) -> str | None:
    """test_msg_decoder on the MsgDecoder inside the variant's core, with the variant's codec."""
    from apta.testbench.core_bfm import build, simulate
    runner, bdir = build(variant, top="MsgDecoder")
    n, failed = simulate(runner, bdir, "MsgDecoder", "test_msg_decoder", {"APTA_VARIANT": variant},
                         results_name=f"decoder-{env['APTA_RTL_MUTANT']}.xml")
    return "cocotb failure" if n != 1 or failed else None


def _ms_vectors(variant: str, env: dict) -> str | None:
    from apta.testbench.runs import load_ms_vectors, run_ms_vectors
    r = run_ms_vectors(variant, load_ms_vectors(), [0], stoppable=True, bdir=OUT / "runs" / variant / env["APTA_RTL_MUTANT"])
    if r is None:
        return STOPPED
    fails = r["failed"]["0"]
    return fails[0][:300] if fails else None


# The cocotb test that killed a module's previous mutant (`first ...` in its failure), run alone first
CASE_ENV = "APTA_MUTATION_TESTCASE"
FIRST_CASE = re.compile(r", first (\w+)")


def _ms_module(variant: str, module: str, what: str, at_least: int) -> str | None:
    """A memory-server cocotb module on the mutant: None if it passes, else how many of its tests
    failed and the first (a mutation run skips a module's tests after its first failure). With
    CASE_ENV set (run_one: the cocotb test that killed the module's previous mutant), that
    test runs alone first; a mutant it does not kill runs the whole module."""
    from apta.testbench.ms_bfm import build_ms, run_ms, run_ms_named
    if (case := os.environ.get(CASE_ENV)):
        from apta.testbench.core_bfm import results_path
        results_path(build_ms(variant)[1], f"{module}.xml").unlink(missing_ok=True)
        n, failed = run_ms(variant, module, {"APTA_MS_VARIANT": variant}, testcase=case)
        if n == 1 and failed:
            return f"{what} test failed, first {case} (run alone first)"
    n, failed, first = run_ms_named(variant, module, {"APTA_MS_VARIANT": variant})
    if not failed and n >= at_least:
        return None
    return f"{failed} of {n} {what} tests failed" + (f", first {first[0]}" if first else "")


def _ms_smoke(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_smoke", "smoke", 7)


def _ms_alloc(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_alloc", "allocator", 3)


def _ms_hold(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_hold", "hold-table", 6)


def _ms_timeout(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_timeout", "timeout", 2)


def _ms_ports(variant: str, env: dict) -> str | None:
    return _ms_module(variant, "test_ms_ports", "server-port", 4)


def _ms_workflows(variant: str, env: dict) -> str | None:
    from apta.testbench.runs import run_ms_workflows
    failed, res = run_ms_workflows(variant, f"-mutant{env['APTA_RTL_MUTANT']}", {"APTA_MS_SEEDS": "1"})
    runs = res.get("runs", [])
    bad = [r for r in runs if not r["ok"]]
    if failed or not runs or bad:
        return (f"{bad[0]['workflow']}: {bad[0]['violations']} {bad[0]['errors']}" if bad else "cocotb failure")[:300]
    return None


GROUPS = {
    # cheapest per kill first: the vectors (a few seconds, most kills), the decoder test (a
    # second; MsgDecoder's mutants only, REACHES), the directed tests, the stress (the longest)
    "core": Group("core", "m2s1w1", "CoherenceCore", "CoherenceCore.sv",
                  [("vectors", _core_vectors), ("decoder", _core_decoder), ("ctrl", _core_ctrl),
                   ("extent", _core_extent), ("flow", _core_flow), ("arbitration", _core_arbitration),
                   ("stress", _core_stress)]),
    # m2s1w1's directory is one register (one set): the set index, the forwarding of the last write
    # to the next read of its set and the multi-cycle init and fence walks exist only with 2+ sets;
    # on the read-first SRAM model (rtl/testbench/sram.py), where a missing forward reads stale ways
    "core-sets": Group("core-sets", "stress", "CoherenceCore", "CoherenceCore.sv",
                       [("ctrl", _core_ctrl), ("extent", _core_extent), ("flow", _core_flow),
                        ("stress", _core_stress)],
                       modules=frozenset({"Otc", "CtrlUnit"}), env={"APTA_SRAM": "read-first"}),
    # the refusal of a Rejoin at the last epoch value needs 2^16 - 1 rejoins at 16-bit epochs:
    # the control unit and the server table again with 3-bit epochs (m2s1w1's geometry otherwise),
    # test_core_epochs first, then the core group's tests but the stress (its scoreboard does not
    # model the last epoch)
    "core-epochs": Group("core-epochs", "mutants_epochs", "CoherenceCore", "CoherenceCore.sv",
                         [("epochs", _core_epochs), ("vectors", _core_vectors), ("ctrl", _core_ctrl),
                          ("extent", _core_extent), ("flow", _core_flow)],
                         modules=frozenset({"CtrlUnit", "ServerTable"})),
    # two staging slots and a bigger directory: the directed races of the smoke tests, the server
    # ports (refusals, round-robin), the allocator and its translation cache, the hold table of
    # versioned gets, the workflows
    "ms3": Group("ms3", "ms3", "MemoryServer", "MemoryServer.sv",
                 [("ms-smoke", _ms_smoke), ("ms-ports", _ms_ports), ("ms-alloc", _ms_alloc), ("ms-hold", _ms_hold),
                  ("ms-workflows", _ms_workflows)]),
    # the memory server in the model's geometry: its vectors (the model's steps, its cells), the
    # server ports, the allocator tests, the hold table (its one entry), the OPC's timeout (ms3 has
    # none), then the workflows with crashes. The smoke tests need ms3's two staging slots; what ms3
    # killed is covered here (the same statement's mutant), so this group runs what only msv's
    # Verilog has and ms3's survivors
    "msv": Group("msv", "msv", "MemoryServer", "MemoryServer.sv",
                 [("ms-vectors", _ms_vectors), ("ms-ports", _ms_ports), ("ms-alloc", _ms_alloc),
                  ("ms-hold", _ms_hold), ("ms-timeout", _ms_timeout), ("ms-workflows", _ms_workflows)],
                 cross="ms3"),
}


# ---- equivalence: a survivor whose mutated module yosys proves equal to the original -------------
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


def prove_equivalent(group: Group, m: Mutant, timeout: float = 60) -> str | None:
    """The argument that mutant m cannot be told from the design by any input sequence, or None:
    yosys matches the mutated module's signals with the original's by name (equiv_make; one
    expression differs), then proves every matched pair equal for all inputs, registers assumed
    equal at the start of each step (equiv_simple, then equiv_induct by temporal induction)."""
    d = OUT / "equiv" / f"{group.name}-{m.id}"
    d.mkdir(parents=True, exist_ok=True)
    sch = (SCHEMA_DIRS[group.name] / group.file).read_text()
    orig = _with_deps(fixed(sch, 0), m.module)
    if group.env.get("APTA_SRAM") == "read-first":      # the memory the group's tests simulate
        from apta.testbench import sram
        orig = sram.read_first(orig, str(SCHEMA_DIRS[group.name] / group.file))[0]
    mut = _module_text(fixed(sch, m.id), m.module).replace(f"module {m.module}(", f"module {m.module}__mut(", 1)
    (d / "orig.v").write_text(orig)
    (d / "mut.v").write_text(mut)
    # match outputs and registers only: an intermediate wire may differ (it is the mutated one)
    # as long as nothing it feeds does
    wires = re.findall(r"^\s*wire\s+(?:\[[^\]]*\]\s*)?(\w+)", _module_text(orig, m.module), re.M)
    (d / "blacklist").write_text("\n".join(wires) + "\n")
    script = (f"read_verilog -sv -DSYNTHESIS {d / 'orig.v'}; read_verilog -sv -DSYNTHESIS {d / 'mut.v'}; "
              f"hierarchy -check; proc; memory -nomap; flatten; opt_clean; "
              f"equiv_make -blacklist {d / 'blacklist'} {m.module} {m.module}__mut equiv; hierarchy -top equiv; "
              f"equiv_simple -seq 2; equiv_induct -seq 2; equiv_status -assert")
    try:
        r = subprocess.run(["yosys", "-q", "-p", script], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        _PROOF_TIMED_OUT.add(m.key)      # no verdict (cached_proof keeps it as TIMED_OUT)
        return None
    (d / "yosys.log").write_text(r.stdout + r.stderr)
    if r.returncode == 0:
        return (f"yosys proves {m.module} with the mutant equivalent to the original (equiv_make, "
                f"equiv_simple, equiv_induct; every output and register equal under all inputs)")
    return None


SCHEMA_DIRS: dict[str, Path] = {}     # group -> the directory generate() put its schema in


_PROOF_TIMED_OUT: set = set()
# kept like a failed proof, so that a later run of the schema does not spend the time again
TIMED_OUT = "no verdict: yosys timed out"


def _proof_file(group: Group) -> Path:
    sram = "-sram-read-first" if group.env.get("APTA_SRAM") == "read-first" else ""
    return RUNS / "proofs" / f"{SCHEMA_DIRS[group.name].name}{sram}.json"


def known_proof(group: Group, m: Mutant) -> str | None:
    """A yosys proof of m that an earlier run of the same schema found, or None."""
    f = _proof_file(group)
    p = json.loads(f.read_text() or "{}").get(m.key) if f.exists() else None
    return None if p == TIMED_OUT else p


def cached_proof(group: Group, m: Mutant) -> str | None:
    """prove_equivalent, its verdict kept per schema (build/rtl-mutation/proofs/<schema dir>.json,
    the schema named by content): a survivor's yosys proof (up to 60 s: the core's take about a
    second, the object map's about 15 on a loaded machine and timed out at 30, none of the memory
    server's OSC proofs finished in 80) runs once, not in every run that
    meets it; a timeout is kept too."""
    import fcntl
    f = _proof_file(group)
    f.parent.mkdir(parents=True, exist_ok=True)
    if f.exists():
        known = json.loads(f.read_text() or "{}")
        if m.key in known:
            return None if known[m.key] == TIMED_OUT else known[m.key]
    proof = prove_equivalent(group, m)
    with open(f.with_suffix(".lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        known = json.loads(f.read_text() or "{}") if f.exists() else {}
        known[m.key] = TIMED_OUT if m.key in _PROOF_TIMED_OUT else proof
        write_atomic(f, json.dumps(known, indent=1))
    return proof


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


def verdict_file(group: Group, schema_dir: Path) -> Path:
    """build/rtl-mutation/verdicts/<group>-<hash>.jsonl: each mutant's verdict (the killing test or
    none) as it is reached, so that a full run that stops (its terminal closed, the machine
    restarted) goes on where it stopped. The hash names everything a verdict depends on: the
    schema (the design and every mutant), the group's tests, and the files they read (tests/rtl,
    rtl/testbench, python/apta, the vectors, compared by content); a change to any of them starts over.
    This driver is not hashed (its edits would discard hours of verdicts): after changing how a
    group's test runs here (the _core_*/_ms_* functions), run with --fresh."""
    h = hashlib.sha256(schema_dir.name.encode() + json.dumps([n for n, _ in group.tests]).encode()
                       + json.dumps(group.env, sort_keys=True).encode())
    # (this driver and its own test are not inputs of a verdict: the group's test list above is)
    for f in sorted([*(ROOT / "tests" / "rtl").glob("*.py"), *(ROOT / "rtl" / "testbench").glob("*.py"),
                      *(ROOT / "python" / "apta").glob("*.py"), *(ROOT / "schema").glob("*.json")]):
        if f.name not in ("mutation.py", "test_rtl_mutation.py"):
            h.update(f.name.encode() + f.read_bytes())
    for f in sorted((ROOT / "build" / "vectors").rglob("*.jsonl")):
        # the generator's key order varies from run to run (a step's merged expectations): by content
        h.update(f.name.encode() + "\n".join(json.dumps(json.loads(x), sort_keys=True)
                                             for x in f.read_text().splitlines() if x.strip()).encode())
    return RUNS / "verdicts" / f"{group.name}-{h.hexdigest()[:16]}.jsonl"


def earlier_kills(group: Group, schema_dir: Path, mutants: list[Mutant]) -> dict[int, dict]:
    """--keep-kills: the kills any earlier run of this group reached on the same schema (the same
    design and mutants), whatever the tests were then, and, by key, those reached on an earlier
    schema of the variant whose mutated module is unchanged (another module's fix since then, say);
    a test since weakened, or a changed module's effect on an unchanged one, would leave such a
    kill standing, so this is for closing survivors quickly, never for the measured run."""
    out = {}
    names = {n for n, _ in group.tests}
    here = fixed((schema_dir / group.file).read_text(), 0)
    by_key = {m.key: m for m in mutants}
    same: dict[tuple[str, str], bool] = {}          # (earlier schema, module): the module unchanged

    def unchanged(old: str, module: str) -> bool:
        if (old, module) not in same:
            f = RUNS / "schema" / old / group.file
            try:
                same[(old, module)] = f.exists() and \
                    _module_text(fixed(f.read_text(), 0), module) == _module_text(here, module)
            except AttributeError:      # the module is gone
                same[(old, module)] = False
        return same[(old, module)]

    for f in sorted((RUNS / "verdicts").glob(f"{group.name}-*.jsonl"), key=lambda f: f.stat().st_mtime):
        for i, v in read_verdicts(f).items():
            if v.get("by") not in names:
                continue
            if v.get("schema") == schema_dir.name:
                out[i] = v
            elif (m := by_key.get(v.get("key"))) and v.get("schema", "").startswith(group.variant + "-") \
                    and unchanged(v["schema"], m.module):
                out[m.id] = dict(v, id=m.id, carried_from=v["schema"])
    return out


def read_verdicts(path: Path) -> dict[int, dict]:
    """The verdicts of an earlier run of the same inputs (a torn last line, from a run killed while
    writing it, is ignored: that mutant runs again)."""
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                v = json.loads(line)
                out[int(v["id"])] = v
            except (ValueError, KeyError, TypeError):
                continue
    return out


# A test whose simulation holds only some modules cannot tell a mutant of another from the design:
# the decoder test's top is MsgDecoder alone.
REACHES = {"decoder": frozenset({"MsgDecoder"})}
# A mutant of a module that one of the group's tests is written for runs that test first (the others
# after it, in the group's order): the allocator's and the map's mutants pass the smoke tests, which
# never register or remove an object, so the group's order would cost each of them the smoke run
# first; the top's (mostly the dispatcher's) run the server-port tests first; the version table's
# (most of them one of its 64 counter lanes) the hold-table tests, the only ones that read a
# version. Its "killed by" is then the first test in that order.
FIRST = {"ExtentAlloc": "ms-alloc", "ObjMap": "ms-alloc", "MemoryServer": "ms-ports", "VersionTable": "ms-hold"}


def run_one(group: Group, mid: int, budget: dict, times: dict | None = None,
            module: str | None = None, first: str | None = None,
            only: str | None = None, case: tuple[str, str] | None = None) -> tuple[str | None, str | None, float]:
    """(the killing test, its failure) or (None, None) for a survivor, each test in a child
    process so that a hung or crashing simulation costs only its budget (seconds per test name);
    `times` receives each test's wall time. A mutant of `module` skips the tests that do not
    simulate it (REACHES); `first` (the test that killed a mutant of the same statement) runs
    before the module's FIRST and the group's order; `only`: that test alone, in a directory of its
    own (the unmutated run's tests run side by side); `case` (test, cocotb test): that test runs
    the cocotb test that killed a mutant before this one alone first (_ms_module). None of these
    changes a verdict, only how soon a kill is seen."""
    t0 = time.monotonic()
    rdir = OUT / "runs" / group.variant / (str(mid) if only is None else f"{mid}-{only}")
    rdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, APTA_RTL_MUTANT=str(mid), RTL_DIR=str(SCHEMA_DIRS[group.name]),
               APTA_MUTATION_DIR=str(OUT), APTA_OUT_DIR=str(rdir), **group.env)
    if mid:
        env["APTA_SIM_PREBUILT"] = "1"      # the unmutated run built every simulator of the group
    order = [n for n, _ in group.tests if only in (None, n)]
    for lead in (FIRST.get(module), first):
        if lead in order:
            order.remove(lead)
            order.insert(0, lead)
    for name in order:
        if module is not None and name in REACHES and module not in REACHES[name]:
            continue
        cmd = [sys.executable, "-m", "apta.rtl.mutation", "_one", group.name, name, str(mid)]
        t1 = time.monotonic()
        # its own process group: on a timeout the simulator the child started goes too
        cenv = dict(env, **{CASE_ENV: case[1]}) if case and case[0] == name else env
        p = subprocess.Popen(cmd, env=cenv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=budget[name])
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.communicate()
            return name, f"timeout: no verdict in {budget[name]:.0f} s (the design hangs)", time.monotonic() - t0
        r = subprocess.CompletedProcess(cmd, p.returncode, out, err)
        last = (r.stdout.strip().splitlines() or [""])[-1]
        if r.returncode != 0 or not last.startswith("MUTATION-RESULT "):
            # the harness itself broke (not a verdict on the mutant): never counted as a kill
            raise HarnessError(f"{group.name} mutant {mid} test {name}: exit {r.returncode}: "
                               f"{(r.stderr or r.stdout)[-600:]}")
        res = json.loads(last[len("MUTATION-RESULT "):])
        if times is not None:       # the test's own time: without the simulator builds it made
            times[name] = time.monotonic() - t1 - res["build_seconds"]
        if res["failure"]:
            why = res["failure"]
            if why == STOPPED or "cocotb failure" in why:   # the reason is in the simulation's log
                m = re.search(r"(Assertion failed: [^\n]+|\w*(?:Error|Mismatch): [^\n]+)", r.stdout)
                why = m.group(1).strip() if m else why
            return name, why[:300], time.monotonic() - t0
    return None, None, time.monotonic() - t0


def _child(group: str, test: str, mid: str) -> int:
    g = GROUPS[group]               # (`python -m apta.rtl.mutation _one ...`: the simulator loads the cocotb module from tests/rtl)
    fn = dict(g.tests)[test]
    env = {"APTA_RTL_MUTANT": mid}
    import io, contextlib
    from apta.testbench import core_bfm
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        failure = fn(g.variant, env)
    print("MUTATION-RESULT " + json.dumps({"failure": failure, "build_seconds": core_bfm.BUILD_SECONDS[0]}))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="mutation testing of the RTL regression")
    ap.add_argument("--groups", default=",".join(GROUPS))
    ap.add_argument("--sample", type=int, default=0, help="mutants per group, seeded (0 = all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--select", metavar="REGEX", help="only the mutants whose key or xkey matches (re.search; an "
                    "xkey names the same logic on every variant: a survivor's counterpart on another one)")
    ap.add_argument("--only-open", action="store_true", help="only the mutants listed in mutation_open.json "
                    "(re-run the open findings after a change of the tests)")
    ap.add_argument("--tests", metavar="NAMES", help="only these of each group's tests, comma-separated, in the "
                    "group's order (e.g. vectors: what the vectors alone kill)")
    ap.add_argument("--no-prove", action="store_true", help="no yosys proof for a survivor (with --tests: "
                    "what a subset of the tests kills; the written arguments still count)")
    ap.add_argument("--run-argued", action="store_true", help="also run the mutants argued equivalent in "
                    "mutation_equivalent.json (a kill shows an argument wrong; default: counted equivalent unrun)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--allow-open", action="store_true", help="exit 0 when every survivor is a listed open finding")
    ap.add_argument("--budget", type=float, default=20, help="least seconds per mutant and test")
    ap.add_argument("--budget-factor", type=float, default=8, help="budget per test: this times the unmutated run")
    ap.add_argument("--rtl", default=str(ROOT / "build" / "rtl"))
    ap.add_argument("--out", default=str(ROOT / "build" / "bench" / "rtl-mutation.json"))
    ap.add_argument("--fresh", action="store_true", help="run every mutant again (default: a verdict an "
                    "earlier run of the same schema, tests and vectors reached is reused, verdict_file)")
    ap.add_argument("--keep-kills", action="store_true", help="also reuse the kills of earlier runs of the same "
                    "schema made with other tests, and by key those of an earlier schema whose mutated module is "
                    "unchanged (earlier_kills: to close survivors fast, not for the measured run)")
    ap.add_argument("--reclassify", metavar="RESULTS", help="re-read a results file against the "
                    "equivalence arguments and open findings (after editing them) without running anything")
    args = ap.parse_args(argv)
    equivalent = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}
    open_findings = json.loads(OPEN.read_text()) if OPEN.exists() else {}
    if args.reclassify:
        report = json.loads(Path(args.reclassify).read_text())
        for gname, g in report["groups"].items():
            for m in g["mutants"]:
                if m["status"] in ("survived", "open") or (m["status"] == "equivalent" and not m["why"].startswith("yosys")):
                    why = argument(equivalent, gname, m["key"], m["what"])
                    m["status"], m["why"] = (("equivalent", why) if why else
                                             ("open", open_findings[m["key"]]) if m["key"] in open_findings else
                                             ("survived", None))
        report["table"] = table(report)
        Path(args.reclassify).write_text(json.dumps(report, indent=1))
        print(report["table"])
        left = sum(m["status"] == "survived" for g in report["groups"].values() for m in g["mutants"])
        print(f"rtl-mutation: {left} survivors neither argued equivalent nor listed as open findings")
        return 1 if left else 0
    report = {"seed": args.seed, "sample": args.sample, "groups": {}}
    t_all = time.monotonic()
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"rtl-mutation: working directory {OUT}", flush=True)
    for gname in args.groups.split(","):
        g = GROUPS[gname]
        if args.tests:
            keep = args.tests.split(",")
            g = Group(g.name, g.variant, g.top, g.file, [t for t in g.tests if t[0] in keep], g.modules)
            if not g.tests:
                print(f"{gname}: none of --tests {args.tests} is a test of this group "
                      f"({', '.join(n for n, _ in GROUPS[gname].tests)})", file=sys.stderr)
                return 2
        t0 = time.monotonic()
        d, mutants = generate(g, Path(args.rtl))
        print(f"{gname}: {len(mutants)} mutants of {g.variant}/{g.file} -> {d}", flush=True)
        # the unmutated schema must pass every test, or a kill means nothing; it also builds the
        # simulators, and measures each test without its builds: a mutant's budget per test is
        # --budget-factor times that, at least --budget seconds
        # (its tests side by side, --jobs at a time: as loaded as the mutants' runs will be)
        base_t: dict = {}
        with ThreadPoolExecutor(args.jobs) as ex:
            base = list(ex.map(lambda n: run_one(g, 0, {n: 1800}, base_t, only=n), [n for n, _ in g.tests]))
        if (fail := next((b for b in base if b[0]), None)):
            print(f"{gname}: the unmutated schema fails {fail[0]}: {fail[1]}", file=sys.stderr)
            return 2
        base_t = {n: base_t[n] for n, _ in g.tests}     # the group's order
        budget = {n: max(args.budget, args.budget_factor * t) for n, t in base_t.items()}
        vfile = verdict_file(g, d)
        known = {} if args.fresh else read_verdicts(vfile)   # (--fresh still records: the last line wins)
        if args.keep_kills:
            known = {**earlier_kills(g, d, mutants), **known}
        vfile.parent.mkdir(parents=True, exist_ok=True)
        vlock = threading.Lock()
        print(f"{gname}: {len(known)} verdicts of an earlier run reused (marked *; --fresh runs them again): {vfile}",
              flush=True)
        print(f"{gname}: unmutated: " + ", ".join(f"{n} {t:.1f} s (budget {budget[n]:.0f} s)" for n, t in base_t.items()),
              flush=True)
        chosen = mutants
        if args.select:
            chosen = [m for m in chosen if re.search(args.select, m.key) or (m.xkey and re.search(args.select, m.xkey))]
        if args.only_open:
            chosen = [m for m in chosen if m.key in open_findings]
        if args.sample:
            # of the selected ones (without --select/--only-open: of all, the sample seeded runs measured)
            chosen = sorted(random.Random(args.seed).sample(chosen, min(args.sample, len(chosen))), key=lambda m: m.id)

        if (stale := stale_arguments(equivalent, gname, chosen)):
            print(f"{gname}: {len(stale)} arguments written for this group name another mutation than its "
                  f"mutant of their key now (they run; argue them again if they survive): {', '.join(stale[:6])}"
                  + (" ..." if len(stale) > 6 else ""), flush=True)
        crossed = ({o["xkey"]: o for o in report["groups"][g.cross]["mutants"] if o["status"] == "killed" and o.get("xkey")}
                   if g.cross in report["groups"] else {})
        if crossed:
            print(f"{gname}: {sum(m.xkey in crossed for m in chosen)} of its {len(chosen)} mutants are covered by "
                  f"{g.cross}'s kills of the same statement's mutant (not run again)", flush=True)

        last_case: dict[str, tuple[str, str]] = {}     # module -> (test, cocotb test) of its last kill

        def one(m: Mutant, hint: str | None = None) -> Mutant:
            if m.xkey and (o := crossed.get(m.xkey)):   # the same logic's mutant killed on the other variant
                m.status, m.by = "covered", f"{g.cross}: {o['by']}"
                m.why = (f"the same logic's mutant ({o['key']} there, {m.xkey} by definitions) is killed on "
                         f"{GROUPS[g.cross].variant} by {o['by']}")
                return m
            if (proof := known_proof(g, m)):  # yosys proved it equal to the design: no test can kill it
                m.status, m.why = "equivalent", proof + " (proved by an earlier run of this schema)"
                print(f"  {gname} #{m.id:4d} {m.controller:18s} {m.kind:9s} {m.status:10s} proved earlier  "
                      f"{m.module}:{m.line} {m.what[:90]}", flush=True)
                return m
            if (why := argument(equivalent, gname, m.key, m.what)) and not args.run_argued:
                m.status, m.why = "equivalent", why
                print(f"  {gname} #{m.id:4d} {m.controller:18s} {m.kind:9s} {m.status:10s} argued, not run "
                      f"{m.module}:{m.line} {m.what[:90]}", flush=True)
                return m
            if (v := known.get(m.id)) and v.get("key") == m.key:
                m.by, why, m.seconds, m.cached = v["by"], v["why"], v["seconds"], True
            else:
                m.by, why, m.seconds = run_one(g, m.id, budget, module=m.module, first=hint,
                                               case=last_case.get(m.module))
                with vlock, open(vfile, "a") as f:
                    f.write(json.dumps({"id": m.id, "key": m.key, "schema": d.name, "by": m.by, "why": why,
                                        "seconds": round(m.seconds, 2)}) + "\n")
            if m.by:
                m.status, m.why = "killed", why
                if (c := FIRST_CASE.search(why or "")):
                    last_case[m.module] = (m.by, c.group(1))
            elif (why := argument(equivalent, gname, m.key, m.what)):
                m.status, m.why = "equivalent", why
            elif m.key in open_findings:      # analysed: not equivalent (no proof to try)
                m.status, m.why = "open", open_findings[m.key]
            elif not args.no_prove and (proof := cached_proof(g, m)):
                m.status, m.why = "equivalent", proof
            else:
                m.status = "survived"
            if m.status != "survived":      # a survivor's files stay for its analysis
                shutil.rmtree(OUT / "runs" / g.variant / str(m.id), ignore_errors=True)
            print(f"  {gname} #{m.id:4d} {m.controller:18s} {m.kind:9s} {m.status:10s} "
                  f"{m.by or '':12s} {m.seconds:5.1f}s{'*' if m.cached else ' '} {m.module}:{m.line} {m.what[:90]}", flush=True)
            return m

        # The mutants of one statement run in turn in one job, each with the test that killed the
        # one before it first: they mostly fail the same test, and a hold-table mutant then costs
        # the hold tests (5 s), not the smoke tests before them (25 s). Which job runs which
        # statement does not change a verdict, so the report is the same at any --jobs. A statement
        # of many mutants is cut into runs of STMT_RUN (the version table's row write has 317, five
        # per lane: alone in one job, it left the other idle for two hours).
        def statement(ms: list[Mutant]) -> list[Mutant]:
            hint = None
            for m in ms:
                one(m, hint)
                hint = m.by if m.status == "killed" else hint
            return ms

        stmts = [ms[i:i + STMT_RUN] for ms in (list(x) for _, x in itertools.groupby(chosen, key=lambda m: (m.module, m.line)))
                 for i in range(0, len(ms), STMT_RUN)]
        with ThreadPoolExecutor(args.jobs) as ex:
            done = [m for ms in ex.map(statement, stmts) for m in ms]
        report["groups"][gname] = {"variant": g.variant, "generated": len(mutants), "run": len(done),
                                   "unmutated_seconds": {n: round(t, 2) for n, t in base_t.items()},
                                   "tests": [n for n, _ in g.tests], "seconds": round(time.monotonic() - t0, 1),
                                   "cached": sum(m.cached for m in done),
                                   # the time the group's mutants took to run, in this run and earlier ones
                                   "mutant_seconds": round(sum(m.seconds for m in done), 1),
                                   "mutants": [asdict(m) for m in done]}
        # the groups so far, in case the run stops before the next one ends (covering not yet applied)
        write_atomic(Path(args.out), json.dumps({**report, "partial": True, "table": table(report)}, indent=1))
    covered = json.loads(COVERED.read_text()) if COVERED.exists() else {}
    for gname, g in report["groups"].items():
        for m in g["mutants"]:
            c = pinned(covered, gname, m["key"], m["what"])
            if m["status"] not in ("survived", "open") or not c or c["group"] not in report["groups"]:
                continue
            other = {o["key"]: o for o in report["groups"][c["group"]]["mutants"]}
            if all(k in other and other[k]["status"] == "killed" for k in c["keys"]):
                m["status"], m["by"] = "covered", f"{c['group']}: {other[c['keys'][0]]['by']}"
                m["why"] = c["why"]
    for gname, g in report["groups"].items():     # the other direction of `cross`
        other = GROUPS[gname].cross
        if other in report["groups"]:
            killed = {m["xkey"]: m for m in g["mutants"] if m["status"] == "killed" and m.get("xkey")}
            for m in report["groups"][other]["mutants"]:
                if m["status"] in ("survived", "open") and m.get("xkey") in killed:
                    k = killed[m["xkey"]]
                    m["status"], m["by"] = "covered", f"{gname}: {k['by']}"
                    m["why"] = f"the same logic's mutant ({k['key']} there) is killed on {g['variant']} by {k['by']}"
    report["seconds"] = round(time.monotonic() - t_all, 1)
    report["table"] = table(report)
    report["workdir"] = str(OUT)
    write_atomic(Path(args.out), json.dumps(report, indent=1))
    print(report["table"])
    surv = [m for g in report["groups"].values() for m in g["mutants"] if m["status"] == "survived"]
    opn = [m for g in report["groups"].values() for m in g["mutants"] if m["status"] == "open"]
    print(f"rtl-mutation: {sum(g['run'] for g in report['groups'].values())} mutants run, "
          f"{len(surv)} new non-equivalent survivors, {len(opn)} open findings ({OPEN.name}), "
          f"{report['seconds']:.0f} s -> {args.out}")
    return 1 if surv or (opn and not args.allow_open) else 0


def write_atomic(path: Path, text: str) -> None:
    """A results file two runs may both write is replaced whole, never read half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def table(report: dict) -> str:
    rows = ["| group | controller | generated | run | killed | by test | survived | open | equivalent | covered |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for gname, g in report["groups"].items():
        ctls = sorted({m["controller"] for m in g["mutants"]})
        for c in ctls:
            ms = [m for m in g["mutants"] if m["controller"] == c]
            k = [m for m in ms if m["status"] == "killed"]
            by = {}
            for m in k:
                by[m["by"]] = by.get(m["by"], 0) + 1
            rows.append(f"| {gname} ({g['variant']}) | {c} | {g['generated']} | {len(ms)} | {len(k)} | "
                        + ", ".join(f"{t} {n}" for t, n in by.items()) + f" | "
                        f"{sum(m['status'] == 'survived' for m in ms)} | {sum(m['status'] == 'open' for m in ms)} | "
                        f"{sum(m['status'] == 'equivalent' for m in ms)} | {sum(m['status'] == 'covered' for m in ms)} |")
    for gname, g in report["groups"].items():
        if "mutant_seconds" in g:
            rows.append(f"\n{gname}: {g['run']} mutants, {g['mutant_seconds'] / 60:.0f} min of mutant runs "
                        f"({g.get('cached', 0)} of them by an earlier run), {g['seconds'] / 60:.0f} min wall in this one")
    return "\n".join(rows)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        sys.exit(_child(*sys.argv[2:5]))
    sys.exit(main())
