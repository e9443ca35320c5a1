"""Stage 4, render: validated cells -> pages (HTML bodies with their titles and descriptions).

Engine-independent: nothing here knows mkdocs. Each distinct literal string gets one page at
`e/<slug>/`: the cell page for a cell's first signature, a short pointer page for its other
signatures, or a disambiguation page when several cells print the same string. Index pages
group cells by facet (`kb.facets`). Links between pages are relative, so the site works from
any sub-path.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from kb import charts, facets, freshness, matrix, prose
from kb.rulespage import rules_page
from kb.catalog import Site, facet_url, rel, string_url
from kb.page import Page
from kb.schema import Cell

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "pages"


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
        pages.append(rules_page(self))
        return pages
