"""schema/layout.json and its generator (python/apta/layout.py): the per-guest files of layout v2
(qemu-cxl/RINGS.md) fit together, and each way of breaking them is refused before any header is
written. Host only, no build needed."""
from __future__ import annotations

import copy
import json

import pytest

from apta import layout


def raw() -> dict:
    return json.loads(layout.LAYOUT_PATH.read_text())


def test_v2_files_and_generated_header(tmp_path):
    lay = layout.load()
    assert lay.raw["version"] == 2
    assert lay.guest_path(tmp_path, 3).name != lay.guest_path(tmp_path, 4).name != lay.server_path(tmp_path).name
    # a guest file holds its header copy, rings and job block; the data area is in the server file only
    assert lay.hdr("guest") >= 0 and lay.ring("invalidation") + lay.ring_bytes <= lay.job <= lay.guest_bytes
    c = layout.gen_c(lay.raw, "schema/layout.json")
    assert "#define APTA_LAYOUT_VERSION 2u" in c and '#define APTA_GUEST_FILE_FMT "guest%u.mem"' in c
    assert "STRIDE" not in c and "apta_guest_off" not in c     # no offset depends on the guest index


def broken(what):
    r = copy.deepcopy(raw())
    what(r)
    return r


@pytest.mark.parametrize("mutate, error", [
    (lambda r: r["jobs"].__setitem__("offset", r["guest_area"]["offset"] + 4096), "job block overlaps the guest area"),
    (lambda r: r["files"].__setitem__("guest_bytes", r["jobs"]["offset"] + r["jobs"]["bytes"] - 1), "leaves the guest file"),
    (lambda r: r["files"].__setitem__("guest", "guest.mem"), "needs {g}"),
    (lambda r: r["files"].__setitem__("server", r["files"]["guest"].replace("{g}", "")), "must differ"),
    (lambda r: r.__setitem__("data_offset", 64), "data area overlaps its header"),
    (lambda r: r["guest_area"].__setitem__("bytes", r["guest_area"]["rings"]["invalidation"] + 64), "leaves the guest area"),
])
def test_broken_layouts_are_refused(mutate, error):
    with pytest.raises(ValueError, match=error):
        layout.check(broken(mutate), raw()["ring"]["default_slots"])
    layout.check(raw(), raw()["ring"]["default_slots"])     # the real one passes the same check
