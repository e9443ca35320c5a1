"""The survey of public trackers (kb/survey/*.yaml): check it, and rank what no entry covers.

Each file holds one tracker's survey: the queries run and every Blackwell (sm_120 / sm_121) failure
report found, with the entry that covers it or why none does (issue 35). The files are data that
strangers' pull requests may change, so they are read as entries are (kb.records.load: plain YAML
only, a line for every value) and checked field by field; every problem is printed as
`file:line: field: what is wrong (got value)`, all at once.

    .venv/bin/python tools/survey.py            # check, then the uncovered failures, most reported first
    .venv/bin/python tools/survey.py --check    # check only (exit 1 on a problem)
    .venv/bin/python tools/survey.py --json     # the ranking as JSON

Reports of the same failure in several threads count together: they are grouped by their literal
line (normalised as `kb match` reads lines) or, without one, by their symptom.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kb.records import load  # noqa: E402
from kb.records.problems import show  # noqa: E402

SURVEY = ROOT / "kb" / "survey"
ENTRIES = ROOT / "kb" / "entries"
FAMILIES = ("no-code-for-gpu", "toolchain-too-old", "hopper-or-datacenter-kernel", "shared-memory-limit",
            "source-build-arch-list", "unsupported-on-sm12x", "gb10-unified-memory", "driver-platform",
            "numerics-or-other")
ARCHES = ("sm_120", "sm_121", "sm_12x")
STATES = ("open", "closed", "merged")
THREAD = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(?:issues|pull|discussions)/[0-9]+"
                    r"(?:#[A-Za-z0-9_-]+)?")
TRACKER = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
FIELDS = {"thread", "title", "literal", "symptom", "gpu", "arch", "opened", "state", "state_as_of", "reports",
          "versions", "fix", "family", "entry", "why_none"}


@dataclass(frozen=True)
class Fault:
    path: Path
    line: int
    field: str
    message: str
    got: object = None

    def format(self) -> str:
        got = "" if self.got is None else f" (got {show(self.got)})"
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.field}: {self.message}{got}"


def _dotted(loc: tuple) -> str:
    """('reports', 3, 'entry') -> 'reports[3].entry', as kb check names fields."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _date(value) -> bool:
    try:
        return isinstance(value, str) and dt.date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


def _text(value, limit: int) -> bool:
    return isinstance(value, str) and 0 < len(value.strip()) and len(value) <= limit and "\n" not in value


def check_file(path: Path, entries: set[str], today: str) -> tuple[list[dict], list[Fault]]:
    """The reports of one survey file and its problems."""
    raw = load.read(path)
    loaded = raw if isinstance(raw, load.Loaded) else load.parse(path, raw, key_chars=80)
    if loaded.problems or loaded.data is None:
        return [], [Fault(path, p.line, p.loc, p.message) for p in loaded.problems]
    data, faults = loaded.data, []

    def fault(loc: tuple, message: str, got=None) -> None:
        faults.append(Fault(path, loaded.line_of(loc), _dotted(loc), message, got))

    if not isinstance(data, dict):
        return [], [Fault(path, 1, "(file)", "must be a mapping with tracker, searched_on, queries, reports")]
    for key in set(data) - {"tracker", "searched_on", "queries", "reports"}:
        fault((key,), "unknown field; a survey file has tracker, searched_on, queries and reports")
    if not (isinstance(data.get("tracker"), str) and TRACKER.fullmatch(data["tracker"])):
        fault(("tracker",), "must be the tracker's https://github.com/OWNER/REPO address", data.get("tracker"))
    if not _date(data.get("searched_on")) or data.get("searched_on") > today:
        fault(("searched_on",), "must be the day of the search, YYYY-MM-DD, not in the future", data.get("searched_on"))
    queries = data.get("queries")
    if not isinstance(queries, list) or not queries:
        fault(("queries",), "must list every query run, each {tool: ..., query: ...}")
        queries = []
    for i, query in enumerate(queries):
        if not (isinstance(query, dict) and set(query) == {"tool", "query"} and _text(query.get("tool"), 40)
                and _text(query.get("query"), 400)):
            fault(("queries", i), "must be {tool: <tool or corpus>, query: <text as run>}", query)
    reports = data.get("reports")
    if not isinstance(reports, list):
        fault(("reports",), "must be a list of reports (empty if the search found none)")
        reports = []
    seen: dict[tuple, int] = {}
    good = []
    for i, report in enumerate(reports):
        at = ("reports", i)
        if not isinstance(report, dict):
            fault(at, "must be a mapping of the report's fields")
            continue
        before = len(faults)
        for key in sorted(set(report) - FIELDS):
            fault(at + (key,), "unknown field; see kb/survey/README.md for the fields")
        for key in sorted(FIELDS - set(report)):
            fault(at, f"field {key} is missing; write it (null where the thread does not say)")
        get = report.get
        if not (isinstance(get("thread"), str) and THREAD.fullmatch(get("thread"))):
            fault(at + ("thread",), "must be a GitHub issue, pull request or discussion URL", get("thread"))
        if not _text(get("title"), 300):
            fault(at + ("title",), "must be the thread's title, one line", get("title"))
        if get("literal") is None and get("symptom") is None:
            fault(at + ("literal",), "a report needs its literal error line, or a symptom when it printed none")
        for key, limit in (("literal", 1000), ("symptom", 200), ("gpu", 120), ("versions", 300), ("fix", 300),
                           ("why_none", 300)):
            if get(key) is not None and not _text(get(key), limit):
                fault(at + (key,), f"must be one line of at most {limit} characters, or null", get(key))
        if get("arch") not in ARCHES:
            fault(at + ("arch",), f"must be one of {', '.join(ARCHES)}", get("arch"))
        if get("state") not in STATES:
            fault(at + ("state",), f"must be one of {', '.join(STATES)}, as read", get("state"))
        for key in ("opened", "state_as_of"):
            if (key == "state_as_of" or get(key) is not None) and (not _date(get(key)) or get(key) > today):
                fault(at + (key,), "must be a date YYYY-MM-DD, not in the future" +
                      (", or null when the thread's date was not seen" if key == "opened" else ""), get(key))
        if _date(get("opened")) and _date(get("state_as_of")) and get("opened") > get("state_as_of"):
            fault(at + ("state_as_of",), "is before the day the thread was opened", get("state_as_of"))
        if not (isinstance(get("reports"), int) and not isinstance(get("reports"), bool) and 1 <= get("reports") <= 10000):
            fault(at + ("reports",), "must be the number of people seen hitting it there (at least 1)", get("reports"))
        if get("family") not in FAMILIES:
            fault(at + ("family",), f"must be one of {', '.join(FAMILIES)}", get("family"))
        entry, why = get("entry"), get("why_none")
        if entry is not None and entry not in entries:
            fault(at + ("entry",), "names no file in kb/entries/ (the id is the file name without .yaml)", entry)
        if (entry is None) == (why is None):
            fault(at + ("why_none",), "say why no entry covers it exactly when entry is null", why)
        key = (get("thread"), get("literal") or get("symptom"))
        if key in seen:
            fault(at, f"repeats report {seen[key]} (same thread and line): count people in `reports` instead")
        seen.setdefault(key, i)
        if len(faults) == before:
            good.append(report | {"tracker": data.get("tracker")})
    return good, faults


