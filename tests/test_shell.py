"""Pages filled into a shell (kb.site.shell) are the pages the theme would have written: a site built
with shells and one built with every page through the theme are the same, file for file."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, ROOT, _build
from kb.site import shell
from kb.site.page import Page

SITE_URL = "https://example.org/kb/"

pytestmark = pytest.mark.build  # each test builds sites


def _sitemap(text: str) -> list[tuple[str, str]]:
    return sorted(re.findall(r"<url>\s*<loc>([^<]*)</loc>\s*(?:<lastmod>([^<]*)</lastmod>)?", text))


@pytest.mark.parametrize("entries", [FIXTURES / "site", ROOT / "kb" / "entries"], ids=["fixtures", "live"])
def test_shells_give_the_same_site_as_the_theme(entries, tmp_path):
    filled = _build(entries, tmp_path / "filled", site_url=SITE_URL, repo_url="https://github.com/example/kb")
    themed = _build(entries, tmp_path / "themed", site_url=SITE_URL, repo_url="https://github.com/example/kb",
                    shells=False)
    def files(site):  # Pagefind's file names depend on the order it reads pages in: left out
        return {p.relative_to(site) for p in site.rglob("*") if p.is_file() and p.relative_to(site).parts[0] != "pagefind"}

    assert files(filled) == files(themed)
    assert not any("kbshell" in str(p) for p in files(filled))
    pages = sorted(p for p in files(filled) if p.suffix == ".html")
    assert len([p for p in pages if p.parts[0] == "e"]) > 5
    assert [p for p in sorted(files(filled)) if not p.name.startswith("sitemap.xml")
            and (filled / p).read_bytes() != (themed / p).read_bytes()] == []
    assert _sitemap((filled / "sitemap.xml").read_text(encoding="utf-8")) == \
        _sitemap((themed / "sitemap.xml").read_text(encoding="utf-8"))


def test_a_value_holding_a_token_is_not_filled_again():
    html = "<title>{t}</title><main>{b}</main><link href='/{u}'>".format(
        t=shell.TOKENS["title"], b=shell.TOKENS["body"], u=shell.stand_in("e/p").url)
    page = Page(url="e/x-1/", title=f"<{shell.TOKENS['body']}>", description="d",
                body=f"<h1>{shell.TOKENS['title']}</h1>", kind="pointer")
    assert shell.Shell(html, "e/p").fill(page) == \
        f"<title>&lt;{shell.TOKENS['body'].replace('<', '&lt;').replace('>', '&gt;')}&gt;</title>" \
        f"<main><h1>{shell.TOKENS['title']}</h1></main><link href='/e/x-1/'>"


def test_only_pages_outside_the_navigation_with_their_own_h1_are_filled():
    def page(url, body="<h1>x</h1>"):
        return Page(url=url, title="t", description="d", body=body, kind="cell")
    nav = {"index.md", "by/gpu.md", "triage.md"}
    assert shell.fits(page("e/abc-1/"), nav)
    assert shell.fits(page("by/gpu/rtx-5090/page-2/"), nav)
    assert not shell.fits(page("by/gpu/"), nav)
    assert not shell.fits(page(""), nav)
    assert not shell.fits(page("e/abc-1/", body="<p>no heading</p>"), nav)
    assert shell.kind_of(page("by/gpu/rtx-5090/page-2/")) == "by/gpu/rtx-5090/p"
    assert shell.stand_in("by/gpu/rtx-5090/p").url == f"by/gpu/rtx-5090/{shell.TOKENS['title'].replace('title', 'urlp')}/"
