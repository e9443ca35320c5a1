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

from kb.records import gpus

if TYPE_CHECKING:  # packaging loads when a version is compared: `kb match` imports this module at start
    from packaging.specifiers import Specifier
    from packaging.version import Version

VERDICTS = ("affected", "fixed", "not-known", "unknown", "not-applicable")
TITLES = {"affected": "Affected", "fixed": "Fixed", "unknown": "Unknown", "not-known": "Not known to be affected",
          "not-applicable": "Not applicable"}
# Roles that never make a cell apply: a package the failure passes through, or one listed because it
# does not fail. Their ranges may still rule a cell out or show it fixed (involved) or are ignored
# (unaffected).
PASSIVE = ("involved", "unaffected")


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
    """The components whose versions decide: a range, a known-bad set or a fix, and a role other
    than unaffected (a package listed only because it does not fail never decides)."""
    return [c for c in entry.components if c.role != "unaffected" and (c.affected or c.seen_failing or c.fixed_in)]


def _component(component, facts) -> tuple[str, str]:
    return _package(component, facts.packages)


def shown_span(span: str) -> str:
    """A range as the reasons show it: a single '==X' is the version X."""
    return span[2:] if span.startswith("==") and "," not in span and not span.startswith("===") else span


def _package(component, packages: dict) -> tuple[str, str]:
    """(verdict, why) of one component with a range, given the versions known (name -> version).

    `affected` is a range whose bounds were checked: a version inside is affected, one below it is
    outside (not-applicable), one above it is fixed only at or past `fixed_in` (a release that holds
    the fix) and otherwise "not-known". `seen_failing` holds only the versions seen failing: any
    other version is "not-known" (or fixed, past `fixed_in`). A version whose local label is one of
    `builds` is affected whatever its number; where `builds` is given, a version outside the range
    that shows no label cannot be decided."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    name = component.package
    if name not in packages:
        return "unknown", WORDS["version_unknown"].format(name=name)
    installed = packages[name]
    if installed is None:
        return "not-applicable", WORDS["not_installed"].format(name=name)
    try:
        version = Version(installed)
    except InvalidVersion:
        return "unknown", WORDS["not_pep440"].format(name=name, quoted=repr(installed))
    builds = list(component.builds or [])
    label = "+" + version.local if version.local else None
    said = {"name": name, "installed": installed, "fixed_in": component.fixed_in, "label": label,
            "builds": ", ".join(builds)}
    if label in builds:
        return "affected", WORDS["build_affected"].format(**said)
    span = component.affected or component.seen_failing or f"<{component.fixed_in}"
    said["span"] = shown_span(span) if component.seen_failing else span
    spec = SpecifierSet(span)
    if spec.contains(version, prereleases=True):
        return "affected", WORDS["seen" if component.seen_failing else "within"].format(**said)
    if component.fixed_in and version >= Version(component.fixed_in):
        return "fixed", WORDS["at_fix"].format(**said)
    if builds and label is None:
        return "unknown", WORDS["build_unknown"].format(**said)
    if component.seen_failing:
        return "not-known", WORDS["only_seen"].format(**said)
    sides = [_side(s, version) for s in spec if not s.contains(version, prereleases=True)]
    if sides and all(side == "above" for side in sides):
        return "not-known", WORDS["above_range"].format(**said)
    return "not-applicable", WORDS["outside_range"].format(**said)


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
        for verdict in ("fixed", "not-applicable", "not-known", "unknown"):
            whys = [why for v, why in results if v == verdict]
            if whys:
                return verdict, "; ".join(whys)
        return "affected", f"{gpu} and " + " and ".join(why for _, why in results)
    packages = (list(dict.fromkeys(c.package for c in entry.components if c.role not in PASSIVE))
                or list(dict.fromkeys(c.package for c in entry.components)))
    installed = [f"{p} {facts.packages[p]}" for p in packages if facts.packages.get(p)]
    if installed:
        return "affected", (f"{gpu} and {', '.join(installed)} {'is' if len(installed) == 1 else 'are'} installed; "
                            "no affected version range is known, so any installed version counts")
    unknown = [p for p in packages if p not in facts.packages]
    if unknown:
        return "unknown", (f"{gpu}, but whether {_or(unknown)} is installed is unknown "
                           "and no affected version range is known")
    return "unknown", (f"{gpu}, but none of {', '.join(packages)} is installed in this Python environment "
                       "and no affected version range is known; run kb doctor where the server runs")


# --- a log's verdict on a cell its text matched (kb match, the triage page) ------------------------

# Best first: how `kb match` and the triage page rank the cells a log's text matched.
MATCH_VERDICTS = ("applies", "unknown", "not-known", "fixed", "ruled-out")
# How `kb match` and the triage page name them.
MATCH_TITLES = {"applies": "Applies", "unknown": "Text matches, environment unknown",
                "not-known": "Text matches, not known to be affected",
                "fixed": "Fixed in your version", "ruled-out": "Text matches, ruled out"}
# My stack's order (`on_stack`): "when" is a cell that applies only if the stack uses its serving
# engine or passes its trigger, which no log decides.
STACK_VERDICTS = ("applies", "when", "unknown", "not-known", "fixed", "ruled-out")
# The serving engines: a cell one of them raises or triggers applies to a stack only when the stack
# runs it (`on_stack`); package -> the name the reasons give.
ENGINES = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM", "llama.cpp": "llama.cpp",
           "gpustack": "GPUStack", "ollama": "Ollama", "lmdeploy": "LMDeploy"}

# A compute capability and an architecture name, both ways, as data the pages run too (`export`):
# 'major.minor' -> sm_<major><minor> ('12.0' -> 'sm_120'; leading zeros dropped, as int() drops
# them), and an sm_ number's digits -> capability, the first rule that matches: '90' -> '9.0',
# '120' and '1200' -> '12.0', '700' (Thrust's SM_700 namespace) -> '7.0'. Replacements in `$1` form.
CAPABILITY = {"pattern": r"^0*([0-9]+)\.0*([0-9]+)$", "arch": "sm_$1$2"}
ARCH_DIGITS = ((r"^([0-9])([0-9])$", "$1.$2"), (r"^(1[0-9])([0-9])[0-9]*$", "$1.$2"),
               (r"^([0-9])([0-9])[0-9]*$", "$1.$2"))


def _python(replacement: str) -> str:
    return re.sub(r"\$([0-9])", r"\\\1", replacement)


def capability_arch(capability: str | None) -> str | None:
    """'12.0' -> 'sm_120', '9.0' -> 'sm_90'; None when it is no 'major.minor'."""
    pattern = CAPABILITY["pattern"]
    if not re.search(pattern, capability or ""):
        return None
    return re.sub(pattern, _python(CAPABILITY["arch"]), capability)


def digits_capability(digits: str) -> str | None:
    """An sm_ number's digits -> its capability ('120' -> '12.0'); None for a form ARCH_DIGITS lacks."""
    for pattern, replacement in ARCH_DIGITS:
        if re.search(pattern, digits):
            return re.sub(pattern, _python(replacement), digits)
    return None


