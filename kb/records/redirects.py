"""Stage 3, lint (beside the entries): the redirects file, `kb/redirects.yaml`, read and checked.

Each `old: new` line sends readers of a URL the site no longer publishes to one it does; the build
writes a page (or, for a `.json` export, a small JSON file) at `old`. Contributors edit this file
whenever a literal changes, so its keys are stranger-written paths: it is read as an entry is (no
link followed, plain YAML only, size-limited), and every key and value must be a site URL in the
one form the site's own URLs take (`url_problem`) before anything looks at the lock or the site.
The rules that need the whole site (the target is published, the old URL is not, no key names a
file the build writes itself) are in `kb.site.urls.redirect_problems`.

Nothing here writes a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kb.records.load import parse, read
from kb.records.problems import Problem

MAX_SEGMENT_BYTES = 100  # one URL segment (a folder or file name of the built site), at most
MAX_URL_CHARS = 300
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")


def url_problem(url: object) -> str | None:
    """Why `url` is not a site URL in normal form, or None: relative to the site root (no leading
    '/', no scheme), segments of the letters, digits and `-._~` only (no '%', '\\', space, control
    or invisible character), no empty, '.' or '..' segment, each segment at most
    MAX_SEGMENT_BYTES, and in directory form `x/` or a `.json` export. The home page, '', is
    not one: it never moves."""
    if not isinstance(url, str):
        return f"must be a site URL written as a string (got a {type(url).__name__})"
    if not url:
        return "must not be empty (the home page never moves)"
    if len(url) > MAX_URL_CHARS:
        return f"must be at most {MAX_URL_CHARS} characters"
    if url.startswith("/"):
        return "must be relative to the site root, without a leading '/' (e/x/, not /e/x/)"
    segments = url.split("/")
    last = segments.pop()
    if last and not last.endswith(".json"):
        return "must be a page in directory form ending in '/' (e/x/) or a .json export (api/v1/cells/x.json)"
    if last:
        segments.append(last)
    for segment in segments:
        if segment == "":
            return "must not hold an empty segment ('//')"
        if segment in (".", ".."):
            return f"must not hold a {segment!r} segment; write the URL as the site publishes it"
        if not _SEGMENT.fullmatch(segment):
            return ("may hold only the letters A-Z a-z, digits and - . _ ~ between slashes (no '\\', '%', space, "
                    "control or invisible character), as the site's own URLs do")
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            return f"has a segment over {MAX_SEGMENT_BYTES} bytes"
    return None


@dataclass(frozen=True)
class Redirect:
    old: str
    new: str
    line: int  # of the key


def written_path(old: str) -> str:
    """The site path the build writes for a redirect from `old`: its page, or the .json itself."""
    return old if old.endswith(".json") else old + "index.html"


def read_file(path: Path, locked: list[str] | None = None) -> tuple[list[Redirect], list[Problem]]:
    """The redirects of the file at `path` (none when it is absent) that are well-formed, and a
    Problem for each one that is not (KB070; left out of the redirects) or whose old URL was never
    published (KB071: not in the lock, when `locked` is given; kept, so the rules of the site
    report it too). The file is read as an entry is (KB001-KB009, KB050)."""
    if not path.exists() and not path.is_symlink():
        return [], []
    raw = read(path)
    if not isinstance(raw, bytes):
        return [], raw.problems
    loaded = parse(path, raw, key_chars=MAX_URL_CHARS)
    if loaded.data is None:
        empty = [p for p in loaded.problems if p.code == "KB004" and p.message.startswith("file is empty")]
        return [], [] if empty and len(empty) == len(loaded.problems) else loaded.problems
    problems = list(loaded.problems)
    known = set(locked) if locked is not None else None
    found: list[Redirect] = []
    for old, new in loaded.data.items():
        line = loaded.line_of((old,))
        bad = False
        for what, value in (("old URL", old), ("new URL", new)):
            why = url_problem(value)
            if why is not None:
                problems.append(Problem(path, line, old, f"the {what} {why}", "KB070", value))
                bad = True
        if bad:
            continue
        if old == new:
            problems.append(Problem(path, line, old, "a URL cannot redirect to itself; remove the line", "KB070", new))
            continue
        if known is not None and old not in known:
            problems.append(Problem(path, line, old, "only a URL the site published can move, and this one is not "
                                    "in kb/urls.lock; give the URL exactly as the lock lists it (without its "
                                    "leading '/'), or remove the line", "KB071", old))
        found.append(Redirect(old, new, line))
    return found, problems
