"""Scans, re-run: download each released wheel a scan names and list the CUDA images of its libraries.

For each version: `pip download --no-deps --only-binary :all:` of the one wheel pip picks for the
scan's Python and platform, into the per-user cache (`<cache>/blackwell-serving-kb/repro/wheels/`,
a folder per release, filled beside and renamed into place like kb.repro.install's); with
`--require-hashes` once the scan has recorded the wheel's sha256, so a replaced file is refused.
Then each library matching the scan's glob is read out of the wheel into a temporary folder and
listed with the pinned `cuobjdump --list-elf` and `--list-ptx` (a Windows DLL through its fat
binaries, kb.repro.fatbin, since cuobjdump on Linux reads ELF files only); the images are counted per
architecture (`images`). A scan with `reader: fatbin-headers` counts them from the fat binaries' entry
headers instead (`header_images`), cuobjdump's partial listing checked against them (`cross_check`). The result (kb.records.scan.Found) is compared with the recorded one.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from kb.records.reproduction import TOOL_VERSION
from kb.records.scan import SCAN_TOOLS, Found, Library, Scan, Wheel, boundary, listing, regressed
from kb.records import fatbin as fatbin_headers
from kb.repro import fatbin, install

TIMEOUT_S = 600.0
# Bytes of headers (and PTX heads) a `fatbin-headers` scan reads per library at most: onnxruntime-gpu's
# CUDA provider (184 fat binaries of 7 entries) needs well under 1 MB; the cap only stops a runaway file.
HEADER_READ_LIMIT = 256 * 2**20
# One line of `cuobjdump --list-elf` / `--list-ptx`: "ELF file    8: libbitsandbytes_cuda128.8.sm_120.cubin".
_IMAGE = re.compile(r"(ELF|PTX) file +[0-9]+: \S*?\.(sm_[0-9]+[a-z]?)\.(cubin|ptx)")
# What cuobjdump says, on standard error, for a library with no images of the kind asked for.
_NONE = re.compile(r"^cuobjdump info +: (File '.*' does not contain device code|No (PTX|ELF) file found to "
                   r"extract from '.*'\..*)$")


class ScanError(Exception):
    """A scan that could not be run; the message is one line a reader can act on."""


def images(kind: str, stdout: str, stderr: str, status: int) -> dict[str, int]:
    """Images per architecture in one cuobjdump listing (`kind` 'ELF' or 'PTX'), in the order of
    their numbers (sm_50 before sm_100). A library without images is an empty listing; any line
    not understood is an error, so that a changed output format is never read as 'no images'."""
    counts = _listed(kind, stdout)
    said = [line.strip() for line in stderr.splitlines() if line.strip()]
    if status != 0 or said:
        if counts or not said or not all(_NONE.match(line) for line in said):
            raise ScanError(f"cuobjdump exit status {status}: {said[-1] if said else 'no message'}")
    return dict(sorted(counts.items(), key=lambda item: _arch_key(item[0])))


def _listed(kind: str, stdout: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        found = _IMAGE.fullmatch(line.strip())
        if found is None or found.group(1) != kind:
            raise ScanError(f"cuobjdump printed a line that is not a {kind} image: {line.strip()!r}")
        counts[found.group(2)] = counts.get(found.group(2), 0) + 1
    return counts


def header_images(path: Path, bare: bool) -> dict[str, dict[str, int]]:
    """The SASS ("ELF") and PTX images per architecture of the library at `path`, read from its fat
    binaries' entry headers (kb.records.fatbin), named as cuobjdump names them ('sm_90a' for
    arch-specific compute_90a PTX too). `bare`: the file holds fat binaries alone (a DLL's)."""
    library = fatbin_headers.read(str(path), limit=HEADER_READ_LIMIT, bare=bare)
    if library.problem:
        raise ScanError(f"the fat binary headers cannot be read: {library.problem}")
    found: dict[str, dict[str, int]] = {"ELF": {}, "PTX": {}}
    for image in library.images:
        counts = found["ELF" if image.kind == "sass" else "PTX"]
        name = f"sm_{image.arch}{image.variant}"
        counts[name] = counts.get(name, 0) + 1
    return {kind: dict(sorted(c.items(), key=lambda item: _arch_key(item[0]))) for kind, c in found.items()}


def cross_check(kind: str, stdout: str, found: dict[str, int]) -> None:
    """A `fatbin-headers` scan's check on kb's reader: each image cuobjdump listed before it stopped
    (its listing is in file order, so a prefix of the library's images) must be among those the
    headers gave."""
    listed = _listed(kind, stdout)
    wrong = [f"{arch} x{n}" for arch, n in listed.items() if found.get(arch, 0) < n]
    if wrong:
        raise ScanError(f"cuobjdump listed {kind} images the fat binary headers do not hold ({', '.join(wrong)}): "
                        "kb.records.fatbin misreads this library")


def _arch_key(arch: str) -> tuple[int, str]:
    digits = re.match(r"sm_([0-9]+)(.*)", arch)
    return (int(digits.group(1)), digits.group(2)) if digits else (0, arch)


def platforms(platform: str) -> list[str]:
    """The platform tags a system accepts, newest first, as pip's own matching on it would
    (`--platform` takes each tag literally): for Linux, every manylinux tag of that glibc and older
    (aarch64 has no manylinux1 or manylinux2010); for Windows, `win_amd64` alone."""
    if platform == "win_amd64":
        return [platform]
    glibc, machine = re.fullmatch(r"manylinux_2_([0-9]+)_(x86_64|aarch64)", platform).groups()
    # aarch64 wheels start at glibc 2.17 (manylinux2014 is the first legacy tag that names the machine).
    oldest = 4 if machine == "x86_64" else 16
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(int(glibc), oldest, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    return tags + [f"{tag}_{machine}" for minor, tag in legacy.items() if minor <= int(glibc)
                   and (machine == "x86_64" or minor == 17)]


def _wheel_folder(scan: Scan, version: str) -> Path:
    return install.cache_root() / "wheels" / f"{scan.package}-{version}-cp{scan.python.replace('.', '')}-{scan.platform}"


def download(scan: Scan, version: str, sha256: str | None, timeout: float = 1800) -> Path:
    """The wheel file of one release, downloaded into the cache first when it is not there."""
    target = _wheel_folder(scan, version)
    held = sorted(target.glob("*.whl")) if target.is_dir() else []
    if held and (sha256 is None or _sha256(held[0]) == sha256):
        return held[0]
    if held:
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = install.partial_folder(target)
    try:
        requirement = f"{scan.package}=={version}" + (f" --hash=sha256:{sha256}" if sha256 else "")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as file:
            file.write(requirement + "\n")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                   "--disable-pip-version-check", "--no-input", "--python-version", scan.python,
                   "--implementation", "cp", "--dest", str(partial), "-r", file.name]
        for tag in platforms(scan.platform):
            command += ["--platform", tag]
        # The ABIs that CPython accepts (pip would otherwise take the running interpreter's).
        for abi in (f"cp{scan.python.replace('.', '')}", "abi3", "none"):
            command += ["--abi", abi]
        if sha256:
            command.append("--require-hashes")
        print(f"kb repro: downloading {scan.package}=={version} into {target}", file=sys.stderr, flush=True)
        try:
            done = install.run_pip(command, f"downloading {scan.package}=={version}", timeout)
        finally:
            os.unlink(file.name)
        if done.returncode != 0:
            said = [line.strip() for line in done.stderr.splitlines() if line.strip() and "WARNING" not in line]
            last = said[-1] if said else f"exit status {done.returncode}"
            if "THESE PACKAGES DO NOT MATCH THE HASHES" in done.stderr:
                raise ScanError(f"the {scan.package}=={version} wheel on the index is not the recorded one (sha256 "
                                f"{sha256}): the file was replaced; look at it before recording again")
            if install._UNREACHABLE.search(done.stderr):
                raise ScanError(f"cannot get {scan.package}=={version} for CPython {scan.python} on {scan.platform} "
                                f"from the package index (pip: {last}); check the network and pip's index settings")
            raise ScanError(f"pip could not download {scan.package}=={version} (pip: {last})")
        try:
            os.rename(partial, target)
        except OSError:
            if not target.is_dir():
                raise
        return sorted(target.glob("*.whl"))[0]
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _build(archive: zipfile.ZipFile) -> str | None:
    """The local label of the wheel's own `<package>/version.py` (torch's '2.7.0+cu126'), if any."""
    for name in sorted(archive.namelist()):
        if name.count("/") == 1 and name.endswith("/version.py"):
            text = archive.read(name).decode("utf-8", "replace")
            found = re.search(r"^__version__\s*=\s*['\"][^'\"+]+(\+[a-z0-9.]+)['\"]", text, re.M)
            if found:
                return found.group(1)
    return None


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    return subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", timeout=timeout)


def list_wheel(cuobjdump: Path, scan: Scan, version: str, path: Path, timeout: float) -> Wheel:
    """The wheel's record: its file, sha256, build label and each matching library's images."""
    libraries = []
    with zipfile.ZipFile(path) as archive, tempfile.TemporaryDirectory(prefix="kb-scan-") as folder:
        build = _build(archive)
        for name in sorted(n for n in archive.namelist() if fnmatch.fnmatchcase(n, scan.library)):
            # Extracted under a fixed name: the member's own path never decides where a file is written.
            library = Path(folder) / "library.so"
            with archive.open(name) as source, library.open("wb") as out:
                shutil.copyfileobj(source, out)
            with library.open("rb") as file:
                pe = fatbin.is_pe(file.read(2))
            if pe:
                # cuobjdump takes a Windows DLL for one without device code: list its fat binaries instead.
                try:
                    code = fatbin.containers(library.read_bytes())
                except fatbin.FatbinError as exc:
                    raise ScanError(f"{path.name}: {name}: {exc}") from None
                library.write_bytes(code)
            found = {"ELF": {}, "PTX": {}}
            if scan.reader == "fatbin-headers" and library.stat().st_size:
                try:
                    found = header_images(library, bare=pe)
                except ScanError as exc:
                    raise ScanError(f"{path.name}: {name}: {exc}") from None
            for kind, option in (("ELF", "--list-elf"), ("PTX", "--list-ptx")):
                if pe and not library.stat().st_size:
                    continue  # a DLL with neither .nv_fatb nor __nv_rel holds no CUDA code
                done = _run([str(cuobjdump), option, str(library)], timeout)
                if scan.reader == "fatbin-headers":
                    try:
                        cross_check(kind, done.stdout, found[kind])
                    except ScanError as exc:
                        raise ScanError(f"{path.name}: {name}: {exc}") from None
                else:
                    found[kind] = images(kind, done.stdout, done.stderr, done.returncode)
            libraries.append(Library(path=name, sass=found["ELF"], ptx=found["PTX"]))
            library.unlink()
    return Wheel(version=version, file=path.name, sha256=_sha256(path), build=build, libraries=libraries)


def run_scan(scan: Scan, wheelhouse: Path | None, today: str, machine: str, timeout: float = TIMEOUT_S) -> Found:
    root = install.install(scan.tool.package, scan.tool.version, wheelhouse)
    found = sorted(p for p in root.glob(SCAN_TOOLS[scan.tool.package]) if p.is_file() and os.access(p, os.X_OK))
    if not found:
        raise ScanError(f"{scan.tool.package}=={scan.tool.version} holds no cuobjdump")
    version_text = _run([str(found[0]), "--version"], timeout).stdout
    version_line = next((line.strip() for line in version_text.splitlines() if TOOL_VERSION.search(line)),
                        "(no version printed)")
    recorded = {w.version: w.sha256 for w in scan.found.wheels} if scan.found else {}
    wheels = []
    for version in scan.versions:
        path = download(scan, version, recorded.get(version))
        wheels.append(list_wheel(found[0], scan, version, path, timeout))
    return Found(tool_version=version_line, date=today, machine=machine, wheels=wheels)


def differences(scan: Scan, new: Found) -> list[str]:
    """What a new scan changes against the record (the date and machine aside), one line each."""
    old = scan.found
    if old is None:
        return ["no result recorded yet (kb repro --write records it)"]
    out = []
    if new.tool_version != old.tool_version:
        out.append(f"tool version {new.tool_version!r}, recorded {old.tool_version!r}")
    before = {w.version: w for w in old.wheels}
    for wheel in new.wheels:
        was = before.get(wheel.version)
        if was is None:
            out.append(f"{wheel.version}: not recorded yet: {listing(wheel)}")
        elif was != wheel:
            out.append(f"{wheel.version}: recorded {was.file} {listing(was)}")
            out.append(f"{wheel.version}: found now {wheel.file} {listing(wheel)}")
    return out


def summary(scan: Scan, found: Found) -> str:
    scan = scan.model_copy(update={"found": found})
    split = regressed(scan)
    if split:
        return f"{scan.arch} runs code of {', '.join(split[0])}, none of {', '.join(split[1])}"
    last, first = boundary(scan)
    return f"last without {scan.arch} code {last or '(none scanned)'}, first with it {first or '(none scanned)'}"
