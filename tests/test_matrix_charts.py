"""The serving matrix, the SVG charts of measurement series and the freshness page."""

from __future__ import annotations

import datetime as dt
import html.parser
import posixpath
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from markupsafe import escape

from browser import serve
from conftest import FIXTURES, ROOT, checked_site
from kb.records import facets
from kb.records.catalog import paged_url
from kb.site import charts, freshness, matrix
from kb.site.pages import Renderer, Site
from kb.site.urls import page_urls

SVG = "{http://www.w3.org/2000/svg}"
FRESH = FIXTURES / "freshness"
LIVE = ROOT / "kb" / "entries"


_site = checked_site


def _pages(site: Site) -> dict:
    return {p.url: p for p in Renderer(site).all_pages()}


def _svgs(html_text: str) -> list[ET.Element]:
    """Every inline <svg> of a page, parsed as XML on its own (so it must be well-formed)."""
    return [ET.fromstring(chunk) for chunk in re.findall(r"<svg\b.*?</svg>", html_text, re.S)]


COORD = r"-?\d+(?:\.\d+)?"


def _axis(ticks: list[tuple[float, str]]):
    """coordinate -> value, from the labelled ticks of an axis (coordinate, label as printed)."""
    (c0, l0), (c1, l1) = ticks[0], ticks[-1]
    v0, v1 = (float(label.replace(",", "")) for label in (l0, l1))
    return lambda c: v0 + (c - c0) * (v1 - v0) / (c1 - c0), abs((v1 - v0) / (c1 - c0))


def _only(svg: ET.Element, tag: str, cls: str) -> ET.Element:
    (found,) = [el for el in svg.iter(SVG + tag) if el.get("class") == cls]
    return found


def _read(svg: ET.Element) -> tuple[list[tuple[float, float]], float, float]:
    """The drawn points (line chart: dot centres; bar chart: (bar centre, bar end)) in record
    order, and what 0.02 of a coordinate unit is worth on the y and the x axis (coordinates are
    printed with two decimals)."""
    y_ticks = [(float(t.get("y")) - 4, t.text) for t in _only(svg, "g", "kb-chart__y-axis").iter(SVG + "text")]
    y_value, y_unit = _axis(y_ticks)
    if svg.get("data-kind") == "line":
        d = _only(svg, "path", "kb-chart__points").get("d")
        dots = re.findall(rf"M({COORD}) ({COORD})h0", d)
        assert "".join(f"M{x} {y}h0" for x, y in dots) == d, d
        x_ticks = [(float(t.get("x")), t.text) for t in _only(svg, "g", "kb-chart__x-axis").iter(SVG + "text")]
        x_value, x_unit = _axis(x_ticks)
        return [(x_value(float(x)), y_value(float(y))) for x, y in dots], 0.02 * y_unit, 0.02 * x_unit
    d = _only(svg, "path", "kb-chart__bars").get("d")
    bars = re.findall(rf"M({COORD}) ({COORD})V({COORD})h({COORD})V({COORD})Z", d)
    assert "".join(f"M{x} {z}V{y}h{w}V{z2}Z" for x, z, y, w, z2 in bars) == d, d
    zero = {z for _, z, _, _, z2 in bars} | {z2 for _, _, _, _, z2 in bars}
    assert len(zero) == 1 and abs(y_value(float(zero.pop()))) < 0.02 * y_unit  # every bar starts at 0
    return [(float(x) + float(w) / 2, y_value(float(y))) for x, _, y, w, _ in bars], 0.02 * y_unit, 0.0


