"""What the build reads besides the entries, refused when it is not a regular file (KB076, the
rule of kb.records.files by which every tool reads a file for a message or writes one).

The engine copies every file of the hand-written pages' folder (`site_src/`) into the site and
reads the templates; the in-place rebuild's fingerprint (`kb.site.incremental.inputs`) reads the
code, the hooks, the templates and the pages. All of it comes from commits, and a pull request can
commit a symbolic link (`site_src/assets/x.txt -> ~/.ssh/id_ed25519`) that the engine would
follow, copying the target's bytes into a site that `kb serve` serves and Pages publishes. So
before the engine runs, each of these folders is walked without following links and any symbolic
link, named pipe, device or socket in it is refused (KB076), unread; so is the engine's config.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kb.records.files import (SourceError, linked, read_regular, read_regular_text, refusal,  # noqa: F401
                              unreadable, write_regular)
from kb.records.load import not_regular
from kb.records.problems import Problem

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {"__pycache__"}  # Python writes these itself


def folders(docs_dir: Path | None = None) -> list[Path]:
    """The folders the build and its fingerprint read: the code, the hooks, the templates, the pages."""
    return [ROOT / "kb", ROOT / "hooks", ROOT / "templates", docs_dir if docs_dir is not None else ROOT / "site_src"]


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
