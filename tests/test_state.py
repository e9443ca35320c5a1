"""One state per entry (issue 33 item 4): kb.records.state gives the badge, the Do-now line and the
reason they differ, and every page shows that one state. The table pins the function on records
made from the canonical entry; the page test reads the built HTML of every page with a card
(entry and variant pages) and checks that its badge and its Do-now row tell one story, or that the
record's reason stands below the badge."""

from __future__ import annotations

import html
import json
import re

import pytest

from kb.records import lint
from kb.records.schema import Component, Link, Remedy, Status
from kb.records.state import NOTHING_KNOWN, disagreement, state

from conftest import FIXTURES, checked_site, ROOT

CANONICAL = lint.check([FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"]).cells[0].entry
PR = "https://github.com/triton-lang/triton/pull/8476"
ISSUE = "https://github.com/triton-lang/triton/issues/10331"


def _status(state: str, reason: str | None = None) -> Status:
    return Status.model_validate({"state": state, "as_of": "2026-12", "source": PR, "reason": reason})


def _upgrade(applies: str | None = ">=3.6.0", source: str = ISSUE, pin: bool = False) -> Remedy:
    return Remedy.model_validate({"kind": "version-upgrade", "what": "Triton 3.6.0 or newer", "package": "triton",
                                  "applies": applies, "source": source, "as_of": "2026-12",
                                  **({"breaks_pin": "torch 2.9.0 requires triton==3.5.0"} if pin else {})})


def _setting() -> Remedy:
    return Remedy.model_validate({"kind": "config", "what": "Turn the IOMMU off", "source": ISSUE, "as_of": "2026-12"})


def _triton(**fixed) -> Component:
    return Component.model_validate({"package": "triton", "role": "raises", **fixed})


MERGED = Link.model_validate({"kind": "pr", "url": PR, "state": "merged", "as_of": "2026-12"})


def _entry(state: str, reason: str | None = None, *, fixes=None, workarounds=None, components=None, upstream=None):
    update = {"status": _status(state, reason)}
    for key, value in (("fixes", fixes), ("workarounds", workarounds), ("components", components),
                       ("upstream", upstream)):
        if value is not None:
            update[key] = value
    return CANONICAL.model_copy(update=update)


RELEASED, WORKAROUND, REPORTED, MAIN = "Released fix", "Workaround", "Upgrade, reported fixed (release not confirmed)", \
    "Fix coming"

# (what the record is, entry, badge key, Do-now label, Do-now text starts with, whether badge and Do-now disagree)
CASES = [
    ("the canonical entry: an open pull request, a flag that works today", _entry("fix-proposed"),
     "fix-proposed", WORKAROUND, "Workaround: --kv-cache-dtype auto", False),
    ("an upgrade to named releases under workaround-only (S1-3, the torch entry)",
     _entry("workaround-only", fixes=[_upgrade()]), "workaround-only", RELEASED,
     "Released fix: Triton 3.6.0 or newer (Triton >=3.6.0)", True),
    ("the same upgrade badged fixed-release, but no component names the release",
     _entry("fixed-release", fixes=[_upgrade()], upstream=[MERGED]), "fixed-release", RELEASED, "Released fix:", True),
    ("fixed-release whose component names its release, no remedy at all",
     _entry("fixed-release", fixes=[], workarounds=[], components=[_triton(fixed_in="3.6.0", fixed_by=PR)],
            upstream=[MERGED]), "fixed-release", RELEASED, "Released fix: Triton 3.6.0 or newer", False),
    ("fixed-release whose only remedy is a workaround: the release leads, the workaround stays below",
     _entry("fixed-release", fixes=[], components=[_triton(fixed_in="3.6.0", fixed_by=PR)], upstream=[MERGED]),
     "fixed-release", RELEASED, "Released fix: Triton 3.6.0 or newer", False),
    ("a release named under under-investigation",
     _entry("under-investigation", components=[_triton(fixed_in="3.6.0", fixed_by=PR)], upstream=[MERGED]),
     "under-investigation", RELEASED, "Released fix: Triton 3.6.0", True),
    ("fixed-main leading with an upgrade a thread names (S1-3, the TensorRT-LLM entry)",
     _entry("fixed-main", fixes=[_upgrade(applies=None, source=PR)], workarounds=[], upstream=[MERGED]),
     "fixed-main", REPORTED, REPORTED + ": Triton 3.6.0 or newer", True),
    ("fixed-main with its commit and no remedy: nothing to do yet, the commit is the second line",
     _entry("fixed-main", fixes=[], workarounds=[], components=[_triton(fixed_commit="1a2b3c4d5e6f")]),
     "fixed-main", None, NOTHING_KNOWN, False),
    ("fixed-release whose release breaks a pin: the workaround that works as shipped leads (S2-6, Xid 13)",
     _entry("fixed-release", fixes=[_upgrade(pin=True)], components=[_triton(fixed_in="3.6.0", fixed_by=PR)],
            upstream=[MERGED]), "fixed-release", WORKAROUND, "Workaround: --kv-cache-dtype auto", False),
    ("workaround-only leading with a setting called a fix (S1-3, the NCCL P2P hang)",
     _entry("workaround-only", fixes=[_setting()]), "workaround-only", "Fix", "Fix: Turn the IOMMU off", True),
    ("under-investigation with nothing known", _entry("under-investigation", fixes=[], workarounds=[]),
     "under-investigation", None, NOTHING_KNOWN, False),
    ("a workaround that is an upgrade reads Workaround, whatever the badge",
     _entry("under-investigation", fixes=[], workarounds=[_upgrade()]), "under-investigation", WORKAROUND,
     "Workaround: Triton 3.6.0 or newer", False),
]


@pytest.mark.parametrize("name, entry, key, label, text, differs", CASES, ids=[c[0] for c in CASES])
def test_state_of_a_record(name, entry, key, label, text, differs):
    shown = state(entry)
    assert (shown.key, shown.line.label) == (key, label)
    assert shown.line.text.startswith(text), shown.line.text
    assert (disagreement(entry) is not None) == differs, disagreement(entry)


def test_the_second_line_is_what_no_release_holds_or_the_pinned_release():
    """The row's second line: a merged commit in no release is 'Fix coming', the open pull request of
    the canonical entry 'Fix proposed, not merged', a release that breaks a pin is named as such; a
    released fix leading the row has none (a fix still to come is no news)."""
    cases = [(_entry("fixed-main", fixes=[], workarounds=[], components=[_triton(fixed_commit="1a2b3c4d5e6f")]),
              MAIN + ": Triton main, commit 1a2b3c4d5e"),
             (_entry("fix-proposed"), "Fix proposed, not merged: "),
             (_entry("fixed-release", fixes=[_upgrade(pin=True)], components=[_triton(fixed_in="3.6.0", fixed_by=PR)],
                     upstream=[MERGED]), "Released fix, breaks a pin: Triton 3.6.0 or newer"),
             (_entry("fixed-release", fixes=[], components=[_triton(fixed_in="3.6.0", fixed_by=PR)], upstream=[MERGED]),
              None)]
    for entry, second in cases:
        coming = state(entry).coming
        assert (coming.text if coming else None) == second if second is None else coming.text.startswith(second), \
            (coming, second)


def test_the_reason_is_the_records_and_does_not_change_the_badge():
    entry = _entry("workaround-only", "No release was checked.", fixes=[_upgrade()])
    shown = state(entry)
    assert (shown.key, shown.words, shown.reason) == ("workaround-only", "Workaround only", "No release was checked.")
    assert disagreement(entry) is not None  # the reason explains the difference, it does not remove it


def test_more_counts_the_remedies_the_row_does_not_show():
    # the canonical row shows the flag and, on its second line, the open pull request: neither is "more"
    assert state(CANONICAL).more == len(CANONICAL.fixes) + len(CANONICAL.workarounds) - 2
    led_by_release = CASES[4][1]
    assert state(led_by_release).now is None and state(led_by_release).more == len(led_by_release.workarounds)


# A badge and the Do-now label it may stand above without a reason below it, read from the page
# alone (the labels are kb.records.remedies.READY's words).
AGREE = {
    "fixed-release": {RELEASED, WORKAROUND},  # a workaround only above a released fix that breaks a pin (PINNED)
    # a fix on main is never the thing to do (S2-6): a workaround or nothing leads, "Fix coming" is below
    "fixed-main": {WORKAROUND, "Fix", None},
    "fix-proposed": {WORKAROUND, "Fix", None},
    "workaround-only": {WORKAROUND},
    "device-limit": {WORKAROUND, None},
    "under-investigation": {WORKAROUND, "Fix", None},
}
BADGE = re.compile(r'<span class="kb-status kb-status--([a-z-]+)">')
LEDE = re.compile(r'<p class="kb-lede">.*?</p>\s*(<p class="kb-status-reason">(.*?)</p>)?', re.S)
READY = re.compile(r'<dd class="kb-card__fix"><div class="kb-card__do">(?:<span class="kb-card__ready">(.*?):</span>)?')
PINNED = '<div class="kb-card__coming"><span class="kb-card__ready">Released fix, breaks a pin:</span>'


def test_every_page_badge_agrees_with_its_do_now_or_says_why(live_site):
    cells = checked_site(ROOT / "kb" / "entries")
    by_url = {cells.url(cell): cell for cell in cells.cells}
    pages = sorted(p for p in (live_site / "e").glob("*/index.html") if 'class="kb-card__fix"' in p.read_text("utf-8"))
    assert len(pages) >= len(cells.cells)
    wrong = []
    for path in pages:
        text = path.read_text(encoding="utf-8")
        lede = LEDE.search(text)
        badges = set(BADGE.findall(text))
        (badge,) = BADGE.findall(lede.group(0))[:1] or [None]
        label = html.unescape(READY.search(text).group(1) or "") or None
        where = path.parent.name
        if badges != {badge}:
            wrong.append(f"{where}: badges {sorted(badges)} on one page")
        pinned_below = badge == "fixed-release" and label == WORKAROUND and PINNED in text
        if (label not in AGREE[badge] or (badge == "fixed-release" and label == WORKAROUND and not pinned_below)) \
                and not lede.group(1):
            wrong.append(f"{where}: badge {badge!r} above Do-now {label!r} and no reason below the badge")
        cell = by_url.get(f"e/{where}/")
        if cell is not None:
            shown = state(cell.entry)
            assert (badge, label) == (shown.key, shown.line.label), where
            assert (html.unescape(lede.group(2)) if lede.group(1) else None) == shown.reason, where
    assert wrong == []


# What Chromium shows of an entry page: the lede's badge, every badge, whether a reason stands
# right below the lede, the Do-now row's label (its first child, as READY reads it), and whether
# the badge and the row are drawn at all (a row hidden by CSS tells the reader nothing).
SHOWN = """() => {
  const lede = document.querySelector('p.kb-lede');
  const status = (node) => node ? [...node.classList].find(c => c.startsWith('kb-status--')).slice(11) : null;
  const badge = lede && lede.querySelector('.kb-status');
  const row = document.querySelector('dd.kb-card__fix');
  // the Do-now line leads the row (div.kb-card__do, its label first); "Fix coming" lines follow it
  const line = row && (row.querySelector(':scope > .kb-card__do') || row);
  const first = line && line.firstChild;
  const ready = first && first.nodeType === 1 && first.matches('.kb-card__ready') ? first : null;
  const drawn = (node) => !!node && node.getClientRects().length > 0 && getComputedStyle(node).visibility !== 'hidden';
  const next = lede && lede.nextElementSibling;
  return {badge: status(badge), badges: [...new Set([...document.querySelectorAll('.kb-status')].map(status))].sort(),
          reason: !!(next && next.matches('p.kb-status-reason') && next.textContent.trim()),
          label: ready ? ready.textContent.replace(/:$/, '') : null, drawn: drawn(badge) && drawn(row)};
}"""


@pytest.mark.browser
def test_every_page_badge_agrees_with_its_do_now_in_chromium(live_site, page):
    """Issue 33's done-when: no page's badge contradicts its Do-now, checked over every entry page
    as Chromium draws it (one browser session; the HTML check above reads the same pages as text)."""
    from browser import serve

    pages = sorted(p.parent.name for p in (live_site / "e").glob("*/index.html")
                   if 'class="kb-card__fix"' in p.read_text("utf-8"))
    assert len(pages) >= len(checked_site(ROOT / "kb" / "entries").cells)
    wrong = []
    with serve(live_site) as base:
        for name in pages:
            page.goto(f"{base}e/{name}/", wait_until="domcontentloaded")
            shown = page.evaluate(SHOWN)
            if shown["badges"] != [shown["badge"]]:
                wrong.append(f"{name}: badges {shown['badges']} on one page, {shown['badge']!r} in the lede")
            elif shown["label"] not in AGREE[shown["badge"]] and not shown["reason"]:
                wrong.append(f"{name}: badge {shown['badge']!r} above Do-now {shown['label']!r} and no reason below it")
            if not shown["drawn"]:
                wrong.append(f"{name}: the badge or the Do-now row is not drawn")
    assert wrong == []


def test_the_exports_and_scripts_carry_the_same_state(live_site):
    cells = checked_site(ROOT / "kb" / "entries")
    triage = json.loads((live_site / "triage" / "patterns.json").read_text(encoding="utf-8"))["results"]
    stack = {c["id"]: c for c in json.loads((live_site / "stack" / "stack.json").read_text(encoding="utf-8"))["cells"]}
    for cell in cells.cells:
        shown = state(cell.entry)
        assert (triage[cell.id]["status"], triage[cell.id]["status_reason"]) == (shown.key, shown.reason)
        assert triage[cell.id]["do_now"] == shown.line.text
        assert (stack[cell.id]["status"], stack[cell.id]["status_name"], stack[cell.id]["status_reason"]) == \
            (shown.key, shown.words, shown.reason)
        assert stack[cell.id]["do_now"]["label"] == shown.line.label
