"""The built site: pages per literal string, escaping, links, search, golden pages."""

from __future__ import annotations

import html.parser
import os
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

from browser import search, serve
from conftest import FIXTURES, ROOT, checked_site
from kb.site.pages import Renderer, Site, string_url

GOLDEN = ROOT / "tests" / "golden"


_site = checked_site


def expected_page(site: Site, text: str) -> str:
    """The page a search for `text` must put first: its cell, or the page telling cells apart."""
    owners = site.owners[text]
    return string_url(text) if len(owners) > 1 else site.url(owners[0])


class _Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.title = None
        self._in_title = False
        self.meta: dict[str, str] = {}
        self.h1: list[str] = []
        self._in_h1 = False
        self.pagefind_body = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag in {"link", "script", "img"} and (attrs.get("href") or attrs.get("src")):
            self.links.append(attrs.get("href") or attrs.get("src"))
        if tag == "meta" and "name" in attrs:
            self.meta[attrs["name"]] = attrs.get("content", "")
        if "data-pagefind-body" in attrs:
            self.pagefind_body = True
        self._in_title = tag == "title"
        if tag == "h1":
            self._in_h1 = True
            self.h1.append("")

    def handle_endtag(self, tag):
        if tag == "h1":
            self._in_h1 = False
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title = (self.title or "") + data
        if self._in_h1:
            self.h1[-1] += data


def parse(path: Path) -> _Collect:
    parser = _Collect()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def html_files(site_dir: Path) -> list[Path]:
    return sorted(p for p in site_dir.rglob("*.html") if "pagefind" not in p.parts)


def _target_file(site_dir: Path, page: Path, href: str) -> Path:
    path = unquote(urlparse(href).path)
    if path.startswith("/"):  # 404.html links from the site root
        target = site_dir / path.lstrip("/")
    else:
        target = (page.parent / path) if path else page
    if path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target


@pytest.mark.build
@pytest.mark.parametrize("which", ["live_site", "fixture_site"])
def test_every_internal_link_and_anchor_resolves(which, request):
    site_dir = request.getfixturevalue(which)
    parsed = {p: parse(p) for p in html_files(site_dir)}
    broken = []
    for page, found in parsed.items():
        for href in found.links:
            scheme = urlparse(href).scheme
            assert scheme != "javascript", (page, href)
            if scheme in {"http", "https", "mailto", "data"}:
                continue
            target = _target_file(site_dir, page, href)
            if not target.exists():
                broken.append((str(page.relative_to(site_dir)), href))
                continue
            fragment = urldefrag(href).fragment
            if fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else parse(target).ids
                if fragment not in ids:
                    broken.append((str(page.relative_to(site_dir)), href))
    assert broken == []


def test_one_page_per_literal_string(fixture_site):
    site = _site(FIXTURES / "site")
    for text in site.owners:
        page = fixture_site / string_url(text) / "index.html"
        found = parse(page)
        assert found.h1 == [text], text
        assert found.title == f"{text} - Blackwell serving failures"


def test_cell_page_title_description_and_h1_are_exact(fixture_site, page):
    site = _site(FIXTURES / "site")
    cell = site.by_id["hostile-signature"]
    literal = cell.entry.signatures[0].text
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    with serve(fixture_site) as base:
        page.goto(base + site.url(cell))
        assert page.title() == f"{literal} - Blackwell serving failures"
        assert page.locator("article h1").inner_text() == literal
        assert page.locator('meta[name="description"]').get_attribute("content") == cell.entry.summary
        assert page.locator('link[rel="canonical"]').count() <= 1
        assert page.evaluate("window.__pwned") is None
        assert page.locator("article img").count() == 0
        assert page.locator("article script").count() == 0
        # the literal is searchable too, and the search renders it as text
        assert search(page, "window.__pwned=1")[0].endswith(site.url(cell))
        assert page.evaluate("window.__pwned") is None
    assert dialogs == []


def test_disambiguation_and_pointer_pages(fixture_site):
    site = _site(FIXTURES / "site")
    shared = "ValueError: shared look-alike line"
    found = parse(fixture_site / string_url(shared) / "index.html")
    assert found.pagefind_body
    links = {posixpath.normpath(posixpath.join(string_url(shared), link)) for link in found.links}
    for cell_id in ("hostile-signature", "look-alike-cell"):
        assert posixpath.normpath(site.url(site.by_id[cell_id])) in links
    text = (fixture_site / string_url(shared) / "index.html").read_text(encoding="utf-8")
    # the note that tells them apart, once per pair (either entry's related note), and the decision list
    assert "names a script tag in its first line" in text or "seen on GB10 with SGLang" in text
    assert "Read down the list: the first line that fits your log is your failure." in text

    pointer = fixture_site / string_url("look-alike cell secondary line") / "index.html"
    pointer_text = pointer.read_text(encoding="utf-8")
    assert not parse(pointer).pagefind_body  # search lands on the cell, not on the pointer
    assert "Why it happens" not in pointer_text  # the body is not duplicated
    canonical = site.url(site.by_id["look-alike-cell"])
    assert posixpath.relpath(canonical, string_url("look-alike cell secondary line")) + "/" in pointer_text


def test_cell_pages_link_back_to_their_indexes(fixture_site):
    site = _site(FIXTURES / "site")
    for cell in site.cells:
        here = site.url(cell)
        found = parse(fixture_site / here / "index.html")
        targets = {posixpath.normpath(posixpath.join(here, link)) for link in found.links}
        for _, _, url in site.listed_in(cell):
            assert posixpath.normpath(url) in targets, url
            listing = (fixture_site / url / "index.html").read_text(encoding="utf-8")
            assert os.path.relpath(here, url).replace(os.sep, "/") + "/" in listing


