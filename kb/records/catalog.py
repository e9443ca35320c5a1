"""Stage 4, catalog: the checked cells and every URL, facet and listing derived from them.

No Jinja, no Markdown: the renderer (`kb.site.pages`), the exports, triage and doctor all read the
site's shape from here. Links between pages are relative, so the site works from any sub-path.
A listing longer than `PER_PAGE` cells goes on over numbered pages (`paginate`): its first page
keeps the listing's URL, so no page grows with the number of cells.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property

from kb.cache import fingerprint
from kb.records import facets, ids
from kb.records.slug import slug
from kb.records.schema import Cell

NEWEST = 10
MATRIX_URL = "matrix/"
FRESHNESS_URL = "freshness/"
RULES_URL = "rules/"
FAMILIES_URL = "families/"  # the list of families; each family's page at families/<id>/ (kb.records.families)
PER_PAGE = 100  # cells on one listing page; a longer listing goes on at <url>2/, <url>3/, ...
PAGER_AROUND = 2  # the page list names the first and last page and this many either side of the current one


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


def paged_url(base: str, number: int) -> str:
    """URL of page `number` (from 1) of the listing at `base`: the first page keeps `base` (kb-all.js
    names the other pages of the every-failure listing by the same rule)."""
    return base if number == 1 else f"{base}{number}/"


def page_count(items: int, per_page: int | None = None) -> int:
    """Pages a listing of `items` takes; an empty listing still has its first page."""
    return max(1, -(-items // (per_page or PER_PAGE)))


def paged_urls(base: str, items: int, per_page: int | None = None) -> list[str]:
    return [paged_url(base, n) for n in range(1, page_count(items, per_page) + 1)]


@dataclass(frozen=True)
class Paging:
    """Where one page sits in a listing split into pages of at most `per_page` items."""

    base: str
    number: int  # from 1
    count: int  # pages in the listing
    total: int  # items in the whole listing
    start: int  # the items on this page are [start, stop) of the listing
    stop: int

    @property
    def url(self) -> str:
        return paged_url(self.base, self.number)

    @property
    def key(self) -> str:
        """Everything of the paging a page shows (its URL, pager and counts), for a cache key."""
        return repr((self.base, self.number, self.count, self.total, self.start, self.stop))

    def url_of(self, number: int) -> str:
        return paged_url(self.base, number)

    @property
    def previous(self) -> str | None:
        return paged_url(self.base, self.number - 1) if self.number > 1 else None

    @property
    def next(self) -> str | None:
        return paged_url(self.base, self.number + 1) if self.number < self.count else None

    def window(self, around: int = PAGER_AROUND) -> list[int | None]:
        """Page numbers the page list links, None for a gap: the first and last page and `around`
        either side of this one, so the list stays short however long the listing grows."""
        shown = {1, self.count} | set(range(max(1, self.number - around), min(self.count, self.number + around) + 1))
        out: list[int | None] = []
        for n in sorted(shown):
            if out and n - out[-1] == 2:
                out.append(n - 1)  # a gap of one page: name it rather than print a gap mark
            elif out and n - out[-1] > 2:
                out.append(None)
            out.append(n)
        return out


def paged_title(title: str, paging: Paging) -> str:
    """The title of one page of a listing: later pages say which page they are."""
    return title if paging.number == 1 else f"{title} (page {paging.number} of {paging.count})"


def paginate(base: str, items: list, per_page: int | None = None) -> list[tuple[Paging, list]]:
    """The pages of a listing at `base`, each with its slice of `items` (in the order given),
    `per_page` (default PER_PAGE) to a page."""
    per_page = per_page or PER_PAGE
    count = page_count(len(items), per_page)
    return [(Paging(base, n, count, len(items), (n - 1) * per_page, min(n * per_page, len(items))),
             items[(n - 1) * per_page: n * per_page]) for n in range(1, count + 1)]


class Site:
    """The cells and every URL derived from them."""

    def __init__(self, cells: list[Cell], locked_ids: list | None = None, families: list | None = None):
        """`families`: the family records (kb.records.families.FamilyRecord) the cells may name;
        each gets a page listing its cells, and each cell's page links to its family's."""
        self.cells = sorted(cells, key=lambda c: c.id)
        self.by_id = {c.id: c for c in self.cells}
        self.families = {f.id: f for f in sorted(families or [], key=lambda f: f.id)}
        # Each cell's citable id (kb.records.ids): the lock's, else the next number it would get.
        self.citable = ids.assign(locked_ids or [], self.cells)
        self._shown: dict[str, str] = {}
        self.owners: dict[str, list[Cell]] = defaultdict(list)
        for cell in self.cells:
            for signature in cell.entry.signatures:
                if cell not in self.owners[signature.text]:
                    self.owners[signature.text].append(cell)

    def url(self, cell: Cell) -> str:
        return string_url(cell.entry.signatures[0].text)

    def shown(self, cell: Cell) -> str:
        """A fingerprint of all a page can show of `cell`: its id, URL and record (for cache keys;
        computed once per cell and catalog)."""
        found = self._shown.get(cell.id)
        if found is None:
            found = self._shown[cell.id] = fingerprint(cell.id, self.citable[cell.id], self.url(cell),
                                                      cell.entry.model_dump_json())
        return found

    @cached_property
    def _grouped(self) -> tuple[dict, dict]:
        """(facet -> value key -> (display name, cells), facet -> value key -> the key it is listed
        under). Values that differ only in spelling (`facets.spelling`: case, spaces, punctuation)
        are one group, under the spelling most cells use (then the first key): KB081 asks records
        to write one spelling, and this keeps a slip from splitting a listing meanwhile."""
        index: dict[str, dict[str, tuple[str, list[Cell]]]] = {}
        listed_under: dict[str, dict[str, str]] = {}
        for facet in facets.FACETS:
            groups: dict[str, tuple[str, list[Cell]]] = {}
            for cell in self.cells:
                for value, name in facets.values(facet, cell.entry):
                    groups.setdefault(value, (name, []))[1].append(cell)
            by_spelling: dict[str, list[str]] = defaultdict(list)
            for value, (name, _) in sorted(groups.items()):
                by_spelling[facets.spelling(name)].append(value)
            under: dict[str, str] = {}
            merged: dict[str, tuple[str, list[Cell]]] = {}
            for values in by_spelling.values():
                main = min(values, key=lambda v: (-len(groups[v][1]), v))
                cells = sorted({c.id: c for v in values for c in groups[v][1]}.values(), key=lambda c: c.id)
                merged[main] = (groups[main][0], cells)
                under.update({v: main for v in values})
            index[facet] = dict(sorted(merged.items(), key=lambda item: facets.order(facet, item[0], item[1][0])))
            listed_under[facet] = under
        return index, listed_under

    @property
    def facet_index(self) -> dict[str, dict[str, tuple[str, list[Cell]]]]:
        """facet -> value key -> (display name, cells), values and cells in a fixed order."""
        return self._grouped[0]

    def gpu_families(self) -> list[tuple[str, list[tuple[str, str, list[Cell]]]]]:
        """The By GPU groups under their model families (`facets.gpu_family`): (family, [(value key,
        display name, cells)]), families in `facets.family_order`, groups in facet order within each."""
        families: dict[str, tuple[str, list]] = {}
        for value, (name, cells) in self.facet_index["gpu"].items():
            family = facets.gpu_family(name)
            families.setdefault(facets.spelling(family), (family, []))[1].append((value, name, cells))
        return sorted(families.values(), key=lambda item: facets.family_order(item[0]))

    def listed_in(self, cell: Cell) -> list[tuple[str, str, str]]:
        """(facet title, value name, url) of every index page that lists `cell`, each once."""
        found: dict[tuple[str, str], tuple[str, str, str]] = {}
        for facet in facets.FACETS:
            for value, _ in facets.values(facet, cell.entry):
                main = self._grouped[1][facet][value]
                found.setdefault((facet, main), (facets.FACETS[facet], self.facet_index[facet][main][0],
                                                 facet_url(facet, main)))
        return list(found.values())

    def family_of(self, cell: Cell):
        """The family record `cell` names, or None (none named, or not among this site's families)."""
        return self.families.get(cell.entry.family) if cell.entry.family is not None else None

    def members(self, family: str) -> list[Cell]:
        """The cells of a family, in citable-id order (publication order), as the Every failure list."""
        return sorted((c for c in self.cells if c.entry.family == family), key=lambda c: ids.number(self.citable[c.id]))

    def family_shown(self, cell: Cell) -> str:
        """What a cell's page shows of its family (its id, URL and title), for cache keys."""
        found = self.family_of(cell)
        return repr((found.id, found.url, found.family.title)) if found is not None else ""

    def newest(self, count: int = NEWEST) -> list[Cell]:
        return sorted(self.cells, key=lambda c: (c.entry.published, c.entry.updated, c.id), reverse=True)[:count]
