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
