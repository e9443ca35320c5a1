"""A cache keyed by content hash, under `.cache/kb/` (safe to delete, never committed).

Each stage keeps one file per namespace (`check`, ...): a mapping from the SHA-256 of
everything a result depends on (the input bytes, the code and package versions that produce it,
the day when the result depends on it) to the result. A key never goes stale, so nothing is
invalidated by hand: a changed input or a new version of the code is a new key. A run writes back
only the keys it used, so a file holds one run's worth; each entries folder has its own file
(`for_folders`), and only folders inside this checkout are cached (a temporary folder of a test or
a benchmark would only leave files behind).

The files are pickles, so the cache is only as trusted as this checkout's own writes: when any
file under `.cache/` is tracked by git (a pull request that commits one), the cache is not read
or written at all, and the run says so. Writes go through a temporary file and one rename.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / ".cache" / "kb"
# What `kb check`'s answer for one file depends on besides its bytes and the day.
CHECK_MODULES = [
    "kb.records.load", "kb.schema", "kb.records.lint", "kb.records.rules", "kb.records.prose", "kb.records.patterns",
    "kb.records.normalise", "kb.records.problems", "kb.records.visible", "kb.records.slug"
]
CHECK_PACKAGES = ["pydantic", "pydantic_core", "PyYAML", "markdown-it-py", "packaging"]


def fingerprint(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def code_fingerprint(modules: list[str], packages: list[str]) -> str:
    """What a stage's results depend on besides their input: its modules' source and the
    versions of the packages it calls."""
    parts: list[str | bytes] = []
    for name in modules:  # dotted: kb.records.load
        parts += [name, (ROOT / f"{name.replace('.', '/')}.py").read_bytes()]
    versions = installed_versions()
    for package in packages:
        parts += [package, versions.get(_normal(package), "not installed")]
    return fingerprint(*parts)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_versions() -> dict[str, str]:
    """Distribution name (normalised) -> version, from the `*.dist-info` folder names on the
    import path, the first found winning as for imports (what importlib.metadata reads, without
    its 50 ms of imports and scans: `kb match` starts in well under a second)."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info"):
                dist, _, version = name[: -len(".dist-info")].partition("-")
                found.setdefault(_normal(dist), version)
    return found


def _tracked(folder: Path, root: Path) -> bool:
    """True when git tracks a file under `.cache/` (or cannot say whether it does)."""
    if not (root / ".git").exists() or not folder.resolve().is_relative_to(root.resolve()):
        return False  # not in a git checkout: no commit can have written it
    try:
        done = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", str(folder.parent)],
                              capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return True
    return done.returncode != 0 or bool(done.stdout)


def entries_state(entries: Path) -> str | None:
    """A fingerprint of the entry files in `entries` as the file system describes them (name,
    size, modification and change times, inode), which keys the caches of what is drawn from all
    the entries at once (`kb match`'s rules): a warm start then reads no entry file. Every write
    to a file sets its change time, which no program can set back, so a changed file is a new key
    even when its size and modification time are put back. None when the folder cannot be listed
    or holds anything but regular `*.yaml` files (and dot files): the caller checks the entries,
    which says what is wrong."""
    try:
        found = sorted(os.scandir(entries), key=lambda item: item.name)
    except OSError:
        return None
    parts: list[str] = []
    for item in found:
        if item.name.startswith("."):
            continue
        if not item.name.endswith(".yaml") or not item.is_file(follow_symlinks=False):
            return None
        st = item.stat(follow_symlinks=False)
        parts.append(f"{item.name}/{st.st_size}/{st.st_mtime_ns}/{st.st_ctime_ns}/{st.st_ino}/{st.st_dev}")
    return fingerprint(*parts)


def for_folders(namespace: str, paths: list[Path]) -> "Cache | None":
    """The cache of `namespace` for these entries paths, or None when one lies outside ROOT."""
    resolved = sorted(os.path.abspath(p) for p in paths)  # not resolve(): a path may be a link loop
    if not resolved or not all(Path(p).is_relative_to(ROOT) for p in resolved):
        return None
    return Cache(f"{namespace}-{fingerprint(*resolved)[:16]}")


class Cache:
    """One namespace: `get(key)` and `put(key, value)` during a run, `save()` at its end."""

    def __init__(self, namespace: str, folder: Path | None = None, root: Path = ROOT):
        folder = folder if folder is not None else FOLDER
        self.path = folder / f"{namespace}.pickle"
        self.enabled = not _tracked(folder, root)
        if not self.enabled:
            print(f"kb: not using {folder}: git tracks files under it (a cache must never come from a commit)",
                  file=sys.stderr)
        self._old: dict[str, object] = {}
        self._new: dict[str, object] = {}
        if self.enabled and self.path.is_file():
            try:
                with open(self.path, "rb") as stream:
                    loaded = pickle.load(stream)
                self._old = loaded if isinstance(loaded, dict) else {}
            except Exception:  # a torn or foreign file is a cold cache, never an error
                self._old = {}

    def get(self, key: str):
        if key in self._new:
            return self._new[key]
        if key in self._old:
            self._new[key] = self._old[key]
            return self._new[key]
        return None

    def put(self, key: str, value) -> None:
        self._new[key] = value

    def fetch(self, key: str, make):
        """The value kept under `key`, or `make()`, kept under it."""
        found = self.get(key)
        if found is None:
            found = make()
            self.put(key, found)
        return found

    def save(self, changed: bool = False) -> None:
        """Write back the entries this run used, when they differ from what is on disk (keys
        are content hashes, so the same keys hold the same values; `changed`: a key's value
        was replaced, write anyway)."""
        if not self.enabled or (not changed and self._new.keys() == self._old.keys()):
            return
        kept = self._new
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as stream:
                pickle.dump(kept, stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.path)
        except BaseException:
            os.unlink(temporary)
            raise
