"""Scale shape: what a page holds does not depend on how many cells the index has.

Shape, not time: the synthetic knowledge base of bench/synth.py at N = 100 and N = 1,000.
A full mkdocs build of 1,000 cells takes about 50 s on a 2-core machine, so the size
comparisons use the engine-independent page bodies of `kb.site.pages.Renderer` at both sizes, one
full build at N = 100 checks what the theme adds (its chrome, the navigation), and one full
build of the heaviest cells of N = 1,000 (with their families) checks the 40 KB cell page.
Timings are for bench/build.py, never for a test.
"""

from __future__ import annotations

import importlib.util
import posixpath
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import ROOT, builds_site
from kb.records import ids, lint
from kb.records.catalog import PER_PAGE, facet_url, paged_url
from kb.site import freshness, matrix
from kb.site.pages import Renderer, Site
from kb.site.urls import page_urls

_spec = importlib.util.spec_from_file_location("kb_bench_synth", ROOT / "bench" / "synth.py")
synth = importlib.util.module_from_spec(_spec)  # loaded by path: bench/ is not put on sys.path
_spec.loader.exec_module(synth)

SMALL, LARGE = 100, 1000
SEED = 7
HREF = re.compile(r'href="([^"#]*)(?:#[^"]*)?"')
GROWTH = 1.2  # the largest page of a kind at N = 1,000 against N = 100
SLACK = 1024  # bytes: a longer title or number here and there
CELL_PAGE_LIMIT = 40_000  # bytes of HTML, theme included (#12); back from 44 KB: the theme's indentation goes (kb.site.indent)

# Synthetic folders of hundreds of entries, checked, rendered and indexed: minutes, not seconds.
pytestmark = pytest.mark.slow


def kind(page) -> str:
    """The kind of a page for the size comparisons: cell, pointer, disambiguation, browse, each
    facet's index and listing, matrix, matrix listing, freshness, fixes waiting, rules, triage, stack."""
    if page.kind != "index":
        return page.kind
    parts = page.url.strip("/").split("/")
    if parts[0] == "by":
        if len(parts) == 1:
            return "browse"
        return f"by/{parts[1]}/ " + ("index" if len(parts) == 2 else "listing")
    if parts[0] == "matrix":
        return "matrix" if len(parts) == 1 else "matrix listing"
    if parts[0] == "all":
        return "all listing"  # every failure, paged like a facet's listing
    if parts[0] == "freshness":
        return "fixes waiting" if "waiting" in parts else "freshness"
    return parts[0]


# Kinds whose pages list cells, at most PER_PAGE to a page: a page holds more cells at N = 1,000
# because its group is bigger (its own content), never more than a page's worth.
LISTINGS = re.compile(r"listing$|^fixes waiting$")


def _checked(folder: Path) -> list[lint.Cell]:
    result = lint.check([folder])
    assert result.problems == [], "\n".join(p.format() for p in result.problems[:10])
    return result.cells


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """{N: (folder, site, {url: page})} for the two sizes."""
    out = {}
    for n in (SMALL, LARGE):
        folder = tmp_path_factory.mktemp(f"synth-{n}") / "entries"
        synth.generate(n, folder, SEED)
        site = Site(_checked(folder))
        out[n] = (folder, site, {p.url: p for p in Renderer(site).all_pages()})
    return out


@pytest.fixture(scope="module")
def listed(synthetic):
    """{N: {url: ids of the cells the page links to}} for every page that is not a cell page."""
    out = {}
    for n, (_, site, pages) in synthetic.items():
        by_url = {site.url(c): c.id for c in site.cells}
        out[n] = {url: _listed(page, by_url) for url, page in pages.items() if page.kind != "cell"}
    return out


@pytest.fixture(scope="module")
@builds_site
def small_site(synthetic, tmp_path_factory) -> Path:
    from kb.site import build

    out = tmp_path_factory.mktemp("scale-site") / "site"
    assert build.build(out, synthetic[SMALL][0]) == 0
    return out


def _listed(page, by_url: dict[str, str]) -> set[str]:
    """Ids of the cells (by_url: cell page URL -> id) whose cell page `page` links to."""
    found = set()
    for href in set(HREF.findall(page.body)):
        if "://" in href or not href:
            continue
        target = posixpath.normpath(posixpath.join(page.url or ".", href)) + "/"
        if target in by_url:
            found.add(by_url[target])
    return found


def _primary_nav(html: str) -> str:
    start = html.find('<nav class="md-nav md-nav--primary"')
    assert start >= 0, "no primary navigation in the page"
    depth, position = 0, start
    for tag in re.finditer(r"<(/?)nav\b", html[start:]):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            position = start + tag.end()
            break
    return html[start:position]


