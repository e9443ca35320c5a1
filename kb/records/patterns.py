"""Signature patterns: the placeholder grammar, compiled by the project into safe expressions.

A signature may carry `match`, its literal text with the variable parts marked:
`RuntimeError: Plan index {int} is invalid`. Placeholders are `{int}`, `{num}`, `{hex}`,
`{size}`, `{path}`, `{pid}`, `{id}` and `{rest}` (anything to the end of the line, last only);
`{{` and `}}` are literal braces. No contributor-written regular expression is ever run.

Every pattern matches in time linear in the line, in Python's `re` and in the browser's RegExp
(V8 has no linear-time engine), because the grammar refuses ambiguity and each placeholder
compiles to an atomic form that both engines read the same way:

- each placeholder names the characters it can take at its edges, over the normalised,
  lower-cased line (`SPECS`: `after` and `before`; for most it is every character it can take).
  The literal text after a placeholder must not start with one of its `after` characters, the
  text before it must not end with one of its `before` characters, and two placeholders never
  touch. So a placeholder starts where a run of its characters starts and ends where the run
  ends: there is never a choice of where it stops, and atomic matching means what backtracking
  matching would mean.
- a placeholder compiles to `(?=(CLASS))\\N`: the lookahead takes the whole run once and is
  atomic in both engines (never re-entered to give characters back); the backreference consumes
  what it took. A pattern that starts with a placeholder gets `(?<!BEFORE)`, so it is tried only
  where a run starts (one character: fixed width for Python, read by V8 and current browsers).

An attempt at one position then reads the runs it crosses, and attempts at different positions
read different runs: no `{int}1{int}1...` (exponential backtracking) and no `{int} abc` tried at
every digit of a long number (quadratic). `{rest}` is `.*` at the very end and always succeeds at
once, so it needs neither. Without `match`, the literal text itself is the pattern. Classes are
ASCII and spelled out (no `\\d`, no `\\s`), so Python and JavaScript agree on them.

Capability numbers (`widen`): where the cell's architectures hold two or more of one major
(sm_120 and sm_121), a capability number of that family in the literal text (`sm_120`, which
also stands for `sm120`, `sm_120a` and `compute_120` once normalised; a bare `120a`; `SM 12.0`,
`capability 12.0`, `12.0a`) matches the same text with any number of the family: a GB10 prints
`sm_121a` where an RTX 5090 prints `sm_120a`. Numbers the cell does not cover (sm_100, sm_90)
stay as written, and so does every number of a cell that covers one architecture of a major.
The alternatives differ in one digit, so the pattern stays unambiguous and linear.

Capability placeholders (`only`): a family's pattern (kb.triage.familyanswer) is about sm_120 and
sm_121 alone, so there an `{int}` or `{num}` right after `sm_`, `sm`, `cc`, `arch` or `capability`
(`with CUDA capability sm_{int} is not compatible`, `device capability: {int}`) takes only those
numbers (`120`/`121`, or `12.0`/`12.1` for `{num}`), the whole run of its characters as before: an
H100's `sm_90` line is no family line. Entries' placeholders stay as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from kb.records.normalise import PRODUCED_WORDS, normalise


@dataclass(frozen=True)
class Placeholder:
    regex: str  # what it matches in a normalised line (non-capturing groups only)
    before: str  # one-character class: the literal text before it must not end with one of these
    after: str  # one-character class: the literal text after it must not start with one of these
    says: str  # `after` in words, for messages ("may not be followed by ...")
    says_before: str = ""  # `before` in words, when it differs


_DIGIT = "[0-9]"
_PATH = "[^ \\t\\n\\r\\f\\v'\",;()]"
_WORDISH = "[a-z0-9_.]"

SPECS = {
    "int": Placeholder("[0-9]+", _DIGIT, _DIGIT, "a digit"),
    "num": Placeholder("-?[0-9]+(?:\\.[0-9]+)?", "[0-9.\\-]", "[0-9.\\-]", "a digit, '.' or '-'"),
    "hex": Placeholder("0x[0-9a-f]+", "[0-9a-fx]", "[0-9a-fx]", "a hex digit or 'x'"),
    # A size's space and unit letters sit between its number and its end, a bounded stretch:
    # only its number must start a run, and it ends with its unit.
    "size": Placeholder("[0-9]+(?:\\.[0-9]+)? ?(?:[kmgt]i?b|bytes|b)", "[0-9.]", "[a-z0-9_]",
                        "a letter, digit or '_' (its unit ends it)", "a digit or '.'"),
    "path": Placeholder(_PATH + "+", _PATH, _PATH, "anything but white space, a quote or , ; ( )"),
    "pid": Placeholder("[0-9]+", _DIGIT, _DIGIT, "a digit"),
    "id": Placeholder("[a-z_][a-z0-9_.]*", _WORDISH, _WORDISH, "a letter, digit, '_' or '.'"),
    "rest": Placeholder(".*", "", "", "anything"),
}
PLACEHOLDERS = {name: spec.regex for name, spec in SPECS.items()}
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_WORD = re.compile(r"[a-z0-9_]+")
MIN_ANCHOR = 4
# Wrapped around a symptom's pattern: a named symptom matches whole words only.
WORD_EDGE, WORD_END = "(?:^|[^a-z0-9_])", "(?:$|[^a-z0-9_])"


class PatternError(ValueError):
    pass


@dataclass(frozen=True)
class Compiled:
    source: str  # regular expression over normalised, lower-cased lines
    anchor: str  # a word every matching raw line contains (lower case), for the prefilter
    literal: bool  # True when no placeholder is used
    words: tuple[str, ...] = ()  # every word every matching raw line contains (the anchor among them)
    edges: tuple[str, ...] = ()  # the first and the last of them in the literal text (kb.triage.wrapped)


def _literal(value: str) -> str:
    """A literal part as a normalised line shows it: normalised, with the spaces at its edges kept."""
    piece = normalise(value)
    if not piece:
        return " " if value else ""
    lead = " " if value[:1].isspace() else ""
    trail = " " if value[-1:].isspace() else ""
    return lead + piece + trail


@lru_cache(maxsize=None)
def _class(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _shown(template: str, column: int, char: str) -> str:
    """The character at `column` (1-based) as the contributor wrote it, if that is the one meant."""
    written = template[column - 1: column]
    return repr(written if written.lower() == char else char)


def _ambiguity(template: str, spans: list[tuple[str, str, int, int]]) -> str | None:
    """Why the pattern is ambiguous (None when it is not): a placeholder next to literal text
    that starts or ends with a character the placeholder can itself match."""
    for i, (kind, value, start, _) in enumerate(spans):
        if kind != "slot" or value == "rest":
            continue
        spec, slot = SPECS[value], "{" + value + "}"
        if i + 1 < len(spans):
            text = _literal(spans[i + 1][1])
            if text and _class(spec.after).fullmatch(text[0]):
                column = spans[i + 1][2] + 1
                return (f"{slot} at column {start + 1} is followed by {_shown(template, column, text[0])} "
                        f"(column {column}), and {slot} may not be followed by {spec.says}: where it ends "
                        f"would be ambiguous; start the text after it with a character it cannot match, such "
                        f"as a space, and let {slot} take the characters up to there")
        if i > 0:
            text = _literal(spans[i - 1][1])
            if text and _class(spec.before).fullmatch(text[-1]):
                column = start
                return (f"{slot} at column {start + 1} follows {_shown(template, column, text[-1])} "
                        f"(column {column}), and {slot} may not follow {spec.says_before or spec.says}: where it "
                        f"starts would be ambiguous; end the text before it with a character it cannot match, "
                        f"such as a space, or let {slot} take that character too")
    return None


def _spans(template: str) -> list[tuple[str, str, int, int]]:
    """(kind, value, start, end) of each part, literal text merged, or PatternError."""
    parts: list[tuple[str, str, int, int]] = []
    position = 0
    for token in _TOKEN.finditer(template):
        if token.start() > position:
            parts.append(("text", template[position:token.start()], position, token.start()))
        position = token.end()
        raw = token.group(0)
        if raw in ("{{", "}}"):
            parts.append(("text", raw[0], token.start(), token.end()))
        elif raw in ("{", "}"):
            raise PatternError(f"lone {raw!r} at column {token.start() + 1}; write {raw * 2!r} for a literal brace")
        else:
            name = token.group(1)
            if name not in SPECS:
                raise PatternError(f"unknown placeholder {{{name}}} at column {token.start() + 1}; "
                                   f"use one of {', '.join('{' + n + '}' for n in SPECS)}")
            if parts and parts[-1][0] == "slot":
                raise PatternError(f"placeholders {{{parts[-1][1]}}} and {{{name}}} touch at column "
                                   f"{token.start() + 1}; put literal text between them")
            parts.append(("slot", name, token.start(), token.end()))
    if position < len(template):
        parts.append(("text", template[position:], position, len(template)))
    merged: list[tuple[str, str, int, int]] = []
    for kind, value, start, end in parts:
        if kind == "text" and merged and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + value, merged[-1][2], end)
        else:
            merged.append((kind, value, start, end))
    return merged


def parse(template: str) -> list[tuple[str, str]]:
    """[('text', literal) | ('slot', name)], or PatternError naming what is wrong and where."""
    spans = _spans(template)
    for i, (kind, value, _, _) in enumerate(spans):
        if kind == "slot" and value == "rest" and i != len(spans) - 1:
            raise PatternError("{rest} matches to the end of the line, so it must come last")
    if not any(kind == "text" and value.strip() for kind, value, _, _ in spans):
        raise PatternError("a pattern needs some literal text, not only placeholders")
    why = _ambiguity(template, spans)
    if why:
        raise PatternError(why)
    return [(kind, value) for kind, value, _, _ in spans]


def _stable_words(texts: list[str], family: dict[int, tuple[int, ...]] | None = None) -> list[str]:
    """Words of the literal parts that any matching raw line contains as they are (a capability
    number `widen` lets vary is no such word)."""
    return [w for text in texts for w in _WORD.findall(_CAPABILITY.sub(lambda m: " " if _widened(m, family) else m.group(0),
                                                                        normalise(text)))
            if w in text.lower() and not PRODUCED_WORDS.match(w)]


# A capability number in a normalised literal: `sm_120` (the normaliser's spelling of sm120,
# SM_120a, compute_120f), a bare `120a`/`121f`, and `12.0` after `sm`, `cc`, `arch` or
# `capability` or with an a/f suffix. Groups: the text before the number, the major, the minor,
# the text after it.
_CAPABILITY = re.compile(
    r"\b(sm_)(1[0-2])([0-9])()\b"
    r"|\b()(1[0-2])([0-9])([af])\b"
    r"|\b((?:sm|cc|arch|capability)[ _:=]*)(1[0-2])\.([0-9])([af]?)\b"
    r"|\b()(1[0-2])\.([0-9])([af])\b")


def family(architectures) -> dict[int, tuple[int, ...]]:
    """Major -> the minors a cell covers, for majors it covers two or more of ('sm_120', 'sm_121'
    -> {12: (0, 1)}): the capability numbers `widen` lets stand for one another."""
    minors: dict[int, set[int]] = {}
    for arch in architectures:
        digits = re.fullmatch(r"sm_([0-9]{2,3})", arch)
        if digits:
            number = digits.group(1)
            minors.setdefault(int(number[:-1]), set()).add(int(number[-1]))
    return {major: tuple(sorted(found)) for major, found in minors.items() if len(found) >= 2}


def _parts(match: re.Match) -> tuple[str, str, str, str, bool]:
    """(before, major, minor, after, decimal) of a _CAPABILITY match."""
    groups = match.groups()
    for at in range(0, 16, 4):
        if groups[at + 1] is not None:
            before, major, minor, after = groups[at: at + 4]
            return before, major, minor, after, at >= 8
    raise AssertionError(match.group(0))


def _widened(match: re.Match, family: dict[int, tuple[int, ...]] | None) -> bool:
    if not family:
        return False
    _, major, minor, _, _ = _parts(match)
    return int(minor) in family.get(int(major), ())


def widen(piece: str, family: dict[int, tuple[int, ...]] | None) -> str:
    """The expression of a normalised literal piece: escaped, each capability number of the
    family (see the module docstring) an alternation of the family's numbers."""
    out, at = "", 0
    for found in _CAPABILITY.finditer(piece):
        if not _widened(found, family):
            continue
        before, major, _, after, decimal = _parts(found)
        minors = "|".join(str(m) for m in family[int(major)])
        out += re.escape(piece[at:found.start()]) + re.escape(before) + re.escape(major + ("." if decimal else ""))
        out += f"(?:{minors})" + re.escape(after)
        at = found.end()
    return out + re.escape(piece[at:])


