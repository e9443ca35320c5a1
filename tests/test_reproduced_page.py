"""The "Reproduced" block of an entry page and the reproductions in its API and OSV records, read from
the built site (no browser): the command anyone can run, what was installed, the tool's version line,
the date and machine, and the verbatim output with the line that shows the literal marked."""

from __future__ import annotations

import json

from html_page import Page

# A live entry whose recorded ptxas output prints one of its signatures verbatim on each of its two lines.
REPRODUCED = "flashinfer-aot-cvt-e2m1x2-not-supported-sm120"
# A live entry whose Triton runs compile an upstream kernel: each says where its arguments come from.
NOTED = "sglang-fused-moe-default-config-smem-147456-sm12x"


def _showing(api: dict, lines: list[str]) -> list[int]:
    """The 1-based numbers of the lines that hold one of the entry's signatures verbatim: for
    REPRODUCED, the lines kb match's comparison (which KB090 makes) finds too."""
    texts = [s["text"] for s in api["record"]["signatures"]]
    return [n for n, line in enumerate(lines, 1) if any(t in line for t in texts)]


def _api(site, cell_id: str) -> dict:
    return json.loads((site / "api" / "v1" / "cells" / f"{cell_id}.json").read_text(encoding="utf-8"))


def _page(site, api: dict) -> Page:
    return Page(site / api["url"] / "index.html")


def test_the_block_shows_the_command_install_version_date_and_the_marked_line(live_site):
    api = _api(live_site, REPRODUCED)
    (recorded,) = api["record"]["reproductions"]
    printed = recorded["printed"]
    page = _page(live_site, api)
    heading = page.select_one("#reproduced")
    assert heading is not None and heading.tag == "h2" and heading.inner_text() == "Reproduced"
    block = page.select_one("section.kb-reproduced")
    text = block.inner_text()
    assert f"bwkb repro {REPRODUCED}" == block.select_one("code.kb-repro-command").inner_text()
    assert f"{recorded['install']['package']}=={recorded['install']['version']}" in text
    assert block.select_one("code.kb-repro-version").inner_text() == printed["tool_version"]
    assert block.select_one(".kb-repro-date").inner_text() == printed["date"]
    assert printed["machine"] in text
    # The block sits in the evidence part, before the measurements, links and claims.
    assert block.next_element() is page.select_one("div.kb-unindexed")
    output = block.select_one("pre.kb-repro-output")
    assert "data-pagefind-ignore" in output.attrs
    assert output.text_content() == printed["output"].rstrip("\n")  # verbatim, escaping undone by the parser
    lines = printed["output"].rstrip("\n").split("\n")
    marked = [m.text_content() for m in output.select("mark")]
    assert marked == [lines[n - 1] for n in _showing(api, lines)]
    assert api["record"]["signatures"][0]["text"] in marked[0]  # the first literal, on the first line


def test_the_api_and_osv_records_carry_the_reproduction(live_site):
    api = _api(live_site, REPRODUCED)
    (recorded,) = api["record"]["reproductions"]
    (shown,) = api["reproduced"]
    lines = recorded["printed"]["output"].rstrip("\n").split("\n")
    assert shown["command"] == f"bwkb repro {REPRODUCED}"
    assert shown["install"] == f"{recorded['install']['package']}=={recorded['install']['version']}"
    assert shown["run"] == " ".join([recorded["run"]["tool"], *recorded["run"]["args"], recorded["run"]["input"]])
    assert {k: shown[k] for k in ("tool_version", "date", "machine", "exit", "output")} == recorded["printed"]
    assert shown["note"] is None and "note" not in recorded
    assert shown["literal_lines"] == _showing(api, lines) == [1, 2]
    osv = json.loads((live_site / "osv" / f"{REPRODUCED}.json").read_text(encoding="utf-8"))
    assert osv["database_specific"]["reproductions"] == api["reproduced"]


def test_a_runs_note_is_shown_with_it_on_the_page_and_in_the_api(live_site):
    api = _api(live_site, NOTED)
    recorded = api["record"]["reproductions"]
    assert len(recorded) == 2 and all(r["note"] for r in recorded)
    assert [r["note"] for r in api["reproduced"]] == [r["note"] for r in recorded]
    runs = _page(live_site, api).select("ul.kb-repro")
    assert [f"Where the options come from: {r['note']}" in run.inner_text() for r, run in zip(recorded, runs)] \
        == [True, True]
    plain = _page(live_site, _api(live_site, REPRODUCED)).select_one("ul.kb-repro")
    assert "Where the options come from" not in plain.inner_text()


