"""The new-failure request (attack review 2026-12-04, L4; UX review S2-9): secrets are written
{secret}, the title is the error line that says most (request.title_rank; a harmless
DEBUG/INFO/WARNING line never names the issue), a library's WARN line is kept, line numbers are
masked, and a log line cannot start a section of the request or end its code block. kb/triage/request.py and the triage page (kb-request.js) give the
same request for the same log: tests/vectors/request.json, run here in Python and under node
(tests/test_twins_node.py); the page itself in Chromium below."""

from __future__ import annotations

import json
import shutil
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from browser import serve
from conftest import FIXTURES, ROOT, _build, builds_site
from kb.triage import request

VECTORS = json.loads((ROOT / "tests" / "vectors" / "request.json").read_text(encoding="utf-8"))["vectors"]
SECRETS = ["hf_SECRET", "p4ssw0rd", "user:", "sk-proj", "alice@", "corp.example", "eyJhbGci", "ghp_", "github_pat_",
           "0123456789abcdef", "hunter2", "3f2a9c0e", "dGhpcyBp",
           # N6 of the 2026-12-05 review: dict and JSON keys, flags, Cookie and Authorization headers
           "team-key", "abc123def", "Hunter2!", "mysecret123", "tok-9Zq", "two words", "Zx81Kq77Aa", "csrftoken="]


def _lines(text: str) -> list[str]:
    return text.split("```text\n", 1)[1].split("\n```", 1)[0].split("\n")


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_python_request_vectors(vector):
    made = request.new_failure(vector["log"])
    assert made.title == vector["title"]
    assert _lines(made.text) == vector["lines"]
    assert not [s for s in SECRETS if s in made.title + made.text]


def test_each_secret_shape_is_replaced_and_ordinary_text_kept():
    cases = {
        "error at https://bob:s3cr3t@10.0.0.1/x": "error at https://{secret}@10.0.0.1/x",
        "error: Authorization: Basic dXNlcjpwYXNz": "error: Authorization: {secret}",
        "error: Cookie: a=1; sid=2": "error: Cookie: {secret}",
        "error: bad config {'api_key': 'k', \"password\" : \"p\"}": "error: bad config {'api_key': {secret}, \"password\" : {secret}}",
        "error: serve --api-key k1 --token=k2 --port 1": "error: serve --api-key {secret} --token={secret} --port 1",
        # A flag's value is the next word unless that is a flag; a flag named like a secret is not one.
        "error: serve --disable-auth --port 1 --max-num-batched-tokens 8": "error: serve --disable-auth --port 1 "
        "--max-num-batched-tokens 8",
        "error: HF_TOKEN=hf_abcdefghijklmnop": "error: HF_TOKEN={secret}",
        "error: token hf_abcdefghijklmnopqrstu is invalid": "error: token {secret} is invalid",
        "error: mail root@example.org": "error: mail {secret}",
        "error: VLLM_DB_PASS='two words'": "error: VLLM_DB_PASS={secret}",
        # Not secrets: words, numbers, versions, identifiers, hf_transfer.
        "error: hf_transfer is not installed": "error: hf_transfer is not installed",
        "error: torch 2.9.1 needs sm_120": "error: torch 2.9.1 needs sm_120",
        "error in _decode_grouped_att_m_fwd_kernel_for_a_very_long_kernel_name": "error in "
        "_decode_grouped_att_m_fwd_kernel_for_a_very_long_kernel_name",
        # A file path is plain words, never a secret (ux-review-2026-12-05 S2-10: pynccl.py was masked);
        # a token with a slash in it still is.
        'File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/pynccl.py", line 9':
        'File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/pynccl.py", line 9',
        "error in fused_moe_kernel_sm120_fp8_w8a8_block_128": "error in fused_moe_kernel_sm120_fp8_w8a8_block_128",
        "error: key aGVsbG8gd29ybGQgdGhpcy9pcyBhIHRva2Vu/x1Yz": "error: key {secret}",
        "error: id 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08": "error: id {secret}",
    }
    for line, expected in cases.items():
        assert request.redact(line) == expected, line


def test_redaction_is_linear_in_the_line():
    """Each rule is bounded or anchored: 2,000 characters of each rule's worst input take milliseconds."""
    worst = ["a." * 1000, "a@" * 1000, "a:" * 1000, "x_token" * 300, "://" * 700, "Bearer " * 300, "A1" * 1000,
             "a-" * 1000 + "=" * 10,
             "--token " * 300, "-" * 2000, "'key'" * 400, "cookie:" * 300]
    for line in worst:
        started = time.perf_counter()
        for _ in range(10):
            request.error_line("error " + line)
        assert time.perf_counter() - started < 1.0, line[:20]


