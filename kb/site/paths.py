"""Where the build may write: one function, `inside`, that every writer of a site goes through.

A site path comes from records and from files contributors edit (a redirect's old URL, a facet
key, a cell id), so it is checked where it becomes a file name, whatever checked it before: it
must be relative, hold no empty, '.' or '..' segment, no backslash or NUL, and the file it names,
resolved through any link on the way, must lie inside the folder being written. The hook's
generated files, the in-place rebuild (its writes and its deletions), the swap of a staged site,
the search index's farm and shards all ask it.
"""

from __future__ import annotations

import errno
import os
import shutil
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


# The one folder beside a site where kb builds keep their staging folders (the next site, the
# next search index, the index's farm of links): `.<name>.kb-work/`, made with a marker file.
# A build removes what killed builds left in it, and never anything else beside the site.
WORK_MARKER = ".kb-work"
WORK_TEXT = "Made by kb build for its staging folders; kb removes what is left in it. Keep nothing here.\n"


def work_folder(site_dir: Path) -> Path:
    """`.<name>.kb-work/` beside `site_dir`, made (with its marker) when missing. OSError when
    something of that name exists that kb did not make (no marker, or a link): it is left alone."""
    folder = site_dir.with_name(f".{site_dir.name}.kb-work")
    try:
        folder.mkdir(mode=0o755)
    except FileExistsError:
        if not _ours(folder):
            raise OSError(errno.EEXIST, f"it exists and kb build did not make it (no {WORK_MARKER} marker); "
                          "move it away, kb keeps its staging folders there", str(folder)) from None
        return folder
    (folder / WORK_MARKER).write_text(WORK_TEXT, encoding="utf-8")
    return folder


def clear_work(site_dir: Path) -> None:
    """Deletes what killed builds of `site_dir` left in its work folder (only a folder kb made)."""
    folder = site_dir.with_name(f".{site_dir.name}.kb-work")
    if not _ours(folder):
        return
    for path in folder.iterdir():
        if path.name == WORK_MARKER:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _ours(folder: Path) -> bool:
    marker = folder / WORK_MARKER
    return (folder.is_dir() and not folder.is_symlink() and marker.is_file() and not marker.is_symlink())
