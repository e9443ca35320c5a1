"""Signature patterns: the placeholder grammar, compiled by the project into safe expressions.

A signature may carry `match`, its literal text with the variable parts marked:
`RuntimeError: Plan index {int} is invalid`. Placeholders are `{int}`, `{num}`, `{hex}`,
`{size}`, `{path}`, `{pid}`, `{id}` and `{rest}` (anything to the end of the line, last only);
`{{` and `}}` are literal braces. No contributor-written regular expression is ever run: each
placeholder becomes a fixed class with a single quantifier, literal parts are escaped, two
placeholders never touch, so matching stays linear in the line. Without `match`, the literal
text itself is the pattern. Exported to the browser as JavaScript-compatible sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.normalise import PRODUCED_WORDS, normalise

PLACEHOLDERS = {
    "int": r"\d+",
    "num": r"-?\d+(?:\.\d+)?",
    "hex": r"0x[0-9a-f]+",
    "size": r"\d+(?:\.\d+)? ?(?:[kmgt]i?b|bytes|b)",
    "path": r"[^\s'\",;()]+",
    "pid": r"\d+",
    "id": r"[a-z_][a-z0-9_.]*",
    "rest": r".*",
}
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_WORD = re.compile(r"[a-z0-9_]+")
MIN_ANCHOR = 4


class PatternError(ValueError):
    pass


@dataclass(frozen=True)
class Compiled:
    source: str  # regular expression over normalised, lower-cased lines
    anchor: str  # a word every matching raw line contains (lower case), for the prefilter
    literal: bool  # True when no placeholder is used
    words: tuple[str, ...] = ()  # every word every matching raw line contains (the anchor among them)


def parse(template: str) -> list[tuple[str, str]]:
    """[('text', literal) | ('slot', name)], or PatternError naming what is wrong."""
    parts: list[tuple[str, str]] = []
    position = 0
    for token in _TOKEN.finditer(template):
        if token.start() > position:
            parts.append(("text", template[position:token.start()]))
        position = token.end()
        raw = token.group(0)
        if raw in ("{{", "}}"):
            parts.append(("text", raw[0]))
        elif raw in ("{", "}"):
            raise PatternError(f"lone {raw!r} at column {token.start() + 1}; write {raw * 2!r} for a literal brace")
        else:
            name = token.group(1)
            if name not in PLACEHOLDERS:
                raise PatternError(f"unknown placeholder {{{name}}} at column {token.start() + 1}; "
                                   f"use one of {', '.join('{' + n + '}' for n in PLACEHOLDERS)}")
            if parts and parts[-1][0] == "slot":
                raise PatternError(f"placeholders {{{parts[-1][1]}}} and {{{name}}} touch; put literal text between them")
            parts.append(("slot", name))
    if position < len(template):
        parts.append(("text", template[position:]))
    merged: list[tuple[str, str]] = []
    for kind, value in parts:
        if kind == "text" and merged and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + value)
        else:
            merged.append((kind, value))
    for i, (kind, value) in enumerate(merged):
        if kind == "slot" and value == "rest" and i != len(merged) - 1:
            raise PatternError("{rest} matches to the end of the line, so it must come last")
    if not any(kind == "text" and value.strip() for kind, value in merged):
        raise PatternError("a pattern needs some literal text, not only placeholders")
    return merged


def _stable_words(texts: list[str]) -> list[str]:
    """Words of the literal parts that any matching raw line contains as they are."""
    return [w for text in texts for w in _WORD.findall(normalise(text))
            if w in text.lower() and not PRODUCED_WORDS.match(w)]


def _anchor(words: list[str]) -> str:
    """The word to look for first: code identifiers (with `_` or digits) are rare in log noise,
    plain English words are not; among equals, the longest."""
    words = [w for w in words if len(w) >= MIN_ANCHOR and not w.isdigit()] or words
    return max(words, key=lambda w: (any(c == "_" or c.isdigit() for c in w), len(w))) if words else ""


def compile_signature(text: str, match: str | None = None) -> Compiled:
    """The pattern of one signature (PatternError when `match` is malformed)."""
    parts = parse(match) if match is not None else [("text", text)]
    source = ""
    literals = []
    for kind, value in parts:
        if kind == "slot":
            source += PLACEHOLDERS[value]
        else:
            # Normalise each literal piece as a log line would be; keep the spaces at its edges.
            lead = " " if value[:1].isspace() else ""
            trail = " " if value[-1:].isspace() and len(value.strip()) else ""
            piece = normalise(value)
            source += re.escape(lead + piece + trail) if piece else (" " if value else "")
            literals.append(value)
    words = _stable_words(literals)
    return Compiled(source=source, anchor=_anchor(words), literal=match is None,
                    words=tuple(sorted(set(words))))


def matches(compiled: Compiled, line: str) -> bool:
    return re.search(compiled.source, normalise(line)) is not None
