"""Record prose (Markdown) -> HTML that can hold nothing a contributor did not mean as text.

Two layers, each enough on its own:

1. markdown-it-py parses CommonMark with raw HTML switched off (`<img ...>` stays text) and a
   link validator that accepts `https://` URLs only: a `javascript:`, `data:` or relative link,
   inline or reference-style, is not a link and stays text. Images are not part of record prose
   (no host is allowed to serve them: charts are drawn from the measurements), and neither are
   headings (the page owns its outline), so those rules are off.
2. nh3 (the Ammonia sanitiser) then keeps only the elements and attributes listed below, with
   `https` as the only URL scheme, whatever the first layer produced.

`kb.records.schema` runs `problems()` on the same parse to tell a contributor early (KB042, KB043);
those messages are for people, this module is the defence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

if TYPE_CHECKING:
    from markupsafe import Markup

URL_SCHEMES = {"https"}
IMAGE_HOSTS: frozenset[str] = frozenset()  # record prose embeds no image from anywhere
TAGS = {"p", "br", "hr", "em", "strong", "code", "pre", "a", "ul", "ol", "li", "blockquote",
        "table", "thead", "tbody", "tr", "th", "td"}
ATTRIBUTES = {"a": {"href"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
STYLES = {"text-align"}  # the only style Markdown tables write
_OFF = ["image", "heading", "lheading", "html_block", "html_inline"]


def _https_only(url: str) -> bool:
    return url.strip().lower().startswith("https://")


def _parser(html: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": html}).enable("table")
    md.validateLink = _https_only
    return md


# Text without these cannot hold HTML, a link, an image or a heading (ATX `#`, or a setext
# underline of `=` or `-`): `problems()` need not parse it.
_SUSPECT = re.compile(r"[<\[#]|^ {0,3}[=-]", re.M)
_RENDER = _parser(html=False).disable(_OFF)
_INSPECT = _parser(html=True)
_INSPECT.validateLink = lambda url: True  # see every link the contributor wrote, to name it


def render(text: str) -> Markup:
    """Safe HTML of one record's Markdown prose."""
    # late: nh3 and MarkupSafe come with the site extra; `kb match` and `kb doctor` check records
    # (problems() below) but render none
    import nh3
    from markupsafe import Markup

    html = _RENDER.render(text)
    return Markup(nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES,
                            filter_style_properties=STYLES, link_rel="noopener noreferrer",
                            strip_comments=True))


def problems(text: str) -> Iterator[tuple[str, str, str, int]]:
    """(code, message, offending text, line within `text` from 1) for what the renderer would
    show as text instead of markup: raw HTML, links that are not https, images, headings."""
    if _SUSPECT.search(text):
        yield from parsed_problems(text)


def parsed_problems(text: str) -> Iterator[tuple[str, str, str, int]]:
    """`problems()` without the shortcut for text that cannot hold markup."""
    for token, line in _walk(_INSPECT.parse(text), 0):
        if token.type in ("html_block", "html_inline"):
            yield ("KB042", "raw HTML is not allowed in prose; put code in `backticks`", token.content.strip(), line)
        elif token.type == "link_open" and not _https_only(str(token.attrGet("href") or "")):
            yield ("KB043", "Markdown links must be https:// URLs", str(token.attrGet("href")), line)
        elif token.type == "image":
            yield ("KB043", "images are not allowed in prose (no host may serve them); link the page instead",
                   str(token.attrGet("src")), line)
        elif token.type == "heading_open":
            yield ("KB054", "headings are not allowed in prose (the page has its own); write a paragraph",
                   token.markup, line)


def _walk(tokens, line: int) -> Iterator:
    """Every token with the line it starts on (inline tokens take their block's line)."""
    for token in tokens:
        line = token.map[0] + 1 if token.map else line
        yield token, line
        if token.children:
            yield from _walk(token.children, line)
