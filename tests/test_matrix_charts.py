"""The serving matrix, the SVG charts of measurement series and the freshness page."""

from __future__ import annotations

import datetime as dt
import html.parser
import posixpath
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from browser import serve
from conftest import FIXTURES, ROOT
from kb import charts, facets, freshness, lint, matrix
from kb.pages import Renderer, Site

SVG = "{http://www.w3.org/2000/svg}"
FRESH = FIXTURES / "freshness"
LIVE = ROOT / "kb" / "entries"


def _site(entries: Path) -> Site:
    result = lint.check([entries])
    assert result.problems == []
    return Site(result.cells)


def _pages(site: Site) -> dict:
    return {p.url: p for p in Renderer(site).all_pages()}


def _svgs(html_text: str) -> list[ET.Element]:
    """Every inline <svg> of a page, parsed as XML on its own (so it must be well-formed)."""
    return [ET.fromstring(chunk) for chunk in re.findall(r"<svg\b.*?</svg>", html_text, re.S)]


def _value(text: str):
    return float(text)


def _check_chart(svg: ET.Element, measurement) -> None:
    rows = measurement.series.rows
    assert svg.tag == SVG + "svg"
    assert svg.get("role") == "img"
    assert svg.get("aria-label") == charts.describe(measurement)
    assert svg.find(SVG + "title").text == charts.describe(measurement)
    numeric = all(charts.is_numeric(r.x) for r in rows)
    assert svg.get("data-kind") == ("line" if numeric else "bar")
    marks = [el for el in svg.iter() if el.get("data-value") is not None]
    assert [el.tag for el in marks] == [SVG + ("circle" if numeric else "rect")] * len(rows)
    for el, row in zip(marks, rows):
        if numeric:
            assert _value(el.get("data-x")) == row.x
        else:
            assert el.get("data-x") == row.x
        assert _value(el.get("data-value")) == row.value
    texts = " ".join(t.text or "" for t in svg.iter(SVG + "text"))
    assert measurement.unit in texts  # y axis label
    assert charts.x_label(measurement.series) in texts  # x axis label


def _charted(cell) -> list:
    return [m for m in cell.entry.measurements if m.series and len(m.series.rows) > 3]


# --- charts -------------------------------------------------------------------------------

def test_fixture_charts_are_well_formed_and_plot_the_rows():
    site = _site(FRESH)
    pages = _pages(site)
    kinds = set()
    for cell in site.cells:
        body = pages[site.url(cell)].body
        wanted = _charted(cell)
        svgs = _svgs(body)
        assert len(svgs) == len(wanted), cell.id
        for svg, measurement in zip(svgs, wanted):
            _check_chart(svg, measurement)
            kinds.add(svg.get("data-kind"))
    assert kinds == {"line", "bar"}


def test_chart_text_is_escaped():
    site = _site(FRESH)
    cell = site.by_id["fixed-main-sixty-days"]
    body = _pages(site)[site.url(cell)].body
    (svg,) = _svgs(body)
    assert svg.find(f".//{SVG}rect").get("data-x") == "cutlass & 'co' < 2"
    assert "cutlass &amp; &#39;co&#39; &lt; 2" in body
    assert "<b>" not in body


def test_live_charts_match_their_records(live_site):
    site = _site(LIVE)
    charted = 0
    for cell in site.cells:
        built = (live_site / site.url(cell) / "index.html").read_text(encoding="utf-8")
        figures = re.findall(r'<figure class="kb-chart".*?</figure>', built, re.S)
        wanted = _charted(cell)
        assert len(figures) == len(wanted), cell.id
        for figure, measurement in zip(figures, wanted):
            (svg,) = _svgs(figure)
            _check_chart(svg, measurement)
            caption = re.search(r"<figcaption>(.*?)</figcaption>", figure, re.S).group(1)
            assert f'href="{measurement.source}"' in caption and measurement.as_of in caption
        charted += len(wanted)
    assert charted >= 2


def test_short_series_get_no_chart():
    site = _site(LIVE)
    short = [(c, m) for c in site.cells for m in c.entry.measurements if m.series and len(m.series.rows) <= 3]
    assert short and not any(charts.charted(m) for _, m in short)


