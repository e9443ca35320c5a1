"""Public words (issue 24 item 7): what a reader sees on a public page, read in Chromium as
`inner_text` of the body plus the tab title, never holds the index's internal vocabulary: the
"seed document" its first claims came from, "cell" (the records' own word, which on the matrix
collides with a grid's cells), or a record's field path such as `claims[3].as_of`.

Contributor pages, where those words are the subject, are exempt by name (EXEMPT); so are the
redirect stubs, which show nothing.

The words the templates and pages write must be gone. An entry's own prose ("that cell is ...")
is content, fixed in the records: a hit whose words stand in a record is counted apart, and
only the records in PROSE may hold such words (a new one fails; the list only shrinks).
"""

from __future__ import annotations

import functools
import re

import pytest
import yaml

from browser import serve
from conftest import ROOT, _build

ENTRIES = ROOT / "kb" / "entries"

# Records whose own prose still says "cell" or "seed" (issue 24 item 7: content to reword in the
# records themselves). A record may leave this list, never join it.
PROSE = {
    "b12x-moe-workspace-oom-profile-run",
    "cutlass-dsl-4-5-0-mma-block-scale-ptxas-sm12x",
    "cutlass-fp4-gemm-per-call-workspace",
    "deepgemm-jit-cuda-error-invalid-image-gb10-sf-layout",
    "deepgemm-sm120-unknown-recipe-unsupported-architecture",
    "flashinfer-b12x-moe-dynamic-smem-exceeds-sm120a",
    "flashinfer-b12x-nvfp4-moe-illegal-memory-access-512-experts",
    "flashinfer-bmm-fp8-cudnn-plan-index-invalid-gb10",
    "flashinfer-cudnn-fp8-gemm-err-715-gb10-fp8-kv",
    "flashinfer-cudnn-fp8-misaligned-address-sm120",
    "flashinfer-jit-gb10-120a-no-kernel-image-cuda-12-9",
    "flashinfer-mm-fp4-trtllm-backend-capability-120",
    "flashinfer-moe-mxfp8-mxfp4-autotune-tma-descriptor-715-sm120",
    "flashinfer-mxfp8-sm120-gemm-large-tile-init-error-internal",
    "flashinfer-nvfp4-moe-autotune-quant-assertion-sm121",
    "flashinfer-sm120-sparse-mla-no-kernel-for-heads-topk",
    "flashmla-sparse-prefill-sm90a-sm100f-only-sm120",
    "greedy-nondeterminism-persistent-topk",
    "llama-cpp-ggml-no-cuda-arch-750-abort-sm120-only-build",
    "llama-cpp-mxfp4-mma-block-scale-plain-sm120-target",
    "mla-decode-fp8-kv-triton-shared-memory",
    "nccl-2-25-shared-memory-exceeds-sm120-limit",
    "nccl-2-26-2-illegal-memory-access-large-collectives-sm120",
    "sgl-kernel-rmsnorm-no-kernel-image-sm120",
    "sglang-fp8-lm-head-weight-scale-repetition",
    "sglang-kt-minimax-m3-mxfp8-cutlass-moe-assert-sm120",
    "tensorrt-llm-fp8-block-scaling-gemm-unsupported-sm120",
    "tensorrt-llm-fp8-fmha-arch-check-rejects-sm120",
    "torch-scaled-mm-mxfp8-tn-only-cublas-sm120",
    "torch-sm120-not-compatible-pytorch-install",
    "triton-ptxas-sm120-gpu-name-not-defined",
    "triton-ptxas-sm121a-gpu-name-not-defined",
    "vllm-cooperative-topk-cluster-launch-invalid-argument-sm12x",
    "vllm-cutlass-fp8-blockwise-120a-error-internal-gb10",
    "vllm-cutlass-fp8-blockwise-n-not-multiple-128-sm120",
    "vllm-cutlass-moe-mm-no-compiled-sm120",
    "vllm-dsv4-megamoe-fp4-indexer-cache-sm100-only-sm120",
    "vllm-flashinfer-attention-sink-not-supported-sm12x",
    "vllm-no-kernel-image-sm120-build",
    "vllm-no-nvfp4-moe-backend-supports-deployment-sm120",
    "vllm-vit-fa4-sm100-kernel-asserts-on-sm120",
    "vllm-xid13-nvfp4-marlin-sustained-load-sm120",
    "xid13-fp8-cudnn-autotune-sm120",
}

# Pages written for contributors (the record format, the rules, the JSON API's fields), by URL.
EXEMPT = {
    "contributing/": "how to write an entry: the record's fields are the subject",
    "rules/": "the rules of kb check, quoting records and field paths",
    "api/": "the JSON API's documentation, naming its fields",
    "performance/": "the build's measurements, for contributors",
    "doctor/": "kb doctor's reference: the record fields it reads and its JSON output's `cells` key",
}

