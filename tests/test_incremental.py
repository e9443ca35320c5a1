"""`kb build` over an earlier build of the same folder rewrites only the files whose content
changed (kb.site.incremental), and what it leaves is byte for byte what a full build gives.
Each test builds the three entries of tests/fixtures/site/ (a cell, a look-alike pair with a
shared line, so listing, pointer and disambiguation pages are all there), several times."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from conftest import FIXTURES, checked_site
from kb.cli import main
from kb.site import incremental

pytestmark = pytest.mark.build  # every test builds a site, several times

CELL = "mla-decode-fp8-kv-triton-shared-memory"
ADDED = "incremental-test-added-cell"


def _files(site):
    """site path -> (mtime_ns, inode, bytes), the search index aside (Pagefind names its
    files by content hashes that vary from run to run)."""
    return {p.relative_to(site).as_posix(): (p.stat().st_mtime_ns, p.stat().st_ino, p.read_bytes())
            for p in site.rglob("*") if p.is_file() and p.relative_to(site).parts[0] != "pagefind"}


def _build(capsys, entries, site, *options) -> str:
    assert main(["build", "--preview", "-d", str(site), "--entries", str(entries), *options]) == 0
    return capsys.readouterr().out


def _replace(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _add(entries):
    """A new cell: a copy of CELL with signatures of its own and no related cells."""
    data = yaml.safe_load((entries / f"{CELL}.yaml").read_text(encoding="utf-8"))
    data["title"] = "An entry added between two builds"
    data["signatures"] = [{"text": "incremental build test: a line no other entry prints", "kind": "symptom"},
                          {"text": "incremental build test: a second line of its own", "kind": "symptom"}]
    data.pop("related", None)
    data.pop("evidence", None)
    (entries / f"{ADDED}.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True),
                                           encoding="utf-8")


EDITS = {
    "title": lambda e: _replace(e / f"{CELL}.yaml", "title: MLA decode", "title: Edited MLA decode"),
    "symptom": lambda e: _replace(e / f"{CELL}.yaml", "symptoms: [crash]", "symptoms: [crash, hang]"),
    "signature": lambda e: _replace(e / f"{CELL}.yaml", "text: _decode_grouped_att_m_fwd shared memory",
                                    "text: _decode_grouped_att_m_fwd shared memory size"),
    "added cell": _add,
    "removed cell": lambda e: (e / f"{ADDED}.yaml").unlink(),
}


@pytest.fixture
def entries(tmp_path):
    shutil.copytree(FIXTURES / "site", tmp_path / "entries")
    return tmp_path / "entries"


def test_each_edit_rewrites_exactly_the_files_whose_bytes_change_and_equals_a_full_build(entries, tmp_path, capsys):
    site, full = tmp_path / "site", tmp_path / "full"
    _build(capsys, entries, site)
    for name, edit in EDITS.items():
        before = _files(site)
        edit(entries)
        out = _build(capsys, entries, site)
        assert f"rebuilt {site} in place" in out, (name, out)
        assert "full build" not in out
        after = _files(site)
        _build(capsys, entries, full, "--full")
        assert {rel: f[2] for rel, f in after.items()} == {rel: f[2] for rel, f in _files(full).items()}, name
        written = {rel for rel in after if rel not in before or after[rel][:2] != before[rel][:2]}
        changed = {rel for rel in after if rel not in before or after[rel][2] != before[rel][2]}
        assert written == changed, (name, written ^ changed)
        assert changed, name
        if name == "title":  # the cell's page shows it; pages that do not show the cell stay
            page = checked_site(entries).url(next(c for c in checked_site(entries).cells if c.id == CELL))
            assert f"{page}index.html" in changed
            assert "Edited MLA decode" in after[f"{page}index.html"][2].decode()
            assert len(changed) < len(after) / 4
        if name == "removed cell":
            assert set(before) - set(after)  # its pages are gone
    # The search index followed: the added-then-removed cell is not in it, the edited title is.
    index = b"".join(p.read_bytes() for p in (site / "pagefind").rglob("*") if p.is_file())
    assert (site / "pagefind" / "pagefind.js").is_file() and index


def test_a_rebuild_with_nothing_changed_writes_no_file_not_even_the_search_index(entries, tmp_path, capsys):
    site = tmp_path / "site"
    _build(capsys, entries, site)
    every = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in site.rglob("*") if p.is_file()}
    state = incremental.state_path(site).read_bytes()
    out = _build(capsys, entries, site)
    assert "0 file(s) rewritten, no page changed, the search index kept" in out
    assert {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in site.rglob("*") if p.is_file()} == every
    assert incremental.state_path(site).read_bytes() == state


def test_a_site_file_changed_by_hand_makes_the_next_build_full_and_restores_it(entries, tmp_path, capsys):
    site = tmp_path / "site"
    _build(capsys, entries, site)
    page = next(site.glob("e/*/index.html"))
    original = page.read_bytes()
    page.write_text("defaced", encoding="utf-8")
    out = _build(capsys, entries, site)
    assert "full build: files of the site changed since it was built" in out
    assert page.read_bytes() == original


def test_changed_options_make_a_full_build(entries, tmp_path, capsys):
    site = tmp_path / "site"
    _build(capsys, entries, site)
    assert main(["build", "--site-url", "https://example.org/kb/", "-d", str(site), "--entries", str(entries)]) == 0
    assert "full build: code, templates, hand-written pages, config or options changed" in capsys.readouterr().out
    assert "https://example.org/kb/" in (site / "sitemap.xml").read_text(encoding="utf-8")


def test_a_state_file_committed_to_git_is_never_read(entries, tmp_path, capsys):
    """A pull request could commit a state whose shells carry a script: it is ignored."""
    site = tmp_path / "site"
    _build(capsys, entries, site)
    path = incremental.state_path(site)
    state = incremental.load(site)
    for shell in state.shells.values():
        shell.parts[0] = shell.parts[0].replace("<head>", "<head><script>alert(1)</script>", 1)
    incremental.save(site, state)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", path.name], check=True)
    assert incremental.load(site) is None
    EDITS["title"](entries)
    out = _build(capsys, entries, site)
    assert f"rebuilt {site} in place" not in out
    assert not any("alert(1)" in p.read_text(encoding="utf-8") for p in site.rglob("*.html"))


@pytest.mark.parametrize("text", ["", "{", "[]", '{"version": 1}', '{"version": 1, "inputs": "x", "theme": "y", '
                                  '"shells": {"e/j": ["a", "nosuchfield", "b"]}, "splices": {}, "made": {}, "stats": {}}'])
def test_a_torn_or_foreign_state_file_means_a_full_build(entries, tmp_path, capsys, text):
    site = tmp_path / "site"
    _build(capsys, entries, site)
    incremental.state_path(site).write_text(text, encoding="utf-8")
    assert incremental.load(site) is None
    EDITS["title"](entries)
    out = _build(capsys, entries, site)
    assert f"rebuilt {site} in place" not in out and f"pages into {site}" in out
    assert incremental.load(site) is not None
