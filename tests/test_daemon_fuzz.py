"""The daemon's libFuzzer targets (qemu-cxl/daemon/fuzz/, README.md "Fuzzing"), replayed, not
fuzzed: every target passes its committed seed corpus (valid requests, the probes of
test_daemon.py / test_daemon_http.py, the mutants' reproducers), and each deliberate bug, built
into its target with a -D switch the daemon never sets, fails on its committed reproducer with the
report that shows it. The fuzzing runs themselves are `make fuzz` (FUZZTIME) and the bounded run
of `make test`; the mutants' time-to-find is `make -C qemu-cxl/daemon fuzz-mutants`.

Needs clang (Debian's clang 14 + libclang-rt-14-dev, `make deps-fuzz`): skipped without it,
failed under APTA_FUZZ=1 (make test)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from apta.qemu.harness import FUZZ_CORPUS, ROOT

DAEMON = ROOT / "qemu-cxl" / "daemon"
TARGETS = ("slot", "http", "json")
# mutant -> (target, what the report must say)
MUTANTS = {
    "slot-length": ("slot", "AddressSanitizer: stack-buffer-overflow"),
    "ack-server": ("slot", "contract violated: accepted a slot that breaks server field"),
    "cl-strtoull": ("http", 'contract violated: accepted Content-Length "21x"'),
    "header-crlf": ("http", "contract violated: accepted a header section of 258 bytes (limit 256)"),
}


@pytest.fixture(scope="module")
def fuzz_out(schema) -> Path:
    """The fuzz binaries' directory (`schema`: the generated headers need the RTL variant's params)."""
    if not shutil.which("clang++"):
        msg = "clang++ missing: run make deps-fuzz"
        if os.environ.get("APTA_FUZZ") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    r = subprocess.run(["nice", "-n", "10", "make", "-s", "-C", str(DAEMON), "fuzz-build"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    out = subprocess.run(["make", "-s", "-C", str(DAEMON), "print-fuzz"], capture_output=True, text=True, check=True)
    words = out.stdout.split()
    assert sorted(words[1:]) == sorted(f"{t}:{m}" for m, (t, _) in MUTANTS.items()), "the Makefile's mutants are MUTANTS"
    return Path(words[0])


def replay(binary: Path, files: list[Path]) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *map(str, files)], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("target", TARGETS)
def test_target_passes_its_seed_corpus(fuzz_out, target):
    files = sorted((FUZZ_CORPUS / target).iterdir())
    assert len(files) >= 10, files
    r = replay(fuzz_out / f"fuzz-{target}", files)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("Executed ") == len(files), r.stderr[-2000:]


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_mutant_fails_on_its_reproducer(fuzz_out, mutant):
    target, report = MUTANTS[mutant]
    repro = FUZZ_CORPUS / target / f"mutant-{mutant}"
    r = replay(fuzz_out / f"fuzz-{target}-mutant-{mutant}", [repro])
    assert r.returncode != 0 and report in r.stderr, r.stderr[-3000:]
    # and only the mutant: its target without the switch passes the same input
    assert replay(fuzz_out / f"fuzz-{target}", [repro]).returncode == 0
