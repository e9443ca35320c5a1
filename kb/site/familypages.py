"""Stage 4, render: the families' pages (issue 35 item 2).

A family (kb/families/<id>.yaml, kb.records.families) is a mechanism behind several entries. Its
page, `families/<id>/`, says how to tell it, the commands that check it with what they show and
their sources, the general fix, the generic lines it prints, and lists every entry of the family
(title, citable id, status); `families/` lists the families. `kb match` and the triage page point
a log that only a family explains at its page. Family pages are searched (kind "family",
kb.site.index); the list is not. The catalog (kb.records.catalog.Site) holds the families and
their members; this module only hands them to the templates.
"""

from __future__ import annotations

from kb.records.catalog import FAMILIES_URL as URL
from kb.site.page import Page


def pages(renderer) -> list[Page]:
    """The list of families, then each family's page in id order."""
    site = renderer.site
    listed = [(record, len(site.members(record.id))) for record in site.families.values()]
    out = [Page(URL, "Families of failures", "The recurring mechanisms behind the failures of the index: how to "
                "tell each, the command that checks it, the general fix and its entries.",
                renderer._render("families.html", URL, families=listed), "index")]
    for record in site.families.values():
        members = site.members(record.id)
        family = record.family
        out.append(Page(record.url, family.title, f"A family of Blackwell serving failures ({len(members)} "
                        f"entries): {family.how_to_tell}", renderer._render(
                            "family.html", record.url, record=record, f=family, members=members), "family",
                        max((c.entry.updated for c in members), default=None)))
    return out


def urls(site) -> list[str]:
    """The URLs `pages` makes, known without rendering (kb.site.urls.page_urls)."""
    return [URL, *(record.url for record in site.families.values())]
