"""python/apta/history.py on hand-made histories: one valid history per workflow pattern, one history per
property that violates it (the checker's mutants: each must be rejected on that property and no
other), and malformed lines rejected with file, line and field."""
import json
from pathlib import Path

import pytest

from apta import history
from apta.history import HistoryError, check_file, check_lines


def H(*events):
    """Events as (ev, {fields}) or ev strings -> JSON lines."""
    out = []
    for e in events:
        if isinstance(e, str):
            e = (e, {})
        ev, kw = e
        out.append(json.dumps({"ev": ev, **kw}))
    return out


def place(run, server, after=(), inputs=None, fn=None, epoch=1):
    d = {"run": run, "fn": fn or run.split("#")[0], "server": server, "epoch": epoch, "after": list(after)}
    if inputs is not None:
        d["inputs"] = list(inputs)
    return ("place", d)


def get(i, run, obj):
    return ("get", {"id": i, "run": run, "obj": obj})


def ret(i, *lines, hit=False):
    return ("get_ret", {"id": i, "lines": list(lines), "hit": hit})


def put(i, run, obj, v):
    return ("put", {"id": i, "run": run, "obj": obj, "version": v})


def ack(i):
    return ("put_ack", {"id": i})


def done(run):
    return ("done", {"run": run})


def final(obj, *lines):
    return ("final", {"obj": obj, "lines": list(lines)})


META = ("meta", {"format": 1, "source": "hand", "initial": {"x": 0}})

