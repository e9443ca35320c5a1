"""The rules of log triage: one per signature, compiled from the checked cells (`kb match`).

A rule (`SignatureRule`) shows in a line when its anchor word is in the line, each of its
`words` too, and its pattern (`kb.records.patterns`) matches the line normalised
(`kb.records.normalise`). `rules` compiles them from the cells, `load_rules` from an entries
folder (through the check, or from the cache when the entry files are unchanged), and `_options`
names the words a block scan may look for each rule by. The scanner (kb.triage.match) takes
the rules on; `export` hands them, with the sizes the scanner reads, to the triage page, which
applies the same tests to every line in the browser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kb.records import normalise, patterns, verdict
from kb.triage import logfacts, wrapped

if TYPE_CHECKING:  # the check and the catalog load only when the cached rules cannot be used
    from kb.records.problems import Problem
    from kb.records.schema import Cell

EXACT_WEIGHT = 1.0
SYMPTOM_WEIGHT = 0.3


@dataclass(frozen=True)
class SignatureRule:
    """What `kb match` looks for: one signature of one entry, compiled."""

    entry: str
    signature: str
    kind: str
    source: str
    anchor: str
    weight: float
    url: str
    title: str
    words: tuple[str, ...] = ()  # every stable word of the literal parts: a cheap test before the regex
    generic: bool = False  # the signature is marked generic: other GPUs print it too
    edges: tuple[str, ...] = ()  # its first and last words in the literal (kb.triage.wrapped rule 3)
    # Capabilities its literal fixes (kb.triage.logfacts.own_capabilities): on its lines, not the GPU's.
    own: tuple[str, ...] = ()
    # The cell's kb.records.verdict.scope (architectures, ranges): what its verdict needs.
    scope: dict | None = field(default=None, hash=False, compare=False)

    @property
    def regex(self) -> re.Pattern:
        return patterns.regex(self.source)


def rules(cells: list[Cell], cache=None) -> list[SignatureRule]:
    """One rule per signature, in a fixed order (cell id, then signature order). `cache`
    (kb.cache) keeps each cell's rules, made again only when what they hold changed."""
    from kb.cache import code_fingerprint, fingerprint
    from kb.records.catalog import Site

    site = Site(cells)
    code = code_fingerprint() if cache is not None else ""
    out = []
    for cell in site.cells:
        def make(cell=cell) -> list[SignatureRule]:
            made = []
            seen = set()
            for signature in cell.entry.signatures:
                # Capability numbers vary within the cell's architectures (kb.records.patterns.widen):
                # two signatures that then say the same are one rule (the first), not twice the score.
                compiled = patterns.compile_signature(signature.text, signature.match, cell.entry.hardware.architectures)
                symptom = signature.kind == "symptom"
                source = patterns.search_source(compiled, signature.kind)
                if source in seen:
                    continue
                seen.add(source)
                weight = SYMPTOM_WEIGHT if symptom else EXACT_WEIGHT + round(len(signature.text) / 1000, 3)
                literals = ([v for k, v in patterns.parse(signature.match) if k == "text"] if signature.match is not None
                            else [signature.text])
                own = logfacts.own_capabilities(literals, patterns.family(cell.entry.hardware.architectures))
                made.append(SignatureRule(cell.id, signature.text, signature.kind, source, compiled.anchor, weight,
                                          site.url(cell), cell.entry.title, compiled.words, signature.generic,
                                          scope=verdict.scope(cell.entry), edges=compiled.edges, own=own))
            return made
        if cache is None:
            out += make()
        else:
            out += cache.fetch(fingerprint("cell rules", code, cell.id, site.url(cell), cell.entry.title,
                                           repr([(s.text, s.match, s.kind, s.generic) for s in cell.entry.signatures]),
                                           repr(verdict.scope(cell.entry))), make)
    return out


def load_rules(entries: Path) -> tuple[list[SignatureRule], list["Problem"]]:
    """The rules of an entries folder, or the problems that stop them. From the cache (kb.cache)
    when the entry files are as they were (`entries_state`) when a clean check once compiled rules
    from them, so a warm start reads one cache file and no entry file, and imports neither
    pydantic nor the check."""
    from kb.cache import rules_cache

    cache, key = rules_cache("match", entries)
    if cache is not None and key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit, []
    from kb.records import lint

    result = lint.cached_check([entries])
    if result.problems:
        return [], result.problems
    rule_list = rules(result.cells)
    if key is not None and cache is not None:
        cache.put(key, rule_list)
        cache.save()
    return rule_list, []


def scopes(rule_list: list[SignatureRule]) -> dict[str, dict]:
    """Cell id -> its kb.records.verdict.scope, from the rules."""
    return {r.entry: r.scope for r in rule_list if r.scope is not None}


def _rarity(word: str) -> tuple[bool, int, str]:
    """Code identifiers (with `_` or a digit) first, then longer words, as kb.records.patterns picks anchors."""
    return (any(c == "_" or c.isdigit() for c in word), len(word), word)


OPTIONS = 3  # words a block scan may look for a rule by: a wrapped line must hold each whole


def _options(rule: SignatureRule) -> tuple[str, ...]:
    """The words a block scan may look for to find the lines of `rule`: its anchor first, then up
    to OPTIONS - 1 of its other words long enough to be rare, code identifiers and long words
    first. Every line the rule matches holds each of them (`words`), so any one of them finds all
    its lines; lines a message is wrapped over hold each of them whole (kb.triage.wrapped)."""
    rest = sorted((w for w in rule.words if w != rule.anchor and len(w) >= patterns.MIN_ANCHOR
                   and not w.isdigit()), key=_rarity, reverse=True)
    return (rule.anchor, *rest[:OPTIONS - 1])


def rule_json(r: SignatureRule) -> dict:
    """One rule as the triage page reads it (kb-match.js)."""
    return {"entry": r.entry, "signature": r.signature, "kind": r.kind, "source": r.source,
            "anchor": r.anchor, "words": list(r.words), "options": list(_options(r)) if r.anchor else [],
            "edges": list(r.edges), "own": list(r.own),
            "weight": r.weight, "url": r.url, "title": r.title, "generic": r.generic}


def export(rule_list: list[SignatureRule]) -> dict:
    """Everything the triage page needs to match exactly as `kb match` does."""
    from kb.triage import match  # the scanner's sizes; it imports the rules, so not at the top

    return {
        "version": 1,
        "window": match.WINDOW,
        "facts_bytes": match.FACTS_BYTES,
        "passes": normalise.MAX_PASSES,
        "normalise": normalise.export(),
        "wrapped": wrapped.export(),
        "logfacts": logfacts.export(),
        "rules": [rule_json(r) for r in rule_list],
        "cells": dict(sorted(scopes(rule_list).items())),
        "verdicts": verdict.MATCH_TITLES,
        "verdict": verdict.export(),
    }