def read_all(folder: Path = SURVEY, entries_folder: Path = ENTRIES, today: str | None = None):
    """(every report, every problem) of the survey files in `folder`."""
    today = today or dt.date.today().isoformat()
    entries = {p.stem for p in entries_folder.glob("*.yaml")}
    reports, faults = [], []
    for path in sorted(folder.glob("*")):
        if path.name == "README.md":
            continue
        if path.suffix != ".yaml" or path.is_symlink() or not path.is_file():
            faults.append(Fault(path, 1, "(file)", "only <tracker>.yaml files (and README.md) belong in kb/survey/"))
            continue
        got, bad = check_file(path, entries, today)
        reports += got
        faults += bad
    return reports, faults


def _key(report: dict) -> str:
    from kb.records.normalise import normalise

    return normalise(report["literal"]) if report["literal"] else "symptom: " + report["symptom"].lower()


def rank(reports: list[dict]) -> list[dict]:
    """The failures no entry covers (why_none says 'no entry yet'), grouped by line, most reported first."""
    groups: dict[str, dict] = {}
    for report in reports:
        if report["entry"] is not None or not report["why_none"].lower().startswith("no entry yet"):
            continue
        group = groups.setdefault(_key(report), {"line": report["literal"] or report["symptom"], "reports": 0,
                                                 "threads": [], "family": report["family"]})
        group["reports"] += report["reports"]
        group["threads"].append(report["thread"])
    return sorted(groups.values(), key=lambda g: (-g["reports"], -len(g["threads"]), g["line"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="check the files only")
    parser.add_argument("--json", action="store_true", help="print the ranking as JSON")
    args = parser.parse_args(argv)
    reports, faults = read_all()
    for fault in faults:
        print(fault.format())
    if faults:
        print(f"{len(faults)} problem(s) in kb/survey/", file=sys.stderr)
        return 1
    if args.check:
        print(f"ok: {len(reports)} report(s)", file=sys.stderr)
        return 0
    ranked = rank(reports)
    covered = sum(1 for r in reports if r["entry"] is not None)
    if args.json:
        print(json.dumps({"reports": len(reports), "covered": covered, "uncovered": ranked}, indent=2))
        return 0
    print(f"{len(reports)} report(s); {covered} covered by an entry; {len(ranked)} failure(s) with no entry yet:")
    for n, group in enumerate(ranked, 1):
        print(f"{n:3}. {group['reports']:3} report(s) in {len(group['threads'])} thread(s) [{group['family']}] "
              f"{group['line'][:140]}")
        print(f"     {group['threads'][0]}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `tools/survey.py | head`: no traceback, exit as a SIGPIPE'd tool would (kb.cli.main)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(128 + 13)
