"""Variant and disambiguation pages joined to the rest (issue 37 item 4), read from the built HTML.

A variant page (a literal that is not its entry's first) is linked from its entry's "How it shows
up" list, opens with "You searched:" and the literal, has the Copy button and the dates line, names
its entry's title as an H2, and defers to the entry page (canonical link, left out of the sitemap).
A disambiguation page is linked from every entry that prints its string, compares each pair once
and ends each line of its decision list in that failure's Do now."""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pytest

from conftest import ROOT, builds_site, checked_site
from html_page import Page
from kb.records.catalog import string_url
from kb.records.state import state
from kb.site import decide

SITE_URL = "https://example.org/kb/"


@pytest.fixture(scope="module")
def site():
    return checked_site(ROOT / "kb" / "entries")


@pytest.fixture(scope="module")
@builds_site
def built(tmp_path_factory):
    """The live site with a public URL (the canonical links and the sitemap need one)."""
    from conftest import _build

    return _build(ROOT / "kb" / "entries", tmp_path_factory.mktemp("variants") / "site", site_url=SITE_URL)


def _page(built, url: str) -> Page:
    return Page(built / url / "index.html")


def _links(page: Page, url: str) -> set[str]:
    """Where the links of the "How it shows up" list on the page at `url` go, as site URLs."""
    heading = page.select_one("#signatures")
    found = set()
    for a in heading.next_element().select("a"):
        found.add(urljoin(SITE_URL + url, a.attrs["href"]).removeprefix(SITE_URL))
    return found


def test_every_variant_and_disambiguation_page_is_linked_from_each_entry_that_prints_its_string(site, built):
    missing = []
    for cell in site.cells:
        here = site.url(cell)
        linked = _links(_page(built, here), here)
        for s in cell.entry.signatures:
            shared = len(site.owners[s.text]) > 1
            if (shared or s.text != cell.entry.signatures[0].text) and string_url(s.text) not in linked:
                missing.append(f"{cell.id}: {s.text[:60]}")
    assert missing == []
    assert sum(len(site.owners[t]) > 1 for t in site.owners) >= 1  # the disambiguation case is exercised


def test_a_variant_page_says_what_was_searched_and_defers_to_its_entry(site, built):
    variants = [(c, s.text) for c in site.cells for s in c.entry.signatures[1:] if len(site.owners[s.text]) == 1]
    assert len(variants) > 50
    sitemap = (built / "sitemap.xml").read_text(encoding="utf-8")
    for cell, text in variants[::7]:  # a sample: every page is built by the one template
        url = string_url(text)
        page = _page(built, url)
        body = page.body.inner_text()
        # The header above repeats the page title; white space as a reader sees it.
        content = " ".join(body[body.index("You searched:"):].split())
        assert 0 < content.index(" ".join(text.split())) < content.index(" ".join(cell.entry.title.split())), url
        assert page.select_one("h1").inner_text() == " ".join(text.split())
        assert page.select_one("h2.kb-pointer__title").inner_text() == cell.entry.title
        copy = page.select_one("button.kb-copy")
        assert copy is not None and copy.attrs["data-copy-from"] == page.select_one("h1").attrs["id"]
        checked = page.select_one("p.kb-checked")
        assert checked is not None and "data-pagefind-ignore" in checked.attrs
        assert checked.inner_text() == _page(built, site.url(cell)).select_one("p.kb-checked").inner_text()  # the entry's
        html = (built / url / "index.html").read_text(encoding="utf-8")
        canonical = re.search(r'<link rel="canonical" href="([^"]+)"', html).group(1)
        assert canonical == SITE_URL + site.url(cell), url
        assert SITE_URL + url not in sitemap and SITE_URL + site.url(cell) in sitemap


def test_a_disambiguation_page_compares_each_pair_once_and_ends_each_choice_in_its_do_now(site, built):
    shared = {t: cells for t, cells in site.owners.items() if len(cells) > 1}
    assert shared
    for text, cells in shared.items():
        page = _page(built, string_url(text))
        choices = page.select("ol.kb-decide > li")
        assert len(choices) == len(cells)
        order = decide.choices(cells, site.owners)
        for li, choice in zip(choices, order):
            line = li.inner_text()
            assert choice.cell.entry.title in line
            assert line.rstrip().endswith(state(choice.cell.entry).line.what.rstrip(".") + (
                f" ({state(choice.cell.entry).line.package + ' ' if state(choice.cell.entry).line.package else ''}"
                f"{state(choice.cell.entry).line.versions})" if state(choice.cell.entry).line.versions else "") + "."), line
        if len(choices) > 1:
            assert choices[-1].inner_text().startswith("Otherwise")
        pairs = [tuple(sorted(re.findall(r"<strong>(.*?)</strong>", p.inner_html())))
                 for p in page.select("article > p") if " versus " in p.inner_text()]
        assert len(pairs) == len(set(pairs))


def test_the_decision_list_puts_a_printed_line_before_an_architecture_and_leaves_the_rest_last(site):
    cells = site.owners["RuntimeError: CUDA error: no kernel image is available for execution on the device"]
    order = decide.choices(cells, site.owners)
    kinds = [c.kind for c in order]  # one package choice per cell a version decides, however many share it
    assert kinds[:2] == ["line", "architecture"] and kinds[2:] and set(kinds[2:]) == {"package"}
    assert order[0].cell.id == "torch-sm120-not-compatible-pytorch-install"
    assert order[1].value.startswith("sm_121")
