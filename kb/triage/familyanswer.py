"""The family answer (issue 35 item 2): the families whose generic lines a log shows
(kb.records.families), each with how to tell, the check and the general fix.

When it is given (`wanted`, `of_lines`): never for a log whose GPUs are all outside sm_120/sm_121
(the families are about those); for a log no entry matches, alone; and, first, for a log whose
every entry match rests only on generic lines (lines other GPUs and other causes print too, as
"no kernel image is available") with nothing that proves one of them (no decisive line, no
version in its range: kb.records.verdict.proven): a generic line says which mechanism failed, not
which build, so the entries it matches follow as "also prints this line". A log with a
non-generic entry match, or one a version decides, gets its entries and no family answer, as
before. kb-match.js (kbMatch.placed) gives the same on the triage page. Lines are tested one by one
(kb.triage.match.Matcher.match_line: anchor, words, pattern on the normalised line), as the
triage page's twin (kbMatch.families in kb-match.js) does; a family's lines are its generic
ones, printed whole on one line. `rules` compiles the families' patterns and `answers` takes what
the answer shows of each; `load` keeps both in the cache (kb.cache), keyed on the code and the
family files, so a log no entry matches costs no import of the records' model (pydantic);
`export` hands both to the triage page (triage/patterns.json, through kb.triage.run.patterns).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

from kb.records.gpus import SCOPE
from kb.triage.match import MAX_LINE

SHOWN_LINES = 5
# How `kb match --json` marks an entry listed below a family answer that comes first: it matched
# only generic lines, which it also prints (the triage page says it in words).
ALSO = "also-prints-this-line"
# Families are about sm_120 and sm_121 (the index's scope): a capability number in a pattern
# stands for either (kb.records.patterns.widen), and so does a capability placeholder
# (`sm_{int}`: patterns' `only`), never for sm_100 or sm_90.
SM12X = SCOPE


@dataclass(frozen=True)
class Answer:
    """What the family answer shows of one family, taken from its record."""

    family: str
    title: str
    url: str
    how_to_tell: str
    check: str
    fix: str


@dataclass(frozen=True)
class FamilyHit(Answer):
    """A family the log shows: its answer, the lines that show it (filled as the log is read) and
    the rule that matched first."""

    lines: list[int] = field(default_factory=list)
    texts: dict[int, str] = field(default_factory=dict)
    signature: str = ""

    def as_json(self) -> dict:
        return {"answer": "family", "entry": None, "family": self.family, "title": self.title, "url": self.url,
                "lines": self.lines[:SHOWN_LINES], "signature": self.signature, "check": self.check, "fix": self.fix}


def answers(records) -> dict[str, Answer]:
    """Family id -> what its answer shows, for kb.records.families.FamilyRecord `records`."""
    return {r.id: Answer(r.id, r.family.title, r.url, r.family.how_to_tell, r.family.checks[0].command, r.family.fix)
            for r in sorted(records, key=lambda r: r.id)}


def rules(records) -> list:
    """One kb.triage.rules.SignatureRule per pattern, in id then pattern order; `entry` holds the
    family id, `url` its page."""
    from kb.records import patterns
    from kb.triage.rules import EXACT_WEIGHT, SignatureRule

    out = []
    for record in sorted(records, key=lambda r: r.id):
        seen = set()
        for pattern in record.family.patterns:
            compiled = patterns.compile_signature(pattern.text, pattern.match, SM12X, only=SM12X)
            if compiled.source in seen:  # two literals of one form: one rule, as for entries
                continue
            seen.add(compiled.source)
            out.append(SignatureRule(record.id, pattern.text, "log-line", patterns.search_source(compiled, "log-line"),
                                     compiled.anchor, EXACT_WEIGHT, record.url, record.family.title,
                                     compiled.words, True, edges=compiled.edges))
    return out


def load(entries: Path) -> tuple[dict[str, Answer], list]:
    """The answers and rules of the families of an entries folder (({}, []) when a record has a
    problem: `kb check` reports it). From the cache when the family files and the code are as
    they were when they were last compiled (kb.cache.rules_cache, on the families folder)."""
    from kb.cache import rules_cache
    from kb.records.familyfolder import folder_for

    folder = folder_for(entries)
    cache, key = rules_cache("families", folder)
    if cache is not None and key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    from kb.records import families

    records, problems = families.load_families(folder)
    if problems:
        return {}, []
    made = (answers(records), rules(records))
    if cache is not None and key is not None:
        cache.put(key, made)
        cache.save()
    return made


def answer(found: dict[str, Answer], rule_list: list, lines) -> list[FamilyHit]:
    """The families whose patterns `lines` (an iterable of decoded lines) show, in the order of
    their first line, then id; each with the lines that show it and, as its signature, the first
    of its rules (in `rule_list` order) that its first line satisfies."""
    from kb.triage.match import Matcher

    if not rule_list:
        return []
    matcher = Matcher(rule_list)
    order = {rule: n for n, rule in enumerate(rule_list)}
    hits: dict[str, FamilyHit] = {}
    for number, line in enumerate(lines, 1):
        for rule in sorted(matcher.match_line(line), key=order.__getitem__):
            hit = hits.get(rule.entry)
            if hit is None:
                hit = hits[rule.entry] = FamilyHit(**asdict(found[rule.entry]), signature=rule.signature)
            if number not in hit.texts:
                hit.lines.append(number)
                hit.texts[number] = line
    return sorted(hits.values(), key=lambda h: (h.lines[0], h.family))


def wanted(hits, cells: dict[str, dict], facts: dict) -> bool:
    """Whether a log gets a family answer beside `hits` (kb.triage.match.Hit, decided): not when
    every GPU the log shows (`facts`, kb.triage.match.read_facts) is outside sm_120/sm_121
    (kb.records.verdict.out_of_scope); else when no hit rests on a line not marked generic
    (`specific`) and none that is not ruled out is proven by the log (verdict.proven: a decisive
    line, a version in its affected range). `cells`: entry id -> kb.records.verdict.scope."""
    from kb.records import verdict

    if verdict.out_of_scope(facts.get("gpus")) is not None:
        return False
    return all(not hit.specific and (hit.verdict == "ruled-out" or
                                     not verdict.proven(cells[hit.entry], facts, list(hit.signatures)))
               for hit in hits)


def of_lines(families: list[FamilyHit], hits) -> list[FamilyHit]:
    """Of the family answer `families`, what a log with `hits` shows: all of it when no entry
    matched, else the families that show on a line one of the hits matched (the family answer
    for those lines; its order kept)."""
    if not hits:
        return families
    matched = {number for hit in hits for number in hit.lines}
    return [family for family in families if matched.intersection(family.lines)]


def from_stream(entries: Path, log: BinaryIO) -> list[FamilyHit]:
    """The family answer for the log in `log` (read from its start)."""
    found, rule_list = load(entries)
    return answer(found, rule_list, _lines(log)) if rule_list else []


def export(found: dict[str, Answer], rule_list: list) -> dict:
    """What the triage page needs for the family answer: the rules (as kb.triage.rules.export
    writes the entries'), by family id what its answer shows, and how an entry below a family
    answer that comes first is marked (ALSO)."""
    from kb.triage.rules import rule_json

    return {"rules": [rule_json(r) for r in rule_list], "also": ALSO,
            "answers": {k: {n: v for n, v in asdict(a).items() if n != "family"} for k, a in sorted(found.items())}}


def _lines(log: BinaryIO):
    """The log's lines, decoded; of a line longer than MAX_LINE bytes its first MAX_LINE only (the
    rest is read past unkept), so no line is ever held whole."""
    while raw := log.readline(MAX_LINE):
        head = raw
        while not raw.endswith(b"\n") and (raw := log.readline(MAX_LINE)):
            pass
        yield head.decode("utf-8", errors="replace").rstrip("\r\n")
