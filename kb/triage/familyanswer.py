"""The family answer (issue 35 item 2): when no entry matches a log, the families whose generic
lines it shows (kb.records.families), each with how to tell, the check and the general fix.

It is a fallback and ranks below every entry: a log an entry matches gets the entry (whose page
names its family) and no family answer, so its answer is unchanged. Lines are tested one by one
(kb.triage.match.Matcher.match_line: anchor, words, pattern on the normalised line), as the
triage page's twin (kbMatch.families in kb-match.js) does; a family's lines are its generic
ones, printed whole on one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kb.records import patterns
from kb.triage.match import MAX_LINE
from kb.triage.rules import EXACT_WEIGHT, SignatureRule

SHOWN_LINES = 5


@dataclass
class FamilyHit:
    family: str
    title: str
    url: str
    how_to_tell: str
    check: str
    fix: str
    lines: list[int] = field(default_factory=list)
    texts: dict[int, str] = field(default_factory=dict)
    signature: str = ""

    def as_json(self) -> dict:
        return {"answer": "family", "entry": None, "family": self.family, "title": self.title, "url": self.url,
                "lines": self.lines[:SHOWN_LINES], "signature": self.signature, "check": self.check, "fix": self.fix}


def load(entries: Path):
    """The families of an entries folder and their rules ([] when a record has a problem: `kb
    check` reports it)."""
    from kb.records import families

    records, problems = families.load_families(families.folder_for(entries))
    if problems:
        return [], []
    return records, family_rules(records)


def answer(records, rules, lines) -> list[FamilyHit]:
    """The families whose patterns `lines` (an iterable of decoded lines) show, in the order of
    their first line, then id; each with the lines that show it."""
    from kb.triage.match import Matcher

    if not rules:
        return []
    matcher = Matcher(rules)
    by_id = {r.id: r for r in records}
    hits: dict[str, FamilyHit] = {}
    for number, line in enumerate(lines, 1):
        for rule in matcher.match_line(line):
            family = by_id[rule.entry].family
            hit = hits.get(rule.entry)
            if hit is None:
                hit = hits[rule.entry] = FamilyHit(rule.entry, family.title, rule.url, family.how_to_tell,
                                                   family.checks[0].command, family.fix, signature=rule.signature)
            if number not in hit.texts:
                hit.lines.append(number)
                hit.texts[number] = line
    return sorted(hits.values(), key=lambda h: (h.lines[0], h.family))


def from_stream(entries: Path, log: BinaryIO) -> list[FamilyHit]:
    """The family answer for the log in `log` (read from its start)."""
    records, rules = load(entries)
    return answer(records, rules, _lines(log)) if rules else []


def _lines(log: BinaryIO):
    """The log's lines, decoded; of a line longer than MAX_LINE bytes its first MAX_LINE only (the
    rest is read past unkept), so no line is ever held whole."""
    while raw := log.readline(MAX_LINE):
        head = raw
        while not raw.endswith(b"\n") and (raw := log.readline(MAX_LINE)):
            pass
        yield head.decode("utf-8", errors="replace").rstrip("\r\n")


def family_rules(records: list):
    """One kb.triage.rules.SignatureRule per pattern, in id then pattern order; `entry` holds the
    family id, `url` its page."""
    from kb.records.families import SM12X  # pydantic: loaded only when no entry matched

    out = []
    for record in sorted(records, key=lambda r: r.id):
        seen = set()
        for pattern in record.family.patterns:
            # Families are about sm_120 and sm_121: a capability number in a pattern stands for
            # either (kb.records.patterns.widen), never for sm_100 or sm_90.
            compiled = patterns.compile_signature(pattern.text, pattern.match, SM12X)
            if compiled.source in seen:  # two literals of one form: one rule, as for entries
                continue
            seen.add(compiled.source)
            out.append(SignatureRule(record.id, pattern.text, "log-line", patterns.search_source(compiled, "log-line"),
                                     compiled.anchor, EXACT_WEIGHT, record.url, record.family.title,
                                     compiled.words, True, edges=compiled.edges))
    return out