# ---- valid histories, one per pattern ------------------------------------------------------------
VALID = {
    # f1 -> f2 -> f3; f2 updates x in place on another server, f3 on the server holding a stale copy
    "pipeline": H(META,
                  place("f1", "c1"), get("g1", "f1", "x"), ret("g1", 0, 0), put("p1", "f1", "x", 1), ack("p1"), done("f1"),
                  place("f2", "c2", ["f1"]), get("g2", "f2", "x"), ret("g2", 1, 1), put("p2", "f2", "x", 2), ack("p2"),
                  done("f2"),
                  place("f3", "c1", ["f2"]), get("g3", "f3", "x"), ret("g3", 2, 2), done("f3"),
                  final("x", 2, 2), "end"),
    # p writes x; c1 and c2 read it concurrently on two servers (one a cache hit)
    "broadcast": H(META,
                   place("p", "c1"), put("p1", "p", "x", "v1"), ack("p1"), done("p"),
                   place("a", "c1", ["p"]), place("b", "c2", ["p"]),
                   get("ga", "a", "x"), get("gb", "b", "x"), ret("gb", "v1", "v1"), ret("ga", "v1", "v1", hit=True),
                   done("a"), done("b"), final("x", "v1", "v1"), "end"),
    # broadcast then gather; a re-execution after a crash mid-put (the crashed put never acked)
    "broadcast-gather": H(META,
                          place("p", "c1"), put("p1", "p", "x", 1), ack("p1"), done("p"),
                          place("a#1", "c2", ["p"]), place("b", "c3", ["p"]),
                          get("ga1", "a#1", "x"), ret("ga1", 1), put("pa1", "a#1", "ya", 1),
                          ("crash", {"server": "c2"}), ("fence", {"server": "c2", "epoch": 1}),
                          get("gb", "b", "x"), ret("gb", 1), put("pb", "b", "yb", 1), ack("pb"), done("b"),
                          place("a#2", "c1", ["p"], fn="a"), get("ga2", "a#2", "x"), ret("ga2", 1, hit=True),
                          put("pa2", "a#2", "ya", 2), ack("pa2"), done("a#2"),
                          ("rejoin", {"server": "c2", "epoch": 2}),
                          place("g", "c2", ["a", "b"], epoch=2), get("gg1", "g", "ya"), ret("gg1", 2),
                          get("gg2", "g", "yb"), ret("gg2", 1), put("pg", "g", "x", 2), ack("pg"), done("g"),
                          final("x", 2), final("ya", 2), final("yb", 1), "end"),
    # s scatters x0, x1; workers w0 (c1), w1 (c2); g gathers, with commit events from the server
    "scatter-gather": H(("meta", {"format": 1, "commits": True}),
                        place("s", "c1"), put("ps0", "s", "x0", 1), ("commit", {"obj": "x0", "version": 1, "seq": 1}),
                        ack("ps0"), put("ps1", "s", "x1", 1), ("commit", {"obj": "x1", "version": 1, "seq": 2}),
                        ack("ps1"), done("s"),
                        place("w0", "c1", ["s"], inputs=["x0"]), place("w1", "c2", ["s"], inputs=["x1"]),
                        get("g0", "w0", "x0"), ret("g0", 1, 1, hit=True), get("g1", "w1", "x1"), ret("g1", 1, 1),
                        put("py0", "w0", "y0", 1), put("py1", "w1", "y1", 1),
                        ("commit", {"obj": "y1", "version": 1, "seq": 3}), ("commit", {"obj": "y0", "version": 1, "seq": 4}),
                        ack("py0"), ack("py1"), done("w0"), done("w1"),
                        place("g", "c2", ["w0", "w1"]), get("gy0", "g", "y0"), ret("gy0", 1), get("gy1", "g", "y1"),
                        ret("gy1", 1, hit=True), done("g"),
                        final("x0", 1, 1), final("y0", 1), final("y1", 1), "end"),
    # m0, m1 map (digests instead of versions per line) -> r reduces; a zombie put of the fenced
    # c2 never commits, and the memory keeps the latest acked version
    "map-reduce": H(("meta", {"format": 1, "initial": {"in": 0}, "digests": {"d-in": 0}}),
                    place("m0", "c1"), ("get", {"id": "a", "run": "m0", "obj": "in"}),
                    ("get_ret", {"id": "a", "digest": "d-in"}),
                    ("put", {"id": "b", "run": "m0", "obj": "part0", "version": 1, "digest": "d-p0"}), ack("b"), done("m0"),
                    place("m1", "c2"), ("put", {"id": "c", "run": "m1", "obj": "part1", "version": 1, "digest": "d-p1a"}),
                    ("fence", {"server": "c2", "epoch": 1}),
                    place("m1#2", "c1", fn="m1"), ("put", {"id": "d", "run": "m1#2", "obj": "part1", "version": 2,
                                                          "digest": "d-p1b"}), ack("d"), done("m1#2"),
                    place("r", "c1", ["m0", "m1"]), ("get", {"id": "e", "run": "r", "obj": "part0"}),
                    ("get_ret", {"id": "e", "digest": "d-p0"}), ("get", {"id": "f", "run": "r", "obj": "part1"}),
                    ("get_ret", {"id": "f", "digest": "d-p1b"}), put("g", "r", "out", 1), ack("g"), done("r"),
                    ("final", {"obj": "part1", "digest": "d-p1b"}), final("out", 1), "end"),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_pattern(name):
    rep = check_lines(VALID[name], name)
    assert rep.ok, str(rep)
    assert rep.stats["p4_checked"]


# ---- the checker's mutants: one broken history per property ----------------------------------
MUTANTS = {
    # f2 placed on c1 after f1's put of x was acked, but c1 still returns its stale copy
    "P1": H(META, place("f0", "c1"), get("g0", "f0", "x"), ret("g0", 0, 0), done("f0"),
            place("f1", "c2", ["f0"]), put("p1", "f1", "x", 1), ack("p1"), done("f1"),
            place("f2", "c1", ["f1"]), get("g2", "f2", "x"), ret("g2", 0, 0, hit=True), done("f2"),
            final("x", 1, 1), "end"),
    # a get that returns line 0 of version 2 and line 1 of version 1
    "P2": H(META, place("f1", "c1"), put("p1", "f1", "x", 1), ack("p1"), put("p2", "f1", "x", 2), ack("p2"), done("f1"),
            place("f2", "c2", ["f1"]), get("g2", "f2", "x"), ret("g2", 2, 1), done("f2"), final("x", 2, 2), "end"),
    # version 2 was acked after version 1, but memory still holds version 1
    "P3": H(META, place("f1", "c1"), put("p1", "f1", "x", 1), ack("p1"), done("f1"),
            place("f2", "c2", ["f1"]), put("p2", "f2", "x", 2), ack("p2"), done("f2"), final("x", 1, 1), "end"),
    # a get on a live, unfenced server that never returns
    "P4": H(META, place("f1", "c1"), put("p1", "f1", "x", 1), ack("p1"), done("f1"),
            place("f2", "c2", ["f1"]), get("g2", "f2", "x"), final("x", 1), "end"),
}
MORE_MUTANTS = {
    # P1 with commit events: the get returns a version that never committed (a zombie's data)
    "P1-uncommitted": ("P1", H(("meta", {"format": 1, "commits": True}), place("f1", "c1"), put("p1", "f1", "x", 1),
                               ("fence", {"server": "c1"}), place("f2", "c2"), get("g", "f2", "x"), ret("g", 1),
                               done("f2"), final("x", 0), "end")),
    # P1 under the ready floor: the run became ready after the put, placed later on a stale copy
    "P1-ready": ("P1", H(("meta", {"format": 1, "floor": "ready"}), place("f0", "c1"), get("g0", "f0", "x"), ret("g0", 0),
                         done("f0"), place("f1", "c2", ["f0"]), put("p1", "f1", "x", 1), ack("p1"), done("f1"),
                         place("f2", "c1", ["f1"]), get("g2", "f2", "x"), ret("g2", 0, hit=True), done("f2"),
                         final("x", 1), "end")),
    # P2 by digest: the returned data matches no put
    "P2-digest": ("P2", H(("meta", {"format": 1, "digests": {"d0": 0}}), place("f1", "c1"),
                          ("put", {"id": "p", "run": "f1", "obj": "x", "version": 1, "digest": "d1"}), ack("p"), done("f1"),
                          place("f2", "c2", ["f1"]), get("g", "f2", "x"), ("get_ret", {"id": "g", "digest": "dX"}),
                          done("f2"), ("final", {"obj": "x", "digest": "d1"}), "end")),
    # P3 with commit events: the writer got an ack for a put the memory server never committed
    "P3-acked-uncommitted": ("P3", H(("meta", {"format": 1, "commits": True}), place("f1", "c1"), put("p", "f1", "x", 1),
                                     ack("p"), done("f1"), final("x", 0), "end")),
    # P3: a zombie put of a fenced server commits
    "P3-zombie": ("P3", H(("meta", {"format": 1, "commits": True}), place("f1", "c1"), put("p", "f1", "x", 1),
                          ("fence", {"server": "c1", "epoch": 1}), ("commit", {"obj": "x", "version": 1}),
                          final("x", 1), "end")),
    # P4: a run on a live server never reports done
    "P4-run": ("P4", H(META, place("f1", "c1"), put("p1", "f1", "x", 1), ack("p1"), final("x", 1), "end")),
}


# ---- versioned gets: V1 --------------------------------------------------------------------------
def vget(i, run, obj, m):
    return ("get", {"id": i, "run": run, "obj": obj, "min": m})


# f2 is placed early, while f1 runs: its get names commit 1 of x, is held, and returns f1's version
EARLY = H(META, place("f1", "c1"), place("f2", "c2", ["f1"]), vget("g", "f2", "x", 1), put("p", "f1", "x", 1),
          ack("p"), done("f1"), ret("g", 1, 1), done("f2"), final("x", 1, 1), "end")


def test_versioned_get_held_until_its_version():
    rep = check_lines(EARLY, "early")
    assert rep.ok, str(rep)
    # a re-executed producer's second commit also satisfies "at least commit 1"
    lines = H(META, place("f1", "c1"), place("f2", "c2", ["f1"]), vget("g", "f2", "x", 1), put("p", "f1", "x", 1),
              ack("p"), ("crash", {"server": "c1"}), ("fence", {"server": "c1"}), place("f1#2", "c3", fn="f1"),
              put("q", "f1#2", "x", 2), ack("q"), done("f1#2"), ret("g", 2, 2), done("f2"), final("x", 2, 2), "end")
    assert check_lines(lines).ok
    # cancelled while no commit had been made: the defined answer, no violation
    lines = H(META, place("f2", "c2"), vget("g", "f2", "x", 1), ("get_ret", {"id": "g", "cancelled": True}),
              done("f2"), final("x", 0), "end")
    assert check_lines(lines).ok


V1_MUTANTS = {
    # the memory server serves the held get with the old version (spec/murphi mutant release_old)
    "served-old": H(META, place("f1", "c1"), place("f2", "c2", ["f1"]), vget("g", "f2", "x", 1), ret("g", 0, 0),
                    put("p", "f1", "x", 1), ack("p"), done("f1"), done("f2"), final("x", 1, 1), "end"),
    # a cache hit that ignores the version: c2's old copy (P1 cannot see it: f2 was placed before the put)
    "hit-ignores-version": H(META, place("f0", "c2"), get("a", "f0", "x"), ret("a", 0, 0), done("f0"),
                             place("f1", "c1"), place("f2", "c2", ["f1"]), vget("g", "f2", "x", 1),
                             ret("g", 0, 0, hit=True), put("p", "f1", "x", 1), ack("p"), done("f1"), done("f2"),
                             final("x", 1, 1), "end"),
    # cancelled although the version had been made
    "cancelled-after-commit": H(META, place("f1", "c1"), place("f2", "c2", ["f1"]), vget("g", "f2", "x", 1),
                                put("p", "f1", "x", 1), ack("p"), done("f1"), ("get_ret", {"id": "g", "cancelled": True}),
                                done("f2"), final("x", 1, 1), "end"),
}


@pytest.mark.parametrize("name", sorted(V1_MUTANTS))
def test_versioned_get_mutants_caught_on_v1(name):
    rep = check_lines(V1_MUTANTS[name], name)
    assert rep.props() == ["V1"], str(rep)
    assert "V1" in str(rep) and "'x'" in str(rep)


@pytest.mark.parametrize("line,fld,text", [
    ('{"ev": "get", "id": "g", "run": "f1", "obj": "x", "min": -1}', "min", "commit count >= 0"),
    ('{"ev": "get", "id": "g", "run": "f1", "obj": "x", "min": true}', "min", "must be int"),
])
def test_malformed_versioned_get(tmp_path, line, fld, text):
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps({"ev": "place", "run": "f1", "fn": "f1", "server": "c1"}) + "\n" + line + "\n")
    with pytest.raises(HistoryError) as e:
        check_file(p)
    assert e.value.field == fld and text in str(e.value)
    # a cancelled get that named no version, and a cancelled get with data
    for tail, want in ((['{"ev": "get", "id": "g", "run": "f1", "obj": "x"}', '{"ev": "get_ret", "id": "g", "cancelled": true}'], "names no version"),
                       (['{"ev": "get", "id": "g", "run": "f1", "obj": "x", "min": 1}', '{"ev": "get_ret", "id": "g", "cancelled": true, "version": 1}'], "returns no lines")):
        p.write_text("\n".join([json.dumps({"ev": "place", "run": "f1", "fn": "f1", "server": "c1"})] + tail) + "\n")
        with pytest.raises(HistoryError, match=want):
            check_file(p)


