"""Log triage: which cells a log shows, with the lines that show them (`kb match`).

The scanner takes the rules (kb.triage.rules: one per signature, shown in a line when its anchor
word, each of its `words` and its pattern are in it) and hands on the hits, one per cell with
the lines that show it, then their verdicts from the facts of the log (`decide`, `read_facts`).

`kb match` gets the same answer without looking at most lines. The log is read as bytes, CHUNK
at a time into one buffer (bounded memory, any encoding, binary garbage survives), and searched
in blocks of whole lines of about BLOCK bytes, each lower-cased at once: one Aho-Corasick
automaton over one word per rule (kb.triage.prefilter, searched with SIMD) finds the lines that may
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

from dataclasses import dataclass, field
from typing import BinaryIO

import ahocorasick_rs

from kb.records import normalise, verdict
from kb.triage import logfacts, wrapped
from kb.triage.prefilter import _Prefilter
from kb.triage.rules import SignatureRule, _options

CHUNK = 8 * 1024 * 1024
MAX_LINE = 1024 * 1024
BLOCK = 256 * 1024  # lower-cased and searched at a time: small enough to stay in the CPU cache
# Longer lines are matched in windows around their anchor words: signatures are short, and
# normalising a megabyte-long line whole would cost time for nothing.
WINDOW = 2048


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
    found: dict[str, set[int]] = field(default_factory=dict)  # signature -> the lines it matched on

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


def signature_score(signatures: dict[str, float], found: dict[str, set[int]]) -> float:
    """An entry's score from the signatures that matched (weight) and the lines each matched on: the
    sum of their weights, less any signature whose every line another of them, heavier (the longer
    text among equals), also matched. A line is one observation: "CUDA error: X" and "RuntimeError:
    CUDA error: X" on the same line count once, at the longer one's weight, in any order found."""
    def rank(signature: str) -> tuple[float, int, str]:
        return signatures[signature], len(signature), signature

    return round(sum(weight for signature, weight in signatures.items()
                     if not any(other != signature and rank(other) > rank(signature)
                                and found[signature] <= found[other] for other in signatures)), 3)


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
            hit.score = signature_score(hit.signatures, hit.found)  # once, from every line each signature matched
        return sorted(hits.values(), key=lambda h: (-h.score, h.entry))

    def _scan_block(self, buffer: bytearray, start: int, end: int, number: int, hits: dict[str, Hit],
                    prefilter: _Prefilter) -> int:
        """Match the whole lines in buffer[start:end], the first numbered `number`; the number of
        the line after them."""
        lower = buffer[start:end].lower()
        counted = 0
        lines = prefilter.lines(lower, 0, BLOCK)
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
                    lines = prefilter.lines(lower, line_end + 1, BLOCK)  # the lines after this one, with the new words
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
        hit.signatures.setdefault(rule.signature, rule.weight)
        hit.found.setdefault(rule.signature, set()).update(texts)
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


def decide(hits: list[Hit], scopes: dict[str, dict], facts: dict) -> tuple[list[Hit], dict]:
    """Each hit's verdict and reason (kb.records.verdict.decide) from the facts of the log, best
    first by kb.records.verdict.rank_key, a tie broken by what the log shows of their packages
    (verdict.tie) before the id; and the facts they were judged by, which the notes beside them
    read too. A number inside a matched signature's own literal (a kernel's "requires SM100a") is
    what the code names, not the log's GPU (logfacts.without_own)."""
    facts = logfacts.without_own(facts, set().union(*(hit.own for hit in hits)))
    for hit in hits:
        hit.verdict, hit.why = verdict.decide(scopes[hit.entry], facts, hit.specific, matched=list(hit.signatures))
    return sorted(hits, key=lambda h: verdict.rank_key(
        h.verdict, h.specific, h.score, h.entry, tied=verdict.tie(scopes[h.entry], facts))), facts


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
