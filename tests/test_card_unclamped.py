"""Nothing on the answer card is cut (issue 37 item 2; ux-review 2026-12-05, S2-4): at a phone's 390 px
and a narrow 320 px, in Chromium, no Cause, Affects or Do now row of any entry, pointer or
disambiguation page is clamped: none sets a line clamp or an ellipsis, and none hides text it holds
(scrollHeight above clientHeight). The rows were cut on 119 of 177 pages at 390 px, the Do now row
to three lines; they are now kept short at the source and shown whole.

Chromium opens every such page at both widths (about 180 pages, some 40 s on the shared 2-core
machine); the stylesheet check below, without a browser, says why: no rule of ours clamps a card row.
"""

from __future__ import annotations

import re

import pytest

from browser import serve
from conftest import ROOT

ROWS = ".kb-card__cause, .kb-card__affects, .kb-card__fix, .kb-card__fix > div"
VIEWPORTS = [(390, 844), (320, 640)]

# For each card row: its class, and why it is cut, if it is (null when shown whole).
_CUT = """rows => rows.map(r => {
  const s = getComputedStyle(r);
  const why = [];
  if (s.webkitLineClamp !== 'none' && s.webkitLineClamp !== '') why.push('line-clamp ' + s.webkitLineClamp);
  if (s.textOverflow === 'ellipsis') why.push('text-overflow ellipsis');
  if (r.scrollHeight > r.clientHeight + 1) why.push(`scrollHeight ${r.scrollHeight} > clientHeight ${r.clientHeight}`);
  return [r.className, why.join(', ') || null];
})"""


@pytest.fixture(scope="module")
def card_pages(live_site):
    """Every built /e/ page that shows the answer card, site-relative, in name order."""
    pages = sorted(p.parent.relative_to(live_site).as_posix() + "/" for p in (live_site / "e").glob("*/index.html")
                   if 'class="kb-card"' in p.read_text(encoding="utf-8"))
    return pages


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_no_card_row_is_cut_on_a_phone(live_site, card_pages, browser, width, height):
    assert len(card_pages) > 100  # entry, pointer and disambiguation pages, not a sample
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    cut, rows = [], 0
    with serve(live_site) as base:
        for url in card_pages:
            page.goto(base + url)
            found = page.eval_on_selector_all(ROWS, _CUT)
            rows += len(found)
            cut += [f"{url} .{name.split()[0]}: {why}" for name, why in found if why]
    context.close()
    assert rows >= 3 * len(card_pages)
    assert cut == [], f"{len(cut)} card rows cut at {width}x{height}:\n" + "\n".join(cut[:30])


def test_no_rule_of_ours_clamps_a_card_row():
    """The stylesheet sets no line clamp, ellipsis or hidden overflow on a card row (`dl.kb-card`, its
    rows and the Do-now lines), at any width; and no card row carries a style of its own."""
    css = (ROOT / "site_src" / "assets" / "kb.css").read_text(encoding="utf-8")
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    clamping = re.compile(r"line-clamp|text-overflow|overflow\s*:\s*hidden|max-height")
    offending = [f"{selector.strip()} {{{body.strip()}}}"
                 for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css)
                 if "kb-card" in selector and "kb-card__links" not in selector and clamping.search(body)]
    assert offending == []
    template = (ROOT / "templates" / "pages" / "_first_screen.html").read_text(encoding="utf-8")
    assert not re.search(r'class="kb-card__[a-z]+"[^>]*\sstyle=', template)
