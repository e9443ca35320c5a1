"""Stage 2-3, validate and lint: scans, the versions a "no kernel image" range names proved by the released wheels.

A scan is data, like a reproduction (kb.records.reproduction): which package, which of its libraries
(a glob inside the wheel), for which architecture, over which released versions, with which pinned
cuobjdump; and what was found (`found`, written by `kb repro --write`): for each version the wheel
pip chose (file name and sha256), the build label its `version.py` carries (torch's `+cu126`), and
per library the SASS and PTX images cuobjdump listed (or, with `reader: fatbin-headers`, the fat
binaries' entry headers held), counted per architecture. `kb repro` runs
them (kb.repro.scan).

From `found` follow the last version without code for the architecture and the first with it
(`boundary`). Two rules (handed to `kb.records.lint` through kb.records.crosscheck): KB093, the scan
can be re-run as recorded; KB094, the scanned component's range and fixed_in agree with what the
wheels hold, naming the scan and the wheel that proves each disagreement.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from kb.records.fatbin import loads, split_name
from kb.records.load import dotted
from kb.records.problems import MISSING, Problem
from kb.records.reproduction import TOOL_VERSION, Install, Line, locked

# The cuobjdump package a scan may use; its executable's place in the wheel.
SCAN_TOOLS = {"nvidia-cuda-cuobjdump": "nvidia/*/bin/cuobjdump"}
# What "no code" means in KB094's messages (kb.records.scan.code_for).
_NO_CODE = " (no SASS it loads, no PTX it compiles in every fat binary)"
ARCH = re.compile(r"sm_[0-9]+[a-z]?")


def _fail(code: str, message: str, **ctx):
    raise PydanticCustomError(code, message, ctx)


def _schema():
    from kb.records import schema  # late: kb.records.schema imports this module

    return schema


def _version(value: str) -> str:
    return _schema()._version(value)


def _date(value: str) -> str:
    return _schema()._full_date(value)


def _library(value: str) -> str:
    # A path inside the wheel, '*', '?' and '[...]' allowed (fnmatch's); never absolute and never '..' (it is only
    # matched against the wheel's member names, but a reader should see a plain wheel path).
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.*?/\[\]-]*", value) or ".." in value.split("/"):
        _fail("KB024", "must be a path inside the wheel such as 'vllm/_C.abi3.so' ('*', '?' and '[68]' may "
              "stand for parts of a name; no leading '/', no '..')")
    return value


def _images(value: dict[str, int]) -> dict[str, int]:
    for arch, count in value.items():
        if not ARCH.fullmatch(arch) or count < 1:
            _fail("KB024", "must map an architecture such as 'sm_120' to how many images cuobjdump listed (1 or "
                  "more); record it with `kb repro --write`")
    return value


Version_ = Annotated[str, Field(max_length=60), AfterValidator(_version)]
Images = Annotated[dict[str, int], Field(max_length=64), AfterValidator(_images)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Library(_Model):
    path: Annotated[str, Field(max_length=200), AfterValidator(_library)]
    sass: Images
    ptx: Images


class Wheel(_Model):
    version: Version_
    file: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]+\.whl$", max_length=200)]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    # The local label of the wheel's own version.py (torch/version.py: '2.7.0+cu126'), when it has one.
    build: Annotated[str, Field(pattern=r"^\+[a-z0-9]+(\.[a-z0-9]+)*$", max_length=30)] | None = None
    libraries: list[Library] = Field(max_length=40)


class Found(_Model):
    tool_version: Line
    date: Annotated[str, Field(max_length=10), AfterValidator(_date)]
    machine: Line
    wheels: list[Wheel] = Field(min_length=1, max_length=20)


class Scan(_Model):
    package: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=60)]
    library: Annotated[str, Field(max_length=200), AfterValidator(_library)]
    arch: Annotated[str, Field(pattern=r"^sm_12[01]$")]
    # The wheel pip picks: for CPython `python` on Linux (x86_64 or aarch64) with glibc up to
    # `platform`'s, or on 64-bit Windows (`win_amd64`, whose DLLs keep their CUDA code in a PE section).
    platform: Annotated[str, Field(pattern=r"^(manylinux_2_[0-9]+_(x86_64|aarch64)|win_amd64)$")]
    python: Annotated[str, Field(pattern=r"^3\.[0-9]+$")]
    versions: list[Version_] = Field(min_length=2, max_length=20)
    tool: Install
    # How the images are counted. Left out: cuobjdump's listings. `fatbin-headers`: kb's own reader
    # of the fat binaries' entry headers (kb.records.fatbin), for a library cuobjdump stops on ("Invalid
    # ELF" after its first fat binary: onnxruntime-gpu 1.22-1.23's CUDA provider); cuobjdump still runs,
    # and what it listed before stopping must agree with the headers (kb.repro.scan.cross_check).
    reader: Literal["fatbin-headers"] | None = None
    # The newest final release with a wheel for `platform` on the package index when `kb repro
    # --newest --write` last asked; a new one shows as a change to the entry, to be scanned.
    newest: Version_ | None = None
    # None until `kb repro --write ID` records a scan (KB093 asks for it).
    found: Found | None = None

    def command(self) -> str:
        how = "fat binary headers (cuobjdump cross-checks)" if self.reader else "cuobjdump --list-elf --list-ptx"
        return f"{how} {self.library} in {self.package} {', '.join(self.versions)}"


# --- what the wheels prove ----------------------------------------------------------------------


def version_key(version: str):
    """A sort key for release versions; one that is not PEP 440 sorts first, by its text."""
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def code_for(wheel: Wheel, arch: str) -> list[str]:
    """The images of the wheel's libraries that a device of `arch` runs, by the driver's rule
    (kb.records.fatbin.loads): SASS it loads ('sm_120'), and PTX it compiles ('compute_90') when the
    library holds that PTX in every fat binary, i.e. at least as many times as its most frequent
    SASS architecture. The count matters because PTX may cover a few kernels only: vLLM 0.9.1's
    _C.abi3.so holds compute_90 PTX x16 beside sm_80 SASS x50, and fails on sm_120; onnxruntime-gpu
    1.22.0 holds compute_90 PTX in each of its 158 fat binaries and runs."""
    major, minor = divmod(split_name(arch)[0], 10)

    def runs(kind: str, name: str) -> bool:
        return loads(kind, *split_name(name), major, minor)

    found = set()
    for lib in wheel.libraries:
        found |= {a for a in lib.sass if runs("sass", a)}
        units = max(lib.sass.values(), default=0)
        found |= {"compute_" + a[3:] for a, n in lib.ptx.items() if n >= units and runs("ptx", a)}
    return sorted(found, key=lambda name: (name.startswith("compute"), split_name(name)))


def listing(wheel: Wheel) -> str:
    """One line a reader can check against cuobjdump: each library's SASS and PTX images."""
    def images(found: dict[str, int]) -> str:
        return " ".join(f"{a} x{n}" for a, n in found.items()) or "none"
    return "; ".join(f"{lib.path}: SASS {images(lib.sass)} | PTX {images(lib.ptx)}" for lib in wheel.libraries) \
        or "no library matches"


