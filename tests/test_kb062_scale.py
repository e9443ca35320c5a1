"""Signatures made of a few common words cost linear time, and are refused (issue 38 item 8; attack
review, Informational, KB062).

The review's construction (bench/kb062_scale.py): signatures that are 8-word subsets of a 12-word
pool, each set used at most 8 times, passed KB062's same-word-set rule and made the look-alike check
quadratic (every text tried against two thirds of all patterns). The check now counts what a text
would be tried against before trying it: such texts are KB062 problems, and the cross-checks grow
linearly with the number of signatures.
"""

from __future__ import annotations

import sys
import time

import pytest

from conftest import ROOT
from kb.records import crosscheck, lint

sys.path.insert(0, str(ROOT / "bench"))

import kb062_scale  # noqa: E402

SMALL, LARGE = 50, 200  # cells: 4x the signatures
GROWTH = 8.0  # 4x the signatures may cost at most this much more (2.8x per doubling): quadratic is 16x
FLOOR = 0.05  # seconds: below this a time is noise


def test_pool_signatures_are_refused_and_the_same_cells_unmodified_pass(tmp_path):
    hostile = lint.check([kb062_scale.build(tmp_path / "hostile", 8, hostile=True)])
    crowded = [p for p in hostile.problems if p.code == "KB062"]
    assert {p.code for p in hostile.problems} == {"KB062"}
    assert len(crowded) > 8 * kb062_scale.PER_CELL // 2
    first = crowded[0]
    assert first.loc.startswith("signatures[") and first.loc.endswith("].text") and first.line > 1
    assert f"(at most {crosscheck.MAX_CANDIDATES} may)" in first.message
    assert "'" in first.message.split("holds (", 1)[1]  # the words, quoted, with their counts
    plain = lint.check([kb062_scale.build(tmp_path / "plain", 8, hostile=False)])
    assert plain.problems == []


def test_a_crowded_text_is_counted_not_tried(tmp_path, monkeypatch):
    """The look-alike pass never runs a pattern on a text it counted as crowded, so what it does
    per text is bounded by MAX_CANDIDATES however many signatures share the pool."""
    cells = lint.check([kb062_scale.build(tmp_path / "hostile", 8, hostile=True)]).cells
    tried: list[str] = []
    real = crosscheck.patterns.regex
    monkeypatch.setattr(crosscheck.patterns, "regex", lambda source: tried.append(source) or real(source))
    pairs, crowded = crosscheck.look_alike_scan(cells)
    assert pairs == []
    assert crowded and all(item.count > crosscheck.MAX_CANDIDATES for item in crowded)
    texts = sum(len(c.entry.signatures) for c in cells)
    assert len(tried) <= (texts - len(crowded)) * crosscheck.MAX_CANDIDATES


def _cross_check_seconds(folder) -> float:
    cells = lint.check([folder]).cells
    ids = {c.id for c in cells}
    best = float("inf")
    for _ in range(3):
        started = time.process_time()  # CPU time: a busy machine's waits are not the check's growth
        crosscheck._cross_checks(cells, ids)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.slow
def test_cross_checks_grow_linearly_with_pool_signatures(tmp_path):
    small = _cross_check_seconds(kb062_scale.build(tmp_path / "small", SMALL, hostile=True))
    large = _cross_check_seconds(kb062_scale.build(tmp_path / "large", LARGE, hostile=True))
    assert large <= GROWTH * max(small, FLOOR), (small, large)
