"""One log triaged against the catalog, as `kb match` does it: the signatures (kb.triage.match),
then the identifiers seen together (kb.triage.evidence), then what the log says of its machine
deciding each hit's verdict, and, when nothing matched, the request for a new entry
(kb.triage.request). Hands back the hits, ranked, and their citable ids; the command prints them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kb.records import verdict
from kb.records.problems import Problem
from kb.triage import evidence, familyanswer, match
from kb.triage.rules import load_rules, scopes
from kb.triage.request import Issue, from_stream


@dataclass
class Triage:
    problems: list[Problem] = field(default_factory=list)  # the entries': nothing was matched
    hits: list[match.Hit] = field(default_factory=list)
    request: Issue | None = None  # the new-entry request, when nothing matched and one was asked for
    citable: dict[str, str] = field(default_factory=dict)  # entry id -> citable id, for the hits
    # The family answer (kb.triage.familyanswer.wanted): alone when no entry hit; first, with the
    # hits below it as entries that also print its lines, when every hit rests on generic lines only.
    families: list[familyanswer.FamilyHit] = field(default_factory=list)
    # What the reader is told beside the hits (the triage page says the same, kb-triage.js): that
    # the log's GPU is outside the index (verdict.out_of_scope), and that a version would decide
    # (verdict.undecided_versions, the hint to add `pip list`).
    scope: str | None = None
    pip_hint: str | None = None

    @property
    def families_first(self) -> bool:
        """Whether the family answer comes above the hits, which then also print its lines."""
        return bool(self.hits and self.families)


def triage(entries: Path, log: BinaryIO, request: bool = True) -> Triage:
    """The hits of the entries of `entries` in `log` (a binary stream that can seek: it is read
    once per pass); with `request`, the new-entry request when none hits. OSError from the log."""
    rules, problems = load_rules(entries)
    if problems:
        return Triage(problems=problems)
    hits = match.Matcher(rules).scan(log)
    evidence_rules = evidence.load_rules(entries)
    if evidence_rules:  # identifiers seen together: logs that print no error line (kb.triage.evidence)
        log.seek(0)
        hits = evidence.merge(hits, *evidence.scan(evidence_rules, log))
    # What the log says of its machine decides each entry's verdict (kb.records.verdict), and
    # whether its GPU is one the index covers at all.
    log.seek(0)
    facts = match.read_facts(log)
    cells = scopes(rules)
    if hits:
        hits, facts = match.decide(hits, cells, facts)  # facts less the matched literals' own GPUs
    new, families = None, []
    if familyanswer.wanted(hits, cells, facts):
        log.seek(0)
        families = familyanswer.of_lines(familyanswer.from_stream(entries, log), hits)
    if not hits and request:
        log.seek(0)
        new = from_stream(log)  # bounded lines: a huge line is never read whole
    return Triage(hits=hits, request=new, citable=citable(entries, hits), families=families,
                  scope=verdict.out_of_scope(facts.get("gpus")),
                  pip_hint=verdict.undecided_versions([(hit.verdict, cells[hit.entry]) for hit in hits], facts))


def patterns(signature_rules: list, evidence_rules: list, families: tuple[dict, list]) -> dict:
    """What the triage page needs to match as `triage` does (triage/patterns.json, less the build's
    per-entry words): the signature rules, the new-failure request's rules, the evidence rules and
    the family answer's rules and words (`families`: kb.triage.familyanswer.load's)."""
    from kb.triage import request, rules

    return rules.export(signature_rules) | {"request": request.export(), "evidence": evidence.export(evidence_rules),
                                            "families": familyanswer.export(*families)}


def citable(entries: Path, hits) -> dict[str, str]:
    """entry id -> citable id (kb.records.ids) of the entries `hits` name: the lock's; an entry the
    lock lacks (another folder's, or a new one before `kb lock`) gets the number the lock would give
    it, which takes checking the entries."""
    from kb.records import ids

    numbers = ids.for_entries(entries)
    if all(hit.entry in numbers for hit in hits):
        return numbers
    from kb.records import lint

    return ids.for_entries(entries, lint.cached_check([entries]).cells)
