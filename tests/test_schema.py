"""schema/: each definition and each of its generated forms (Python, Scala, C/C++, the contracts'
tables), and every layer that must agree with it. Plain Python (+ a C compiler), no RTL build needed
except for the comparison with Elaborate's params.json (skipped without it, an error under APTA_RTL=1).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from apta import schema, vectors_io
from apta.paths import ROOT, SCHEMA


def test_python_forms_follow_the_schema_files():
    core = json.loads((SCHEMA / "core.json").read_text())
    for name, e in core["enums"].items():
        assert schema.enum(name) == tuple(v[0] for v in e["values"])
    codes = json.loads((SCHEMA / "messages.json").read_text())["msErrors"]["codes"]
    assert schema.ms_errors() == {c["code"]: c["name"] for c in codes}
    # the vector format speaks the same names
    assert vectors_io.STATES == schema.enum("DirState") and vectors_io.RESULTS == schema.enum("ReqResult")


def test_generated_c_header_compiles_and_agrees(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("no C compiler")
    (tmp_path / "apta_enums.h").write_text(schema.gen_c())
    prog = ['#include <stdio.h>', '#include "apta_enums.h"', "int main(void) {"]
    prog.append('  for (int i = 0; i < APTA_DIR_STATE_COUNT; i++) printf("DirState %d %s\\n", i, APTA_DIR_STATE_NAME[i]);')
    prog.append('  for (int i = 0; i < APTA_REQ_RESULT_COUNT; i++) printf("ReqResult %d %s\\n", i, APTA_REQ_RESULT_NAME[i]);')
    prog.append('  for (int i = 1; i < 16; i++) if (APTA_ERR_NAME[i][0] != \'?\') printf("err %d %s\\n", i, APTA_ERR_NAME[i]);')
    prog.append('  printf("zombie %d\\n", APTA_ERR_ZOMBIE);')
    prog += ["  return 0;", "}"]
    (tmp_path / "t.c").write_text("\n".join(prog))
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-o", str(tmp_path / "t"), str(tmp_path / "t.c")], check=True)
    out = subprocess.run([str(tmp_path / "t")], check=True, capture_output=True, text=True).stdout.splitlines()
    want = [f"DirState {i} {n}" for i, n in enumerate(schema.enum("DirState"))]
    want += [f"ReqResult {i} {n}" for i, n in enumerate(schema.enum("ReqResult"))]
    want += [f"err {k} {v}" for k, v in sorted(schema.ms_errors().items())]
    want.append(f"zombie {schema.ms_error_code('zombie')}")
    assert out == want


def test_generated_scala_has_every_definition():
    from apta import messages
    text = messages.gen_scala(json.loads((SCHEMA / "messages.json").read_text()), "schema/messages.json") + schema.gen_scala()
    for name, vals in schema.enums().items():
        body = re.search(rf"object {name} extends ChiselEnum \{{(.*?)\n\}}", text, re.S)
        assert body, f"no ChiselEnum {name}"
        assert re.findall(r"val (\w+) = Value\((\d+)\.U\)", body.group(1)) == [(v, str(i)) for i, v in enumerate(vals)]
    errs = re.search(r"object MsErrCode \{(.*?)\n\}", text, re.S).group(1)
    assert dict((n, int(c)) for n, c in re.findall(r"val (\w+) = (\d+)  //", errs)) == \
        {v: k for k, v in schema.ms_errors().items()}
    defaults = re.search(r"object ParamDefaults \{(.*?)\n\}", text, re.S).group(1)
    assert dict((n, int(c)) for n, c in re.findall(r"val (\w+) = (\d+)", defaults)) == schema.params()


def test_contract_tables_are_generated_from_the_schema():
    assert schema.sync_docs(check=True) == [], "run `.venv/bin/python -m apta.schema docs`"


def test_a_changed_code_reaches_every_generated_form(tmp_path, monkeypatch):
    """Change an error code in a copy of the schema: the C header, the Scala and the docs table all
    change with it (nothing holds a second copy)."""
    raw = json.loads((SCHEMA / "messages.json").read_text())
    for c in raw["msErrors"]["codes"]:
        if c["name"] == "axiError":
            c["code"] = 13
    p = tmp_path / "messages.json"
    p.write_text(json.dumps(raw))
    schema._ms_errors.cache_clear()
    try:
        monkeypatch.setattr(schema, "MESSAGES_PATH", p)
        assert schema.ms_error_code("axiError") == 13
        assert "#define APTA_ERR_AXI_ERROR 13" in schema.gen_c()
        assert "val axiError = 13" in schema.gen_scala()
        assert "| 13 | axiError |" in schema._md_errors()
    finally:
        schema._ms_errors.cache_clear()


def test_malformed_schema_is_named(tmp_path, monkeypatch):
    raw = json.loads((SCHEMA / "messages.json").read_text())
    raw["msErrors"]["codes"][1]["code"] = raw["msErrors"]["codes"][0]["code"]   # a duplicate code
    p = tmp_path / "messages.json"
    p.write_text(json.dumps(raw))
    schema._ms_errors.cache_clear()
    try:
        monkeypatch.setattr(schema, "MESSAGES_PATH", p)
        with pytest.raises(schema.SchemaError, match=r"messages.json: msErrors.codes\[1\]: code 1 duplicate"):
            schema.ms_errors()
    finally:
        schema._ms_errors.cache_clear()


def test_sim_params_take_the_rtl_geometry_from_the_schema():
    raw = json.loads((ROOT / "sim" / "params.json").read_text())
    ms = raw["memory_server"]
    # no copies: the simulator's directory geometry and counter bound are references
    for key, name in (("dir_sets", "dirSets"), ("dir_ways", "dirWays"), ("max_pend_per_server", "maxPendPerServer")):
        assert ms[key].get("schema") == name and "value" not in ms[key], key
    resolved = schema.load_sim_params(ROOT / "sim" / "params.json")
    assert resolved["memory_server"]["max_pend_per_server"]["value"] == schema.params()["maxPendPerServer"]


def test_rtl_defaults_are_the_schema_params():
    """Elaborate writes every AptaParams value of the default variant: equal to schema/ (params.json
    and messages.json parameters), so the RTL, the simulator and the daemon share one geometry."""
    built = ROOT / "build" / "rtl" / "default" / "params.json"
    if not built.exists():
        if os.environ.get("APTA_RTL"):
            pytest.fail(f"{built} missing: run `make rtl`")
        pytest.skip("no RTL build (make rtl)")
    rtl = json.loads(built.read_text())
    variants = json.loads((ROOT / "rtl" / "variants.json").read_text())
    overridden = set(next((v for v in variants.get("variants", []) if v.get("name") == "default"), {}).get("params", {}))
    diff = {k: (v, rtl.get(k)) for k, v in schema.params().items() if k not in overridden and rtl.get(k) != v}
    assert not diff, f"schema default != AptaParams default (schema, rtl): {diff}"
