"""Stage 5, index: the Pagefind search index of a built site, in shards merged in the browser.

Only the pages people search are indexed: cell, disambiguation and family pages, whose templates mark
their text `data-pagefind-body` (a listing must never outrank a cell for its own string). Pagefind
reads just those pages, linked into a folder of their own (a "farm"), so it does not parse the
pointer pages and listings at all.

The pages are split into shards of about `SHARD_PAGES` by a hash of their URL; each shard is one
Pagefind index (shard 0 at the top of the index folder, with Pagefind's scripts; shard n in `n/`)
and `kb-shards.json` lists them for the search box, which merges them (`mergeIndex`). Pagefind's
memory grows faster than the pages it holds (10,000 cells: 2.25 GB in one index, 0.4 GB for
2,500 pages), and after an edit only the shards holding a changed page are indexed again; the
others are taken over from the previous index as they are.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kb.site.paths import inside, work_folder
from kb.site.search import shard_of

SHARD_PAGES = 2000  # pages per Pagefind index, at most about (its memory and time grow faster than linearly)
INDEXED_KINDS = ("cell", "disambiguation", "family")  # the pages whose templates say data-pagefind-body
FOLDER = "pagefind"  # the index folder inside the site
SHARDS_FILE = "kb-shards.json"  # the index folders of the shards, for kb-search.js
KEPT_IN_SHARDS = ("pagefind-entry.json", "fragment", "index", "filter")  # and *.pf_meta: what mergeIndex reads
PAGEFIND_SECONDS = 600  # one Pagefind run at most
POLL_SECONDS = 0.25  # how often a running Pagefind is asked whether it is still wanted


class SearchIndexError(RuntimeError):
    pass


class Cancelled(Exception):
    """The index was no longer wanted (`cancelled()` said so): nothing was written."""


def indexed_urls(pages) -> list[str]:
    """The URLs of the generated pages that are searched, sorted."""
    return sorted(p.url for p in pages if p.kind in INDEXED_KINDS)


def shards_of(urls: list[str]) -> list[list[str]]:
    """The URLs in shards: as many as `SHARD_PAGES` asks for, fewer while one would be empty (a
    shard is a Pagefind index, which cannot be empty); each URL's shard is a hash of it, so a
    page stays in its shard while the number of shards is unchanged."""
    count = max(1, -(-len(urls) // SHARD_PAGES))
    while True:
        shards: list[list[str]] = [[] for _ in range(count)]
        for url in urls:
            shards[shard_of(url, count)].append(url)
        if count == 1 or all(shards):
            return shards
        count -= 1


def folder_of(shard: int) -> str:
    """A shard's folder inside the index folder, as kb-shards.json names it ("" for shard 0)."""
    return f"{shard}/" if shard else ""


@dataclass(frozen=True)
class Indexed:
    pages: int
    shards: int
    again: int  # shards indexed again (the others were taken over from the previous index)


def build_index(site_dir: Path, output: Path, urls: list[str], previous: Path | None = None,
                since: tuple[list[str], list[str]] | None = None, cancelled=None) -> Indexed:
    """Index the pages `urls` of `site_dir` into the empty folder `output`. `previous`: the index
    of this site as it was, and `since`: the URLs it held and the site paths written or deleted
    since; a shard holding none of those pages is taken over from `previous` (hard links) instead
    of indexed again, when the shards are the same. `cancelled()`, when given, is asked while
    Pagefind runs: True stops it and raises Cancelled (`kb serve`: an edit was saved meanwhile)."""
    shards = shards_of(urls)
    listed = [folder_of(n) for n, members in enumerate(shards) if members]
    output.mkdir(parents=True, exist_ok=True)
    touched = set(range(len(shards)))
    if previous is not None and since is not None and _listed(previous) == listed:
        held, changed = since
        searched = set(urls) | set(held)
        touched = {shard_of(url, len(shards)) for url in map(_url_of, changed) if url in searched}
    counted = 0
    for n, members in enumerate(shards):
        if not members:
            continue  # no page at all: an index without shards, which the search box knows
        target = output / folder_of(n)
        if n in touched:
            if cancelled is not None and cancelled():
                raise Cancelled()
            counted += _pagefind(site_dir, members, target, cancelled)
            if n:
                _trim(target)
        else:
            _link_shard(previous / folder_of(n), target, top=n == 0)
            counted += len(members)
    (output / SHARDS_FILE).write_text(json.dumps({"indexes": listed}) + "\n", encoding="utf-8")
    return Indexed(counted, len(listed), len(touched) if listed else 0)


