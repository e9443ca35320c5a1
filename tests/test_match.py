"""Log triage: `kb match` and the triage page agree on the shared vectors (all of them under node in
tests/test_twins_node.py, a few through the page here); the engine is safe."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from browser import serve
from conftest import ROOT
from kb.records import lint, patterns
from kb.triage import familyanswer, match, rules

VECTORS = json.loads((ROOT / "tests" / "vectors" / "match.json").read_text(encoding="utf-8"))["vectors"]
KB = [sys.executable, "-m", "kb.cli"]


def kb_match(text: bytes, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(KB + ["match", *args, "-"], input=text, capture_output=True, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def matcher() -> match.Matcher:
    return match.Matcher(rules.rules(lint.check([ROOT / "kb" / "entries"]).cells))


def kb_match_in_process(text: bytes, *args: str) -> tuple[int, str]:
    """`kb match ARGS -` run by kb.cli.main in this interpreter (no start-up per call): exit
    status and stdout. test_kb_match_in_process_prints_what_the_command_prints keeps it honest."""
    from kb.cli import main

    stdout = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text), encoding="utf-8"))
        with contextlib.redirect_stdout(stdout):
            code = main(["match", *args, "-"])
    return code, stdout.getvalue()


@pytest.fixture(scope="module")
def cli_results() -> dict[str, list[dict]]:
    out = {}
    for vector in VECTORS:
        code, stdout = kb_match_in_process("\n".join(vector["log"]).encode("utf-8"), "--json")
        assert code == (0 if vector["first"] else 1), vector["name"]
        out[vector["name"]] = json.loads(stdout)
    return out


@pytest.mark.parametrize("vector", [next(v for v in VECTORS if v["first"]), next(v for v in VECTORS if not v["first"])],
                         ids=["a-match", "no-match"])
def test_kb_match_in_process_prints_what_the_command_prints(vector, cli_results):
    """The vectors run through kb.cli.main in process; the `kb match` command, one vector that
    matches and one that does not, prints the same JSON with the same exit status."""
    done = kb_match("\n".join(vector["log"]).encode("utf-8"), "--json")
    assert done.returncode == (0 if vector["first"] else 1), done.stderr
    assert json.loads(done.stdout) == cli_results[vector["name"]]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_kb_match_vectors(vector, cli_results):
    got = cli_results[vector["name"]]
    families = [hit for hit in got if hit.get("answer") == "family"]
    found = [hit["entry"] for hit in got if hit.get("answer") != "family"]
    assert (found[0] if found else None) == vector["first"], found
    assert not set(vector["excludes"]) & set(found)
    assert set(vector["includes"]) <= set(found)
    assert [hit["family"] for hit in families] == vector.get("families", [])
    # The family answer (kb.triage.familyanswer) comes alone, or first with every entry after it
    # marked as one that also prints its generic line.
    assert got[:len(families)] == families
    keys = {"entry", "citable_id", "score", "lines", "signature", "url", "verdict", "why", "generic_only"}
    for hit in got:
        if hit.get("answer") == "family":
            assert set(hit) == {"answer", "entry", "family", "title", "url", "lines", "signature", "check", "fix"}
            continue
        assert set(hit) == (keys | {"answer"} if families else keys)
        assert hit.get("answer") == (familyanswer.ALSO if families else None) and (hit["generic_only"] or not families)
        assert all(1 <= n <= len(vector["log"]) for n in hit["lines"])


# The triage page end to end on a few vectors (a wrapped message, evidence, a near miss); every
# vector runs in the page's scripts under node (tests/test_twins_node.py).
THROUGH_THE_PAGE = ("wrapped-at-a-space-over-three-indented-lines", "evidence-mla-benchmark-table",
                    "near-miss-wrapped-other-limit")


def test_triage_page_agrees_with_kb_match_end_to_end(live_site, page, cli_results):
    with serve(live_site) as base:
        page.goto(base + "triage/")
        for vector in [v for v in VECTORS if v["name"] in THROUGH_THE_PAGE]:
            page.fill("#kb-triage-log", "\n".join(vector["log"]))
            page.click("#kb-triage-run")
            page.wait_for_selector("#kb-triage[data-results]")
            browser = json.loads(page.get_attribute("#kb-triage", "data-results"))
            expected = cli_results[vector["name"]]
            keys = ("entry", "lines", "signature", "url", "verdict", "why", "generic_only")
            assert [tuple(h[k] for k in keys) for h in browser] == [tuple(h[k] for k in keys) for h in expected], \
                vector["name"]
            assert [h["score"] for h in browser] == pytest.approx([h["score"] for h in expected])
            if expected:
                first = page.locator(".kb-triage__link").first
                assert first.get_attribute("href") == "/" + expected[0]["url"]
                assert page.locator(".kb-triage__results mark").first.text_content().strip() in [l.strip() for l in vector["log"]]
                assert page.locator(".kb-triage__new").is_hidden()


NO_MATCH_LOG = ["INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.29.1",
                "secret-token=abc123 model=/data/private/model",
                "torch version 2.9.1 on NVIDIA RTX PRO 6000 Blackwell",
                "(EngineCore_DP0 pid=2211) ERROR 12-01 10:02:11 [core.py:710] RuntimeError: odd failure at "
                "0x7f00deadbeef in /opt/venv/lib/python3.11/site-packages/foo/bar.py for 4194304 bytes, pid=1234",
                "RuntimeError: something nobody has seen before"]


def test_triage_builds_the_same_new_cell_request_as_kb_match(live_site_with_repo, page):
    """No match: the page shows, editable, exactly the text `kb match` prints, and a link that
    opens the new-cell issue form with its fields filled from the text as the reader edited it."""
    from urllib.parse import parse_qs, urlsplit

    from kb.triage.request import new_failure_text

    with serve(live_site_with_repo) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", "\n".join(NO_MATCH_LOG))
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results]")
        assert page.get_attribute("#kb-triage", "data-results") == "[]"
        text = page.input_value("#kb-triage-issue")
        assert text == new_failure_text("\n".join(NO_MATCH_LOG))
        assert "secret-token" not in text and "/data/private" not in text and "EngineCore_DP0" not in text
        page.fill("#kb-triage-issue", text.replace("(command line, model, flags)", "vllm serve my-model"))
        link = urlsplit(page.get_attribute("#kb-triage-open", "href"))
    assert link._replace(query="").geturl() == "https://github.com/example/blackwell-kb/issues/new"
    fields = parse_qs(link.query)
    assert fields["template"] == ["new-cell.yml"]
    assert fields["error-lines"] == ["RuntimeError: odd failure at {hex} in {path} for {size}, pid={pid}\n"
                                     "RuntimeError: something nobody has seen before"]
    # The last exception line (no traceback in this log): request.title_rank, tests/vectors/request.json.
    assert fields["title"] == ["New failure: RuntimeError: something nobody has seen before"]
    assert fields["environment"] == ["- GPU: NVIDIA RTX PRO 6000 Blackwell\n- torch: 2.9.1\n- vllm: 0.29.1"]
    assert fields["what-you-ran"] == ["vllm serve my-model"]
    form = (ROOT / ".github" / "ISSUE_TEMPLATE" / "new-cell.yml").read_text(encoding="utf-8")
    assert all(f"id: {field}" in form for field in ("error-lines", "environment", "what-you-ran"))


def test_exit_status_and_text_output(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("x\nRuntimeError: Plan index 9 is invalid\n", encoding="utf-8")
    done = subprocess.run(KB + ["match", str(log)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0
    assert "line 2: RuntimeError: Plan index 9 is invalid" in done.stdout
    assert "e/runtimeerror-plan-index-13-is-invalid-" in done.stdout
    assert kb_match(b"nothing here\n").returncode == 1
    assert json.loads(kb_match(b"nothing\n", "--json").stdout) == []
    missing = subprocess.run(KB + ["match", str(tmp_path / "absent.log")], capture_output=True, text=True, cwd=ROOT)
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_triage_takes_a_folder_and_a_stream_without_the_command_line(tmp_path):
    """kb.triage.run.triage is `kb match` without argparse or printing: hits with their citable
    ids, the new-entry request only when nothing hit and one is asked for, and the entries'
    problems instead of any match when they do not check."""
    from kb.records import ids
    from kb.triage.run import triage

    entries = ROOT / "kb" / "entries"
    found = triage(entries, io.BytesIO(b"x\nRuntimeError: Plan index 9 is invalid\n"))
    assert [(hit.entry, hit.lines) for hit in found.hits] == [("flashinfer-bmm-fp8-cudnn-plan-index-invalid-gb10", [2])]
    assert found.citable == ids.for_entries(entries) and found.request is None and found.problems == []
    log = ("\n".join(NO_MATCH_LOG) + "\n").encode()
    missed = triage(entries, io.BytesIO(log))
    assert missed.hits == [] and missed.request.title == "New failure: RuntimeError: something nobody has seen before"
    assert "- GPU: NVIDIA RTX PRO 6000 Blackwell" in missed.request.text
    assert triage(entries, io.BytesIO(log), request=False).request is None
    (tmp_path / "broken.yaml").write_text("title: [\n", encoding="utf-8")
    refused = triage(tmp_path, io.BytesIO(b"RuntimeError: Plan index 9 is invalid\n"))
    assert refused.hits == [] and [p.path.name for p in refused.problems] == ["broken.yaml"]


def test_binary_garbage_and_invalid_utf8(matcher):
    rng = random.Random(7)
    noise = bytes(rng.randrange(256) for _ in range(300_000))
    blob = noise + b"\n\xff\xfeRuntimeError: Plan index 3 is invalid\xc3\x28\n" + noise
    hits = matcher.scan(io.BytesIO(blob))
    plan = [h for h in hits if h.entry == "flashinfer-bmm-fp8-cudnn-plan-index-invalid-gb10"]
    assert plan and plan[0].lines == [noise.count(b"\n") + 2]


def test_streams_large_logs_in_bounded_memory(matcher, tmp_path):
    path = tmp_path / "big.log"
    noise = b"INFO 01-28 06:36:40 [core.py:100] step 12345 tokens=512 throughput=1234.5 tok/s\n"
    repeats = (40 * 1024 * 1024) // len(noise)
    with path.open("wb") as out:
        for _ in range(repeats // 1000):
            out.write(noise * 1000)
        out.write(b"ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'\n")
    tracemalloc.start()
    with path.open("rb") as stream:
        hits = matcher.scan(stream)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [h.entry for h in hits] == ["triton-ptxas-sm121a-gpu-name-not-defined"]
    assert hits[0].lines == [(repeats // 1000) * 1000 + 1]
    assert peak < 4 * match.CHUNK  # a few chunks, not the 40 MB file


def test_a_line_longer_than_the_line_limit(matcher):
    blob = b"a" * (match.MAX_LINE * 2) + b" RuntimeError: Plan index 3 is invalid\nnext\n"
    hits = matcher.scan(io.BytesIO(blob))
    assert [h.entry for h in hits] == ["flashinfer-bmm-fp8-cudnn-plan-index-invalid-gb10"]


@pytest.mark.parametrize("template,error", [
    ("Plan index {number} is invalid", "unknown placeholder {number}"),
    ("Plan index {int}{int} is invalid", "touch"),
    ("Plan {rest} index", "must come last"),
    ("Plan index { is invalid", "lone '{'"),
    ("{int}", "literal text"),
])
def test_malformed_placeholders_are_rejected(template, error):
    with pytest.raises(patterns.PatternError, match=error):
        patterns.compile_signature("x", template)


def test_placeholders_compile_to_fixed_classes():
    compiled = patterns.compile_signature("at /a/b.cuh:30: boom {x}", "at {path} boom {{x}}")
    assert patterns.matches(compiled, "at /usr/lib/x.cuh:37: boom {x}")
    assert not patterns.matches(compiled, "at /usr/lib/x.cuh:37: bang {x}")
    assert compiled.anchor == "boom"


def test_normalisation_keeps_discriminating_numbers():
    from kb.records.normalise import normalise

    assert normalise("(EngineCore_DP0 pid=120) ERROR 01-28 06:36:45 [core.py:946] Hardware limit: 101376") == \
        "hardware limit: 101376"
    assert normalise("torch.cuda.OutOfMemoryError: x") == normalise("torch.OutOfMemoryError: x")
    assert normalise("torch.AcceleratorError: y") == normalise("RuntimeError: y")
    assert normalise("sm120 SM_121a compute_120f") == "sm_120 sm_121 sm_120"
    assert normalise("[  12.5] x [repeated 4x across cluster]") == "x"


def test_no_match_prints_a_new_cell_request_with_only_error_lines(tmp_path):
    """Exit 1 with the text of a new-cell issue: the error-looking lines without log prefixes,
    varying parts as the pattern grammar's placeholders, the GPU and versions; no other line."""
    log = NO_MATCH_LOG[:4] + ["\x1b]0;title\x07RuntimeError: another one"]
    done = kb_match(("\n".join(log) + "\n").encode())
    assert done.returncode == 1
    out = done.stdout.decode()
    assert "RuntimeError: odd failure at {hex} in {path} for {size}, pid={pid}" in out
    assert "- GPU: NVIDIA RTX PRO 6000 Blackwell" in out and "- vllm: 0.29.1" in out and "- torch: 2.9.1" in out
    assert "secret-token" not in out and "EngineCore_DP0" not in out and "/data/private" not in out
    assert "\x1b" not in out and "\x07" not in out  # the log's control characters are shown escaped
    from_file = tmp_path / "log.txt"
    from_file.write_text("\n".join(log) + "\n", encoding="utf-8")
    assert subprocess.run(KB + ["match", str(from_file)], capture_output=True, text=True, cwd=ROOT).stdout == out


