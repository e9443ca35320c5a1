"""One verdict per cell from its record and the facts of a machine: `kb doctor`, `kb match`, the triage page.

The facts are `kb.doctor.facts.Facts` (probed or read from a facts file) or what a log says
(`kb.triage.logfacts.LogFacts`): anything with `gpus` (each with an `architecture`) and
`packages` (name -> version; absent: unknown; None: not installed). The rules are those
kb/doctor/diagnose.py documents (site_src/doctor.md says the same); the triage page runs them in
kb-triage.js (`judge` there) on the data `terms` exports.
"""

from __future__ import annotations

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

VERDICTS = ("affected", "fixed", "unknown", "not-applicable")
TITLES = {"affected": "Affected", "fixed": "Fixed", "unknown": "Unknown", "not-applicable": "Not applicable"}


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _side(spec: Specifier, version: Version) -> str | None:
    """Whether `version`, which `spec` excludes, lies above or below it."""
    op, ver = spec.operator, spec.version
    if op in ("<", "<="):
        return "above"
    if op in (">", ">="):
        return "below"
    if op == "~=":
        return "below" if version < Version(ver) else "above"
    if op == "==":
        if ver.endswith(".*"):
            prefix = Version(ver[:-2]).release
            return "above" if version.release[:len(prefix)] > prefix else "below"
        return "above" if version > Version(ver) else "below"
    return None  # != and ===: no side


def ranged(entry) -> list:
    return [c for c in entry.components if c.affected or c.fixed_in]


def _component(component, facts) -> tuple[str, str]:
    name = component.package
    if name not in facts.packages:
        return "unknown", f"{name} version is unknown"
    installed = facts.packages[name]
    if installed is None:
        return "not-applicable", f"{name} is not installed"
    try:
        version = Version(installed)
    except InvalidVersion:
        return "unknown", f"{name} version {installed!r} is not a PEP 440 version"
    span = component.affected or f"<{component.fixed_in}"
    spec = SpecifierSet(span)
    if spec.contains(version, prereleases=True):
        return "affected", f"{name} {installed} is within {span}"
    if component.fixed_in and version >= Version(component.fixed_in):
        return "fixed", f"{name} {installed} is at or above the fix in {component.fixed_in}"
    sides = [_side(s, version) for s in spec if not s.contains(version, prereleases=True)]
    if sides and all(side == "above" for side in sides):
        return "fixed", f"{name} {installed} is above the affected range {span}"
    return "not-applicable", f"{name} {installed} is outside the affected range {span}"


def judge(entry, facts) -> tuple[str, str]:
    """(verdict, why) of one cell on the machine that `facts` describe."""
    listed = ", ".join(entry.hardware.architectures)
    if facts.gpus is None:
        return "unknown", f"GPU architecture is unknown (no GPU facts); cell applies to {listed}"
    if not facts.gpus:
        return "not-applicable", f"no NVIDIA GPU found; cell applies to {listed}"
    known = sorted({g.architecture for g in facts.gpus if g.architecture})
    matched = [a for a in known if a in entry.hardware.architectures]
    if not matched:
        if len(known) < len(facts.gpus):
            return "unknown", (f"GPU architecture is unknown (no compute capability)"
                               f"{'; other GPUs are ' + ', '.join(known) if known else ''}; cell applies to {listed}")
        return "not-applicable", f"GPU is {', '.join(known)}; cell applies to {listed}"
    gpu = f"GPU is {', '.join(matched)}"
    with_range = ranged(entry)
    if with_range:
        results = [_component(c, facts) for c in with_range]
        for verdict in ("fixed", "not-applicable", "unknown"):
            whys = [why for v, why in results if v == verdict]
            if whys:
                return verdict, "; ".join(whys)
        return "affected", f"{gpu} and " + " and ".join(why for _, why in results)
    packages = list(dict.fromkeys(c.package for c in entry.components))
    installed = [f"{p} {facts.packages[p]}" for p in packages if facts.packages.get(p)]
    if installed:
        return "affected", (f"{gpu} and {', '.join(installed)} {'is' if len(installed) == 1 else 'are'} installed; "
                            "the record gives no version range, so any installed version counts")
    unknown = [p for p in packages if p not in facts.packages]
    if unknown:
        return "unknown", (f"{gpu}, but whether {_or(unknown)} is installed is unknown "
                           "and the record gives no version range")
    return "unknown", (f"{gpu}, but none of {', '.join(packages)} is installed in this Python environment "
                       "and the record gives no version range; run kb doctor where the server runs")
