"""Evidence: identifiers seen together within a window of lines show a cell that prints no error
(kb.triage.evidence); the schema keeps terms specific and taken from the record (KB058-KB060)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT
from kb.records import lint
from kb.triage import evidence

GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"


@pytest.fixture(scope="module")
def rule_list() -> list[evidence.EvidenceRule]:
    return evidence.rules(lint.check([ROOT / "kb" / "entries"]).cells)


def _found(rule_list, lines: list[str]) -> dict[str, list[int]]:
    found, _ = evidence.scan(rule_list, io.BytesIO("\n".join(lines).encode()))
    return {f.rule.entry: f.lines for f in found}


@pytest.mark.parametrize("sightings,window,lines", [
    ([[1], [3]], 3, [1, 3]),
    ([[1], [4]], 3, None),  # lines 1 and 4 are four lines apart: no window of 3 holds both
    ([[1, 10], [12]], 3, [10, 12]),  # the last sighting of each at the first line that closes a window
    ([[2, 5], [5]], 20, [5]),  # one line may hold several elements
    ([[1], []], 20, None),
    ([], 20, None),
])
def test_first_window(sightings, window, lines):
    assert evidence.first_window(sightings, window) == lines


def test_terms_are_whole_identifiers_and_case_sensitive(rule_list):
    ple = "ple-offload-hang-tp1"
    dump = ["warmup_kernels (a.py:1)", "_request_loop (vllm/v1/ple_offload/connector.py:271)"]
    assert _found(rule_list, dump) == {ple: [1, 2]}
    assert ple not in _found(rule_list, ["my_warmup_kernels (a.py:1)", dump[1]])
    assert ple not in _found(rule_list, ["warmup_kernels2 (a.py:1)", dump[1]])
    assert ple not in _found(rule_list, ["WARMUP_KERNELS (a.py:1)", dump[1]])


def test_window_bounds_the_distance(rule_list):
    topk = "greedy-nondeterminism-persistent-topk"  # window 50
    assert _found(rule_list, ["VLLM_QSA_EXACT_TOPK=1"] + ["x"] * 48 + ["persistent_topk"]) == {topk: [1, 50]}
    assert topk not in _found(rule_list, ["VLLM_QSA_EXACT_TOPK=1"] + ["x"] * 49 + ["persistent_topk"])


def test_numbers_must_fall_in_the_same_window(rule_list):
    mla = "mla-decode-fp8-kv-triton-shared-memory"
    row = "_decode_grouped_att_m_fwd triton_decode_attention.py"
    assert _found(rule_list, [row + " 102400 101376"]) == {mla: [1]}
    assert mla not in _found(rule_list, [row + " 102400 232448"])  # another GPU's limit
    assert mla not in _found(rule_list, [row + " 1102400 101376"])  # numbers are whole words
    assert mla not in _found(rule_list, ["101376"] + ["x"] * 25 + [row + " 102400"])
    assert _found(rule_list, ["101376"] + ["x"] * 5 + [row + " 102400"]) == {mla: [1, 7]}


def test_evidence_weighs_less_than_a_literal_signature(rule_list):
    """A log that prints the MLA error line and also shows another cell's evidence ranks the
    literal cell first."""
    from kb.triage import match, rules

    matcher = match.Matcher(rules.rules(lint.check([ROOT / "kb" / "entries"]).cells))
    log = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, "
           "Hardware limit: 101376\nmm_fp4 fp4_gemm_cutlass_sm120.cu +34 MiB\n").encode()
    hits = matcher.scan(io.BytesIO(log))
    merged = evidence.merge(hits, *evidence.scan(rule_list, io.BytesIO(log)))
    assert [h.entry for h in merged][:2] == ["mla-decode-fp8-kv-triton-shared-memory",
                                             "cutlass-fp4-gemm-per-call-workspace"]
    assert merged[1].score == evidence.EVIDENCE_WEIGHT < rules.EXACT_WEIGHT
    assert merged[1].signature.startswith("evidence: mm_fp4 + ")


def test_long_logs_count_lines_like_kb_match(rule_list):
    noise = "INFO step 12345 tokens=512 throughput=1234.5 tok/s 34 MiB\n" * 200_000
    log = (noise + "mm_fp4 M=8\n  +34 MiB csrc/fp4_gemm_cutlass_sm120.cu\n").encode()
    assert _found(rule_list, [log.decode().rstrip("\n")]) == {"cutlass-fp4-gemm-per-call-workspace": [200_001, 200_002]}


def test_export_is_what_the_page_reads(rule_list):
    exported = evidence.export(rule_list)
    assert {r["entry"] for r in exported} >= {"cutlass-fp4-gemm-per-call-workspace", "ple-offload-hang-tp1",
                                             "greedy-nondeterminism-persistent-topk",
                                             "mla-decode-fp8-kv-triton-shared-memory"}
    assert all(set(r) == {"entry", "terms", "numbers", "words", "window", "label", "weight", "url", "title"}
               for r in exported)
    json.dumps(exported)


def _lint(tmp_path, block: str) -> list[str]:
    text = GOOD.read_text(encoding="utf-8").replace("\nevidence: []\n", "\n" + block, 1)
    path = tmp_path / GOOD.name
    path.write_text(text, encoding="utf-8")
    return [p.format() for p in lint.check([path]).problems]


@pytest.mark.parametrize("block,code,field", [
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, shared]\n", "KB058", "evidence[0].terms[1]"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, Required]\n", "KB058", "evidence[0].terms[1]"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, WARNING_]\n", "KB060", "evidence[0].terms[1]"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd]\n", "KB024", "evidence[0].terms"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, _decode_grouped_att_m_fwd]\n", "KB058", "evidence[0].terms"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, 'a b.c_de']\n", "KB058", "evidence[0].terms[1]"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, OutOfResources]\n    window: 500\n", "KB058",
     "evidence[0].window"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, OutOfResources]\n    numbers: ['{int}{int} x']\n", "KB059",
     "evidence[0].numbers[0]"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, OutOfResources]\n    numbers: ['limit']\n", "KB059",
     "evidence[0].numbers[0]"),
    ("evidence:\n  - terms: [_decode_grouped_att_m_fwd, OutOfResources]\n    numbers: ['65536']\n", "KB060",
     "evidence[0].numbers[0]"),
])
def test_bad_evidence_is_reported_with_file_line_and_field(tmp_path, block, code, field):
    problems = _lint(tmp_path, block)
    assert len(problems) == 1, problems
    assert f": {field}: " in problems[0] and problems[0].endswith(f"[{code}]")
    # The line of the key that holds the bad value (the block starts where `evidence: []` was).
    first = GOOD.read_text(encoding="utf-8").split("\nevidence: []\n")[0].count("\n") + 2
    key = field.rsplit(".", 1)[-1].split("[")[0] + ":"
    wanted = first + next(i for i, line in enumerate(block.split("\n")) if key in line)
    assert f"{GOOD.name}:{wanted}: {field}: " in problems[0], problems[0]


def test_good_evidence_passes(tmp_path):
    assert _lint(tmp_path, "evidence:\n  - terms: [_decode_grouped_att_m_fwd, OutOfResources]\n"
                           "    numbers: ['102400', '{int} bytes']\n    window: 30\n    note: A table.\n") == []


def test_kb_match_reports_evidence_only_cells():
    log = "mm_fp4 M=8 N=34816 K=5120\n  +34 MiB  csrc/fp4_gemm_cutlass_sm120.cu\n"
    done = subprocess.run([sys.executable, "-m", "kb.cli", "match", "-"], input=log, capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[cutlass-fp4-gemm-per-call-workspace] unknown, score 0.6" in done.stdout
    assert "line 2:   +34 MiB  csrc/fp4_gemm_cutlass_sm120.cu" in done.stdout
