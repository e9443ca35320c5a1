"""Stage 3, lint, the prose checks: what one record's words say to a reader.

Per file, on its loaded data (kb.records.lint's per-file pipeline): TODO markers left by `kb new`
(KB046) and the index's own words in the prose a page shows (KB082, `prose_field`). Per cell,
called by the cross-record checks (kb.records.crosscheck) on validated cells: a first signature
that reads as a healthy run's INFO line (KB063), a missing Cause line or one too long, naming code
or repeating the summary (KB080), a workaround that does not say what it costs (KB095), and an
entry that gives no version range and does not say why (KB096). Each hands on a list of Problems.
"""

from __future__ import annotations

import re

from kb.records import cause, confusables
from kb.records.load import Loaded, dotted
from kb.records.problems import Problem
from kb.records.schema import Cell


# KB063: a first signature of kind log-line that reads as INFO- or WARNING-level, a line a healthy
# run prints too. It names a level (INFO, DEBUG, WARNING; a glog I/W prefix) or reports progress
# (registered, loaded, using, ...), and says nothing went wrong: no word of failure.
_LEVEL = re.compile(r"\b(?:INFO|DEBUG|TRACE|NOTICE|WARN|WARNING)\b|^[IWD]\d{4} |\b(?:Info|Warning|Debug):")
_PROGRESS = re.compile(r"\b(?:register(?:ed|ing)|load(?:ed|ing)|using|start(?:ed|ing)|initiali[sz](?:ed|ing)|"
                       r"compil(?:ed|ing)|detected|selected|enabled|skipp(?:ed|ing)|created|ready|done|"
                       r"finished|completed|launching)\b", re.I)
_FAILURE = re.compile(r"error|fail|fatal|abort|assert|exception|illegal|invalid|unsupported|not supported|"
                      r"not compatible|not found|not defined|not compiled|not available|no kernel|exceed|"
                      r"out of|cannot|can't|unable|mismatch|denied|timed out|timeout|panic|crash|"
                      r"segmentation|traceback|overflow|violation|refus|reject|unknown|missing|hang", re.I)


def reads_as_info(text: str) -> bool:
    """A log line that reads as INFO- or WARNING-level: a level or progress, and no word of failure."""
    return bool(_LEVEL.search(text) or _PROGRESS.search(text)) and not _FAILURE.search(text)


def _harmless_headline(cell: Cell) -> list[Problem]:
    """KB063: the first signature, the page's heading, is the failure, not a line healthy runs print."""
    first = cell.entry.signatures[0]
    if first.kind != "log-line" or not reads_as_info(first.text):
        return []
    loc = ("signatures", 0, "text")
    return [Problem(cell.path, cell.line_of(loc), dotted(loc),
                    "the first signature is the page's heading, and this log line reads as INFO or WARNING "
                    "level (healthy runs print it too): put the failure first (the exception, the error line, "
                    "or a symptom that says what goes wrong) and keep this line after it", "KB063", first.text)]


def _cause_line(cell: Cell) -> list[Problem]:
    """KB080: every entry gives a `cause:`, the card's Cause line (`kb.records.cause`): why it
    happens, in plain words and one short line: at most MAX_WORDS words, no file path or function
    name, and not a repeat of the summary's first sentence (the symptom): less than MAX_OVERLAP of
    its words are that sentence's words."""
    e = cell.entry
    if not e.cause:
        return [Problem(cell.path, cell.line_of(("mechanism",)), "cause",
                        "the entry gives no `cause:`, so the card shows the mechanism's first sentence: add "
                        f"`cause:`, one plain sentence of at most {cause.MAX_WORDS} words that names the mechanism "
                        "(why it happens), taken from the mechanism, with no file paths or function names",
                        "KB080", cause.derived(e))]
    line, loc, fix = e.cause, ("cause",), "shorten it"
    where = "cause"
    problems = []
    count = len(cause.words(line))
    if count > cause.MAX_WORDS:
        problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                f"{where} is {count} words long, more than the card's {cause.MAX_WORDS}: {fix}",
                                "KB080", line))
    if len(line) > cause.MAX_CHARS:
        problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                f"{where} is {len(line)} characters long, more than the card's {cause.MAX_CHARS}: "
                                f"{fix}", "KB080", line))
    code = cause.code_names(line)
    if code:
        problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                f"{where} names code a reader of the card need not know ({', '.join(map(repr, code))}): "
                                "say what it does in plain words; the mechanism below keeps the names", "KB080", line))
    share = cause.overlap(line, e.summary)
    if share >= cause.MAX_OVERLAP:
        problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                f"{where} repeats the summary's first sentence ({share:.0%} of its words are that "
                                f"sentence's, at most {cause.MAX_OVERLAP:.0%} may be): say why it happens, not how "
                                f"it shows", "KB080", line))
    return problems


