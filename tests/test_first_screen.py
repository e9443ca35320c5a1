"""The reader's first screen (#15): on every cell page, at a laptop's 1366x900 and a phone's
390x844, the error string with its copy button, the status, the cause, who is affected, the fix
or workaround with its version and date, and the Edit / Report links all sit inside the first
viewport, measured in Chromium from the elements' boxes; plus the page furniture around it
(skip link, footer, feed link, home title, dark mode)."""

from __future__ import annotations

from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

from browser import serve
from conftest import ROOT, _build, checked_site

REPO = "https://github.com/example/blackwell-kb"
VIEWPORTS = [(1366, 900), (390, 844)]
FIRST_SCREEN = {
    "error string": ".kb-head h1",
    "copy button": ".kb-head .kb-copy",
    "status": ".kb-lede .kb-status",
    "cause": ".kb-card__cause",
    "affects": ".kb-card__affects",
    "do now": ".kb-card__fix",
    "edit link": "a.kb-edit",
    "report link": "a.kb-report",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return _build(ROOT / "kb" / "entries", tmp_path_factory.mktemp("first") / "site", repo_url=REPO)


@pytest.fixture(scope="module")
def cells():
    return checked_site(ROOT / "kb" / "entries")


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_every_cell_answers_on_the_first_screen(site, cells, browser, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    outside = []
    with serve(site) as base:
        for cell in cells.cells:
            page.goto(base + cells.url(cell))
            for name, selector in FIRST_SCREEN.items():
                box = page.locator(selector).first.bounding_box()
                if box is None or box["y"] < 0 or box["y"] + box["height"] > height or box["width"] == 0:
                    outside.append(f"{cell.id}: {name} at {box}")
    context.close()
    assert outside == [], f"not on the first screen at {width}x{height}: " + "; ".join(outside)


def test_a_long_error_string_is_cut_on_a_phone_and_a_tap_shows_it_whole(site, cells, browser):
    """On a phone, the longest literal heading is cut to a few lines (so the answer stays on the
    first screen); a tap on it shows every line, and Copy still copies the whole string."""
    cell = max(cells.cells, key=lambda c: len(c.entry.signatures[0].text))
    text = cell.entry.signatures[0].text
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    cut = "(h) => [h.clientHeight, h.scrollHeight]"
    with serve(site) as base:
        page.goto(base + cells.url(cell))
        h1 = page.locator(".kb-head h1")
        shown, whole = h1.evaluate(cut)
        assert shown < whole, f"{cell.id}: the {len(text)}-character heading is not cut on a phone"
        assert h1.text_content() == text
        h1.click()
        shown, whole = h1.evaluate(cut)
        assert shown == whole
        page.locator(".kb-head .kb-copy").click()
        assert page.evaluate("navigator.clipboard.readText()") == text
    context.close()


def test_first_screen_says_what_the_record_says(site, cells, page):
    """The card's lines come from the record: first sentence of the summary, the version range
    or the words for none, the fix or workaround with its date."""
    with serve(site) as base:
        for cell in cells.cells:
            e = cell.entry
            page.goto(base + cells.url(cell))
            cause = page.locator(".kb-card__cause").inner_text()
            assert e.summary.startswith(cause), cell.id
            affects = page.locator(".kb-card__affects").inner_text()
            assert all(a in affects for a in e.hardware.architectures)
            ranged = [c for c in e.components if c.affected or c.fixed_in]
            if ranged:
                assert all((c.affected or c.fixed_in) in affects for c in ranged), cell.id
            else:
                assert "no affected version range is known" in affects, cell.id
            fix = page.locator(".kb-card__fix").inner_text()
            assert page.locator(".kb-card__fix").evaluate("d => d.previousElementSibling.textContent") == "Do now"
            expected = _do_now_from_yaml(cell.path)
            if expected:
                words, remedy = expected
                assert fix.startswith(f"{words}: {remedy['what']}"), (cell.id, fix, words)
                assert remedy["as_of"] in fix, cell.id
            else:
                assert e.status.as_of in fix, cell.id


def _do_now_from_yaml(path):
    """What the Do-now row must show, read straight from the YAML: the first of a released fix (an
    upgrade naming its releases, a merged fix whose component names its first release, or a setting),
    a workaround (a flag, variable, setting or pin before a source patch), a merged fix, an open pull
    request, anything else; record order within each."""
    import yaml

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    link_state = {(link["url"], link["kind"]): link["state"] for link in raw["upstream"]}
    released_packages = {c["package"] for c in raw["components"] if c.get("fixed_in")}
    fixed_status = raw["status"]["state"] in ("fixed-main", "fixed-release")
    tiers = {"released": [], "workaround": [], "patched": [], "main": [], "open": [], "other": []}
    for fix in raw.get("fixes", []):
        merged = "merged" in (link_state.get((fix["source"], "pr")), link_state.get((fix["source"], "commit")))
        if (fix["kind"] == "version-upgrade" and fix.get("applies")) or fix["kind"] in ("flag", "env-var", "config"):
            tiers["released"].append(("Released fix" if fix["kind"] == "version-upgrade" else "Fix", fix))
        elif link_state.get((fix["source"], "pr")) == "open":
            tiers["open"].append(("Proposed fix (open pull request)", fix))
        elif (merged or fixed_status) and fix.get("package") in released_packages:
            tiers["released"].append(("Released fix", fix))
        elif merged or fixed_status:
            tiers["main"].append(("Fix on main, not released", fix))
        else:
            tiers["other"].append(("Proposed fix, not merged", fix))
    for workaround in raw.get("workarounds", []):
        tiers["patched" if workaround["kind"] == "patch" else "workaround"].append(("Workaround", workaround))
    ordered = [choice for tier in tiers.values() for choice in tier]
    return ordered[0] if ordered else None


def test_the_mla_card_leads_with_the_workaround_that_works_today(site, cells, page):
    """The MLA cell's only fix is an open pull request; its first screen names the flag that works
    on released vLLM, and says the pull request is not merged when it names it at all."""
    cell = cells.by_id["mla-decode-fp8-kv-triton-shared-memory"]
    (flag,) = [w for w in cell.entry.workarounds if w.kind == "flag"]
    assert cell.entry.fixes and all(f.kind == "patch" for f in cell.entry.fixes)
    with serve(site) as base:
        page.goto(base + cells.url(cell))
        row = page.locator(".kb-card__fix")
        assert row.locator("code").first.inner_text() == flag.what
        assert row.inner_text().startswith(f"Workaround: {flag.what}")
        assert cell.entry.fixes[0].what not in row.inner_text()


def test_edit_and_report_links_point_at_the_record(site, cells, page):
    cell = cells.cells[0]
    with serve(site) as base:
        page.goto(base + cells.url(cell))
        assert page.locator("a.kb-edit").get_attribute("href") == f"{REPO}/edit/main/kb/entries/{cell.id}.yaml"
        report = urlsplit(page.locator("a.kb-report").get_attribute("href"))
        assert report._replace(query="").geturl() == f"{REPO}/issues/new"
        # GitHub fills an issue form's field from the query parameter named by the field's id.
        assert parse_qs(report.query) == {"template": ["correction.yml"], "cell": [cell.id],
                                          "title": [f"Correction: {cell.id}"]}
    form = (ROOT / ".github" / "ISSUE_TEMPLATE" / "correction.yml").read_text(encoding="utf-8")
    assert "id: cell" in form


def test_copy_button_copies_the_exact_string(site, cells, browser):
    context = browser.new_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    cell = max(cells.cells, key=lambda c: len(c.entry.signatures[0].text))
    with serve(site) as base:
        page.goto(base + cells.url(cell))
        page.locator(".kb-head .kb-copy").click()
        page.wait_for_function("document.querySelector('.kb-head .kb-copy').textContent === 'Copied'")
        assert page.evaluate("navigator.clipboard.readText()") == cell.entry.signatures[0].text
    context.close()


def test_skip_link_footer_feed_and_home_title(site, cells, page):
    with serve(site) as base:
        page.goto(base + cells.url(cells.cells[0]))
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.classList.contains('kb-skip')")
        assert page.locator(".kb-skip").bounding_box()["x"] >= 0  # shown when focused
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "kb-main"
        footer = page.locator("footer.kb-footer")
        assert footer.locator(f"a[href='{REPO}']").count() == 1
        assert footer.locator("a[href='https://creativecommons.org/licenses/by/4.0/']").count() == 1
        feed = page.locator("link[rel=alternate][type='application/atom+xml']").get_attribute("href")
        assert feed.endswith("feed.xml") and page.request.get(urljoin(page.url, feed)).ok
        page.goto(base)
        assert page.title().count("Blackwell serving failures") == 1


def test_dark_mode_follows_the_system(site, cells, browser):
    context = browser.new_context(color_scheme="dark")
    page = context.new_page()
    with serve(site) as base:
        page.goto(base + cells.url(cells.cells[0]))
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        text = page.evaluate("getComputedStyle(document.querySelector('.kb-card__cause')).color")
    context.close()
    assert _luminance(background) < 0.2 < _luminance(text)


def _luminance(css: str) -> float:
    r, g, b = (int(float(v)) for v in css[css.index("(") + 1:css.index(")")].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_tables_are_styled_and_chart_labels_stay_readable_on_a_phone(site, cells, browser):
    """Numbers in measurement tables do not run together (cell padding), and a chart's tick
    labels are drawn at 10 px or more at 390 px wide."""
    cell = next(c for c in cells.cells if any(m.series and len(m.series.rows) >= 4 for m in c.entry.measurements))
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    with serve(site) as base:
        page.goto(base + cells.url(cell))
        padding = page.evaluate("parseFloat(getComputedStyle(document.querySelector('table.kb-measure td')).paddingLeft)")
        label = page.evaluate("document.querySelector('figure.kb-chart svg text').getBoundingClientRect().height")
    context.close()
    assert padding >= 8
    assert label >= 10


def test_a_generic_string_says_it_does_not_identify_the_cell(site, cells, page):
    """A CUDA error many faults print is flagged `generic`: its page says so and points to triage;
    a specific string's page does not."""
    from kb.records.catalog import string_url

    flagged = [(c, s) for c in cells.cells for s in c.entry.signatures if s.generic]
    assert flagged
    with serve(site) as base:
        for cell, signature in flagged:
            url = cells.url(cell) if cell.entry.signatures[0] is signature else string_url(signature.text)
            page.goto(base + url)
            notice = page.locator(".kb-generic")
            assert notice.is_visible() and "does not identify this failure" in notice.inner_text()
            assert notice.locator("a").get_attribute("href").endswith("triage/")
        specific = next(c for c in cells.cells if not c.entry.signatures[0].generic)
        page.goto(base + cells.url(specific))
        assert page.locator(".kb-generic").count() == 0
