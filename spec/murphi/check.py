#!/usr/bin/env python3
"""Run Rumur on the apta model: every configuration of a suite, then every mutant.

    spec/murphi/check.py [--suite default|deep] [--only NAME ...] [--set CONST=VALUE ...] [--update-pins]

A model passes when Rumur explores its whole state space with no error and every cover statement
the configuration requires is hit. A mutant passes (is rejected as expected) only when Rumur
reports a violation of the property the mutant targets; a compile error, another property or no
error at all is a failure of `make verify`. Each run is then compared with its pin in checks.json
(a model's states and rules fired, a mutant's reported properties): a difference is a failure until
the pin is updated (`--update-pins` rewrites it from the run); a run without a pin is "unpinned". Results go to build/verify/summary.json (python/apta/summary.py)
and the printed table; counterexample traces of unexpected failures are printed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
from apta import summary

MODEL = HERE / "apta.m"
CHECKS = HERE / "checks.json"
BUILD = ROOT / "build" / "murphi"
SUMMARY = ROOT / "build" / "verify" / "summary.json"
CC_FLAGS = ["-std=c11", "-O1", "-mcx16", "-w"]
# A mutant of a default-suite configuration whose target is a safety property stops at its first
# counterexample, a few seconds in: compiling its 2.6 MB of generated C at -O0 takes half the time of
# -O1 and that dominates. A liveness or deadlock target needs the whole state space explored first,
# and a deep configuration's counterexample can lie hundreds of thousands of states in: those keep -O1.
CC_FLAGS_QUICK = ["-std=c11", "-O0", "-mcx16", "-w"]


class CheckError(Exception):
    """Bad input (checks file, constant, name): reported with where it came from."""


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def load_checks(path: Path = CHECKS) -> dict:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise CheckError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    for key in ("configs", "mutants", "suites"):
        if not isinstance(data.get(key), dict):
            raise CheckError(f"{path}: missing object field '{key}'")
    for name, m in data["mutants"].items():
        for f in ("switch", "expected", "config", "description"):
            if f not in m:
                raise CheckError(f"{path}: mutants.{name}: missing field '{f}'")
        if m["config"] not in data["configs"]:
            raise CheckError(f"{path}: mutants.{name}.config: unknown configuration {m['config']!r}")
    for section, fields in (("configs", {"states": int, "rules_fired": int}), ("mutants", {"violated": list})):
        for name, entry in data[section].items():
            pin = entry.get("pin")
            if pin is not None and (not isinstance(pin, dict) or set(pin) != set(fields)
                                    or not all(isinstance(pin[k], t) for k, t in fields.items())):
                raise CheckError(f"{path}: {section}.{name}.pin: expected {{{', '.join(fields)}}}, got {pin!r} "
                                 f"(--update-pins writes it)")
    for sname, s in data["suites"].items():
        for n in s.get("models", []):
            if n not in data["configs"]:
                raise CheckError(f"{path}: suites.{sname}.models: unknown configuration {n!r}")
        for n in s.get("mutants", []):
            if n not in data["mutants"]:
                raise CheckError(f"{path}: suites.{sname}.mutants: unknown mutant {n!r}")
    return data


CONST_RE = r"^(\s*{name}\s*:\s*)([^;]+)(;)"


COVER_RE = re.compile(r'\bcover\s+"([^"]+)"[^;]*;')


def keep_covers(source: str, keep: set[str], origin: str) -> str:
    """Drop the cover statements a run does not require.

    Rumur counts a cover that is never hit as an error, and it checks liveness properties only when
    a run had no error at all: a configuration that cannot reach some scenario (eviction with one
    object, say) would silently skip P4/P5. So each run keeps exactly the covers it must hit.
    """
    names = set(COVER_RE.findall(source))
    unknown = sorted(keep - names)
    if unknown:
        raise CheckError(f"{origin}: no cover statement named {unknown}")
    return COVER_RE.sub(lambda m: m.group(0) if m.group(1) in keep else "", source)


def instantiate(source: str, constants: dict[str, object], origin: str) -> str:
    """Set each constant of the model's const section; unknown names are an error."""
    for name, value in constants.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        pat = re.compile(CONST_RE.format(name=re.escape(name)), re.M)
        if not pat.search(source):
            raise CheckError(f"{origin}: constant {name!r} does not exist in {MODEL.name}")
        source = pat.sub(lambda m: f"{m.group(1)}{value}{m.group(3)}", source, count=1)
    return source


