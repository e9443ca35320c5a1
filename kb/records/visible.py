"""Untrusted text made safe to print on a terminal: controls written out, long text cut short.

Log lines (`kb match`), facts files (`kb doctor`) and entry files (`kb check`) are written by
whoever wrote them. Printed raw, an ESC sequence can erase a line and print a fake `ok`, a
carriage return can overwrite what came before, and a bidirectional override can show text in
another order than it is stored. `visible` writes every such character as an escape (`\\x1b`,
`\\r`, `\\u202e`), so what is printed is what is there. Ordinary text, including any other
language, passes through unchanged.

Backslashes are not doubled: this is for reading, not for round trips (a log line that holds the
four characters `\\x1b` reads the same as one that holds ESC; use `--json` for exact data).
"""

from __future__ import annotations

import unicodedata

# Cc: C0 controls, DEL, C1 controls (ESC, CR, BEL, CSI ...). Cf: format characters, among them the
# bidirectional controls U+202A-202E, U+2066-2069, U+200E/U+200F, U+061C, zero-width characters and
# the BOM. Zl, Zp: U+2028 and U+2029, which some terminals and editors take as line breaks.
# Cs: lone surrogates, which cannot even be encoded for output. Cn: unassigned code points and
# the non-characters (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF), whose rendering nobody can predict.
RISKY_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def risky(char: str) -> bool:
    """Whether a terminal could act on `char` or show it as something else."""
    return unicodedata.category(char) in RISKY_CATEGORIES


def first_risky(text: str) -> int:
    """Index of the first risky character in `text`, -1 when there is none."""
    if text.isprintable():  # every risky category is non-printable: the common case costs one call
        return -1
    return next((i for i, char in enumerate(text) if risky(char)), -1)


def escape(char: str) -> str:
    """One character as a Python-style escape: `\\x1b`, `\\u202e`, `\\U000e0001`, `\\n`."""
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, limit: int | None = None) -> str:
    """`text` with each risky character escaped; at most `limit` characters when one is given,
    a longer text cut (never inside an escape) and ended with `... (N characters)`, N the length
    of the original text."""
    if limit is None or len(text) <= limit:
        shown = text if first_risky(text) == -1 else "".join(escape(c) if risky(c) else c for c in text)
        if limit is None or len(shown) <= limit:
            return shown
    note = f"... ({len(text):,} characters)"
    budget = max(limit - len(note), 1)
    parts: list[str] = []
    used = 0
    for char in text[:budget]:  # each character shows as one or more: no need to look further
        piece = escape(char) if risky(char) else char
        if used + len(piece) > budget:
            break
        parts.append(piece)
        used += len(piece)
    return "".join(parts) + note
