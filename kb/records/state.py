"""One state per entry: the status badge, its words, the Do-now line and the reason they differ.

Every place that shows where a failure stands reads `state(entry)`: the badge and the Do-now row of
the card (templates/pages/_first_screen.html, cell.html, pointer.html), the browse and search
filters (kb.records.facets, kb.site.search), the matrix, My stack, the triage page and the
exports. Before this they each read `status.state` and the remedies on their own, and the badge
said "Workaround only" above a Do-now row that said "Released fix" (ux-review 2026-12-05, S1-3).

The badge is the record's `status.state`; the Do-now line is `kb.records.remedies.do_now`, or,
where the entry has no remedy a reader can do today, the release its components name; the second
line, `coming`, is the fix no release holds yet (`kb.records.remedies.coming`, else the commit its
components name), never the thing to do.
`disagreement` says where the two tell a different story (a released fix under a badge that says
there is none, a badge that says fixed in a release with no release named); the linter (KB086)
refuses such a record unless its status gives `reason`, which pages show below the badge, never
in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb.records import facets, remedies
from kb.records.schema import Entry

NOTHING_KNOWN = "none known yet"

# Readiness of the Do-now line (kb.records.remedies.READY keys) that says a released version
# carries the fix, and those that say there is a fix in code to move to (a workaround that is an
# upgrade, labelled Workaround, says no such thing).
RELEASED = "released"
UPGRADES = ("released", "reported", "main")


@dataclass(frozen=True)
class Line:
    """The Do-now row as parts: the words for how ready it is (None when nothing is known), what to
    do, whether `what` is a command or variable (set in code font), and the releases it applies to
    (`package`, the display name of the package they are of, may be empty)."""

    label: str | None
    what: str
    code: bool = False
    package: str = ""
    versions: str | None = None

    @property
    def text(self) -> str:
        """The row as plain text, without its source and date (what the triage page shows)."""
        head = f"{self.label}: {self.what}" if self.label else self.what
        return head + (f" ({self.package + ' ' if self.package else ''}{self.versions})" if self.versions else "")


@dataclass(frozen=True)
class State:
    """Where one entry stands, as every page shows it."""

    key: str  # a kb.records.facets.STATUS_NAMES key: the badge
    reason: str | None  # the record's word on why the badge is not what its fixes suggest
    now: remedies.DoNow | None  # the remedy the Do-now row leads with; None when it names a release or nothing
    readiness: str | None  # how ready the Do-now line is (a remedies.READY key), None when nothing is known
    line: Line
    more: int  # the fixes and workarounds the row does not show (they are below, on the entry's page)
    coming: Line | None = None  # "Fix coming: ...", the row's second line; None when no unreleased fix is known
    cost: str | None = None  # what the remedy shown costs, as its record says

    @property
    def words(self) -> str:
        return facets.STATUS_NAMES[self.key]


def _line(entry: Entry, now: remedies.DoNow | None) -> tuple[remedies.DoNow | None, str | None, Line]:
    """(the remedy shown, readiness, the Do-now line) of an entry whose remedies lead with `now`."""
    # A release the components name is a released fix even where no remedy spells it out: it goes
    # before a workaround, as kb.records.remedies orders remedies, unless a fix says moving to it
    # breaks a pin (then the workaround that works as shipped goes first).
    released = [c for c in entry.components if c.fixed_in and not remedies.pin_broken(entry, c.package)]
    if now is not None and (now.readiness == RELEASED or not released):
        remedy = now.remedy
        package = facets.package_name(remedy.package) if remedy.package and now.versions else ""
        return now, now.readiness, Line(now.label, remedy.what, remedy.kind in ("flag", "env-var"), package, now.versions)
    if released:
        return None, RELEASED, Line(remedies.READY[RELEASED], "; ".join(
            f"{facets.package_name(c.package)} {c.fixed_in} or newer" for c in released))
    return None, None, Line(None, NOTHING_KNOWN)


def _coming(entry: Entry, shown: remedies.DoNow | None) -> tuple[remedies.DoNow | None, Line | None]:
    """The card's second line: the fix no release holds yet (kb.records.remedies.coming), else the
    commit a component names, with the remedy it shows (None for a commit); no line when Do now is
    already a released fix."""
    if shown is None and any(c.fixed_in for c in entry.components if not remedies.pin_broken(entry, c.package)):
        return None, None  # Do now names the release the components give: a fix still to come is no news
    later = remedies.coming(entry)
    if later is not None:
        remedy = later.remedy
        return later, Line(later.label, remedy.what, remedy.kind in ("flag", "env-var"))
    landed = [c for c in entry.components if c.fixed_commit and not c.fixed_in]
    if landed and (shown is None or shown.readiness != RELEASED):
        return None, Line(remedies.READY["main"], "; ".join(
            f"{facets.package_name(c.package)} main, commit {c.fixed_commit[:10]}" for c in landed))
    return None, None


def state(entry: Entry) -> State:
    """The one state of `entry`: its badge, the Do-now line, the fix to come and the record's reason."""
    shown, readiness, line = _line(entry, remedies.do_now(entry))
    later, coming = _coming(entry, shown)
    counted = (1 if shown else 0) + (1 if later else 0)
    return State(entry.status.state, entry.status.reason, shown, readiness, line,
                 len(entry.fixes) + len(entry.workarounds) - counted, coming,
                 shown.remedy.cost if shown else None)


def disagreement(entry: Entry) -> str | None:
    """Why the badge and the released fix of `entry` tell different stories, or None when they agree.

    A badge agrees with its record when: fixed-release names the release (a component's fixed_in)
    and leads with a released fix; a component's fixed_in, or a Do-now line that is a released fix,
    comes with fixed-release (a released fix that breaks a pin may follow a workaround); no badge that says there is no fix in code (workaround-only,
    device-limit, under-investigation, fix-proposed) leads with an upgrade or with a setting called
    a fix; fixed-main never leads with an upgrade a thread says a release carries."""
    s = state(entry)
    named = [c.package for c in entry.components if c.fixed_in]
    words = f"the badge says {s.words!r}"
    if s.key == "fixed-release":
        # A released fix that breaks a pin still makes the badge true; the row leads with the
        # workaround that works as shipped and the release is on the entry's page.
        pinned = any(d.readiness == "pinned" for d in remedies.ranked(entry))
        if s.readiness != RELEASED and not pinned:
            return f"{words}, but the Do-now row leads with {s.line.label or 'nothing'!r}, not a released fix"
        if not named:
            return (f"{words}, but no component names the first release that holds the fix (its fixed_in); "
                    f"the Do-now row reads {s.line.text!r}")
        return None
    if named:
        return (f"{words}, but {facets.package_name(named[0])} names the release that fixes it "
                f"(fixed_in); a released fix is 'fixed-release'")
    if s.readiness == RELEASED:
        return f"{words}, but the Do-now row is a released fix: {s.line.text!r}"
    if s.key == "fixed-main":
        if s.readiness == "reported":
            return f"{words}, but the Do-now row is an upgrade a thread says a release carries: {s.line.text!r}"
        return None
    if s.readiness in UPGRADES:
        return f"{words}, but the Do-now row is an upgrade: {s.line.text!r}"
    if s.readiness == "setting" and s.key in ("workaround-only", "device-limit"):
        return f"{words}, but the Do-now row calls a setting a fix: {s.line.text!r}"
    return None
