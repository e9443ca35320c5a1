"""`kb doctor`'s predictions: what will fail on a GPU before anything runs on it.

Given the judged environment's site-packages folders and a GPU (the one probed, or `--target`),
this stage reads

* the CUDA extension libraries of the serving packages (`KNOWN`), with `kb.records.fatbin`, and
  decides for each compiled unit whether the GPU can run it (`runs`, below);
* the ptxas Triton will call, and whether its CUDA release knows the GPU's target (`PTXAS_KNOWS`);
* the NCCL wheel's version, judged against the records' NCCL cells (`kb.records.verdict.judge`);
* the records' per-block shared-memory needs against the GPU's limit (`kb.doctor.sharedmem`);

and hands on a `Prediction` that `kb.doctor.diagnose` prints and that `--fail-on predicted` counts.

The rule (NVIDIA, CUDA C++ Programming Guide, "Binary Compatibility" and "Feature Availability",
https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility and
https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html)
is `kb.records.fatbin.loads`, which kb repro's scans use too.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from kb.doctor import sharedmem
from kb.records import fatbin
from kb.records.catalog import FAMILIES_URL
from kb.records.visible import visible

# Top-level names in site-packages whose shared libraries carry GPU code -> the records' package
# name (components[].package). A name matches a folder, or a file whose name starts with it and
# a dot (flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so). NVIDIA's own wheels (nvidia/*) are
# not read: cuBLAS and cuDNN pick kernels at run time and fail differently.
KNOWN = {
    "torch": "torch", "vllm": "vllm", "sgl_kernel": "sgl-kernel", "sglang": "sglang",
    "flashinfer": "flashinfer", "flashinfer_jit_cache": "flashinfer", "flashinfer_cubin": "flashinfer",
    "xformers": "xformers", "flash_attn": "flash-attn", "flash_attn_2_cuda": "flash-attn",
    "flash_attn_3": "flash-attn", "bitsandbytes": "bitsandbytes", "llama_cpp": "llama.cpp",
    "causal_conv1d": "causal-conv1d", "causal_conv1d_cuda": "causal-conv1d", "mamba_ssm": "mamba-ssm",
    "selective_scan_cuda": "mamba-ssm", "deep_gemm": "deepgemm", "tensorrt_llm": "tensorrt-llm",
    "torchao": "torchao",
}
MAX_LIBRARIES = 2000  # shared libraries read per run
MAX_FILES = 200_000  # directory entries walked per run
MAX_KERNEL_CHECKS = 64  # units per library whose cubins are read to see whether they hold a kernel
NO_KERNEL_IMAGE = "no kernel image is available for execution on the device"

# The first CUDA release whose ptxas knows each Blackwell target, from the records: ptxas 12.8 is
# the first with sm_120 (kb/repro/tools.in; its reproduction of triton-ptxas-sm120-gpu-name-not-defined
# fails on 12.4) and lacks sm_121a, which ptxas-blackwell 12.9.86 assembles
# (triton-ptxas-sm121a-gpu-name-not-defined). tests/test_predict.py checks both against the entries.
PTXAS_KNOWS = {120: ("12.8", "triton-ptxas-sm120-gpu-name-not-defined"),
               121: ("12.9", "triton-ptxas-sm121a-gpu-name-not-defined")}
PTXAS_TIMEOUT = 10.0
NCCL_DISTRIBUTIONS = ("nvidia_nccl_cu13", "nvidia_nccl_cu12", "nvidia_nccl_cu11")


class TargetError(ValueError):
    """A --target that names no architecture or GPU the tool knows."""


@dataclass(frozen=True)
class Target:
    name: str  # as given, or the probed GPU's name
    major: int
    minor: int
    smem_per_block: int | None = None  # the probed opt-in limit; None: not probed (--target)

    @property
    def arch(self) -> int:
        return self.major * 10 + self.minor

    @property
    def capability(self) -> str:
        return f"{self.major}.{self.minor}"


def parse_target(text: str) -> Target:
    """`sm_121`, `sm_120a`, `12.1` or a GPU name the project's GPU table knows (RTX 5090, GB10)."""
    from kb.records.verdict import digits_capability
    from kb.records.gpus import model_capability

    given = text.strip()
    found = re.fullmatch(r"(?:sm_|compute_)([1-9][0-9]?[0-9])[af]?", given, re.I)
    capability = digits_capability(found.group(1)) if found else None
    if capability is None and re.fullmatch(r"[0-9]{1,2}\.[0-9]", given):
        capability = given
    if capability is None:
        capability = model_capability(given.lower())
    if capability is None:
        raise TargetError(f"--target {visible(given, 80)!r}: not an architecture (sm_120, sm_121, 12.0) nor a "
                          "GPU name the GPU table knows (RTX 5090, RTX PRO 6000 Blackwell, GB10, DGX Spark, H100)")
    major, minor = (int(part) for part in capability.split("."))
    return Target(given, major, minor)


