"""Log triage: which cells a log shows, with the lines that show them (`kb match`).

A rule (one per signature) shows in a line when its anchor word is in the line, each of its
`words` too, and its pattern (`kb.records.patterns`) matches the line normalised (`kb.records.normalise`). The
rules are exported for the triage page, which applies these tests to every line in the browser.

`kb match` gets the same answer without looking at most lines. The log is read as bytes, CHUNK
at a time into one buffer (bounded memory, any encoding, binary garbage survives), and searched
in blocks of whole lines of about BLOCK bytes, each lower-cased at once: one Aho-Corasick
automaton over one word per rule (`_Prefilter`, searched with SIMD) finds the lines that may
show a rule, and line ends are looked for only around those. Only these lines are decoded and
tested as above. A word that brings many lines no rule confirms is traded for a rarer word of the
same rules: a line a rule matches holds all its words, so any of them finds it.

A message wrapped over two or three lines (kb.triage.wrapped) is looked for around the lines the
scan finds, for the rules they hold some option words of but not all: each of a rule's option
words is whole in the wrapped lines, so the word the scan looks for finds one of them. The scan
holds back the last lines of each read (the next read scans them) and keeps the last lines it
scanned, so the lines around a line are always at hand. When a rule's word changes between two
lines, the pairs around that place are looked at for it then.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Iterator

import ahocorasick_rs

from kb.records import normalise, patterns, verdict
from kb.triage import logfacts, wrapped

if TYPE_CHECKING:  # the check and the catalog load only when the cached rules cannot be used
    from kb.records.problems import Problem
    from kb.records.schema import Cell

CHUNK = 8 * 1024 * 1024
MAX_LINE = 1024 * 1024
BLOCK = 256 * 1024  # lower-cased and searched at a time: small enough to stay in the CPU cache
PACKED = 64  # pieces per prefilter automaton: the most ahocorasick_rs searches with SIMD
WASTE = 256  # lines a prefilter word may bring that no rule confirms before its rules look further
SAMPLE = 32 * 1024  # bytes of log before the line where a word looks noisy, in which words are counted
UNICODE_LOWER = ("\u0130".encode(), "\u212a".encode())  # lower-case to strings holding 'i', 'k'
# Longer lines are matched in windows around their anchor words: signatures are short, and
# normalising a megabyte-long line whole would cost time for nothing.
WINDOW = 2048
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


@dataclass
class Hit:
    entry: str
    url: str
    title: str
    score: float = 0.0
    lines: list[int] = field(default_factory=list)
    texts: dict[int, str] = field(default_factory=dict)
    signatures: dict[str, float] = field(default_factory=dict)
    specific: bool = False  # a signature not marked generic matched, or an evidence item did
    verdict: str | None = None  # kb.records.verdict.MATCH_VERDICTS, once `decide` has run
    why: str = ""
    own: set[tuple[int, str]] = field(default_factory=set)  # (line, capability) its matched literals fix

    @property
    def signature(self) -> str:
        """The matched signature that weighs most (the first listed among equals)."""
        return max(self.signatures.items(), key=lambda kv: kv[1])[0]

    def as_json(self) -> dict:
        out = {"entry": self.entry, "score": self.score, "lines": self.lines, "signature": self.signature,
               "url": self.url}
        if self.verdict is not None:
            out |= {"verdict": self.verdict, "why": self.why, "generic_only": not self.specific}
        return out


class Matcher:
    def __init__(self, rule_list: list[SignatureRule]):
        self.rules = rule_list
        by_anchor: dict[str, list[SignatureRule]] = {}
        for r in rule_list:
            if r.anchor:
                by_anchor.setdefault(r.anchor, []).append(r)  # one pass: a scan per anchor grew as N squared
        anchors = sorted(by_anchor)
        self._anchor_rules = {a: by_anchor[a] for a in anchors}
        self._anchors = anchors
        # Every anchor of a line at once (overlapping): which rules a candidate line is tested against.
        self._automaton = ahocorasick_rs.BytesAhoCorasick([a.encode() for a in anchors]) if anchors else None
        self._longest = max(map(len, anchors), default=1)
        self._anchored = [r for r in rule_list if r.anchor]
        self._options = [_options(r) for r in self._anchored]
        self._wrap = {id(r): wrapped.ScanRule(i, r.anchor, opts, r.words, r.source, r.edges, r.signature)
                      for i, (r, opts) in enumerate(zip(self._anchored, self._options))}
        self._word_bytes = {id(r): tuple(w.encode() for w in r.words) for r in self._anchored}
        self._option_bytes = {id(r): tuple(w.encode() for w in opts) for r, opts in zip(self._anchored, self._options)}
        self._first = _Prefilter(self._options)
        self._limit = 0  # while scanning: where the whole lines in the buffer end
        self._head = False  # while scanning: the buffer starts inside a line cut into pieces

    def match_line(self, line: str) -> list[SignatureRule]:
        """The rules one line satisfies (used by tests and by `scan`)."""
        lower = line.lower()
        candidates = [r for a, rs in self._anchor_rules.items() if a in lower for r in rs]
        return self._confirm(line, candidates)

    def _confirm(self, line: str, candidates: list[SignatureRule]) -> list[SignatureRule]:
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
        """The cells the log in `stream` shows, best first.

        The log is read CHUNK bytes at a time into one buffer, after the unfinished line of the
        last read; the whole lines of each read are searched in blocks (`_scan_block`). A line
        longer than MAX_LINE is cut where a read that holds no line end stops, and its pieces
        are searched as lines with the same number."""
        hits: dict[str, Hit] = {}
        if self._automaton is None:
            return []
        prefilter = self._first.copy()
        buffer = bytearray()
        held = 0  # bytes at the start of `buffer` carried over
        behind = 0  # of them, the lines already scanned, kept as the lines before the next ones
        number = 1  # number of the line at buffer[behind]
        self._head = False
        while True:
            got = _fill(stream, buffer, held, CHUNK)
            done = got == 0
            size = held + got
            if size == behind:
                break
            stop = limit = size if done else buffer.rfind(b"\n", behind, size) + 1
            if limit == 0:
                if size - behind < MAX_LINE:
                    held = size
                    continue
                stop = limit = size  # a line longer than MAX_LINE: look at it in pieces
            elif not done:
                # The last whole lines wait for the next read: a line's continuation is read with it.
                for _ in range(wrapped.LINES - 1):
                    stop = buffer.rfind(b"\n", behind, stop - 1) + 1 or behind if stop > behind else behind
                if stop == behind:
                    held = size
                    continue
            self._limit = limit
            start = behind
            while start < stop:
                end = _block_end(buffer, start, stop)
                number = self._scan_block(buffer, start, end, number, hits, prefilter)
                start = end
            if done:
                break
            keep = stop
            if stop == size:  # in pieces: the next read starts inside this line
                self._head = True
            else:
                for _ in range(wrapped.LINES - 1):
                    keep = buffer.rfind(b"\n", 0, keep - 1) + 1 if keep > 0 else 0
                self._head = self._head and keep == 0
            held = size - keep
            buffer[:held] = buffer[keep:size]
            behind = stop - keep
        for hit in hits.values():
            hit.lines.sort()
        return sorted(hits.values(), key=lambda h: (-h.score, h.entry))

    def _scan_block(self, buffer: bytearray, start: int, end: int, number: int, hits: dict[str, Hit],
                    prefilter: _Prefilter) -> int:
        """Match the whole lines in buffer[start:end], the first numbered `number`; the number of
        the line after them."""
        lower = buffer[start:end].lower()
        counted = 0
        lines = prefilter.lines(lower, 0)
        while (line := next(lines, None)) is not None:
            line_start, line_end, words = line
            number += lower.count(b"\n", counted, line_start)
            counted = line_start
            anchors = self._anchors_in(lower, line_start, line_end)
            away = prefilter.away_in(lower, line_start, line_end)
            confirmed = []
            context, found = None, False
            if anchors or away:
                raw = buffer[start + line_start: start + line_end]
                text = raw.decode("utf-8", errors="replace").rstrip("\r")
                candidates = [r for a in sorted(anchors) for r in self._anchor_rules[a]]
                confirmed = self._confirm(text, candidates) if candidates else []
                for rule in confirmed:
                    self._record(hits, rule, {number: text})
                # A rule the line holds a search word of but not all its words may be wrapped over lines.
                tried = [r for r in candidates if r not in confirmed] + [self._anchored[i] for i in away]
                if tried:
                    tried = self._may_wrap(tried, lower, line_start, line_end)
                context, found = self._wrapped(hits, tried, lambda: self._context(
                    buffer, start + line_start, start + line_end, text), number, 0)
            if not confirmed and not found:
                if prefilter.wasted(words, lower, line_end):
                    lines = prefilter.lines(lower, line_end + 1)  # the lines after this one, with the new words
                    # A rule whose word changed here is looked for in the runs holding this line and the next.
                    self._wrapped(hits, [self._anchored[i] for i in prefilter.moved], lambda: context or self._context(
                        buffer, start + line_start, start + line_end, None), number, 1)
        return number + lower.count(b"\n", counted)

    def _may_wrap(self, rules: list[SignatureRule], lower: bytearray, line_start: int, line_end: int) -> list[SignatureRule]:
        """The rules that runs of lines holding lower[line_start:line_end] may show (kb.triage.wrapped
        rule 3): the line lacks one of their words, and each word they are looked for by is whole in
        the lines around it (when the block holds them all)."""
        region = _region(lower, line_start, line_end)
        around: dict[bytes, bool] = {}
        out = []
        for rule in rules:
            if region is not None:
                whole = True
                for word in self._option_bytes[id(rule)]:
                    if word not in around:
                        around[word] = lower.find(word, *region) != -1
                    if not around[word]:
                        whole = False
                        break
                if not whole:
                    continue
            if not all(lower.find(w, line_start, line_end) != -1 for w in self._word_bytes[id(rule)]):
                out.append(rule)
        return out

    def _record(self, hits: dict[str, Hit], rule: SignatureRule, texts: dict[int, str]) -> None:
        hit = hits.setdefault(rule.entry, Hit(rule.entry, rule.url, rule.title))
        hit.specific = hit.specific or not rule.generic
        if rule.signature not in hit.signatures:
            hit.signatures[rule.signature] = rule.weight
            hit.score = round(hit.score + rule.weight, 3)
        for number, text in texts.items():
            hit.own.update((number, capability) for capability in rule.own)
            if number not in hit.texts:
                hit.lines.append(number)
                hit.texts[number] = text

    def _wrapped(self, hits: dict[str, Hit], rules: list[SignatureRule], context, number: int,
                 after: int) -> tuple[wrapped.Lines | None, bool]:
        """Look for `rules` wrapped over runs of lines (kb.triage.wrapped) that hold line `number`
        and, with `after` 1, the next line too. `context()` gives the lines around it
        (wrapped.Lines, the line at index LINES - 1), made only when there are rules to look for.
        The runs found are recorded. Returns the lines (None if never made) and whether any run
        was found."""
        if not rules:
            return None, False
        lines = context()
        at = wrapped.LINES - 1
        found = False
        if lines.texts[at] is None:
            return lines, False
        looked = 0
        for rule in rules:
            wrap = self._wrap[id(rule)]
            if not lines.may_show(wrap, at):
                continue
            looked += 1
            if looked > wrapped.RULES:  # a line holding the words of many rules is made to be slow
                break
            for a, b in lines.find(wrap, at, at + after):
                found = True
                self._record(hits, rule, {number - at + i: lines.texts[i] for i in range(a, b + 1)})
        return lines, found

    def _context(self, buffer: bytearray, line_start: int, line_end: int, text: str | None) -> wrapped.Lines:
        """The line buffer[line_start:line_end] (`text`, decoded, when known) with the LINES - 1
        lines before and after it that the buffer holds (None where it holds none, or only part
        of a line cut into pieces, or a line longer than wrapped.LONG)."""
        def decoded(s: int, e: int) -> str | None:
            if (s == 0 and self._head) or e - s > 4 * wrapped.LONG:
                return None
            return buffer[s:e].decode("utf-8", errors="replace").rstrip("\r")

        side = wrapped.LINES - 1
        texts: list[str | None] = [None] * (2 * side + 1)
        texts[side] = decoded(line_start, line_end) if text is None or (line_start == 0 and self._head) else text
        s = line_start
        for k in range(side - 1, -1, -1):
            if s == 0:
                break
            p = buffer.rfind(b"\n", 0, s - 1) + 1 if s > 1 else 0
            texts[k], s = decoded(p, s - 1), p
        e = line_end
        for k in range(side + 1, 2 * side + 1):
            if e + 1 >= self._limit:
                break
            n = buffer.find(b"\n", e + 1, self._limit)
            n = self._limit if n == -1 else n
            texts[k], e = decoded(e + 1, n), n
        return wrapped.Lines(texts)

    def _anchors_in(self, lower: bytearray, start: int, end: int) -> set[str]:
        """The anchors in lower[start:end], one line: the rules it is tested against. Looked for
        BLOCK bytes at a time (a window reads on as far as the longest anchor needs), so that a
        long line full of them never becomes one long list."""
        found: set[str] = set()
        with memoryview(lower) as view:
            for at in range(start, end, BLOCK):
                window = view[at: min(at + BLOCK + self._longest - 1, end)]
                found.update(self._anchors[i] for i, _, _ in
                             self._automaton.find_matches_as_indexes(window, overlapping=True))
        return found


FACTS_BYTES = 4 * 1024 * 1024  # the facts of a log are read from its first 4 MiB


def read_facts(stream: BinaryIO) -> dict:
    """What the log in `stream` says about its machine (kb.triage.logfacts), from its first
    FACTS_BYTES (nvidia-smi, collect_env and version banners come first; a longer log is not
    read twice whole): the lines whole within them."""
    data = stream.read(FACTS_BYTES + 1)
    if len(data) > FACTS_BYTES:
        data = data[:data.rfind(b"\n", 0, FACTS_BYTES) + 1]
    return logfacts.read_bytes(data).as_json()


def decide(hits: list[Hit], scopes: dict[str, dict], facts: dict) -> list[Hit]:
    """Each hit's verdict and reason (kb.records.verdict.decide) from the facts of the log; best
    first by kb.records.verdict.rank_key. A number inside a matched signature's own literal is not
    the log's GPU (logfacts.without_own)."""
    facts = logfacts.without_own(facts, set().union(*(hit.own for hit in hits)))
    for hit in hits:
        hit.verdict, hit.why = verdict.decide(scopes[hit.entry], facts, hit.specific, matched=list(hit.signatures))
    return sorted(hits, key=lambda h: verdict.rank_key(h.verdict, h.specific, h.score, h.entry))


