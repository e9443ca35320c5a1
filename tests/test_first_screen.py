"""The reader's first screen: on a cell page, at a laptop's 1366x900 and a phone's 390x844, the
error string with its copy button, the status, the cause, who is affected, the fix or workaround
with its version and date, and the Edit / Report links all sit inside the first viewport, measured
in Chromium from the elements' boxes; plus the page furniture around it (skip link, footer, feed
link, home title, dark mode).

What the card says is read from the built HTML of every cell page and every pointer page
(test_every_cell_page_says_what_the_record_says, no browser); where it sits on the screen is
measured in Chromium on a sample: one cell for each shape the card takes (`sample`)."""

from __future__ import annotations

from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

from browser import serve
from conftest import EXAMPLE_REPO as REPO
from conftest import ROOT, checked_site
from html_page import Page
from kb.records import checked
from kb.records.state import state

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


def _shapes(cell, cells) -> dict[str, object]:
    """The ways a cell's first screen differs from another's, each a name and its value here."""
    e = cell.entry
    now = state(e)
    return {
        "do now": now.readiness,  # each readiness label, and nothing known at all
        "do now is code": now.line.code,
        "more remedies": len(e.fixes + e.workarounds) > 1,
        "versions": bool(now.line.versions),
        "affected range": any(c.affected or c.fixed_in for c in e.components),
        "explicit cause": bool(e.cause),
        "generic literal": e.signatures[0].generic,
        "pointer page": bool(_pointers_of(cell, cells)),
    }


def sample(cells) -> list:
    """The cells Chromium opens: for each value of each shape the first cell (by id) that has it,
    and the cell with the longest literal (the heading a phone cuts); each once, by id."""
    chosen = {}
    for cell in sorted(cells.cells, key=lambda c: c.id):
        for shape in _shapes(cell, cells).items():
            chosen.setdefault(shape, cell)
    longest = max(cells.cells, key=lambda c: (len(c.entry.signatures[0].text), c.id))
    return sorted({c.id: c for c in [*chosen.values(), longest]}.values(), key=lambda c: c.id)


def test_the_sample_has_every_shape(cells):
    """Every value a shape takes among all the cells is in the sample, and the sample is small
    (else Chromium would open every page again)."""
    chosen = sample(cells)
    for name in _shapes(cells.cells[0], cells):
        everywhere = {_shapes(c, cells)[name] for c in cells.cells}
        assert {_shapes(c, cells)[name] for c in chosen} == everywhere, name
    assert len(chosen) <= 20 < len(cells.cells)