@pytest.mark.parametrize("prop", sorted(MUTANTS))
def test_mutant_caught_on_its_property(prop):
    rep = check_lines(MUTANTS[prop], prop)
    assert rep.props() == [prop], str(rep)
    v = rep.violations[0]
    assert v.line > 0 and v.obj in (None, "x") and str(v.line) in str(rep)


@pytest.mark.parametrize("name", sorted(MORE_MUTANTS))
def test_more_mutants(name):
    prop, lines = MORE_MUTANTS[name]
    rep = check_lines(lines, name)
    assert rep.props() == [prop], str(rep)


def test_violation_names_line_object_versions():
    rep = check_lines(MUTANTS["P1"], "p1.jsonl")
    (v,) = rep.violations
    assert v.line == 12 and v.obj == "x" and v.versions["returned"] == 0 and v.versions["floor"] == 1
    assert "line 12: P1: object 'x'" in str(rep) and "version 1 committed (line 8)" in str(rep)


def test_no_end_no_p4():
    rep = check_lines(MUTANTS["P4"][:-1], "open")
    assert rep.ok and not rep.stats["p4_checked"]


def test_crashed_server_ops_need_not_complete():
    lines = H(META, place("f1", "c1"), get("g", "f1", "x"), ("crash", {"server": "c1"}), "end")
    assert check_lines(lines).ok