def runs(image: fatbin.Image, target: Target) -> bool:
    """Whether `target` can run `image` (SASS as it is, PTX after the driver's JIT); rule: kb.records.fatbin.loads."""
    return fatbin.loads(image.kind, image.arch, image.variant, target.major, target.minor)


@dataclass
class LibraryVerdict:
    package: str
    library: fatbin.Library
    verdict: str  # runs, jit, fails, partly, no-device-code, unreadable
    failing_units: int = 0
    entries: list[str] = field(default_factory=list)  # the records' cells this failure is
    kernel_free_units: int = 0  # units without an image for the target that hold no kernel (not counted)

    @property
    def counted_units(self) -> int:
        return len(self.library.units) - self.kernel_free_units

    def as_json(self) -> dict:
        lib = self.library
        return {"package": self.package, "path": lib.path, "verdict": self.verdict, "units": len(lib.units),
                "failing_units": self.failing_units, "kernel_free_units": self.kernel_free_units,
                "sass": lib.names("sass"), "ptx": lib.names("ptx"),
                "compressed": lib.compressed, "problem": lib.problem, "bytes_read": lib.bytes_read,
                "entries": self.entries}


def judge_library(package: str, library: fatbin.Library, target: Target | None) -> LibraryVerdict:
    if not library.units:
        return LibraryVerdict(package, library, "unreadable" if library.problem else "no-device-code")
    if target is None:
        return LibraryVerdict(package, library, "unknown")
    failing = jit_only = kernel_free = checked = 0
    for unit in library.units:
        if not any(runs(i, target) for i in unit):
            # a device-link stub holds no kernel (kb.records.fatbin): nothing of it is launched
            checked += 1
            if checked <= MAX_KERNEL_CHECKS and fatbin.holds_kernels(library.path, unit) is False:
                kernel_free += 1
            else:
                failing += 1
        elif not any(runs(i, target) for i in unit if i.kind == "sass"):
            jit_only += 1
    if kernel_free == len(library.units):
        verdict = "no-device-code"
    elif failing == len(library.units) - kernel_free:
        verdict = "fails"
    elif failing:
        verdict = "partly"
    else:
        verdict = "jit" if jit_only else "runs"
    return LibraryVerdict(package, library, verdict, failing, kernel_free_units=kernel_free)


def _walk(root: str, budget: list[int]):
    """Shared-library paths under `root` (a folder or one file), sorted, links not followed."""
    if os.path.isfile(root) and not os.path.islink(root):
        yield root
        return
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        budget[0] -= len(files) + len(dirs)
        if budget[0] < 0:
            return
        for name in sorted(files):
            path = os.path.join(folder, name)
            if (name.endswith(".so") or ".so." in name) and not os.path.islink(path):
                yield path


def libraries(site_dirs: list[str]) -> list[tuple[str, str]]:
    """(package, path) of each shared library of a KNOWN package in the folders, at most MAX_LIBRARIES."""
    out: list[tuple[str, str]] = []
    budget = [MAX_FILES]
    for site in site_dirs:
        try:
            names = sorted(os.listdir(site))
        except OSError:
            continue
        for name in names:
            stem = name.split(".", 1)[0]
            if stem not in KNOWN or (name != stem and not os.path.isfile(os.path.join(site, name))):
                continue
            for path in _walk(os.path.join(site, name), budget):
                out.append((KNOWN[stem], path))
                if len(out) >= MAX_LIBRARIES:
                    return out
    return out


