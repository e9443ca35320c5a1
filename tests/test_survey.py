"""The survey of public trackers (kb/survey/, tools/survey.py): it checks clean, a bad file gets one
precise line per problem, and the ranking counts reports of one failure together."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import survey  # noqa: E402

GOOD = """\
tracker: https://github.com/o/r
searched_on: 2026-12-05
queries:
  - {tool: search-issues, query: "sm_120 no kernel image"}
reports:
  - thread: https://github.com/o/r/issues/1
    title: "[Bug]: RTX 5090 fails"
    literal: "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    symptom: null
    gpu: RTX 5090
    arch: sm_120
    opened: 2025-03-02
    state: closed
    state_as_of: 2026-12-05
    reports: 3
    versions: null
    fix: null
    family: no-code-for-gpu
    entry: null
    why_none: no entry yet
  - thread: https://github.com/o/r/issues/2
    title: "Same on 5080"
    literal: "RuntimeError: CUDA error: no kernel image is available for execution on the device  "
    symptom: null
    gpu: RTX 5080
    arch: sm_120
    opened: 2025-04-01
    state: open
    state_as_of: 2026-12-05
    reports: 2
    versions: null
    fix: null
    family: no-code-for-gpu
    entry: null
    why_none: no entry yet (generic line matches another project's entry)
"""


def _faults(tmp_path, text: str | None, name: str = "r.yaml") -> list[str]:
    if text is not None:
        (tmp_path / name).write_text(text, encoding="utf-8")
    _, faults = survey.read_all(tmp_path, ROOT / "kb" / "entries", today="2026-12-05")
    return [f"{f.line}: {f.field}: {f.message}" for f in faults]


def test_the_committed_survey_checks_clean():
    reports, faults = survey.read_all()
    assert [f.format() for f in faults] == []
    assert all(r["entry"] is None or (ROOT / "kb" / "entries" / f"{r['entry']}.yaml").exists() for r in reports)


def test_a_good_file_has_no_problem_and_ranks_one_failure_with_both_threads(tmp_path):
    assert _faults(tmp_path, GOOD) == []
    reports, _ = survey.read_all(tmp_path, ROOT / "kb" / "entries", today="2026-12-05")
    ranked = survey.rank(reports)
    assert len(ranked) == 1 and ranked[0]["reports"] == 5
    assert ranked[0]["threads"] == ["https://github.com/o/r/issues/1", "https://github.com/o/r/issues/2"]


def test_each_bad_value_is_named_with_its_line_and_field(tmp_path):
    bad = (GOOD.replace("arch: sm_120\n    opened: 2025-03-02", "arch: sm_100\n    opened: 2025-03-02")
           .replace("reports: 3", "reports: 0")
           .replace("entry: null\n    why_none: no entry yet\n", "entry: no-such-entry\n    why_none: no entry yet\n")
           .replace("https://github.com/o/r/issues/2", "http://example.org/2")
           .replace("state_as_of: 2026-12-05\n    reports: 2", "state_as_of: 2027-01-01\n    reports: 2"))
    assert _faults(tmp_path, bad) == [
        "11: reports[0].arch: must be one of sm_120, sm_121, sm_12x",
        "15: reports[0].reports: must be the number of people seen hitting it there (at least 1)",
        "19: reports[0].entry: names no file in kb/entries/ (the id is the file name without .yaml)",
        "20: reports[0].why_none: say why no entry covers it exactly when entry is null",
        "21: reports[1].thread: must be a GitHub issue, pull request or discussion URL",
        "29: reports[1].state_as_of: must be a date YYYY-MM-DD, not in the future",
    ]


def test_a_missing_or_unknown_field_and_a_file_that_is_no_survey(tmp_path):
    text = GOOD.replace("    fix: null\n", "    fixed: null\n", 1)
    assert _faults(tmp_path, text) == [
        "17: reports[0].fixed: unknown field; see kb/survey/README.md for the fields",
        "6: reports[0]: field fix is missing; write it (null where the thread does not say)",
    ]
    (tmp_path / "r.yaml").unlink()
    assert _faults(tmp_path, "x", "notes.txt") == [
        "1: (file): only <tracker>.yaml files (and README.md) belong in kb/survey/"]