def test_only_entries_with_a_recorded_reproduction_show_the_block(live_site):
    index = json.loads((live_site / "api" / "v1" / "index.json").read_text(encoding="utf-8"))
    with_block, without = [], []
    for summary in index["cells"]:
        api = _api(live_site, summary["id"])
        page = _page(live_site, api)
        has = page.select_one("#reproduced") is not None
        assert has == bool(api["reproduced"]), summary["id"]
        assert has == bool(page.select("section.kb-reproduced")) == bool(page.select("pre.kb-repro-output"))
        (with_block if has else without).append(summary["id"])
        if not has:
            # Only a scan's evidence line names the command (it re-reads the wheels); nothing else does.
            scanned = any(s.get("found") for s in api["record"].get("scans", []))
            assert ("bwkb repro" in page.body.inner_text()) == scanned, summary["id"]
            osv = json.loads((live_site / "osv" / f"{summary['id']}.json").read_text(encoding="utf-8"))
            assert osv["database_specific"]["reproductions"] == []
    recorded = [c for c in index["cells"]
                if any(r.get("printed") for r in _api(live_site, c["id"])["record"].get("reproductions", []))]
    assert sorted(with_block) == sorted(c["id"] for c in recorded)
    assert REPRODUCED in with_block and without


def test_only_the_lines_that_show_a_signature_are_marked():
    """A line the entry's signatures do not match stays unmarked, and a blank line is never marked:
    the page marks what KB090's comparison finds, line by line, not the whole output."""
    from conftest import ROOT

    from kb.records import lint
    from kb.site import reproduced

    result = lint.check([ROOT / "kb" / "entries" / f"{REPRODUCED}.yaml"])
    (cell,) = result.cells
    recorded = cell.entry.reproductions[0].printed.output.rstrip("\n").split("\n")
    output = "\n".join([recorded[0], "", "ptxas info    : 0 bytes gmem", recorded[-1]])
    assert reproduced.lines(cell.entry, output) == [(recorded[0], True), ("", False),
                                                    ("ptxas info    : 0 bytes gmem", False), (recorded[-1], True)]


# An entry with no reproduction whose range rests on a recorded scan of the released wheels.
SCANNED = "bitsandbytes-no-cuda128-library-compiled-without-gpu-support"


def test_an_entry_without_a_reproduction_says_what_its_evidence_is(live_site):
    api = _api(live_site, SCANNED)
    page = _page(live_site, api)
    assert page.select_one("section.kb-reproduced") is None
    line = page.select_one("p.kb-evidence-kind")
    (found,) = api["record"]["scans"]
    wheels = {w["version"]: w for w in found["found"]["wheels"]}
    assert "sm_120" in wheels["0.45.3"]["libraries"][-1]["sass"]
    assert line.inner_text() == (
        "Evidence: Read in the released wheels with cuobjdump: bitsandbytes 0.45.3 is the first scanned release "
        f"with sm_120 code, 0.45.2 the last without (wheels read {found['found']['date']}; bwkb repro {SCANNED} "
        "reads them again).")
    # The line takes the Reproduced block's place, before the measurements, links and claims.
    assert line.next_element() is page.select_one("div.kb-unindexed")


def test_the_evidence_line_is_absent_where_a_reproduction_is_shown(live_site):
    page = _page(live_site, _api(live_site, REPRODUCED))
    assert page.select_one("p.kb-evidence-kind") is None


# A live entry with a run on an affected release and one on the release it names as fixed (cmake, torch's module).
FIXED = "torch-cmake-autodetect-gb10-compute-20"


def test_a_run_on_a_fixed_release_is_shown_as_such_with_nothing_marked(live_site):
    api = _api(live_site, FIXED)
    assert [r.get("fixed", False) for r in api["record"]["reproductions"]] == [False, True]
    assert [r["fixed"] for r in api["reproduced"]] == [False, True]
    assert [r["literal_lines"] for r in api["reproduced"]] == [[1, 2], []]
    affected, fixed = _page(live_site, api).select("ul.kb-repro")
    assert "On a fixed release: prints none of this entry's literals" in fixed.inner_text()
    assert "On a fixed release" not in affected.inner_text()
    outputs = _page(live_site, api).select("pre.kb-repro-output")
    assert [len(o.select("mark")) for o in outputs] == [2, 0]
    assert "<torch 2.15.0 wheel>/torch/share/cmake/" in fixed.inner_text()
