"""The header search box forgives what people paste: log prefixes, other numbers, a cut string,
typos; says where to go when nothing fits; and works from the keyboard (issue #15, items 7, 8).

Browser tests in Debian's Chromium against the live site; `bench/search_hits.py` measures the
same over every literal string."""

from __future__ import annotations

import html
import importlib.util
import json
import re
from urllib.parse import unquote

import pytest

from browser import search, serve
from conftest import ROOT, builds_site, checked_site
from kb.records.catalog import string_url
from kb.records.facets import LIFECYCLE, STATUS_NAMES
from kb.site import search as kb_search


@pytest.fixture(scope="module")
def site():
    return checked_site(ROOT / "kb" / "entries")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The catalog of 300 synthetic cells (bench/synth.py): more literal strings than one file holds."""
    spec = importlib.util.spec_from_file_location("kb_bench_synth", ROOT / "bench" / "synth.py")
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    folder = tmp_path_factory.mktemp("synth") / "entries"
    synth.generate(300, folder, 7)
    return checked_site(folder)


def url(site, cell_id: str) -> str:
    return "/" + site.url(site.by_id[cell_id])


PASTED = [
    ("(EngineCore_DP0 pid=2211) ", "RuntimeError: Plan index 13 is invalid",
     "flashinfer-bmm-fp8-cudnn-plan-index-invalid-gb10"),
    ("[rank0]: ", "RuntimeError: No supported CUDA architectures found for major versions [10].",
     "flashinfer-jit-gb10-moe-utils-major-version-filter"),
    ("(RayWorkerWrapper pid=4121, ip=10.0.0.2) ",
     "ValueError: TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). Please use a different backend.",
     "sglang-trtllm-mha-backend-sm100-only-sm120"),
    ("ERROR 12-01 10:02:11 [core.py:710] ",
     "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376",
     "mla-decode-fp8-kv-triton-shared-memory"),
    # Triton always appends its hint, which only the fused-MoE entry's literal assembled from source
    # holds (with 147456): the numbers the paste repeats decide (issue 33 item 5).
    ("(EngineCore_DP0 pid=2211) ERROR 12-01 10:02:11 [core.py:866] ",
     "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376. "
     "Reducing block sizes or `num_stages` may help.", "mla-decode-fp8-kv-triton-shared-memory"),
    ("", "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376. "
         "Reducing block sizes or `num_stages` may help.", "mla-decode-fp8-kv-triton-shared-memory"),
    ("[2026-04-06 13:48:43 PP3] ", "Parameter lm_head.weight_scale not found in params_dict",
     "sglang-fp8-lm-head-weight-scale-repetition"),
    ("NVRM: Xid (PCI:0000:01:00): 13, pid=2211, name=python3, ",
     "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address", "xid13-fp8-cudnn-autotune-sm120"),
    ("", "ptxas /tmp/tmpxft_0002f1c4_00000000-7_quantization.compute_120.ptx, line 20112; error   : "
         "Instruction 'cvt with .e2m1x2' not supported on .target 'sm_120'",
     "flashinfer-aot-cvt-e2m1x2-not-supported-sm120"),
    ("", "ptxas /tmp/tmpxft_00001a2b_00000000-6_mmq-instance-mxfp4.ptx, line 99; error   : "
         "Instruction 'mma with block scale' not supported on .target 'sm_121'",
     "llama-cpp-mxfp4-mma-block-scale-plain-sm120-target"),
]


@pytest.mark.parametrize("prefix,line,cell_id", PASTED, ids=[p[0].strip() or p[1][:20] for p in PASTED])
def test_a_pasted_log_line_finds_its_cell(live_site, page, site, prefix, line, cell_id):
    with serve(live_site) as base:
        page.goto(base + "about/")
        assert search(page, prefix + line)[:1] == [url(site, cell_id)]


@pytest.mark.parametrize("query,cell_id", [
    ("RuntimeError: Plan index 7 is invalid", "flashinfer-bmm-fp8-cudnn-plan-index-invalid-gb10"),
    # two entries print this wording with other sizes: a size neither holds lands on one of them,
    # a size one holds on that one
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 101376",
     ("mla-decode-fp8-kv-triton-shared-memory", "sglang-extend-attention-mla-hopper-tiles-smem-106496-sm120")),
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 106496, Hardware limit: 101376",
     "sglang-extend-attention-mla-hopper-tiles-smem-106496-sm120"),
    ("OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376. Reducing block sizes",
     "mla-decode-fp8-kv-triton-shared-memory"),
    ("Error: kernel '@kernels::@kernel_cutlass_kernel_flashinferfused_moecute_dslblackwell_sm12xmoe_dynamic_"
     "kernelMoEDynamicKernel_...' launch shared memory exceeds current GPU arch sm_120a allowed. "
     "Allocated: 122880 bytes. Max: 101376 bytes.", "flashinfer-b12x-moe-dynamic-smem-exceeds-sm120a"),
    ("[Autotuner]: Skipped 31 unsupported tactic(s) for trtllm::fused_moe::gemm1",
     "flashinfer-moe-mxfp8-mxfp4-autotune-tma-descriptor-715-sm120"),
    ("No compiled cutlass_scaled_mm for CUDA device capability: 121. Required capability: 90 or 100",
     "vllm-cutlass-moe-mm-no-compiled-sm120"),
    ("mm_fp4 backend cutlass allocates 68 MiB per call", "cutlass-fp4-gemm-per-call-workspace"),
])
def test_other_numbers_still_find_the_cell(live_site, page, site, query, cell_id):
    wanted = [url(site, c) for c in ((cell_id,) if isinstance(cell_id, str) else cell_id)]
    with serve(live_site) as base:
        page.goto(base + "about/")
        first = search(page, query)[:1]
        assert len(first) == 1 and first[0] in wanted, (first, wanted)


def test_typos_land_where_the_right_spelling_lands(live_site, page, site):
    shared = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    assert len(site.owners[shared]) > 1  # the page that tells its cells apart
    with serve(live_site) as base:
        page.goto(base + "about/")
        spelled = search(page, "no kernel image is available")[:1]
        assert spelled == ["/" + string_url(shared)]
        assert search(page, "no kernal image is availble")[:1] == spelled
        # two cells print Triton's shared-memory OutOfResources; the Required size tells them apart
        for cell_id, size in (("mla-decode-fp8-kv-triton-shared-memory", "102400"),
                              ("sglang-fused-moe-default-config-smem-147456-sm12x", "147456")):
            spelled = search(page, f"OutOfResources shared memory Required: {size}")[:1]
            assert spelled == [url(site, cell_id)]
            assert search(page, f"OutOfResorces shared memroy Requird: {size}")[:1] == spelled


def test_major_versions_picks_the_cell_whose_literal_has_that_number(live_site, page, site):
    twelve = [url(site, "flashinfer-jit-sm12x-arch-dropped-cuda-below-12-9")]
    ten = [url(site, "flashinfer-jit-gb10-moe-utils-major-version-filter")]
    with serve(live_site) as base:
        page.goto(base + "about/")
        assert search(page, "major versions [12]")[:1] == twelve
        assert search(page, "major versions [10]")[:1] == ten
        # the [12] cell's literal has no "RuntimeError: " (the [10] cell's has), yet its number decides
        assert search(page, "RuntimeError: No supported CUDA architectures found for major versions [12]")[:1] == twelve
        assert search(page, "No supported CUDA architectures found for major versions [10]")[:1] == ten
        assert search(page, "major version [12]")[:1] == twelve


def test_a_partial_string_finds_its_cell(live_site, page, site):
    with serve(live_site) as base:
        page.goto(base + "about/")
        assert search(page, "launch shared memory exceeds current GPU ar")[:1] == [
            url(site, "flashinfer-b12x-moe-dynamic-smem-exceeds-sm120a")]
        assert search(page, "ed to initialize the TMA descriptor")[:1] == [
            url(site, "flashinfer-moe-mxfp8-mxfp4-autotune-tma-descriptor-715-sm120")]
        assert search(page, "get device capability: SM 12.x requires CUDA >= 12")[:1] == [
            url(site, "flashinfer-jit-sm12x-arch-dropped-cuda-below-12-9")]
        assert search(page, "ackend for prefill is only supported on Blackwell GPUs (SM1")[:1] == [
            url(site, "sglang-trtllm-mha-backend-sm100-only-sm120")]


def test_no_results_links_to_triage_with_the_text_in_the_fragment(live_site, page):
    query = "zzqx wibble: frobnicate & ünïcödé"
    with serve(live_site) as base:
        page.goto(base + "about/")
        assert search(page, query) == []
        link = page.locator(".kb-search__status a.kb-search__triage")
        href = link.get_attribute("href")
        assert "?" not in href  # nothing a server would log
        assert href.startswith(base + "triage/#log=")
        assert unquote(href.split("#log=", 1)[1]) == query
        link.click()
        page.wait_for_selector("#kb-triage[data-results]")
        assert page.input_value("#kb-triage-log") == query
        assert page.evaluate("location.hash") == ""  # read once, then taken out of the address
        assert page.get_attribute("#kb-triage", "data-results") == "[]"


def test_enter_opens_the_first_result_and_arrows_move(live_site, page, site):
    shared_memory = {url(site, entry) for entry in ("mla-decode-fp8-kv-triton-shared-memory",
                                                    "sglang-fused-moe-default-config-smem-147456-sm12x")}
    with serve(live_site) as base:
        page.goto(base + "about/")
        results = search(page, "shared memory")
        # Which of the many pages on the limit ranks first is Pagefind's to weigh; that the list holds them is ours.
        assert len(results) >= 3 and shared_memory & set(results)
        want = results[0]
        box = page.locator("#kb-search-input")
        box.press("ArrowDown")
        box.press("ArrowDown")
        options = page.locator(".kb-search__results li")
        assert options.nth(1).get_attribute("aria-selected") == "true"
        assert options.nth(0).get_attribute("aria-selected") == "false"
        assert box.get_attribute("aria-activedescendant") == options.nth(1).get_attribute("id")
        box.press("ArrowDown")
        box.press("ArrowUp")
        assert options.nth(1).get_attribute("aria-selected") == "true"
        box.press("Enter")
        page.wait_for_url(base.rstrip("/") + results[1])

        page.goto(base + "about/")
        search(page, "shared memory")
        page.locator("#kb-search-input").press("Enter")
        page.wait_for_url(base.rstrip("/") + want)


def test_enter_right_after_typing_opens_the_first_result(live_site, page, site):
    with serve(live_site) as base:
        page.goto(base + "about/")
        box = page.locator("#kb-search-input")
        box.fill("RuntimeError: Plan index 21 is invalid")
        box.press("Enter")  # before the results are there
        page.wait_for_url(base.rstrip("/") + url(site, "flashinfer-bmm-fp8-cudnn-plan-index-invalid-gb10"))


def test_escape_closes_the_results_and_keeps_the_text(live_site, page):
    with serve(live_site) as base:
        page.goto(base + "about/")
        assert search(page, "shared memory")
        box = page.locator("#kb-search-input")
        box.press("Escape")
        assert page.locator(".kb-search__results li").count() == 0
        assert page.locator(".kb-search__status").inner_text() == ""
        assert box.input_value() == "shared memory"
        assert box.get_attribute("aria-expanded") == "false"


def test_slash_focuses_the_search_box_but_not_inside_a_field(live_site, page):
    with serve(live_site) as base:
        page.goto(base + "triage/")
        page.locator("body").click(position={"x": 5, "y": 300})
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.id") == "kb-search-input"
        assert page.input_value("#kb-search-input") == ""  # the slash is not typed
        page.locator("#kb-triage-log").click()
        page.keyboard.type("a/b")
        assert page.evaluate("document.activeElement.id") == "kb-triage-log"
        assert page.input_value("#kb-triage-log") == "a/b"


def _ring(page) -> dict:
    return page.evaluate("""() => {
      const s = getComputedStyle(document.getElementById('kb-search-input'));
      return {style: s.outlineStyle, width: parseFloat(s.outlineWidth), color: s.outlineColor, shadow: s.boxShadow,
              header: getComputedStyle(document.getElementById('kb-search')).backgroundColor};
    }""")


def test_the_focused_search_box_shows_a_ring_that_stands_out(live_site, page):
    with serve(live_site) as base:
        page.goto(base + "about/")
        before = _ring(page)
        page.focus("#kb-search-input")
        after = _ring(page)
    assert before["style"] == "none" or before["width"] == 0
    # Chromium's own ring ("auto", thin, dark blue) all but vanishes on the header's colour
    assert after["style"] not in ("none", "auto") and after["width"] >= 2, after
    assert after["color"] != after["header"], after  # not the header's own colour
    assert after["shadow"] != "none", after


def test_literals_json_holds_every_string_once_with_its_page_and_filters(live_site, site):
    data = json.loads((live_site / "search" / "literals.json").read_text(encoding="utf-8"))
    assert data["shards"] == 1  # a small index is one file, every string in it once
    shard = json.loads((live_site / "search" / "literals" / "0.json").read_text(encoding="utf-8"))
    owners = {}
    for number, p, text, *_ in shard["literals"]:
        assert text not in owners, text
        entry = shard["pages"][str(p)]
        owners[text] = entry["url"]
        page = (live_site / entry["url"] / "index.html").read_text(encoding="utf-8")
        filters = sorted({html.unescape(f) for f in re.findall(r'data-pagefind-filter="([^"]+)"', page)})
        # The page's URL is its identity in both (kb-search.js counts a page found by both once).
        assert f"page:{entry['url']}" in filters, entry["url"]
        filters = [f for f in filters if not f.startswith("page:")]
        assert sorted(data["filters"][i] for i in entry["filters"]) == filters, entry["url"]  # as Pagefind has them
        h1 = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S).group(1)
        assert html.unescape(h1) == entry["title"]
    for text, cells in site.owners.items():
        assert owners[text] == (string_url(text) if len(cells) > 1 else site.url(cells[0])), text
    assert data["normalise"][: len(kb_search.normalise.RULES)] == kb_search.normalise.export()


@pytest.mark.slow
def test_many_literals_are_sharded_by_word_and_a_query_finds_each_in_the_shards_it_fetches(synthetic):
    """Past one small file, a literal is filed under each of its uncommon words (or the pair key
    of its words when all are common), and the shards the search box fetches for the literal
    itself (its longest uncommon words, or its pair key) hold it."""
    site = synthetic
    files = kb_search.literal_files(site)
    head = json.loads(files["search/literals.json"])
    assert head["shards"] > 1
    shards = [json.loads(files[f"search/literals/{n}.json"]) for n in range(head["shards"])]
    common = set(head["common"])
    numbered = {}
    for n, shard in enumerate(shards):
        for number, p, text, *_ in shard["literals"]:
            assert numbered.setdefault(number, text) == text
            assert shard["pages"][str(p)]["url"]
    assert len(numbered) == sum(len(set(s.text for s in c.entry.signatures)) for c in site.cells) - sum(
        len(cells) - 1 for cells in site.owners.values())
    for number, text in numbered.items():
        words = kb_search.words_of(text)
        rare = sorted({w for w in words if w not in common}, key=lambda w: (-len(w), w))[:kb_search.KEYS]
        keys = rare or [kb_search.pair_key(words)]
        fetched = {kb_search.shard_of(k, head["shards"]) for k in keys}
        assert all(any(item[0] == number for item in shards[k]["literals"]) for k in fetched), text
    sizes = sorted(len(files[f"search/literals/{n}.json"]) for n in range(head["shards"]))
    assert sizes[len(sizes) // 2] < 4 * kb_search.SHARD_BYTES


def test_python_mirror_of_the_search_forms_strips_what_varies():
    normal, masked = kb_search.comparable(
        "NVRM: Xid (PCI:0000:01:00): 13, pid=2211, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): "
        "Out Of Range Address")
    assert normal == "graphics sm warp exception on (gpc 0, tpc 1, sm 0): out of range address"
    assert kb_search.comparable("[rank0]: (EngineCore_DP0 pid=2211) RuntimeError: Plan index 13 is invalid") == (
        "runtimeerror: plan index 13 is invalid", "runtimeerror: plan index 0 is invalid")
    assert kb_search.comparable("ptxas /tmp/tmpxft_0002f1c4_00000000-7_q.compute_120.ptx, line 9")[0] == (
        "ptxas /tmp/tmpxft_q.sm_120.ptx, line n")


@pytest.fixture(scope="module")
@builds_site
def synthetic_site(synthetic, tmp_path_factory):
    from conftest import _build

    folder = synthetic.cells[0].path.parent
    return _build(folder, tmp_path_factory.mktemp("synth-site") / "site")


def test_a_sharded_index_fetches_a_few_shards_and_lands_exact_typo_and_cut_searches(synthetic, synthetic_site, page):
    rng = __import__("random").Random(3)
    cells = rng.sample(synthetic.cells, 4)
    with serve(synthetic_site) as base:
        fetched = []
        page.on("request", lambda request: fetched.append(request.url))
        page.goto(base)
        for cell in cells:
            text = cell.entry.signatures[0].text
            words = text.split()
            longest = max(range(len(words)), key=lambda i: len(words[i]))
            typo = words[:]
            typo[longest] = typo[longest][:2] + typo[longest][3:]  # a letter dropped
            assert unquote(search(page, text)[0]).endswith("/" + synthetic.url(cell)), text
            # Synthetic strings share much (a cut or changed one may fit another cell as well):
            # the right page among the first three.
            for query in (" ".join(typo), text[: int(len(text) * 0.7)]):
                found = [unquote(link) for link in search(page, query)[:3]]
                assert any(link.endswith("/" + synthetic.url(cell)) for link in found), (query, text, found)
        shards = {u for u in fetched if "/search/literals/" in u}
        head = json.loads((synthetic_site / "search" / "literals.json").read_text(encoding="utf-8"))
        assert head["shards"] > 8
        assert 0 < len(shards) <= 12 * kb_search.KEYS < head["shards"]  # a few shards per search, not all


def test_filter_menus_are_full_from_the_start_and_a_plain_search_fetches_no_filter_file(live_site, page, site):
    """The filter menus are written into the page at build time (every status there before any
    fetch); Pagefind's filter files, which list every page of each value, are loaded only when a
    filter is chosen, and then the chosen filter narrows the results."""
    cell = site.by_id["cutlass-fp4-gemm-per-call-workspace"]
    with serve(live_site) as base:
        fetched = []
        page.on("request", lambda request: fetched.append(request.url))
        page.goto(base)
        menu = page.locator("select[data-filter=status]")
        names = menu.locator("option").all_inner_texts()
        assert names[1:] == [STATUS_NAMES[s] for s in LIFECYCLE if s in {c.entry.status.state for c in site.cells}]
        assert search(page, cell.entry.signatures[0].text)
        menu.focus()
        assert not [u for u in fetched if "pf_filter" in u]
        other = next(n for n in names[1:] if n != STATUS_NAMES[cell.entry.status.state])
        menu.select_option(other)
        page.wait_for_function(
            "q => document.getElementById('kb-search').getAttribute('data-done-query') === q",
            arg=cell.entry.signatures[0].text)
        assert not any(unquote(h).endswith("/" + site.url(cell)) for h in
                       [a.get_attribute("href") for a in page.query_selector_all(".kb-search__link")])


def test_an_exact_literal_is_answered_without_loading_pagefind(live_site, page, site):
    """An error string as printed is answered by the literal strings alone: none of Pagefind's
    files is fetched. Words that are no literal string load Pagefind, which searches page text."""
    cell = site.by_id["cutlass-fp4-gemm-per-call-workspace"]
    with serve(live_site) as base:
        fetched = []
        page.on("request", lambda request: fetched.append(request.url))
        page.goto(base)
        assert search(page, cell.entry.signatures[0].text)[:1] == [url(site, cell.id)]
        assert not [u for u in fetched if "/pagefind/" in u]
        assert url(site, cell.id) in search(page, "private workspace dozens decode")
        assert [u for u in fetched if u.endswith("/pagefind/pagefind.js")]


def test_a_letter_beyond_ascii_stays_in_its_word():
    """The search box's words (search.words_of, kb-search.js tokens) are runs of letters and digits of
    any script: "ünïcödé" is one word, never the n, c and d between its accented letters."""
    from kb.site.search import words_of

    assert words_of("zzqx wibble: frobnicate & ünïcödé") == ["zzqx", "wibble", "frobnicate", "ünïcödé"]
    assert words_of("CUDA error: no kernel image") == ["cuda", "error", "no", "kernel", "image"]
