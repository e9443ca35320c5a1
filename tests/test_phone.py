"""Phone and accessibility (issue 24 item 8), in Chromium at 320x640 and 390x844 on a sample of
every kind of page (a cell, the cell with a measurement table, a pointer, a disambiguation page,
a listing, the every-failure list, the matrix, the freshness page, triage, about, home):

- nothing scrolls sideways (WCAG 1.4.10 reflow): the document is no wider than the window;
- list, footer and Edit / Report links are at least 24 px tall (WCAG 2.5.8 target size; links
  inside a sentence are exempt);
- links in content text are underlined, so they are told apart without colour (WCAG 1.4.1);
- loading a page fetches no sitemap.xml (Material's bundle fetched one for every
  `link[rel=alternate]`, which our feed link was), while the feed stays discoverable.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from browser import serve
from conftest import ROOT, checked_site

VIEWPORTS = [(320, 640), (390, 844)]
MEASURED = "mla-decode-fp8-kv-triton-shared-memory"  # its measurement table was 347 px wide at 320

# Links that are targets on their own (not words inside a sentence).
TARGETS = [
    "a.kb-edit", "a.kb-report",  # the card's Edit this entry / Report a problem
    ".kb-footer a",
    ".kb-listed li > a",  # a cell's "Listed in"
    "ul.kb-cells > li > a",  # listings
    "ul.kb-groups > li > a",  # browse: the groups of a facet
    "a.kb-matrix__count",  # the serving matrix (counts only: no titles on the grid)
    "table.kb-all td > a",  # every failure
]
# Content links that must be underlined: in a paragraph, a list item, a table cell, a definition.
CONTENT_LINKS = ".md-content article :is(p, li, td, dd) > a:not(.md-button, [aria-current])"  # the current page is boxed


@pytest.fixture
def site(live_site_with_repo):
    """The live site with Edit and Report links, built once per run (conftest)."""
    return live_site_with_repo


@pytest.fixture(scope="module")
def sample():
    """One URL of each kind of page (site-relative, no leading slash)."""
    from kb.records.catalog import string_url

    cells = checked_site(ROOT / "kb" / "entries")
    measured = cells.by_id[MEASURED]
    assert measured.entry.measurements  # the page with a measurement table
    pointer = next(t for t, owners in cells.owners.items() if len(owners) == 1
                   and t != owners[0].entry.signatures[0].text)
    shared = next(t for t, owners in cells.owners.items() if len(owners) > 1)
    return {
        "cell with a measurement table": cells.url(measured).lstrip("/"),
        "cell": cells.url(cells.cells[0]).lstrip("/"),
        "pointer": string_url(pointer).lstrip("/"),
        "disambiguation": string_url(shared).lstrip("/"),
        "listing": "by/gpu/rtx-5090/",
        "facet": "by/gpu/",
        "every failure": "all/",
        "matrix": "matrix/",
        "freshness": "freshness/",
        "triage": "triage/",
        "about": "about/",
        "home": "",
    }


def _open(browser, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    return context, context.new_page()


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_no_page_scrolls_sideways(site, sample, browser, width, height):
    context, page = _open(browser, width, height)
    wide = []
    with serve(site) as base:
        for kind, url in sample.items():
            assert page.goto(base + url).status == 200, url
            scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            if scroll > inner:
                culprit = page.evaluate("""w => [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > w + 0.5)
                    .map(e => e.tagName.toLowerCase() + '.' + [...e.classList].join('.')).slice(-3)""", inner)
                wide.append(f"{kind} /{url}: {scroll} px wide in {inner} ({culprit})")
    context.close()
    assert wide == [], f"sideways scroll at {width} px: " + "; ".join(wide)


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_list_footer_and_edit_links_are_24_px_targets(site, sample, browser, width, height):
    context, page = _open(browser, width, height)
    small, seen = [], set()
    with serve(site) as base:
        for kind, url in sample.items():
            page.goto(base + url)
            for selector in TARGETS:
                for link in page.locator(selector).all():
                    if not link.is_visible():
                        continue
                    seen.add(selector)
                    box = link.bounding_box()
                    if box["height"] < 24:
                        small.append(f"{kind}: {selector} {link.inner_text()[:30]!r} {box['height']:.1f} px tall")
    context.close()
    assert seen == set(TARGETS)  # every kind of target was on some page of the sample
    assert small == [], f"{len(small)} targets under 24 px at {width} px: " + "; ".join(small[:12])


def test_content_links_are_underlined(site, sample, browser):
    context, page = _open(browser, 390, 844)
    plain, count = [], 0
    with serve(site) as base:
        for kind, url in sample.items():
            page.goto(base + url)
            for link in page.locator(CONTENT_LINKS).all():
                if not link.is_visible():
                    continue
                count += 1
                line = link.evaluate("a => getComputedStyle(a).textDecorationLine")
                if "underline" not in line:
                    plain.append(f"{kind}: {link.inner_text()[:40]!r} ({line})")
    context.close()
    assert count > 50
    assert plain == [], f"{len(plain)} content links not underlined: " + "; ".join(plain[:12])


def test_the_card_link_in_a_definition_is_underlined(site, sample, browser):
    """The review's one Lighthouse failure: the card's "N more below" link in a <dd> (on a line of its
    own there since issue 37), on the first cell whose card has one."""
    from kb.records.state import state

    cells = checked_site(ROOT / "kb" / "entries")
    more = next(c for c in sorted(cells.cells, key=lambda c: c.id) if state(c.entry).more)
    context, page = _open(browser, 1366, 900)
    with serve(site) as base:
        page.goto(base + cells.url(more).lstrip("/"))
        more = page.locator(".kb-card dd a[href='#fix']")
        assert more.count() == 1
        assert "underline" in more.evaluate("a => getComputedStyle(a).textDecorationLine")
    context.close()


def test_no_page_fetches_the_sitemap_and_the_feed_stays_discoverable(site, sample, browser):
    context, page = _open(browser, 390, 844)
    requested = []
    page.on("request", lambda request: requested.append(urlsplit(request.url).path))
    with serve(site) as base:
        for kind, url in sample.items():
            page.goto(base + url, wait_until="load")
            page.wait_for_timeout(300)  # the bundle's requests start after load
            feed = page.evaluate("""() => [...document.querySelectorAll('link[type="application/atom+xml"]')]
                .filter(l => l.relList.contains('alternate')).map(l => l.href)""")
            assert feed == [base + "feed.xml"], (kind, feed)
    context.close()
    assert len(requested) > len(sample)
    assert [path for path in requested if path.endswith("sitemap.xml")] == []