def scopes(rule_list: list[SignatureRule]) -> dict[str, dict]:
    """Cell id -> its kb.records.verdict.scope, from the rules."""
    return {r.entry: r.scope for r in rule_list if r.scope is not None}


def _region(lower: bytearray, line_start: int, line_end: int) -> tuple[int, int] | None:
    """(start, end) of the wrapped.LINES - 1 lines before and after lower[line_start:line_end]
    with it, or None when they do not all lie in `lower` (one block of whole lines)."""
    start = line_start
    for _ in range(wrapped.LINES - 1):
        if start == 0:
            return None
        start = lower.rfind(b"\n", 0, start - 1) + 1 if start > 1 else 0
    end = line_end
    for _ in range(wrapped.LINES - 1):
        if end + 1 >= len(lower):
            return None
        newline = lower.find(b"\n", end + 1)
        end = newline if newline != -1 else len(lower)
    return start, end


def _fill(stream: BinaryIO, buffer: bytearray, at: int, size: int) -> int:
    """Read up to `size` bytes into buffer[at:], fewer only at the end of the stream. The buffer
    grows as it fills (doubling): a short log never costs a CHUNK of memory."""
    got = 0
    readinto = getattr(stream, "readinto", None)
    while got < size:
        if len(buffer) == at + got:
            buffer.extend(bytes(min(max(len(buffer), 1 << 16), at + size - len(buffer))))
        with memoryview(buffer) as view, view[at + got: min(len(buffer), at + size)] as free:
            if readinto is not None:
                n = readinto(free)
            else:
                data = stream.read(len(free))
                n = len(data)
                free[:n] = data
        if not n:
            break
        got += n
    return got


