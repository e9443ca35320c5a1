"""Install one pinned tool release into the per-user cache, outside any checkout.

Each release gets its own folder, `<cache>/blackwell-serving-kb/repro/<package>-<version>/`
($XDG_CACHE_HOME, else ~/.cache), filled by `pip install --require-hashes --no-deps
--only-binary :all: --target` from that release's lines of kb/repro/tools.lock: only the files
whose sha256 the lock lists, and no package's build code runs. pip fills a folder of its own that
is renamed into place when complete, so an interrupted install leaves nothing a later run uses,
and the next run removes what a killed one left.

A wheel a reproduction only reads (the released serving engine whose Triton kernel it compiles, the
torch wheel whose CMake module a cmake script includes) is not installed: `unpacked` downloads that
release's wheel with the same hash check (`pip download`) and keeps the files of the one kind the run
reads, its Python files in `<cache>/.../<package>-<version>.src/` (its .cmake files in `...src.cmake/`),
filled and renamed the same way.
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
# Why a connection failed, as pip's retry warnings say it (with pip's retries at 0 it says nothing).
_CONNECTION = [re.compile(p) for p in (r"Failed to establish a new connection: ([^'\")]+)", r"(Read timed out)",
                                       r"(ConnectTimeoutError)", r"(ProxyError)", r"(CERTIFICATE_VERIFY_FAILED)")]
# A partial folder: .<release>.<pid>.<random>.partial (partial_folder).
_PARTIAL = re.compile(r"\..+\.([0-9]+)\.[a-z0-9_]+\.partial")


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
    progress goes to standard error. With a wheelhouse, pip reads that folder alone: no index, and
    none of the user's pip settings (an extra index, find-links or constraints there would be other
    sources); the hashes are checked all the same."""
    return _filled(folder(package, version), package, version, wheelhouse, timeout, _pip_install)


def unpacked(package: str, version: str, wheelhouse: Path | None = None, timeout: float = 900,
             suffix: str = ".py") -> Path:
    """The folder holding the files of the release's wheel whose names end in `suffix` (.py, .cmake),
    downloaded and unpacked first when the cache does not hold it (nothing of the package is
    installed or run). Each kind has a folder of its own: one filled for a kind never lacks its files."""
    name = f"{package}-{version}.src" + ("" if suffix == ".py" else suffix)
    return _filled(folder(package, version).with_name(name), package, version, wheelhouse, timeout, _pip_unpack,
                   suffix)


def _pip_install(release: Path, requirements: Path) -> list[str]:
    return ["install", "--no-warn-script-location", "--target", str(release), "-r", str(requirements)]


def _pip_unpack(release: Path, requirements: Path) -> list[str]:
    return ["download", "--dest", str(release / ".wheel"), "-r", str(requirements)]