def _anchor(words: list[str]) -> str:
    """The word to look for first: code identifiers (with `_` or digits) are rare in log noise,
    plain English words are not; among equals, the longest."""
    words = [w for w in words if len(w) >= MIN_ANCHOR and not w.isdigit()] or words
    return max(words, key=lambda w: (any(c == "_" or c.isdigit() for c in w), len(w))) if words else ""


def compile_signature(text: str, match: str | None = None, architectures=(), only=()) -> Compiled:
    """The pattern of one signature (PatternError when `match` is malformed or ambiguous).
    `architectures`: the cell's, whose families of capability numbers the pattern lets vary
    (`widen`), unless that would leave the pattern no word to be found by. `only`: architectures
    (`sm_120`, ...) that a capability placeholder stands for (`_capability_slot`); none: any number."""
    widened = family(architectures)
    if widened:
        compiled = _compile(text, match, widened, only)
        if compiled.anchor:
            return compiled
    return _compile(text, match, None, only)


# Literal text (normalised) that a capability number follows: `sm_`, `sm`, `cc`, `arch` or
# `capability`, then spaces or `_:=` (`capability sm_`, `device capability: `).
_CAPABILITY_BEFORE = re.compile(r"(?:^|[^a-z0-9_])(?:sm|cc|arch|capability)[ _:=]*$")


