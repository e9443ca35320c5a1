"""The search index in shards (kb.site.index): each shard one Pagefind index of the pages its URL
hashes to, merged by the search box in the browser; after an edit only the shards holding a
changed page are indexed again, and what they hold equals a full build's index."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

from browser import search, serve
from conftest import FIXTURES, ROOT, builds_site, checked_site
from kb.cli import main
from kb.site import index
from kb.site.search import shard_of

# The edit tests build the three entries of tests/fixtures/site/ (several times each) and edit
# this one's summary; the shards of the live site are tested on one build (`sharded`).
CELL = "mla-decode-fp8-kv-triton-shared-memory"
SMALL = 10  # pages per shard for the live site: its cells make several shards
FEW = 2  # pages per shard for the fixtures' few searched pages: several shards too


def _entries(tmp_path: Path) -> Path:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURES / "site", entries)
    return entries


def _mark_summary(entries: Path, mark: str) -> None:
    """Put `mark` at the start of CELL's summary (a folded block: `summary: >-` then its lines)."""
    path = entries / f"{CELL}.yaml"
    text = path.read_text(encoding="utf-8")
    assert "summary: >-\n  " in text
    path.write_text(text.replace("summary: >-\n  ", f"summary: >-\n  {mark} ", 1), encoding="utf-8")


def _build(entries: Path, site: Path, *options: str, shard_pages: int = SMALL) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index, "SHARD_PAGES", shard_pages)
        assert main(["build", "--preview", "-d", str(site), "--entries", str(entries), *options]) == 0


def _shards(site: Path) -> list[str]:
    return json.loads((site / "pagefind" / index.SHARDS_FILE).read_text(encoding="utf-8"))["indexes"]


def _shard_files(site: Path, folder: str) -> dict[str, tuple[int, int]]:
    """A shard's files (shard 0: the top of the index folder without the others) -> inode, mtime."""
    root = site / "pagefind" / folder
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not (folder == "" and (rel.parts[0].isdigit() or rel.name == index.SHARDS_FILE)):
            found[rel.as_posix()] = (path.stat().st_ino, path.stat().st_mtime_ns)
    return found


def _fragments(site: Path) -> dict[str, dict]:
    """Every page Pagefind holds, in any shard: URL -> its stored text, title and filters."""
    found = {}
    for folder in _shards(site):
        for path in (site / "pagefind" / folder / "fragment").glob("*.pf_fragment"):
            raw = gzip.decompress(path.read_bytes())
            data = json.loads(raw[len(b"pagefind_dcd"):])
            assert data["url"] not in found, "a page in two shards"
            found[data["url"]] = {k: data[k] for k in ("content", "meta", "filters")}
    return found


