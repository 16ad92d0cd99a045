"""Where `make test`'s time goes: wall and CPU seconds per phase, per pytest module and per
Verilator build, written by the run itself.

Three writers append one JSON object a line to the log named by APTA_PROFILE_LOG
(build/test-profile.ndjson under `make test`):
  - `python3 python/apta/testprofile.py run PHASE -- CMD...` runs one phase of the Makefile
    (stdlib only: it runs before the venv exists) and records its wall time and the CPU time of
    everything it waited for;
  - this module as a pytest plugin (`-p apta.testprofile`) records each test module's wall and
    CPU time (the process's own and its children's: Verilator, compilers, daemons);
  - `record()`, called by the RTL harness around a Verilator build.
`report` folds the log into build/test-profile.json and prints the table; it also runs when a
phase fails, so a failed run still says where its time went.

A record: {"kind": "phase" | "pytest" | "build", "name", "parent", "wall_s", "cpu_s", "rc",
"start"} ("parent": the phase a pytest module or build ran in; "start": seconds since the run
began)."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ENV_LOG = "APTA_PROFILE_LOG"      # the NDJSON log; absent: nothing is recorded
ENV_PHASE = "APTA_PROFILE_PHASE"  # the phase a nested record belongs to
ENV_T0 = "APTA_PROFILE_T0"        # the run's start (time.time()), so every record shares one clock


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cpu_all() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime + _cpu_children()


def record(kind: str, name: str, wall_s: float, cpu_s: float | None = None, rc: int | None = None,
           start: float | None = None, **extra) -> None:
    """Append one record to the run's log (a no-op outside a profiled run). Lines are written
    with one write() on an O_APPEND file, so concurrent writers do not interleave."""
    log = os.environ.get(ENV_LOG)
    if not log:
        return
    t0 = float(os.environ.get(ENV_T0, "0") or 0)
    rec = {"kind": kind, "name": name, "parent": os.environ.get(ENV_PHASE, ""),
           "wall_s": round(wall_s, 3), "cpu_s": None if cpu_s is None else round(cpu_s, 3), "rc": rc,
           "start": round((start if start is not None else time.time() - wall_s) - t0, 3) if t0 else None,
           **extra}
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(rec) + "\n").encode())
    finally:
        os.close(fd)


# ---- the phase runner ---------------------------------------------------------------------------

def run_phase(name: str, cmd: list[str]) -> int:
    """Run CMD as phase NAME: its records nest under NAME; its own wall and CPU recorded."""
    env = dict(os.environ, **{ENV_PHASE: name})
    wall0, cpu0, start = time.monotonic(), _cpu_children(), time.time()
    print(f"=== {name} ===", flush=True)
    rc = subprocess.call(cmd, env=env)
    wall = time.monotonic() - wall0
    record("phase", name, wall, _cpu_children() - cpu0, rc, start)
    print(f"=== {name}: {'ok' if rc == 0 else f'FAILED (exit {rc})'} in {_fmt(wall)} ===", flush=True)
    return rc


# ---- the pytest plugin --------------------------------------------------------------------------

def pytest_configure(config):
    if not os.environ.get(ENV_LOG):
        return
    import pytest

    class ModuleClock:
        """Wall and CPU per test module (setup, call and teardown of its tests, fixtures
        included; a module-scoped fixture torn down after the module's last test counts there)."""

        def __init__(self):
            self.mods: dict[str, list] = {}   # module -> [wall, cpu, tests, failed, first start]
            # an xdist worker's config carries workerinput; PYTEST_XDIST_WORKER is also inherited
            # by any pytest a worker starts, which is not a worker
            self.xdist_worker = hasattr(config, "workerinput")

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            m = self.mods.setdefault(item.nodeid.split("::", 1)[0], [0.0, 0.0, 0, 0, time.time()])
            w0, c0 = time.monotonic(), _cpu_all()
            yield
            m[0] += time.monotonic() - w0
            m[1] += _cpu_all() - c0
            m[2] += 1

        def pytest_runtest_logreport(self, report):
            if report.failed:
                self.mods.setdefault(report.nodeid.split("::", 1)[0], [0.0, 0.0, 0, 0, time.time()])[3] += 1
                # named at once, where pytest-xdist's controller (or a plain run) sees it: a lane
                # stopped early (make test stops its other lane when one fails) still says what failed
                if not self.xdist_worker:
                    record("failed", report.nodeid, report.duration, when=report.when)

        def pytest_sessionfinish(self, session, exitstatus):
            for mod, (wall, cpu, n, failed, first) in self.mods.items():
                if not n:        # pytest-xdist's controller sees reports, its workers run the tests
                    continue
                record("pytest", mod, wall, cpu, 1 if failed else 0, first, tests=n)

    config.pluginmanager.register(ModuleClock(), "apta-testprofile-clock")


# ---- the report ---------------------------------------------------------------------------------

def _fmt(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{int(s // 60)}m{s % 60:04.1f}s" if s >= 60 else f"{s:.1f}s"


def load(log: Path) -> list[dict]:
    recs = []
    for i, line in enumerate(log.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            recs.append(json.loads(line))
        except json.JSONDecodeError as e:
            print(f"{log}:{i}: not a profile record ({e.msg}); skipped", file=sys.stderr)
    return recs


def summarize(recs: list[dict], machine: dict) -> dict:
    phases = [r for r in recs if r["kind"] == "phase"]
    builds: dict[str, dict] = {}
    for r in recs:
        if r["kind"] == "build":
            b = builds.setdefault(r["name"], {"name": r["name"], "builds": 0, "wall_s": 0.0, "parents": []})
            b["builds"] += 1
            b["wall_s"] = round(b["wall_s"] + r["wall_s"], 3)
            if r["parent"] not in b["parents"]:
                b["parents"].append(r["parent"])
    caches: dict[str, dict] = {}      # per cache: what the run compiled and what it reused
    for r in recs:
        if r["kind"] == "cache":
            c = caches.setdefault(r["name"], {"name": r["name"], "compiled": 0, "reused": 0})
            c["compiled"] += int(r.get("compiled", 0))
            c["reused"] += int(r.get("reused", 0))
    # the run's wall: from its first phase's start to its last phase's end (phases may overlap)
    spans = [(r["start"], r["start"] + r["wall_s"]) for r in phases if r.get("start") is not None]
    wall = (max(e for _, e in spans) - min(s for s, _ in spans)) if spans else sum(r["wall_s"] for r in phases)
    cpu = sum(r["cpu_s"] or 0 for r in phases)
    return {
        "machine": machine,
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "passed": all(r["rc"] == 0 for r in phases),
        "phases": phases,
        "pytest": sorted((r for r in recs if r["kind"] == "pytest"), key=lambda r: -r["wall_s"]),
        "verilator_builds": sorted(builds.values(), key=lambda b: -b["wall_s"]),
        "caches": sorted(caches.values(), key=lambda c: c["name"]),
        "failed_tests": [{"name": r["name"], "phase": r["parent"], "when": r.get("when")}
                         for r in recs if r["kind"] == "failed"],
    }


def machine() -> dict:
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    except OSError:
        pass
    # the load at the end says whether the run had the machine to itself (its times are wall times)
    return {"cores": os.cpu_count(), "memory_mib": mem, "date": time.strftime("%Y-%m-%d"),
            "loadavg_15m": round(os.getloadavg()[2], 1)}


def table(s: dict, top_pytest: int = 25) -> str:
    out = [f"{'phase':<34} {'wall':>9} {'cpu':>9} {'cpu/wall':>8}  result"]
    for r in s["phases"]:
        ratio = (r["cpu_s"] or 0) / r["wall_s"] if r["wall_s"] else 0
        out.append(f"{r['name']:<34} {_fmt(r['wall_s']):>9} {_fmt(r['cpu_s']):>9} {ratio:8.2f}  "
                   f"{'ok' if r['rc'] == 0 else 'FAILED'}")
    if s["pytest"]:
        out.append("")
        out.append(f"{'pytest module (slowest ' + str(min(top_pytest, len(s['pytest']))) + ')':<48} {'in':<16} {'wall':>9} {'cpu':>9}")
        for r in s["pytest"][:top_pytest]:
            out.append(f"{r['name'][-48:]:<48} {r['parent'][:16]:<16} {_fmt(r['wall_s']):>9} {_fmt(r['cpu_s']):>9}"
                       + ("  FAILED" if r["rc"] else ""))
    if s["verilator_builds"]:
        out.append("")
        out.append(f"{'Verilator build (slowest 10)':<60} {'times':>5} {'wall':>9}")
        for b in s["verilator_builds"][:10]:
            out.append(f"{b['name'][-60:]:<60} {b['builds']:>5} {_fmt(b['wall_s']):>9}")
    if s.get("failed_tests"):
        out.append("")
        out.append("failed tests (as they failed; a lane stopped early may have had more):")
        out += [f"  {f['name']}  [{f['phase']}, {f['when']}]" for f in s["failed_tests"]]
    for c in s.get("caches", []):
        out.append("")
        out.append(f"cache {c['name']}: {c['compiled']} compiled, {c['reused']} reused from the user cache")
    m = s["machine"]
    out.append("")
    out.append(f"test-profile: {_fmt(s['wall_s'])} wall, {_fmt(s['cpu_s'])} CPU "
               f"({s['cpu_s'] / s['wall_s'] if s['wall_s'] else 0:.2f} cores busy on average) on "
               f"{m['cores']} cores, {m['memory_mib'] // 1024} GiB; {'passed' if s['passed'] else 'FAILED'}")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    usage = ("usage: testprofile.py start LOG | run PHASE -- CMD... | report LOG OUT.json\n"
             "  start: empties LOG; run: one phase (LOG from $" + ENV_LOG + "); report: LOG -> OUT.json + table")
    if len(argv) >= 2 and argv[0] == "start":
        log = Path(argv[1])
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
        return 0
    if len(argv) >= 3 and argv[0] == "run" and "--" in argv:
        i = argv.index("--")
        if i != 2 or i + 1 == len(argv):
            print(usage, file=sys.stderr)
            return 2
        return run_phase(argv[1], argv[i + 1:])
    if len(argv) == 3 and argv[0] == "report":
        log, out = Path(argv[1]), Path(argv[2])
        if not log.exists():
            print(f"testprofile: {log}: no profile log (was the run started with `start`?)", file=sys.stderr)
            return 2
        s = summarize(load(log), machine())
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(s, indent=1) + "\n")
        print(table(s))
        print(f"(written to {out})")
        return 0
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
