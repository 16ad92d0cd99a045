"""The repository speaks of the product only: no tracked file names an issue of the tracker, a
development round, or a date. History lives in `git log`; a comment or document says why the
product is as it is, not when or in which round it changed.

Checked on every file `git ls-files` lists (text files; binary ones are skipped):
- an issue reference: "issue N", "(issue N, ...)", "issues N, M", "issues N/M", "issue #N",
  "see #N" (N a number). The protocol's verb is not one: a server "issues a get", the OPC "issues
  N reads" (a count followed by what is issued), so a number after "issue(s)" is a reference only
  when it is used as a name: followed by punctuation or the line's end, preceded by an article or
  a preposition ("of issue N", "the issue N"), or followed by a verb of citing ("issue N names").
- a development round: "stop N", "stops N-M", "Stop N:", under the same rule ("stop the daemon",
  "the stress stops N cycles later" are not).
- a date (YYYY-MM-DD): allowed only as the whole value of a JSON field whose name says it is the
  date of a measurement (`"measured_on": "..."`, `"date": "..."`, `"..._date": "..."`), in a
  results-of-record file. Version numbers ("2024.1", "v24.0.0.1") are not dates.

Plain pytest, standard library only, no build needed.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What a number after "issue"/"stop" is when it names something, not counts it.
_NAME_BEFORE = (r"(?:the|of|in|on|at|for|from|per|see|since|until|till|before|after|under|"
                r"rest\s+of|part\s+of)")
_CITING_VERB = (r"(?:names?|named|asks?|asked|requires?|required|says|said|wants?|wanted|lists?|"
                r"listed|notes?|noted|describes?|described|calls?|called|asks\s+for|is|was|are|were|"
                r"has|had|below|above)")
_NUMS = r"#?\s?\d+(?:\s*(?:[-–/,]|and)\s*#?\d+)*"      # N | #N | N, M | N/M | N-M | N and M


def _reference(word: str) -> re.Pattern:
    """A number after `word` (issue, stop; singular or plural) used as a name."""
    w = rf"{word}s?"
    forms = [
        rf"\b{_NAME_BEFORE}\s+{w}\s+{_NUMS}\b",                        # of issue N, the stop N
        rf"\b{w}\s+{_NUMS}(?=\s*(?:$|[)\]:;,.!?'’\"}}/]|-(?!\d)))",       # (issue N) / issue N: / stop N.
        rf"\b{w}\s+{_NUMS}\s+{_CITING_VERB}\b",                         # issue N names, issue N named
        rf"(?<![\w.]){w}\s*\#\d+",                                      # issue #N
        rf"(?:^[\s#*/>|-]*|[.!?;]\s+){word.capitalize()}s?\s+{_NUMS}\b",  # a sentence starting "Issue N" / "Stop N"
    ]
    return re.compile("|".join(f"(?:{f})" if i < 4 else f"(?-i:{f})" for i, f in enumerate(forms)), re.I)


ISSUE = _reference("issue")
# "#N" alone is also a mutant's id ("#2159"); as a reference it follows a verb of citing
HASH_REF = re.compile(r"(?i)\b(?:see|fixes|fixed|closes|closed|resolves|resolved|refs?)\s+#\d+\b")
ROUND = _reference("stop")
DATE = re.compile(r"(?<![\w.-])20\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?![\w])")
# a results-of-record field: the key says it is a date, the whole value is the date (and a time)
DATE_FIELD = re.compile(r'"(?:[A-Za-z_]*_)?(?:date|measured_on|measured_at|run_on)"\s*:\s*'
                        r'"(?:19|20)\d{2}-\d{2}-\d{2}(?:[T ][0-9:.+Z-]*)?"', re.I)


def violations(text: str, path: str = "") -> list[tuple[int, str, str]]:
    """(line number, what, the line) for every issue, round or disallowed date in `text`."""
    out = []
    is_json = path.endswith(".json")
    for n, line in enumerate(text.splitlines(), 1):
        low = line.lower()                  # cheap filters first: most lines hold none of the words
        if ("issue" in low and ISSUE.search(line)) or ("#" in line and HASH_REF.search(line)):
            out.append((n, "issue", line))
        if "stop" in low and ROUND.search(line):
            out.append((n, "round", line))
        dates = DATE.findall(line) if "20" in line else []
        if dates:
            allowed = DATE_FIELD.findall(line) if is_json else []
            if len(dates) > sum(len(DATE.findall(a)) for a in allowed):
                out.append((n, "date", line))
    return out


def tracked_files() -> list[str]:
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"git is not usable here ({e}): the hygiene check needs `git ls-files`")
    if r.returncode != 0:
        pytest.skip("not a git checkout (git ls-files failed: "
                    f"{r.stderr.decode(errors='replace').strip()}): the hygiene check lists tracked files")
    return [p for p in r.stdout.decode().split("\0") if p]


def read_text(path: Path) -> str | None:
    """The file's text, or None for a binary, missing or non-UTF-8 file."""
    try:
        data = path.read_bytes()
    except OSError:
        return None                     # listed but absent from the work tree (deleted, not staged)
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# ---- the detector has teeth --------------------------------------------------------------------