# The reasons' words, filled with str.format here and the same way by kb-verdict.js (`export`):
# only the control flow that picks and joins them is written twice.
WORDS = {
    "version_unknown": "{name} version is unknown",
    "not_installed": "{name} is not installed",
    "not_pep440": "{name} version {quoted} is not a PEP 440 version",
    "within": "{name} {installed} is within {span}",
    "seen": "{name} {installed} was seen failing ({span})",
    "at_fix": "{name} {installed} is at or above the fix in {fixed_in}",
    "above_range": "{name} {installed} is not known to be affected: it is above the affected range {span}, "
                   "and no release is known to fix it",
    "only_seen": "{name} {installed} is not known to be affected (only {span} was seen failing)",
    "outside_range": "{name} {installed} is outside the affected range {span}",
    "build_affected": "{name} {installed} is a {label} build, which fails at any version",
    "build_unknown": "{name} {installed} shows no build label: {builds} builds fail at any version, "
                     "other builds only within {span}",
    "generic": "; the matched line is generic (other GPUs print it too)",
    "gpu_at_line": "line {line} shows {arch}",
    "gpu_of_subject": "{subject} has {arch}",
    "gpu_name": " ({name})",
    "covered": "{gpu}, which the entry covers",
    "not_covered": "{gpus}; the entry covers {listed}{generic}",
    "no_arch": "the GPU's sm_ number (the entry covers {listed})",
    "no_version": "the {package} version ({range})",
    "range_affected": "affected: {affected}",
    "range_seen": "seen failing: {seen_failing}",
    "range_builds": "; {builds} builds at any version",
    "decisive": "the line \u201c{text}\u201d proves the failure by itself, whatever versions {subject} shows",
    "range_and_fix": ", fixed in {fixed_in}",
    "range_fix": "fixed in {fixed_in}",
    "unreadable": "a {package} version PEP 440 reads ({at}{why})",
    "at_line": "line {line}: ",
    "would_decide": "{subject} does not show {missing}, which would decide{said}{generic}",
    "said": " ({said})",
    "stack": "your stack",
    "stack_unnamed": "{subject} does not name {packages}, which would decide ({why})",
    "unranged": "; {packages}: no affected version range is known, so any version counts",
    "if_used": "only if you use {engines} ({subject} does not name {them})",
    "when": "; applies when you use or pass: {trigger}",
    "out_of_scope": "this index covers {scope}; your GPU is {gpus}",
    "scope_gpu": "{name} ({arch})",
    "pip_list": "the log does not show the {packages} version, which would decide {count}: add what `pip list` "
                "prints (run where it failed) to the log and match again",
}