def _capability_slot(slot: str, before: str, only) -> str | None:
    """The expression of an `{int}` or `{num}` placeholder after capability words (`before`, the
    normalised literal before it) that stands only for the architectures `only` ('sm_120' -> `120`,
    and for `{num}` `12.0` too); None where the placeholder is no such one. The alternatives take
    the whole run of the placeholder's characters (a lookahead for one more), as the placeholder does."""
    if not only or slot not in ("int", "num") or not _CAPABILITY_BEFORE.search(before):
        return None
    digits = [a[3:] for a in only if re.fullmatch(r"sm_[0-9]{2,3}", a)]
    forms = digits + ([f"{d[:-1]}.{d[-1]}" for d in digits] if slot == "num" else [])
    return "(?:" + "|".join(re.escape(f) for f in forms) + f")(?!{SPECS[slot].after})"


def _compile(text: str, match: str | None, widened: dict[int, tuple[int, ...]] | None, only=()) -> Compiled:
    parts = parse(match) if match is not None else [("text", text)]
    source = ""
    literals = []
    groups = 0
    for i, (kind, value) in enumerate(parts):
        if kind == "slot":
            spec = SPECS[value]
            if value == "rest":
                source += spec.regex
                continue
            restricted = _capability_slot(value, _literal(parts[i - 1][1]), only) if i > 0 else None
            if restricted is not None:
                source += restricted
                continue
            if i == 0:
                source += f"(?<!{spec.before})"
            groups += 1
            # (?:...) keeps the backreference apart from a digit that may follow it.
            source += f"(?:(?=({spec.regex}))\\{groups})"
        else:
            source += widen(_literal(value), widened)
            literals.append(value)
    words = _stable_words(literals, widened)
    return Compiled(source=source, anchor=_anchor(words), literal=match is None,
                    words=tuple(sorted(set(words))), edges=(words[0], words[-1]) if words else ())


def search_source(compiled: Compiled, kind: str) -> str:
    """The expression `kb match`, KB047 and the triage page search a normalised line with."""
    return f"{WORD_EDGE}{compiled.source}{WORD_END}" if kind == "symptom" else compiled.source


@lru_cache(maxsize=None)
def regex(source: str) -> re.Pattern:
    """The compiled expression (cached: `kb match` asks once per candidate line)."""
    return re.compile(source)


def matches(compiled: Compiled, line: str) -> bool:
    return regex(compiled.source).search(normalise(line)) is not None