def test_synthetic_folders_are_valid_deterministic_and_independent_of_n(synthetic, tmp_path):
    small, large = synthetic[SMALL][0], synthetic[LARGE][0]
    again = tmp_path / "again"
    synth.generate(SMALL, again, SEED)
    names = sorted(p.name for p in small.glob("*.yaml"))
    assert len(names) == SMALL and names == sorted(p.name for p in again.glob("*.yaml"))
    for name in names:
        text = (small / name).read_text(encoding="utf-8")
        assert text.startswith("# synthetic")
        assert text == (again / name).read_text(encoding="utf-8"), f"{name} is not deterministic"
        assert text == (large / name).read_text(encoding="utf-8"), f"{name} depends on N"
    with pytest.raises(SystemExit):
        synth.generate(1, ROOT / "kb" / "entries", SEED)


def test_a_cell_page_does_not_depend_on_n(synthetic):
    _, small_site, small_pages = synthetic[SMALL]
    _, large_site, large_pages = synthetic[LARGE]
    assert len(small_site.cells) == SMALL and len(large_site.cells) == LARGE
    for cell in small_site.cells:
        url = small_site.url(cell)
        before, after = len(small_pages[url].body.encode()), len(large_pages[url].body.encode())
        assert abs(after - before) <= max(64, before // 100), f"cell page {url}: {before} -> {after} bytes"


def test_output_grows_linearly(synthetic):
    ratio = LARGE / SMALL
    small, large = synthetic[SMALL][2], synthetic[LARGE][2]
    assert len(large) <= 1.2 * ratio * len(small), f"pages: {len(small)} -> {len(large)}"
    total = {n: sum(len(p.body.encode()) for p in synthetic[n][2].values()) for n in (SMALL, LARGE)}
    assert total[LARGE] <= 1.2 * ratio * total[SMALL], f"bytes of all bodies: {total}"


def _largest(pages: dict) -> dict[str, tuple[int, str]]:
    """kind -> (bytes, url) of its largest page body."""
    out: dict[str, tuple[int, str]] = {}
    for url, page in pages.items():
        size = len(page.body.encode())
        if size > out.get(kind(page), (-1, ""))[0]:
            out[kind(page)] = (size, url)
    return out


def test_every_kind_of_page_is_there_at_both_sizes(synthetic):
    kinds = {n: set(_largest(synthetic[n][2])) for n in (SMALL, LARGE)}
    assert kinds[SMALL] == kinds[LARGE]
    wanted = {"cell", "pointer", "disambiguation", "browse", "matrix", "matrix listing", "freshness",
              "fixes waiting", "rules", "triage", "stack", "all listing", "families"}
    wanted |= {f"by/{facet}/ {what}" for facet in synthetic[SMALL][1].facet_index for what in ("index", "listing")}
    assert kinds[LARGE] == wanted


def test_no_kind_of_page_grows_with_n(synthetic):
    """The largest page of each kind at N = 1,000 is at most GROWTH times (plus SLACK) the largest
    at N = 100. Listings are compared per listed cell: see the next test."""
    small, large = _largest(synthetic[SMALL][2]), _largest(synthetic[LARGE][2])
    grown = {k: (small[k], large[k]) for k in large
             if not LISTINGS.search(k) and large[k][0] > GROWTH * small[k][0] + SLACK}
    assert grown == {}, f"pages that grow with N: {grown}"
    assert max(size for size, _ in large.values()) <= 256_000, large


def test_listings_hold_a_page_of_cells_at_most(synthetic, listed):
    """A listing page lists at most PER_PAGE cells, and its bytes per listed cell do not grow
    with N: so no listing page grows beyond PER_PAGE cells' worth however many cells there are."""
    assert PER_PAGE <= 200, "a listing page holds a few hundred cells at most (#12)"
    per_cell: dict[int, dict[str, float]] = {}
    for n in (SMALL, LARGE):
        pages = synthetic[n][2]
        per_cell[n] = defaultdict(float)
        for url, page in pages.items():
            if not LISTINGS.search(kind(page)):
                continue
            ids = listed[n][url]
            assert len(ids) <= PER_PAGE, f"{url} lists {len(ids)} cells"
            if len(ids) >= 10:
                per_cell[n][kind(page)] = max(per_cell[n][kind(page)], len(page.body.encode()) / len(ids))
    assert set(per_cell[LARGE]) == {k for k in _largest(synthetic[LARGE][2]) if LISTINGS.search(k)}
    grown = {k: (per_cell[SMALL][k], v) for k, v in per_cell[LARGE].items()
             if k in per_cell[SMALL] and v > GROWTH * per_cell[SMALL][k]}
    assert grown == {}, f"bytes per listed cell: {grown}"


def test_no_page_lists_every_cell(synthetic, listed):
    every = {c.id for c in synthetic[LARGE][1].cells}
    assert {url for url, ids in listed[LARGE].items() if ids >= every} == set()
    # at N = 1,000 the biggest listings are split: sm_120 takes most cells, freshness ~10,000 claims
    pages = synthetic[LARGE][2]
    assert {"by/architecture/sm-120/2/", "freshness/2/", "all/2/"} <= set(pages)


def _links(page) -> set[str]:
    return {posixpath.normpath(posixpath.join(page.url, href)) + "/" for href in HREF.findall(page.body)
            if href and "://" not in href}


def _listings(site: Site) -> dict[str, list[str]]:
    """base URL -> the ids its pages list, in order, for every listing that may run to pages."""
    out = {facet_url(facet, value): [c.id for c in cells]
           for facet, groups in site.facet_index.items() for value, (_, cells) in groups.items()}
    built = matrix.build(site.cells)
    for row in built.rows:
        for gc in row.cells:
            out[gc.url] = [item.cell.id for item in gc.items]
    out[matrix.NOT_PLACED_URL] = [cell.id for cell, _ in built.unplaced]
    out[freshness.WAITING_URL] = [cell.id for cell, _ in freshness.waiting(
        site.cells, freshness.reference_date(site.cells))]
    return out


def test_long_listings_run_to_linked_pages(synthetic):
    """Pages of a listing at `base`, `base`2/, ...: together they list its cells once, in order,
    at most PER_PAGE a page; each links the previous and next page and the first and last."""
    _, site, pages = synthetic[LARGE]
    by_url = {site.url(c): c.id for c in site.cells}
    paged = 0
    for base, ids in _listings(site).items():
        count = max(1, -(-len(ids) // PER_PAGE))
        urls = [paged_url(base, n) for n in range(1, count + 1)]
        assert paged_url(base, count + 1) not in pages
        seen = []
        for number, url in enumerate(urls, 1):
            page = pages[url]
            row = re.compile(r'<li data-cell="([^"]+)"|<li><a href="([^"]+)"')
            seen += [cell or by_url[posixpath.normpath(posixpath.join(url, href)) + "/"]
                     for cell, href in row.findall(page.body)
                     if cell or posixpath.normpath(posixpath.join(url, href)) + "/" in by_url]
            links = _links(page)
            if count > 1:
                paged += 1
                assert f'data-page="{number}" data-pages="{count}"' in page.body
                assert {urls[0], urls[-1]} <= links, url
                assert (number == 1) == ('rel="prev"' not in page.body)
                assert (number == count) == ('rel="next"' not in page.body)
                assert number == 1 or urls[number - 2] in links
                assert number == count or urls[number] in links
                assert page.body.count('aria-current="page"') == 2  # the pager at the top and the bottom
            else:
                assert "kb-pager" not in page.body
        assert seen == ids, base
    assert paged > 20


def test_freshness_pages_cover_every_claim_in_order(synthetic):
    _, site, pages = synthetic[LARGE]
    claims = freshness.oldest_first(site.cells)
    count = -(-len(claims) // freshness.PER_PAGE)
    assert count > 20
    found = []
    for number in range(1, count + 1):
        page = pages[paged_url(freshness.URL, number)]
        found += re.findall(r'<li data-as-of="([^"]+)" data-cell="([^"]+)" data-field="([^"]+)"', page.body)
        assert f'data-page="{number}" data-pages="{count}"' in page.body
    assert found == [(d.as_of, d.cell.id, d.field) for d in claims]
    assert paged_url(freshness.URL, count + 1) not in pages
    # the first page counts the claims by month, each linked to the page where its month starts
    first = pages[freshness.URL].body
    months = freshness.by_month(claims)
    assert sum(n for _, n, _, _ in months) == len(claims)
    for month, _, number, as_of in months:
        target = paged_url(freshness.URL, number)
        assert f'id="checked-{as_of}"' in pages[target].body
        assert f'href="{posixpath.relpath(target, freshness.URL)}/#checked-{as_of}">{month}</a>' in first


def test_the_matrix_summarises_crowded_grid_cells(synthetic):
    _, site, pages = synthetic[LARGE]
    body = pages[matrix.URL].body
    built = matrix.build(site.cells)
    for row in built.rows:
        for gc in row.cells:
            assert f'href="{posixpath.relpath(gc.url, matrix.URL)}/">{len(gc.items)} failures</a>' in body
            assert not gc.inline  # at N = 1,000 every grid cell is a count, by status
    cell_urls = {site.url(c) for c in site.cells}
    assert _links(pages[matrix.URL]) & cell_urls == set()  # counts only: no cell is listed on the grid


def test_page_urls_are_the_rendered_pages(synthetic):
    for n in (SMALL, LARGE):
        _, site, pages = synthetic[n]
        # besides the rendered pages, the site publishes one redirect per citable id (kb.records.ids)
        redirects = {ids.url(citable) for citable in site.citable.values()}
        assert len(redirects) == len(site.cells)
        assert [u for u in page_urls(site) if u not in redirects] == sorted(pages)


def test_pointer_pages_are_small_and_point_at_their_cell(synthetic):
    _, site, pages = synthetic[LARGE]
    pointers = [p for p in pages.values() if p.kind == "pointer"]
    assert len(pointers) > LARGE
    for page in pointers:
        (owner,) = site.owners[page.title]
        e = owner.entry
        kind = next(s.kind for s in e.signatures if s.text == page.title)
        assert f'<h1 class="{"kb-symptom" if kind == "symptom" else "kb-literal"}" id="kb-literal">' in page.body
        assert posixpath.relpath(site.url(owner), page.url) + "/" in page.body
        assert "Why it happens" not in page.body and "<table" not in page.body and "<svg" not in page.body
        # the summary's first sentence, and the fix and workaround lines when they are short
        # (and, since issue 37, "You searched:", the cause, each remedy's cost and the fix still to come)
        assert len(page.body.encode()) <= 1800 + 2 * len(page.title.encode()) + len(e.title.encode()) + len(
            (e.cause or "").encode()) + sum(
            len(r.what.encode()) + len((getattr(r, "cost", None) or "").encode()) for r in e.fixes + e.workarounds)


def _family_files(folder: Path, cells) -> list[Path]:
    """The entry files of `cells` and of every cell of their synth families (related cells link
    inside a family, so a family passes the check on its own)."""
    index = {int(p.stem.rsplit("-", 1)[1]): p for p in folder.glob("*.yaml")}
    families = {int(c.id.rsplit("-", 1)[1]) // synth.FAMILY for c in cells}
    return [index[i] for f in sorted(families) for i in range(f * synth.FAMILY, (f + 1) * synth.FAMILY) if i in index]


def test_the_heaviest_cell_pages_stay_under_40_kb(synthetic, tmp_path):
    """The three largest cell pages of N = 1,000 and the one with the most charted rows, built
    with the theme (a cell page does not depend on N: see test_a_cell_page_does_not_depend_on_n)."""
    from kb.site import build

    folder, site, pages = synthetic[LARGE]
    by_size = sorted(site.cells, key=lambda c: len(pages[site.url(c)].body.encode()), reverse=True)
    charted = max(site.cells, key=lambda c: sum(len(m.series.rows) for m in c.entry.measurements if m.series))
    heavy = by_size[:3] + [charted]
    subset = tmp_path / "entries"
    subset.mkdir()
    for path in _family_files(folder, heavy):
        shutil.copy(path, subset / path.name)
    out = tmp_path / "site"
    assert build.build(out, subset) == 0
    sizes = {c.id: (out / site.url(c) / "index.html").stat().st_size for c in heavy}
    assert max(sizes.values()) <= CELL_PAGE_LIMIT, sizes


def test_nav_does_not_list_cells_and_the_chrome_is_constant(synthetic, small_site):
    _, site, pages = synthetic[SMALL]
    navs = set()
    chrome = []
    for cell in site.cells:
        url = site.url(cell)
        html = (small_site / url / "index.html").read_text(encoding="utf-8")
        nav = _primary_nav(html)
        assert 'href="../../e/' not in nav and "/e/" not in nav, f"the navigation of {url} links a cell page"
        # the active page aside, the navigation is the same on every cell page
        navs.add(re.sub(r"\s+", " ", nav))
        chrome.append(len(html.encode()) - len(pages[url].body.encode()))
    assert len(navs) == 1, "the navigation differs between cell pages"
    import yaml

    def entries(items) -> int:
        return sum(1 + (entries(v) if isinstance(v, list) else 0)
                   for item in items for v in (item.values() if isinstance(item, dict) else [item]))

    nav_items = entries(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    links = next(iter(navs)).count("<a ")
    assert links <= nav_items, f"{links} links in a cell page's navigation, mkdocs.yml nav has {nav_items} entries"
    # what the theme adds around a body varies only with the page's own title, description and JSON-LD
    assert max(chrome) - min(chrome) <= 8 * 1024, f"theme chrome {min(chrome)}..{max(chrome)} bytes"
