"""Stage 4, render: validated cells -> pages (HTML bodies with their titles and descriptions).

Engine-independent: nothing here knows mkdocs. Each distinct literal string gets one page at
`e/<slug>/`: the cell page for a cell's first signature, a short pointer page for its other
signatures (the literal, the first sentence of the summary, short fix lines and a link: never a
second copy of the cell), or a disambiguation page when several cells print the same string.
Index pages group cells by facet (`kb.records.facets`), `kb.records.catalog.PER_PAGE` cells to a page. Links
between pages are relative, so the site works from any sub-path.
"""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from kb.cache import Cache, code_fingerprint, fingerprint
from kb.records import cause, checked, facets, ids, prose, state
from kb.records.cause import first_sentence
from kb.records.catalog import Site, facet_url, paged_title, paginate, rel, string_url
from kb.records.schema import Cell
from kb.site import charts, decide, familypages, freshness, matrix, reproduced
from kb.site import stack as my_stack
from kb.site.page import Page
from kb.site.rulespage import rules_page

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "pages"
PARALLEL_FROM = 400  # cell and literal pages to render at least, for the work to be shared between processes



def _flagged_generic(text: str, owners) -> bool:
    """Whether some cell that prints `text` flags it as a string many unrelated faults print."""
    return any(s.generic for c in owners for s in c.entry.signatures if s.text == text)


def _templates_fingerprint() -> str:
    return fingerprint(*[part for path in sorted(TEMPLATES.glob("*.html")) for part in (path.name, path.read_bytes())])


ALL_URL = "all/"  # the page listing every failure


def _all_filters(cells) -> dict:
    """The choices of the every-failure page's filters (kb-all.js), from every failure (a filter runs
    over all pages of the listing, not only the rows of the page it is on): each status in lifecycle
    order, each component by its display name, each month something was updated, newest first."""
    states = {state.state(c.entry).key for c in cells}
    return {"filter_statuses": [(key, facets.STATUS_NAMES[key]) for key in facets.LIFECYCLE if key in states],
            "filter_components": sorted({facets.component_name(p.package) for c in cells for p in c.entry.components},
                                        key=str.casefold),
            "filter_months": sorted({str(c.entry.updated)[:7] for c in cells}, reverse=True)}


