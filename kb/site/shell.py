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

import datetime
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import escape

from kb.site.generate import Generated, generate
from kb.site.origin import origin_repo
from kb.site.page import Page

if TYPE_CHECKING:  # kb.site.hookconfig declares its plan with this module's Layout
    from kb.site.hookconfig import Settings

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

    @classmethod
    def from_parts(cls, parts: list[str]) -> "Shell":
        """A shell kept as its `parts` (literal text and field names, alternating)."""
        if len(parts) % 2 != 1 or any(name not in (*TOKENS, "url") for name in parts[1::2]):
            raise ValueError("not the parts of a shell")
        shell = cls.__new__(cls)
        shell.parts = parts
        return shell

    def fill(self, page: Page) -> str:
        if page.canonical and page.canonical.rstrip("/").rpartition("/")[0] != page.url.rstrip("/").rpartition("/")[0]:
            # The shell's URL token is the page's last segment: it names only a page in the same folder.
            raise ValueError(f"{page.url}: canonical {page.canonical} is not in the page's folder")
        values = {"title": str(escape(page.title)), "description": str(escape(page.description)),
                  "body": page.body, "jsonld": page.jsonld or "",
                  "url": (page.canonical or page.url).rstrip("/").rpartition("/")[2]}
        return "".join(values[part] if i % 2 else part for i, part in enumerate(self.parts))


def without(pages: list[Page], in_nav: set[str]) -> tuple[list[Page], list[Page]]:
    """(pages the engine renders, pages filled into shells); `in_nav`: source paths in the navigation."""
    return [p for p in pages if not fits(p, in_nav)], [p for p in pages if fits(p, in_nav)]


# A marker a hand-written page puts where generated content goes (`<!-- kb:newest -->`).
MARKER = re.compile(r"<!--\s*kb:([a-z-]+)\s*-->")


@dataclass
class Layout:
    """What a site engine builds, and how: the pages the theme renders one by one (`rendered`),
    the stand-ins it renders once per folder (`stand_ins`, by kind) and the pages filled into
    them (`filled`), the data files written as they are (`generated.files`)."""

    generated: Generated
    rendered: list[Page]
    filled: list[Page]
    stand_ins: dict[str, Page]
    sitemap: str  # the <url> elements of the filled pages, which the theme's sitemap.xml puts in as they are
    epoch: int  # the build's date (SOURCE_DATE_EPOCH): the newest record's `updated`
    repo_url: str | None


def layout(settings: Settings, site_url: str | None, nav, config_dir: Path, checked=None) -> Layout:
    """Generate the site `settings` describe (kb.site.hookconfig) and split it between the theme and
    the shells; `nav`: the engine's navigation. Raises kb.site.generate.GenerateError."""
    # The repository of the cells' Edit and Report links: the settings', or the checkout's origin.
    repo_url = settings.repo_url or origin_repo(config_dir)
    generated = generate(settings.entries, site_url or None, settings.url_lock, settings.redirects, checked=checked,
                         repo_url=repo_url, id_lock=settings.id_lock)
    in_nav = nav_sources(nav or [])
    rendered, filled = without(generated.pages, in_nav) if settings.shells else (generated.pages, [])
    stand_ins = {kind: stand_in(kind) for kind in sorted({kind_of(p) for p in filled})}
    newest = max((p.updated for p in generated.pages if p.updated), default="2026-01-01")
    epoch = int(datetime.datetime.fromisoformat(newest + "T00:00:00+00:00").timestamp())
    return Layout(generated, rendered, filled, stand_ins, sitemap_xml(filled, site_url), epoch, repo_url)


def sitemap_xml(pages: list[Page], site_url: str | None) -> str:
    """The sitemap's <url> elements of `pages` (the theme lists the pages it renders itself)."""
    lines = []
    for page in pages:
        if page.canonical:  # a sitemap lists the pages to index: this one defers to its canonical
            continue
        lines.append(f"    <url>\n         <loc>{escape((site_url or '/') + page.url)}</loc>\n"
                     + (f"         <lastmod>{escape(page.updated)}</lastmod>\n" if page.updated else "")
                     + "    </url>")
    return "\n".join(lines)


def nav_sources(nav) -> set[str]:
    """The source paths that a mkdocs-style navigation lists."""
    found: set[str] = set()
    for item in nav if isinstance(nav, list) else [nav]:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            found |= nav_sources(value)
        elif isinstance(value, str):
            found.add(value)
    return found
