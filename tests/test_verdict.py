"""The verdict on a cell a log's text matched (kb.records.verdict.decide): the same in `kb match`,
in the triage page (kbVerdict in kb-verdict.js) and on the shared vectors, tests/vectors/verdict.json
(run in kb-verdict.js under node by tests/test_twins_node.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from browser import serve
from conftest import ROOT
from kb.records import verdict

DATA = json.loads((ROOT / "tests" / "vectors" / "verdict.json").read_text(encoding="utf-8"))
VECTORS = DATA["vectors"]
LOGS = ROOT / "tests" / "corpus" / "logs"


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_verdict_vectors(vector):
    got = verdict.decide(vector["cell"], vector["facts"], vector["specific"], matched=vector.get("matched", []))
    assert got == (vector["verdict"], vector["why"])


def test_vectors_cover_every_verdict_and_generic_lines():
    assert {v["verdict"] for v in VECTORS} == set(verdict.MATCH_VERDICTS)
    assert {v["verdict"] for v in VECTORS if not v["specific"]} >= {"applies", "unknown", "ruled-out"}


def test_rank_order():
    hits = DATA["rank"]["hits"]
    got = sorted(hits, key=lambda h: verdict.rank_key(h["verdict"], h["specific"], h["score"], h["entry"],
                                                      tied=tuple(h.get("tied", (0, 0)))))
    assert [h["entry"] for h in got] == DATA["rank"]["order"]


def test_tie_counts_the_raising_and_triggering_packages_the_log_shows():
    cell = {"components": [{"package": "vllm", "role": "triggers"}, {"package": "torch", "role": "raises"},
                           {"package": "cuda-toolkit", "role": "involved"}]}
    assert verdict.tie(cell, {"packages": {}, "lines": {}}) == (0, 2)
    # a version banner and a traceback frame both show a package; an involved one never counts
    shown = {"packages": {"torch": "2.7.0"}, "lines": {"packages.torch": 1, "frames.vllm": 9, "frames.cuda-toolkit": 3}}
    assert verdict.tie(cell, shown) == (-2, 0)


def test_a_generic_line_never_applies_without_an_architecture():
    cell = {"architectures": ["sm_120"], "components": [{"package": "vllm", "affected": None, "fixed_in": None}]}
    facts = {"gpus": None, "packages": {"vllm": "0.11.0"}, "lines": {"packages.vllm": 1}}
    assert verdict.decide(cell, facts, specific=False)[0] == "unknown"


@pytest.mark.slow
def test_scope_is_what_the_record_says():
    from kb.records import lint

    cells = {c.id: c for c in lint.check([ROOT / "kb" / "entries"]).cells}
    cell = cells["vllm-vit-fa4-sm100-kernel-asserts-on-sm120"].entry
    got = verdict.scope(cell)
    assert got["architectures"] == list(cell.hardware.architectures)
    assert [(c["package"], c["affected"], c["fixed_in"]) for c in got["components"]] == \
        [(c.package, c.affected, c.fixed_in) for c in cell.components]


def _kb_match(path, *args):
    done = subprocess.run([sys.executable, "-m", "kb.cli", "match", *args, str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_kb_match_names_the_line_that_rules_a_cell_out():
    """A V100 log printing a generic line: the cell stays listed, ruled out by the log's SM_700."""
    hits = json.loads(_kb_match(LOGS / "005-neg-v100-thrust-misaligned-sm700.log", "--json"))
    assert hits and all(h["verdict"] == "ruled-out" for h in hits)
    assert hits[0]["why"].startswith("line 1 shows sm_70; the entry covers sm_120")
    assert hits[0]["generic_only"] is True
    text = _kb_match(LOGS / "005-neg-v100-thrust-misaligned-sm700.log", "--site-url", "https://kb.example/")
    # The log's GPU is outside the index: said first (verdict.out_of_scope), then the ruled-out hits.
    assert text.splitlines()[:2] == ["note: this index covers sm_120/sm_121; your GPU is sm_70", ""]
    assert "] ruled-out, score " in text.splitlines()[2]
    assert f"   https://kb.example/{hits[0]['url']}" in text
    assert "   Text matches, ruled out: line 1 shows sm_70; the entry covers sm_120" in text