def _url_of(path: str) -> str:
    """The URL of a site path written by a rebuild ("e/x/index.html" -> "e/x/")."""
    return path[: -len("index.html")] if path.endswith("index.html") else path


def _listed(index: Path) -> list[str] | None:
    try:
        data = json.loads((index / SHARDS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    listed = data.get("indexes") if isinstance(data, dict) else None
    if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
        return None
    return listed


def _pagefind(site_dir: Path, urls: list[str], output: Path, cancelled=None) -> int:
    """One Pagefind index of the pages `urls` of `site_dir`, written into `output`: the number
    of pages Pagefind says it indexed."""
    farm = Path(tempfile.mkdtemp(prefix="farm-", dir=work_folder(site_dir)))
    try:
        for url in urls:
            _link(inside(site_dir, f"{url}index.html"), inside(farm, f"{url}index.html"))
        command = [sys.executable, "-m", "pagefind_bin", "--site", str(farm), "--output-path", str(output.resolve()),
                   "--force-language", "en"]
        returncode, stdout, stderr = _run(command, cancelled)
    finally:
        shutil.rmtree(farm, ignore_errors=True)
    if returncode != 0:
        raise SearchIndexError(f"pagefind failed ({returncode}): {stderr.strip() or stdout.strip()}")
    found = re.search(r"Indexed (\d+) pages?", stdout)
    if found is None:
        raise SearchIndexError(f"pagefind did not say how many pages it indexed: {stdout.strip()[-500:]}")
    return int(found.group(1))


def _run(command: list[str], cancelled) -> tuple[int, str, str]:
    """Run `command` to its end (PAGEFIND_SECONDS at most), or until `cancelled()` says so."""
    deadline = time.monotonic() + PAGEFIND_SECONDS
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=POLL_SECONDS if cancelled is not None else PAGEFIND_SECONDS)
                return proc.returncode, stdout, stderr
            except subprocess.TimeoutExpired:
                stopped = cancelled is not None and cancelled()
                if stopped or time.monotonic() > deadline:
                    proc.kill()
                    proc.communicate()
                    if stopped:
                        raise Cancelled() from None
                    raise SearchIndexError(f"pagefind ran past {PAGEFIND_SECONDS} s") from None


def _trim(shard: Path) -> None:
    """A merged shard needs only its own index files: Pagefind's scripts, styles and wasm are
    loaded once, from shard 0."""
    for path in shard.iterdir():
        if path.name not in KEPT_IN_SHARDS and path.suffix != ".pf_meta":
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _link_shard(source: Path, target: Path, top: bool) -> None:
    """Shard files taken over from the previous index by hard links (copied where links fail);
    for shard 0, the top of the index folder without the other shards and the shard list. Only
    regular files: a link put into the published folder is never followed into it."""
    for folder, dirs, files in os.walk(source):  # does not descend into linked folders
        here = Path(folder)
        for name in sorted(files):
            path = here / name
            rel = path.relative_to(source)
            if top and (rel.parts[0] == SHARDS_FILE or rel.parts[0].isdigit()):
                continue
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            _link(path, inside(target, rel.as_posix()))


def _link(source: Path, target: Path) -> None:
    """`target` made a hard link to the file `source` (a copy on a file system without them),
    never through a symbolic link."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        shutil.copyfile(source, target, follow_symlinks=False)
