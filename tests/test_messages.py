"""schema/messages.json and its Python codec (python/apta/messages.py): every message round-trips, malformed
encodings are refused with an error naming the message and field. The RTL decoder is checked
against the same codec in tests/rtl/ (`make test-rtl`)."""
from __future__ import annotations

import random
from pathlib import Path

import re

import pytest

ROOT = Path(__file__).resolve().parent.parent
from apta import messages
from apta.messages import MessageError

S = messages.load()


def _model_types() -> set:
    """MsgType of spec/murphi/apta.m, read from the model itself (not a copy)."""
    m = re.search(r"MsgType\s*:\s*enum\s*\{(.*?)\}", (ROOT / "spec" / "murphi" / "apta.m").read_text(), re.S)
    assert m, "spec/murphi/apta.m: no `MsgType: enum { ... }`"
    return {w for w in re.findall(r"[A-Za-z]\w*", re.sub(r"--[^\n]*", "", m.group(1)))}


MODEL_TYPES = _model_types()


def _values(msg, pick):
    return {f.name: pick(f) for f in msg.fields}


def test_schema_covers_the_model_and_fence():
    # Fence: the control plane's; ObjErr: the memory server's answer to bad input (rtl/MEMSERVER.md),
    # which the model has no message for (its inputs are always well formed); RejoinRefused: the
    # answer to a Rejoin at the last epoch value, which the model's bound MAX_EPOCH never reaches
    # (rtl/CORE.md, guard `rejoin.exhausted`)
    # GetRetry, GetCancelled: the versioned gets' answers (VERSIONED) are the model's
    assert {"GetRetry", "GetCancelled"} <= MODEL_TYPES
    assert set(S.messages) == MODEL_TYPES | {"Fence", "ObjErr", "RejoinRefused"}
    assert all(f.name in ("server", "epoch") for f in S.messages["Rejoin"].fields)
    for m in S.messages.values():                          # every message carries server and epoch
        assert [f.name for f in m.fields[:2]] == ["server", "epoch"], m.name
    assert len({m.opcode for m in S.messages.values()}) == len(S.messages)


@pytest.mark.parametrize("name", sorted(S.messages))
def test_round_trip(name):
    msg = S.messages[name]
    rng = random.Random(name)
    for pick in (lambda f: f.min, lambda f: f.max, lambda f: rng.randint(f.min, f.max)):
        vals = _values(msg, pick)
        flit = S.encode(name, vals)
        assert 0 <= flit < (1 << S.flit_bits)
        assert flit & 0xF == msg.opcode
        assert S.decode(flit) == (name, vals)
        assert S.check(flit) == (0, 0)


def test_versioned_get_encoding():
    """The versioned get: ObjGet's last field is the version it needs; omitted it is 0,
    the paper's get, so every unversioned caller encodes the paper's flit plus zero bits."""
    g = S.messages["ObjGet"]
    assert [f.name for f in g.fields] == ["server", "epoch", "obj", "version"]
    assert [f.name for f in g.fields if f.default is not None] == ["version"]
    assert S.encode("ObjGet", server=1, epoch=2, obj=3) == S.encode("ObjGet", server=1, epoch=2, obj=3, version=0)
    v = S.encode("ObjGet", server=1, epoch=2, obj=3, version=7)
    assert S.decode(v) == ("ObjGet", {"server": 1, "epoch": 2, "obj": 3, "version": 7})
    assert v >> g.fields[-1].lo == 7
    for name in ("GetRetry", "GetCancelled"):          # their answers name the version the get asked for
        assert S.messages[name].channel == "rsp"
        assert [f.name for f in S.messages[name].fields] == ["server", "epoch", "obj", "version"]
        with pytest.raises(MessageError, match=rf"{name}\.obj: missing field"):
            S.encode(name, server=0, epoch=0, version=1)


def test_fields_do_not_overlap():
    for m in S.messages.values():
        lo = S.opcode_bits
        for f in m.fields:
            assert f.lo == lo and f.width > 0
            lo += f.width
        assert m.bits == lo <= S.flit_bits


def test_unknown_opcode():
    used = {m.opcode for m in S.messages.values()}
    for op in sorted(set(range(16)) - used):
        with pytest.raises(MessageError, match=f"unknown opcode {op}") as e:
            S.decode(op | (1 << 10))
        assert e.value.error == "badOpcode"
        assert S.check(op) == (S.errors["badOpcode"], 0)
    with pytest.raises(MessageError, match="unknown message type 'ObjPut'"):
        S.encode("ObjPut", server=0, epoch=0)


