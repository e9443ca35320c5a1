"""Listings split into pages, and pointer pages kept small (#12): the page list, the titles, the
first sentence of a summary, and golden pages for a later page of a listing, a later page of
`freshness/` and a pointer page."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, checked_site
from kb.records import catalog
from kb.records.catalog import Paging, paged_url, paginate
from kb.records.slug import slug
from kb.site import freshness
from kb.site.pages import Renderer, Site, first_sentence

GOLDEN = Path(__file__).resolve().parent / "golden"


_site = checked_site


def _pages(site: Site) -> dict:
    return {p.url: p for p in Renderer(site).all_pages()}


def _golden(name: str, body: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("KB_UPDATE_GOLDEN"):
        golden.write_text(body, encoding="utf-8")
    assert body == golden.read_text(encoding="utf-8"), "rendered page changed; KB_UPDATE_GOLDEN=1 to accept"


def test_page_urls_keep_the_first_page_at_the_listing_url():
    assert paged_url("by/gpu/gb10/", 1) == "by/gpu/gb10/"
    assert paged_url("by/gpu/gb10/", 2) == "by/gpu/gb10/2/"
    assert catalog.paged_urls("freshness/", 0, 10) == ["freshness/"]  # an empty listing still has its page
    assert catalog.paged_urls("freshness/", 21, 10) == ["freshness/", "freshness/2/", "freshness/3/"]


def test_pages_split_a_listing_in_order():
    pages = paginate("x/", list(range(7)), 3)
    assert [(p.url, items) for p, items in pages] == [("x/", [0, 1, 2]), ("x/2/", [3, 4, 5]), ("x/3/", [6])]
    assert [(p.start, p.stop, p.total, p.count) for p, _ in pages] == [(0, 3, 7, 3), (3, 6, 7, 3), (6, 7, 7, 3)]
    assert [(p.previous, p.next) for p, _ in pages] == [(None, "x/2/"), ("x/", "x/3/"), ("x/2/", None)]


@pytest.mark.parametrize("number, count, shown", [
    (1, 1, [1]),
    (1, 5, [1, 2, 3, 4, 5]),
    (1, 50, [1, 2, 3, None, 50]),
    (5, 50, [1, 2, 3, 4, 5, 6, 7, None, 50]),  # a gap of one page is named, not elided
    (25, 50, [1, None, 23, 24, 25, 26, 27, None, 50]),
    (50, 50, [1, None, 48, 49, 50]),
])
def test_the_page_list_stays_short(number, count, shown):
    paging = Paging("x/", number, count, count * 10, (number - 1) * 10, number * 10)
    assert paging.window() == shown
    assert len(Paging("x/", 5000, 10000, 0, 0, 0).window()) == 9


def test_later_pages_say_which_page_they_are():
    paging = Paging("x/", 2, 3, 30, 10, 20)
    assert catalog.paged_title("Freshness", paging) == "Freshness (page 2 of 3)"
    assert catalog.paged_title("Freshness", Paging("x/", 1, 3, 30, 0, 10)) == "Freshness"


@pytest.mark.parametrize("text, first", [
    ("One. Two.", "One."),
    ("Fails on vLLM 0.12.0. The fix is in 0.13.", "Fails on vLLM 0.12.0."),
    ("Models (e.g. DeepSeek-V3) crash. Then more.", "Models (e.g. DeepSeek-V3) crash."),
    ("Ends with no stop", "Ends with no stop"),
    ("No sm_120 code. pip installs it.", "No sm_120 code. pip installs it."),  # no capital: one sentence
])
def test_first_sentence(text, first):
    assert first_sentence(text) == first


def test_golden_later_page_of_a_listing(monkeypatch):
    monkeypatch.setattr(catalog, "PER_PAGE", 1)
    pages = _pages(_site(FIXTURES / "site"))
    assert {"by/upstream/vllm-project-vllm/2/", "by/upstream/vllm-project-vllm/3/"} <= set(pages)
    assert "by/upstream/vllm-project-vllm/4/" not in pages
    page = pages["by/upstream/vllm-project-vllm/2/"]
    assert page.title == "Upstream repository: vllm-project/vllm (page 2 of 3)"
    _golden("listing-upstream-vllm-page-2.html", page.body)


def test_golden_later_page_of_freshness(monkeypatch):
    monkeypatch.setattr(freshness, "PER_PAGE", 4)
    site = _site(FIXTURES / "freshness")
    pages = _pages(site)
    claims = freshness.oldest_first(site.cells)
    found = []
    for number in (1, 2, 3):
        body = pages[paged_url(freshness.URL, number)].body
        found += re.findall(r'<li data-as-of="([^"]+)" data-cell="([^"]+)"', body)
    assert found == [(d.as_of, d.cell.id) for d in claims]
    assert "freshness/4/" not in pages
    # a date whose claims run over from one page to the next is headed "(continued)" there
    assert "Last checked 2026-10-03 (continued): 4</h3>" in pages["freshness/3/"].body
    _golden("freshness-page-2.html", pages["freshness/2/"].body)


def test_golden_pointer_page():
    site = _site(FIXTURES / "site")
    text = "_decode_grouped_att_m_fwd shared memory"
    page = _pages(site)[f"e/{slug(text)}/"]
    assert page.kind == "pointer"
    _golden("pointer-mla-decode.html", page.body)