@pytest.fixture(scope="module")
@builds_site
def sharded(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("sharded") / "site"
    _build(ROOT / "kb" / "entries", site)
    return site


def test_shards_hold_every_searched_page_once_and_stay_put():
    urls = [f"e/cell-{n}/" for n in range(5000)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index, "SHARD_PAGES", 2000)
        shards = index.shards_of(urls)
        assert len(shards) == 3 and all(shards)
        assert sorted(u for shard in shards for u in shard) == sorted(urls)
        assert all(len(shard) < 2000 * 1.2 for shard in shards)
        grown = index.shards_of(urls + ["e/new-cell/"])  # one page more: every other page stays in its shard
        assert [[u for u in shard if u != "e/new-cell/"] for shard in grown] == shards
        assert index.shards_of([]) == [[]] and index.shards_of(["e/a/"]) == [["e/a/"]]


def test_the_index_holds_cell_and_disambiguation_pages_only_each_in_its_shard(sharded):
    site = checked_site(ROOT / "kb" / "entries")
    folders = _shards(sharded)
    assert len(folders) > 2 and folders[0] == ""
    assert (sharded / "pagefind" / "pagefind.js").is_file()
    for folder in folders[1:]:  # the scripts come from shard 0 only
        assert not list((sharded / "pagefind" / folder).glob("*.js"))
        assert (sharded / "pagefind" / folder / "pagefind-entry.json").is_file()
    held = _fragments(sharded)
    marked = {"/" + p.parent.relative_to(sharded).as_posix() + "/" for p in sharded.rglob("index.html")
              if "pagefind" not in p.parts and "data-pagefind-body" in p.read_text(encoding="utf-8")}
    assert set(held) == marked
    assert {"/" + site.url(c) for c in site.cells} <= marked
    for folder_number, folder in enumerate(folders):
        for path in (sharded / "pagefind" / folder / "fragment").glob("*.pf_fragment"):
            url = json.loads(gzip.decompress(path.read_bytes())[len(b"pagefind_dcd"):])["url"]
            assert shard_of(url.lstrip("/"), len(folders)) == folder_number, url


def test_the_search_box_merges_every_shard(sharded, page):
    """A search Pagefind answers (words of a cell's summary, which no literal string holds) finds
    cells in every shard; the filter menus list the values of every shard."""
    site = checked_site(ROOT / "kb" / "entries")
    folders = _shards(sharded)
    by_shard: dict[int, object] = {}
    for cell in site.cells:
        by_shard.setdefault(shard_of(site.url(cell), len(folders)), cell)
    assert len(by_shard) == len(folders)
    with serve(sharded) as base:
        fetched = []
        page.on("request", lambda request: fetched.append(request.url))
        page.goto(base + "about/")
        # The words of each summary that the fewest other summaries hold: what a reader who read
        # the page would type, and what Pagefind ranks the page first for.
        held: dict[str, int] = {}
        for other in site.cells:
            for word in {w.lower() for w in re.findall(r"[A-Za-z]{5,}", other.entry.summary)}:
                held[word] = held.get(word, 0) + 1
        for cell in by_shard.values():
            own = list(dict.fromkeys(re.findall(r"[A-Za-z]{5,}", cell.entry.summary)))
            words = " ".join(sorted(own, key=lambda w: (held[w.lower()], own.index(w)))[:4])
            found = [unquote(link) for link in search(page, words)[:3]]
            assert any(link.endswith("/" + site.url(cell)) for link in found), (words, found)
        for folder in folders:
            assert any(u.startswith(f"{base}pagefind/{folder}index/") for u in fetched), folder
        menu = page.locator("select[data-filter=status]")
        menu.focus()
        page.wait_for_function("() => document.querySelector('select[data-filter=status]').options.length > 1")
        shown = set(menu.locator("option").all_inner_texts()[1:])
        every = {f["status"][0] for f in (v["filters"] for v in _fragments(sharded).values()) if "status" in f}
        assert shown == every


@pytest.mark.build
def test_an_edit_indexes_only_the_shards_of_the_pages_it_changed(tmp_path, capsys):
    entries = _entries(tmp_path)
    site, full = tmp_path / "site", tmp_path / "full"
    _build(entries, site, shard_pages=FEW)
    folders = _shards(site)
    files = {folder: _shard_files(site, folder) for folder in folders}
    pages = {url: (site / url.lstrip("/") / "index.html").read_bytes() for url in _fragments(site)}
    _mark_summary(entries, "Edited:")
    capsys.readouterr()
    _build(entries, site, shard_pages=FEW)
    out = capsys.readouterr().out
    changed = {url for url, before in pages.items() if (site / url.lstrip("/") / "index.html").read_bytes() != before}
    touched = {folders[shard_of(url.lstrip("/"), len(folders))] for url in changed}
    assert "in place" in out and f"index shard(s), {len(touched)} indexed again" in out, out
    assert 0 < len(touched) < len(folders)
    for folder in folders:
        if folder in touched:
            assert _shard_files(site, folder) != files[folder]
        else:
            assert _shard_files(site, folder) == files[folder], folder  # the same files: not indexed again
    cell_url = checked_site(entries).url(next(c for c in checked_site(entries).cells if c.id == CELL))
    held = _fragments(site)
    assert "Edited: Serving" in held["/" + cell_url]["content"]
    _build(entries, full, "--full", shard_pages=FEW)
    assert held == _fragments(full)


def test_a_site_without_searched_pages_has_an_index_without_shards(tmp_path, page):
    site = tmp_path / "site"
    (tmp_path / "entries").mkdir()
    (tmp_path / "families").mkdir()  # no family either (else the shipped ones, whose pages are searched)
    _build(tmp_path / "entries", site)
    assert _shards(site) == []
    with serve(site) as base:
        page.goto(base + "about/")
        assert search(page, "RuntimeError: nothing at all") == []
        assert "unavailable" not in page.locator(".kb-search__status").inner_text()


@pytest.mark.build
def test_an_index_stopped_by_the_next_edit_is_made_by_the_next_build(tmp_path, capsys):
    """kb serve stops the index of a rebuild when another edit is saved meanwhile: the pages are
    in place, the index is left as it was, and the next rebuild indexes the pages of both edits."""
    from kb.site import build

    entries = _entries(tmp_path)
    site, full = tmp_path / "site", tmp_path / "full"
    _build(entries, site, shard_pages=FEW)
    held = _fragments(site)
    _mark_summary(entries, "First:")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index, "SHARD_PAGES", FEW)
        assert build.build(site, entries, superseded=lambda: True) == 0
    assert "the search index is left to the next build" in capsys.readouterr().out
    cell_url = "/" + checked_site(entries).url(next(c for c in checked_site(entries).cells if c.id == CELL))
    assert "First: Serving" in (site / cell_url.lstrip("/") / "index.html").read_text(encoding="utf-8")
    assert _fragments(site) == held  # the old index, whole
    other = next(p for p in sorted(entries.glob("*.yaml")) if p.stem != CELL)
    other.write_text(other.read_text(encoding="utf-8").replace("title: ", "title: Second edit of ", 1), encoding="utf-8")
    _build(entries, site, shard_pages=FEW)
    assert "in place" in capsys.readouterr().out
    _build(entries, full, "--full", shard_pages=FEW)
    assert _fragments(site) == _fragments(full)
    assert "First: Serving" in _fragments(site)[cell_url]["content"]


@pytest.mark.build
def test_a_link_put_into_the_index_is_not_carried_into_the_next_one(tmp_path):
    """Shards taken over from the previous index are linked file by file; a symbolic link found
    there (to a private file) is neither followed nor kept."""
    entries = _entries(tmp_path)
    site = tmp_path / "site"
    _build(entries, site, shard_pages=FEW)
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the site", encoding="utf-8")
    for folder in _shards(site):
        (site / "pagefind" / folder / "fragment" / "planted.pf_fragment").symlink_to(secret)
    _mark_summary(entries, "Edited:")
    _build(entries, site, shard_pages=FEW)
    files = list((site / "pagefind").rglob("*"))
    assert not [p for p in files if p.is_symlink() or p.name == "planted.pf_fragment"]
    assert not [p for p in files if p.is_file() and b"not for the site" in p.read_bytes()]
