"""The families' pages (kb.site.familypages), read from the built live site (no browser): each family's
page has its how-to-tell, checks, fix and lines, and lists exactly the entries whose record names the
family (title, citable id, status), each linking to its page; each of those pages links back under
"Why it happens"; the list of families and the browse and home pages lead to them."""

from __future__ import annotations

import gzip
import json
import posixpath

import pytest

from html_page import Page
from kb.records import families

RECORDS = {r.id: r for r in families.load_families(families.HERE)[0]}


def _api_index(site) -> list[dict]:
    return json.loads((site / "api" / "v1" / "index.json").read_text(encoding="utf-8"))["cells"]


def _record(site, cell_id: str) -> dict:
    return json.loads((site / "api" / "v1" / "cells" / f"{cell_id}.json").read_text(encoding="utf-8"))


def _target(here: str, href: str) -> str:
    """The site URL a relative link on the page at URL `here` goes to."""
    return posixpath.normpath(posixpath.join(here, href)) + "/"


@pytest.fixture(scope="module")
def members(live_site) -> dict[str, list[dict]]:
    """family id -> the API records of the cells that name it, in citable-id order."""
    found: dict[str, list[dict]] = {family: [] for family in RECORDS}
    for summary in _api_index(live_site):
        api = _record(live_site, summary["id"])
        if api["record"].get("family"):
            found[api["record"]["family"]].append(api)
    return {k: sorted(v, key=lambda a: a["citable_id"]) for k, v in found.items()}


def test_each_family_page_lists_its_entries_and_says_how_to_tell_check_and_fix(live_site, members):
    assert sum(len(v) for v in members.values()) >= 28  # the entries classified so far
    for family, record in RECORDS.items():
        url = f"families/{family}/"
        page = Page(live_site / url / "index.html")
        assert page.select_one("h1#kb-family").inner_text() == record.family.title
        text = page.body.inner_text()
        for shown in (record.family.how_to_tell, record.family.fix, *(c.command for c in record.family.checks),
                      *(c.shows for c in record.family.checks), *(p.text for p in record.family.patterns)):
            assert " ".join(shown.split()) in text, (family, shown)
        rows = page.select("ul.kb-family__members li")
        assert len(rows) == len(members[family]), family
        for row, api in zip(rows, members[family]):  # citable-id order, as the Every failure list
            link = row.select_one("a")
            assert link.inner_text() == api["record"]["title"]
            assert _target(url, link.attrs["href"]) == api["url"]
            assert row.select_one("code.kb-id").inner_text() == api["citable_id"]
            assert row.select_one("span.kb-status") is not None
        if not members[family]:
            assert "No entry of the index is of this family yet." in text


def test_each_member_page_links_back_to_its_family_and_no_other_page_does(live_site, members):
    family_of = {api["id"]: family for family, apis in members.items() for api in apis}
    for summary in _api_index(live_site):
        api = _record(live_site, summary["id"])
        page = Page(live_site / api["url"] / "index.html")
        found = page.select("p.kb-family-link")
        if summary["id"] not in family_of:
            assert found == [], summary["id"]
            continue
        (line,) = found
        family = family_of[summary["id"]]
        link = line.select_one("a")
        assert _target(api["url"], link.attrs["href"]) == f"families/{family}/"
        assert link.inner_text() == RECORDS[family].family.title
        # Right after the cause ("Why it happens"), outside the search index (the family's page is searched).
        assert page.select_one("#mechanism + div.kb-prose + p.kb-family-link") is line
        assert "data-pagefind-ignore" in line.attrs


def test_the_families_are_listed_and_reached_from_the_browse_and_home_pages(live_site, members):
    listing = Page(live_site / "families" / "index.html")
    links = {_target("families/", a.attrs["href"]): a.inner_text() for a in listing.select("ul.kb-families a")}
    assert links == {f"families/{k}/": r.family.title for k, r in RECORDS.items()}
    for family, apis in members.items():
        assert f"{RECORDS[family].family.title} ({len(apis)} {'entry' if len(apis) == 1 else 'entries'})" in \
            listing.body.inner_text()
    for url in ("by/", ""):
        page = Page(live_site / url / "index.html")
        assert "families/" in {_target(url or ".", a.attrs["href"]) for a in page.body.select("a") if "href" in a.attrs}, url


def test_family_pages_are_in_the_search_index_marked_as_families(live_site):
    """Pagefind holds each family page, its result labelled as a family, with the family's lines."""
    from kb.site import index

    held = {}
    shards = json.loads((live_site / "pagefind" / index.SHARDS_FILE).read_text(encoding="utf-8"))["indexes"]
    for folder in shards:
        for path in (live_site / "pagefind" / folder / "fragment").glob("*.pf_fragment"):
            data = json.loads(gzip.decompress(path.read_bytes())[len(b"pagefind_dcd"):])
            held[data["url"]] = data
    for family, record in RECORDS.items():
        data = held[f"/families/{family}/"]
        assert data["meta"]["title"] == record.family.title
        assert data["meta"]["cell"].startswith("A family of failures: ")
        for pattern in record.family.patterns:
            assert " ".join(pattern.text.split()) in data["content"], (family, pattern.text)
    assert "/families/" not in held  # the list is not searched: a family's page is