def test_a_secret_cut_by_the_line_limit_is_still_found():
    line = "RuntimeError: " + "x " * ((request.MAX_LINE_CHARS - 20) // 2) + "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz"
    shown = request.error_line(line)
    assert len(shown) <= request.MAX_LINE_CHARS and "hf_abc" not in shown and "abcdefgh" not in shown


def test_kb_match_prints_the_title_and_the_redacted_request(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "log.txt"
    log.write_text("\n".join(VECTORS[0]["log"]) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "kb.cli", "match", str(log)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 1
    assert f"Title: {VECTORS[0]['title']}" in done.stdout.splitlines()
    assert not [s for s in SECRETS if s in done.stdout]


@pytest.fixture(scope="module")
@builds_site
def small_site(tmp_path_factory):
    entries = tmp_path_factory.mktemp("entries") / "entries"
    entries.mkdir()
    shutil.copy(FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml", entries)
    return _build(entries, tmp_path_factory.mktemp("site") / "site", repo_url="https://github.com/example/kb")


def test_with_an_issue_tracker_the_link_is_titled_with_the_error_line_and_copy_is_offered(small_site, browser):
    """The review's TP=2 log: the title is its RuntimeError line, not vLLM's P2P WARNING, in the
    issue link and the title box; Copy the request works here too."""
    vector = next(v for v in VECTORS if "TP=2" in v["name"])
    made = request.new_failure(vector["log"])
    context = browser.new_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    with serve(small_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", "\n".join(vector["log"]))
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results='[]']")
        assert page.input_value("#kb-triage-title") == vector["title"] == made.title
        assert "Custom allreduce" not in made.title and "NCCL WARN" in made.text
        fields = parse_qs(urlsplit(page.get_attribute("#kb-triage-open", "href")).query)
        assert fields["title"] == [vector["title"]]
        page.click("#kb-triage-copy")
        page.wait_for_function("document.querySelector('.kb-triage__copied').textContent !== ''")
        assert page.evaluate("navigator.clipboard.readText()") == made.title + "\n\n" + made.text
        # The reader's own title goes into the link.
        page.fill("#kb-triage-title", "New failure: NCCL fails on two RTX 5090s")
        fields = parse_qs(urlsplit(page.get_attribute("#kb-triage-open", "href")).query)
        assert fields["title"] == ["New failure: NCCL fails on two RTX 5090s"]
    context.close()


def test_a_heading_typed_into_the_request_does_not_move_text_between_fields(small_site, page):
    """The reader's own edit: a `### Environment ...` line inside the error lines' block is no section."""
    with serve(small_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", "RuntimeError: the first real failure")
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results='[]']")
        text = page.input_value("#kb-triage-issue")
        edited = text.replace("RuntimeError: the first real failure",
                              "RuntimeError: the first real failure\n  ### Environment found in the log\nmore")
        page.fill("#kb-triage-issue", edited)
        fields = parse_qs(urlsplit(page.get_attribute("#kb-triage-open", "href")).query)
    assert fields["error-lines"] == ["RuntimeError: the first real failure\n  ### Environment found in the log\nmore"]
    assert fields["environment"] == ["- GPU: " + request.NO_GPU]
    assert fields["title"] == [request.TITLE_PREFIX + "RuntimeError: the first real failure"]


# --- the second pass of kb match reads bounded lines (L7) -------------------------------------

def test_bounded_lines_cut_long_lines_and_keep_the_next():
    import io

    limit = request.MAX_LINE_CHARS * 4
    stream = io.BytesIO(b"a" * (limit * 3 + 5) + b"\nRuntimeError: next\n" + b"b" * limit + b"\n" + b"c" * (limit + 1))
    lines = list(request.bounded_lines(stream))
    assert lines == ["a" * limit, "RuntimeError: next\n", "b" * limit + "\n", "c" * limit]


def test_kb_match_new_cell_pass_holds_no_whole_huge_line(tmp_path, capsys):
    """A 50 MB log of one line and an error line: the request is made (the error line after the huge
    one is in it) while the largest Python allocation stays far below the line's size."""
    import tracemalloc

    from kb import cli

    log = tmp_path / "one-line.log"
    with open(log, "wb") as out:
        for _ in range(50):
            out.write(b"x" * (1 << 20))
        out.write(b"\nRuntimeError: something nobody has seen before\n")
    tracemalloc.start()
    try:
        code = cli.main(["match", str(log)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out, _ = capsys.readouterr()
    assert code == 1 and "RuntimeError: something nobody has seen before" in out
    # The first pass reads in chunks of its own (about 25 MB at most here); the line whole would be
    # 50 MB as bytes and again as str (the code before this test: 158 MB).
    assert peak < 40 << 20, f"peak {peak:,} bytes for a 50 MiB line"
    with open(log, "rb") as stream:
        tracemalloc.start()
        try:
            made = request.from_stream(stream)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert "RuntimeError: something nobody has seen before" in made.text
    assert peak < 1 << 20, f"the new-cell pass alone: peak {peak:,} bytes"
