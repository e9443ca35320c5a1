"""Verdicts on a cell from its record and the facts of a machine: `kb doctor`, `kb match`, the triage
and My stack pages.

Three questions, one set of version rules (`_component`, which decides one package against a
component's `affected` range and `fixed_in`):

- `judge(entry, facts)`: does the cell apply to this machine? (`kb doctor`.) The facts are
  `kb.doctor.facts.Facts` (probed or read from a facts file): `gpus` (each with an
  `architecture`) and `packages` (name -> version; absent: unknown; None: not installed). The
  rules are those kb/doctor/diagnose.py documents (site_src/doctor.md says the same).
- `decide(scope, facts, specific)`: a log's text matched the cell; does what the log says about
  its machine let it apply? (`kb match`, and the triage page, whose twin is `kbVerdict.decide`
  in kb-verdict.js, run on the same vectors, tests/vectors/verdict.json.) `scope(entry)` is what
  it needs of the record, exported to the page as it is; the facts are a log's
  (`kb.triage.logfacts.LogFacts.as_json()`, the shape kbLogFacts gives the page).
- `on_stack(scope, facts)`: which cells apply to a stack a reader describes (a GPU, the versions
  they run)? (The My stack page, kb.site.stack; its twin is `kbVerdict.stack`, run on the
  vectors' `stack` list.) `decide` on those facts, and a cell none of whose packages the stack
  names stays unknown.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # packaging loads when a version is compared: `kb match` imports this module at start
    from packaging.specifiers import Specifier
    from packaging.version import Version

VERDICTS = ("affected", "fixed", "unknown", "not-applicable")
TITLES = {"affected": "Affected", "fixed": "Fixed", "unknown": "Unknown", "not-applicable": "Not applicable"}


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _side(spec: Specifier, version: Version) -> str | None:
    """Whether `version`, which `spec` excludes, lies above or below it."""
    from packaging.version import Version

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
    return _package(component, facts.packages)


def _package(component, packages: dict) -> tuple[str, str]:
    """(verdict, why) of one component with a range, given the versions known (name -> version)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    name = component.package
    if name not in packages:
        return "unknown", f"{name} version is unknown"
    installed = packages[name]
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


# --- a log's verdict on a cell its text matched (kb match, the triage page) ------------------------

# Best first: how `kb match` and the triage page rank the cells a log's text matched.
MATCH_VERDICTS = ("applies", "unknown", "fixed", "ruled-out")
# How `kb match` and the triage page name them.
MATCH_TITLES = {"applies": "Applies", "unknown": "Text matches, environment unknown",
                "fixed": "Fixed in your version", "ruled-out": "Text matches, ruled out"}


def capability_arch(capability: str | None) -> str | None:
    """'12.0' -> 'sm_120', '9.0' -> 'sm_90'; None when it is no 'major.minor'."""
    match = re.fullmatch(r"([0-9]+)\.([0-9]+)", capability or "")
    return f"sm_{int(match.group(1))}{int(match.group(2))}" if match else None


def scope(entry) -> dict:
    """What `decide` needs of a cell (and the triage page gets in triage/patterns.json): the
    architectures it covers and each component's package, affected range and fixed_in."""
    return {"architectures": list(entry.hardware.architectures),
            "components": [{"package": c.package, "affected": c.affected, "fixed_in": c.fixed_in}
                           for c in entry.components]}


class _Range:
    def __init__(self, item: dict):
        self.package, self.affected, self.fixed_in = item["package"], item["affected"], item["fixed_in"]


def _range_words(item: dict) -> str:
    if item["affected"]:
        return f"affected: {item['affected']}" + (f", fixed in {item['fixed_in']}" if item["fixed_in"] else "")
    return f"fixed in {item['fixed_in']}"


def _at(facts: dict, key: str) -> str:
    line = facts.get("lines", {}).get(key)
    return f"line {line}: " if line else ""


