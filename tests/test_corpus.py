"""The real-log corpus (tests/corpus/): logs copied verbatim from public GitHub issues and pulls.

The corpus itself is checked here (every log listed once, sources are issue or pull URLs, expected
cells and families exist, enough positives and negatives, files small), and the real CLI (`kb match
--json`) runs over every log: each positive marked `today: first` in expected.yaml must keep its
right answer first (its cell, or for a log whose answer is a family page, that family's answer),
and no cell may be given as `applies` to a negative marked `today: not-applies`. The accuracy figures over the whole corpus are bench/triage_corpus.py's, not a test's.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("kb_bench_triage_corpus", ROOT / "bench" / "triage_corpus.py")
triage_corpus = importlib.util.module_from_spec(_spec)  # loaded by path: bench/ is not put on sys.path
_spec.loader.exec_module(triage_corpus)

LOGS = triage_corpus.LOGS
TABLE_PATH = triage_corpus.TABLE
ENTRIES = ROOT / "kb" / "entries"
FAMILIES = ROOT / "kb" / "families"
KB = Path(sys.executable).parent / "kb"  # the console script of the virtualenv running the tests
NAME = re.compile(r"^(\d{3})-[a-z0-9]+(?:-[a-z0-9]+)*\.log$")
SOURCE = re.compile(r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(?:issues|pull)/\d+(?:#issuecomment-\d+)?$")
FIELDS = {"url", "kind", "expected", "gpu", "note", "sample"}
OPTIONAL = {"today", "expected_family", "blackwell"}
SAMPLES = {"issue-22", "issue-35"}
MAX_BYTES = 64 * 1024

TABLE = triage_corpus.load_table(TABLE_PATH)


def test_every_log_is_listed_exactly_once():
    node = yaml.compose(TABLE_PATH.read_text(encoding="utf-8"))
    logs = next(value for key, value in node.value if key.value == "logs")
    keys = [key.value for key, _ in logs.value]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    assert duplicates == [], f"{TABLE_PATH.name}: listed more than once: {duplicates}"
    on_disk = sorted(path.name for path in LOGS.iterdir())
    assert sorted(keys) == on_disk, (
        f"not listed: {sorted(set(on_disk) - set(keys))}; listed but missing: {sorted(set(keys) - set(on_disk))}")


def test_log_names_are_numbered_once_and_say_their_kind():
    numbers = []
    for name, row in TABLE.items():
        found = NAME.match(name)
        assert found, f"{name}: want NNN-short-name.log (lower case, digits, dashes)"
        numbers.append(found.group(1))
        assert ("-neg-" in name) == (row["kind"] == "negative"), f"{name}: negatives, and only they, are named NNN-neg-..."
    assert len(numbers) == len(set(numbers)), "a number is used twice"


@pytest.mark.parametrize("name", sorted(TABLE))
def test_row_is_complete_and_consistent(name):
    row = TABLE[name]
    assert FIELDS <= set(row), f"{name}: missing {sorted(FIELDS - set(row))}"
    assert set(row) <= FIELDS | OPTIONAL, f"{name}: unknown fields {sorted(set(row) - FIELDS - OPTIONAL)}"
    assert row["sample"] in SAMPLES, f"{name}: sample {row['sample']!r} is not one of {sorted(SAMPLES)}"
    assert SOURCE.match(row["url"]), f"{name}: url {row['url']!r} is not a github.com issue or pull request URL"
    assert row["kind"] in ("positive", "negative"), f"{name}: kind {row['kind']!r}"
    assert isinstance(row["gpu"], str) and row["gpu"].strip(), f"{name}: gpu is empty"
    assert isinstance(row["note"], str) and row["note"].strip() and "\n" not in row["note"].strip(), f"{name}: note must be one line"
    if row["kind"] == "positive":
        assert "blackwell" not in row, f"{name}: blackwell is for negatives only (every positive is a Blackwell failure)"
        if row["expected"] is None:
            family = row.get("expected_family")
            assert family is not None, f"{name}: a positive names a cell in expected or, with expected null, a family in expected_family"
            assert (FAMILIES / f"{family}.yaml").is_file(), f"{name}: expected_family {family!r} is not in kb/families"
        else:
            assert "expected_family" not in row, f"{name}: expected_family is only for positives whose expected is null"
            assert (ENTRIES / f"{row['expected']}.yaml").is_file(), f"{name}: expected cell {row['expected']!r} is not in kb/entries"
        assert row.get("today", "first") == "first", f"{name}: today is 'first' or absent"
    else:
        assert row["expected"] is None, f"{name}: a negative expects no cell (null)"
        assert "expected_family" not in row, f"{name}: a negative expects no family (a failure a family describes is a positive)"
        assert row.get("blackwell") in (True, False), (
            f"{name}: blackwell must be true (a Blackwell failure no cell or family describes) or false (another GPU)")
        assert row.get("today", "not-applies") == "not-applies", f"{name}: today is 'not-applies' or absent"


@pytest.mark.parametrize("name", sorted(TABLE))
def test_log_file_is_small_nonempty_utf8(name):
    data = (LOGS / name).read_bytes()
    assert 0 < len(data) <= MAX_BYTES, f"{name}: {len(data)} bytes (1 to {MAX_BYTES})"
    data.decode("utf-8")  # raises on invalid UTF-8


def test_corpus_size():
    kinds = [row["kind"] for row in TABLE.values()]
    assert len(kinds) >= 40
    assert kinds.count("positive") >= 25
    assert kinds.count("negative") >= 15


def test_issue_35_sample_size():
    """Issue 35 item 5: at least 30 new logs taken in search order, negatives from other GPUs among them."""
    rows = [row for row in TABLE.values() if row["sample"] == "issue-35"]
    assert len(rows) >= 30
    assert sum(row["kind"] == "negative" and row["blackwell"] is False for row in rows) >= 5


@pytest.fixture(scope="module")
def results() -> dict[str, list[dict]]:
    """`kb match --json` on every log, through the installed CLI."""
    assert KB.exists(), f"{KB} is missing: run make .venv/.installed-test"
    return {name: triage_corpus.run_match(LOGS / name, KB) for name in TABLE}


@pytest.mark.slow
def test_kb_match_reads_every_log(results):
    for name, hits in results.items():
        assert isinstance(hits, list), name
        for hit in hits:
            if hit.get("answer") == "family":
                assert (FAMILIES / f"{hit['family']}.yaml").is_file(), f"{name}: kb match named an unknown family {hit['family']!r}"
            else:
                assert (ENTRIES / f"{hit['entry']}.yaml").is_file(), f"{name}: kb match named an unknown cell {hit['entry']!r}"


@pytest.mark.parametrize("name", sorted(name for name, row in TABLE.items() if row.get("today") == "first"))
def test_positives_right_today_stay_first(name, results):
    row, hits = TABLE[name], results[name]
    want = row["expected"] if row["expected"] is not None else f"family {row['expected_family']}"
    assert triage_corpus.right_first(row, hits), f"{name}: first answer is {triage_corpus.first_answer(hits)!r}, want {want!r}"


@pytest.mark.parametrize("name", sorted(name for name, row in TABLE.items() if row.get("today") == "not-applies"))
def test_negatives_not_applies_today_stay_so(name, results):
    given = [(hit["entry"], hit["why"]) for hit in triage_corpus.cells(results[name]) if hit["verdict"] == "applies"]
    assert given == [], f"{name}: a negative ({TABLE[name]['gpu']}) is given cells as applies: {given}"


# Negatives whose log names their (non-Blackwell) GPU only in prose, without "NVIDIA" ("on an H100",
# "on V100"): kb.triage.logfacts reads it (the gpu-bare rules), so no family answer comes first.
NAMED_IN_PROSE = ["072-neg-h100-quarot-cutlass-no-kernel-image.log", "075-neg-v100-sageattention2-no-kernel-image.log"]


@pytest.mark.parametrize("name", NAMED_IN_PROSE)
def test_a_gpu_named_in_prose_gets_no_family_answer_first(name, results):
    first = triage_corpus.first_answer(results[name])
    assert first is None or not first.startswith("family:"), f"{name}: first answer {first!r} on {TABLE[name]['gpu']}"


def test_score_counts_right_first_and_misses():
    """The bench's arithmetic on a made-up table (the real figures are the bench's output)."""
    table = {
        "001-a.log": {"kind": "positive", "expected": "x", "gpu": "g"},
        "002-b.log": {"kind": "positive", "expected": "y", "gpu": "g"},
        "003-neg-c.log": {"kind": "negative", "expected": None, "gpu": "V100", "blackwell": False},
        "004-neg-d.log": {"kind": "negative", "expected": None, "gpu": "A100", "blackwell": False},
        "005-neg-e.log": {"kind": "negative", "expected": None, "gpu": "H100", "blackwell": False},
        "006-f.log": {"kind": "positive", "expected": None, "expected_family": "fam", "gpu": "g"},
        "007-g.log": {"kind": "positive", "expected": None, "expected_family": "fam", "gpu": "g"},
        "008-h.log": {"kind": "positive", "expected": "x", "gpu": "g"},
        "009-neg-i.log": {"kind": "negative", "expected": None, "gpu": "RTX 5090", "blackwell": True},
        "010-neg-j.log": {"kind": "negative", "expected": None, "gpu": "T4", "blackwell": False},
    }
    results = {
        "001-a.log": [{"entry": "x"}],
        "002-b.log": [{"entry": "z"}, {"entry": "y"}],
        "003-neg-c.log": [{"entry": "y", "verdict": "applies", "why": "line 2 shows sm_120"},
                          {"entry": "x", "verdict": "ruled-out"}],
        "004-neg-d.log": [{"answer": "family", "entry": None, "family": "fam"}],
        "005-neg-e.log": [{"entry": "x", "verdict": "ruled-out"}],
        "006-f.log": [{"answer": "family", "entry": None, "family": "fam"}],
        "007-g.log": [{"entry": "x"}],
        "008-h.log": [{"answer": "family", "entry": None, "family": "fam"}],
        "009-neg-i.log": [],
        # The family answer first, a cell that matched only a generic line after it: no cell handed first.
        "010-neg-j.log": [{"answer": "family", "entry": None, "family": "fam"},
                          {"entry": "x", "verdict": "unknown", "answer": "also-prints-this-line"}],
    }
    figures = triage_corpus.score(table, results, {"x": "fam", "y": None, "z": "other"})
    assert (figures["right_first"], figures["right_or_family_first"], figures["positives"]) == (2, 3, 5)
    assert (figures["blackwell_failures"], figures["gap"]) == (6, ["009-neg-i.log"])
    assert (figures["negatives_given_a_cell"], figures["negatives_given_applies"], figures["negatives_matched"]) == (1, 1, 3)
    assert figures["negatives_given_a_family"] == 2
    assert figures["has_verdict"] is True
    assert figures["misses"] == [
        ("002-b.log", "positive", "expected entry:y ranked 2, first was entry:z"),
        ("007-g.log", "positive", "expected family:fam absent, first was entry:x"),
        ("008-h.log", "positive", "expected entry:x absent, first was family:fam"
                                  " (the right family's answer: counted as right family first)"),
        ("003-neg-c.log", "negative", "handed y first (verdict applies) on V100; a cell marked applies: line 2 shows sm_120"),
        ("004-neg-d.log", "negative", "given the family answer first (family:fam) on A100"),
        ("010-neg-j.log", "negative", "given the family answer first (family:fam) on T4"),
    ]
