"""What the triage page shows of each failure a log matches, besides the match itself: the citable
id, the status in words and the card's "Do now" line. Made at build time into
`triage/patterns.json` (`results`, by entry id), so the page shows the card's own words and never
orders fixes and workarounds itself.

All of it is `kb.records.state.state`, the one state every page shows: `do_now_text` is the card's
"Do now" row (templates/pages/_first_screen.html) as plain text, up to where the card names its
source. tests/test_triage_page.py checks that every cell page's card starts with it.
"""

from __future__ import annotations

from kb.records import ids
from kb.records.schema import Entry
from kb.records.state import state


def do_now_text(entry: Entry) -> str:
    """The card's "Do now" line as text, without its source and date."""
    return state(entry).line.text


def results(site) -> dict[str, dict]:
    """Entry id -> what a triage result shows of it besides the match (`site`: a kb.records.catalog.Site)."""
    out = {}
    for cell in site.cells:
        shown = state(cell.entry)
        citable = site.citable[cell.id]
        out[cell.id] = {"citable_id": citable, "id_url": ids.url(citable), "status": shown.key,
                        "status_words": shown.words, "status_reason": shown.reason, "do_now": shown.line.text}
    return dict(sorted(out.items()))