class Renderer:
    def __init__(self, site: Site, repo_url: str | None = None, cache: Cache | None = None):
        """`cache` (kb.cache) keeps cell, pointer, disambiguation and listing pages: a page is
        rendered again only when something it shows changed (its cells, the cells it links to,
        the templates, this code, the repository URL)."""
        self.site = site
        self.cache = cache
        self.keys: dict[str, str] = {}  # URL -> cache key of each page rendered through the cache
        self._ahead: dict[str, Page | None] = {}  # key -> page rendered by another process (render_ahead)
        self._page_keys: dict[tuple[str, str], str] = {}  # ("cell", id) or ("string", text) -> its key
        self._code = (fingerprint(code_fingerprint(), _templates_fingerprint(),
                                  repo_url or "") if cache is not None else "")
        self.env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                               trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
        self.env.filters["markdown"] = prose.render
        self.env.filters["first_sentence"] = first_sentence
        self.env.filters["package_name"] = facets.package_name
        self.env.globals.update(
            facets=facets, rel=rel, site=site, facet_url=facet_url,
            STATUS=facets.STATUS_NAMES, SYMPTOM=facets.SYMPTOM_NAMES, KIND=facets.KIND_NAMES,
            package_name=facets.package_name, component_name=facets.component_name, repository=facets.repository, repo_url=repo_url,
            state_of=state.state, cause_of=cause.shown, checked_phrases=checked.phrases, checked_on=freshness.checked, page_of_string=self.page_of_string,
        )
        self.env.globals.update(chart_svg=charts.svg, chart_shown=charts.charted)
        self.env.globals.update(reproduced_runs=reproduced.runs, repro_command=reproduced.command,
                                evidence_kind=reproduced.evidence)

    def _render(self, template: str, here: str, **context) -> str:
        return self.env.get_template(template).render(here=here, **context)

    def _cached(self, key_parts: list[str], make) -> Page | None:
        return self._kept(lambda: fingerprint(self._code, *key_parts), make)

    def _kept(self, key_of, make) -> Page | None:
        """The page under the key `key_of()` makes: rendered ahead, from the cache, or `make()`."""
        if self.cache is None and not self._ahead:
            return make()
        key = key_of()
        if key in self._ahead:  # rendered by another process (render_ahead)
            page = self._ahead.pop(key)
            if self.cache is not None:
                self.cache.put(key, page)
        elif self.cache is not None:
            page = self.cache.fetch(key, make)
        else:
            page = make()
        if page is not None and self.cache is not None:
            self.keys[page.url] = key
        return page

    def _cell_key(self, cell: Cell) -> list[str]:
        # How it shows up links each literal to its own page, which depends on how many cells print it.
        return ["cell", self.site.shown(cell), self.site.family_shown(cell),
                *[self.site.shown(self.site.by_id[r.id]) for r in cell.entry.related],
                *[str(self.page_of_string(s.text) or "") for s in cell.entry.signatures]]

    def page_of_string(self, text: str) -> str | None:
        """The URL of a literal's own page (its variant page, or the page telling apart the failures
        that print it), or None where the literal's page is its cell's page."""
        return string_url(text) if self._has_string_page(text) else None

    def _string_key(self, text: str) -> list[str]:
        return ["string", text, *[self.site.shown(c) for c in self.site.owners[text]]]

    def _page_key(self, kind: str, arg: str) -> str:
        """The key of a cell page ("cell", id) or a literal's page ("string", text), made once
        per renderer (render_ahead and the page itself both need it)."""
        key = self._page_keys.get((kind, arg))
        if key is None:
            parts = self._cell_key(self.site.by_id[arg]) if kind == "cell" else self._string_key(arg)
            key = self._page_keys[(kind, arg)] = fingerprint(self._code, *parts)
        return key

    def cell(self, cell: Cell) -> Page:
        return self._kept(lambda: self._page_key("cell", cell.id), lambda: self._cell(cell))

    def _cell(self, cell: Cell) -> Page:
        here = self.site.url(cell)
        return Page(here, cell.entry.signatures[0].text, cell.entry.summary,
                    self._render("cell.html", here, cell=cell, e=cell.entry), "cell", cell.entry.updated)

    def string_page(self, text: str) -> Page | None:
        """Page of a literal string that is not some cell's first signature (else None)."""
        return self._kept(lambda: self._page_key("string", text), lambda: self._string_page(text))

    def _has_string_page(self, text: str) -> bool:
        """A literal string has a page of its own when several cells print it or it is not its
        cell's first signature (whose page is the cell page)."""
        owners = self.site.owners[text]
        return len(owners) > 1 or owners[0].entry.signatures[0].text != text

    def _string_page(self, text: str) -> Page | None:
        if not self._has_string_page(text):
            return None
        owners = self.site.owners[text]
        here = string_url(text)
        if len(owners) > 1:
            summary = f"{len(owners)} different failures print this string: " + "; ".join(
                c.entry.title for c in owners) + "."
            return Page(here, text, summary, self._render("disambiguation.html", here, text=text, cells=owners,
                                                         choices=decide.choices(owners, self.site.owners),
                                                         generic=_flagged_generic(text, owners)),
                        "disambiguation", max(c.entry.updated for c in owners))
        (owner,) = owners
        e = owner.entry
        kind = next(s.kind for s in e.signatures if s.text == text)
        description = f"One way {e.title} shows up. {first_sentence(e.summary)}"
        # One page per literal string is what a search for that string lands on, but a variant page
        # repeats its entry's answer card: a search engine told both are pages of their own would rank
        # the two against each other and split their links. Its canonical is the entry's page, which
        # prints this string too (How it shows up), so the engine finds the string there.
        return Page(here, text, description,
                    self._render("pointer.html", here, text=text, kind=kind, cell=owner,
                                 more=len(e.fixes) + len(e.workarounds) > 1), "pointer", e.updated,
                    canonical=self.site.url(owner))

    def indexes(self) -> list[Page]:
        pages = [Page("by/", "Browse the index", "Every way to browse the failures: by GPU, architecture, "
                      "component, symptom, status and upstream repository.",
                      self._render("browse.html", "by/"), "index"),
                 *self.every_failure()]
        for facet, title in facets.FACETS.items():
            groups = self.site.facet_index[facet]
            here = facet_url(facet)
            pages.append(Page(here, title, f"Failures in the Blackwell serving-failure index, {title.lower()}.",
                              self._render("facet.html", here, facet=facet, title=title, groups=groups), "index"))
            for value, (name, cells) in groups.items():
                for paging, chunk in paginate(facet_url(facet, value), cells):
                    key = ["listing", facet, title, value, name, paging.key, *[self.site.shown(c) for c in chunk]]
                    pages.append(self._cached(key, lambda: self._listing(facet, title, value, name, cells, chunk,
                                                                         paging)))
        return pages

    def every_failure(self) -> list[Page]:
        """Every cell in citable-id order (publication order), each linked: a listing paged like the
        others (PER_PAGE to a page), so no page grows with the index."""
        cells = sorted(self.site.cells, key=lambda c: ids.number(self.site.citable[c.id]))
        filters = _all_filters(cells)
        return [Page(paging.url, paged_title("Every failure", paging),
                     f"All {len(cells)} failures of the Blackwell serving-failure index, with their ids, statuses "
                     "and dates.", self._render("all.html", paging.url, cells=chunk, paging=paging, **filters),
                     "index")
                for paging, chunk in paginate(ALL_URL, cells)]

    def _listing(self, facet, title, value, name, cells, chunk, paging) -> Page:
        return Page(paging.url, paged_title(f"{title.removeprefix('By ').capitalize()}: {name}", paging),
                    f"{len(cells)} Blackwell serving failure(s) for {name}.",
                    self._render("listing.html", paging.url, facet=facet, facet_title=title, name=name, cells=chunk,
                                 paging=paging, stack_link=my_stack.link(facet, value, name)), "index")

    def triage(self) -> Page:
        return Page("triage/", "Triage a log", "Paste a whole log and get the known failures that match it; "
                    "matching runs in your browser and nothing is uploaded.",
                    self._render("triage.html", "triage/"), "index")

    def stack(self) -> Page:
        return Page(my_stack.URL, "My stack", "Pick a GPU and the versions you run and see which failures "
                    "apply to that stack; decided in your browser, shareable as a link.",
                    self._render("stack.html", my_stack.URL, groups=my_stack.gpu_groups(self.site),
                                 packages=my_stack.packages(self.site), shown=my_stack.SHOWN_PACKAGES), "index")

    def newest(self, here: str = "") -> str:
        return self._render("newest.html", here, cells=self.site.newest())

    def render_ahead(self) -> int:
        """Render the cell and literal pages that are not in the cache on every core, when there
        are at least PARALLEL_FROM of them (each is independent of the others); `cell()` and
        `string_page()` then hand them out. Returns how many pages were rendered.

        The workers are forked from this process, so they start with its catalog and compiled
        templates and only the pages travel (the catalog pickled to each worker cost more than
        half the rendering at 10,000 cells). Forking a process that runs threads is unsafe, so
        with other threads running (`kb serve`) the pages are rendered here, one by one."""
        wanted = [("cell", cell.id) for cell in self.site.cells]
        wanted += [("string", text) for text in sorted(self.site.owners) if self._has_string_page(text)]
        workers = min(os.cpu_count() or 1, 8)
        if len(wanted) < PARALLEL_FROM or workers < 2 or threading.active_count() > 1:
            return 0
        jobs = [job for job in wanted if self.cache is None or self.cache.get(self._page_key(*job)) is None]
        if len(jobs) < PARALLEL_FROM:
            return 0
        keys = [self._page_key(*job) for job in jobs]
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from kb.records.workers import die_with_parent

        size = max(1, len(jobs) // (workers * 8))
        chunks = [jobs[i:i + size] for i in range(0, len(jobs), size)]
        _FORKED.append(self)
        gc.freeze()  # the catalog out of the collector's reach: the workers' collections copy no page of it
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                     initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
                made = [page for pages in pool.map(_render_part, chunks) for page in pages]
        finally:
            gc.unfreeze()
            _FORKED.clear()
        self._ahead.update(zip(keys, made))
        return len(made)

    def all_pages(self) -> list[Page]:
        self.render_ahead()
        pages = [self.cell(cell) for cell in self.site.cells]
        pages += [p for text in sorted(self.site.owners) if (p := self.string_page(text)) is not None]
        pages += self.indexes()
        pages.append(self.triage())
        pages.append(self.stack())
        pages += matrix.pages(self) + freshness.pages(self) + familypages.pages(self)
        pages.append(rules_page(self))
        return pages


_FORKED: list[Renderer] = []  # the renderer whose pages `render_ahead`'s forked workers render, while they run


def _render_part(jobs: list[tuple[str, str]]) -> list[Page | None]:
    renderer = _FORKED[0]
    return [renderer._cell(renderer.site.by_id[arg]) if kind == "cell" else renderer._string_page(arg)
            for kind, arg in jobs]
