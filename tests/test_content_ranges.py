"""The index's own cells answer "am I affected?" (#23): a cell carries a version range on some
component, or one of its components says in words why it has none, so a reader who gets no
verdict learns whether nobody knows or nobody checked."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, checked_site

NO_RANGE = re.compile(r"\bno (affected )?range\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def cells():
    return checked_site(ROOT / "kb" / "entries").cells


def test_every_cell_has_a_range_or_says_why_not(cells):
    silent = [c.id for c in cells
              if not any(p.affected or p.fixed_in or p.seen_failing for p in c.entry.components)
              and not any(p.note and NO_RANGE.search(p.note) for p in c.entry.components)]
    assert silent == [], "cells with neither a range nor a 'No range: <why>' note: " + ", ".join(silent)


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
