"""Freshness: every dated claim in the records, by the date it was last checked, oldest first.

Dated claims are a cell's `status.as_of`, each `upstream[].as_of`, `fixes[].as_of`,
`workarounds[].as_of`, `measurements[].as_of` and `claims[].as_of`. A month-only date
("2026-09") sorts as the first day of its month.

The page also lists cells whose status is "fix-proposed" or "fixed-main" and whose status was
read more than `STALE_AFTER_DAYS` days before the reference date: those are the states most
likely to have moved (the PR merged, a release shipped); each with the day its upstream links'
states were last read (`links_read`: the newest of their `as_of`, which `kb refresh --write`
sets). For a deterministic build the reference date is never the clock: it is the newest
`updated` date across all records.

No page grows with the number of records: the claims go `PER_PAGE` to a page (`freshness/`,
`freshness/2/`, ...), the first page counts them by month with a link to where each month
starts, and shows the `WAITING_SHOWN` longest-waiting fixes; all of those are listed at
`freshness/waiting/` (in pages of `kb.records.catalog.PER_PAGE` cells), a URL that exists even when
none wait.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from itertools import groupby

from kb.records import facets
from kb.records.catalog import FRESHNESS_URL as URL
from kb.records.state import state
from kb.records.catalog import paged_title, paged_urls, paginate
from kb.records.schema import Cell
from kb.site.page import Page

WATCHED = ("fix-proposed", "fixed-main")
STALE_AFTER_DAYS = 60
PER_PAGE = 300  # dated claims on one page (one line each; a cell has about ten)
WAITING_SHOWN = 20  # the first page shows this many of the longest-waiting fixes
WAITING_URL = URL + "waiting/"


def day(as_of: str) -> dt.date:
    """The date an `as_of` value stands for: a month-only value is the first day of its month."""
    return dt.date.fromisoformat(as_of + "-01" if len(as_of) == 7 else as_of)


@dataclass(frozen=True)
class Dated:
    as_of: str
    cell: Cell
    field: str  # where it sits in the record, e.g. "upstream[1].as_of"
    what: str  # plain text, escaped by the template
    source: str | None
    anchor: str  # section of the cell page that shows it

    @property
    def date(self) -> dt.date:
        return day(self.as_of)


def _link_name(url: str) -> str:
    name = facets.repository(url)
    if "/issues/" in url or "/pull/" in url:
        name += " #" + url.rstrip("/").split("/")[-1].split("#")[0]
    return name


def dated(cell: Cell) -> list[Dated]:
    """The dated claims of one cell, in record order."""
    e = cell.entry
    found = [Dated(e.status.as_of, cell, "status.as_of", f"Status: {state(e).words}",
                   e.status.source, "affected")]
    for i, link in enumerate(e.upstream):
        found.append(Dated(link.as_of, cell, f"upstream[{i}].as_of",
                           f"Upstream {link.kind} {_link_name(link.url)}: {link.state}", link.url, "upstream"))
    for i, fix in enumerate(e.fixes):
        found.append(Dated(fix.as_of, cell, f"fixes[{i}].as_of", f"Fix: {fix.what}", fix.source, "fix"))
    for i, workaround in enumerate(e.workarounds):
        found.append(Dated(workaround.as_of, cell, f"workarounds[{i}].as_of", f"Workaround: {workaround.what}",
                           workaround.source, "fix"))
    for i, m in enumerate(e.measurements):
        found.append(Dated(m.as_of, cell, f"measurements[{i}].as_of", f"Measurement: {m.quantity}", m.source,
                           "measurements"))
    for i, claim in enumerate(e.claims):
        found.append(Dated(claim.as_of, cell, f"claims[{i}].as_of", f"Claim: {claim.says}",
                           None if claim.source == "seed" else claim.source, "claims"))
    return found


def oldest_first(cells: list[Cell]) -> list[Dated]:
    """Every dated claim of `cells`, oldest first; ties in cell id, then record, order."""
    items = [(d, n) for cell in sorted(cells, key=lambda c: c.id) for n, d in enumerate(dated(cell))]
    items.sort(key=lambda pair: (pair[0].date, pair[0].as_of, pair[0].cell.id, pair[1]))
    return [d for d, _ in items]


def reference_date(cells: list[Cell]) -> dt.date | None:
    """The newest `updated` date across all records (None without records)."""
    return max((dt.date.fromisoformat(c.entry.updated) for c in cells), default=None)


def links_read(cell: Cell) -> str | None:
    """The newest `as_of` among a cell's upstream links: the day their state was last read (by
    `kb refresh --write`, which sets it on every link it reads, or by hand)."""
    return max((link.as_of for link in cell.entry.upstream), key=lambda as_of: (day(as_of), len(as_of)), default=None)


def checked(cell: Cell) -> str:
    """The day a cell was last checked against upstream, shown once at the top of its page: the
    newest `as_of` of its status, its upstream links and its claims (a full day before a month-only
    value of the same month)."""
    e = cell.entry
    dates = [e.status.as_of, *(link.as_of for link in e.upstream), *(claim.as_of for claim in e.claims)]
    return max(dates, key=lambda as_of: (day(as_of), len(as_of)))


def waiting(cells: list[Cell], reference: dt.date | None, days: int = STALE_AFTER_DAYS) -> list[tuple[Cell, int]]:
    """Cells in a watched status read more than `days` days before `reference`, oldest first."""
    if reference is None:
        return []
    found = [(cell, (reference - day(cell.entry.status.as_of)).days) for cell in cells
             if state(cell.entry).key in WATCHED]
    found = [(cell, age) for cell, age in found if age > days]
    return sorted(found, key=lambda pair: (-pair[1], pair[0].id))


def by_month(claims: list[Dated], per_page: int | None = None) -> list[tuple[str, int, int, str]]:
    """(month, claims last checked in it, the page its first claim is on, that claim's `as_of`) of
    `claims` (oldest first), oldest month first."""
    per_page = per_page or PER_PAGE
    months: dict[str, list] = {}
    for position, d in enumerate(claims):
        month = d.as_of[:7]
        if month not in months:
            months[month] = [0, position // per_page + 1, d.as_of]
        months[month][0] += 1
    return [(month, count, number, as_of) for month, (count, number, as_of) in months.items()]


def urls(cells: list[Cell]) -> list[str]:
    """Every URL of the freshness pages."""
    count = sum(len(dated(cell)) for cell in cells)
    return (paged_urls(URL, count, PER_PAGE)
            + paged_urls(WAITING_URL, len(waiting(cells, reference_date(cells)))))


def pages(renderer) -> list[Page]:
    """The freshness pages (`freshness/`, `freshness/2/`, ..., `freshness/waiting/`) of a
    `kb.site.pages.Renderer`."""
    cells = renderer.site.cells
    reference = reference_date(cells)
    claims = oldest_first(cells)
    late = waiting(cells, reference)
    totals: dict[str, int] = {}
    for d in claims:
        totals[d.as_of] = totals.get(d.as_of, 0) + 1
    context = dict(reference=reference, watched=WATCHED, days=STALE_AFTER_DAYS, records=len(cells),
                   claim_count=len(claims), waiting_count=len(late), waiting_url=WAITING_URL, links_read=links_read)
    # A page is rendered again only when what it shows changed: the claims on it (their cells'
    # records), the counts every page repeats, and on the first page the months and longest waits.
    shared = repr((str(reference), len(cells), len(claims), len(late), sorted(totals.items())))
    out = []
    for paging, chunk in paginate(URL, claims, PER_PAGE):
        months = by_month(claims) if paging.number == 1 else []
        shown_late = late[:WAITING_SHOWN] if paging.number == 1 else []
        key = ["freshness", shared, paging.key, repr(months),
               *[part for d in chunk for part in (renderer.site.shown(d.cell), d.field)],
               *[part for cell, age in shown_late for part in (renderer.site.shown(cell), str(age))]]
        out.append(renderer._cached(key, lambda: _claims_page(renderer, paging, claims, chunk, totals, months,
                                                              shown_late, context)))
    for paging, chunk in paginate(WAITING_URL, late):
        key = ["freshness waiting", shared, paging.key,
               *[part for cell, age in chunk for part in (renderer.site.shown(cell), str(age))]]
        out.append(renderer._cached(key, lambda: Page(
            paging.url, paged_title("Fixes waiting", paging),
            f"Cells whose fix was proposed or merged on main and whose status was read more than "
            f"{STALE_AFTER_DAYS} days ago, longest waiting first.",
            renderer._render("freshness_waiting.html", paging.url, paging=paging, waiting=chunk, **context), "index")))
    return out


def _claims_page(renderer, paging, claims, chunk, totals, months, shown_late, context) -> Page:
    previous = claims[paging.start - 1].as_of if paging.start else None
    groups = [(as_of, as_of == previous, list(items)) for as_of, items in groupby(chunk, key=lambda d: d.as_of)]
    body = renderer._render("freshness.html", paging.url, paging=paging, groups=groups, totals=totals, months=months,
                            waiting=shown_late, **context)
    return Page(paging.url, paged_title("Freshness", paging),
                "Every dated claim of the Blackwell serving-failure index, oldest first, and the fixes "
                f"that have waited more than {STALE_AFTER_DAYS} days.", body, "index")
