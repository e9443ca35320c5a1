"""What a reader can do now: the one remedy a cell's first screen leads with, how ready it is, and the
fix still to come.

Data only, no Jinja: the card (`templates/pages/_first_screen.html`) shows `do_now(entry)` and, on a
second line, `coming(entry)`. `ranked` is the one ranking, by "works on the stack as it ships today"
(ux-review 2026-12-05, S2-6: the Xid 13 card led with a FlashInfer upgrade that vLLM 0.28.0's pin
refuses and hid the one-line environment variable that works on it):

1. a released fix that breaks no pin: a `version-upgrade` fix whose `applies` names the releases that
   carry it, a merged fix of a component whose `fixed_in` names its first release (or of a cell whose
   status is `fixed-release` and whose components name no `fixed_in`), or a fix that is a setting
   (`flag`, `env-var`, `config`), which needs no new code;
2. a workaround, one that is a flag, environment variable, setting or pin before one that patches
   the source;
3. a released fix that breaks the pin of a released package (its `breaks_pin`): it works, but pip
   warns and the pairing is untested, so a workaround that works as shipped goes first;
4. an upgrade to a release a thread names but the record does not pin (no `applies`, no `fixed_in`):
   "Upgrade, reported fixed (release not confirmed)".

Those a reader can do today (DOABLE). What no release holds is never the thing to do: it is the
card's second line (`coming`), "Fix coming" (merged upstream, in no release the record names), else
"Fix proposed, not merged" (an open pull request, or a fix nothing says merged); a released fix
that breaks a pin, passed over for a workaround, is named there too.

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
    "pinned": "Released fix, breaks a pin",
    "reported": "Upgrade, reported fixed (release not confirmed)",
    "main": "Fix coming",
    "proposed": "Fix proposed, not merged",
    "unmerged": "Fix proposed, not merged",
}
# Best first. A patched workaround is labelled "Workaround" but ranks after a pinned release: patching
# the source is more work and more risk than moving one package past its pin.
_ORDER = ("released", "setting", "workaround", "pinned", "patched-workaround", "reported", "main", "proposed",
          "unmerged")
DOABLE = ("released", "setting", "workaround", "pinned", "reported")  # works on released versions today


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
    """'released', 'setting', 'pinned' (released, but breaks a package's pin), 'reported' (an upgrade
    to a release only a thread names), 'main', 'proposed' (an open pull request) or 'unmerged'."""
    if fix.kind == "version-upgrade" and fix.applies:
        return "pinned" if fix.breaks_pin else "released"
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
        return "pinned" if fix.breaks_pin else "released"
    return "reported" if fix.kind == "version-upgrade" else "main"


def pin_broken(entry: Entry, package: str) -> bool:
    """Whether moving `package` to its fixed release breaks a pin, as one of the entry's fixes says."""
    return any(f.package == package and f.breaks_pin for f in entry.fixes)


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
    if remedy.applies or rank not in ("released", "pinned") or not first:
        return remedy.applies
    return ">=" + first


def do_now(entry: Entry) -> DoNow | None:
    """The remedy the card leads with: the best a reader can do on released versions today, or None."""
    return next((d for d in ranked(entry) if d.readiness in DOABLE), None)


SECOND = ("pinned", "main", "proposed", "unmerged")  # what the card's second line may name


def coming(entry: Entry) -> DoNow | None:
    """The card's second line, below Do now: a released fix that breaks a pin where a workaround
    leads, else the fix no release holds yet (merged first, then proposed); None when there is none
    or when Do now is itself a released fix (a fix still to come is then no news)."""
    options = ranked(entry)
    first = do_now(entry)
    if first is not None and first.readiness == "released":
        return None
    return next((d for d in options if d.readiness in SECOND and d is not first), None)
