"""Log triage: which cells a log shows, with the lines that show them (`kb match`).

The log is read as bytes in fixed-size chunks (bounded memory, any encoding, binary garbage
survives). An Aho-Corasick automaton over one anchor word per signature finds candidate lines;
only those are decoded, normalised (`kb.normalise`) and tested against the compiled signature
patterns (`kb.patterns`). The same rules are exported for the triage page, which runs the same
steps in the browser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import ahocorasick_rs

from kb import normalise, patterns

if TYPE_CHECKING:  # the check and the catalog load only when the cached rules cannot be used
    from kb.problems import Problem
    from kb.schema import Cell

CHUNK = 8 * 1024 * 1024
MAX_LINE = 1024 * 1024
# Longer lines are matched in windows around their anchor words: signatures are short, and
# normalising a megabyte-long line whole would cost time for nothing.
WINDOW = 2048
EXACT_WEIGHT = 1.0
SYMPTOM_WEIGHT = 0.3


@dataclass(frozen=True)
class Rule:
    entry: str
    signature: str
    kind: str
    source: str
    anchor: str
    weight: float
    url: str
    title: str
    words: tuple[str, ...] = ()  # every stable word of the literal parts: a cheap test before the regex

    @property
    def regex(self) -> re.Pattern:
        return patterns.regex(self.source)


def rules(cells: list[Cell]) -> list[Rule]:
    """One rule per signature, in a fixed order (cell id, then signature order)."""
    from kb.catalog import Site

    site = Site(cells)
    out = []
    for cell in site.cells:
        for signature in cell.entry.signatures:
            compiled = patterns.compile_signature(signature.text, signature.match)
            symptom = signature.kind == "symptom"
            source = patterns.search_source(compiled, signature.kind)
            weight = SYMPTOM_WEIGHT if symptom else EXACT_WEIGHT + round(len(signature.text) / 1000, 3)
            out.append(Rule(cell.id, signature.text, signature.kind, source, compiled.anchor, weight,
                            site.url(cell), cell.entry.title, compiled.words))
    return out


MATCH_MODULES = ["match", "patterns", "normalise", "catalog", "slug", "facets"]


def load_rules(entries: Path) -> tuple[list[Rule], list["Problem"]]:
    """The rules of an entries folder, or the problems that stop them. From the cache (kb.cache)
    when every entry's bytes are those a clean check once compiled rules from, so a warm start
    reads the entry files and one cache file, and imports neither pydantic nor the check."""
    import datetime as dt

    from kb.cache import CHECK_MODULES, CHECK_PACKAGES, code_fingerprint, fingerprint, for_folders
    from kb.load import read

    cache = for_folders("match", [entries])
    key = None
    try:
        names = sorted(entries.iterdir()) if cache is not None else None
    except OSError:
        names = None
    if names is not None and all(p.suffix == ".yaml" or p.name.startswith(".") for p in names):
        parts: list[str | bytes] = [code_fingerprint(CHECK_MODULES + MATCH_MODULES, CHECK_PACKAGES),
                                    dt.date.today().isoformat()]
        for path in names:
            if path.name.startswith("."):
                continue
            raw = read(path)
            if not isinstance(raw, bytes):
                break
            parts += [path.name, raw]
        else:
            key = fingerprint(*parts)
            hit = cache.get(key)
            if hit is not None:
                return hit, []
    from kb import lint

    result = lint.cached_check([entries])
    if result.problems:
        return [], result.problems
    rule_list = rules(result.cells)
    if key is not None and cache is not None:
        cache.put(key, rule_list)
        cache.save()
    return rule_list, []


@dataclass
class Hit:
    entry: str
    url: str
    title: str
    score: float = 0.0
    lines: list[int] = field(default_factory=list)
    texts: dict[int, str] = field(default_factory=dict)
    signatures: dict[str, float] = field(default_factory=dict)

    @property
    def signature(self) -> str:
        """The matched signature that weighs most (the first listed among equals)."""
        return max(self.signatures.items(), key=lambda kv: kv[1])[0]

    def as_json(self) -> dict:
        return {"entry": self.entry, "score": self.score, "lines": self.lines, "signature": self.signature,
                "url": self.url}


class Matcher:
    def __init__(self, rule_list: list[Rule]):
        self.rules = rule_list
        anchors = sorted({r.anchor for r in rule_list if r.anchor})
        self._anchor_rules = {a: [r for r in rule_list if r.anchor == a] for a in anchors}
        self._anchors = anchors
        self._automaton = ahocorasick_rs.BytesAhoCorasick([a.encode() for a in anchors]) if anchors else None

    def match_line(self, line: str) -> list[Rule]:
        """The rules one line satisfies (used by tests and by `scan`)."""
        lower = line.lower()
        candidates = [r for a, rs in self._anchor_rules.items() if a in lower for r in rs]
        return self._confirm(line, candidates)

    def _confirm(self, line: str, candidates: list[Rule]) -> list[Rule]:
        lower = line.lower()
        candidates = [r for r in candidates if all(w in lower for w in r.words)]
        if not candidates:
            return []
        if len(line) <= 2 * WINDOW:
            texts = [normalise.normalise(line)]
        else:
            starts = sorted({lower.find(r.anchor) for r in candidates} - {-1})
            texts = [normalise.normalise(line[max(0, p - WINDOW): p + WINDOW]) for p in starts]
        return [r for r in candidates if any(r.regex.search(text) for text in texts)]

    def scan(self, stream: BinaryIO) -> list[Hit]:
        hits: dict[str, Hit] = {}
        line_base = 1  # number of the first line in `buffer`
        carry = b""
        while True:
            chunk = stream.read(CHUNK)
            done = not chunk
            buffer = carry + chunk
            del chunk  # keep one copy of the chunk alive, not two
            if not buffer:
                break
            cut = len(buffer) if done else buffer.rfind(b"\n") + 1
            if cut == 0:
                if len(buffer) < MAX_LINE:
                    carry = buffer
                    continue
                cut = len(buffer)  # a line longer than MAX_LINE: look at it in pieces
            self._scan_region(buffer, cut, line_base, hits)
            line_base += buffer.count(b"\n", 0, cut)
            carry = buffer[cut:]
            if done:
                break
        return sorted(hits.values(), key=lambda h: (-h.score, h.entry))

    def _scan_region(self, region: bytes, cut: int, line_base: int, hits: dict[str, Hit]) -> None:
        """Match the lines in region[:cut] (whole lines), the first numbered `line_base`."""
        if self._automaton is None:
            return
        by_line: dict[int, set[str]] = {}
        lower = memoryview(region.lower())[:cut]
        # The line of each anchor found: matches come in order, so each line's bounds are looked
        # up once, not once per match (a long line full of anchors would cost its length squared).
        line_start, line_end = 0, -1
        for index, start, _ in self._automaton.find_matches_as_indexes(lower, overlapping=True):
            if not line_start <= start < line_end:
                line_start = region.rfind(b"\n", 0, start) + 1
                newline = region.find(b"\n", start, cut)
                line_end = newline if newline != -1 else cut
            by_line.setdefault(line_start, set()).add(self._anchors[index])
        counted_to, number = 0, line_base
        for line_start in sorted(by_line):
            number += region.count(b"\n", counted_to, line_start)
            counted_to = line_start
            end = region.find(b"\n", line_start, cut)
            raw = region[line_start: end if end != -1 else cut]
            line = raw.decode("utf-8", errors="replace").rstrip("\r")
            candidates = [r for a in sorted(by_line[line_start]) for r in self._anchor_rules[a]]
            for rule in self._confirm(line, candidates):
                hit = hits.setdefault(rule.entry, Hit(rule.entry, rule.url, rule.title))
                if rule.signature not in hit.signatures:
                    hit.signatures[rule.signature] = rule.weight
                    hit.score = round(hit.score + rule.weight, 3)
                if number not in hit.texts:
                    hit.lines.append(number)
                    hit.texts[number] = line


def export(rule_list: list[Rule]) -> dict:
    """Everything the triage page needs to match exactly as `kb match` does."""
    return {
        "version": 1,
        "window": WINDOW,
        "passes": normalise.MAX_PASSES,
        "normalise": normalise.export(),
        "rules": [{"entry": r.entry, "signature": r.signature, "kind": r.kind, "source": r.source,
                   "anchor": r.anchor, "words": list(r.words), "weight": r.weight, "url": r.url, "title": r.title}
                  for r in rule_list],
    }
