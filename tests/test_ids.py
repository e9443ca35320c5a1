"""Citable ids (kb.records.ids): assigned once in publication order, kept in kb/ids.lock, shown on
the cell page, in the API, the OSV record and `kb match`; /id/<id>/ lands on the cell's page."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from kb import cli
from kb.records import ids

from browser import serve
from conftest import ROOT


def _cell(name, published, tmp_path):
    return SimpleNamespace(id=name, path=tmp_path / f"{name}.yaml", entry=SimpleNamespace(published=published))


def test_new_cells_get_the_next_numbers_in_publication_order_and_locked_ones_keep_theirs(tmp_path):
    lock = tmp_path / "ids.lock"
    first = [_cell("b-cell", "2026-12-02", tmp_path), _cell("a-cell", "2026-12-02", tmp_path),
             _cell("old", "2025-06-01", tmp_path)]
    assert ids.write(lock, first) == ["BWKB-2025-0001", "BWKB-2026-0002", "BWKB-2026-0003"]
    assert ids.for_entries(tmp_path) == {}  # another folder: no lock of its own
    locked, problems = ids.read(lock)
    assert problems == [] and [(e.id, e.cell) for e in locked] == [
        ("BWKB-2025-0001", "old"), ("BWKB-2026-0002", "a-cell"), ("BWKB-2026-0003", "b-cell")]
    # A cell published earlier but added later still gets the next number; nothing is renumbered.
    later = first + [_cell("backdated", "2024-01-01", tmp_path), _cell("new", "2027-01-05", tmp_path)]
    assert ids.write(lock, later) == ["BWKB-2024-0004", "BWKB-2027-0005"]
    assert ids.write(lock, later) == []
    # A removed cell keeps its line: its number is never given again.
    assert ids.assign(ids.read(lock)[0], later[1:] + [_cell("newest", "2027-02-01", tmp_path)])["newest"] == \
        "BWKB-2027-0006"


def test_a_broken_lock_is_refused_with_file_and_line(tmp_path):
    lock = tmp_path / "ids.lock"
    lock.write_text("# header\nBWKB-2026-0001 a-cell\nBWKB-2026-0001 b-cell\nBWKB-2026-0002 a-cell\n"
                    "BWKB-2026-0004 c-cell\nnot a line\n", encoding="utf-8")
    _, problems = ids.read(lock)
    assert [(p.line, p.code) for p in problems] == [(3, "KB077"), (4, "KB077"), (5, "KB077"), (6, "KB077")]
    assert "already given on line 2" in problems[0].message and "number 0002" in problems[2].message
    with pytest.raises(ValueError, match=r"ids.lock:3: "):
        ids.write(lock, [])


def test_the_committed_lock_covers_every_cell_and_kb_check_says_so(capsys):
    from kb.records import lint

    cells = lint.check([ROOT / "kb" / "entries"]).cells
    locked, problems = ids.read(ids.OWN_LOCK)
    assert problems == [] and {e.cell for e in locked} >= {c.id for c in cells}
    assert cli.main(["check"]) == 0


def test_kb_check_names_a_cell_without_an_id(tmp_path, monkeypatch, capsys):
    lock = tmp_path / "ids.lock"
    text = ids.OWN_LOCK.read_text(encoding="utf-8")
    lines = text.splitlines()
    lock.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # the newest cell lost its line
    monkeypatch.setattr(ids, "OWN_LOCK", lock)
    assert cli.main(["check"]) == 1
    out = capsys.readouterr().out
    cell = lines[-1].split()[1]
    assert f"kb/entries/{cell}.yaml:1: (file name): this cell has no citable id" in out and "[KB078]" in out
    assert f"{lines[-1].split()[0]}: this id was published" in out and "[KB079]" in out


def test_kb_match_prints_the_id(tmp_path, capsys):
    log = tmp_path / "log.txt"
    log.write_text("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, "
                   "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n", encoding="utf-8")
    wanted = ids.for_entries(ROOT / "kb" / "entries")["mla-decode-fp8-kv-triton-shared-memory"]
    assert cli.main(["match", str(log)]) == 0
    assert f"1. {wanted} " in capsys.readouterr().out
    assert cli.main(["match", "--json", str(log)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["citable_id"] == wanted


def test_the_id_shows_on_the_page_in_the_api_and_osv_and_its_url_lands_on_the_page(live_site, page):
    citable = ids.for_entries(ROOT / "kb" / "entries")
    cell = "mla-decode-fp8-kv-triton-shared-memory"
    record = json.loads((live_site / "api" / "v1" / "cells" / f"{cell}.json").read_text(encoding="utf-8"))
    assert record["citable_id"] == citable[cell]
    osv = json.loads((live_site / "osv" / f"{cell}.json").read_text(encoding="utf-8"))
    assert osv["id"] == citable[cell] and osv["database_specific"]["cell"] == cell
    index = json.loads((live_site / "api" / "v1" / "index.json").read_text(encoding="utf-8"))
    assert {c["id"]: c["citable_id"] for c in index["cells"]} == citable
    with serve(live_site) as base:
        page.goto(base + f"id/{citable[cell]}/")
        page.wait_for_url(base + record["url"])
        assert page.locator("h1").inner_text().startswith("triton.runtime.errors.OutOfResources")
        shown = page.locator("#kb-id")
        assert shown.is_visible() and shown.inner_text() == citable[cell]
        # Near the title: in the first screen, right under the title line.
        assert shown.bounding_box()["y"] < page.locator("h1").bounding_box()["y"] + 300
        shown.click()
        page.wait_for_url(base + record["url"])


# --- ids are permanent (attack review 2026-12-05, N1) ------------------------------------------

def _git(folder, *args):
    import subprocess

    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   check=True, capture_output=True)


def _published(tmp_path):
    """A checkout whose committed lock gave 0001 to a-cell and 0002 to ple-offload (the review's victim)."""
    _git(tmp_path, "init", "-q")
    lock = tmp_path / "ids.lock"
    lock.write_text(ids.HEADER + "BWKB-2026-0001 a-cell\nBWKB-2026-0002 ple-offload\n", encoding="utf-8")
    _git(tmp_path, "add", "ids.lock")
    _git(tmp_path, "commit", "-qm", "publish")
    return lock, [_cell(name, "2026-12-02", tmp_path) for name in ("a-cell", "ple-offload", "hotfix-wheel")]


@pytest.mark.parametrize("commit", [False, True])
def test_a_published_id_cannot_be_moved_to_another_entry(tmp_path, commit):
    """The review's takeover: 0002 given to the attacker's new entry, its owner renumbered 0003;
    committed on the pull request's branch or not, the lock's history says whose 0002 is."""
    lock, cells = _published(tmp_path)
    lock.write_text(ids.HEADER + "BWKB-2026-0001 a-cell\nBWKB-2026-0002 hotfix-wheel\nBWKB-2026-0003 ple-offload\n",
                    encoding="utf-8")
    if commit:
        _git(tmp_path, "commit", "-qam", "rename")
    found = [p for p in ids.problems(lock, cells, []) if p.code == "KB083"]
    assert [(p.line, p.loc) for p in found] == [(3, "BWKB-2026-0002")]
    assert found[0].format().endswith(
        "ids.lock:3: BWKB-2026-0002: this id was published for 'ple-offload' (commit "
        f"{found[0].message.split('commit ')[1][:7]}) and now names 'hotfix-wheel'; restore the line as it was "
        "published; an id names its entry for good (a renamed entry keeps its id: change the name on its line and "
        "add 'renamed <old name> <new name>') (got 'hotfix-wheel') [KB083]")


def test_swapped_removed_and_renamed_ids(tmp_path):
    lock, cells = _published(tmp_path)
    lock.write_text(ids.HEADER + "BWKB-2026-0001 ple-offload\nBWKB-2026-0002 a-cell\n", encoding="utf-8")
    assert [p.loc for p in ids.problems(lock, cells[:2], []) if p.code == "KB083"] == ["BWKB-2026-0001",
                                                                                       "BWKB-2026-0002"]
    lock.write_text(ids.HEADER + "BWKB-2026-0001 a-cell\n", encoding="utf-8")  # the last line removed
    assert [p.loc for p in ids.problems(lock, cells[:1], []) if p.code == "KB083"] == ["BWKB-2026-0002"]
    # An explicit rename keeps the id; not while the old entry is still there (that is a takeover).
    renamed = ids.HEADER + "BWKB-2026-0001 a-cell\nBWKB-2026-0002 hotfix-wheel\nrenamed ple-offload hotfix-wheel\n"
    lock.write_text(renamed, encoding="utf-8")
    assert ids.problems(lock, [cells[0], cells[2]], []) == []
    assert [p.loc for p in ids.problems(lock, cells, []) if p.code == "KB083"] == ["BWKB-2026-0002"]


def test_no_git_history_skips_and_a_shallow_clone_refuses(tmp_path):
    lock = tmp_path / "ids.lock"
    lock.write_text(ids.HEADER + "BWKB-2026-0001 a-cell\n", encoding="utf-8")
    assert ids.history(lock) is None  # not a git checkout: an archive, the installed wheel
    cut = ids.History({"BWKB-2026-0001": ("a-cell", "abc1234")})
    cut.cut = True
    found = ids.permanence_problems(lock, ids.read(lock)[0], {}, cut, {"a-cell"})
    assert [p.code for p in found] == ["KB083"] and "git fetch --unshallow" in found[0].message


def test_the_live_lock_keeps_every_published_id():
    published = ids.history(ids.OWN_LOCK)
    assert published is not None and not published.cut and len(published) >= 71
    assert ids.permanence_problems(ids.OWN_LOCK, ids.read(ids.OWN_LOCK)[0], {}, published, set()) == []


def _other_checkout(tmp_path):
    """A second checkout of this project (as a developer's branch worktree is): its pyproject names the
    distribution, its kb/entries holds two entries, and its lock gives only the later-published one an
    id, 0001, which numbering from scratch would give the earlier one."""
    import shutil

    root = tmp_path / "checkout"
    (root / "kb" / "entries").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    good = (ROOT / "tests" / "fixtures" / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml").read_text(encoding="utf-8")
    (root / "kb" / "entries" / "locked-later.yaml").write_text(good, encoding="utf-8")
    (root / "kb" / "entries" / "unlocked-earlier.yaml").write_text(
        good.replace("published: 2026-12-02", "published: 2026-11-01"), encoding="utf-8")
    (root / "kb" / "ids.lock").write_text("BWKB-2026-0001 locked-later\n", encoding="utf-8")
    return root


def test_another_checkouts_entries_are_numbered_by_that_checkouts_lock(tmp_path):
    from kb import checkout_of
    from kb.records import lint

    root = _other_checkout(tmp_path)
    entries = root / "kb" / "entries"
    assert checkout_of(entries) == root.resolve() and ids.lock_for(entries) == root.resolve() / "kb" / "ids.lock"
    cells = lint.check([entries]).cells
    assert ids.for_entries(entries, cells) == {"locked-later": "BWKB-2026-0001", "unlocked-earlier": "BWKB-2026-0002"}
    # Not a checkout (no pyproject naming this project): numbered on its own, as before.
    (root / "pyproject.toml").write_text('[project]\nname = "something-else"\n', encoding="utf-8")
    assert checkout_of(entries) is None and ids.lock_for(entries) is None


def test_kb_check_in_another_checkout_names_its_entry_without_an_id(tmp_path, monkeypatch, capsys):
    root = _other_checkout(tmp_path)
    monkeypatch.chdir(root)
    assert cli.main(["check", "kb/entries"]) == 1
    out = capsys.readouterr().out
    assert "kb/entries/unlocked-earlier.yaml:1: (file name): this cell has no citable id" in out and "[KB078]" in out
    assert "locked-later.yaml:1: (file name)" not in out  # its own lock gives it an id
