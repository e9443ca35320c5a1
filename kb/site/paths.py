"""Where the build may write: one function, `inside`, that every writer of a site goes through.

A site path comes from records and from files contributors edit (a redirect's old URL, a facet
key, a cell id), so it is checked where it becomes a file name, whatever checked it before: it
must be relative, hold no empty, '.' or '..' segment, no backslash or NUL, and the file it names,
resolved through any link on the way, must lie inside the folder being written. The hook's
generated files, the in-place rebuild (its writes and its deletions), the swap of a staged site,
the search index's farm and shards all ask it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class OutsideSite(ValueError):
    """A site path that would reach outside the folder it is written in."""


def inside(root: Path, path: str) -> Path:
    """`root / path`, or OutsideSite when `path` is not a plain relative path or when the file it
    names (resolved, links followed) is not inside `root` (resolved). `root` itself is never a
    target: a path names a file or a folder below it."""
    if not isinstance(path, str) or not path:
        raise OutsideSite(f"site path {path!r} is empty or not a string")
    if "\\" in path or "\0" in path or os.path.isabs(path) or path.startswith("/"):
        raise OutsideSite(f"site path {path!r} is not a plain relative path")
    parts = path.removesuffix("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise OutsideSite(f"site path {path!r} holds an empty, '.' or '..' segment")
    base = _resolved(root)
    here = base
    for part in parts:  # lstat below the root only: most components are plain folders
        here = os.path.join(here, part)
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            break  # nothing below a missing folder exists, so no link either
        # Any other OSError (a name too long, a file where a folder should be) is the writer's to
        # report, naming the file, as it would be for the write itself.
        if stat.S_ISLNK(mode):
            target = os.path.realpath(os.path.join(base, *parts))
            if not Path(target).is_relative_to(base) or target == base:
                raise OutsideSite(f"site path {path!r} resolves to {target!r}, outside {base!r}")
            break
    return Path(root) / Path(*parts)


_ROOTS: dict[str, tuple[int, int, str]] = {}


def _resolved(root: Path) -> str:
    """The real path of `root`, kept while `root` is the same folder (a build asks it for every
    file it writes)."""
    key = os.path.abspath(root)
    try:
        info = os.stat(key)
    except FileNotFoundError:
        return os.path.realpath(key)  # made by the first write into it
    known = _ROOTS.get(key)
    if known is None or known[:2] != (info.st_dev, info.st_ino):
        known = _ROOTS[key] = (info.st_dev, info.st_ino, os.path.realpath(key))
    return known[2]
