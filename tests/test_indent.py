"""The theme's indentation taken out of built pages (kb.site.indent) changes no byte a reader sees:
every element, its attributes and its text are the same, and <pre> blocks are the same bytes."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, _build
from html_page import Element, _Builder
from kb.site import indent

KEPT = ("pre", "textarea", "script", "style")


def test_indentation_goes_from_text_and_stays_where_whitespace_is_kept():
    page = ("<ul>\n    <li>one</li>\n\t  <li>two\n      words</li>\n</ul>\n  <pre>  a\n    b\n</pre>\n"
            "  <textarea>\n  x</textarea>\n  <script>\n    if (a) {\n      b();\n    }\n  </script>\n"
            "  <style>\n  p { color: red }\n  </style>\n  <!--\n    kept\n  -->\n"
            "  <a title=\"line\n    two\" data-x='>\n   '>link\n   text</a>")
    assert indent.strip(page) == (
        "<ul>\n<li>one</li>\n<li>two\nwords</li>\n</ul>\n<pre>  a\n    b\n</pre>\n"
        "<textarea>\n  x</textarea>\n<script>\n    if (a) {\n      b();\n    }\n  </script>\n"
        "<style>\n  p { color: red }\n  </style>\n<!--\n    kept\n  -->\n"
        "<a title=\"line\n    two\" data-x='>\n   '>link\ntext</a>")


def test_the_start_of_a_piece_is_the_middle_of_a_line():
    # A splice of kb build starts after a page's body, mid-line: its first spaces are not indentation.
    assert indent.strip("   </main>\n   <footer>") == "   </main>\n<footer>"
    assert indent.strip("") == ""
    assert indent.strip("<PRE>\n  x</PRE>\n  y") == "<PRE>\n  x</PRE>\ny"


def _tree(text: str) -> Element:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root


def _shape(element: Element, kept: bool = False) -> list:
    """Each element's tag and attributes, and each text with its white-space runs collapsed to one
    space (a browser's rendering of it) except inside an element that keeps white space."""
    out = []
    for child in element.children:
        if isinstance(child, str):
            out.append(child if kept else re.sub(r"\s+", " ", child))
        else:
            out.append((child.tag, tuple(child.attrs.items()), _shape(child, kept or child.tag in KEPT)))
    return out


def _kept_blocks(text: str) -> list[str]:
    """The <pre> and <textarea> elements of a page, as written."""
    return [m.group() for m in re.finditer(r"<(pre|textarea)\b.*?</\1>", text, re.S | re.I)]


@pytest.fixture(scope="module")
def both_sites(tmp_path_factory):
    """The fixture site built with the indentation stripped and without (kb.site.indent.strip
    replaced by the identity for the second build)."""
    stripped = _build(FIXTURES / "site", tmp_path_factory.mktemp("stripped") / "site")
    patch = pytest.MonkeyPatch()
    patch.setattr(indent, "strip", lambda html: html)
    try:
        raw = _build(FIXTURES / "site", tmp_path_factory.mktemp("raw") / "site")
    finally:
        patch.undo()
    return stripped, raw


@pytest.mark.build
def test_every_page_renders_the_same_without_the_indentation(both_sites):
    stripped, raw = both_sites
    pages = sorted(p.relative_to(raw) for p in raw.rglob("*.html") if "pagefind" not in p.parts)
    assert len([p for p in pages if p.parts[0] == "e"]) > 5
    assert sorted(p.relative_to(stripped) for p in stripped.rglob("*.html") if "pagefind" not in p.parts) == pages
    saved = blocks_seen = 0
    for path in pages:
        before = (raw / path).read_text(encoding="utf-8")
        after = (stripped / path).read_text(encoding="utf-8")
        assert _shape(_tree(after)) == _shape(_tree(before)), path
        blocks = _kept_blocks(before)
        assert _kept_blocks(after) == blocks, path
        blocks_seen += len(blocks)
        saved += len(before) - len(after)
    assert blocks_seen > 0, "no <pre> on any page: the test would not see a change to one"
    assert saved > 1000 * len(pages), "the theme's indentation was not taken out"
