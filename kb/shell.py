"""Pages filled into a shell: the theme renders one stand-in page, and every page of the same
kind is that output with its own values put where the stand-in's were.

Cell, pointer and disambiguation pages (`e/<slug>/`) and the pages of listings
(`by/gpu/rtx-5090/page-2/`) sit outside the navigation, so the theme gives all pages in one
folder the same chrome byte for byte (same relative links, nothing in the navigation marked
current). Rendering the theme once per folder instead of once per page is what keeps a site of
thousands of cells fast to build; `tests/test_shell.py` builds a site both ways and compares every file.

The stand-in's values are tokens that escaping leaves as they are (letters and digits only); a
page's values replace them in one pass over the shell, so a value that happens to contain a
token's text is never itself replaced.
"""

from __future__ import annotations

import re

from markupsafe import escape

from kb.page import Page

_TOKEN = "kbshell{}9f2c7a"
TOKENS = {name: _TOKEN.format(name) for name in ("title", "description", "body", "jsonld")}
# The theme adds an <h1> of the title to a page whose content has none; every page filled in has
# its own, so the stand-in's body says it has one too (the comment goes with the token).
TOKENS["body"] += "<!--<h1-->"


def fits(page: Page, in_nav: set[str]) -> bool:
    """Whether `page` can be filled into a shell: outside the navigation (so the theme marks no
    link of it as current), not the home page, with its own <h1>."""
    return bool(page.url) and page.src not in in_nav and "<h1" in page.body


def kind_of(page: Page) -> str:
    """Pages in one folder share their relative links (mkdocs writes the shortest relative path,
    which depends on the folder); with structured data (cells) or without it their head differs
    (og:type): one shell for each pair, named by the folder and j or p."""
    return page.url.rstrip("/").rpartition("/")[0] + ("/j" if page.jsonld else "/p")


def _url_token(kind: str) -> str:
    return _TOKEN.format("url" + kind[-1])


def stand_in(kind: str) -> Page:
    """The page the theme renders for a shell of `kind`: in the same folder, its name a token."""
    folder = kind[:-2]
    return Page(url=(folder + "/" if folder else "") + _url_token(kind) + "/", title=TOKENS["title"],
                description=TOKENS["description"], body=TOKENS["body"], kind="shell",
                jsonld=TOKENS["jsonld"] if kind.endswith("j") else None)


class Shell:
    """The theme's output for a stand-in of `kind`, split at its tokens."""

    def __init__(self, html: str, kind: str):
        names = {token: name for name, token in TOKENS.items()} | {_url_token(kind): "url"}
        split = re.compile("|".join(re.escape(t) for t in sorted(names, key=len, reverse=True)))
        self.parts: list[str] = []  # literal text and field names, alternating (names at odd places)
        position = 0
        for found in split.finditer(html):
            self.parts.append(html[position:found.start()])
            self.parts.append(names[found.group()])
            position = found.end()
        self.parts.append(html[position:])

    def fill(self, page: Page) -> str:
        values = {"title": str(escape(page.title)), "description": str(escape(page.description)),
                  "body": page.body, "jsonld": page.jsonld or "", "url": page.url.rstrip("/").rpartition("/")[2]}
        return "".join(values[part] if i % 2 else part for i, part in enumerate(self.parts))


def without(pages: list[Page], in_nav: set[str]) -> tuple[list[Page], list[Page]]:
    """(pages the engine renders, pages filled into shells); `in_nav`: source paths in the navigation."""
    return [p for p in pages if not fits(p, in_nav)], [p for p in pages if fits(p, in_nav)]