def test_nice_ticks_cover_the_range():
    assert charts.nice_ticks(0, 102400) == [0, 50000, 100000, 150000]
    assert charts.nice_ticks(0, 0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    ticks = charts.nice_ticks(-40, 0)
    assert ticks[0] <= -40 and ticks[-1] >= 0


# --- matrix -------------------------------------------------------------------------------

def test_gpu_strings_map_to_hardware_columns():
    cases = {
        "RTX PRO 6000 Blackwell": "rtx-pro-6000", "RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
        "RTX PRO 6000 Blackwell Max-Q": "rtx-pro-6000", "RTX PRO 5000 Blackwell 72GB": "rtx-pro-5000",
        "GeForce RTX 5090": "rtx-50xx", "RTX 5070 Ti": "rtx-50xx", "RTX 5070 Laptop GPU": "rtx-50xx",
        "RTX 5090 D": "rtx-50xx", "GB10": "gb10", "DGX Spark": "gb10", "GX10 (GB10)": "gb10",
        "H100": None, "any SM120 build target (build-time failure)": None,
    }
    assert {gpu: matrix.hardware_of(gpu) for gpu in cases} == cases
    assert [matrix.stack_of(p) for p in ("vllm", "sgl-kernel", "cudnn", "cutlass", "triton", "cuda-toolkit")] == [
        "vllm", "sglang", "flashinfer", "flashinfer", "pytorch-triton", None]


def test_matrix_places_a_cell_in_every_row_and_column_it_names():
    site = _site(FRESH)
    grid = {(row.key, gc.hardware): gc for row in matrix.build(site.cells).rows for gc in row.cells}
    placed = {key: [item.cell.id for item in gc.items] for key, gc in grid.items() if gc.items}
    assert placed == {
        ("vllm", "gb10"): ["proposed-long-ago"],
        ("sglang", "rtx-pro-6000"): ["fixed-main-sixty-days"],
        ("sglang", "rtx-50xx"): ["fixed-main-sixty-days"],
        ("flashinfer", "rtx-pro-6000"): ["fixed-main-sixty-days"],
        ("flashinfer", "rtx-50xx"): ["fixed-main-sixty-days"],
        ("flashinfer", "rtx-pro-5000"): ["fixed-release-old"],
    }
    # versions: affected ranges and fixed-in versions of the row's components, and measured
    # versions only on the column whose hardware the measurement was taken on
    assert grid["vllm", "gb10"].items[0].versions == ("vLLM <0.28 (affected)", "vLLM 0.27.1 (measured)")
    assert grid["sglang", "rtx-pro-6000"].items[0].versions == ("SGLang 0.5.19 (measured)",)
    assert grid["sglang", "rtx-50xx"].items[0].versions == ()
    assert grid["flashinfer", "rtx-pro-5000"].items[0].versions == ("FlashInfer fixed in 0.6.13",)


def test_matrix_page_in_chromium(live_site, page):
    site = _site(LIVE)
    built = matrix.build(site.cells)
    with serve(live_site) as base:
        page.goto(base + matrix.URL)
        headers = page.locator("table.kb-matrix thead th[scope=col]").all_inner_texts()
        assert headers == ["Stack"] + [name for _, name, _ in matrix.HARDWARE]
        for _, name, _ in matrix.HARDWARE:
            assert page.locator("table.kb-matrix thead th", has_text=name).is_visible()
        rows = page.locator("table.kb-matrix tbody th[scope=row]").all_inner_texts()
        assert [r.splitlines()[0] for r in rows] == [name for _, name, _ in matrix.STACKS]
        filled = page.locator("td.kb-matrix__cell:not(.kb-matrix__cell--empty)")
        assert filled.count() == built.filled > 0
        status_names = set(facets.STATUS_NAMES.values())
        for i in range(filled.count()):
            td = filled.nth(i)
            items = td.locator("li.kb-matrix__item")
            assert items.count() == int(td.get_attribute("data-count")) > 0
            for j in range(items.count()):
                item = items.nth(j)
                status = item.locator(".kb-status").inner_text()
                assert status == facets.STATUS_NAMES[item.get_attribute("data-status")] in status_names
                assert status in item.inner_text()
        # a grid cell links to a cell page that exists and is that cell
        link = filled.first.locator("li.kb-matrix__item").first
        cell = site.by_id[link.get_attribute("data-cell")]
        href = link.locator("a").get_attribute("href")
        assert posixpath.normpath(posixpath.join(matrix.URL, href)) + "/" == site.url(cell)
        link.locator("a").click()
        page.wait_for_load_state()
        assert page.url == base + site.url(cell)
        assert page.locator("article h1").inner_text() == cell.entry.signatures[0].text


def test_matrix_on_a_phone_has_no_horizontal_overflow(live_site, page):
    page.set_viewport_size({"width": 390, "height": 844})
    with serve(live_site) as base:
        page.goto(base + matrix.URL)
        assert page.evaluate("document.documentElement.scrollWidth") <= 392
        table_right = page.evaluate("document.querySelector('table.kb-matrix').getBoundingClientRect().right")
        assert table_right <= 390
        # the grid is stacked: each grid cell is a block named by its hardware column
        td = page.locator("td.kb-matrix__cell").first
        assert td.evaluate("el => getComputedStyle(el).display") == "block"
        label = td.evaluate("el => getComputedStyle(el, '::before').content")
        assert label.strip('"') == matrix.HARDWARE[0][1]
    page.set_viewport_size({"width": 1280, "height": 800})
    with serve(live_site) as base:
        page.goto(base + matrix.URL)
        assert page.locator("td.kb-matrix__cell").first.evaluate("el => getComputedStyle(el).display") == "table-cell"


def test_matrix_url_is_published():
    site = _site(FRESH)
    urls = {p.url for p in Renderer(site).all_pages()}
    assert {matrix.URL, freshness.URL} <= urls
    assert {matrix.URL, freshness.URL} <= set(site.page_urls())


# --- freshness ----------------------------------------------------------------------------

class _Items(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.claims: list[tuple[str, str, str]] = []
        self.waiting: list[tuple[str, int]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "li" and "data-as-of" in attrs:
            self.claims.append((attrs["data-as-of"], attrs["data-cell"], attrs["data-field"]))
        if tag == "li" and "data-days" in attrs:
            self.waiting.append((attrs["data-cell"], int(attrs["data-days"])))


def _items(body: str) -> _Items:
    parser = _Items()
    parser.feed(body)
    return parser


def test_month_dates_sort_as_the_start_of_the_month():
    assert freshness.day("2026-09") == dt.date(2026, 9, 1)
    assert freshness.day("2026-09-15") == dt.date(2026, 9, 15)


def test_freshness_lists_every_dated_claim_oldest_first():
    site = _site(FRESH)
    found = _items(_pages(site)[freshness.URL].body)
    assert found.claims == [
        ("2026-08-01", "fixed-release-old", "status.as_of"),
        ("2026-08-01", "fixed-release-old", "upstream[0].as_of"),
        ("2026-08-15", "fixed-main-sixty-days", "workarounds[0].as_of"),
        ("2026-09", "proposed-long-ago", "status.as_of"),
        ("2026-09", "proposed-long-ago", "fixes[0].as_of"),
        ("2026-10-03", "fixed-main-sixty-days", "status.as_of"),
        ("2026-10-03", "fixed-main-sixty-days", "upstream[0].as_of"),
        ("2026-10-03", "fixed-main-sixty-days", "measurements[0].as_of"),
        ("2026-10-03", "fixed-main-sixty-days", "claims[0].as_of"),
        ("2026-10-15", "proposed-long-ago", "measurements[0].as_of"),
        ("2026-11-20", "proposed-long-ago", "upstream[0].as_of"),
    ]


def test_live_freshness_page_is_oldest_first_and_complete(live_site):
    site = _site(LIVE)
    built = (live_site / freshness.URL / "index.html").read_text(encoding="utf-8")
    claims = _items(built).claims
    expected = sum(len(freshness.dated(c)) for c in site.cells)
    assert len(claims) == expected > 0
    days = [freshness.day(as_of) for as_of, _, _ in claims]
    assert days == sorted(days)
    assert {cell for _, cell, _ in claims} == {c.id for c in site.cells}
    assert "2026-09" in {as_of for as_of, _, _ in claims}  # month-only dates are listed too
    reference = freshness.reference_date(site.cells).isoformat()
    assert f'data-reference-date="{reference}"' in built


def test_sixty_day_rule_counts_from_the_newest_updated_date():
    site = _site(FRESH)
    reference = freshness.reference_date(site.cells)
    assert reference == dt.date(2026, 12, 2)  # fixed-release-old's `updated`, not the clock
    waiting = [(cell.id, days) for cell, days in freshness.waiting(site.cells, reference)]
    # 2026-09 counts from 2026-09-01; exactly 60 days is not "longer than 60 days";
    # an old fixed-release status is not watched
    assert waiting == [("proposed-long-ago", 92)]
    later = [(cell.id, days) for cell, days in freshness.waiting(site.cells, reference + dt.timedelta(days=1))]
    assert later == [("proposed-long-ago", 93), ("fixed-main-sixty-days", 61)]
    body = _pages(site)[freshness.URL].body
    assert _items(body).waiting == [("proposed-long-ago", 92)]
    assert 'data-reference-date="2026-12-02"' in body


def test_pages_are_deterministic():
    first = _pages(_site(FRESH))
    second = _pages(_site(FRESH))
    for url in (matrix.URL, freshness.URL):
        assert first[url].body == second[url].body
