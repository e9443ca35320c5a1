"""The newest release of a component that the record shows still failing, and the day it was checked.

An open-ended range (`>=0.5.4.post2`, or no range at all: "any version") says nothing about how far
up the failure was seen. Where the record itself checked released versions, the card says so instead:
"every release up to 3.7.0 (checked 2026-12-05)" (ux-review 2026-12-05, S3: versions say what is known).
Two kinds of recorded evidence count, both re-runnable and both dated by their own run:

- a scan (kb.records.scan) of the component's wheels whose newest scanned wheel still carries no code
  for the scan's architecture (a scan that found the fix is the range's upper bound, not this);
- the reproductions (kb.records.reproduction) whose pinned tool is a release of the component
  (TOOL_COMPONENTS), when every one of them is recorded and printed one of the entry's literals.

Nothing here is typed by hand: versions and dates come from `found` and `printed`. Data only; the
card's template (templates/pages/_first_screen.html) shows `phrase`.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from kb.records.reproduction import TOOL_COMPONENTS, shown
from kb.records.scan import version_key, code_for

# Operators that put an upper bound on a range: with one, the range already says where it ends.
_BOUNDED = {"<", "<=", "==", "===", "~="}


@dataclass(frozen=True)
class Checked:
    version: str  # the newest release recorded failing
    date: str  # the day of that record's run (YYYY-MM-DD)


def _open_above(component) -> bool:
    """Whether the component's versions are open upwards: no fix release, no seen_failing list, and
    no range or a range without an upper bound."""
    if component.fixed_in or component.seen_failing:
        return False
    if not component.affected:
        return True
    try:
        return not any(s.operator in _BOUNDED for s in SpecifierSet(component.affected))
    except InvalidSpecifier:
        return False


def _in_range(component, version: str) -> bool:
    return not component.affected or SpecifierSet(component.affected).contains(version, prereleases=True)


def _from_scans(entry, component) -> list[Checked]:
    found = []
    for scan in entry.scans:
        if scan.package != component.package or scan.found is None:
            continue
        wheels = [w for w in scan.found.wheels if not (w.build and w.build in component.builds)]
        if not wheels:
            continue
        newest = max(wheels, key=lambda w: version_key(w.version))
        if not code_for(newest, scan.arch) and _in_range(component, newest.version):
            found.append(Checked(newest.version, scan.found.date))
    return found


def _from_reproductions(entry, component) -> list[Checked]:
    runs = [r for r in entry.reproductions if component.package in TOOL_COMPONENTS.get(r.install.package, ())]
    # All of them, or none: one release of the tool that does not fail (or was never run) breaks "every".
    if not runs or any(r.printed is None or not shown(entry, r.printed.output) for r in runs):
        return []
    return [Checked(r.install.version, r.printed.date) for r in runs if _in_range(component, r.install.version)]


def checked(entry, component) -> Checked | None:
    """The newest release of `component` that `entry`'s scans or reproductions recorded failing, with
    the day it was checked; None where its range is bounded above or nothing was checked."""
    if not _open_above(component):
        return None
    found = _from_scans(entry, component) + _from_reproductions(entry, component)
    if not found:
        return None
    return max(found, key=lambda c: (version_key(c.version), c.date))


def phrase(entry, component) -> str | None:
    """The Affects line's words for `component` where a check says how far up it fails: "every
    release up to X (checked D)", "every release from A up to X (checked D)" for a range `>=A`
    ("after A" for `>A`); None where nothing was checked or the range is not one of those."""
    found = checked(entry, component)
    if found is None:
        return None
    tail = f"up to {found.version} (checked {found.date})"
    if not component.affected:
        return f"every release {tail}"
    specifiers = list(SpecifierSet(component.affected))
    if len(specifiers) == 1 and specifiers[0].operator in (">=", ">"):
        word = "from" if specifiers[0].operator == ">=" else "after"
        return f"every release {word} {specifiers[0].version} {tail}"
    return None


def phrases(entry) -> dict[str, str]:
    """`phrase` for each component of `entry` that has one, by package."""
    return {c.package: p for c in entry.components if (p := phrase(entry, c)) is not None}