def _each_page(site, cells, browser, width, height):
    """Each sampled cell and its page, opened in Chromium at width x height."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    with serve(site) as base:
        for cell in sample(cells):
            page.goto(base + cells.url(cell))
            yield cell, page
    context.close()


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_the_answer_is_on_the_first_screen(site, cells, browser, width, height):
    outside = []
    for cell, page in _each_page(site, cells, browser, width, height):
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


# What the card says, read the same way from the built HTML and from Chromium (the bridge below).
CARD_TEXT = [".kb-card", ".kb-card__cause", ".kb-card__affects", ".kb-card__fix", ".kb-head + p.kb-checked",
             "#what-it-is + p", ".kb-card__links"]


def test_the_parsed_card_is_what_chromium_shows(site, cells, page):
    """On the sampled cell pages and their pointer pages, the text the exhaustive check reads from
    the HTML (html_page's inner_text) is the text Chromium shows, line for line."""
    from kb.records.catalog import string_url

    urls = [cells.url(c) for c in sample(cells)] + [string_url(text) for c in sample(cells) for text in _pointers_of(c, cells)[:1]]
    differ = []
    with serve(site) as base:
        for url in urls:
            parsed = Page(site / url / "index.html")
            page.goto(base + url)
            for selector in CARD_TEXT:
                if parsed.select_one(selector) is None:
                    assert page.locator(selector).count() == 0, f"{url}: {selector} missed by the parser"
                    continue
                shown = page.locator(selector).first.inner_text()
                if parsed.text(selector) != shown:
                    differ.append(f"{url} {selector}: parsed {parsed.text(selector)!r}, shown {shown!r}")
    assert differ == [], "\n".join(differ)


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
def test_do_now_label_and_remedy_are_on_screen(site, cells, browser, width, height):
    """On a laptop, a phone and a 320 px screen, the Do-now row's label and the start of its remedy
    are shown, neither cut off by the row nor outside the screen's width (what the row says, on
    every page: test_every_cell_page_says_what_the_record_says)."""
    wrong = []
    shown = 0
    for cell, page in _each_page(site, cells, browser, width, height):
        row = page.locator(".kb-card__fix")
        label = state(cell.entry).line.label
        if label is None:
            continue
        shown += 1
        if not row.inner_text().startswith(label + ": "):
            wrong.append(f"{cell.id}: {row.inner_text()!r} does not start with its label")
        row.scroll_into_view_if_needed()  # the fold is test_the_answer_is_on_the_first_screen's
        if row.evaluate(_SEEN) != [True, True]:
            wrong.append(f"{cell.id}: label or remedy not on screen at {width}x{height}")
    assert wrong == [] and shown, "\n".join(wrong)


def test_the_mla_card_leads_with_the_workaround_that_works_today(site, cells, page):
    """The MLA cell's only fix is an open pull request; its first screen leads with the flag that works
    on released vLLM, says what it costs, and names the pull request only on the row's last line,
    "Fix proposed, not merged" (never the thing to do)."""
    cell = cells.by_id["mla-decode-fp8-kv-triton-shared-memory"]
    (flag,) = [w for w in cell.entry.workarounds if w.kind == "flag"]
    assert cell.entry.fixes and all(f.kind == "patch" for f in cell.entry.fixes)
    with serve(site) as base:
        page.goto(base + cells.url(cell))
        row = page.locator(".kb-card__fix")
        assert row.locator("code").first.inner_text() == flag.what
        assert row.inner_text().startswith(f"Workaround: {flag.what}")
        assert cell.entry.fixes[0].what not in row.locator(".kb-card__do").inner_text()
        assert row.locator(".kb-card__cost").inner_text() == f"Cost: {flag.cost}"
        assert row.locator(".kb-card__coming").inner_text() == f"Fix proposed, not merged: {cell.entry.fixes[0].what}."


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


def _pointers_of(cell, cells) -> list[str]:
    """The literals of `cell` that have a pointer page: each one not its first, no other cell's."""
    return [s.text for s in cell.entry.signatures[1:] if len(cells.owners[s.text]) == 1]


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_a_pointer_pages_do_now_is_on_the_first_screen(site, cells, browser, width, height):
    """A search engine landing on a cell's other literal gets the cell's own answer card, its
    Do-now row on the first screen (what the card says, on every pointer page:
    test_every_cell_page_says_what_the_record_says)."""
    from kb.records.catalog import string_url

    pointers = [(cell, text) for cell in sample(cells) for text in _pointers_of(cell, cells)[:1]]
    assert pointers
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    wrong = []
    with serve(site) as base:
        for cell, text in pointers:
            page.goto(base + string_url(text))
            box = page.locator(".kb-card__fix").bounding_box()
            if box is None or box["y"] + box["height"] > height:
                wrong.append(f"{cell.id}: Do now below the first screen of {text!r} at {width}x{height}")
    context.close()
    assert wrong == [], "\n".join(wrong)


def _newest(values: list[str]) -> str:
    """The newest of dates written YYYY-MM-DD or YYYY-MM (a month counts as its first day; a day
    wins over the month-only value of the same month)."""
    return max(values, key=lambda v: (v + "-01" if len(v) == 7 else v, len(v)))


def test_the_checked_date_sits_between_heading_and_lede(site, cells, page):
    """The checked line (what it says: test_every_cell_page_says_what_the_record_says) is drawn
    right under the heading, above the lede."""
    with serve(site) as base:
        for cell in sample(cells):
            page.goto(base + cells.url(cell))
            heading = page.locator(".kb-head h1").bounding_box()
            box = page.locator(".kb-head + p.kb-checked").bounding_box()
            lede = page.locator(".kb-lede").bounding_box()
            assert heading["y"] + heading["height"] <= box["y"] + 1 and box["y"] + box["height"] <= lede["y"] + 1, cell.id


def _card_says_the_record(page: Page, cell, cells) -> list[str]:
    """What the first screen of `cell`'s page says against its record: the card's lines (the
    cause: its `cause:`, else the mechanism's first sentence, never the summary's; the version
    range or the words for none; the Do-now row: the entry's state (kb.records.state) with its label and date,
    else how far a fix got with the status date), every first-screen element present, and no
    section below repeating the cause ("What it is" prints the summary)."""
    from kb.records import cause as causes

    e, wrong = cell.entry, []
    missing = [name for name, selector in FIRST_SCREEN.items() if page.select_one(selector) is None]
    if missing:
        return [f"{cell.id}: no {', '.join(missing)}"]
    cause = page.text(".kb-card__cause")
    if cause != (e.cause or causes.first_sentence(causes.plain(e.mechanism))) or e.summary.startswith(cause):
        wrong.append(f"{cell.id}: cause {cause!r}")
    what_it_is = page.text("#what-it-is + p")
    if what_it_is != " ".join(e.summary.split()) or cause in what_it_is:
        wrong.append(f"{cell.id}: What it is {what_it_is!r}")
    affects = page.text(".kb-card__affects")
    # How far up a check found it failing (kb.records.checked) replaces an open range's bound.
    said = checked.phrases(e)
    ranged = [said.get(c.package) or c.affected or c.fixed_in for c in e.components
              if c.affected or c.fixed_in or c.package in said]
    if not all(a in affects for a in e.hardware.architectures + ranged):
        wrong.append(f"{cell.id}: affects {affects!r}")
    if not ranged and "no affected version range is known" not in affects:
        wrong.append(f"{cell.id}: affects {affects!r} does not say no range is known")
    row = page.select_one(".kb-card__fix")
    if row.previous_element().text_content() != "Do now":
        wrong.append(f"{cell.id}: the fix row is not under 'Do now'")
    # The row is the entry's one state (kb.records.state): its remedy, or the release or commit its
    # components name, or nothing known; dated by the remedy's day or the status's.
    fix, now = row.inner_text(), state(e)
    head = f"{now.line.label}: {now.line.what}" if now.line.label else now.line.what
    day = now.now.remedy.as_of if now.now is not None else e.status.as_of
    if not fix.startswith(head) or day not in fix:
        wrong.append(f"{cell.id}: {fix!r}, expected {head!r} dated {day}")
    return wrong


def _checked_line(page: Page, cell, cells) -> list[str]:
    """Said once, right under the heading: when the cell was last checked against upstream (the
    newest as_of of its status, upstream links and claims), when it was published, and its citable
    id; the per-claim dates stay below (the upstream table's Read column)."""
    e = cell.entry
    want = _newest([e.status.as_of] + [link.as_of for link in e.upstream] + [c.as_of for c in e.claims])
    line = (f"Checked against upstream {want} \u00b7 published {e.published} \u00b7 cite as "
            f"{cells.citable[cell.id]}")
    wrong = []
    if len(page.select(".kb-head + p.kb-checked")) != 1 or len(page.select(".kb-checked")) != 1:
        wrong.append(f"{cell.id}: not one checked line right after the heading")
    elif page.text(".kb-head + p.kb-checked") != line:
        wrong.append(f"{cell.id}: {page.text('.kb-head + p.kb-checked')!r}, expected {line!r}")
    rows = page.select("table.kb-upstream tbody tr")
    read = [[td for td in row.children if getattr(td, "tag", None) == "td"][3].inner_text() for row in rows]
    if read != [link.as_of for link in e.upstream]:
        wrong.append(f"{cell.id}: Read column {read}")
    return wrong


def _pointer_pages(site, here: Page, cell, cells) -> list[str]:
    """Each pointer page of `cell` (a search engine landing on its other literal, the short TopK
    string) has the literal as its heading, the cell's own answer card (the same cause, affects and
    Do-now row with sources and dates, its "more" link going to the cell page's fixes), the same
    Edit and Report links, and a link to the cell page."""
    from kb.records.catalog import string_url

    cell_url = "http://site/" + cells.url(cell)
    card = here.text(".kb-card").replace("more below", "more on its page")
    links = here.select_one(".kb-card__links").inner_html()
    wrong = []
    for text in _pointers_of(cell, cells):
        page = Page(site / string_url(text) / "index.html")
        url = "http://site/" + string_url(text)
        if page.select_one("h1").text_content() != text:
            wrong.append(f"{cell.id}: {text!r} is not the heading")
        if page.text(".kb-card") != card or page.select_one(".kb-card__links").inner_html() != links:
            wrong.append(f"{cell.id}: the card on {text!r} differs from the cell page's")
        for more in page.select(".kb-card__fix a"):
            if more.attrs["href"].endswith("#fix") and urljoin(url, more.attrs["href"]) != urljoin(cell_url, "#fix"):
                wrong.append(f"{cell.id}: 'more' on {text!r} goes to {more.attrs['href']}")
        href = page.select_one("a.kb-pointer__cell").attrs["href"]
        if urlsplit(urljoin(url, href)).path != urlsplit(cell_url).path:
            wrong.append(f"{cell.id}: {text!r} links to {href}")
    return wrong


def test_every_cell_page_says_what_the_record_says(site, cells):
    """Every cell page's first screen and checked line, and every pointer page's card, read from
    the built HTML against the record (no browser: these are words, not layout; the sampled
    Chromium tests above show the parsed text is what a reader sees)."""
    wrong = []
    for cell in cells.cells:
        page = Page(site / cells.url(cell) / "index.html")
        wrong += _card_says_the_record(page, cell, cells) + _checked_line(page, cell, cells)
        wrong += _pointer_pages(site, page, cell, cells)
    assert wrong == [], "\n".join(wrong)
    assert all(c.entry.cause for c in cells.cells)  # a cause is required (KB080)
    # Some record checked how far up it fails, so the Affects line's "every release up to" was read above.
    assert any(checked.phrases(c.entry) for c in cells.cells)
    pointers = [text for cell in cells.cells for text in _pointers_of(cell, cells)]
    assert len(pointers) > 20 and any("TopKRaggedTransform" in text for text in pointers)