# ---------------------------------------------------------------------------------------------
# running Rumur
# ---------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    states: int = 0
    rules_fired: int = 0
    seconds: float = 0.0
    errors: list[dict] = field(default_factory=list)     # {"message", "property", "trace"}
    covers: dict[str, int] = field(default_factory=dict)
    complete: bool = False                                # summary element seen
    error_count: int = 0                                  # errors="..." of the summary


PROP_RE = re.compile(r'"([^"]+)"')


def property_of(message: str) -> str:
    """'invariant "X" failed' / 'liveness property "X" violated' /
    'Assertion failed: file:line.col: X' -> X."""
    if message.startswith("Assertion failed:"):
        return message.rsplit(": ", 1)[-1].strip()
    m = PROP_RE.search(message)
    if m:
        return m.group(1)
    return message.strip().split("\n")[0]   # e.g. "deadlock"


def parse_output(xml_text: str) -> Outcome:
    out = Outcome()
    # A killed verifier leaves the document unterminated; close it so the prefix still parses.
    if "</rumur_run>" not in xml_text:
        xml_text += "</rumur_run>"
    root = ET.fromstring(xml_text)
    for el in root:
        if el.tag == "error":
            msg = (el.findtext("message") or "").strip()
            trace = []
            for t in el:
                if t.tag == "transition":
                    params = ", ".join(f"{p.get('name')}={p.text}" for p in t.findall("parameter"))
                    trace.append(("rule", (t.text or "").strip() + (f" [{params}]" if params else "")))
                elif t.tag == "state":
                    trace.append(("state", [(c.get("name"), c.get("value"))
                                            for c in t.findall("state_component")]))
            out.errors.append({"message": msg, "property": property_of(msg), "trace": trace})
        elif el.tag == "cover_result":
            out.covers[el.get("message")] = int(el.get("count"))
        elif el.tag == "summary":
            out.states = int(el.get("states"))
            out.rules_fired = int(el.get("rules_fired"))
            out.error_count = int(el.get("errors", 0))
            out.complete = True
        elif el.tag == "progress":
            out.states = max(out.states, int(el.get("states")))
            out.rules_fired = max(out.rules_fired, int(el.get("rules_fired")))
    return out


def format_trace(trace: list) -> str:
    lines = []
    for kind, val in trace:
        if kind == "rule":
            lines.append(f"  -> {val}")
        else:
            shown = [f"{n}={v}" for n, v in val if v not in (None, "Undefined")]
            if shown:
                lines.append("       " + "; ".join(shown))
    return "\n".join(lines)


# Compiled verifiers are also kept per user, by the same content key, so a second checkout on the
# machine (a fresh clone's `make test`, a branch) compiles only what it changed, as Go's build cache
# does; APTA_CACHE names another place, APTA_CACHE=off disables it (a cold run's measurement).
USER_CACHE_ENTRIES = 400          # ~650 KB each; the least recently used go first


def user_cache() -> Path | None:
    where = os.environ.get("APTA_CACHE", "")
    if where == "off":
        return None
    return (Path(where) if where else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "apta") / "murphi"


_TOOLCHAIN: list[str] = []
_LOCK = threading.Lock()                        # build_all's compiler threads share these


