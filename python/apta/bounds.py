"""The physical limit of a get or put, and measured times as a ratio to it (stdlib only).

An object of S bytes cannot be got (or put) over a link faster than one round trip plus its bytes
at the link's bandwidth: limit = 2 x one-way latency + S x 8 / bandwidth. The link of each of the
seven configurations and its latency and bandwidth come from sim/params.json (`configs.<c>.link`,
`links.<link>_latency_ns`, `links.<link>_bandwidth_gbps`); nothing else enters the limit. The
memory server's own work (OTC, OSC, DRAM), flit headers and software count against the measured
time, which is why a ratio is >= 1 for a remote transfer.

The RTL's memory server (build/bench/ms.json, written by tests/rtl/test_ms_bench.py under `make
bench`) is measured in clock cycles for L-line objects (L = 1, 2, 4, ..., linesPerObject):
get = ObjGet accepted -> last ObjData out; put = first PutLine accepted -> PutCommit out. Its
times are cycles / clock; `rtl_cycles` takes a row for the object's line count, interpolating
linearly between measured counts and extrapolating from the last two beyond the largest (said
in the result's "how").

    limit_ns(2 << 20, 500, 80)                       # 210715.2 ns: 1 us + 2 MiB at 80 Gbps
    link_of(params, "rdma")                          # (1500, 8): the RDMA link of sim/params.json
    rtl_cycles(json.load(open("build/bench/ms.json")), 4096, 64)
"""
from __future__ import annotations

import json
import math
import os


def limit_ns(size_bytes: float, latency_ns: float, bandwidth_gbps: float) -> float:
    """One round trip (2 x the one-way latency) + size / bandwidth, in ns (Gbps = bits per ns)."""
    if size_bytes < 0 or latency_ns < 0 or bandwidth_gbps <= 0:
        raise ValueError(f"limit_ns: size {size_bytes}, latency {latency_ns}, bandwidth {bandwidth_gbps}")
    return 2.0 * latency_ns + size_bytes * 8.0 / bandwidth_gbps


def ratio(time_ns: float | None, limit: float) -> float | None:
    """A measured time over the limit (None stays None: nothing measured)."""
    return None if time_ns is None else time_ns / limit


def link_of(params: dict, config: str) -> tuple[float, float]:
    """(one-way latency ns, bandwidth Gbps) of the link configuration `config` uses, from
    sim/params.json as loaded (apta.schema.load_sim_params)."""
    link = params["configs"][config]["link"]
    lk = params["links"]
    return lk[f"{link}_latency_ns"]["value"], lk[f"{link}_bandwidth_gbps"]["value"]


def lines_of(size_bytes: int, line_bytes: int) -> int:
    """Lines an object occupies (at least one, as in the simulator)."""
    return max(1, math.ceil(size_bytes / line_bytes))


def _row_cycles(r: dict) -> tuple[float, float]:
    """(get, put) cycles of one ms.json row: get = ObjGet accepted -> last ObjData; put = first
    PutLine accepted -> PutCommit (from put_first_line_to_commit, or, in files without it, the
    PutLines' span L / lines-per-cycle - 1 plus last PutLine -> PutCommit)."""
    get = float(r["get_last_data"])
    if "put_first_line_to_commit" in r:
        put = float(r["put_first_line_to_commit"])
    else:
        put = r["lines"] / r["put_lines_per_cycle"] - 1 + r["put_last_line_to_commit"]
    return get, put


def rtl_cycles(ms: dict, size_bytes: int, line_bytes: int) -> dict:
    """The RTL memory server's cycles for an object of `size_bytes`: {"lines", "get", "put",
    "how"}; how = "measured" (a row for exactly that many lines), "interpolated" (linear between
    the two measured counts around it) or "extrapolated" (beyond the largest measured count, on
    the line through the last two rows)."""
    rows = sorted(ms["rows"], key=lambda r: r["lines"])
    if not rows:
        raise ValueError("ms.json has no rows")
    L = lines_of(size_bytes, line_bytes)
    pts = [(r["lines"], *_row_cycles(r)) for r in rows]
    for n, g, p in pts:
        if n == L:
            return {"lines": L, "get": g, "put": p, "how": "measured"}
    if L < pts[0][0] or len(pts) == 1:
        if len(pts) == 1:
            raise ValueError(f"ms.json: one row ({pts[0][0]} lines) cannot give {L} lines")
        a, b, how = pts[0], pts[1], "extrapolated"
    elif L > pts[-1][0]:
        a, b, how = pts[-2], pts[-1], "extrapolated"
    else:
        k = next(k for k in range(1, len(pts)) if pts[k][0] > L)
        a, b, how = pts[k - 1], pts[k], "interpolated"
    f = (L - a[0]) / (b[0] - a[0])
    return {"lines": L, "get": a[1] + f * (b[1] - a[1]), "put": a[2] + f * (b[2] - a[2]), "how": how}


def rtl_ns(cycles: float, clock_ghz: float) -> float:
    """Cycles at a clock of `clock_ghz` GHz, in ns."""
    return cycles / clock_ghz


def load_ms_bench(path: str) -> tuple[dict | None, str]:
    """(ms.json's content, "") or (None, why it is not there): a missing file is not an error."""
    if not os.path.exists(path):
        return None, f"{path} missing (written by `make bench`, tests/rtl/test_ms_bench.py)"
    try:
        with open(path) as fh:
            ms = json.load(fh)
        if not isinstance(ms, dict) or not ms.get("rows"):
            return None, f"{path} has no rows"
        for r in ms["rows"]:
            if not ({"lines", "get_last_data"} <= set(r) and ("put_first_line_to_commit" in r or
                                                            {"put_lines_per_cycle", "put_last_line_to_commit"} <= set(r))):
                return None, f"{path}: a row without the get/put cycle fields: {r}"
        return ms, ""
    except (OSError, json.JSONDecodeError) as e:
        return None, f"{path} unreadable: {e}"
