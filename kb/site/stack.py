"""The My stack page (`stack/`): a reader picks a GPU or architecture and the versions they run,
and gets every failure's verdict for that stack, shareable as `stack/?gpu=rtx-5090&vllm=0.28.0`.

What this stage hands on: the form's choices (`gpu_groups`: the records' GPU models by
architecture, plus the architectures themselves; `packages`: every package the records' components
name, by display name), the link each GPU, architecture and component listing gives (`link`), and
`stack/stack.json` (`data`): each cell's title, page, status, what to do now and its scope
(`kb.records.verdict.scope`, what triage/patterns.json exports too). The page's script
(site_src/assets/kb-stack.js) decides each cell with `kbVerdict.stack`, the twin of
`kb.records.verdict.on_stack`. A GPU's architecture is what the log-facts table says of its name
(`kb.triage.logfacts`: NVIDIA's capability of the model, else the one sm_ number the name states).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlencode

from kb.records import facets, gpus, verdict
from kb.records.catalog import Site
from kb.records.state import state
from kb.triage import logfacts

URL = "stack/"
DATA = "stack/stack.json"
SHOWN_PACKAGES = 8  # inputs shown at once; the rest are under "More packages"
OTHER = "Other GPUs (not covered by this index)"  # the menu's group of gpus.OTHER_GPUS
# How the page names the verdicts of `kb.records.verdict.on_stack` (no log text matched here).
TITLES = {"applies": "Applies", "when": "Applies when you use or pass \u2026",
          "unknown": "Environment unknown", "not-known": "Not known to be affected",
          "fixed": "Fixed in your version", "ruled-out": "Ruled out"}


@dataclass(frozen=True)
class Choice:
    value: str  # what `?gpu=` holds: a GPU's facet key (its listing's URL key) or an architecture (sm_120)
    label: str
    capability: str  # the compute capability the page decides on ("12.0")
    name: str  # the GPU's name as the records write it; "" for an architecture


def arch_capability(arch: str) -> str:
    """'sm_120' -> '12.0', 'sm_90' -> '9.0' (kb.records.verdict's table)."""
    return verdict.digits_capability(arch.removeprefix("sm_"))


def gpu_architecture(name: str) -> str | None:
    """The architecture of a GPU name from the records: its model's (logfacts.MODELS), else the one
    sm_ number the name itself states ("any SM120 build target"); None when neither says."""
    capability = logfacts.model_capability(name)
    if capability:
        return verdict.capability_arch(capability)
    found = logfacts.read([name]).gpus or []
    archs = {g.architecture for g in found}
    return archs.pop() if len(archs) == 1 else None


def model(name: str) -> str | None:
    """The GPU model a records' GPU name names: the name without a closing note in parentheses
    ("GB10 (unconfirmed report, see claims)" -> "GB10"), when NVIDIA's capabilities (logfacts.MODELS)
    know it; None for a build target or a card the report did not name."""
    base = re.sub(r"\s*\([^()]*\)$", "", name)
    return base if logfacts.model_capability(base) else None


def gpu_groups(site: Site) -> list[tuple[str, str, list[Choice]]]:
    """(architecture, its display name, choices) for every architecture the records cover: the
    architecture itself first, then each GPU model the records name with that architecture, in
    the order the GPU listings use, its value the key of the model's listing. A GPU name that
    names no model is not offered: its listing links to its architecture instead."""
    archs = sorted({a for cell in site.cells for a in cell.entry.hardware.architectures})
    out = []
    for arch in archs:
        choices = {arch: Choice(arch, f"Any {arch} GPU", arch_capability(arch), "")}
        for _, (name, _) in site.facet_index["gpu"].items():
            found = model(name)
            if found and gpu_architecture(found) == arch:
                choices.setdefault(facets.key(found), Choice(facets.key(found), found, arch_capability(arch), found))
        out.append((arch, facets.ARCH_NAMES.get(arch, arch), list(choices.values())))
    return out + [(OTHER, OTHER, other_gpus())]


def other_gpus() -> list[Choice]:
    """GPUs of other architectures the menu names (gpus.OTHER_GPUS): picked, every cell is ruled out
    and the page says the index does not cover them (kbVerdict.outOfScope)."""
    return [Choice(facets.key(name), name, gpus.model_capability(name), name) for name in gpus.OTHER_GPUS]


def packages(site: Site) -> list[tuple[str, str, str]]:
    """(field, display name, the packages the field gives beside its own, space-separated) of every
    component the records' components name, the most named first (ties by display name). A group
    of packages (facets.COMPONENT_GROUPS: the CUDA toolkit is CUDA) is one field: a reader knows
    one CUDA version, and it is the one both the runtime and the toolkit ranges are read against."""
    counts = Counter(facets.component(p) for cell in site.cells
                     for p in dict.fromkeys(c.package for c in cell.entry.components))
    named = {c.package for cell in site.cells for c in cell.entry.components}
    also = {field: " ".join(sorted(p for p in named if p != field and facets.component(p) == field)) for field in counts}
    return sorted(((p, facets.package_name(p), also[p]) for p in counts),
                  key=lambda item: (-counts[item[0]], item[1].casefold()))


def models() -> list[dict]:
    """The GPU table (kb.records.gpus.MODELS) for the page: a `?gpu=` value the menu lacks
    (`rtx-4080`) is read as a GPU name against it, so the page can say what it is."""
    return [{"pattern": pattern, "capability": cc} for pattern, cc in gpus.MODELS]


def link(facet: str, value: str, name: str) -> str | None:
    """The query string of the My stack page a listing of `facet` links to (`?gpu=rtx-5090`, or a
    component's empty field, which the page focuses); "" (the page as it is) for a GPU name whose
    architecture nothing says; None for the other facets."""
    if facet == "component":
        return "?" + urlencode({facets.component(_package_of(name)): ""})
    if facet == "architecture":
        return "?" + urlencode({"gpu": value.replace("-", "_")})
    if facet == "gpu":
        if model(name):
            return "?" + urlencode({"gpu": facets.key(model(name))})
        arch = gpu_architecture(name)
        return "?" + urlencode({"gpu": arch}) if arch else ""
    return None


def _package_of(name: str) -> str:
    """The package a component listing shows as `name` (its display name, kb.records.facets)."""
    named = [p for p, shown in facets.PACKAGE_NAMES.items() if shown == name]
    return named[0] if named else name


def do_now(entry) -> dict:
    """What the cell's card leads with under "Do now" (kb.records.state), as plain text parts."""
    line = state(entry).line
    return {"label": line.label, "what": line.what, "code": line.code,
            "versions": f"{line.package} {line.versions}".strip() if line.versions else None}


def data(site: Site) -> str:
    """stack/stack.json: every cell, in id order, with what the page shows and decides on."""
    cells = [{"id": cell.id, "url": site.url(cell), "title": cell.entry.title, "status": state(cell.entry).key,
              "status_name": state(cell.entry).words, "status_reason": state(cell.entry).reason,
              "do_now": do_now(cell.entry),
              "scope": verdict.scope(cell.entry)} for cell in site.cells]
    return json.dumps({"version": 1, "verdicts": TITLES, "verdict": verdict.export(), "cells": cells,
                       "models": models()},
                      separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"
