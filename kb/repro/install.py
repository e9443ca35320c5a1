"""Install one pinned tool release into the per-user cache, outside any checkout.

Each release gets its own folder, `<cache>/blackwell-serving-kb/repro/<package>-<version>/`
($XDG_CACHE_HOME, else ~/.cache), filled by `pip install --require-hashes --no-deps
--only-binary :all: --target` from that release's lines of kb/repro/tools.lock: only the files
whose sha256 the lock lists, and no package's build code runs. pip fills a folder of its own that
is renamed into place when complete, so an interrupted install leaves nothing a later run uses.

A wheel a reproduction only reads (the released serving engine whose Triton kernel it compiles) is
not installed: `unpacked` downloads that release's wheel with the same hash check (`pip download`)
and keeps its Python files in `<cache>/.../<package>-<version>.src/`, filled and renamed the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from kb.records.reproduction import LOCK, TOOLS

DISTRIBUTION = "blackwell-serving-kb"
# What pip prints when it cannot reach an index (or finds nothing there, as offline with only a cache).
_UNREACHABLE = re.compile(r"NewConnectionError|Failed to establish a new connection|Temporary failure in name "
                          r"resolution|Name or service not known|Network is unreachable|ConnectTimeoutError|"
                          r"Read timed out|No matching distribution found|Could not find a version")


class InstallError(Exception):
    """A release that could not be installed; the message is one line a reader can act on."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / DISTRIBUTION / "repro"


def folder(package: str, version: str) -> Path:
    return cache_root() / f"{package}-{version}"


def lock_lines(package: str, version: str) -> str:
    """The requirement and hash lines of one release in kb/repro/tools.lock."""
    text = LOCK.read_text(encoding="utf-8") if LOCK.is_file() else ""
    found = re.search(rf"^{re.escape(package)}=={re.escape(version)} \\\n(?:    --hash=sha256:[0-9a-f]{{64}}(?: \\)?\n)+",
                      text, re.M | re.I)
    if found is None:
        raise InstallError(f"{package}=={version} is not pinned in {LOCK}: add it to kb/repro/tools.in and run "
                           "`make lock`")
    return found.group(0)


def tool(root: Path, name: str) -> Path | None:
    """The tool's executable in an installed release, or None."""
    found = sorted(p for p in root.glob(TOOLS[name]) if p.is_file() and os.access(p, os.X_OK))
    return found[0] if found else None


def cached(package: str, version: str) -> Path | None:
    """The installed release's folder, when it is in the cache."""
    target = folder(package, version)
    return target if target.is_dir() else None


def install(package: str, version: str, wheelhouse: Path | None = None, timeout: float = 900) -> Path:
    """The release's folder, installed first when the cache does not hold it. pip's download
    progress goes to standard error."""
    return _filled(folder(package, version), package, version, wheelhouse, timeout, _pip_install)


def unpacked(package: str, version: str, wheelhouse: Path | None = None, timeout: float = 900) -> Path:
    """The folder holding the Python files of the release's wheel, downloaded and unpacked first
    when the cache does not hold it (nothing of the package is installed or run)."""
    return _filled(folder(package, version).with_name(f"{package}-{version}.src"), package, version, wheelhouse,
                   timeout, _pip_unpack)


def _pip_install(partial: Path, requirements: str) -> list[str]:
    return ["install", "--no-warn-script-location", "--target", str(partial), "-r", requirements]


def _pip_unpack(partial: Path, requirements: str) -> list[str]:
    return ["download", "--dest", str(partial / ".wheel"), "-r", requirements]


def _filled(target: Path, package: str, version: str, wheelhouse: Path | None, timeout: float, how) -> Path:
    """`target`, filled by pip (`how` gives its command) in a folder of its own renamed into place
    when complete, unless it is there already."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as requirements:
            requirements.write(lock_lines(package, version))
        command = [sys.executable, "-m", "pip", *how(partial, requirements.name), "--require-hashes", "--no-deps",
                   "--only-binary", ":all:", "--disable-pip-version-check", "--no-input"]
        if wheelhouse is not None:
            command += ["--no-index", "--find-links", str(wheelhouse)]
        doing = "installing" if how is _pip_install else "downloading"
        print(f"kb repro: {doing} {package}=={version} into {target}", file=sys.stderr, flush=True)
        try:
            done = run_pip(command, f"{doing} {package}=={version}", timeout)
        finally:
            os.unlink(requirements.name)
        if done.returncode != 0:
            said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
            last = said[-1] if said else f"exit status {done.returncode}"
            if _UNREACHABLE.search(done.stderr):
                where = f"the wheelhouse {wheelhouse}" if wheelhouse else "the package index"
                raise InstallError(f"cannot get {package}=={version} from {where} (pip: {last}); check the network "
                                   "and pip's index settings (`pip config list`), or pass --wheelhouse DIR holding "
                                   "its wheel")
            raise InstallError(f"pip could not install {package}=={version} (pip: {last})")
        if how is _pip_unpack:
            _unpack_python(partial)
        try:
            os.rename(partial, target)
        except OSError:
            if not target.is_dir():  # another run put it in place first: use that one
                raise
        return target
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _unpack_python(partial: Path) -> None:
    """The .py files of the one wheel pip downloaded into `partial/.wheel`, then the wheel deleted
    (a serving engine's wheel is hundreds of MB; its kernel files are what a run reads)."""
    wheels = sorted((partial / ".wheel").glob("*.whl"))
    if len(wheels) != 1:
        raise InstallError(f"pip downloaded {len(wheels)} wheels into {partial}, expected one")
    with zipfile.ZipFile(wheels[0]) as wheel:
        for member in wheel.namelist():
            parts = member.split("/")
            if member.endswith(".py") and ".." not in parts and not member.startswith("/"):
                wheel.extract(member, partial)
    shutil.rmtree(partial / ".wheel")


def run_pip(command: list[str], doing: str, timeout: float) -> subprocess.CompletedProcess:
    """Run pip, its progress shown on standard error and its messages kept (`.stderr`)."""
    try:
        return subprocess.run(command, stdout=sys.stderr.fileno() if _has_fd() else subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise InstallError(f"{doing} took over {timeout:.0f} s; check the network and run it again") from None


def _has_fd() -> bool:
    try:
        sys.stderr.fileno()
        return True
    except (AttributeError, OSError, ValueError):
        return False
