"""What Lighthouse found on the home, a cell and the triage page (#15 item 6), checked as a reader's
Chromium shows it. Lighthouse itself runs in bench/lighthouse.py: it needs npm and takes about a
minute a page, so it is a benchmark, not a test.

- Scripts are deferred: fetched at low priority, so the first paint waits only for the HTML and
  the style sheets (Lighthouse treats a high-priority script as render-blocking), and they still
  run, in order.
- No element hidden from assistive technology takes keyboard focus (aria-hidden-focus: Material's
  palette radio buttons were invisible tab stops).
- The colours follow the system on every visit and while a page is open, from the first paint
  and without Material's bundle (which kept the first visit's choice, and recalculated every style
  of the page in its start-up task).
- Text is readable in both colour schemes (Lighthouse checks the light one only).
"""

from __future__ import annotations

import pytest

from browser import search, serve
from conftest import ROOT, checked_site

CONTRAST = r"""
() => {
  const rgba = c => { const m = c.match(/[\d.]+/g); return m.map(Number).concat(m.length === 3 ? [1] : []).slice(0, 4); };
  const over = (fg, bg) => [0, 1, 2].map(i => fg[i] * fg[3] + bg[i] * (1 - fg[3])).concat([1]);
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
                     return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const background = el => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reduceRight((bg, c) => over(c, bg), [255, 255, 255, 1]);
  };
  const low = [], seen = new Set();
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const el = walk.currentNode.parentElement;
    if (!walk.currentNode.textContent.trim() || seen.has(el)) continue;
    seen.add(el);
    const style = getComputedStyle(el), box = el.getBoundingClientRect();
    if (!box.width || !box.height || style.visibility === "hidden" || el.closest(".kb-skip, .kb-search__label")) continue;
    const bg = background(el), fg = over(rgba(style.color), bg);
    const ratio = (Math.max(lum(fg), lum(bg)) + 0.05) / (Math.min(lum(fg), lum(bg)) + 0.05);
    const size = parseFloat(style.fontSize), large = size >= 24 || (size >= 18.66 && parseInt(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) low.push(`${el.tagName}.${el.className} '${el.textContent.trim().slice(0, 30)}' ${ratio.toFixed(2)}:1`);
  }
  return low;
}
"""


@pytest.fixture(scope="module")
def base(live_site):
    with serve(live_site) as url:
        yield url


@pytest.fixture(scope="module")
def cells(live_site):
    """Cell pages: the first, and one whose answer card holds a link."""
    site = checked_site(ROOT / "kb" / "entries")
    html = {site.url(c): (live_site / site.url(c) / "index.html").read_text(encoding="utf-8") for c in site.cells}
    card = next((url for url, text in html.items() if "<a " in text.split('<dl class="kb-card"', 1)[-1].split("</dl>", 1)[0]), None)
    return {"first": site.url(site.cells[0]), "card_link": card}


def scheme(page) -> str:
    return page.evaluate("document.body.getAttribute('data-md-color-scheme')")


@pytest.mark.parametrize("which", ["home", "cell", "triage"])
def test_scripts_are_deferred_fetched_at_low_priority_and_still_run(base, cells, page, which):
    url = {"home": base, "cell": base + cells["first"], "triage": base + "triage/"}[which]
    priority = {}
    cdp = page.context.new_cdp_session(page)
    cdp.on("Network.requestWillBeSent",
           lambda event: priority.setdefault(event["request"]["url"], event["request"].get("initialPriority")))
    cdp.send("Network.enable")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    scripts = page.evaluate("[...document.scripts].filter(s => s.src).map(s => [s.src, s.defer || s.async])")
    assert scripts and all(deferred for _, deferred in scripts), scripts
    blocking = {src: priority.get(src) for src, _ in scripts if priority.get(src) not in ("Low", "VeryLow")}
    assert blocking == {}, "fetched at a render-blocking priority"
    # they still run: Material's bundle, the copy button, the search box (which needs kb-normalise)
    assert page.evaluate("document.documentElement.classList.contains('js')")
    if which == "cell":
        page.click(".kb-head .kb-copy")  # copied, or selected where the clipboard is refused
        page.wait_for_function("document.querySelector('.kb-head .kb-copy').textContent === 'Copied'"
                               " || getSelection().toString().length > 0", timeout=5000)
    search(page, "illegal memory access")
    assert errors == []


def test_nothing_hidden_from_assistive_technology_takes_focus(base, page):
    page.goto(base)
    hidden = page.evaluate("""[...document.querySelectorAll('[aria-hidden=true], [aria-hidden=true] *')]
        .filter(e => e.tabIndex >= 0 && !e.disabled && e.matches('a[href], button, input, select, textarea, [tabindex]'))
        .map(e => e.outerHTML.slice(0, 120))""")
    assert hidden == []
    # from the top of the page, Tab reaches the search box through visible elements only
    stops = []
    for _ in range(20):
        page.keyboard.press("Tab")
        stops.append(page.evaluate("""(() => { const e = document.activeElement, b = e.getBoundingClientRect();
            return [e.id || e.className || e.tagName, b.width * b.height > 0, e.closest('[aria-hidden=true]') !== null]; })()"""))
        if stops[-1][0] == "kb-search-input":
            break
    assert stops[-1][0] == "kb-search-input", stops
    assert [s for s in stops if not s[1] or s[2]] == [], "focus stopped on an invisible or aria-hidden element"


def test_colours_follow_the_system_on_every_visit_and_while_open(base, cells, browser):
    context = browser.new_context(color_scheme="light")
    page = context.new_page()
    page.goto(base)
    assert scheme(page) == "default"
    page.emulate_media(color_scheme="dark")  # the system switched between two visits
    page.goto(base + "triage/")
    assert scheme(page) == "slate"
    page.emulate_media(color_scheme="light")  # and while the page is open
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'default'", timeout=5000)
    # right from the first paint: the inline scripts alone choose it, before Material's bundle runs
    page.route("**/assets/javascripts/bundle.*.min.js", lambda route: route.abort())
    page.emulate_media(color_scheme="dark")
    page.goto(base + cells["first"])
    assert scheme(page) == "slate"
    context.close()
    fresh = browser.new_context(color_scheme="dark")
    page = fresh.new_page()
    page.route("**/assets/javascripts/bundle.*.min.js", lambda route: route.abort())
    page.goto(base)  # a first visit
    assert scheme(page) == "slate"
    fresh.close()


@pytest.mark.parametrize("color_scheme", ["light", "dark"])
def test_text_is_readable_in_both_colour_schemes(base, cells, browser, color_scheme):
    """4.5:1 (3:1 for large text), WCAG's AA level that Lighthouse's color-contrast audit applies,
    on the three audited pages, a cell whose answer card holds a link, and the status badges."""
    assert cells["card_link"], "no answer card holds a link any more: choose another page"
    context = browser.new_context(color_scheme=color_scheme)
    page = context.new_page()
    low = {}
    for url in ["", "triage/", cells["first"], cells["card_link"], "by/status/", "freshness/"]:
        page.goto(base + url)
        assert scheme(page) == {"light": "default", "dark": "slate"}[color_scheme]
        low[url or "home"] = page.evaluate(CONTRAST)
    context.close()
    assert {url: found for url, found in low.items() if found} == {}
