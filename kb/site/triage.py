"""What the triage page shows of each failure a log matches, besides the match itself: the citable
id, the status in words and the card's "Do now" line. Made at build time into
`triage/patterns.json` (`results`, by entry id), so the page shows the card's own words and never
orders fixes and workarounds itself (that is kb.records.remedies).

`do_now_text` is the card's "Do now" row (templates/pages/_first_screen.html) as plain text, up to
where the card names its source: the remedy `remedies.do_now` picks, with how ready it is and the
versions it applies to, or, when the entry has neither fix nor workaround, the releases or commit
that fixed it. tests/test_triage_page.py checks that every cell page's card starts with it.
"""

from __future__ import annotations

from kb.records import facets, ids, remedies
from kb.records.schema import Entry


def do_now_text(entry: Entry) -> str:
    """The card's "Do now" line as text, without its source and date."""
    now = remedies.do_now(entry)
    if now is not None:
        remedy = now.remedy
        text = f"{now.label}: {remedy.what}"
        if now.versions:
            text += f" ({facets.package_name(remedy.package) if remedy.package else ''} {now.versions})"
        return text
    released = [c for c in entry.components if c.fixed_in]
    if released:
        return "; ".join(f"{facets.package_name(c.package)} {c.fixed_in} or newer" for c in released)
    landed = [c for c in entry.components if not c.fixed_in and c.fixed_commit]
    if landed:
        return "; ".join(f"{facets.package_name(c.package)} main, commit {c.fixed_commit[:10]}"
                         for c in landed) + ", in no release yet"
    return "none known yet"


def results(site) -> dict[str, dict]:
    """Entry id -> what a triage result shows of it besides the match (`site`: a kb.records.catalog.Site)."""
    out = {}
    for cell in site.cells:
        e = cell.entry
        citable = site.citable[cell.id]
        out[cell.id] = {"citable_id": citable, "id_url": ids.url(citable), "status": e.status.state,
                        "status_words": facets.STATUS_NAMES[e.status.state], "do_now": do_now_text(e)}
    return dict(sorted(out.items()))