def test_encode_field_out_of_range_names_the_field():
    with pytest.raises(MessageError, match=r"^PutLine\.line: 64 out of range 0\.\.63") as e:
        S.encode("PutLine", server=1, epoch=0, obj=2, txn=3, line=64, data=0)
    assert e.value.field == "line" and e.value.message == "PutLine"
    top = 1 << S.params["epochBits"]                   # one past the last epoch value
    with pytest.raises(MessageError, match=rf"ObjGet\.epoch: {top} out of range 0\.\.{top - 1}"):
        S.encode("ObjGet", server=1, epoch=top, obj=0)
    with pytest.raises(MessageError, match=r"ObjGet\.obj: -1 out of range"):
        S.encode("ObjGet", server=1, epoch=0, obj=-1)
    with pytest.raises(MessageError, match=r"ObjBISnp\.size: 0 out of range 1\.\.64"):
        S.encode("ObjBISnp", server=1, epoch=0, obj=0, base=0, size=0)
    with pytest.raises(MessageError, match=r"ObjGet\.server: not an integer"):
        S.encode("ObjGet", server="1", epoch=0, obj=0)


def test_encode_missing_and_unexpected_fields():
    with pytest.raises(MessageError, match=r"^PutCommit\.txn: missing field"):
        S.encode("PutCommit", server=1, epoch=0, obj=2)
    with pytest.raises(MessageError, match=r"^Rejoin\.obj: unexpected field"):
        S.encode("Rejoin", server=1, epoch=0, obj=2)


def test_decode_field_out_of_range_names_the_field():
    ok = S.encode("ObjBISnp", server=2, epoch=1, obj=5, base=0x1000, size=8)
    size = next(f for f in S.messages["ObjBISnp"].fields if f.name == "size")
    bad = ok & ~(((1 << size.width) - 1) << size.lo) | (65 << size.lo)
    with pytest.raises(MessageError, match=r"^ObjBISnp\.size: 65 out of range 1\.\.64") as e:
        S.decode(bad)
    assert (e.value.error, e.value.field) == ("fieldRange", "size")
    assert S.check(bad) == (S.errors["fieldRange"], S.field_ids["size"])


def test_decode_reserved_bits_and_width():
    flit = S.encode("Rejoin", server=3, epoch=7)
    with pytest.raises(MessageError, match=r"^Rejoin: reserved bits") as e:
        S.decode(flit | (1 << (S.flit_bits - 1)))
    assert e.value.error == "reservedBits"
    with pytest.raises(MessageError, match="wider than"):
        S.decode(flit | (1 << S.flit_bits))
    with pytest.raises(MessageError, match="non-negative integer"):
        S.decode(-1)


def test_parameters_change_widths_and_ranges():
    s = messages.load(servers=3, linesPerObject=2)
    assert s.params["serverBits"] == 2 and s.params["lineBits"] == 1
    with pytest.raises(MessageError, match=r"ObjGet\.server: 3 out of range 0\.\.2"):
        s.encode("ObjGet", server=3, epoch=0, obj=0)
    flit = s.encode("ObjGet", server=2, epoch=0, obj=0) | (3 << 4)   # server field = 3
    assert s.check(flit) == (s.errors["fieldRange"], s.field_ids["server"])
    with pytest.raises(ValueError, match="unknown parameter 'sever'"):
        messages.load(sever=3)


def test_generated_scala_mentions_every_message(tmp_path):
    out = tmp_path / "Messages.scala"
    assert messages.main(["scala", "--out", str(out)]) == 0
    text = out.read_text()
    for m in S.messages.values():
        assert f"class {m.name}Msg(implicit p: AptaParams) extends Bundle" in text
        assert f"val {m.name} = {m.opcode} " in text