# Built from pieces so that this file does not hold what it forbids.
_I, _S, _D = "iss" + "ue", "st" + "op", "2026" + "-11-25"
BAD = [
    f"**Beyond the paper: dataflow invocation ({_I} 19, in progress).**",
    f"// CacheAt is a versioned get ({_I} 19): server gets obj",
    f"The rule ({_I}s 16, 17; spec/murphi/README.md)",
    f"| `kind/` | `make kind` ({_I}s 19/20): a kind cluster |",
    f"# or deep suite): the gaps {_I} 17 named.",
    f"Closing the survivors is the open part of {_I} 22.",
    f"{_I.capitalize()} 8: N TCG guests (compute servers)",
    f"a conforming answer ({_I} #16's probes)",
    "the decoder's probes (see " + "#16)",
    f"argued equivalent \"in simulation\", {_S} 40). A real SRAM",
    f"## {_S.capitalize()} 43: the version table is mutated",
    f"the first run of {_S}s 44-46 went on",
    f"Until {_S} 38 the delay was on the source instances",
    f"ran over two rounds. {_S.capitalize()} 42 reached 559 of them",
    f"the core never answers the OPC's Commit Drop: {_S} 39 below);",
    f"Measured (2 cores, {_D}): the table below",
    f"added {_D} for the sensitivity runs",
]
GOOD = [
    "the OSC issues a get to DRAM; the OPC issues 2 reads per line",
    "a server issues 16 gets at once; the core may issue 4 requests per cycle",
    "The OIC issues its BISnps lowest server first, one per cycle",
    "the OPC drains and issues 2 writes; servers that issue 2 gets; it waits to issue 4 reads",
    "issues no versioned gets (the stress of test_ms_hold.py does)",
    "make test-kind stops a worker's node container; stop the daemon with SIGTERM",
    "the stress stops 2 cycles later; stops 3 guests at once",
    "mutant #2159 `sameRow | clear-lane` survived, and #1751 (ms3 #1747) too; the key Opc:e4506a3907:operator:== -> !=#0",
    "gem5 v24.0.0.1, Yosys 0.23, kind v0.33.0, a package version 2024.1, QEMU 7.2",
    "a 1-in-2026 chance; offsets 2026-2030; the range 10-11-12",
    "round 3 of the BISnps; epoch 16; version 19",
    "Days are days since 1970-01-01 (a Thursday): the Unix epoch, not a date of this project",
]


def test_detector_flags_the_bad_and_accepts_the_good():
    missed = [s for s in BAD if not violations(s)]
    assert not missed, f"the hygiene detector misses: {missed}"
    flagged = [(s, violations(s)) for s in GOOD if violations(s)]
    assert not flagged, f"the hygiene detector flags legitimate text: {flagged}"


def test_dates_only_in_a_measurement_field_of_a_json_record():
    assert not violations(f'{{"states": 12210000, "measured_on": "{_D}"}}', "spec/murphi/checks.json")
    assert not violations(f'  "date": "{_D}T10:04:00Z",', "build/bench/x.json")
    assert violations(f'"note": "loaded 5-10 ({_D}); stopped"', "spec/murphi/checks.json")
    assert violations(f'"source": "added {_D} (sim/README.md)"', "sim/params.json")
    assert violations(f'"measured_on": "{_D}"', "README.md")            # not a JSON record


# ---- the repository ---------------------------------------------------------------------------

def test_no_tracked_file_names_an_issue_a_round_or_a_date():
    found = []
    for rel in tracked_files():
        text = read_text(ROOT / rel)
        if text is None:
            continue
        for n, what, line in violations(text, rel):
            found.append(f"{rel}:{n}: [{what}] {line.strip()[:160]}")
    assert not found, (f"{len(found)} line(s) name a tracker issue, a development round or a date "
                       "(history belongs in git log; dates only in a JSON record's measured_on/date "
                       "field):\n" + "\n".join(found))
