"""Pages filled into a shell: the theme renders one stand-in page, and every page of the same
kind is that output with its own values put where the stand-in's were.

Cell, pointer and disambiguation pages all sit at `e/<slug>/`, outside the navigation, so the
theme gives them the same chrome byte for byte (same depth, same relative links, nothing in the
navigation marked current). Rendering the theme once per kind instead of once per page is what
keeps a site of thousands of cells fast to build; `tests/test_shell.py` builds a site both ways
and compares every file.

The stand-in's values are tokens that escaping leaves as they are (letters and digits only); a
page's values replace them in one pass over the shell, so a value that happens to contain a
token's text is never itself replaced.
"""

from __future__ import annotations

import re

from markupsafe import escape

from kb.page import Page

_TOKEN = "kbshell{}9f2c7a"
KINDS = ("plain", "with-jsonld")
TOKENS = {name: _TOKEN.format(name) for name in ("title", "description", "body", "jsonld")}
# The theme adds an <h1> of the title to a page whose content has none; every page filled in has
# its own, so the stand-in's body says it has one too (the comment goes with the token).
TOKENS["body"] += "<!--<h1-->"
# Each kind's stand-in needs a URL of its own: the URL token ends in the kind's initial.
URL_TOKENS = {kind: _TOKEN.format("url") + kind[0] for kind in KINDS}
_NAME = {token: name for name, token in TOKENS.items()} | {token: "url" for token in URL_TOKENS.values()}
_SPLIT = re.compile("|".join(re.escape(t) for t in sorted(_NAME, key=len, reverse=True)))
PREFIX = "e/"


def fits(page: Page) -> bool:
    """Whether `page` can be filled into a shell: one folder below e/ (where cells live), with
    its own <h1>."""
    return page.url.startswith(PREFIX) and page.url.count("/") == 2 and "<h1" in page.body


def kind_of(page: Page) -> str:
    """Pages with structured data (cells) and without it get different shells (og:type differs)."""
    return "with-jsonld" if page.jsonld else "plain"


def stand_in(kind: str) -> Page:
    """The page the theme renders for a shell of `kind`; its URL is a token too."""
    return Page(url=f"{PREFIX}{URL_TOKENS[kind]}/", title=TOKENS["title"], description=TOKENS["description"],
                body=TOKENS["body"], kind="shell", jsonld=TOKENS["jsonld"] if kind == "with-jsonld" else None)


class Shell:
    """The theme's output for a stand-in, split at its tokens."""

    def __init__(self, html: str):
        self.parts: list[str] = []  # literal text and field names, alternating (names at odd places)
        position = 0
        for found in _SPLIT.finditer(html):
            self.parts.append(html[position:found.start()])
            self.parts.append(_NAME[found.group()])
            position = found.end()
        self.parts.append(html[position:])

    def fill(self, page: Page) -> str:
        values = {"title": str(escape(page.title)), "description": str(escape(page.description)),
                  "body": page.body, "jsonld": page.jsonld or "", "url": page.url[len(PREFIX):-1]}
        return "".join(values[part] if i % 2 else part for i, part in enumerate(self.parts))


def without(pages: list[Page]) -> tuple[list[Page], list[Page]]:
    """(pages the engine renders, pages filled into shells)."""
    return [p for p in pages if not fits(p)], [p for p in pages if fits(p)]