def decide(cell: dict, facts: dict, specific: bool = True, subject: str = "the log") -> tuple[str, str]:
    """(verdict, why) of a cell whose text a log matched: one of MATCH_VERDICTS.

    `cell` is `scope(entry)`; `facts` what the log says (LogFacts.as_json(): `gpus`, None when
    it names none, each with `compute_capability` and `line`; `packages`; `lines`, fact -> line
    number); `specific`: some signature that matched is not marked `generic`, or an evidence item did.
    `subject` names where the facts come from in the reason: a GPU without a line number is
    "<subject> has sm_120 (name)", and what is missing is what "<subject> does not show".

    - ruled-out: every GPU the log shows has an architecture the cell does not cover, or a
      package the cell ranges is outside its affected range and not fixed (the line is named);
    - fixed: a package is at or past the cell's fixed_in (or above its whole affected range);
    - unknown: nothing rules it out but the log does not show what would decide (the GPU's sm_
      number, a ranged package's version), which the reason names;
    - applies: the log shows a GPU the entry covers and every ranged package in range (a package
      without a range: any version). So a generic line alone never applies without an
      architecture fact, and the reason says when the line is generic.
    """
    listed = ", ".join(cell["architectures"])
    generic = "" if specific else "; the matched line is generic (other GPUs print it too)"
    gpus = facts.get("gpus")
    shown = []
    missing = []

    def seen(g: dict, a: str | None) -> str:
        where = f"line {g['line']} shows" if g.get("line") else f"{subject} has"
        return f"{where} {a}{' (' + g['name'] + ')' if g.get('name') else ''}"

    if gpus is None:
        missing.append(f"the GPU's sm_ number (the entry covers {listed})")
    else:
        archs = [capability_arch(g.get("compute_capability")) for g in gpus]
        covered = [(g, a) for g, a in zip(gpus, archs) if a in cell["architectures"]]
        if covered:
            shown.append(f"{seen(*covered[0])}, which the entry covers")
        elif None in archs:
            missing.append(f"the GPU's sm_ number (the entry covers {listed})")
        else:
            return "ruled-out", f"{'; '.join(seen(g, a) for g, a in zip(gpus, archs))}; the entry covers {listed}{generic}"
    packages = facts.get("packages", {})
    found: dict[str, list[str]] = {"fixed": [], "not-applicable": [], "affected": []}
    for item in cell["components"]:
        if not (item["affected"] or item["fixed_in"]):
            continue
        verdict, why = _package(_Range(item), packages)
        if verdict == "unknown" and item["package"] not in packages:
            missing.append(f"the {item['package']} version ({_range_words(item)})")
        elif verdict == "unknown":
            missing.append(f"a {item['package']} version PEP 440 reads ({_at(facts, 'packages.' + item['package'])}{why})")
        else:
            found[verdict].append(_at(facts, "packages." + item["package"]) + why)
    if found["not-applicable"]:
        return "ruled-out", "; ".join(found["not-applicable"]) + generic
    if found["fixed"]:
        return "fixed", "; ".join(found["fixed"]) + generic
    if missing:
        said = f" ({'; '.join(shown + found['affected'])})" if shown or found["affected"] else ""
        return "unknown", f"{subject} does not show {' or '.join(missing)}, which would decide{said}{generic}"
    return "applies", "; ".join(shown + found["affected"]) + generic


STACK = "your stack"  # how the reasons of `on_stack` name what the reader gave


def on_stack(cell: dict, facts: dict) -> tuple[str, str]:
    """(verdict, why) of a cell for a stack a reader describes on the /stack/ page (its twin is
    `kbVerdict.stack` in kb-verdict.js, run on the vectors' `stack` list): `decide` on the stack's
    facts (`gpus`: the GPU or architecture chosen, without a line number, or None; `packages`:
    the versions given), worded for the stack. No log text matched, so a cell that would apply
    but whose packages the stack names none of stays unknown: nothing says the reader runs them.
    Only the tests call it: the site runs the JavaScript twin; this is the reference it is held to."""
    verdict, why = decide(cell, facts, True, STACK)
    if verdict != "applies":
        return verdict, why
    packages = list(dict.fromkeys(item["package"] for item in cell["components"]))
    given = facts.get("packages", {})
    named = [p for p in packages if p in given]
    if not named:
        return "unknown", f"{STACK} does not name {_or(packages)}, which would decide ({why})"
    ranged_packages = {item["package"] for item in cell["components"] if item["affected"] or item["fixed_in"]}
    unranged = [f"{p} {given[p]}" for p in named if p not in ranged_packages]
    if unranged:
        why += f"; {', '.join(unranged)}: the record gives no version range, so any version counts"
    return verdict, why


def rank_key(verdict: str, specific: bool, score: float, entry: str) -> tuple:
    """How `kb match` and the triage page order matched cells: ruled-out cells last; among the
    rest a cell only generic lines matched below every other; then by verdict (MATCH_VERDICTS),
    score (higher first) and id."""
    return (verdict == "ruled-out", not specific, MATCH_VERDICTS.index(verdict), -score, entry)
