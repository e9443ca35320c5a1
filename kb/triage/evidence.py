"""Log triage by evidence: a cell shown by identifiers that appear together, not by an error line.

A benchmark table, an allocator snapshot or a py-spy dump prints no exception, but it names the
kernel source file, the function and a per-call size. A cell's `evidence` items (kb.records.schema) list
such terms (and numbers); an item shows in a log when, within some `window` consecutive lines,
every term is on a line as a whole identifier (case-sensitive; the characters around it are not
letters, digits or `_`) and every number's pattern (the placeholder grammar of kb.records.patterns, whole
words) matches a line normalised (kb.records.normalise).

Which window: the first line `e` of the log such that each term and number was last seen at or
after `e - window + 1`. The lines reported are those last sightings. The triage page
(kb-evidence.js) computes the same from the rules `export` writes into triage/patterns.json.

Weights (next to kb.triage.match's: a literal signature weighs 1 + len/1000, a symptom phrase 0.3): an
item weighs EVIDENCE_WEIGHT = 0.6, once per item, added to the cell's score. Two or more specific
identifiers together say more than one symptom phrase, less than the error line itself, so a log
that prints the error still ranks its literal cell first.

`scan` reads the log twice at most: terms are found with one case-sensitive automaton over the
bytes (line numbers counted as kb.triage.match counts them, one per b"\\n"); numbers, whose digits are
common, are tested only on lines near a window where every term of their item was found; a last
read collects the text of the reported lines. Pure: no rendering, no check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import ahocorasick_rs

from kb.records import normalise, patterns

if TYPE_CHECKING:
    from kb.records.schema import Cell

EVIDENCE_WEIGHT = 0.6
CHUNK = 8 * 1024 * 1024
MAX_LINE = 1024 * 1024  # numbers are tested on the first MAX_LINE bytes of a line
_NEWLINE = re.compile(b"\n")
_IDENT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True)
class EvidenceRule:
    """One evidence item of one entry: terms and numbers that, seen together in a window of lines, point at it."""

    entry: str
    index: int  # which evidence item of the cell
    terms: tuple[str, ...]
    numbers: tuple[str, ...]  # search sources over normalised lines (patterns.search_source)
    words: tuple[tuple[str, ...], ...]  # per number: the words each line it matches contains
    window: int
    label: str
    url: str
    title: str


def rules(cells: list[Cell]) -> list[EvidenceRule]:
    """One rule per evidence item, in a fixed order (cell id, then item order)."""
    from kb.records.catalog import Site

    site = Site(cells)
    out = []
    for cell in site.cells:
        for i, item in enumerate(cell.entry.evidence):
            compiled = [patterns.compile_signature(n, n) for n in item.numbers]
            out.append(EvidenceRule(cell.id, i, tuple(item.terms), tuple(patterns.search_source(c, "symptom") for c in compiled),
                                    tuple(c.words for c in compiled), item.window,
                                    "evidence: " + " + ".join([*item.terms, *item.numbers]), site.url(cell),
                                    cell.entry.title))
    return out


def load_rules(entries: Path) -> list[EvidenceRule]:
    """The evidence rules of an entries folder that `kb.triage.rules.load_rules` found clean. Cached as
    kb.triage.rules caches its rules (keyed by the code and the entry files' state), so a warm
    `kb match` still reads no entry file."""
    from kb.cache import rules_cache

    cache, key = rules_cache("evidence", entries)
    if cache is not None and key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    from kb.records import lint

    result = lint.cached_check([entries])
    rule_list = rules(result.cells)
    if key is not None and cache is not None and not result.problems:  # kept only when clean (kb.cache.rules_cache)
        cache.put(key, rule_list)
        cache.save()
    return rule_list


@dataclass
class Found:
    rule: EvidenceRule
    lines: list[int]  # sorted


def _windows(sightings: list[list[int]], window: int):
    """(e, last) for each line e holding an element at which every element's last sighting at or
    before e (`last`, one per element) is at or after e - window + 1; in order of e."""
    if not sightings or any(not s for s in sightings):
        return
    events = sorted({n for s in sightings for n in s})
    at = [0] * len(sightings)
    last = [0] * len(sightings)
    for e in events:
        for k, lines in enumerate(sightings):
            while at[k] < len(lines) and lines[at[k]] <= e:
                last[k] = lines[at[k]]
                at[k] += 1
        if min(last) >= max(1, e - window + 1):
            yield e, list(last)


def first_window(sightings: list[list[int]], window: int) -> list[int] | None:
    """The lines of the first window holding every element, given each element's sorted lines:
    at the first line e where each element's last sighting is at or after e - window + 1, those
    last sightings (sorted, distinct); None when there is no such line."""
    for _, last in _windows(sightings, window):
        return sorted(set(last))
    return None


def _bounded(data: bytes | bytearray, start: int, end: int) -> bool:
    """The term at data[start:end] is a whole identifier: no letter, digit or `_` runs on at its edges."""
    term_first, term_last = data[start], data[end - 1]
    if term_first in _IDENT and start > 0 and data[start - 1] in _IDENT:
        return False
    return not (term_last in _IDENT and end < len(data) and data[end] in _IDENT)


def _term_lines(stream: BinaryIO, terms: list[str]) -> dict[str, list[int]]:
    """The sorted lines on which each term appears, read CHUNK bytes at a time (whole lines)."""
    automaton = ahocorasick_rs.BytesAhoCorasick([t.encode() for t in terms])
    found: dict[str, list[int]] = {t: [] for t in terms}
    held = b""
    number = 1
    while True:
        data = stream.read(CHUNK)
        buffer = held + data
        if not buffer:
            break
        cut = len(buffer) if not data else buffer.rfind(b"\n") + 1
        if cut == 0:
            if len(buffer) < MAX_LINE:
                held = buffer
                continue
            cut = len(buffer)
        block, held = buffer[:cut], buffer[cut:]
        counted, line = 0, number
        for index, start, end in sorted(automaton.find_matches_as_indexes(block, overlapping=True),
                                        key=lambda m: m[1]):
            line += block.count(b"\n", counted, start)
            counted = start
            if _bounded(block, start, end):
                lines = found[terms[index]]
                if not lines or lines[-1] != line:
                    lines.append(line)
        number = line + block.count(b"\n", counted)
        if not data:
            break
    return found


BLOCK = 256 * 1024  # _lines looks for line ends only inside blocks of this size that hold a wanted line


def _lines(stream: BinaryIO, wanted: set[int]) -> dict[int, str]:
    """The text of the wanted lines (decoded, without the line end, cut at MAX_LINE bytes).

    Blocks without a wanted line are only counted (bytes.count); line ends are listed only in a
    block that holds one, so memory stays bounded by BLOCK whatever the log looks like."""
    out: dict[int, str] = {}
    targets = sorted(wanted)
    if not targets:
        return out
    stream.seek(0)
    k = 0
    number = 1  # the line the next byte read belongs to
    current: bytes | None = None  # the start of a wanted line that goes on past the block
    while k < len(targets):
        data = stream.read(CHUNK)
        if not data:
            break
        for offset in range(0, len(data), BLOCK):
            block = data[offset:offset + BLOCK]
            last = number + block.count(b"\n")  # the line of the block's final byte
            if targets[k] > last:
                number = last
                continue
            ends = [m.start() for m in _NEWLINE.finditer(block)]
            while k < len(targets) and targets[k] <= last:
                i = targets[k] - number
                begin = ends[i - 1] + 1 if i else 0
                if i < len(ends):
                    piece = block[begin:ends[i]]
                    out[targets[k]] = _text((current or b"") + piece)
                    current = None
                    k += 1
                else:  # the line goes on in the next block
                    current = ((current or b"") + block[begin:])[:MAX_LINE]
                    break
            number = last
            if k == len(targets):
                break
    if current and k < len(targets):  # the log's last line, without a line end (none after a final "\n")
        out[targets[k]] = _text(current)
    return out


def _text(raw: bytes) -> str:
    return raw[:MAX_LINE].decode("utf-8", errors="replace").rstrip("\r")


def scan(rule_list: list[EvidenceRule], stream: BinaryIO) -> tuple[list[Found], dict[int, str]]:
    """The evidence items the log in `stream` (seekable, at its start) shows, in rule order, and
    the text of their lines."""
    if not rule_list:
        return [], {}
    terms = sorted({t for r in rule_list for t in r.terms})
    sightings = _term_lines(stream, terms)
    # Lines where a number could matter: around each window where every term of its item is seen.
    near: dict[int, set[int]] = {}
    for i, rule in enumerate(rule_list):
        if not rule.numbers:
            continue
        term_sightings = [sightings[t] for t in rule.terms]
        lines: set[int] = set()
        for e, last in _windows(term_sightings, rule.window):
            lines.update(range(max(1, e - rule.window + 1), min(last) + rule.window))
        near[i] = lines
    number_lines: dict[tuple[int, int], list[int]] = {}
    candidates = set().union(*near.values()) if near else set()
    texts = _lines(stream, candidates)
    for i, lines in near.items():
        rule = rule_list[i]
        for j, source in enumerate(rule.numbers):
            regex = patterns.regex(source)
            hit = []
            for n in sorted(lines):
                text = texts.get(n)
                if text is None:
                    continue
                lower = text.lower()
                if all(w in lower for w in rule.words[j]) and regex.search(normalise.normalise(text)):
                    hit.append(n)
            number_lines[(i, j)] = hit
    found = []
    for i, rule in enumerate(rule_list):
        elements = [sightings[t] for t in rule.terms] + [number_lines.get((i, j), []) for j in range(len(rule.numbers))]
        lines = first_window(elements, rule.window)
        if lines is not None:
            found.append(Found(rule, lines))
    shown = _lines(stream, {n for f in found for n in f.lines})
    return found, shown


def merge(hits: list, found: list[Found], shown: dict[int, str]) -> list:
    """kb.triage.match hits with the evidence found added: each item adds its weight once to its cell's
    score and its lines to the cell's lines (in order); cells only evidence shows get a hit of
    their own. Best first, as kb.triage.match sorts."""
    from kb.triage.match import Hit

    by_entry = {h.entry: h for h in hits}
    for item in found:
        rule = item.rule
        hit = by_entry.get(rule.entry)
        if hit is None:
            hit = by_entry[rule.entry] = Hit(rule.entry, rule.url, rule.title)
        hit.signatures[rule.label] = EVIDENCE_WEIGHT
        hit.specific = True  # identifiers seen together are no generic line
        hit.score = round(hit.score + EVIDENCE_WEIGHT, 3)
        for n in item.lines:
            if n not in hit.texts:
                hit.texts[n] = shown.get(n, "")
                hit.lines.append(n)
        hit.lines.sort()
    return sorted(by_entry.values(), key=lambda h: (-h.score, h.entry))


def export(rule_list: list[EvidenceRule]) -> list[dict]:
    """The rules for the triage page (kb-evidence.js), which applies them as `scan` does."""
    return [{"entry": r.entry, "terms": list(r.terms), "numbers": list(r.numbers), "words": [list(w) for w in r.words],
             "window": r.window, "label": r.label, "weight": EVIDENCE_WEIGHT, "url": r.url, "title": r.title}
            for r in rule_list]