def _check_chart(svg: ET.Element, measurement) -> None:
    """The chart is labelled, names its axes, and plots every row at the value the record gives:
    read back from its coordinates and its labelled ticks."""
    rows = measurement.series.rows
    assert svg.tag == SVG + "svg"
    assert svg.get("role") == "img"
    assert svg.get("aria-label") == charts.describe(measurement)
    assert svg.find(SVG + "title").text == charts.describe(measurement)
    numeric = all(charts.is_numeric(r.x) for r in rows)
    assert svg.get("data-kind") == ("line" if numeric else "bar")
    assert svg.get("data-points") == str(len(rows))
    # no element per row: a series is one path (bars, dots) or one polyline (the line)
    assert len(list(svg.iter())) <= 30 + len(rows), "an element per plotted row"
    points, y_tolerance, x_tolerance = _read(svg)
    assert len(points) == len(rows)
    for (x, value), row in zip(points, rows):
        assert abs(value - row.value) <= y_tolerance, (row, value)
        if numeric:
            assert abs(x - row.x) <= x_tolerance, (row, x)
    if not numeric:  # bars left to right in record order, evenly spaced
        centres = [x for x, _ in points]
        gaps = [b - a for a, b in zip(centres, centres[1:])]
        assert min(gaps) > 0 and max(gaps) - min(gaps) <= 0.05, centres
    if numeric:
        line = _only(svg, "polyline", "kb-chart__line").get("points").split()
        dots = re.findall(rf"M({COORD}) ({COORD})h0", _only(svg, "path", "kb-chart__points").get("d"))
        assert sorted(line) == sorted(f"{x},{y}" for x, y in dots)  # the line joins the dots
    else:
        labels = [t.text for t in _only(svg, "g", "kb-chart__x-axis").iter(SVG + "text")]
        if len(labels) == len(rows):
            assert all(label == row.x or label == charts._short(row.x) for label, row in zip(labels, rows)), labels
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
    assert "cutlass & 'co' < 2" in [t.text for t in svg.iter(SVG + "text")]
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
            count = int(td.get_attribute("data-count"))
            assert td.locator("a.kb-matrix__count").inner_text() == f"{count} failure{'s' if count != 1 else ''}"
            items = td.locator("li.kb-matrix__item")
            tallies = td.locator("li.kb-matrix__tally")
            if count <= matrix.INLINE:
                assert items.count() == count > 0 and tallies.count() == 0
            else:  # a crowded grid cell: how many have each status
                assert items.count() == 0
                assert sum(int(tallies.nth(j).get_attribute("data-count")) for j in range(tallies.count())) == count
                items = tallies
            for j in range(items.count()):
                item = items.nth(j)
                status = item.locator(".kb-status").inner_text()
                assert status == facets.STATUS_NAMES[item.get_attribute("data-status")] in status_names
                assert status in item.inner_text()
        # counts only, no titles on the grid (UX review S3-16): every square links its count, and no
        # failure's title is written in a narrow column
        assert page.locator("table.kb-matrix li.kb-matrix__item").count() == 0
        titles = {c.entry.title for c in site.cells}
        assert not [t for t in page.locator("table.kb-matrix td a").all_inner_texts() if t in titles]
        assert page.locator("table.kb-matrix td a.kb-matrix__count").count() == built.filled
        # a grid cell's count opens its listing page, which lists as many cells
        page.goto(base + matrix.URL)
        count = filled.first.locator("a.kb-matrix__count")
        wanted = int(filled.first.get_attribute("data-count"))
        count.click()
        page.wait_for_load_state()
        row = built.rows[0]
        gc = next(gc for gc in row.cells if gc.items)
        assert page.url == base + gc.url
        assert page.locator("ul.kb-cells > li").count() == wanted


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


