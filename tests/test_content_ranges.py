"""The index's own ranges say what was read (#23). That every cell carries a range, or says why it has
none, is lint rule KB096 (kb/records/prosecheck.py), which `kb check` and `checked_site` apply."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, checked_site


@pytest.fixture(scope="module")
def cells():
    return checked_site(ROOT / "kb" / "entries").cells


def test_a_range_on_a_component_says_what_was_checked(cells):
    """A range or fixed version is read from tags or release files: the component's note, or a claim
    of the cell, names the commit or the release that was read."""
    unsaid = []
    for c in cells:
        words = " ".join([p.note or "" for p in c.entry.components] + [k.says for k in c.entry.claims])
        for p in c.entry.components:
            if (p.affected or p.fixed_in) and not re.search(r"\b[0-9a-f]{7,40}\b|\btag\b|\bwheel|\brelease", words):
                unsaid.append(f"{c.id} ({p.package})")
    assert unsaid == [], "ranges with no word of what was checked: " + ", ".join(unsaid)