# kb/families/no-code-for-gpu.yaml: "the binary has no code for your GPU", the answer for a library
# of a package no entry names.
NO_CODE_FAMILY = "no-code-for-gpu"


def no_kernel_image_cells(cells, target: Target) -> dict[str, list[str]]:
    """package -> the ids of the cells that are this failure: a signature saying "no kernel image",
    the target's architecture listed, the package among the components."""
    arch = f"sm_{target.arch}"
    out: dict[str, list[str]] = {}
    for cell in cells:
        entry = cell.entry
        if arch not in entry.hardware.architectures:
            continue
        if not any(NO_KERNEL_IMAGE in s.text.lower() for s in entry.signatures):
            continue
        for package in dict.fromkeys(c.package for c in entry.components if c.role != "unaffected"):
            out.setdefault(package, []).append(cell.id)
        out.setdefault("", []).append(cell.id)
    return out


# --- Triton's ptxas ----------------------------------------------------------------------------

@dataclass
class Ptxas:
    path: str | None
    how: str  # how it was chosen
    version: str | None = None
    knows: bool | None = None  # whether it knows the target; None: cannot tell
    entry: str | None = None
    note: str | None = None

    def as_json(self) -> dict:
        return {"path": self.path, "how": self.how, "version": self.version, "knows_target": self.knows,
                "entry": self.entry, "note": self.note}


def triton_ptxas(site_dirs: list[str], target: Target | None, env: dict[str, str]) -> Ptxas | None:
    """The ptxas Triton will run for `target`: TRITON_PTXAS_PATH, else the wheel's bundled
    ptxas-blackwell for capability 10.0 and up when it has one (Triton 3.6+), else its ptxas.
    None when no Triton is installed in the folders."""
    triton = next((os.path.join(s, "triton") for s in site_dirs if os.path.isdir(os.path.join(s, "triton"))), None)
    if triton is None:
        return None
    if env.get("TRITON_PTXAS_PATH"):
        chosen = Ptxas(env["TRITON_PTXAS_PATH"], "TRITON_PTXAS_PATH")
    else:
        names = (["ptxas-blackwell"] if target is not None and target.major >= 10 else []) + ["ptxas"]
        folders = [os.path.join(triton, "backends", "nvidia", "bin"), os.path.join(triton, "third_party", "cuda", "bin")]
        found = [os.path.join(f, n) for n in names for f in folders if os.path.isfile(os.path.join(f, n))]
        if not found:
            return Ptxas(None, "the Triton wheel bundles no ptxas", note="Triton will look for ptxas on PATH")
        chosen = Ptxas(found[0], "bundled with the Triton wheel")
    chosen.version, chosen.note = ptxas_version(chosen.path)
    if target is not None and target.arch in PTXAS_KNOWS and chosen.version:
        first, entry = PTXAS_KNOWS[target.arch]
        try:
            chosen.knows = Version(chosen.version) >= Version(first)
        except InvalidVersion:
            chosen.knows = None
        if chosen.knows is False:
            chosen.entry = entry
    return chosen


def ptxas_version(path: str) -> tuple[str | None, str | None]:
    """(version, note) from `path --version`, run in an empty folder with a time limit."""
    from kb.records.reproduction import TOOL_VERSION

    if not os.path.isabs(path):
        return None, f"{visible(path)} is not an absolute path; not run"
    from kb.doctor.facts import Child

    with tempfile.TemporaryDirectory(prefix="kb-doctor-", ignore_cleanup_errors=True) as empty:
        try:
            # the one child runner of kb doctor: its own session (a wrapper script's children die
            # with it), output read as it comes and capped
            child = Child([path, "--version"], empty)
        except OSError as exc:
            return None, f"cannot run {visible(path)}: {exc.strerror or exc}"
        done = child.finish(time.monotonic() + PTXAS_TIMEOUT)
    if done.timed_out:
        return None, f"`{visible(path)} --version` took over {PTXAS_TIMEOUT:g} s"
    stdout = done.stdout.decode("utf-8", errors="replace")
    found = TOOL_VERSION.search(stdout[:100_000])
    if not found:
        return None, f"`{visible(path)} --version` printed no version (exit {done.returncode})"
    return found.group(1), None