def _workaround_costs(cell: Cell) -> list[Problem]:
    """KB095: every workaround says what it costs the reader (memory, speed, a feature given up), as
    its source says, or says in words that the source does not tell."""
    return [Problem(cell.path, cell.line_of(("workarounds", i)), f"workarounds[{i}].cost",
                    "the workaround does not say what it costs: add `cost:`, what the reader gives up (memory, "
                    "speed, a feature) as its source says it, or 'The source gives no cost.' and what it turns off",
                    "KB095", w.what)
            for i, w in enumerate(cell.entry.workarounds) if not w.cost]


# KB096: the words that say why a cell gives no version range ("No range: nobody read the tags"),
# anywhere in a component's note, in any letter case.
NO_RANGE = re.compile(r"\bno (affected )?range\b", re.IGNORECASE)


def _range_or_reason(cell: Cell) -> list[Problem]:
    """KB096: the entry answers "am I affected?": some component gives a version range (affected,
    fixed_in or seen_failing), or a component's note says in words why none is given, so a reader
    who gets no verdict learns whether nobody knows or nobody checked."""
    components = cell.entry.components
    if any(p.affected or p.fixed_in or p.seen_failing for p in components) or \
            any(p.note and NO_RANGE.search(p.note) for p in components):
        return []
    # A scanned component is asked for its range by the scan's rules (KB093 to record it, then
    # KB094, which names the range the wheels prove): one fault, one message.
    if {s.package for s in cell.entry.scans} & {p.package for p in components}:
        return []
    return [Problem(cell.path, cell.line_of(("components",)), "components",
                    "no component gives a version range and none says why, so a reader gets no verdict and no "
                    "reason: add `affected:`/`seen_failing:` to the component whose versions were seen failing "
                    "(or `fixed_in:` where a release fixes it), or a note starting 'No range: <why>' (the "
                    "versions were not read, the source names none)", "KB096",
                    ", ".join(p.package for p in components))]


# KB046: `kb new` writes prose placeholders as TODO markers; literal signatures are exempt
# (they are copied as printed, and a real error line may say TODO).
TODO = re.compile(r"\bTODO\b")


