"""Messages wrapped over consecutive lines: when two or three lines are read as one for a rule.

A terminal, an editor or GitHub breaks a long message over lines, inside a word at a fixed width
or at a space; a quoted paste repeats `> ` on every line, and vLLM repeats its log prefix on every
line of a message that holds a line end. `kb match` (kb.triage.match) and the triage page
(kb-wrapped.js, from the data `export` gives) find a rule in lines a..b (two or three) when:

1. every one of them is at most LONG characters (a wrapped line is as wide as a terminal);
2. each line after the first continues the first: its body, what is left once its Markdown
   quote markers and log prefix (kb.records.normalise.PREFIXES) are taken off, is not empty and
   opens no code fence; its quote markers are the first line's, and its log prefix is none or the
   first line's (a new log record starts with its own);
3. each word the scan may look for the rule by (its anchor and up to two others, kb.triage.rules
   `_options`) is whole in one of the lines, in ASCII lower case; each of its words is in one of
   them or broken over two (the first, trimmed, ends with its start, the next holds its rest); the
   first line holds the first word of the rule's literal text and the last line its last word
   (each whole or broken over the break next to it); no one line holds all its words, and none
   shows the rule on its own (kb.triage.match); each line but the last ends, and each but the
   first opens (its body), with a word of the rule's own text (lower case, as written or
   normalised), or one holding a digit (a number, a capability, a path: what varies);
4. of three lines, neither pair of consecutive lines already shows the rule this way;
5. the rule's pattern matches the normalised text of the lines' bodies joined, each break by
   nothing (a word broken at the margin) or by a space (a break at a space): any of the ways.

The lines are reported together. Only lines around those that hold a word the scan looks for
are ever joined, so a log costs what it did; the price is rule 3: a break inside one of those few
words (a terminal breaks at a fixed width) is not read as a wrap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import product

from kb.records import normalise, patterns

LINES = 3  # at most this many lines are read as one
LONG = 4096  # characters: a longer line is no wrapped line
# Of the rules whose words are around a line (rule 3's quick test), at most this many are looked
# for wrapped over it, in rule order: a line that holds the words of more rules than this is made
# for it, and each rule looked for costs the runs of lines around it.
RULES = 4
FENCE = "```"
_ANSI = re.compile(next(pattern for name, pattern, _ in normalise.RULES if name == "ansi colour codes"))
_PREFIXES = [re.compile(pattern) for name, pattern, _ in normalise.RULES if name in normalise.PREFIXES]
_QUOTE = _PREFIXES[0]  # normalise.PREFIXES names the quote markers first
_BLANKS = re.compile(r"[ \t]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def split(line: str) -> tuple[str, str, str]:
    """(quote, prefix, body) of a line, lower-cased: the Markdown quote markers at its start, the
    log prefixes after them (each without blanks, so `> ` and `>` are one marker) and the rest,
    trimmed of spaces and tabs. ANSI colour codes go first, as the normaliser removes them."""
    text = _ANSI.sub("", line.lower())
    found = _QUOTE.match(text)
    quote = _BLANKS.sub("", found.group(0)) if found else ""
    text = text[found.end():] if found else text
    rest = text
    while True:
        before = rest
        for rule in _PREFIXES:
            found = rule.match(rest)
            if found:
                rest = rest[found.end():]
        rest = rest.lstrip(" \t")
        if rest == before:
            break
    return quote, _BLANKS.sub("", text[:len(text) - len(rest)]), rest.rstrip(" \t")


def _broken(word: str, lines: list[str]) -> bool:
    """Whether `word` is broken over two consecutive lines: the first, trimmed of spaces and
    tabs at its end, ends with its start, and the next holds the rest."""
    for first, nxt in zip(lines, lines[1:]):
        if first is None or nxt is None:
            continue
        first = first.rstrip(" \t")
        last = first[-1:]
        m = word.find(last) + 1 if last else 0
        while 0 < m < len(word):  # only where the word holds the line's last character
            if first.endswith(word[:m]) and word[m:] in nxt:
                return True
            m = word.find(last, m) + 1
    return False


_WORD = re.compile(r"[a-z0-9_]+")
# The last word of a line, read from its end: a search for `[a-z0-9_]+(?=[^a-z0-9_]*$)` tries every
# word of the line and scans to its end from each, and it ran for every rule and window.
_LAST_REVERSED = re.compile(r"[^a-z0-9_]*([a-z0-9_]+)")


def last_word(line: str) -> str | None:
    """The last run of [a-z0-9_] in `line`, None if it has none: linear in the line."""
    found = _LAST_REVERSED.match(line[::-1])
    return found.group(1)[::-1] if found else None


_DIGIT = re.compile(r"[0-9]")


def _first_word(body: str) -> str | None:
    found = _WORD.search(body.translate(_ASCII_LOWER))
    return found.group(0) if found else None


@lru_cache(maxsize=4096)
def _forms(text: str) -> tuple[str, str]:
    return text.lower(), normalise.normalise(text)


def _in_text(word: str | None, text: str) -> bool:
    """Whether a line's word at a break may be part of the rule's text: in it (as written or
    normalised) or holding a digit. No word at all (only punctuation): yes."""
    if word is None or _DIGIT.search(word):
        return True
    return any(word in form for form in _forms(text))


def _edge(word: str, line: str, other: str, last: bool = False) -> bool:
    """Whether `line` holds `word`, or it is broken over `line` and `other` (the line before it
    when `last`, else the line after it)."""
    return word in line or _broken(word, [other, line] if last else [line, other])


def joins(bodies: list[str]) -> list[str]:
    """The texts of lines read as one: each break joined by nothing or by a space."""
    return [bodies[0] + "".join(sep + body for sep, body in zip(seps, bodies[1:]))
            for seps in product(("", " "), repeat=len(bodies) - 1)]


@dataclass(frozen=True)
class ScanRule:
    """A rule as the wrapped-line scan sees it (kb.triage.rules.SignatureRule, cut down to what the
    rules above ask of it): `key` tells rules apart; `options`, the words the scan
    may look for it by; `words`, all its words; `source`, its pattern over a normalised line."""
    key: int
    anchor: str
    options: tuple[str, ...]
    words: tuple[str, ...]
    source: str
    edges: tuple[str, ...] = ()  # first and last word of the literal text
    text: str = ""  # the signature's literal text

    @property
    def regex(self) -> re.Pattern:
        return patterns.regex(self.source)  # compiled when first asked for, once


class Lines:
    """A few consecutive lines, by index (None: unknown, or part of a line cut into pieces), with
    what the rules above ask of them worked out once."""

    def __init__(self, texts: list[str | None]):
        self.texts = texts
        self._ascii: dict[int, str] = {}
        self._last: dict[int, str | None] = {}
        self._split: dict[int, tuple[str, str]] = {}
        self._normal: dict[tuple[int, int], list[str]] = {}
        self._shown: dict[tuple[int, int, int], bool] = {}
        self._around: list[str | None] | None = None

    def may_show(self, rule: ScanRule, i: int) -> bool:
        """A quick test that runs of lines holding line i may show the rule: each of its words
        that line i lacks is in one of the lines around it or broken over two of them (rule 3)."""
        if self._around is None:
            self._around = [None if t is None or len(t) > LONG else self.ascii(k) for k, t in enumerate(self.texts)]
        lowered = self._around
        line = lowered[i]
        if line is None:
            return False
        return all(w in line or any(other is not None and w in other for other in lowered) or _broken(w, lowered)
                   for w in rule.words)

    def ascii(self, i: int) -> str:
        if i not in self._ascii:
            self._ascii[i] = self.texts[i].translate(_ASCII_LOWER)
        return self._ascii[i]

    def last(self, i: int) -> str | None:
        """The last word of line i (ASCII lower case), worked out once for every rule and window."""
        if i not in self._last:
            self._last[i] = last_word(self.ascii(i))
        return self._last[i]

    def shows(self, rule: ScanRule, a: int, b: int) -> bool:
        """Whether lines a..b show the rule by rules 1-5."""
        memo = (rule.key, a, b)
        if memo not in self._shown:
            self._shown[memo] = self._shows(rule, a, b)
        return self._shown[memo]

    def _shows(self, rule: ScanRule, a: int, b: int) -> bool:
        if a < 0 or b >= len(self.texts):
            return False
        span = range(a, b + 1)
        if any(self.texts[i] is None or len(self.texts[i]) > LONG for i in span):
            return False
        lowered = [self.ascii(i) for i in span]
        if not all(_in_text(self.last(i), rule.text) for i in span[:-1]):
            return False
        if rule.edges and not (_edge(rule.edges[0], lowered[0], lowered[1]) and _edge(rule.edges[-1], lowered[-1], lowered[-2], True)):
            return False
        if not all(any(w in line for line in lowered) for w in rule.options):
            return False
        if any(all(w in line for w in rule.words) for line in lowered):
            return False
        if not all(any(w in line for line in lowered) or _broken(w, lowered) for w in rule.words):
            return False
        if any(self._alone(rule, i) for i in span):
            return False
        parts = [self._split.setdefault(i, split(self.texts[i])) for i in span]
        if any(not body or body.startswith(FENCE) for _, _, body in parts):
            return False
        if any(quote != parts[0][0] or prefix not in ("", parts[0][1]) for quote, prefix, _ in parts[1:]):
            return False
        if not all(_in_text(_first_word(body), rule.text) for _, _, body in parts[1:]):
            return False
        if b - a == 2 and (self.shows(rule, a, a + 1) or self.shows(rule, a + 1, b)):
            return False
        if (a, b) not in self._normal:
            self._normal[a, b] = [normalise.normalise(text) for text in joins([body for _, _, body in parts])]
        return any(rule.regex.search(text) for text in self._normal[a, b])

    def _alone(self, rule: ScanRule, i: int) -> bool:
        """Whether line i shows the rule on its own: its anchor in its ASCII lower case, every
        word in its lower case, the pattern in the normalised line (at most LONG characters)."""
        lower = self.texts[i].lower()
        return (rule.anchor in self.ascii(i) and all(w in lower for w in rule.words)
                and rule.regex.search(normalise.normalise(self.texts[i])) is not None)

    def find(self, rule: ScanRule, lo: int, hi: int) -> list[tuple[int, int]]:
        """(a, b) of each run of lines holding lines lo..hi that shows the rule."""
        return [(a, a + size - 1) for size in range(2, LINES + 1) for a in range(hi - size + 1, lo + 1)
                if self.shows(rule, a, a + size - 1)]


def export() -> dict:
    """The rules above for the triage page."""
    return {"lines": LINES, "long": LONG, "rules": RULES, "fence": FENCE, "ansi": _ANSI.pattern,
            "prefixes": [pattern for name, pattern, _ in normalise.RULES if name in normalise.PREFIXES]}