def test_unacked_put_may_be_final_without_commit_events():
    # the writer crashed before the ack; memory may hold its version (it may have committed)
    lines = H(META, place("f1", "c1"), put("p", "f1", "x", 1), ("crash", {"server": "c1"}), final("x", 1), "end")
    assert check_lines(lines).ok
    # ... but not once the writer was fenced before a later acked put began
    lines = H(META, place("f1", "c1"), put("p", "f1", "x", 1), ("crash", {"server": "c1"}),
              ("fence", {"server": "c1"}), place("f2", "c2"), put("q", "f2", "x", 2), ack("q"), done("f2"),
              final("x", 1), "end")
    assert check_lines(lines).props() == ["P3"]


# ---- malformed lines: file, line, field -----------------------------------------------------------
BAD = [
    ('{"ev": "get", "id": "g", "run": "f1"', 2, "(line)", "invalid JSON"),
    ('{"ev": "teleport"}', 2, "ev", "unknown event"),
    ('{"ev": "get", "id": "g", "run": "f1"}', 2, "obj", "missing"),
    ('{"ev": "get", "id": "g", "run": "f1", "obj": 7}', 2, "obj", "must be str"),
    ('{"ev": "get", "id": "g", "run": "f1", "obj": "x", "colour": 1}', 2, "colour", "unknown field"),
    ('{"ev": "get_ret", "id": "nope", "version": 1}', 2, "id", "no get with id"),
    ('{"ev": "get_ret", "id": "g", "version": 1, "lines": [1]}', 2, "lines", "exactly one"),
    ('{"ev": "get", "id": "g", "run": "ghost", "obj": "x"}', 2, "run", "unknown run"),
    ('{"ev": "rejoin", "server": "c1", "epoch": true}', 2, "epoch", "must be int"),
    ('{"ev": "meta", "format": 1}', 2, "ev", "meta must be the first"),
]


