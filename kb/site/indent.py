"""Stage 5, build: the indentation the theme writes at the start of its lines, taken out of a built page.

Material indents its templates' output (the side navigation most of all: about 4.8 KB of a 40 KB cell
page at N = 1,000 is spaces at the start of lines). A browser collapses a run of spaces after a newline
into the newline's one space, so removing them changes nothing a reader sees, except where whitespace
is kept: inside <pre> and <textarea>, and in <script> and <style>, whose text is code. Those, comments,
and the inside of every tag (an attribute value may hold a newline and spaces that matter) are left
byte for byte; only text between tags loses the spaces and tabs that follow a newline. The newline
itself stays, so no two words are joined.

hooks/kb_pages.py applies it in on_post_page to every page the theme renders, the stand-ins of
kb.site.shell included, so a page filled into a shell gets the same chrome as one the theme renders.
"""

from __future__ import annotations

import re

# One token of HTML that is left as it is: a comment, an element whose text keeps its whitespace (from
# its start tag to its end tag), or one tag (a quoted attribute value may hold '>' or a newline).
_KEPT = re.compile(
    r"<!--.*?-->"
    r"|<(pre|textarea|script|style)\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>.*?</\1\s*>"
    r"|<[A-Za-z/!?](?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
    re.DOTALL | re.IGNORECASE)
_INDENT = re.compile(r"\n[ \t]+")


def _text(text: str) -> str:
    return _INDENT.sub("\n", text)


def strip(html: str) -> str:
    """`html` without spaces and tabs after a newline in its text; comments, tags and the contents of
    <pre>, <textarea>, <script> and <style> as they were. The start of `html` counts as the middle of
    a line: a piece of a page cut after some text (kb.site.incremental's splices) is stripped the same
    as in the whole page."""
    out: list[str] = []
    position = 0
    for kept in _KEPT.finditer(html):
        out.append(_text(html[position:kept.start()]))
        out.append(kept.group())
        position = kept.end()
    out.append(_text(html[position:]))
    return "".join(out)
