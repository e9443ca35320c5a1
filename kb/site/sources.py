"""What the build reads besides the entries, refused when it is not a regular file; and the one
rule by which every tool reads a file for a message or writes one (`read_regular`, `write_regular`,
`linked`): never through a symbolic link.

The engine copies every file of the hand-written pages' folder (`site_src/`) into the site and
reads the templates; the in-place rebuild's fingerprint (`kb.site.incremental.inputs`) reads the
code, the hooks, the templates and the pages. All of it comes from commits, and a pull request can
commit a symbolic link (`site_src/assets/x.txt -> ~/.ssh/id_ed25519`) that the engine would
follow, copying the target's bytes into a site that `kb serve` serves and Pages publishes. So
before the engine runs, each of these folders is walked without following links and any symbolic
link, named pipe, device or socket in it is refused (KB076), unread; so is the engine's config.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from kb.records.load import not_regular
from kb.records.problems import Problem

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {"__pycache__"}  # Python writes these itself


class SourceError(OSError):
    """A file the build reads is not a regular file (KB076)."""


def folders(docs_dir: Path | None = None) -> list[Path]:
    """The folders the build and its fingerprint read: the code, the hooks, the templates, the pages."""
    return [ROOT / "kb", ROOT / "hooks", ROOT / "templates", docs_dir if docs_dir is not None else ROOT / "site_src"]


def refusal(path: Path, kind: str) -> Problem:
    """KB076 for `path`, which is `kind`; what it points at or holds is never read or shown."""
    return Problem(path, 1, "(file)", f"is {kind}, not a regular file; the build reads this folder and would "
                   "follow it: commit the file itself, not a link (it was not read)", "KB076")


def problems(docs_dir: Path | None = None, config_file: Path | None = None,
             skip: Path | None = ROOT / "kb" / "entries") -> list[Problem]:
    """KB076 for every path under `folders(docs_dir)` (and `config_file`) that is a symbolic link
    or not a regular file or folder; `skip`: a folder checked on its own (the entries: KB050)."""
    found: list[Problem] = []
    tops = [(top, True) for top in folders(docs_dir)] + ([(config_file, False)] if config_file is not None else [])
    for top, is_folder in tops:
        try:
            mode = os.lstat(top).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode) or (not stat.S_ISDIR(mode) if is_folder else not stat.S_ISREG(mode)):
            found.append(refusal(top, not_regular(mode) or "not a folder"))
            continue
        if not is_folder:
            continue
        for folder, dirs, files in os.walk(top):  # never descends into a linked folder
            here = Path(folder)
            for name in sorted(dirs):
                path = here / name
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode):
                    found.append(refusal(path, "a symbolic link"))
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not os.path.islink(here / d)
                             and (skip is None or (here / d).resolve() != skip.resolve()))
            for name in sorted(files):
                path = here / name
                kind = not_regular(os.lstat(path).st_mode)
                if kind:
                    found.append(refusal(path, kind))
    return sorted(found, key=Problem.sort_key)


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