def test_triage_page_shows_each_cells_verdict(live_site, page):
    log = (LOGS / "005-neg-v100-thrust-misaligned-sm700.log").read_text(encoding="utf-8")
    expected = json.loads(_kb_match(LOGS / "005-neg-v100-thrust-misaligned-sm700.log", "--json"))
    with serve(live_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", log)
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results]")
        shown = page.locator(".kb-triage__verdict").all_inner_texts()
    assert shown == [f"{verdict.MATCH_TITLES[h['verdict']]}: {h['why']}" for h in expected]


# --- the property: "fixed" needs a release that holds the fix (issue 33 item 2) ------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from packaging.version import Version  # noqa: E402

_VERSIONS = st.builds(lambda a, b, c: f"{a}.{b}.{c}", st.integers(0, 3), st.integers(0, 3), st.integers(0, 3))
_LABELS = st.sampled_from(["", "+cu126", "+cu128"])
_SPANS = st.one_of(st.none(), _VERSIONS.map(lambda v: "==" + v), _VERSIONS.map(lambda v: "<" + v),
                   _VERSIONS.map(lambda v: ">=" + v), st.tuples(_VERSIONS, _VERSIONS).map(lambda p: f">={p[0]},<{p[1]}"))


@st.composite
def _components(draw):
    span, fixed_in = draw(_SPANS), draw(st.one_of(st.none(), _VERSIONS))
    seen = draw(st.booleans()) and span is not None
    if span is None and fixed_in is None:
        fixed_in = draw(_VERSIONS)
    return {"package": "torch", "role": draw(st.sampled_from(["raises", "triggers", "involved", "unaffected"])),
            "affected": None if seen else span, "seen_failing": span if seen else None, "fixed_in": fixed_in,
            "builds": draw(st.sampled_from([[], ["+cu126"]]))}


@settings(max_examples=400, deadline=None)
@given(component=_components(), installed=_VERSIONS, label=_LABELS, gpu=st.sampled_from([None, "12.0", "9.0"]),
       decisive=st.booleans())
def test_no_verdict_says_fixed_without_a_fix_at_or_below_the_version(component, installed, label, gpu, decisive):
    cell = {"architectures": ["sm_120"], "components": [component],
            "decisive": [{"text": "line", "quote": "line"}] if decisive else [],
            "trigger": None}
    facts = {"gpus": None if gpu is None else [{"name": None, "compute_capability": gpu}],
             "packages": {"torch": installed + label}, "lines": {}}
    for got, why in (verdict.decide(cell, facts, True, matched=["line"]), verdict.on_stack(cell, facts)):
        if got == "fixed":
            assert component["fixed_in"] and Version(installed) >= Version(component["fixed_in"]), why
            assert component["role"] != "unaffected", why


@pytest.mark.slow
def test_kb_match_applies_on_torchs_own_warning(tmp_path):
    """Issue 33 item 1: the warning proves the build lacks sm_120; no torch version is needed.
    The lines as torch/cuda/__init__.py prints them (pytorch#150733)."""
    log = tmp_path / "torch.log"
    log.write_text("torch/cuda/__init__.py:230: UserWarning:\n"
                   "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
                   "installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 "
                   "sm_80 sm_86 sm_90.\n", encoding="utf-8")
    hit = json.loads(_kb_match(log, "--json"))[0]
    assert hit["entry"] == "torch-sm120-not-compatible-pytorch-install"
    assert hit["verdict"] == "applies"
    assert hit["why"].endswith("the line \u201cwith CUDA capability sm_120 is not compatible with the current PyTorch "
                               "installation.\u201d proves the failure by itself, whatever versions the log shows")


@pytest.mark.slow
def test_kb_match_names_a_gpu_the_index_does_not_cover(tmp_path):
    """ux-review-2026-12-05 S2-9/S2-10: an RTX 4090's log and the corpus's H100 log are told the index
    covers sm_120/sm_121 before anything else (verdict.out_of_scope)."""
    log = tmp_path / "rtx4090.log"
    log.write_text("|   0  NVIDIA GeForce RTX 4090        On  |   00000000:01:00.0 Off |                  N/A |\n"
                   "RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
                   encoding="utf-8")
    first = _kb_match(log, "--site-url", "https://kb.example/").splitlines()[0]
    assert first == "note: this index covers sm_120/sm_121; your GPU is NVIDIA GeForce RTX 4090 (sm_89)"
    done = subprocess.run([sys.executable, "-m", "kb.cli", "match", str(LOGS / "006-neg-h100-turbomind-misaligned.log")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 1 and done.stdout.splitlines()[:2] == [
        "note: this index covers sm_120/sm_121; your GPU is NVIDIA H100 80GB HBM3 (sm_90)",
        "no known failure matches this log"]
