"""Stage 4, render: validated cells -> pages (HTML bodies with their titles and descriptions).

Engine-independent: nothing here knows mkdocs. Each distinct literal string gets one page at
`e/<slug>/`: the cell page for a cell's first signature, a short pointer page for its other
signatures, or a disambiguation page when several cells print the same string. Index pages
group cells by facet (`kb.facets`). Links between pages are relative, so the site works from
any sub-path.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from kb import charts, facets, freshness, matrix, prose
from kb.lint import Cell
from kb.slug import slug

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "pages"
NEWEST = 10


@dataclass(frozen=True)
class Page:
    url: str  # relative to the site root, "" for the home page, always ending in "/" otherwise
    title: str  # plain text; escaped by whoever writes it into markup
    description: str
    body: str  # HTML
    kind: str  # cell | pointer | disambiguation | index
    updated: str | None = None  # the newest `updated` date of the cells shown (for sitemaps)
    jsonld: str | None = None  # structured data for search engines, ready for a <script> element

    @property
    def src(self) -> str:
        """Source path of the page for a static-site engine with directory URLs."""
        return self.url.rstrip("/") + ".md" if self.url else "index.md"


def rel(here: str, to: str) -> str:
    """Relative link from page URL `here` to page URL `to` (both site-root relative)."""
    target = posixpath.relpath(to or ".", here or ".")
    if target == ".":
        return "./"
    return target + ("" if "#" in target else "/")


def string_url(text: str) -> str:
    return f"e/{slug(text)}/"


def facet_url(facet: str, value: str | None = None) -> str:
    return f"by/{facet}/" + (f"{value}/" if value else "")


class Site:
    """The cells and every URL derived from them."""

    def __init__(self, cells: list[Cell]):
        self.cells = sorted(cells, key=lambda c: c.id)
        self.by_id = {c.id: c for c in self.cells}
        self.owners: dict[str, list[Cell]] = defaultdict(list)
        for cell in self.cells:
            for signature in cell.entry.signatures:
                if cell not in self.owners[signature.text]:
                    self.owners[signature.text].append(cell)

    def url(self, cell: Cell) -> str:
        return string_url(cell.entry.signatures[0].text)

    @cached_property
    def facet_index(self) -> dict[str, dict[str, tuple[str, list[Cell]]]]:
        """facet -> value key -> (display name, cells), values and cells in a fixed order."""
        index: dict[str, dict[str, tuple[str, list[Cell]]]] = {}
        for facet in facets.FACETS:
            groups: dict[str, tuple[str, list[Cell]]] = {}
            for cell in self.cells:
                for value, name in facets.values(facet, cell.entry):
                    groups.setdefault(value, (name, []))[1].append(cell)
            index[facet] = dict(sorted(groups.items()))
        return index

    def listed_in(self, cell: Cell) -> list[tuple[str, str, str]]:
        """(facet title, value name, url) of every index page that lists `cell`."""
        return [(facets.FACETS[facet], name, facet_url(facet, value))
                for facet in facets.FACETS for value, name in facets.values(facet, cell.entry)]

    def newest(self, count: int = NEWEST) -> list[Cell]:
        return sorted(self.cells, key=lambda c: (c.entry.published, c.entry.updated, c.id), reverse=True)[:count]

    def page_urls(self) -> list[str]:
        """Every URL this site publishes for its cells and indexes, sorted."""
        urls = {string_url(text) for text in self.owners}
        urls.update({"by/", "triage/"})
        for facet, groups in self.facet_index.items():
            urls.add(facet_url(facet))
            urls.update(facet_url(facet, value) for value in groups)
        urls.update((matrix.URL, freshness.URL, "rules/"))
        return sorted(urls)


class Renderer:
    def __init__(self, site: Site):
        self.site = site
        self.env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                               trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
        self.env.filters["markdown"] = prose.render
        self.env.globals.update(
            facets=facets, rel=rel, site=site, facet_url=facet_url,
            STATUS=facets.STATUS_NAMES, SYMPTOM=facets.SYMPTOM_NAMES, KIND=facets.KIND_NAMES,
            package_name=facets.package_name, repository=facets.repository,
        )
        self.env.globals.update(chart_svg=charts.svg, chart_shown=charts.charted)

    def _render(self, template: str, here: str, **context) -> str:
        return self.env.get_template(template).render(here=here, **context)

    def cell(self, cell: Cell) -> Page:
        here = self.site.url(cell)
        return Page(here, cell.entry.signatures[0].text, cell.entry.summary,
                    self._render("cell.html", here, cell=cell, e=cell.entry), "cell", cell.entry.updated)

    def string_page(self, text: str) -> Page | None:
        """Page of a literal string that is not some cell's first signature (else None)."""
        owners = self.site.owners[text]
        here = string_url(text)
        if len(owners) > 1:
            summary = f"{len(owners)} different failures print this string: " + "; ".join(
                c.entry.title for c in owners) + "."
            return Page(here, text, summary, self._render("disambiguation.html", here, text=text, cells=owners),
                        "disambiguation", max(c.entry.updated for c in owners))
        (owner,) = owners
        if owner.entry.signatures[0].text == text:
            return None
        return Page(here, text, owner.entry.summary,
                    self._render("pointer.html", here, text=text, cell=owner), "pointer", owner.entry.updated)

    def indexes(self) -> list[Page]:
        pages = [Page("by/", "Browse the index", "Every way to browse the cells: by GPU, architecture, "
                      "component, symptom, status and upstream repository.",
                      self._render("browse.html", "by/"), "index")]
        for facet, title in facets.FACETS.items():
            groups = self.site.facet_index[facet]
            here = facet_url(facet)
            pages.append(Page(here, title, f"Cells of the Blackwell serving-failure index, {title.lower()}.",
                              self._render("facet.html", here, facet=facet, title=title, groups=groups), "index"))
            for value, (name, cells) in groups.items():
                here = facet_url(facet, value)
                pages.append(Page(here, f"{title.removeprefix('By ').capitalize()}: {name}",
                                  f"{len(cells)} Blackwell serving failure cell(s) for {name}.",
                                  self._render("listing.html", here, facet=facet, facet_title=title, name=name,
                                               cells=cells), "index"))
        return pages

    def triage(self) -> Page:
        return Page("triage/", "Triage a log", "Paste a whole log and get the cells that match it; "
                    "matching runs in your browser and nothing is uploaded.",
                    self._render("triage.html", "triage/"), "index")

    def newest(self, here: str = "") -> str:
        return self._render("newest.html", here, cells=self.site.newest())

    def all_pages(self) -> list[Page]:
        pages = [self.cell(cell) for cell in self.site.cells]
        pages += [p for text in sorted(self.site.owners) if (p := self.string_page(text)) is not None]
        pages += self.indexes()
        pages.append(self.triage())
        pages += [matrix.page(self), freshness.page(self)]
        from kb.rulespage import rules_page  # it builds on Page, defined here

        pages.append(rules_page(self))
        return pages
