"""The reader's first screen (#15): on every cell page, at a laptop's 1366x900 and a phone's
390x844, the error string with its copy button, the status, the cause, who is affected, the fix
or workaround with its version and date, and the Edit / Report links all sit inside the first
viewport, measured in Chromium from the elements' boxes; plus the page furniture around it
(skip link, footer, feed link, home title, dark mode)."""

from __future__ import annotations

from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

from browser import serve
from conftest import EXAMPLE_REPO as REPO
from conftest import ROOT, checked_site

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


@pytest.fixture
def site(live_site_with_repo):
    """The live site with Edit and Report links, built once per run (conftest)."""
    return live_site_with_repo


@pytest.fixture(scope="module")
def cells():
    return checked_site(ROOT / "kb" / "entries")


def _every_cell_page(site, cells, browser, width, height):
    """Each cell and its page, opened in Chromium at width x height."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    with serve(site) as base:
        for cell in cells.cells:
            page.goto(base + cells.url(cell))
            yield cell, page
    context.close()


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_every_cell_answers_on_the_first_screen(site, cells, browser, width, height):
    outside = []
    for cell, page in _every_cell_page(site, cells, browser, width, height):
        for name, selector in FIRST_SCREEN.items():
            box = page.locator(selector).first.bounding_box()
            if box is None or box["y"] < 0 or box["y"] + box["height"] > height or box["width"] == 0:
                outside.append(f"{cell.id}: {name} at {box}")
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
    """The card's lines come from the record: the cause (its `cause:`, else the mechanism's first
    sentence, never the summary's), the version range or the words for none, the fix or workaround
    with its date; and no section below repeats the cause ("What it is" prints the summary)."""
    from kb.records import cause as causes

    explicit = 0
    with serve(site) as base:
        for cell in cells.cells:
            e = cell.entry
            page.goto(base + cells.url(cell))
            cause = page.locator(".kb-card__cause").inner_text()
            assert cause == (e.cause or causes.first_sentence(causes.plain(e.mechanism))), cell.id
            assert not e.summary.startswith(cause), cell.id
            explicit += bool(e.cause)
            what_it_is = page.locator("#what-it-is + p").inner_text()
            assert what_it_is == " ".join(e.summary.split()) and cause not in what_it_is, cell.id
            affects = page.locator(".kb-card__affects").inner_text()
            assert all(a in affects for a in e.hardware.architectures)
            ranged = [c for c in e.components if c.affected or c.fixed_in]
            if ranged:
                assert all((c.affected or c.fixed_in) in affects for c in ranged), cell.id
            else:
                assert "no affected version range is known" in affects, cell.id
            assert page.locator(".kb-card__fix").evaluate("d => d.previousElementSibling.textContent") == "Do now"
    assert 0 < explicit < len(cells.cells)  # both ways of giving the cause are shown


# The Do-now row's readiness label and the first character of its remedy, as the reader sees them:
# inside the viewport, and not cut off by the row (a phone cuts a long row to a few lines).
_SEEN = """d => {
  const row = d.getBoundingClientRect();
  const inside = (r) => r.width > 0 && r.top >= Math.max(row.top, 0) - 1 && r.bottom <= Math.min(row.bottom, innerHeight) + 1
                        && r.left >= -1 && r.right <= innerWidth + 1;
  const label = d.querySelector('.kb-card__ready');
  const what = d.querySelector('.kb-card__what');
  if (!label || !what) return [null, null];
  const walker = document.createTreeWalker(what, NodeFilter.SHOW_TEXT);
  const text = walker.nextNode();
  const range = document.createRange();
  range.setStart(text, 0); range.setEnd(text, 1);
  return [inside(label.getBoundingClientRect()), inside(range.getClientRects()[0])];
}"""


@pytest.mark.parametrize("width, height", VIEWPORTS + [(320, 640)])
def test_do_now_leads_with_what_works_today(site, cells, browser, width, height):
    """Every cell's Do-now row shows, labelled, the first remedy in the order read straight from the
    YAML (a released fix, then a workaround on released versions, then a fix on main, then a pull
    request), with its date; on a laptop, a phone and a 320 px screen the label and the start of the
    remedy are shown, neither cut off by the row nor outside the screen's width. A cell with
    neither says how far its fix got, with the status date."""
    wrong = []
    for cell, page in _every_cell_page(site, cells, browser, width, height):
        row = page.locator(".kb-card__fix")
        fix = row.inner_text()
        expected = _do_now_from_yaml(cell.path)
        if expected is None:
            if row.locator(".kb-card__ready").count() or cell.entry.status.as_of not in fix:
                wrong.append(f"{cell.id}: {fix!r} (no remedy in the record)")
            continue
        words, remedy = expected
        if not fix.startswith(f"{words}: {remedy['what']}") or str(remedy["as_of"]) not in fix:
            wrong.append(f"{cell.id}: {fix!r}, expected {words}: {remedy['what']!r}")
        row.scroll_into_view_if_needed()  # the fold is test_every_cell_answers_on_the_first_screen's
        if row.evaluate(_SEEN) != [True, True]:
            wrong.append(f"{cell.id}: label or remedy not on screen at {width}x{height}")
    assert wrong == [], "\n".join(wrong)


def _do_now_from_yaml(path):
    """What the Do-now row must lead with, read straight from the YAML: the first of a released fix
    (an upgrade naming its releases; a setting; a merged fix whose component names its first release,
    or of a fixed-release cell whose components name none), a workaround (a flag, variable, setting or
    pin before a source patch), an upgrade only a thread names, a fix on main, an open pull request, anything else; record order
    within each."""
    import yaml

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    link_state = {(link["url"], link["kind"]): link["state"] for link in raw["upstream"]}
    released_packages = {c["package"] for c in raw["components"] if c.get("fixed_in")}
    status = raw["status"]["state"]
    vouched = status == "fixed-release" and not released_packages
    tiers = {"released": [], "workaround": [], "patched": [], "reported": [], "main": [], "open": [], "other": []}
    for fix in raw.get("fixes", []):
        merged = "merged" in (link_state.get((fix["source"], "pr")), link_state.get((fix["source"], "commit")))
        if (fix["kind"] == "version-upgrade" and fix.get("applies")) or fix["kind"] in ("flag", "env-var", "config"):
            tiers["released"].append(("Released fix" if fix["kind"] == "version-upgrade" else "Fix", fix))
        elif link_state.get((fix["source"], "pr")) == "open":
            tiers["open"].append(("Fix in a pull request, not merged", fix))
        elif (merged or status in ("fixed-main", "fixed-release")) and (fix.get("package") in released_packages or vouched):
            tiers["released"].append(("Released fix", fix))
        elif (merged or status in ("fixed-main", "fixed-release")) and fix["kind"] == "version-upgrade":
            tiers["reported"].append(("Upgrade, reported fixed (release not checked)", fix))
        elif merged or status in ("fixed-main", "fixed-release"):
            tiers["main"].append(("Fix on main, not in a release yet", fix))
        else:
            tiers["other"].append(("Proposed fix, not merged upstream", fix))
    for workaround in raw.get("workarounds", []):
        tiers["patched" if workaround["kind"] == "patch" else "workaround"].append(("Workaround", workaround))
    ordered = [choice for tier in tiers.values() for choice in tier]
    return ordered[0] if ordered else None


def test_the_mla_card_leads_with_the_workaround_that_works_today(site, cells, page):
    """The MLA cell's only fix is an open pull request; its first screen names the flag that works
    on released vLLM and leaves the pull request to the sections below."""
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
        feed = page.locator("link[rel~=alternate][type='application/atom+xml']").get_attribute("href")
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


def _pointers(cells):
    """(cell, literal) for every pointer page: a literal of one cell that is not its first."""
    return [(cell, s.text) for cell in cells.cells for s in cell.entry.signatures[1:]
            if len(cells.owners[s.text]) == 1]


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_a_pointer_page_shows_the_cells_card_and_links_to_it(site, cells, browser, width, height):
    """A search engine landing on a cell's other literal (the short TopK string) gets the cell's own
    answer card: the same cause, affects and Do-now row with sources and dates, the Edit and
    Report links, the Do-now row on the first screen, and a link to the cell page."""
    from kb.records.catalog import string_url

    pointers = _pointers(cells)
    assert len(pointers) > 20 and any("TopKRaggedTransform" in text for _, text in pointers)
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    wrong = []
    with serve(site) as base:
        for cell, text in pointers:
            page.goto(base + cells.url(cell))
            card = page.locator(".kb-card").inner_text().replace("more below", "more on its page")
            links = page.locator(".kb-card__links").inner_html()
            page.goto(base + string_url(text))
            if page.locator("h1").text_content() != text:
                wrong.append(f"{cell.id}: {text!r} is not the heading")
            if page.locator(".kb-card").inner_text() != card or page.locator(".kb-card__links").inner_html() != links:
                wrong.append(f"{cell.id}: the card on {text!r} differs from the cell page's")
            for more in page.locator(".kb-card__fix a[href$='#fix']").all():
                if urljoin(page.url, more.get_attribute("href")) != urljoin(base + cells.url(cell), "#fix"):
                    wrong.append(f"{cell.id}: 'more' on {text!r} goes to {more.get_attribute('href')}")
            box = page.locator(".kb-card__fix").bounding_box()
            if box is None or box["y"] + box["height"] > height:
                wrong.append(f"{cell.id}: Do now below the first screen of {text!r} at {width}x{height}")
            href = page.locator("a.kb-pointer__cell").get_attribute("href")
            if urlsplit(urljoin(page.url, href)).path != urlsplit(base + cells.url(cell)).path:
                wrong.append(f"{cell.id}: {text!r} links to {href}")
    context.close()
    assert wrong == [], "\n".join(wrong)


def _newest(values: list[str]) -> str:
    """The newest of dates written YYYY-MM-DD or YYYY-MM (a month counts as its first day; a day
    wins over the month-only value of the same month)."""
    return max(values, key=lambda v: (v + "-01" if len(v) == 7 else v, len(v)))


def test_one_checked_date_right_under_the_heading(site, cells, page):
    """Each cell page says once, right under its heading, when it was last checked against
    upstream (the newest as_of of its status, upstream links and claims), when it was
    published, and its citable id; the per-claim dates stay below (the upstream table's Read column)."""
    with serve(site) as base:
        for cell in cells.cells:
            e = cell.entry
            page.goto(base + cells.url(cell))
            want = _newest([e.status.as_of] + [link.as_of for link in e.upstream] + [c.as_of for c in e.claims])
            line = page.locator(".kb-head + p.kb-checked")
            assert line.count() == 1 and page.locator(".kb-checked").count() == 1, cell.id
            assert line.inner_text() == (f"Checked against upstream {want} \u00b7 published {e.published} \u00b7 cite as "
                                         f"{cells.citable[cell.id]}"), cell.id
            heading = page.locator(".kb-head h1").bounding_box()
            box = line.bounding_box()
            lede = page.locator(".kb-lede").bounding_box()
            assert heading["y"] + heading["height"] <= box["y"] + 1 and box["y"] + box["height"] <= lede["y"] + 1, cell.id
            read = page.locator("table.kb-upstream tbody tr td:nth-child(4)").all_inner_texts()
            assert read == [link.as_of for link in e.upstream], cell.id