def toolchain() -> str:
    """Rumur's and the C compiler's versions: part of every verifier's key."""
    with _LOCK:
        if _TOOLCHAIN:
            return _TOOLCHAIN[0]
        v = [subprocess.run([t, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[:1]
             for t in ("rumur", "cc")]
        _TOOLCHAIN.append(" / ".join(x[0] if x else "?" for x in v))
        return _TOOLCHAIN[0]


BUILD_STATS = {"compiled": 0, "reused": 0}   # this process's verifier builds (reported by main)


def _from_user_cache(key: str, exe: Path) -> bool:
    cache = user_cache()
    hit = cache / key / "verifier" if cache else None
    if not hit or not hit.exists():
        return False
    tmp = exe.with_name(exe.name + ".tmp")
    shutil.copy2(hit, tmp)
    os.replace(tmp, exe)
    os.utime(hit.parent)                        # recently used
    with _LOCK:
        BUILD_STATS["reused"] += 1
    return True


def _to_user_cache(key: str, exe: Path) -> None:
    cache = user_cache()
    if not cache:
        return
    try:
        (cache / key).mkdir(parents=True, exist_ok=True)
        tmp = cache / key / f"verifier.{os.getpid()}.tmp"
        shutil.copy2(exe, tmp)
        os.replace(tmp, cache / key / "verifier")
        entries = sorted(cache.iterdir(), key=lambda e: e.stat().st_mtime)
        for old in entries[:max(0, len(entries) - USER_CACHE_ENTRIES)]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as e:                        # a full or read-only cache costs time, not the run
        print(f"murphi: verifier cache {cache}: {e}", file=sys.stderr)


def build(name: str, source: str, max_errors: int, threads: int, extra: list[str] = (),
          base: Path = BUILD, cc_flags: list[str] = CC_FLAGS) -> Path:
    """rumur + cc into base/name; cached by a hash of the instantiated model, the flags and the
    toolchain (here and in the user's cache)."""
    flags = ["--output-format", "machine-readable", "--counterexample-trace", "diff",
             "--max-errors", str(max_errors), "--threads", str(threads),
             "--symmetry-reduction", "heuristic", *extra]   # servers, objects, slots are scalarsets
    key = hashlib.sha256((source + " ".join(flags + list(cc_flags)) + toolchain()).encode()).hexdigest()[:16]
    d = base / name
    d.mkdir(parents=True, exist_ok=True)
    exe = d / f"verifier-{key}"
    if exe.exists():
        return exe
    for old in d.glob("verifier-*"):
        old.unlink()
    if _from_user_cache(key, exe):
        return exe
    (d / "model.m").write_text(source)
    r = subprocess.run(["rumur", *flags, str(d / "model.m"), "-o", str(d / "model.c")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise CheckError(f"rumur rejected the model ({name}):\n{r.stderr.strip()}")
    r = subprocess.run(["cc", *cc_flags, str(d / "model.c"), "-o", str(exe), "-lpthread"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise CheckError(f"cc failed on the generated verifier ({name}):\n{r.stderr.strip()[-3000:]}")
    with _LOCK:
        BUILD_STATS["compiled"] += 1
    _to_user_cache(key, exe)
    return exe


def run(name: str, exe: Path, timeout: float) -> tuple[Outcome, bool]:
    """Run a verifier, printing a progress line every ~15 s. Returns (outcome, timed_out)."""
    log = exe.parent / "output.xml"
    t0 = time.monotonic()
    timed_out = False
    with open(log, "w") as f:
        p = subprocess.Popen(["stdbuf", "-oL", str(exe)], stdout=f, stderr=subprocess.STDOUT)
        last = t0
        while p.poll() is None:
            time.sleep(0.5)
            now = time.monotonic()
            if now - t0 > timeout:
                p.kill(); p.wait(); timed_out = True
                break
            if now - last >= 15:
                last = now
                states = _last_progress(log)
                print(f"    ... {name}: {states:,} states after {now - t0:.0f} s", flush=True)
    out = parse_output(log.read_text(errors="replace"))
    out.seconds = time.monotonic() - t0
    return out, timed_out


def _last_progress(log: Path) -> int:
    with open(log, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 4096))
        tail = f.read().decode(errors="replace")
    m = re.findall(r'<progress states="(\d+)"', tail)
    return int(m[-1]) if m else 0


# ---------------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------------
@dataclass
class Job:
    name: str
    kind: str                    # "model" | "mutant"
    config: str
    description: str
    constants: dict
    expected: str | None         # the property a mutant must break
    covers: list[str]            # cover statements a model must hit
    max_errors: int
    threads: int
    timeout: float
    flags: list[str] = field(default_factory=list)   # extra rumur options of this run
    cc_flags: list[str] = field(default_factory=lambda: list(CC_FLAGS))
    exe: Path | None = None


def plan(checks: dict, models: list[str], mutants: list[str], overrides: dict,
         threads: int) -> list[Job]:
    jobs = []
    for cfg in models:
        c = checks["configs"][cfg]
        jobs.append(Job(cfg, "model", cfg, c.get("description", ""),
                        {**c["constants"], **overrides}, None, c.get("covers", []), 1, threads,
                        c.get("timeout", 1200)))
    full = set(re.findall(r'^liveness\s+"([^"]+)"', MODEL.read_text(), re.M)) | {"deadlock"}
    small = set(checks["suites"]["default"]["models"])   # deep configurations' counterexamples lie deeper
    for name in mutants:
        m = checks["mutants"][name]
        c = checks["configs"][m["config"]]
        # One verifier thread: the first counterexample found is then the shortest, every run.
        jobs.append(Job(name, "mutant", m["config"], m["description"],
                        {**c["constants"], **m.get("constants", {}), "MUTANT": m["switch"], **overrides},
                        m["expected"], [], m.get("max_errors", 1), 1, m.get("timeout", 600),
                        m.get("rumur_flags", []),
                        list(CC_FLAGS_QUICK if m["config"] in small and m["expected"] not in full else CC_FLAGS)))
    return jobs


def build_all(jobs: list[Job], source: str) -> None:
    """Generate and compile every verifier, two compilers at a time (the C is large)."""
    from concurrent.futures import ThreadPoolExecutor
    def one(j: Job) -> None:
        origin = f"{CHECKS.name}: {j.name}"
        src = keep_covers(instantiate(source, j.constants, origin), set(j.covers), origin)
        j.exe = build(j.name, src, j.max_errors, j.threads, j.flags, cc_flags=j.cc_flags)
    print(f"building {len(jobs)} verifier(s) (rumur + cc)", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        for f in [pool.submit(one, j) for j in jobs]:
            f.result()
    print(f"verifiers: {BUILD_STATS['compiled']} compiled, {BUILD_STATS['reused']} from the user cache "
          f"({user_cache() or 'off'}), {len(jobs) - BUILD_STATS['compiled'] - BUILD_STATS['reused']} "
          "already built here", flush=True)
    record_cache_use()


def record_cache_use() -> None:
    """This process's verifier builds into `make test`'s profile (a no-op outside one): a run whose
    verifiers came from the user cache is not a cold run, and its record says so."""
    from apta import testprofile
    if BUILD_STATS["compiled"] or BUILD_STATS["reused"]:
        testprofile.record("cache", "rumur-verifiers", 0.0, **BUILD_STATS)
        BUILD_STATS.update(compiled=0, reused=0)


def check_one(j: Job) -> dict:
    out, timed_out = run(j.name, j.exe, j.timeout)
    violated = [e["property"] for e in out.errors]
    missing = [c for c in j.covers if out.covers.get(c, 0) == 0]
    # Every error Rumur counts must be one we saw: unhit covers and reported errors. Anything else
    # (and any error at all) means its final liveness check did not run.
    unexplained = out.error_count - len(out.errors) - len(missing)
    if timed_out:
        result, first = "fail", f"timeout after {j.timeout:.0f} s"
    elif violated:
        result, first = "fail", violated[0]
    elif unexplained > 0:
        result, first = "fail", f"{unexplained} error(s) Rumur counted but did not report"
    elif not out.complete:
        result, first = "fail", "verifier did not finish"
    elif j.kind == "model" and missing:
        result, first = "fail", f"cover never hit: {missing[0]}"
    else:
        result, first = "pass", None
    # A mutant is rejected when the targeted property is among those Rumur reports violated.
    named = j.expected if (j.kind == "mutant" and j.expected in violated) else first
    rec = {
        "name": j.name, "checker": "rumur", "kind": j.kind, "config": j.config,
        "states": out.states, "rules_fired": out.rules_fired, "seconds": round(out.seconds, 1),
        "result": result, "violated": named, "expected": j.expected,
        "all_violated": sorted(set(violated)), "covers": out.covers,
        "covers_missing": missing if j.kind == "model" else [],
    }
    rec["ok"] = summary.expected_ok(j.kind, result, named, j.expected)
    if not rec["ok"]:
        want = "pass" if j.kind == "model" else f"a violation of {j.expected}"
        got = f"{result} ({', '.join(sorted(set(violated))) or first})" if result == "fail" else result
        print(f"\n!! {j.name}: expected {want}, got {got}")
        for e in out.errors[:1]:
            print(f"   counterexample for {e['message']}:\n{format_trace(e['trace'])}")
        if missing and j.kind == "model":
            print(f"   covers never hit: {missing}")
    return rec


def run_jobs(jobs: list[Job]) -> list[dict]:
    """Models one after another (each uses every core), then the mutants two at a time (each runs one
    verifier thread, so its first counterexample is the shortest). Records come back in job order."""
    from concurrent.futures import ThreadPoolExecutor
    n = len(jobs)

    def one(i: int, j: Job) -> dict:
        rec = check_one(j)
        if j.kind == "model":
            print(f"[{i}/{n}] model {j.name}: {j.description}\n    {rec['result']}: {rec['states']:,} states, "
                  f"{rec['rules_fired']:,} rules fired, {rec['seconds']} s", flush=True)
        else:
            print(f"[{i}/{n}] mutant {j.name} on {j.config}: "
                  f"{'rejected' if rec['ok'] else 'NOT REJECTED'}: {rec['violated']} "
                  f"({rec['states']:,} states, {rec['seconds']} s)", flush=True)
        return rec

    numbered = list(enumerate(jobs, 1))
    records = [one(i, j) for i, j in numbered if j.kind == "model"]
    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        records += list(pool.map(lambda ij: one(*ij), [(i, j) for i, j in numbered if j.kind == "mutant"]))
    return records


# ---------------------------------------------------------------------------------------------
# where each property is live: a property counts in a configuration only where a mutant run on that
# configuration is rejected on it (a configuration without puts cannot falsify P1-P3, say, so passing
# there proves nothing about them)
# ---------------------------------------------------------------------------------------------
def properties(source: str) -> list[str]:
    """Every property the model states: invariants, liveness, the P1/P2/V1 assertions, and deadlock."""
    props = re.findall(r'^(?:invariant|liveness)\s+"([^"]+)"', source, re.M)
    props += [p for p in re.findall(r'"([PV]\d_[a-z_]+)";', source) if p not in props]
    return sorted(props) + ["deadlock"]


def live_where(checks: dict, mutants: list[str]) -> dict[str, dict[str, list[str]]]:
    """{configuration: {property: [mutant runs on it that must be rejected on the property]}}."""
    live: dict[str, dict[str, list[str]]] = {}
    for name in mutants:
        m = checks["mutants"][name]
        live.setdefault(m["config"], {}).setdefault(m["expected"], []).append(name)
    return live


def live_report(checks: dict, records: list[dict], props: list[str]) -> tuple[str, list[str]]:
    """The per-configuration lines `make verify` prints (states, seconds, the properties live there,
    i.e. whose mutant on that configuration this run rejected) and the per-property lines (where it
    is live, by which mutant). Returns (text, properties live nowhere in this run)."""
    by_name = {r["name"]: r for r in records}
    ran = [r["name"] for r in records if r["kind"] == "mutant"]
    live = live_where(checks, ran)
    proven = {cfg: {p: [m for m in ms if by_name[m]["ok"]] for p, ms in d.items()} for cfg, d in live.items()}
    lines = ["configuration        states        seconds  properties live there (by the mutant rejected on it)"]
    for r in records:
        if r["kind"] != "model":
            continue
        here = proven.get(r["name"], {})
        shown = ", ".join(f"{p} ({'/'.join(ms)})" for p, ms in sorted(here.items()) if ms) or "none: no mutant runs here"
        lines.append(f"{r['name']:<20} {r['states']:>12,}  {r['seconds']:>8.1f}  {shown}")
    lines.append("")
    lines.append("property                              live in (configuration: mutant)")
    nowhere = []
    for p in props:
        where = [f"{cfg}: {'/'.join(ms)}" for cfg, d in sorted(proven.items()) for q, ms in d.items() if q == p and ms]
        if not where:
            nowhere.append(p)
        lines.append(f"{p:<37} {'; '.join(where) or '-'}")
    return "\n".join(lines), nowhere


FEATURES = [   # (column of the combination table, what a configuration's constants must give)
    ("3 servers", lambda k: k["NUM_SERVERS"] >= 3),
    ("2 objects, eviction", lambda k: k["NUM_OBJECTS"] >= 2 and k["DIR_CAPACITY"] < k["NUM_OBJECTS"]),
    ("2-entry directory", lambda k: k["DIR_CAPACITY"] >= 2),
    ("declared inputs", lambda k: k["NUM_OBJECTS"] >= 2),
    ("a put", lambda k: puts_on_one(k) >= 1),
    ("2 puts on one object", lambda k: puts_on_one(k) >= 2),
    ("3 puts on one object", lambda k: puts_on_one(k) >= 3),
    ("2 staging slots", lambda k: k["STAGING_SLOTS"] >= 2),
    ("a fault", lambda k: k["MAX_FAULTS"] >= 1),
    ("2 faults", lambda k: k["MAX_FAULTS"] >= 2),
    ("OPC timeout", lambda k: k.get("OPC_TIMEOUT", True) and puts_on_one(k) >= 1),
    ("silent eviction", lambda k: k.get("SILENT_EVICTION", True)),
]


def puts_on_one(k: dict) -> int:
    """Puts one object can see in a run (MAX_PUTS, capped by TOTAL_PUTS)."""
    return min(k["MAX_PUTS"], k.get("TOTAL_PUTS", k["MAX_PUTS"] * k["NUM_OBJECTS"]))


def features_of(checks: dict, config: str) -> set[str]:
    k = checks["configs"][config]["constants"]
    return {name for name, has in FEATURES if has(k)}


# The README's generated tables (spec/murphi/README.md, between <!-- NAME:begin --> and
# <!-- NAME:end -->): `check.py --write-tables` rewrites them from checks.json, `--check-tables`
# (and tests/test_murphi.py) fails when they differ.
README = HERE / "README.md"


def _suite_of(checks: dict, config: str) -> str:
    return next((s for s, d in checks["suites"].items() if config in d.get("models", [])), "-")


def _mutant_of(checks: dict, run: str) -> str:
    """The mutant a run belongs to: its name before `@config` when it follows that convention."""
    base, _, cfg = run.partition("@")
    return base if cfg == checks["mutants"][run]["config"] else run


def readme_tables(checks: dict, source: str) -> dict[str, str]:
    suites = ("default", "deep")
    configs = [c for s in suites for c in checks["suites"][s]["models"]]
    mutants = [m for s in suites for m in checks["suites"][s]["mutants"]]
    live = live_where(checks, mutants)
    # which properties each configuration can falsify is the live table's, by property
    head = "| configuration | suite | " + " | ".join(f for f, _ in FEATURES) + " |"
    rows = [head, "|" + "---|" * (len(FEATURES) + 2)]
    for c in configs:
        feats = features_of(checks, c)
        rows.append(f"| `{c}` | {_suite_of(checks, c)} | "
                    + " | ".join("x" if f in feats else "" for f, _ in FEATURES) + " |")
    # per property: how many configurations it is live in (every other one checks it, no mutant
    # fails it there), and each mutant once with its configurations, not one `mutant@config` per run
    combos = [f"| property | live in (of {len(configs)}) | mutants that make it fail (their configurations) |",
              "|---|---|---|"]
    for p in properties(source):
        where = [c for c in configs if p in live.get(c, {})]
        by_mutant: dict[str, list[str]] = {}
        for c in where:
            for m in live[c][p]:
                by_mutant.setdefault(_mutant_of(checks, m), []).append(c)
        shown = "; ".join(f"`{m}` ({', '.join(cs)})" for m, cs in by_mutant.items())
        combos.append(f"| `{p}` | {len(where)} | {shown or '**none**'} |")
    # a matrix of counts: the names are the combinations table's rows; a configuration that did not
    # finish is a finding, never counted, named with its numbers where it is a pair's only one
    n = len(FEATURES)
    pairs = ["| feature | " + " | ".join(f"({j + 1})" for j in range(n)) + " |", "|---|" + "---:|" * n]
    for i, (f, _) in enumerate(FEATURES):
        cells = []
        for j, (g, _) in enumerate(FEATURES):      # the diagonal (f, f): the configurations with f
            if j < i:
                cells.append("")
                continue
            have = [c for c in configs if {f, g} <= features_of(checks, c)]
            done = [c for c in have if "unfinished" not in checks["configs"][c]]
            open_ = [f"`{c}` unfinished: {u['states'] / 1e6:.1f} M states in {u['seconds']:,} s"
                     for c in have if (u := checks["configs"][c].get("unfinished"))]
            cells.append(str(len(done)) if done else "**none yet**" + (f" ({'; '.join(open_)})" if open_ else ""))
        pairs.append(f"| ({i + 1}) {f} | " + " | ".join(cells) + " |")
    return {"combinations": "\n".join(rows), "live": "\n".join(combos), "pairs": "\n".join(pairs)}


def _blocks(text: str) -> dict[str, re.Match]:
    return {m.group(1): m for m in re.finditer(r"<!-- (\w+):begin -->\n(.*?)<!-- \1:end -->", text, re.S)}


def sync_tables(checks: dict, source: str, write: bool, readme: Path = README) -> list[str]:
    """Compare (or rewrite) the generated tables of the README; returns the names that differ."""
    text = readme.read_text()
    blocks, stale = _blocks(text), []
    for name, table in readme_tables(checks, source).items():
        if name not in blocks:
            raise CheckError(f"{readme}: no <!-- {name}:begin --> ... <!-- {name}:end --> block")
        want = f"<!-- {name}:begin -->\n<!-- generated by spec/murphi/check.py --write-tables from checks.json -->\n{table}\n<!-- {name}:end -->"
        if blocks[name].group(0) != want:
            stale.append(name)
            text = text.replace(blocks[name].group(0), want)
    if write and stale:
        readme.write_text(text)
    return stale


# ---------------------------------------------------------------------------------------------
# pins: the expected result of every run, recorded beside its configuration in checks.json
# ---------------------------------------------------------------------------------------------
# configs.<name>.pin = {"states", "rules_fired"}: Rumur's distinct states and rules fired, the same
# for any number of verifier threads (measured with 1, 2 and 4). mutants.<name>.pin = {"violated"}:
# every property Rumur reports, sorted (what a mutant's run is rejected on). A run whose outcome is
# as expected is compared with its pin; a difference fails the run until the pin is updated
# (--update-pins rewrites checks.json from the run, for a deliberate model change).
def pin_of(rec: dict) -> dict:
    if rec["kind"] == "model":
        return {"states": rec["states"], "rules_fired": rec["rules_fired"]}
    return {"violated": sorted(rec["all_violated"])}


def _pin_entry(checks: dict, rec: dict) -> tuple[str, dict | None]:
    """Where `rec`'s pin lives in checks.json (a dotted path, for messages) and the entry holding it."""
    section = "configs" if rec["kind"] == "model" else "mutants"
    return f"{section}.{rec['name']}.pin", checks.get(section, {}).get(rec["name"])


def compare_pin(rec: dict, checks: dict, suite: str = "default") -> tuple[str, str | None]:
    """("match" | "unpinned" | "mismatch" | "not compared", the line to print or None).

    Only a run with the expected outcome is compared: a failing model or a mutant rejected on the
    wrong property already fails, and its numbers mean nothing."""
    if not rec["ok"]:
        return "not compared", None
    where, entry = _pin_entry(checks, rec)
    pin = (entry or {}).get("pin")
    if pin is None:
        return "unpinned", None
    got = pin_of(rec)
    if {k: pin.get(k) for k in got} == got:
        return "match", None
    show = lambda d: ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in d.items())
    return "mismatch", (f"PIN MISMATCH {rec['name']} ({rec['kind']}, config {rec['config']}): expected "
                        f"{show({k: pin.get(k) for k in got})} ({CHECKS.name} {where}), got {show(got)}. "
                        f"If the model change is deliberate, update the pin in the same commit: "
                        f"spec/murphi/check.py --suite {suite} --only {rec['name']} --update-pins")


def apply_pins(records: list[dict], checks: dict, suite: str = "default") -> list[str]:
    """Compare every record with its pin: sets rec["pin"] (the status) and rec["pinned"] (the pin),
    and a mismatch makes the run a failure (rec["ok"] = False). Returns the mismatch lines."""
    lines = []
    for rec in records:
        status, line = compare_pin(rec, checks, suite)
        rec["pin"] = status
        rec["pinned"] = (_pin_entry(checks, rec)[1] or {}).get("pin")
        if status == "mismatch":
            rec["ok"] = False
            lines.append(line)
    return lines


def update_pins(path: Path, records: list[dict]) -> list[str]:
    """Rewrite the pins of `records` (runs with the expected outcome only) in the checks file at
    `path`; every other byte of the file keeps its format. Returns the names whose pin changed."""
    checks = json.loads(path.read_text())
    changed = []
    for rec in records:
        status = rec.get("pin")
        if status not in ("match", "mismatch", "unpinned"):      # a failed run pins nothing
            continue
        _, entry = _pin_entry(checks, rec)
        if entry is None:
            raise CheckError(f"{path}: no {rec['kind']} named {rec['name']!r} to pin")
        new = pin_of(rec)
        if entry.get("pin") != new:
            entry["pin"] = new
            changed.append(rec["name"])
        rec["pin"], rec["pinned"], rec["ok"] = "updated" if rec["name"] in changed else "match", new, True
    if changed:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(checks, indent=2, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="default")
    ap.add_argument("--only", nargs="*", default=None, help="configuration or mutant names")
    ap.add_argument("--set", nargs="*", default=[], metavar="CONST=VALUE",
                    help="override model constants (exploration; not recorded in the summary)")
    ap.add_argument("--model", type=Path, default=MODEL, help="model file (default spec/murphi/apta.m)")
    ap.add_argument("--threads", type=int, default=0, help="verifier threads of models (0 = all cores)")
    ap.add_argument("--no-summary", action="store_true", help="do not write build/verify/summary.json")
    ap.add_argument("--write-tables", action="store_true",
                    help="rewrite the generated tables of spec/murphi/README.md from checks.json, run nothing")
    ap.add_argument("--check-tables", action="store_true",
                    help="fail if the generated tables of spec/murphi/README.md differ from checks.json")
    ap.add_argument("--update-pins", action="store_true",
                    help="rewrite the pins in checks.json from this run (a deliberate model change)")
    args = ap.parse_args(argv)

    try:
        checks = load_checks()
        if args.write_tables or args.check_tables:
            stale = sync_tables(checks, MODEL.read_text(), write=args.write_tables)
            if stale and args.check_tables:
                raise CheckError(f"{README}: generated table(s) {', '.join(stale)} differ from {CHECKS.name} "
                                 f"(spec/murphi/check.py --write-tables)")
            print(f"{README.name}: tables {'rewritten: ' + ', '.join(stale) if stale else 'up to date'}")
            return 0
        if args.suite not in checks["suites"]:
            raise CheckError(f"unknown suite {args.suite!r} (known: {', '.join(checks['suites'])})")
        suite = checks["suites"][args.suite]
        models, mutants = list(suite.get("models", [])), list(suite.get("mutants", []))
        if args.only is not None:
            known = set(checks["configs"]) | set(checks["mutants"])
            bad = [n for n in args.only if n not in known]
            if bad:
                raise CheckError(f"unknown configuration or mutant name(s): {', '.join(bad)} "
                                 f"(known: {', '.join(sorted(known))})")
            models = [n for n in args.only if n in checks["configs"]]
            mutants = [n for n in args.only if n in checks["mutants"]]
        overrides = {}
        for kv in args.set:
            if "=" not in kv:
                raise CheckError(f"--set {kv!r}: expected CONST=VALUE")
            k, v = kv.split("=", 1)
            overrides[k] = v
        if not args.model.exists():
            raise CheckError(f"{args.model}: no such model file")
        source = args.model.read_text()
        exploring = bool(overrides) or args.model.resolve() != MODEL     # pins are of the real model only
        if args.update_pins and exploring:
            raise CheckError("--update-pins records the real model's results: not with --set or --model")
        if shutil.which("rumur") is None:
            raise CheckError("rumur is not installed (make verify installs it)")

        jobs = plan(checks, models, mutants, overrides, args.threads)
        build_all(jobs, source)
        records = run_jobs(jobs)
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    mismatches, updated = [], []
    if exploring:
        for rec in records:
            rec["pin"], rec["pinned"] = "not compared", None
    else:
        mismatches = apply_pins(records, checks, args.suite)
        if args.update_pins:
            updated = update_pins(CHECKS, records)
            mismatches = []
    rejected = {r["name"] for r in records if r["kind"] == "mutant" and r["ok"]}
    for r in records:                      # what each configuration is shown able to falsify
        if r["kind"] == "model":
            r["live"] = {p: [m for m in ms if m in rejected]
                         for p, ms in live_where(checks, sorted(rejected)).get(r["name"], {}).items()}
    if not args.no_summary and not overrides and args.model == MODEL:
        # The default suite is what `make verify` reports; other suites get a file of their own.
        path = SUMMARY if args.suite == "default" else SUMMARY.with_name(f"summary-{args.suite}.json")
        if args.only is None:
            summary.update(path, "rumur", records)
        else:                                              # a partial run keeps the other records
            summary.merge(path, "rumur", records, known=set(checks["configs"]) | set(checks["mutants"]))
    print()
    print(summary.table(records))
    report, _ = live_report(checks, records, properties(source))
    print()
    print(report)
    for line in mismatches:
        print(f"\n{line}")
    if updated:
        print(f"\nrumur: pins updated in {CHECKS}: {', '.join(updated)}")
    unpinned = [r["name"] for r in records if r.get("pin") == "unpinned"]
    pins = (f"; unpinned (no pin in {CHECKS.name}, not compared): {', '.join(unpinned)}"
            if unpinned else ("; not compared with the pins (--set/--model)" if exploring else
                              "; every result equals its pin"))
    bad = [r["name"] for r in records if not r["ok"]]
    nmodels = sum(1 for r in records if r["kind"] == "model")
    if bad:
        print(f"\nrumur: FAILED: {', '.join(bad)}"
              + (f" (pin mismatch: {', '.join(r['name'] for r in records if r.get('pin') == 'mismatch')})"
                 if mismatches else ""))
        return 1
    states = sum(r["states"] for r in records if r["kind"] == "model")
    print(f"\nrumur: {nmodels} configuration(s) verified ({states:,} states), "
          f"{len(records) - nmodels} mutant(s) rejected on their target property{pins}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