def _block_end(buffer: bytearray, start: int, cut: int) -> int:
    """Where the block of whole lines from `start` ends: after the last line end within BLOCK
    bytes, or after the line that runs past them."""
    if cut - start <= BLOCK:
        return cut
    end = buffer.rfind(b"\n", start, start + BLOCK) + 1
    if end > start:
        return end
    newline = buffer.find(b"\n", start + BLOCK, cut)
    return newline + 1 if newline != -1 else cut


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


class _Prefilter:
    """Which word of each rule the block scan looks for, and the automata that look for them.

    Each rule starts with its anchor. When a word keeps bringing lines no rule confirms
    (`temperature` in a log of GPU sensor readings), each rule that looks for it moves to the
    rarest of its other words in the log just read, if that is clearly rarer (`wasted`). Which
    word finds a rule's lines changes the time a scan takes, never what it finds, since a line the
    rule matches holds them all; each line is searched with one set of words. Words are found in ASCII-lowered
    bytes but a rule's `words` are tested on the line's Unicode lower case, where two non-ASCII
    characters become ASCII letters (U+0130 -> 'i', U+212A KELVIN SIGN -> 'k'): while a rule
    looks for a word other than its anchor (which the rule itself tests on the bytes) holding such
    a letter, lines holding either character are candidates too."""

    def __init__(self, options: list[tuple[str, ...]]):
        self.options = options
        self.choice = [0] * len(options)
        self.given_up: set[str] = set()  # words some rule moved away from: no rule moves to them
        self.waste: dict[str, int] = {}
        self.limit: dict[str, int] = {}
        self.moved: list[int] = []  # the rules whose word the last `wasted` changed
        self._build()

    def copy(self) -> _Prefilter:
        """A fresh start for one scan, sharing the automata (they are never changed, only replaced)."""
        fresh = copy.copy(self)
        fresh.choice, fresh.given_up, fresh.waste, fresh.limit = list(self.choice), set(self.given_up), {}, {}
        fresh.moved = []
        return fresh

    def away_in(self, lower: bytearray, start: int, end: int) -> list[int]:
        """The rules that look for a word other than their anchor, and find it in lower[start:end]."""
        return [i for i in self.away if lower.find(self.away_words[i], start, end) != -1]

    def _build(self) -> None:
        chosen = [opts[i] for opts, i in zip(self.options, self.choice)]
        self.away = [i for i, c in enumerate(self.choice) if c]
        self.away_words = {i: chosen[i].encode() for i in self.away}
        labels: list[str | None] = sorted(set(chosen))
        pieces = [w.encode() for w in labels]
        if any(w != opts[0] and ("i" in w or "k" in w) for w, opts in zip(chosen, self.options)):
            labels += [None] * len(UNICODE_LOWER)
            pieces += UNICODE_LOWER
        # PACKED pieces per automaton, in leftmost mode: so ahocorasick_rs searches with SIMD (Teddy).
        self.automata = [ahocorasick_rs.BytesAhoCorasick(pieces[i:i + PACKED],
                                                         matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)
                         for i in range(0, len(pieces), PACKED)]
        self.labels = labels
        self.longest = max(map(len, pieces), default=1)

    def _window(self, window: memoryview) -> list[tuple[int, int, int]]:
        """(piece, start, end) of the leftmost matches in `window`, by start. A line holding a piece
        yields at least one (a match that hides another overlaps it, so lies in the same line),
        which is all the block scan needs."""
        if len(self.automata) == 1:
            return self.automata[0].find_matches_as_indexes(window)
        found = []
        for number, automaton in enumerate(self.automata):
            found += [(number * PACKED + i, s, e) for i, s, e in automaton.find_matches_as_indexes(window)]
        found.sort(key=lambda m: m[1])
        return found

    def lines(self, lower: bytearray, at: int) -> Iterator[tuple[int, int, set[str | None]]]:
        """(start, end, pieces) of each line of lower[at:] (`at` starts a line) that holds a piece,
        in order and as they are asked for (a scan that changes its words stops asking). Searched
        BLOCK bytes at a time; each line's bounds are looked up once, and a long line is read
        only until it shows a piece."""
        end = len(lower)
        line_start, line_end, pieces = at, -1, None
        start = at
        with memoryview(lower) as view:
            while start < end:
                stop = min(start + BLOCK, end)
                for index, first, _ in self._window(view[start: min(stop + self.longest - 1, end)]):
                    first += start
                    if first >= stop:
                        break
                    if first >= line_end:
                        if pieces is not None:
                            yield line_start, line_end, pieces
                        line_start = lower.rfind(b"\n", at, first) + 1 or at
                        newline = lower.find(b"\n", first)
                        line_end = newline if newline != -1 else end
                        pieces = set()
                    pieces.add(self.labels[index])
                start = max(stop, line_end + 1)  # the rest of a line already found is not read
        if pieces is not None:
            yield line_start, line_end, pieces

    def wasted(self, words: set[str | None], lower: bytearray, at: int) -> bool:
        """Count a line that `words` brought and no rule confirmed (it ends at lower[at]). When a
        word has brought WASTE such lines (then twice as many, and so on), each rule that looks
        for it moves to the rarest of its other words in the SAMPLE bytes before, if that is at
        most half as frequent there. True when the words changed."""
        noisy = []
        for word in words:
            count = self.waste[word] = self.waste.get(word, 0) + 1
            if count >= self.limit.get(word, WASTE) and word is not None:
                self.limit[word] = 2 * count
                noisy.append(word)
        if not noisy:
            return False
        sample = max(0, at - SAMPLE)
        counts: dict[str, int] = {}

        def frequency(word: str) -> int:
            if word not in counts:
                counts[word] = lower.count(word.encode(), sample, at)
            return counts[word]

        moved = False
        self.moved = []
        for word in noisy:
            for i, opts in enumerate(self.options):
                if opts[self.choice[i]] != word:
                    continue
                left = [j for j, w in enumerate(opts) if w != word and w not in self.given_up]
                rarest = min(left, key=lambda j: (frequency(opts[j]), j), default=None)
                if rarest is not None and 2 * frequency(opts[rarest]) < frequency(word):
                    self.choice[i] = rarest
                    self.given_up.add(word)
                    self.moved.append(i)
                    moved = True
        if moved:
            self._build()
        return moved


def export(rule_list: list[SignatureRule]) -> dict:
    """Everything the triage page needs to match exactly as `kb match` does."""
    return {
        "version": 1,
        "window": WINDOW,
        "facts_bytes": FACTS_BYTES,
        "passes": normalise.MAX_PASSES,
        "normalise": normalise.export(),
        "wrapped": wrapped.export(),
        "logfacts": logfacts.export(),
        "rules": [{"entry": r.entry, "signature": r.signature, "kind": r.kind, "source": r.source,
                   "anchor": r.anchor, "words": list(r.words), "options": list(_options(r)) if r.anchor else [],
                   "edges": list(r.edges), "own": list(r.own),
                   "weight": r.weight, "url": r.url, "title": r.title, "generic": r.generic}
                  for r in rule_list],
        "cells": dict(sorted(scopes(rule_list).items())),
        "verdicts": verdict.MATCH_TITLES,
        "verdict": verdict.export(),
    }