def architecture_table() -> dict:
    """CAPABILITY and ARCH_DIGITS for the pages (kbVerdict.arch and .capability run them)."""
    return {"capability": CAPABILITY, "digits": [list(rule) for rule in ARCH_DIGITS]}


def export() -> dict:
    """What kbVerdict (kb-verdict.js) runs on, written into triage/patterns.json and stack/stack.json:
    the verdicts' order, the reasons' words, the capability table and the index's scope."""
    return {"order": list(MATCH_VERDICTS), "stack_order": list(STACK_VERDICTS), "words": WORDS,
            "engines": ENGINES, "passive": list(PASSIVE), "architecture": architecture_table(),
            "scope": list(gpus.SCOPE)}


def undecided_versions(hits: list[tuple[str, dict]], facts: dict) -> str | None:
    """The hint to paste `pip list` (WORDS["pip_list"]) when a version would decide a hit: among
    `hits` ((verdict, scope) of each cell matched) those still "unknown" whose ranged packages
    (`_decides`) the facts lack; None when there is none. Its twin is kbVerdict.pipHint."""
    packages = facts.get("packages", {})
    waiting = [[item["package"] for item in cell["components"] if _decides(item) and item["package"] not in packages]
               for decided, cell in hits if decided == "unknown"]
    waiting = [names for names in waiting if names]
    if not waiting:
        return None
    named = sorted({name for names in waiting for name in names})
    count = "this failure" if len(waiting) == 1 else f"{len(waiting)} of these failures"
    return WORDS["pip_list"].format(packages=_or(named), count=count)


def out_of_scope(found: list[dict] | None) -> str | None:
    """The sentence that tells a reader the index is not about their GPU ("this index covers
    sm_120/sm_121; your GPU is NVIDIA H100 80GB HBM3 (sm_90)"), when every GPU in `found` (facts'
    `gpus`: name, compute_capability) has a known architecture outside gpus.SCOPE; None when one is
    inside, one's architecture is unknown, or none is given. Its twin is kbVerdict.outOfScope."""
    if not found:
        return None
    archs = [capability_arch(g.get("compute_capability")) for g in found]
    if any(a is None or a in gpus.SCOPE for a in archs):
        return None
    named = [WORDS["scope_gpu"].format(name=g["name"], arch=a) if g.get("name") else a for g, a in zip(found, archs)]
    return WORDS["out_of_scope"].format(scope="/".join(gpus.SCOPE), gpus=", ".join(dict.fromkeys(named)))


