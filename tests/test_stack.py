"""The My stack page (issue 22 item 4), in Chromium: a GPU (or architecture) and versions in the
address give every failure's verdict, the same as kb.records.verdict.on_stack gives in Python on
the same facts over all records (the stack vectors run in kbVerdict.stack under node:
tests/test_twins_node.py); the form writes the address and a reload restores it; a hostile
address is shown as text; GPU, architecture and component listings link to the page prefilled."""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode

import pytest
from packaging.specifiers import SpecifierSet

from browser import serve
from conftest import ROOT, checked_site
from kb.records import gpus, verdict
from kb.site import stack
from kb.triage import logfacts

DATA = json.loads((ROOT / "tests" / "vectors" / "verdict.json").read_text(encoding="utf-8"))
SITE = checked_site(ROOT / "kb" / "entries")


def _gpu_facts(value: str) -> list[dict]:
    """The facts the page decides on for `?gpu=value`, derived here from the records and the
    log-facts table: a GPU listing's name and NVIDIA's capability of its model, or an architecture."""
    if value.startswith("sm_"):
        return [{"name": None, "compute_capability": f"{int(value[3:-1])}.{value[-1]}"}]
    name = SITE.facet_index["gpu"][value][0]
    return [{"name": name, "compute_capability": logfacts.model_capability(name)}]


def expected(gpu: str | None, packages: dict[str, str]) -> list[dict]:
    """Every cell's verdict for the stack, as Python decides it, in the page's order."""
    facts = {"gpus": _gpu_facts(gpu) if gpu else None, "packages": packages, "lines": {}}
    out = []
    for cell in SITE.cells:
        decided, why = verdict.on_stack(verdict.scope(cell.entry), facts)
        out.append({"entry": cell.id, "verdict": decided, "why": why})
    return sorted(out, key=lambda h: verdict.rank_key(h["verdict"], True, 0, h["entry"], verdict.STACK_VERDICTS))


def _version_of(package: str) -> str:
    """A version the records' ranges of `package` name (the first bound of the first range)."""
    for cell in SITE.cells:
        for c in cell.entry.components:
            if c.package == package and c.affected:
                return next(iter(SpecifierSet(c.affected))).version
    raise AssertionError(f"no record ranges {package}")


def _results(page) -> list[dict]:
    page.wait_for_selector("#kb-stack[data-results]")
    return json.loads(page.get_attribute("#kb-stack", "data-results"))


