"""Stage 4, catalog: the checked cells and every URL, facet and listing derived from them.

No Jinja, no Markdown: the renderer (`kb.pages`), the exports, triage and doctor all read the
site's shape from here. Links between pages are relative, so the site works from any sub-path.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from functools import cached_property

from kb import facets
from kb.schema import Cell
from kb.slug import slug

NEWEST = 10
MATRIX_URL = "matrix/"
FRESHNESS_URL = "freshness/"
RULES_URL = "rules/"


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
        urls.update((MATRIX_URL, FRESHNESS_URL, RULES_URL))
        return sorted(urls)
