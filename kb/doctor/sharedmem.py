"""`kb doctor`'s shared-memory prediction: the records' kernels that ask for more shared memory
per block than the GPU allows.

A kernel whose launch asks for more dynamic shared memory than the GPU's opt-in per-block limit
(cudaDevAttrMaxSharedMemoryPerBlockOptin) is refused before it runs (Triton's OutOfResources, the
CuTe DSL launch check, cudaErrorInvalidValue). The records measure such needs (`measurements`);
this stage compares each with the target GPU's limit and keeps the entries whose triggering code
is installed in the judged site-packages, judged by `kb.records.verdict.judge` so that an
installed release outside an entry's range predicts nothing. It hands `kb.doctor.predict` a
`SharedMemory` result.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

# The opt-in per-block limit where the GPU was not probed (--target, or a probe without the
# number): CUTLASS names it for SM 12.x, `sm120_smem_capacity_bytes = 101376` in
# include/cutlass/arch/arch.h (the source kb/families/shared-memory-limit.yaml cites, at
# https://github.com/NVIDIA/cutlass/blob/7107b05535f8977f5ecb9d01ee203205b1fd9bc4/include/cutlass/arch/arch.h),
# the number the records' GB10 and RTX PRO 6000 probes read (mla-decode-fp8-kv-triton-shared-memory).
# Other GPUs are compared only when probed.
LIMIT_SOURCE = "CUTLASS include/cutlass/arch/arch.h sm120_smem_capacity_bytes"
PER_BLOCK_LIMIT = {120: 101_376, 121: 101_376}
PROBED = "probed (cudaDevAttrMaxSharedMemoryPerBlockOptin)"

# A measurement is a kernel's per-block need when it is counted in bytes and its quantity says
# shared memory and a need ("Shared memory needed by ...", "... requires"). A device's budget
# ("budgets reported by ...") says no need; a need per SM ("per SM that ... requires") is checked
# by its kernel against the per-SM limit, another number, and is left out.
_SHARED = re.compile(r"\bshared[- ]memory\b", re.I)
_NEED = re.compile(r"\b(needs?|needed|requires?|required|asks? for|allocates?)\b", re.I)
_PER_SM = re.compile(r"\bper (SM|multiprocessor)\b", re.I)
_ROLES = ("triggers", "raises")


@dataclass(frozen=True)
class Need:
    """One entry's kernel over the limit: its largest recorded need and where it was measured."""

    entry: str
    needs: int
    what: str | None  # the series row (a configuration), None for a single value
    packages: tuple[str, ...]  # the installed triggering (else raising) packages, with versions

    def as_json(self) -> dict:
        return {"entry": self.entry, "needs_bytes": self.needs, "configuration": self.what,
                "installed": list(self.packages)}


@dataclass
class SharedMemory:
    limit: int | None  # bytes per block (opt-in); None: not known for this GPU
    source: str | None  # where the limit comes from
    needs: list[Need] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"limit_bytes": self.limit, "limit_source": self.source, "over_limit": [n.as_json() for n in self.needs]}


def needs(entry) -> list[tuple[int, str | None]]:
    """(bytes, configuration) of each per-block shared-memory need the entry's measurements give."""
    out = []
    for m in entry.measurements or []:
        if m.unit.strip().lower() != "bytes" or not _SHARED.search(m.quantity) or not _NEED.search(m.quantity):
            continue
        if _PER_SM.search(m.quantity):
            continue
        if m.value is not None:
            out.append((int(m.value), None))
        else:
            out += [(int(row.value), str(row.x)) for row in m.series.rows]
    return out


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dist_infos(site: str) -> dict[str, str]:
    """Normalised distribution name -> version, from the dist-info folder names of one site-packages
    folder (`flashinfer_python-0.6.9.dist-info`), in name order, the first of a name winning; {} when
    the folder cannot be listed."""
    try:
        names = sorted(os.listdir(site))
    except OSError:
        return {}
    out: dict[str, str] = {}
    for name in names:
        found = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._]{0,99}?)-([0-9][A-Za-z0-9.+!]{0,59})\.dist-info", name)
        if found:
            out.setdefault(norm(found.group(1)), found.group(2))
    return out


def installed(site_dirs: list[str]) -> dict[str, str]:
    """Normalised distribution name -> version over the site-packages folders (`dist_infos`), the
    first folder winning as Python's import does."""
    out: dict[str, str] = {}
    for site in site_dirs:
        for name, version in dist_infos(site).items():
            out.setdefault(name, version)
    return out


def record_versions(packages: set[str], dists: dict[str, str]) -> dict[str, str | None]:
    """Record package name -> its installed version or None, through the distribution names the
    probe uses (kb.doctor.facts.DISTRIBUTIONS: flashinfer is flashinfer-python)."""
    from kb.doctor.facts import DISTRIBUTIONS

    return {p: next((dists[norm(d)] for d in DISTRIBUTIONS.get(p, (p,)) if norm(d) in dists), None)
            for p in sorted(packages)}


def check(cells, site_dirs: list[str], target, probed: int | None) -> SharedMemory:
    """The entries whose recorded need is over `target`'s per-block limit (`probed` when the GPU
    gave it, else PER_BLOCK_LIMIT) and whose triggering package (else raising) is installed."""
    from kb.doctor.facts import Facts, Gpu
    from kb.records.verdict import judge

    if target is None:
        return SharedMemory(None, None)
    limit, source = (probed, PROBED) if probed else (PER_BLOCK_LIMIT.get(target.arch), LIMIT_SOURCE)
    if limit is None:
        return SharedMemory(None, None)
    result = SharedMemory(limit, source)
    over = [(cell, max(found)) for cell in cells if (found := [n for n in needs(cell.entry) if n[0] > limit])]
    if not over:
        return result
    dists = installed(site_dirs)
    for cell, (need, what) in over:
        entry = cell.entry
        roles = next(([c.package for c in entry.components if c.role == role] for role in _ROLES
                      if any(c.role == role for c in entry.components)), [])
        versions = record_versions({c.package for c in entry.components}, dists)
        present = [f"{p} {versions[p]}" for p in dict.fromkeys(roles) if versions[p]]
        if not present:
            continue
        facts = Facts(gpus=[Gpu(name=target.name[:200], compute_capability=target.capability)],
                      packages=versions)
        if judge(entry, facts)[0] == "affected":  # on the GPU's architecture, in the installed range
            result.needs.append(Need(cell.id, need, what, tuple(present)))
    return result