def _watch(page) -> list[str]:
    """Script errors and dialogs the page raises, collected as they happen."""
    seen: list[str] = []
    page.on("pageerror", lambda error: seen.append(f"error: {error}"))
    page.on("dialog", lambda dialog: (seen.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    return seen


def test_stack_vectors_in_python():
    assert {v["verdict"] for v in DATA["stack"]} == set(verdict.STACK_VERDICTS)
    for vector in DATA["stack"]:
        assert verdict.on_stack(vector["cell"], vector["facts"]) == (vector["verdict"], vector["why"]), vector["name"]


def _stock_5090(gpu: str = "rtx-5090", **packages) -> dict[str, tuple[str, str]]:
    """Every live cell's (verdict, why) for a stock RTX 5090 stack with these versions (the review's case)."""
    facts = {"gpus": _gpu_facts(gpu), "packages": packages, "lines": {}}
    return {cell.id: verdict.on_stack(verdict.scope(cell.entry), facts) for cell in SITE.cells}


def test_review_cases_on_the_live_records():
    """ux-review-2026-12-05 S1-1, on the records themselves: no "fixed" for a version only outside
    the versions seen failing, a cu126 torch of a later release applies, SGLang failures do not
    apply to a vLLM-only stack, and a stock RTX 5090 with vLLM 0.28.0 is told the trigger."""
    got = _stock_5090(vllm="0.28.0", flashinfer="0.6.16")
    assert got["b12x-moe-workspace-oom-profile-run"] == \
        ("not-known", "vllm 0.28.0 is not known to be affected (only 0.25.1 was seen failing)")
    for sglang in ("sglang-fp8-lm-head-weight-scale-repetition", "sglang-trtllm-mha-backend-sm100-only-sm120"):
        assert got[sglang] == ("when", "only if you use SGLang (your stack does not name it)"), sglang
    mla = got["mla-decode-fp8-kv-triton-shared-memory"]
    assert mla[0] == "when" and mla[1].endswith("applies when you use or pass: an MLA model (Kimi-K2.6, "
                                               "DeepSeek-V2-Lite) with --kv-cache-dtype fp8"), mla
    applies = [i for i, (v, _) in got.items() if v == "applies"]
    # Only entries vLLM (or a package the stack names) raises or triggers, with no trigger recorded.
    for cell_id in applies:
        scope = verdict.scope(SITE.by_id[cell_id].entry)
        assert scope["trigger"] is None
        assert {c["package"] for c in scope["components"] if c["role"] not in verdict.PASSIVE} & {"vllm", "flashinfer"}
    assert len(applies) < 31  # the review counted 31 before roles and triggers
    torch = _stock_5090(torch="2.8.0+cu126")["torch-sm120-not-compatible-pytorch-install"]
    assert torch == ("applies", "your stack has sm_120 (RTX 5090), which the entry covers; "
                                "torch 2.8.0+cu126 is a +cu126 build, which fails at any version")
    assert _stock_5090(torch="2.8.0+cu128")["torch-sm120-not-compatible-pytorch-install"][0] == "not-known"
    assert _stock_5090(torch="2.8.0")["torch-sm120-not-compatible-pytorch-install"][0] == "unknown"


@pytest.mark.slow
def test_stack_data_is_deterministic_and_holds_every_cell():
    first, again = stack.data(SITE), stack.data(checked_site(ROOT / "kb" / "entries"))
    assert first == again
    cells = json.loads(first)["cells"]
    assert [c["id"] for c in cells] == [c.id for c in SITE.cells]
    assert all(c["scope"] == verdict.scope(SITE.by_id[c["id"]].entry) for c in cells)


@pytest.mark.parametrize("gpu, package", [("gb10", "vllm"), ("rtx-5090", "vllm"), ("sm_120", "flashinfer")])
def test_the_page_gives_the_verdicts_python_gives(live_site, page, gpu, package):
    packages = {package: _version_of(package)}
    want = expected(gpu, packages)
    told = {h["verdict"] for h in want}
    # A stack without a serving engine applies nothing outright: its failures apply "when you use" one.
    assert told >= {"unknown", "ruled-out"} and told & {"applies", "when"}, "a stack that tells little apart"
    seen = _watch(page)
    with serve(live_site) as base:
        page.goto(base + "stack/?" + urlencode({"gpu": gpu} | packages))
        got = _results(page)
        # textContent: the ruled-out group is folded (a closed <details>), where inner text is empty.
        shown = page.locator(".kb-stack__verdict").evaluate_all("rows => rows.map(row => row.textContent)")
        headings = page.locator(".kb-stack__group h2").all_inner_texts()
        assert page.locator("#kb-stack-gpu").input_value() == gpu
        assert page.locator(f"#kb-stack-{package}").input_value() == packages[package]
    assert got == want
    assert shown == [f"{stack.TITLES[h['verdict']]}: {h['why']}" for h in want]
    assert headings[0].startswith(("Applies (", "Applies when"))  # what applies first
    assert seen == []


def test_a_version_at_the_fix_shows_fixed(live_site, page):
    fixed = [(cell, c) for cell in SITE.cells for c in cell.entry.components
             if c.fixed_in and "sm_120" in cell.entry.hardware.architectures]
    assert fixed
    cell, component = fixed[0]
    with serve(live_site) as base:
        page.goto(base + "stack/?" + urlencode({"gpu": "sm_120", component.package: component.fixed_in}))
        got = {h["entry"]: h["verdict"] for h in _results(page)}
        row = page.locator(f'li[data-cell="{cell.id}"] .kb-stack__verdict').inner_text()
    assert got[cell.id] == "fixed"
    assert row.startswith("Fixed in your version: ")


def test_another_architecture_applies_no_sm_120_only_cell(live_site, page):
    only_120 = {c.id for c in SITE.cells if c.entry.hardware.architectures == ["sm_120"]}
    assert only_120
    with serve(live_site) as base:
        page.goto(base + "stack/?" + urlencode({"gpu": "gb10", "vllm": _version_of("vllm")}))
        got = {h["entry"]: h["verdict"] for h in _results(page)}
    assert {got[i] for i in only_120} == {"ruled-out"}
    assert "applies" in got.values()


def test_the_form_writes_the_address_and_a_reload_restores_it(live_site, page):
    version = _version_of("vllm")
    with serve(live_site) as base:
        page.goto(base + "stack/")
        page.select_option("#kb-stack-gpu", "rtx-5090")
        page.fill("#kb-stack-vllm", version)
        page.click("#kb-stack-run")
        first = _results(page)
        assert page.evaluate("location.search") == "?" + urlencode({"gpu": "rtx-5090", "vllm": version})
        page.reload()
        again = _results(page)
        assert page.locator("#kb-stack-gpu").input_value() == "rtx-5090"
        assert page.locator("#kb-stack-vllm").input_value() == version
    assert first == again == expected("rtx-5090", {"vllm": version})


def test_a_hostile_address_is_shown_as_text_and_never_run(live_site, page):
    seen = _watch(page)
    hostile = {"gpu": "<script>alert(1)</script>", "vllm": "<img src=x onerror=alert(2)>",
               "<b>x</b>": "1", "flashinfer": "0.6.18"}
    with serve(live_site) as base:
        page.goto(base + "stack/?" + urlencode(hostile))
        got = _results(page)  # the one valid value still decides
        problems = page.locator(".kb-stack__problems li").all_inner_texts()
        markup = page.evaluate("document.querySelector('.kb-stack__problems').innerHTML")
        planted = page.evaluate("document.querySelectorAll('.kb-stack__problems *:not(li), img[src=\"x\"], b').length")
        invalid = page.locator("#kb-stack-vllm").get_attribute("aria-invalid")
    assert got == expected(None, {"flashinfer": "0.6.18"})
    assert any("<script>alert(1)</script>" in p and "No GPU or architecture" in p for p in problems)
    assert any("<img src=x onerror=alert(2)>" in p and "is not a version" in p for p in problems)
    assert any("<b>x</b>" in p and "no field of this page" in p for p in problems)
    assert "<script" not in markup and "&lt;script&gt;" in markup and planted == 0
    assert invalid == "true"
    assert seen == []


def test_nothing_valid_in_the_address_gives_a_message_not_a_crash(live_site, page):
    seen = _watch(page)
    with serve(live_site) as base:
        page.goto(base + "stack/?gpu=nope&gpu=again&vllm=" + "9" * 500)
        # "nope" is read against the GPU table once stack.json is in: the status is final after that.
        page.wait_for_function("document.querySelector('.kb-stack__status').textContent.indexOf('Deciding') < 0")
        status = page.locator(".kb-stack__status").inner_text()
        problems = page.locator(".kb-stack__problems li").all_inner_texts()
        assert page.get_attribute("#kb-stack", "data-results") is None
    assert status == "Pick a GPU or give a version to see the verdicts."
    assert len(problems) == 3 and any("more than once" in p for p in problems)
    assert seen == []


def _stack_link(path) -> str | None:
    found = re.search(r'<p class="kb-stack-link"><a href="([^"]+)"', path.read_text(encoding="utf-8"))
    return found.group(1) if found else None


def test_every_gpu_architecture_and_component_listing_links_to_the_page(live_site):
    page = (live_site / "stack" / "index.html").read_text(encoding="utf-8")
    options = set(re.findall(r'<option value="([^"]+)"', page))
    fields = set(re.findall(r'<input id="kb-stack-[^"]+" name="([^"]+)"', page))
    unfilled = []
    for facet in ("gpu", "architecture", "component"):
        for value, (name, _) in SITE.facet_index[facet].items():
            href = _stack_link(live_site / "by" / facet / value / "index.html")
            assert href is not None and href.startswith("../../../stack/"), (facet, value, href)
            if href == "../../../stack/":
                unfilled.append((facet, name))
                continue
            (key, given), = [part.split("=") for part in href.split("?")[1].split("&")]
            if facet == "component":
                assert key in fields and given == "", href
            else:
                assert key == "gpu" and given in options, href
    # Only a GPU name that says no architecture (no model NVIDIA lists, no sm_ number) links to the
    # page without a choice; a name with a note links to its model ("GB10 (unconfirmed report, ...)").
    assert all(facet == "gpu" and logfacts.model_capability(name) is None and stack.gpu_architecture(name) is None
               for facet, name in unfilled), unfilled
    noted = [v for v, (name, _) in SITE.facet_index["gpu"].items() if name.startswith("GB10 (")]
    assert all(_stack_link(live_site / "by" / "gpu" / v / "index.html").endswith("?gpu=gb10") for v in noted)


@pytest.mark.parametrize("listing, wanted, focused", [("by/gpu/rtx-5090/", "?gpu=rtx-5090", None),
                                                      ("by/architecture/sm-121/", "?gpu=sm_121", None),
                                                      ("by/component/vllm/", "?vllm=", "kb-stack-vllm")])
def test_a_listing_link_opens_the_prefilled_page(live_site, page, listing, wanted, focused):
    with serve(live_site) as base:
        page.goto(base + listing)
        page.locator(".kb-stack-link a").click()
        page.wait_for_url(base + "stack/" + wanted)
        page.wait_for_function("typeof kbVerdict === 'object'")
        if focused:
            page.wait_for_function("id => document.activeElement && document.activeElement.id === id", arg=focused)
            assert page.get_attribute("#kb-stack", "data-results") is None
        else:
            gpu = wanted.split("=")[1]
            assert _results(page) == expected(gpu, {})
            assert page.locator("#kb-stack-gpu").input_value() == gpu


def test_the_page_asks_for_nothing_but_the_sites_own_files(live_site, page):
    """Static files only: every request stays on the site, and the one data file is stack.json."""
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    with serve(live_site) as base:
        page.goto(base + "stack/?" + urlencode({"gpu": "gb10", "vllm": _version_of("vllm")}))
        _results(page)
    assert asked and all(url.startswith(base) for url in asked), [u for u in asked if not u.startswith(base)]
    assert [u for u in asked if u.endswith(".json")] == [base + "stack/stack.json"]


def test_a_release_tag_is_a_version_and_a_nightly_is_explained(live_site, page):
    """ux-review-2026-12-05 S2-9: `v0.28.0` (a GitHub release tag) is read as 0.28.0, as packaging
    reads it; `main` is refused with what to enter for a nightly or a build from main. A shared
    link opens with its results at the top of the viewport, below the sticky header."""
    seen = _watch(page)
    page.set_viewport_size({"width": 1366, "height": 800})
    with serve(live_site) as base:
        page.goto(base + "stack/?" + urlencode({"gpu": "rtx-5090", "vllm": "v0.28.0"}))
        tagged = _results(page)
        problems = page.locator(".kb-stack__problems li").all_inner_texts()
        top = page.evaluate("document.querySelector('.kb-stack__status').getBoundingClientRect().top")
        header = page.evaluate("document.querySelector('.md-header').getBoundingClientRect().bottom")
        page.goto(base + "stack/?" + urlencode({"gpu": "rtx-5090", "vllm": "main"}))
        _results(page)
        refused = page.locator(".kb-stack__problems li").all_inner_texts()
    assert problems == []
    assert header <= top < header + 100, (header, top)
    assert tagged == expected("rtx-5090", {"vllm": "v0.28.0"})
    assert [h["verdict"] for h in tagged] == [h["verdict"] for h in expected("rtx-5090", {"vllm": "0.28.0"})]
    assert len(refused) == 1 and "“main”" in refused[0] and "nightly" in refused[0] \
        and "development version" in refused[0] and "last release" in refused[0], refused
    assert seen == []


@pytest.mark.parametrize("gpu, said", [("rtx-4090", "RTX 4090 (sm_89)"), ("h100", "H100 (sm_90)"),
                                       ("b200", "B200 (sm_100)"), ("rtx-4080", "RTX 4080 (sm_89)")])
def test_a_gpu_the_index_does_not_cover_is_named_so(live_site, page, gpu, said):
    """ux-review-2026-12-05 S2-9: an RTX 4090 (in the menu's other GPUs) or an RTX 4080 (only in the
    address, read against the GPU table) is told the index covers sm_120/sm_121, and every
    failure is ruled out, folded; the shared link opens on the results."""
    seen = _watch(page)
    page.set_viewport_size({"width": 1366, "height": 800})
    with serve(live_site) as base:
        page.goto(base + "stack/?gpu=" + gpu)
        got = _results(page)
        problems = page.locator(".kb-stack__problems li").all_inner_texts()
        folded = page.evaluate("[...document.querySelectorAll('details.kb-stack__group--ruled-out')].map(d => d.open)")
    assert problems[0] == f"This index covers sm_120/sm_121; your GPU is {said}.", problems
    assert {h["verdict"] for h in got} == {"ruled-out"} and len(got) == len(SITE.cells)
    assert folded == [False]
    assert seen == []


def test_every_entry_is_within_the_scope_the_pages_name():
    """gpus.SCOPE is what the out-of-scope sentence says the index covers: every record agrees."""
    assert {a for cell in SITE.cells for a in cell.entry.hardware.architectures} <= set(gpus.SCOPE)


def test_one_cuda_field_gives_the_runtime_and_the_toolkit(live_site, page):
    """ux-review-2026-12-05 S2-9: one "CUDA" field; its version is read for the records' `cuda` and
    `cuda-toolkit` ranges alike."""
    fields = [p for p, _, _ in stack.packages(SITE)]
    assert "cuda" in fields and "cuda-toolkit" not in fields
    with serve(live_site) as base:
        page.goto(base + "stack/?" + urlencode({"gpu": "gb10", "cuda": "12.8"}))
        got = _results(page)
        labels = page.locator(".kb-stack__versions label").all_inner_texts()
    assert got == expected("gb10", {"cuda": "12.8", "cuda-toolkit": "12.8"})
    assert [label for label in labels if "CUDA" in label] == ["CUDA"]