@pytest.mark.parametrize("line,lineno,fld,text", BAD)
def test_malformed_rejected(tmp_path, line, lineno, fld, text):
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps({"ev": "place", "run": "f1", "fn": "f1", "server": "c1"}) + "\n" + line + "\n")
    with pytest.raises(HistoryError) as e:
        check_file(p)
    assert (e.value.line, e.value.field) == (lineno, fld)
    assert text in str(e.value) and str(p) in str(e.value) and f":{lineno}: {fld}:" in str(e.value)


def test_semantic_malformations():
    with pytest.raises(HistoryError, match=r":3: id: operation id 'g' used twice"):
        check_lines(H(place("f1", "c1"), get("g", "f1", "x"), get("g", "f1", "x")))
    with pytest.raises(HistoryError, match=r":3: server: server 'c1' is crashed"):
        check_lines(H(place("f1", "c1"), ("crash", {"server": "c1"}), place("f2", "c1")))
    with pytest.raises(HistoryError, match=r":4: id: get 'g' completes after its server crashed"):
        check_lines(H(place("f1", "c1"), get("g", "f1", "x"), ("crash", {"server": "c1"}), ret("g", 0)))
    with pytest.raises(HistoryError, match=r"version 1 of 'x' written twice"):
        check_lines(H(place("f1", "c1"), put("a", "f1", "x", 1), put("b", "f1", "x", 1)))


def test_cli(tmp_path, capsys):
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(VALID["pipeline"]) + "\n")
    bad = tmp_path / "p1.jsonl"
    bad.write_text("\n".join(MUTANTS["P1"]) + "\n")
    junk = tmp_path / "junk.jsonl"
    junk.write_text("{]\n")
    assert history.main([str(good)]) == 0
    assert history.main([str(good), str(bad)]) == 1
    assert history.main([str(junk)]) == 2
    out = capsys.readouterr().out
    assert f"{bad}:line 12: P1" in out and f"{junk}:1: (line)" in out
