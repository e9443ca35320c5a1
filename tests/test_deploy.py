"""The documented deployment build, run exactly as the README gives it (`make site
SITE_URL=https://example.org/kb/`, into a temporary folder): canonical links, a sitemap of
absolute URLs, robots.txt naming it, an absolute feed, and a 404 page that works at any depth
under the sub-path. Without SITE_URL it stops and says why."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from browser import serve
from conftest import ROOT, builds_site, checked_site

SITE_URL = "https://example.org/kb/"  # the README's example
PREFIX = "/kb/"


@pytest.fixture(scope="module")
@builds_site
def deployed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("deploy") / "site"
    done = subprocess.run(["make", "site", f"SITE_URL={SITE_URL}", f"SITE_DIR={out}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_readme_gives_this_command():
    assert f"make site SITE_URL={SITE_URL}" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_without_site_url_it_stops_and_builds_nothing(tmp_path):
    done = subprocess.run(["make", "site", f"SITE_DIR={tmp_path / 'site'}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0
    assert "set SITE_URL to the public address the site is served from" in done.stderr
    assert not (tmp_path / "site").exists()


def test_kb_build_wants_a_site_url_or_preview(tmp_path, capsys):
    from kb.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["build", "-d", str(tmp_path / "site")])
    assert exit_.value.code == 2
    assert "one of the arguments --site-url --preview is required" in capsys.readouterr().err
    for bad in ("http://example.org/", "example.org/kb/", "https://example.org/kb/?q=1", 'https://x.org/"'):
        with pytest.raises(SystemExit):
            main(["build", "-d", str(tmp_path / "site"), "--site-url", bad])
        assert "is not" in capsys.readouterr().err


def test_canonical_sitemap_robots_feed(deployed):
    site = checked_site(ROOT / "kb" / "entries")
    sitemap = (deployed / "sitemap.xml").read_text(encoding="utf-8")
    locs = re.findall(r"<loc>([^<]+)</loc>", sitemap)
    for cell in site.cells:
        url = SITE_URL + site.url(cell)
        assert url in locs
        page = (deployed / site.url(cell) / "index.html").read_text(encoding="utf-8")
        assert f'<link rel="canonical" href="{url}">' in page
    assert all(loc.startswith(SITE_URL) for loc in locs)
    assert f"Sitemap: {SITE_URL}sitemap.xml" in (deployed / "robots.txt").read_text(encoding="utf-8").splitlines()
    feed = (deployed / "feed.xml").read_text(encoding="utf-8")
    assert f'<link rel="self" href="{SITE_URL}feed.xml"' in feed


def test_404_page_works_at_any_depth(deployed, page):
    with serve(deployed, prefix=PREFIX, not_found=deployed / "404.html") as base:
        response = page.goto(base + "e/no-such-error/deeper/still/")
        assert response.status == 404
        assert page.locator("h1").inner_text() == "No page at this address"
        # Both stylesheets loaded from the sub-path: the theme's (sticky header) and ours (search bar).
        assert page.evaluate("getComputedStyle(document.querySelector('.md-header')).position") == "sticky"
        assert page.evaluate("getComputedStyle(document.getElementById('kb-search')).display") == "flex"
        triage = page.locator(".md-content a", has_text="Triage a log")
        assert triage.get_attribute("href") == f"{PREFIX}triage/"
        page.locator("#kb-search-input").fill("no kernel image is available")
        page.wait_for_function("document.getElementById('kb-search').getAttribute('data-done-query')")
        assert page.locator(".kb-search__link").count() >= 1