def proven(cell: dict, facts: dict, matched: list[str] | tuple = ()) -> bool:
    """Whether the log proves a cell beyond the text it matched: a decisive signature of it matched
    (`matched`, texts), or a package the cell ranges is shown within its affected range or as a
    failing build (what `decide` calls affected). A cell only generic lines matched and nothing
    proves ranks below the family answer of those lines (kb.triage.familyanswer.placed). Its twin
    is kbVerdict.proven."""
    if any(line["text"] in matched for line in cell.get("decisive", [])):
        return True
    packages = facts.get("packages", {})
    return any(_decides(item) and _package(_Range(item), packages)[0] == "affected" for item in cell["components"])


def scope(entry) -> dict:
    """What `decide` and `on_stack` need of a cell (and the pages get in triage/patterns.json and
    stack/stack.json): the architectures it covers; each component's package, role, range
    (affected or seen_failing), fixed_in and failing builds; the texts of its decisive signatures;
    its trigger."""
    return {"architectures": list(entry.hardware.architectures),
            "components": [{"package": c.package, "role": c.role, "affected": c.affected,
                            "seen_failing": c.seen_failing, "fixed_in": c.fixed_in, "builds": list(c.builds)}
                           for c in entry.components],
            "decisive": [{"text": s.text, "quote": _quote(s)} for s in entry.signatures if s.decisive],
            "trigger": entry.trigger}


def _quote(signature) -> str:
    """How a reason quotes a decisive line: its match pattern when that has no placeholder (the
    literal without the parts that vary, such as the GPU's name), else its literal."""
    return signature.match if signature.match and "{" not in signature.match else signature.text


class _Range:
    def __init__(self, item: dict):
        self.package, self.affected, self.fixed_in = item["package"], item["affected"], item["fixed_in"]
        self.seen_failing, self.builds = item.get("seen_failing"), item.get("builds") or []


def _decides(item: dict) -> bool:
    """Whether a component's versions decide a cell (`ranged`, on a scope's item)."""
    return item.get("role") != "unaffected" and bool(item["affected"] or item.get("seen_failing") or item["fixed_in"])


def _range_words(item: dict) -> str:
    builds = WORDS["range_builds"].format(builds=", ".join(item["builds"])) if item.get("builds") else ""
    if item["affected"] or item.get("seen_failing"):
        said = (WORDS["range_affected"].format(affected=item["affected"]) if item["affected"]
                else WORDS["range_seen"].format(seen_failing=shown_span(item["seen_failing"])))
        return said + (WORDS["range_and_fix"].format(fixed_in=item["fixed_in"]) if item["fixed_in"] else "") + builds
    return WORDS["range_fix"].format(fixed_in=item["fixed_in"]) + builds


def _at(facts: dict, key: str) -> str:
    line = facts.get("lines", {}).get(key)
    return WORDS["at_line"].format(line=line) if line else ""