def regressed(scan: Scan) -> tuple[list[str], list[str]] | None:
    """(versions with code for the scan's architecture, versions without), in version order, when a
    version without comes after one with (onnxruntime-gpu 1.23.0 after 1.22.0): no single boundary
    then. None when the recorded wheels have one (or none is recorded)."""
    if scan.found is None:
        return None
    ordered = sorted(scan.found.wheels, key=lambda w: version_key(w.version))
    runs = {w.version: bool(code_for(w, scan.arch)) for w in ordered}
    has = [v for v, ok in runs.items() if ok]
    lacks = [v for v, ok in runs.items() if not ok]
    return (has, lacks) if has and lacks and version_key(lacks[-1]) > version_key(has[0]) else None


def boundary(scan: Scan) -> tuple[str | None, str | None]:
    """(last version without code for the scan's architecture below the first with it, first with
    it), from the recorded wheels; None where the scan holds no such version."""
    if scan.found is None:
        return None, None
    ordered = sorted(scan.found.wheels, key=lambda w: version_key(w.version))
    first = next((w.version for w in ordered if code_for(w, scan.arch)), None)
    below = [w.version for w in ordered if not code_for(w, scan.arch)
             and (first is None or version_key(w.version) < version_key(first))]
    return (below[-1] if below else None), first


# --- lint ---------------------------------------------------------------------------------------


