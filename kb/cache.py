"""A cache keyed by content hash, under `.cache/kb/` of the checkout (safe to delete, never
committed); an installed kb keeps it in the per-user cache folder instead (`_folder`).

Each stage keeps one file per namespace (`check`, ...): a mapping from the SHA-256 of
everything a result depends on (the input bytes, the code and package versions that produce it,
the day when the result depends on it) to the result. A key never goes stale, so nothing is
invalidated by hand: a changed input or a new version of the code is a new key. A run writes back
only the keys it used, so a file holds one run's worth; each entries folder has its own file
(`for_folders`), and only folders inside this checkout are cached (a temporary folder of a test or
a benchmark would only leave files behind).

The files are pickles, so a file is unpickled only when it proves that this user's kb wrote it:
each file carries an HMAC-SHA256 of its bytes under a key kept outside every checkout
(`$XDG_CONFIG_HOME/kb/cache-key`, default `~/.config/kb/cache-key`, mode 0600, made on first use),
so nothing a pull request, a shared folder or another user can plant is ever loaded. The cache is
also off, and the run says so, when git tracks anything under `.cache/` (a commit that holds a
file, or `.cache` itself as a link, wherever it points), or when a folder on the way to the file is
a symbolic link or belongs to another user. Writes go through a temporary file and one rename.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import pickle
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(__file__).resolve().parent


def _folder() -> Path:
    """Where the cache files live: `.cache/kb/` of the checkout this kb runs from; for an installed
    kb, the per-user cache folder (`$XDG_CACHE_HOME/blackwell-serving-kb/`, default `~/.cache/...`),
    never the code's folder (site-packages, which `pip uninstall` would leave holding them)."""
    from kb import DISTRIBUTION, is_checkout

    if is_checkout(ROOT):
        return ROOT / ".cache" / "kb"
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG rule: a relative value is ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / DISTRIBUTION


FOLDER = _folder()


def fingerprint(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


@functools.cache
def code_fingerprint() -> str:
    """What every cached result depends on besides its input: the source of every module of the
    package (`kb/**/*.py`) and the version of every installed distribution. Computed once per
    process.

    Why the whole package, not a list of the modules each stage reads: hand-kept lists drifted
    (the check's left out kb.records.facets, whose names the schema's choices are built from, so a
    new symptom name still failed from the cache). The import closure is no better: most imports
    here are made inside functions, so the modules loaded when a key is computed depend on the
    command that runs, and a key must not. All of it is about 600 KB, hashed in a few
    milliseconds, and the cost of the wider key is only that editing any module empties every
    cache once. Every distribution's version for the same reason: pydantic_core, markupsafe and
    the like are used without being named."""
    parts: list[str | bytes] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts += [path.relative_to(PACKAGE).as_posix(), path.read_bytes()]
    parts += [f"{name}=={version}" for name, version in sorted(installed_versions().items())]
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


MAGIC = b"kb-cache-1\n"
KEY_BYTES = 32


def key_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "kb" / "cache-key"


def _secret() -> bytes | None:
    """This user's cache key, made on first use; None when it cannot be had safely (then the
    cache is off): the file must be a regular file of this user's, readable by nobody else, not
    reached through a link."""
    path = key_file()
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as stream:
                stream.write(os.urandom(KEY_BYTES))
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as stream:
            info = os.fstat(stream.fileno())
            if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid()
                    or info.st_mode & 0o077 or info.st_size != KEY_BYTES):
                return None
            return stream.read(KEY_BYTES)
    except OSError:
        return None


def unsafe_folder(folder: Path, root: Path = ROOT) -> str | None:
    """Why `folder` must not hold a cache (or a preview kb writes), or None: a component from
    `root` down (or the folder and its parent, outside `root`) that is a symbolic link or another
    user's."""
    folder = Path(os.path.abspath(folder))
    root = Path(os.path.abspath(root))
    if folder.is_relative_to(root):
        parts = folder.relative_to(root).parts
        chain = [root.joinpath(*parts[: n + 1]) for n in range(len(parts))]
    else:
        chain = [folder.parent, folder]
    for path in chain:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            break
        except OSError as error:
            return f"{path} cannot be read ({error.strerror})"
        if stat.S_ISLNK(info.st_mode):
            return f"{path} is a symbolic link"
        if info.st_uid != os.geteuid():
            return f"{path} belongs to another user"
    return None


def _tracked(folder: Path, root: Path) -> bool:
    """True when git tracks a file under `.cache/` (or `.cache` itself, as a link) or cannot say
    whether it does. Asked whatever the folder resolves to: a committed link pointing outside the
    checkout is tracked too."""
    if not (root / ".git").exists() or not Path(os.path.abspath(folder)).is_relative_to(os.path.abspath(root)):
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


def rules_cache(namespace: str, entries: Path) -> "tuple[Cache | None, str | None]":
    """The cache of what is drawn from all the entries of one folder at once (`kb match`'s rules,
    kb.triage.match and kb.triage.evidence), and its key: the code and the entry files' state.
    The key holds no date although a check's answer depends on the day (KB034 refuses a date in
    the future): a caller keeps only what it drew from a clean check, and a clean check stays
    clean as days pass, since a date is refused only until its day comes. (cache, None) when the
    folder's state cannot be read, (None, None) outside this checkout."""
    cache = for_folders(namespace, [entries])
    state = entries_state(entries) if cache is not None else None
    return cache, (fingerprint(namespace, code_fingerprint(), state) if state is not None else None)


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
        self._old: dict[str, object] = {}
        self._new: dict[str, object] = {}
        why = None
        if _tracked(folder, root):
            why = "git tracks files under it (a cache must never come from a commit)"
        else:
            why = unsafe_folder(folder, root)
        self._secret = None if why else _secret()
        if why is None and self._secret is None:
            why = f"no private cache key could be made at {key_file()}"
        self.enabled = why is None
        if not self.enabled:
            print(f"kb: not using {folder}: {why}", file=sys.stderr)
            return
        loaded = self._load()
        self._old = loaded if isinstance(loaded, dict) else {}

    def _seal(self, payload: bytes) -> bytes:
        return MAGIC + hmac.new(self._secret, payload, hashlib.sha256).digest() + payload

    def _load(self):
        """The pickled mapping, only when its HMAC proves this user's kb wrote it; else None (a
        missing, torn or foreign file is a cold cache, never an error, and is never unpickled)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return None
        with os.fdopen(fd, "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                return None
            data = stream.read()
        head = len(MAGIC) + hashlib.sha256().digest_size
        if not data.startswith(MAGIC) or len(data) < head:
            return None
        payload = data[head:]
        if not hmac.compare_digest(data[len(MAGIC):head], hmac.new(self._secret, payload, hashlib.sha256).digest()):
            return None
        try:
            return pickle.loads(payload)
        except Exception:
            return None

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
                stream.write(self._seal(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)))
            os.replace(temporary, self.path)
        except BaseException:
            os.unlink(temporary)
            raise