def decide(cell: dict, facts: dict, specific: bool = True, subject: str = "the log",
           matched: list[str] | tuple = ()) -> tuple[str, str]:
    """(verdict, why) of a cell whose text a log matched: one of MATCH_VERDICTS.

    `cell` is `scope(entry)`; `facts` what the log says (LogFacts.as_json(): `gpus`, None when
    it names none, each with `compute_capability` and `line`; `packages`; `lines`, fact -> line
    number); `specific`: some signature that matched is not marked `generic`, or an evidence item did.
    `subject` names where the facts come from in the reason: a GPU without a line number is
    "<subject> has sm_120 (name)", and what is missing is what "<subject> does not show".
    `matched`: the texts of the signatures the log showed; one of the cell's `decisive` ones proves
    the failure by itself (the reason quotes it as `_quote` gives it).

    - ruled-out: every GPU the log shows has an architecture the cell does not cover, or a
      package the cell ranges is outside its affected range and not fixed (the line is named);
    - fixed: a package is at or past the cell's fixed_in (a release that holds the fix);
    - not-known: a package is outside the versions seen failing, or above the affected range with
      no release known to fix it: nothing says it fails there, nothing says it was fixed;
    - unknown: nothing rules it out but the log does not show what would decide (the GPU's sm_
      number, a ranged package's version), which the reason names;
    - applies: the log shows a GPU the entry covers and every ranged package in range (a package
      without a range: any version), or, unless its GPU rules the cell out, a decisive line,
      whatever the versions. So a generic line alone never applies without an architecture fact,
      and the reason says when the line is generic.
    """
    listed = ", ".join(cell["architectures"])
    generic = "" if specific else WORDS["generic"]
    gpus = facts.get("gpus")
    shown = []
    missing = []

    def seen(g: dict, a: str | None) -> str:
        where = (WORDS["gpu_at_line"].format(line=g["line"], arch=a) if g.get("line")
                 else WORDS["gpu_of_subject"].format(subject=subject, arch=a))
        return where + (WORDS["gpu_name"].format(name=g["name"]) if g.get("name") else "")

    if gpus is None:
        missing.append(WORDS["no_arch"].format(listed=listed))
    else:
        archs = [capability_arch(g.get("compute_capability")) for g in gpus]
        covered = [(g, a) for g, a in zip(gpus, archs) if a in cell["architectures"]]
        if covered:
            shown.append(WORDS["covered"].format(gpu=seen(*covered[0])))
        elif None in archs:
            missing.append(WORDS["no_arch"].format(listed=listed))
        else:
            return "ruled-out", WORDS["not_covered"].format(gpus="; ".join(seen(g, a) for g, a in zip(gpus, archs)),
                                                            listed=listed, generic=generic)
    packages = facts.get("packages", {})
    found: dict[str, list[str]] = {"fixed": [], "not-applicable": [], "not-known": [], "affected": []}
    for item in cell["components"]:
        if not _decides(item):
            continue
        verdict, why = _package(_Range(item), packages)
        at = _at(facts, "packages." + item["package"])
        if verdict == "unknown" and item["package"] not in packages:
            missing.append(WORDS["no_version"].format(package=item["package"], range=_range_words(item)))
        elif verdict == "unknown":
            missing.append(WORDS["unreadable"].format(package=item["package"], at=at, why=why))
        else:
            found[verdict].append(at + why)
    proof = [line["quote"] for line in cell.get("decisive", []) if line["text"] in matched]
    if proof:
        return "applies", "; ".join(shown + found["affected"] + [WORDS["decisive"].format(text=proof[0], subject=subject)])
    for verdict, said in (("not-applicable", "ruled-out"), ("fixed", "fixed"), ("not-known", "not-known")):
        if found[verdict]:
            return said, "; ".join(found[verdict]) + generic
    if missing:
        said = WORDS["said"].format(said="; ".join(shown + found["affected"])) if shown or found["affected"] else ""
        return "unknown", WORDS["would_decide"].format(subject=subject, missing=" or ".join(missing), said=said,
                                                       generic=generic)
    return "applies", "; ".join(shown + found["affected"]) + generic


STACK = WORDS["stack"]  # how the reasons of `on_stack` name what the reader gave