def problems(cell, pins: set[tuple[str, str]] | None = None) -> list[Problem]:
    """KB093 and KB094 on one cell's scans."""
    pins = locked() if pins is None else pins
    out: list[Problem] = []

    def report(loc: tuple, message: str, code: str, got) -> None:
        out.append(Problem(cell.path, cell.line_of(loc), dotted(loc), message, code, got))

    entry = cell.entry
    for i, scan in enumerate(entry.scans):
        at = ("scans", i)
        tool = scan.tool
        if tool.package not in SCAN_TOOLS:
            report(at + ("tool", "package"), f"a scan lists images with cuobjdump: the tool is one of "
                   f"{', '.join(SCAN_TOOLS)}", "KB093", tool.package)
        elif (tool.package, tool.version) not in pins:
            report(at + ("tool",), f"{tool.package}=={tool.version} is not pinned in kb/repro/tools.lock: add the "
                   "line to kb/repro/tools.in and run `make lock`", "KB093", f"{tool.package}=={tool.version}")
        if scan.arch not in entry.hardware.architectures:
            report(at + ("arch",), f"the scan's architecture must be one of this entry's hardware.architectures "
                   f"({', '.join(entry.hardware.architectures)})", "KB093", scan.arch)
        if scan.found is None:
            report(at, f"no recorded result: run `kb repro --write {cell.id}` to download the wheels, list their "
                   "images and record them", "KB093", MISSING)
            continue
        recorded = [w.version for w in scan.found.wheels]
        if recorded != scan.versions:
            report(at + ("found", "wheels"), f"the recorded wheels are versions {', '.join(recorded)} but the scan "
                   f"lists {', '.join(scan.versions)}: record it again with `kb repro --write {cell.id}`", "KB093",
                   ", ".join(recorded))
        said = TOOL_VERSION.search(scan.found.tool_version)
        if said is None or said.group(1) != tool.version:
            report(at + ("found", "tool_version"), f"the version line must name the pinned release V{tool.version} "
                   f"(what `cuobjdump --version` prints); record it again with `kb repro --write {cell.id}`",
                   "KB093", scan.found.tool_version)
        _agreement(cell, i, scan, report)
    return out


def _agreement(cell, i: int, scan: Scan, report) -> None:
    """KB094: the scanned component's affected, seen_failing and fixed_in against the wheels."""
    entry = cell.entry
    name = f"scans[{i}] ({scan.package} {scan.library}, {scan.found.date})"
    found = [(j, c) for j, c in enumerate(entry.components) if c.package == scan.package]
    if not found:
        report(("scans", i, "package"), f"{name} lists {scan.package}, which is none of this entry's components: "
               "add the component whose range the scan proves", "KB094", scan.package)
        return
    j, component = found[0]
    at = ("components", j)
    last, first = boundary(scan)
    if component.affected is None and component.seen_failing is None and component.fixed_in is None:
        proposal = f"affected: '<{first}'" if first else "a range"
        report(at, f"{name} proves {scan.package} {last or 'none of the scanned versions'} lacks {scan.arch} code "
               f"and {first or 'no scanned version'} carries it, but components[{j}] gives no range: write "
               f"{proposal} (or seen_failing)", "KB094", MISSING)
        return
    affected = SpecifierSet(component.affected) if component.affected else None
    failing = SpecifierSet(component.seen_failing) if component.seen_failing else None
    fixed = component.fixed_in
    for wheel in scan.found.wheels:
        has = code_for(wheel, scan.arch)
        v = wheel.version
        in_builds = wheel.build is not None and wheel.build in component.builds
        in_range = affected is not None and affected.contains(v, prereleases=True)
        proof = f"{name}: {wheel.file} ({v}{wheel.build or ''}) holds {listing(wheel)}"
        if has:
            if in_range or in_builds:
                where = (f"components[{j}].affected {component.affected!r}" if in_range
                         else f"components[{j}].builds {wheel.build!r}")
                report(at + (("affected",) if in_range else ("builds",)), f"{where} includes {v} but {proof}: "
                       f"code for {', '.join(has)}, which {scan.arch} runs; narrow it", "KB094", v)
            elif failing is not None and failing.contains(v, prereleases=True):
                report(at + ("seen_failing",), f"components[{j}].seen_failing {component.seen_failing!r} includes "
                       f"{v} but {proof}: code for {', '.join(has)}, which {scan.arch} runs", "KB094", v)
            continue
        if affected is not None and not in_range and not in_builds:
            report(at + ("affected",), f"components[{j}].affected {component.affected!r} leaves out {v} but "
                   f"{proof}: no code {scan.arch} runs{_NO_CODE}; widen it", "KB094", v)
        if fixed is not None and not in_builds and version_key(v) >= version_key(fixed):
            report(at + ("fixed_in",), f"components[{j}].fixed_in {fixed!r} but {proof}: no code {scan.arch} "
                   f"runs in {v}{_NO_CODE}; the first scanned version with it is {first or 'none'}", "KB094", fixed)