# --- NCCL ----------------------------------------------------------------------------------------

def nccl_version(site_dirs: list[str]) -> str | None:
    """The NCCL wheel's version, from its dist-info folder name (nvidia_nccl_cu12-2.26.2.dist-info):
    the first folder that holds one, the newest CUDA major's wheel first within it."""
    for site in site_dirs:
        found = sharedmem.dist_infos(site)
        for dist in NCCL_DISTRIBUTIONS:
            if sharedmem.norm(dist) in found:
                return found[sharedmem.norm(dist)]
    return None


def nccl_cells(cells, version: str | None, target: Target | None) -> list[tuple[str, str, str]]:
    """(cell id, verdict, why) for the records' cells that give NCCL a version range, on the target
    with that NCCL; a cell without one would apply to every NCCL and predicts nothing."""
    from kb.doctor.facts import Facts, Gpu
    from kb.records.verdict import judge, ranged

    if version is None or target is None:
        return []
    facts = Facts(gpus=[Gpu(name=target.name[:200], compute_capability=target.capability)], packages={"nccl": version})
    out = []
    for cell in cells:
        if any(c.package == "nccl" for c in ranged(cell.entry)):
            verdict, why = judge(cell.entry, facts)
            out.append((cell.id, verdict, why))
    return out


# --- the whole prediction ------------------------------------------------------------------------

@dataclass
class Prediction:
    target: Target | None
    site_dirs: list[str]
    libraries: list[LibraryVerdict]
    ptxas: Ptxas | None
    nccl: str | None
    nccl_cells: list[tuple[str, str, str]]
    shared_memory: sharedmem.SharedMemory

    @property
    def failures(self) -> list[str]:
        """One line per predicted failure."""
        out = []
        for lv in self.libraries:
            if lv.verdict in ("fails", "partly"):
                what = "has no" if lv.verdict == "fails" else f"has {lv.failing_units} of {lv.counted_units} units without"
                named = ", ".join(lv.entries) or "no cell names this package yet"
                out.append(f"{lv.package}: {visible(lv.library.path)} {what} code for sm_{self.target.arch} "
                           f"(\"{NO_KERNEL_IMAGE}\"; {named})")
        if self.ptxas is not None and self.ptxas.knows is False:
            out.append(f"triton: its ptxas {self.ptxas.version} ({visible(self.ptxas.path or '')}) predates "
                       f"sm_{self.target.arch}; Triton kernels will not compile ({self.ptxas.entry})")
        out += [f"nccl {self.nccl}: {cell} ({why})" for cell, verdict, why in self.nccl_cells if verdict == "affected"]
        out += [f"{', '.join(n.packages)}: {n.entry} needs {n.needs:,} bytes of shared memory per block"
                f"{f' ({visible(n.what)})' if n.what else ''}, the GPU allows {self.shared_memory.limit:,}"
                for n in self.shared_memory.needs]
        return out

    def as_json(self) -> dict:
        return {"target": None if self.target is None else {"name": self.target.name, "capability": self.target.capability,
                                                            "architecture": f"sm_{self.target.arch}"},
                "site_packages": self.site_dirs, "libraries": [lv.as_json() for lv in self.libraries],
                "ptxas": None if self.ptxas is None else self.ptxas.as_json(), "nccl": self.nccl,
                "nccl_cells": [{"entry": c, "verdict": v, "why": w} for c, v, w in self.nccl_cells],
                "shared_memory": self.shared_memory.as_json(),
                "failures": self.failures}


def predict(cells, site_dirs: list[str], target: Target | None, env: dict[str, str] | None = None) -> Prediction:
    env = dict(os.environ) if env is None else env
    named = no_kernel_image_cells(cells, target) if target is not None else {}
    verdicts = []
    for package, path in libraries(site_dirs):
        lv = judge_library(package, fatbin.read(path), target)
        if lv.verdict in ("fails", "partly"):
            # the cells of this package, else the family page of the mechanism (a binary without
            # code for the GPU), not the cells of other packages that happen to print the same line
            lv.entries = named.get(package) or [f"family {NO_CODE_FAMILY}: {FAMILIES_URL}{NO_CODE_FAMILY}/"]
        verdicts.append(lv)
    version = nccl_version(site_dirs)
    return Prediction(target, site_dirs, verdicts, triton_ptxas(site_dirs, target, env), version,
                      nccl_cells(cells, version, target),
                      sharedmem.check(cells, site_dirs, target, target.smem_per_block if target else None))