def _filled(target: Path, package: str, version: str, wheelhouse: Path | None, timeout: float, how,
            suffix: str = ".py") -> Path:
    """`target`, filled by pip (`how` gives its command) in a partial folder of its own whose
    `release` is renamed into place when complete, unless it is there already."""
    if target.is_dir():
        return target
    if wheelhouse is not None and not wheelhouse.is_dir():
        raise InstallError(f"--wheelhouse {wheelhouse}: no such folder; name the folder that holds the "
                           f"{package}=={version} wheel, or leave the option out to download it")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_folder(target)
    try:
        requirements = partial / "requirements.txt"
        requirements.write_text(lock_lines(package, version), encoding="utf-8")
        release = partial / "release"
        command = [sys.executable, "-m", "pip", *how(release, requirements), "--require-hashes", "--no-deps",
                   "--only-binary", ":all:", "--disable-pip-version-check", "--no-input"]
        # A constraints file in the user's pip settings is for their environments: against a release
        # the lock pins exactly, alone in a folder of its own, it can only refuse the pin (a machine
        # capping torch<=2.14.1 refuses torch==2.15.0). The index, proxy and certificate settings stay.
        env = os.environ | {"PIP_CONSTRAINT": os.devnull}
        if wheelhouse is not None:
            command += ["--no-index", "--find-links", str(wheelhouse)]
            env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
            env["PIP_CONFIG_FILE"] = os.devnull
        doing = "installing" if how is _pip_install else "downloading"
        print(f"kb repro: {doing} {package}=={version} into {target}", file=sys.stderr, flush=True)
        done = run_pip(command, f"{doing} {package}=={version}", timeout, env)
        if done.returncode != 0:
            raise InstallError(failure(f"{package}=={version}", wheelhouse, done))
        if how is _pip_unpack:
            _unpack(release, suffix)
        return placed(release, target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def placed(release: Path, target: Path) -> Path:
    """`target`, once the complete `release` folder is renamed to it (one rename: a reader sees all
    or nothing); when another run put one there first, that one."""
    try:
        os.rename(release, target)
    except OSError:
        if not target.is_dir():
            raise
    return target


def _unpack(release: Path, suffix: str) -> None:
    """The files ending in `suffix` of the one wheel pip downloaded into `release/.wheel`, then the
    wheel deleted (a serving engine's or torch's wheel is hundreds of MB; a run reads one file)."""
    wheels = sorted((release / ".wheel").glob("*.whl"))
    if len(wheels) != 1:
        raise InstallError(f"pip downloaded {len(wheels)} wheels into {release}, expected one")
    with zipfile.ZipFile(wheels[0]) as wheel:
        for member in wheel.namelist():
            parts = member.split("/")
            if member.endswith(suffix) and ".." not in parts and not member.startswith("/"):
                wheel.extract(member, release)
    shutil.rmtree(release / ".wheel")


def failure(release: str, wheelhouse: Path | None, done: subprocess.CompletedProcess) -> str:
    """One line that says why pip could not install or download a release, and what to do."""
    said = [line.strip() for line in done.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
    last = said[-1] if said else f"exit status {done.returncode}"
    if wheelhouse is not None and _UNREACHABLE.search(done.stderr):
        return (f"no wheel of {release} for this system in the wheelhouse {wheelhouse} (pip: {last}); download "
                "it there with `pip download --no-deps --only-binary :all: -d DIR` and the release's lines of "
                "kb/repro/tools.lock, or leave --wheelhouse out")
    reason = next((found.group(1) for found in (r.search(done.stderr) for r in _CONNECTION) if found), None)
    if reason is not None:
        return (f"cannot reach the package index to get {release} ({reason}); check the network and pip's index "
                "settings (`pip config list`), or pass --wheelhouse DIR holding its wheel")
    if _UNREACHABLE.search(done.stderr):
        return (f"the package index has no {release} for this system, or could not be reached (pip: {last}); "
                "check the network and pip's index settings (`pip config list`), or pass --wheelhouse DIR "
                "holding its wheel")
    return f"pip could not install {release} (pip: {last})"


def partial_folder(target: Path) -> Path:
    """An empty folder beside `target`, filled and then renamed into place. Its name carries this
    process's id, so that the next run removes what a killed run left (sweep) and never a folder
    another run is still filling; an interrupted run removes its own (the callers' `finally`)."""
    sweep(target.parent)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".partial", dir=target.parent))


def sweep(parent: Path) -> list[Path]:
    """Remove the partial folders in `parent` whose process is gone; returns them."""
    gone = []
    for path in sorted(parent.glob(".*.partial")):
        named = _PARTIAL.fullmatch(path.name)
        if named and not _alive(int(named.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            gone.append(path)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def run_pip(command: list[str], doing: str, timeout: float,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run pip, its progress shown on standard error and its messages kept (`.stderr`)."""
    try:
        return subprocess.run(command, stdout=sys.stderr.fileno() if _has_fd() else subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise InstallError(f"{doing} took over {timeout:.0f} s; check the network and run it again") from None


def _has_fd() -> bool:
    try:
        sys.stderr.fileno()
        return True
    except (AttributeError, OSError, ValueError):
        return False
