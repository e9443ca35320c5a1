"""The block scan's prefilter (`kb match`): which word of each rule it looks for, and the automata.

The scanner (kb.triage.match) lower-cases the log a block at a time and asks `_Prefilter.lines`
for the lines that hold a word some rule is looked for by (one per rule, from
kb.triage.rules._options; searched with SIMD); it tests only those lines. When a word keeps
bringing lines no rule confirms, `wasted` trades it for a rarer word of the same rules and hands
the scanner the rules that moved (`moved`), whose wrapped runs it looks for again.
"""

from __future__ import annotations

import copy
from typing import Iterator

import ahocorasick_rs

PACKED = 64  # pieces per prefilter automaton: the most ahocorasick_rs searches with SIMD
WASTE = 256  # lines a prefilter word may bring that no rule confirms before its rules look further
SAMPLE = 32 * 1024  # bytes of log before the line where a word looks noisy, in which words are counted
UNICODE_LOWER = ("\u0130".encode(), "\u212a".encode())  # lower-case to strings holding 'i', 'k'


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

    def lines(self, lower: bytearray, at: int, block: int) -> Iterator[tuple[int, int, set[str | None]]]:
        """(start, end, pieces) of each line of lower[at:] (`at` starts a line) that holds a piece,
        in order and as they are asked for (a scan that changes its words stops asking). Searched
        `block` bytes at a time (the scanner's kb.triage.match.BLOCK, passed in: it is the scanner's
        size, and tests change it there); each line's bounds are looked up once, and a long line
        is read only until it shows a piece."""
        end = len(lower)
        line_start, line_end, pieces = at, -1, None
        start = at
        with memoryview(lower) as view:
            while start < end:
                stop = min(start + block, end)
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
