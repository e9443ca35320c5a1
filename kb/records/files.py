"""The one rule by which every tool reads a file for a message or writes one: never through a
symbolic link. A pull request can commit a link anywhere in the checkout (`kb/urls.lock ->
~/.bashrc`, `site -> ../www`): a file read for a message could show another file's lines, and a write
would land outside the checkout. `read_regular` and `read_regular_text` read only a regular file
reached without a link inside the checkout; `write_regular` replaces the name through a temporary
file and one rename; `unreadable` and `refusal` give the problem (KB076) that names such a file,
whose target is never read or shown."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from kb.records.load import not_regular
from kb.records.problems import Problem

ROOT = Path(__file__).resolve().parents[2]


class SourceError(OSError):
    """A file the build reads is not a regular file (KB076)."""


def refusal(path: Path, kind: str) -> Problem:
    """KB076 for `path`, which is `kind`; what it points at or holds is never read or shown."""
    return Problem(path, 1, "(file)", f"is {kind}, not a regular file; the build reads this folder and would "
                   "follow it: commit the file itself, not a link (it was not read)", "KB076")


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file at `path`, never through a symbolic link (SourceError)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SourceError(exc.errno, f"{exc.strerror} (a symbolic link is not followed)", str(path)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SourceError(0, "not a regular file", str(path))
        with os.fdopen(fd, "rb", closefd=False) as stream:
            return stream.read()
    finally:
        os.close(fd)


def linked(path: Path, root: Path = ROOT) -> Path | None:
    """The first symbolic link on the way to `path`: `path` itself, or a folder above it inside the
    checkout `root`. A pull request can commit a link anywhere in the checkout (`kb/urls.lock ->
    ~/.bashrc`, `site -> ../www`); the folders above the checkout are the user's own (`/tmp` may be a
    link) and are trusted."""
    path = Path(os.path.abspath(path))
    inside = [p for p in reversed(path.parents) if root in p.parents]
    return next((step for step in inside + [path] if os.path.islink(step)), None)


def read_regular_text(path: Path) -> str:
    """`read_regular` of `path` as UTF-8 (bad bytes replaced), refusing a link on the way to it
    inside the checkout too (SourceError)."""
    link = linked(path)
    if link is not None:
        raise SourceError(0, f"{link} is a symbolic link; it is not followed: commit the file itself", str(path))
    return read_regular(path).decode("utf-8", errors="replace")


def write_regular(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` at `path` through a temporary file beside it and one rename, which replaces the
    name and never writes into what a link points at; a link on the way to `path` inside the checkout,
    or `path` being something other than a regular file, is refused (SourceError) and nothing is written."""
    link = linked(path)
    if link is not None:
        raise SourceError(0, f"{link} is a symbolic link; nothing is written through a link: replace it with "
                          "the file itself (`git checkout` it from the main branch)", str(path))
    with contextlib.suppress(FileNotFoundError):
        kind = not_regular(os.lstat(path).st_mode)
        if kind:
            raise SourceError(0, f"is {kind}, not a regular file; nothing was written", str(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())  # on disk before the rename makes it the file
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def unreadable(path: Path) -> Problem | None:
    """KB076 when the file at `path` is, or lies under, a symbolic link inside the checkout or is not a
    regular file (None when it is one, or is absent): the same problem `problems` gives a file it walks."""
    link = linked(path)
    if link is not None:
        return refusal(link, "a symbolic link")
    try:
        kind = not_regular(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None
    return refusal(path, kind) if kind else None