# ---- the generated C codec (python/apta/messages.py c -> build/qemu-cxl/apta_msg.h) ------------------------
def _c_driver(s) -> str:
    """A C program: per input line `<hex flit>`, prints `check <err> <field>`, and for a legal flit
    the unpacked fields (hex, wide ones as little-endian byte arrays read back as numbers) and the
    flit packed again from them."""
    L = ['#include <stdio.h>', '#include <string.h>', '#include "apta_msg.h"',
         "static void hexin(const char *h, uint8_t *f) {",
         "  size_t n = strlen(h); memset(f, 0, APTA_FLIT_BYTES);",
         "  for (size_t i = 0; i < n; i++) { char c = h[n - 1 - i]; unsigned v = c <= '9' ? c - '0' : c - 'a' + 10;",
         "    f[i / 2] |= (uint8_t)(v << (4 * (i % 2))); } }",
         "static void hexout(const uint8_t *f, unsigned n) { int lead = 1;",
         "  for (unsigned i = n; i-- > 0;) { if (lead && !f[i] && i) continue; printf(lead ? \"%x\" : \"%02x\", f[i]); lead = 0; } }",
         "int main(void) { char line[1024]; uint8_t f[APTA_FLIT_BYTES], g[APTA_FLIT_BYTES];",
         "  while (scanf(\"%1023s\", line) == 1) { hexin(line, f); int field; int e = apta_check(f, &field);",
         "    printf(\"check %d %d\", e, field);",
         "    if (!e) switch (apta_opcode(f)) {"]
    for m in s.messages.values():
        L.append(f"    case APTA_OP_{m.name}: {{ apta_{m.name} m; apta_unpack_{m.name}(f, &m);"
                 f" printf(\" {m.name}\");")
        for fd in m.fields:
            if fd.width <= 64:
                L.append(f'      printf(" {fd.name}=%llx", (unsigned long long)m.{fd.name});')
            else:
                L.append(f'      printf(" {fd.name}="); hexout(m.{fd.name}, sizeof m.{fd.name});')
        L.append(f"      apta_pack_{m.name}(g, &m); break; }}")
    L += ["    }", "    if (!e) { printf(\" flit=\"); hexout(g, APTA_FLIT_BYTES); }", "    printf(\"\\n\"); }",
          "  return 0; }"]
    return "\n".join(L)


@pytest.mark.parametrize("params", [{}, {"servers": 3, "linesPerObject": 8}], ids=["default", "ms3"])
def test_c_codec_round_trips_the_python_vectors(tmp_path, params):
    import shutil
    import subprocess
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    s = messages.Schema(messages.json.loads(messages.SCHEMA_PATH.read_text()), params)
    (tmp_path / "apta_msg.h").write_text(messages.gen_c(s, "schema/messages.json"))
    (tmp_path / "drv.c").write_text(_c_driver(s))
    exe = tmp_path / "drv"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-I", str(tmp_path),
                    "-o", str(exe), str(tmp_path / "drv.c")], check=True)
    flits = []
    for name, msg in s.messages.items():
        rng = random.Random(name)
        for pick in (lambda f: f.min, lambda f: f.max, lambda f: rng.randint(f.min, f.max)):
            flits.append(s.encode(name, _values(msg, pick)))
    rng = random.Random(7)
    bad = [op for op in range(16) if op not in s.by_opcode]
    flits += [bad[0], bad[-1] | (1 << 20),                          # badOpcode
              s.encode("ObjGet", server=0, epoch=0, obj=1) | (1 << (s.flit_bits - 1)),  # reservedBits
              1 << s.flit_bits]                                     # wider than a flit
    snp = s.messages["ObjBISnp"]                                    # fieldRange: size 0 (min 1)
    flits.append(s.encode("ObjBISnp", server=0, epoch=0, obj=1, base=0, size=1) & ~(((1 << 16) - 1) << snp.fields[4].lo))
    srv = s.messages["ObjGet"].fields[0]                            # fieldRange: server >= servers
    if s.params["servers"] < (1 << srv.width):
        flits.append(s.messages["ObjGet"].opcode | ((1 << srv.width) - 1) << srv.lo)
    flits += [rng.getrandbits(s.flit_bits) for _ in range(300)]     # mostly garbage
    nbytes = (s.flit_bits + 7) // 8
    # the driver reads ceil(flitBits/8) bytes: a flit wider than that cannot be fed to it
    flits = [f for f in flits if f < (1 << (8 * nbytes))]
    out = subprocess.run([str(exe)], input="\n".join(f"{f:x}" for f in flits) + "\n",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == len(flits)
    legal = 0
    for f, o in zip(flits, out):
        words = o.split()
        assert (int(words[1]), int(words[2])) == s.check(f), (hex(f), o)
        if s.check(f) != (0, 0):
            continue
        legal += 1
        name, fields = s.decode(f)
        assert words[3] == name
        got = dict(w.split("=") for w in words[4:])
        assert int(got.pop("flit"), 16) == f
        assert {k: int(v, 16) for k, v in got.items()} == fields
    assert legal >= 3 * len(s.messages)