# (what, pattern): each a word a reader should never meet on a public page.
INTERNAL = [
    ("the seed document", re.compile(r"\bseed\b", re.I)),
    ("'cell' for a failure or an entry", re.compile(r"\bcells?\b", re.I)),
    ("a record's field path", re.compile(r"\b[a-z_]+\[\d+\]\.[a-z_]+\b")),
    ("a record's field name", re.compile(r"\b(as_of|fixed_in|fixed_by|fixed_commit)\b")),
]


def _public_pages(site):
    """URL of every built page a reader can open, less the exempt ones and the redirect stubs."""
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site).as_posix()
        if rel.startswith(("assets/", "pagefind", "search/")):
            continue
        url = rel.removesuffix("index.html")
        if any(url.startswith(e) for e in EXEMPT):  # the page and any below it
            continue
        if 'http-equiv="refresh"' in html.read_text(encoding="utf-8")[:2000]:
            continue
        yield url


def _words(text: str) -> str:
    """Text as words: Markdown's backticks and emphasis marks dropped, white space collapsed."""
    return " ".join(re.sub(r"[`*]", "", text).split())


@functools.cache
def _records() -> str:
    return _words(" ".join(p.read_text(encoding="utf-8") for p in sorted(ENTRIES.glob("*.yaml"))))


def _hits(text: str, records: str = "") -> tuple[list[str], list[str]]:
    """(internal words the page writes, internal words in a record's own prose), each with its
    context. A hit is the record's when it and three words next to it on its line (before, after
    or both) stand in `records` as they are."""
    made, prose = [], []
    for line in text.splitlines():
        for what, pattern in INTERNAL:
            for m in pattern.finditer(line):
                before, after = line[:m.start()], line[m.end():]
                windows = [_words(re.search(r"(?:\S+\s+){%d}\S*$" % k, before).group() + m.group()
                                  + re.match(r"\S*(?:\s+\S+){%d}" % (3 - k), after).group())
                           for k in range(4) if re.search(r"(?:\S+\s+){%d}\S*$" % k, before)
                           and re.match(r"\S*(?:\s+\S+){%d}" % (3 - k), after)]
                around = _words(line[max(0, m.start() - 30):m.end() + 30])
                theirs = records and any(w in records for w in windows)
                (prose if theirs else made).append(f"{what}: {around!r}")
    return made, prose


def _strings(data, key=None):
    """Every string value of a record, less its sources and ids (links and names, not prose)."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _strings(v, k)
    elif isinstance(data, list):
        for v in data:
            yield from _strings(v, key)
    elif isinstance(data, str) and key not in ("source", "id", "url"):
        yield data


def _prose_records() -> set[str]:
    """The records whose text holds an internal word (read from the files)."""
    return {path.stem for path in sorted(ENTRIES.glob("*.yaml"))
            if any(_hits(text)[0] for text in _strings(yaml.safe_load(path.read_text(encoding="utf-8"))))}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return _build(ROOT / "kb" / "entries", tmp_path_factory.mktemp("words") / "site",
                  repo_url="https://github.com/example/blackwell-kb")


def test_the_exempt_pages_exist(site):
    """An exemption names a page that is built (a renamed page must not stay exempt silently)."""
    missing = [url for url in EXEMPT if not (site / url / "index.html").exists()]
    assert missing == []


def test_the_check_finds_each_kind_of_internal_word():
    """The patterns catch what they are for (so the page test below can fail)."""
    for written in ["the index's seed document says", "10 cells, listed by gpu.", "Related cells",
                    "(claims[3].as_of)", "upstream[0].as_of", "the fixed_in version"]:
        assert _hits(written, _records())[0], written
    assert _hits("10 failures seen on RTX 5090; an unpublished report, not yet confirmed by a public link") == ([], [])
    # A record's prose is told apart from the page's words around it.
    made, theirs = _hits("Related: this cell is the misaligned-address fault", "x; this cell is the misaligned-address fault.")
    assert made == [] and len(theirs) == 1
    assert _hits("Related cells", "see the related cells. The")[0]


def test_only_the_listed_records_say_an_internal_word():
    """The records whose prose says an internal word are the listed ones or fewer."""
    assert _prose_records() <= PROSE, sorted(_prose_records() - PROSE)


def test_no_public_page_shows_an_internal_word(site, browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    found, prose = {}, {}
    pages = list(_public_pages(site))
    assert len(pages) > 100  # the cells, pointers and listings are among them
    with serve(site) as base:
        for url in pages:
            page.goto(base + url, wait_until="load")
            hits, theirs = _hits(page.title() + "\n" + page.locator("body").inner_text(), _records())
            if hits:
                found[url] = hits
            if theirs:
                prose[url] = theirs
    context.close()
    report = "\n".join(f"/{url}: {'; '.join(hits[:3])}" + (f" (+{len(hits) - 3})" if len(hits) > 3 else "")
                       for url, hits in found.items())
    assert not found, f"{len(found)} public pages show internal words:\n{report}"