def test_index_pages_are_not_search_bodies_and_nav_lists_no_cells(fixture_site):
    for path in html_files(fixture_site):
        rel = path.relative_to(fixture_site).as_posix()
        if rel.startswith("id/"):  # a page that only sends the reader to the cell (tests/test_ids.py)
            continue
        found = parse(path)
        # A family page is searched too (issue 35: the family answer in search); the list of families is not.
        family = rel.startswith("families/") and rel != "families/index.html"
        assert found.pagefind_body == family or (rel.startswith("e/") and (
            "look-alike-line" in rel or found.h1 and "kb-cell" in path.read_text(encoding="utf-8"))), rel
        nav = path.read_text(encoding="utf-8").split('<div class="md-content"')[0]
        assert 'href="e/' not in nav and "/e/" not in nav, rel


def test_home_lists_newest_cells(fixture_site):
    site = _site(FIXTURES / "site")
    home = (fixture_site / "index.html").read_text(encoding="utf-8")
    newest = site.newest()
    assert [c.id for c in newest][:1] == ["mla-decode-fp8-kv-triton-shared-memory"]
    positions = [home.index(site.url(c)) for c in newest]
    assert positions == sorted(positions)


# Every query answered by the page's own search (kb-search.js's `answer`, what the box shows),
# one after another in one call: the literal strings' shards load as the queries need them, as
# they would for a reader typing each in turn.
_ANSWER_ALL = """async (queries) => {
  const firsts = [];
  for (const query of queries) {
    const found = await window.kbSearch.answer(query, {}, false);
    firsts.push(found.items.slice(0, 3).map((item) => item.href));
  }
  return firsts;
}"""


def test_every_signature_of_every_live_cell_is_found_first(live_site, page):
    """Each literal string, as typed and in quotes, puts its cell (or the page telling its cells
    apart) first among the header search's results."""
    site = _site(ROOT / "kb" / "entries")
    cases = [(text, query) for text in sorted(site.owners) for query in (text, f'"{text}"')]
    with serve(live_site) as base:
        page.goto(base + "about/")
        page.wait_for_function("window.kbSearch !== undefined")
        results = page.evaluate(_ANSWER_ALL, [query for _, query in cases])
    misses = []
    for (text, query), found in zip(cases, results, strict=True):
        want = base + expected_page(site, text)
        got = base.rstrip("/") + found[0] if found and found[0].startswith("/") else None
        if got != want:
            misses.append((query, found, want))
    assert len(results) == 2 * len(site.owners) and misses == []


@pytest.mark.parametrize("name,url", [
    ("cell-mla-decode.html", "e/"),
    ("listing-component-vllm.html", "by/component/vllm/"),
])
def test_golden_pages(name, url):
    site = _site(FIXTURES / "site")
    renderer = Renderer(site)
    pages = {p.url: p for p in renderer.all_pages()}
    if url == "e/":
        url = site.url(site.by_id["mla-decode-fp8-kv-triton-shared-memory"])
    body = pages[url].body
    golden = GOLDEN / name
    if os.environ.get("KB_UPDATE_GOLDEN"):
        golden.write_text(body, encoding="utf-8")
    assert body == golden.read_text(encoding="utf-8"), f"rendered page changed; KB_UPDATE_GOLDEN=1 to accept"


def test_search_index_holds_what_people_search_and_not_tables_or_links(fixture_site):
    """Pagefind's stored text of a cell page (its fragment): the literal strings, the summary and
    the mechanism; not the measurement tables and charts, the upstream list, claims or related."""
    import gzip
    import json as json_lib

    fragments = {}
    for path in (fixture_site / "pagefind" / "fragment").glob("*.pf_fragment"):
        raw = gzip.decompress(path.read_bytes())
        assert raw.startswith(b"pagefind_dcd")
        data = json_lib.loads(raw[len(b"pagefind_dcd"):])
        fragments[data["url"]] = data["content"]
    site = _site(FIXTURES / "site")
    cell = site.by_id["mla-decode-fp8-kv-triton-shared-memory"]
    content = fragments["/" + site.url(cell)]
    e = cell.entry
    for wanted in [s.text for s in e.signatures] + ["fixes BLOCK_DMODEL at 512", e.summary.split(".")[0]]:
        assert wanted in content, wanted
    for unwanted in [m.quantity for m in e.measurements] + ["vllm-project/vllm/issues/53748", "Fixed by PR 54013"]:
        assert unwanted not in content, unwanted


def test_page_chrome_is_not_indexed_by_the_search():
    """The dates line, the cite-as id and the Copy button are page chrome: Pagefind skips them
    (`data-pagefind-ignore`), so a result's excerpt never reads "Copy Checked against upstream ...
    cite as BWKB-..." (ux-review-2026-12-05 S1-2)."""
    site = _site(FIXTURES / "site")
    page = {p.url: p for p in Renderer(site).all_pages()}[site.url(site.by_id["mla-decode-fp8-kv-triton-shared-memory"])]
    chrome = re.findall(r'<(?:p|button)[^>]*class="kb-(?:copy|checked|dates)"[^>]*>', page.body)
    assert len(chrome) == 3 and all("data-pagefind-ignore" in tag for tag in chrome), chrome