def _strings(value, loc: tuple = ()):
    """Every string in a record, with its key path: (("claims", 0, "says"), "...")."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, loc + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, loc + (i,))
    elif isinstance(value, str):
        yield loc, value


def _todo_markers(loaded: Loaded) -> list[Problem]:
    return [Problem(loaded.path, loaded.line_of(loc), dotted(loc),
                    "a TODO marker is left: write what goes here, or delete the optional field or block",
                    "KB046", value)
            for loc, value in _strings(loaded.data)
            if TODO.search(value) and not (len(loc) == 3 and loc[0] == "signatures" and loc[2] in ("text", "match"))]


# KB082: the index's own words never reach a reader. "cell" is what the code calls a record (on the
# matrix a reader sees a grid, whose squares are cells too), "seed" the unpublished report the
# first claims came from, and `fixed_in` or `claims[3].as_of` a field of the record format. The
# prose fields a page shows are checked; literal strings copied from
# upstream (signature texts and patterns, evidence terms, link titles, flags) are not, nor are
# ids, links, versions and the `source: seed` marker. The research trail's own words are refused
# too (UX review 2026-12-05, S2-8): "snapshot" and "over the fetch limit" describe how this index
# read a repository, "tag check" how it dated a fix, "the next signature" the record's list; a
# reader needs the fact in plain words (the repository, the release tags, the line listed next).
INTERNAL_WORD = re.compile(r"\b(cells?|seed|snapshots?|fetch(?:\s+size)?\s+limit|tag\s+checks?|next\s+signatures?)\b", re.I)
# A record's field names and paths (`fixed_in`, `claims[3].as_of`) are the format's, not a reader's.
FIELD_WORD = re.compile(r"\b(as_of|fixed_in|fixed_by|fixed_commit)\b|\b[a-z_]+\[\d+\]\.[a-z_]+\b")
_PROSE_FIELDS = {
    ("title",), ("summary",), ("cause",), ("mechanism",), ("signatures", "*", "note"), ("evidence", "*", "note"),
    ("hardware", "gpus", "*"), ("components", "*", "note"),
    ("measurements", "*", "quantity"), ("measurements", "*", "unit"), ("measurements", "*", "note"),
    ("measurements", "*", "conditions", "hardware"), ("measurements", "*", "series", "x"),
    ("measurements", "*", "series", "x_unit"), ("measurements", "*", "series", "rows", "*", "x"),
    ("measurements", "*", "series", "rows", "*", "label"), ("measurements", "*", "series", "limit", "label"),
    ("fixes", "*", "what"), ("fixes", "*", "note"), ("workarounds", "*", "what"), ("workarounds", "*", "note"),
    ("claims", "*", "says"), ("related", "*", "note"), ("status", "reason"),
}
_INSTEAD = {"cell": "'entry' (the page) or 'failure' (what it describes)",
            "cells": "'entries' or 'failures'",
            "seed": "'an unpublished report' (a claim's `source: seed` is shown that way)",
            "snapshot": "what was read: 'the repository', 'a copy of the repository', 'main at <commit>'",
            "snapshots": "'copies of the repository'",
            "fetch limit": "'too large to download here'",
            "fetch size limit": "'too large to download here'",
            "tag check": "'the release tags read on <date>'",
            "tag checks": "'the release tags read on <date>'",
            "next signature": "'the line listed next'",
            "next signatures": "'the lines listed next'"}


def prose_field(loc: tuple) -> bool:
    """Whether the value at `loc` is prose a page shows (KB082 reads it), not a literal or a key."""
    return tuple("*" if isinstance(part, int) else part for part in loc) in _PROSE_FIELDS


def _internal_words(loaded: Loaded) -> list[Problem]:
    """KB082: a reader-visible prose field says 'cell', 'cells', 'seed', a research-trail word ('snapshot',
    'fetch limit', 'tag check', 'next signature') or a record's field name or path."""
    problems: list[Problem] = []
    for loc, value in _strings(loaded.data):
        if not prose_field(loc):
            continue
        value = confusables.fold(value)  # `сell` with a Cyrillic с is 'cell' to a reader (attack review)
        for m in sorted([*INTERNAL_WORD.finditer(value), *FIELD_WORD.finditer(value)], key=lambda m: m.start()):
            word = " ".join(m.group().lower().split())
            instead = _INSTEAD.get(word, "what it means (the first fixed release, the fix pull request, the "
                                         "day it was read)")
            around = " ".join(value[max(0, m.start() - 25):m.end() + 25].split())
            problems.append(Problem(loaded.path, loaded.line_of(loc), dotted(loc),
                                    f"says '{m.group()}', a word of the index's own, not a reader's: "
                                    f"write {instead}", "KB082", around))
    return problems