def test_kb_match_from_another_folder_finds_the_installed_entries(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("RuntimeError: Plan index 9 is invalid\n", encoding="utf-8")
    kb = Path(sys.executable).with_name("kb")
    done = subprocess.run([str(kb), "match", str(log)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "e/runtimeerror-plan-index-13-is-invalid-" in done.stdout


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    """`kb match log | head`: the pipe closes before kb is done writing; kb stops quietly (exit 141,
    as a tool killed by SIGPIPE), with nothing on stderr. Here the reader (`true`) leaves at once,
    long before kb has read the entries, so every write meets a closed pipe."""
    log = tmp_path / "unknown.log"
    log.write_text("RuntimeError: something nobody indexed\n", encoding="utf-8")
    kb = Path(sys.executable).parent / "kb"
    run = subprocess.run(f"set -o pipefail; '{kb}' match '{log}' | true", shell=True, capture_output=True,
                         timeout=120, executable="/bin/bash")
    assert run.stderr == b"", run.stderr.decode()
    assert run.returncode == 141


def test_capability_numbers_vary_only_within_the_cells_family():
    """Where a cell covers sm_120 and sm_121, its literal's capability number stands for either,
    in the spellings logs print; never for a number the cell does not cover, never for a version."""
    both, one = ("sm_120", "sm_121"), ("sm_120",)
    smem = "launch shared memory exceeds current GPU arch sm_120a allowed."
    widened = patterns.compile_signature(smem, None, both)
    assert patterns.matches(widened, smem.replace("sm_120a", "sm_121a"))
    assert patterns.matches(widened, smem.replace("sm_120a", "SM121"))
    assert not patterns.matches(widened, smem.replace("sm_120a", "sm_100a"))
    assert not patterns.matches(patterns.compile_signature(smem, None, one), smem.replace("sm_120a", "sm_121a"))
    paged = patterns.compile_signature("Paged KV not supported on SM 12.0 in this PR", None, both)
    assert patterns.matches(paged, "Paged KV not supported on SM 12.1 in this PR")
    assert not patterns.matches(paged, "Paged KV not supported on SM 10.0 in this PR")
    cuda = patterns.compile_signature("requires CUDA 12.0 or later", None, both)
    assert not patterns.matches(cuda, "requires CUDA 12.1 or later")  # a version, not a capability
    path = patterns.compile_signature("/flashinfer/0.6.6/120a/generated/", None, both)
    assert patterns.matches(path, "/flashinfer/0.6.6/121a/generated/") and "120a" not in path.words
    assert patterns.compile_signature("sm_120a", None, both).source == "sm_120"  # nothing else to find it by


def test_quote_markers_and_log_prefixes_of_wrapped_lines():
    from kb.triage import wrapped

    assert wrapped.split("> (EngineCore_DP0 pid=1) ERROR 01-28 06:36:45 [core.py:946] Boom  ") == \
        (">", "(enginecore_dp0pid=1)error01-2806:36:45[core.py:946]", "boom")
    assert wrapped.split(">>   tail of it") == (">>", "", "tail of it")
    assert sorted(wrapped.joins(["a", "b", "c"])) == ["a b c", "a bc", "ab c", "abc"]