def test_crowded_grid_cells_show_counts_and_link_their_listing(monkeypatch):
    site = _site(FRESH)
    monkeypatch.setattr(matrix, "INLINE", 0)  # every grid cell is crowded
    pages = _pages(site)
    body = pages[matrix.URL].body
    built = matrix.build(site.cells)
    assert 'class="kb-matrix__item ' not in body  # no cell listed on the grid itself
    tds = {(stack, hardware): (int(count), td)
           for stack, tr in re.findall(r'<tr data-stack="([^"]+)">(.*?)</tr>', body, re.S)
           for hardware, count, td in re.findall(r'<td [^>]*data-hardware="([^"]+)" data-count="(\d+)">(.*?)</td>',
                                                 tr, re.S)}
    for row in built.rows:
        for gc in row.cells:
            count, td = tds[row.key, gc.hardware]
            assert count == len(gc.items)
            listing = pages[gc.url].body
            assert f"<h1>{row.name} on {gc.hardware_name}</h1>" in listing
            assert re.findall(r'<li data-cell="([^"]+)"', listing) == [item.cell.id for item in gc.items]
            for item in gc.items:
                assert str(escape("; ".join(item.versions))) in listing
            if gc.items:
                assert f'href="{posixpath.relpath(gc.url, matrix.URL)}/">{count} failure' in td
                tallies = re.findall(r'class="kb-matrix__tally[^"]*" data-status="([^"]+)" data-count="(\d+)"', td)
                assert tallies == [(state, str(n)) for state, n in gc.statuses()]
                assert sum(int(n) for _, n in tallies) == count
            else:
                assert "No failure recorded here." in listing


@pytest.mark.slow
def test_gpu_names_in_no_column_link_their_listing():
    site = _site(LIVE)
    body = _pages(site)[matrix.URL].body
    unmapped = matrix.build(site.cells).unmapped_gpus
    assert unmapped
    for gpu, cells in unmapped:
        url = facets.key(facets.gpu_label(gpu))  # its By GPU group is named after the GPU
        assert f'href="../by/gpu/{url}/">' in body and f"({len(cells)} failure" in body


def test_matrix_url_is_published():
    site = _site(FRESH)
    rendered = {p.url for p in Renderer(site).all_pages()}
    assert {matrix.URL, freshness.URL} <= rendered
    assert {matrix.URL, freshness.URL} <= set(page_urls(site))


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
    claims, number = [], 1
    while (path := live_site / paged_url(freshness.URL, number) / "index.html").exists():
        claims += _items(path.read_text(encoding="utf-8")).claims
        number += 1
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


@pytest.mark.slow
def test_a_limit_is_drawn_across_the_chart_at_its_value():
    """The 101,376-byte limit of the MLA decode cell: a dashed line at that value (read back from
    the axis), labelled, inside the axis range even when every bar is below it; the chart's name,
    caption and the table say it."""
    site = _site(LIVE)
    cell = site.by_id["mla-decode-fp8-kv-triton-shared-memory"]
    (measurement,) = [m for m in _charted(cell) if m.series.limit]
    svg = ET.fromstring(str(charts.svg(measurement)))
    _check_chart(svg, measurement)
    y_ticks = [(float(t.get("y")) - 4, t.text) for t in _only(svg, "g", "kb-chart__y-axis").iter(SVG + "text")]
    y_value, y_unit = _axis(y_ticks)
    d = _only(svg, "path", "kb-chart__limit").get("d")
    (y,) = re.findall(rf"M{COORD} ({COORD})H{COORD}", d)
    assert abs(y_value(float(y)) - 101376) <= 0.02 * y_unit
    label = _only(svg, "text", "kb-chart__limit-label").text
    assert label == "opt-in shared-memory limit per block: 101,376"
    assert "with a line at the opt-in shared-memory limit per block (101376 bytes)" in svg.get("aria-label")
    body = _pages(site)[site.url(cell)].body
    assert "The dashed red line is the opt-in shared-memory limit per block." in body
    assert "Opt-in shared-memory limit per block: <strong>101376 bytes</strong>." in body
    flat = measurement.model_copy(update={"series": measurement.series.model_copy(update={"rows": [
        r.model_copy(update={"value": 10}) for r in measurement.series.rows]})})
    top = max(float(t.text.replace(",", "")) for _, t in [(0, t) for t in ET.fromstring(str(charts.svg(flat))).iter(
        SVG + "text") if t.text and t.text.replace(",", "").isdigit()])
    assert top >= 101376  # the axis reaches the limit when every value is far below it