VERDICT_WORDS = {"runs": "runs (SASS for it)", "jit": "runs after the driver JIT-compiles its PTX (slow first start)",
                 "fails": "FAILS: no SASS or PTX it can run", "partly": "FAILS in part: some units have no image for it",
                 "unknown": "cannot tell (no GPU architecture known; pass --target)",
                 "no-device-code": "no GPU code", "unreadable": "could not be read"}


def report(prediction: Prediction) -> list[str]:
    """The human report's prediction section, as lines."""
    p = prediction
    named = "" if p.target is None or p.target.name.lower() == f"sm_{p.target.arch}" else f"{visible(p.target.name)}, "
    head = (f"sm_{p.target.arch} ({named}compute capability {p.target.capability})"
            if p.target else "an unknown GPU")
    out = [f"Predicted for {head}, from {', '.join(visible(s) for s in p.site_dirs) or 'no site-packages folder'}:"]
    shown = [lv for lv in p.libraries if lv.verdict != "no-device-code"]
    quiet = len(p.libraries) - len(shown)
    for lv in shown:
        lib = lv.library
        out.append(f"  {lv.package}: {visible(lib.path)}: {VERDICT_WORDS[lv.verdict]}")
        if lib.units:
            out.append(f"    SASS {', '.join(lib.names('sass')) or 'none'}; PTX {', '.join(lib.names('ptx')) or 'none'}; "
                       f"{len(lib.units)} unit(s)" + ("; compressed, architectures read from headers" if lib.compressed else ""))
        if lv.kernel_free_units:
            n = lv.kernel_free_units
            out.append(f"    {n} unit{'' if n == 1 else 's'} without code for it hold{'s' if n == 1 else ''} no kernel "
                       "(nvlink's device-link output); not counted")
        if lv.entries:
            out.append(f"    this failure is: {', '.join(lv.entries)}")
        if lib.problem:
            out.append(f"    note: {visible(lib.problem)}")
    if quiet:
        out.append(f"  {quiet} other shared librar{'y' if quiet == 1 else 'ies'} of these packages hold no GPU code")
    if not p.libraries:
        out.append("  no CUDA extension library of a known package found")
    if p.ptxas is None:
        out.append("  Triton: not installed there")
    else:
        x = p.ptxas
        knows = {True: "knows the target", False: f"does NOT know the target ({x.entry})",
                 None: "not compared (the records give first ptxas releases for sm_120 and sm_121 only)"}[x.knows]
        out.append(f"  Triton's ptxas: {visible(x.path or 'none')} ({x.how}); version {visible(x.version or 'unknown')}; "
                   + (knows if x.version else visible(x.note or "")))
    out.append(f"  NCCL wheel: {visible(p.nccl or 'not installed')}"
               + "".join(f"; {c}: {v}" for c, v, _ in p.nccl_cells))
    sm = p.shared_memory
    if sm.limit is None:
        known = ", ".join(f"sm_{a}" for a in sharedmem.PER_BLOCK_LIMIT)
        out.append("  Per-block shared memory: not checked (the GPU's opt-in limit was not probed, and without a "
                   f"probe it is known for {known} only, from {sharedmem.LIMIT_SOURCE})")
    else:
        out.append(f"  Per-block shared memory: the GPU allows {sm.limit:,} bytes ({sm.source}); "
                   + (f"{len(sm.needs)} recorded kernel(s) need more" if sm.needs
                      else "no recorded kernel of the installed packages needs more"))
        out += [f"    {n.entry}: needs {n.needs:,} bytes{f' ({visible(n.what)})' if n.what else ''}; "
                f"installed: {', '.join(n.packages)}" for n in sm.needs]
    return out
