"""What a reader can do now: the one remedy a cell's first screen leads with, and how ready it is.

Data only, no Jinja: the card (`templates/pages/_first_screen.html`) shows `do_now(entry)`. The order
puts what works on released versions before what waits on upstream, so an open pull request never
hides a workaround that works today:

1. a released fix: a `version-upgrade` fix whose `applies` names the releases that carry it, a merged
   fix of a component whose `fixed_in` names its first release (or of a cell whose status is
   `fixed-release` and whose components name no `fixed_in`), or a fix that is a setting (`flag`, `env-var`, `config`), which needs no new code;
2. a workaround, one that is a flag, environment variable, setting or pin before one that patches
   the source;
3. an upgrade to a release a thread names but the record does not pin (no `applies`, no `fixed_in`):
   "Upgrade, reported fixed (release not confirmed)";
4. a fix merged upstream but in no release the record names ("Fix on main, not in a release yet");
5. a fix in an open pull request ("Fix in a pull request, not merged"), then any other unmerged fix.

How far a fix got is read from the record: its source's state among the cell's `upstream` links
(a merged pull request or commit, an open pull request), else the cell's status.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb.records.schema import Entry, Remedy

SETTINGS = ("flag", "env-var", "config")  # remedy kinds that change how a released build is run
READY = {  # how ready a remedy is -> the words the card puts before it
    "released": "Released fix",
    "setting": "Fix",
    "workaround": "Workaround",
    "reported": "Upgrade, reported fixed (release not confirmed)",
    "main": "Fix on main, not in a release yet",
    "proposed": "Fix in a pull request, not merged",
    "unmerged": "Proposed fix, not merged upstream",
}
_ORDER = ("released", "setting", "workaround", "patched-workaround", "reported", "main", "proposed", "unmerged")


@dataclass(frozen=True)
class DoNow:
    """The remedy to show first, the words for how ready it is, and how many more the cell has."""

    remedy: Remedy
    readiness: str  # a key of READY
    versions: str | None = None  # the releases it applies to: its `applies`, else ">=" its component's `fixed_in`

    @property
    def label(self) -> str:
        return READY[self.readiness]


def fix_readiness(entry: Entry, fix: Remedy) -> str:
    """'released', 'setting', 'reported' (an upgrade to a release only a thread names), 'main',
    'proposed' (an open pull request) or 'unmerged'."""
    if fix.kind == "version-upgrade" and fix.applies:
        return "released"
    if fix.kind in SETTINGS:
        return "setting"
    states = {(link.kind, link.state) for link in entry.upstream if link.url == fix.source}
    if ("pr", "open") in states:
        return "proposed"
    merged = ("pr", "merged") in states or ("commit", "merged") in states
    if not (merged or entry.status.state in ("fixed-main", "fixed-release")):
        return "unmerged"
    # A fixed-release status vouches for a merged fix only where no component says which release
    # holds which fix; where one does, a fix of another package is not known to be released.
    vouched = entry.status.state == "fixed-release" and not any(c.fixed_in for c in entry.components)
    released = _first_release(entry, fix) or vouched
    if released:
        return "released"
    return "reported" if fix.kind == "version-upgrade" else "main"


def _first_release(entry: Entry, fix: Remedy) -> str | None:
    """The `fixed_in` of the component the fix changes, if the record names one."""
    return next((c.fixed_in for c in entry.components if c.package == fix.package and c.fixed_in), None)


def _rank(entry: Entry, remedy: Remedy, is_fix: bool) -> str:
    if is_fix:
        return fix_readiness(entry, remedy)
    return "patched-workaround" if remedy.kind == "patch" else "workaround"


def ranked(entry: Entry) -> list[DoNow]:
    """Every fix and workaround, most usable now first; record order within a rank."""
    found = [(_rank(entry, r, True), r) for r in entry.fixes] + [(_rank(entry, r, False), r) for r in entry.workarounds]
    found.sort(key=lambda pair: _ORDER.index(pair[0]))  # stable: record order within a rank
    return [DoNow(r, "workaround" if rank == "patched-workaround" else rank, _versions(entry, r, rank))
            for rank, r in found]


def _versions(entry: Entry, remedy: Remedy, rank: str) -> str | None:
    first = _first_release(entry, remedy)
    if remedy.applies or rank != "released" or not first:
        return remedy.applies
    return ">=" + first


def do_now(entry: Entry) -> DoNow | None:
    """The remedy the card leads with, or None when the cell has neither fix nor workaround."""
    options = ranked(entry)
    return options[0] if options else None