def on_stack(cell: dict, facts: dict) -> tuple[str, str]:
    """(verdict, why) of a cell for a stack a reader describes on the /stack/ page, one of
    STACK_VERDICTS (its twin is `kbVerdict.stack` in kb-verdict.js, run on the vectors' `stack`
    list): `decide` on the stack's facts (`gpus`: the GPU or architecture chosen, without a line
    number, or None; `packages`: the versions given), worded for the stack. No log text matched, so
    a cell that `decide` lets apply
    - is "when" if a serving engine (ENGINES) raises or triggers it and the stack names none of
      them: it applies only if the reader uses that engine;
    - stays unknown if the stack names none of the packages that raise or trigger it (an involved
      or unaffected package never makes a cell apply): nothing says the reader runs them;
    - is "when" if the record gives a trigger (a flag, a model kind), named in the reason.
    Only the tests call it: the site runs the JavaScript twin; this is the reference it is held to."""
    given = facts.get("packages", {})
    active = list(dict.fromkeys(item["package"] for item in cell["components"] if item.get("role") not in PASSIVE))
    engines = [p for p in active if p in ENGINES]
    verdict, why = decide(cell, facts, True, STACK)
    if engines and not any(p in given for p in engines):
        # No engine of the cell in the stack: what decides is whether the reader uses one, not its version
        # (a version range of SGLang must not turn a vLLM-only stack's answer into "version unknown").
        if verdict == "unknown":
            unranged = [item | {"affected": None, "seen_failing": None, "fixed_in": None}
                        if item["package"] in engines else item for item in cell["components"]]
            verdict = decide(cell | {"components": unranged}, facts, True, STACK)[0]
        if verdict == "applies":
            return "when", WORDS["if_used"].format(engines=_or([ENGINES[p] for p in engines]), subject=STACK,
                                                   them="it" if len(engines) == 1 else "them")
    if verdict != "applies":
        return verdict, why
    packages = active or list(dict.fromkeys(item["package"] for item in cell["components"]))
    named = [p for p in packages if p in given]
    if not named:
        return "unknown", WORDS["stack_unnamed"].format(subject=STACK, packages=_or(packages), why=why)
    ranged_packages = {item["package"] for item in cell["components"] if _decides(item)}
    unranged = [f"{p} {given[p]}" for p in named if p not in ranged_packages]
    if unranged:
        why += WORDS["unranged"].format(packages=", ".join(unranged))
    if cell.get("trigger"):
        return "when", why + WORDS["when"].format(trigger=cell["trigger"])
    return verdict, why


def tie(cell: dict, facts: dict) -> tuple[int, int]:
    """What breaks a tie between cells a log matched by the same line ("no kernel image is
    available", which torch, vLLM, sgl-kernel and others all print; `rank_key`): (-shown, unseen), where of the
    packages that raise or trigger the cell (roles not PASSIVE) `shown` is how many the log shows
    (a version banner: `packages`; a traceback frame: `lines["frames.<package>"]`, kb.triage.logfacts)
    and `unseen` how many it does not. The cell whose packages the log shows most comes first, then
    the one it leaves fewest unseen: a vLLM traceback through torch puts the vLLM build entry
    (vllm, torch) above torch's own (torch); a bare torch traceback puts torch's first. The GPU
    decides before this, through the verdict (a cell whose architectures miss the log's GPU is
    ruled out)."""
    lines, packages = facts.get("lines", {}), facts.get("packages", {})
    active = dict.fromkeys(item["package"] for item in cell["components"] if item.get("role") not in PASSIVE)
    shown = sum(1 for p in active if p in packages or "frames." + p in lines)
    return -shown, len(active) - shown


def rank_key(verdict: str, specific: bool, score: float, entry: str, order: tuple = MATCH_VERDICTS,
             tied: tuple[int, int] = (0, 0)) -> tuple:
    """How `kb match` and the triage page order matched cells: ruled-out cells last; among the
    rest a cell only generic lines matched below every other; then by verdict (`order`:
    MATCH_VERDICTS, or STACK_VERDICTS on My stack), score (higher first), what the log shows of
    the cell's packages (`tied`: `tie(cell, facts)`) and id. For a cell only generic lines matched,
    `tied` comes before the score: a generic line says nothing of which package failed, and how
    many generic signatures a record lists is no evidence either. The id decides only a tie left
    after all of them."""
    first = tied if not specific else (0, 0)
    return (verdict == "ruled-out", not specific, order.index(verdict), *first, -score, *tied, entry)
