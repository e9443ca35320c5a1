"""The triage page's answer (issue 24, item 6; UX review S2-9), in Chromium at 1366x900 and 390x844:
each matched failure shows its title (linked to its page), citable id, status in words, verdict
and the card's "Do now" line on the first screen, focus moves to the results heading, a sample
log from the corpus can be tried; a log no entry matches gets a new-failure request titled with
its error line, which a build without an issue tracker offers to copy.

What the page shows is compared with what the Python side computes from the records: `kb match
--json` (verdict, why, citable id), the records' status and kb.site.triage.do_now_text, itself
checked against the "Do now" row of every cell page's card."""

from __future__ import annotations

import html
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from browser import serve
from conftest import ROOT, checked_site
from family_lines import family_only
from kb.records import facets, verdict
from kb.site import triage
from kb.triage import request

VIEWPORTS = [(1366, 900), (390, 844)]
LOGS = ROOT / "tests" / "corpus" / "logs"
CORPUS = yaml.safe_load((ROOT / "tests" / "corpus" / "expected.yaml").read_text(encoding="utf-8"))["logs"]
SAMPLE = ROOT / "site_src" / "assets" / "triage-sample.log"
KB = Path(sys.executable).parent / "kb"
# Logs that give one match each (046, 039, 043: positives of the corpus), and all three pasted as
# one log, which gives three results.
ONE = ["046-flashinfer-cudnn-fp8-err-715-gb10.log", "039-sglang-fused-moe-smem-147456-gb10.log",
       "043-cute-dsl-tcgen05-operror-gb10.log"]
REQUESTS = {v["name"]: v for v in json.loads((ROOT / "tests" / "vectors" / "request.json").read_text(encoding="utf-8"))["vectors"]}
TP2 = REQUESTS["the review's TP=2 log (UX review S2-9, test 2): the exception line, not the P2P warning"]
NCCL = next(v for name, v in REQUESTS.items() if name.startswith("the review's NCCL log (UX review 2026-12-05 S2-10)"))


@pytest.fixture(scope="module")
def cells():
    return checked_site(ROOT / "kb" / "entries")


def _kb_match(log: str) -> list[dict]:
    done = subprocess.run([str(KB), "match", "--json", "-"], input=log, capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _logs() -> dict[str, str]:
    texts = [(LOGS / name).read_text(encoding="utf-8") for name in ONE]
    return {ONE[0]: texts[0], "three corpus logs in one": "\n".join(texts)}


def _card_fix_text(page_html: str) -> str:
    found = re.search(r'<dd class="kb-card__fix">(.*?)</dd>', page_html, re.S)
    assert found, "no Do now row on the page"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).split())


def test_do_now_text_is_what_every_cards_do_now_row_says(live_site, cells):
    """The words the triage page shows are the card's own, for every cell (the card goes on with
    the source, the date and how many more remedies there are)."""
    differ = []
    for cell in cells.cells:
        card = _card_fix_text((live_site / cells.url(cell) / "index.html").read_text(encoding="utf-8"))
        words = triage.do_now_text(cell.entry)
        if not card.startswith(words) or card[len(words):len(words) + 1] not in (",", " ", "."):
            differ.append(f"{cell.id}: card {card!r} vs {words!r}")
    assert differ == []


def test_patterns_json_carries_each_failures_id_status_and_do_now(live_site, cells):
    data = json.loads((live_site / "triage" / "patterns.json").read_text(encoding="utf-8"))
    assert sorted(data["results"]) == sorted(c.id for c in cells.cells)
    for cell in cells.cells:
        shown = data["results"][cell.id]
        assert shown["status_words"] == facets.STATUS_NAMES[cell.entry.status.state]
        assert shown["do_now"] == triage.do_now_text(cell.entry)
        assert shown["id_url"] == f"id/{shown['citable_id']}/"


def _results(page) -> list[dict]:
    return page.evaluate("""() => [...document.querySelectorAll('.kb-triage__hit')].map(li => ({
      title: li.querySelector('.kb-triage__link').textContent,
      href: li.querySelector('.kb-triage__link').getAttribute('href'),
      id: li.querySelector('.kb-id').textContent,
      status: li.querySelector('.kb-status').textContent,
      verdict: li.querySelector('.kb-triage__verdict').textContent,
      do_now: li.querySelector('.kb-triage__do-text').textContent,
      text: li.textContent,
      boxes: ['.kb-triage__link', '.kb-id', '.kb-status', '.kb-triage__verdict', '.kb-triage__do'].map(s => {
        const b = li.querySelector(s).getBoundingClientRect(); return [s, b.top, b.bottom, b.width]; })}))""")


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_each_result_answers_on_the_first_screen(live_site, cells, browser, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    with serve(live_site) as base:
        page.goto(base + "triage/")
        for name, log in _logs().items():
            expected = _kb_match(log)
            assert expected, name
            page.fill("#kb-triage-log", log)
            page.click("#kb-triage-run")
            page.wait_for_selector("#kb-triage[data-results]")
            shown = _results(page)
            assert len(shown) == len(expected), name
            # Focus on the results heading, which is scrolled into view (below Material's header).
            assert page.evaluate("document.activeElement.id") == "kb-triage-results"
            header = page.evaluate("document.querySelector('.md-header').getBoundingClientRect().bottom")
            top = page.evaluate("document.getElementById('kb-triage-results').getBoundingClientRect().top")
            assert header <= top < height, (name, header, top)
            # Every result on a laptop's screen; on a phone, three results with titles of 20 to 40
            # words take more than one screen: there the first one is whole on it.
            on_screen = len(shown) if width >= 1000 else 1
            for k, (hit, got) in enumerate(zip(expected, shown)):
                entry = cells.by_id[hit["entry"]].entry
                assert got["title"] == entry.title
                assert got["href"] == "/" + hit["url"]
                assert got["id"] == hit["citable_id"]
                assert got["status"] == facets.STATUS_NAMES[entry.status.state]
                assert got["verdict"] == f"{verdict.MATCH_TITLES[hit['verdict']]}: {hit['why']}"
                assert got["do_now"] == triage.do_now_text(entry)
                assert not re.search(r"\bscore\b", got["text"]), "a bare score is shown"
                outside = [(s, t, b) for s, t, b, w in got["boxes"] if t < header or b > height or w == 0]
                if k >= on_screen:
                    continue
                assert outside == [], f"{name} at {width}x{height}: {hit['entry']} outside the first screen: {outside}"
            status = page.inner_text(".kb-triage__status")
            assert "cell" not in status.lower() and "failure" in status
    context.close()


def test_the_sample_is_a_positive_corpus_log_and_names_its_source():
    name = next(n for n in CORPUS if (LOGS / n).read_bytes() == SAMPLE.read_bytes())
    assert CORPUS[name]["kind"] == "positive"
    template = (ROOT / "templates" / "pages" / "triage.html").read_text(encoding="utf-8")
    assert f'<a href="{CORPUS[name]["url"]}">{CORPUS[name]["url"]}</a>' in template


@pytest.mark.parametrize("width, height", VIEWPORTS)
def test_try_a_sample_log(live_site, browser, width, height):
    name = next(n for n in CORPUS if (LOGS / n).read_bytes() == SAMPLE.read_bytes())
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    with serve(live_site) as base:
        page.goto(base + "triage/")
        assert page.locator(".kb-triage__sample-source").is_hidden()
        page.click("#kb-triage-sample")
        page.wait_for_selector("#kb-triage[data-results]")
        assert page.input_value("#kb-triage-log") == SAMPLE.read_text(encoding="utf-8")
        source = page.locator(".kb-triage__sample-source a")
        assert source.is_visible() and source.get_attribute("href") == CORPUS[name]["url"]
        shown = json.loads(page.get_attribute("#kb-triage", "data-results"))
        assert shown[0]["entry"] == CORPUS[name]["expected"]
        assert page.evaluate("document.activeElement.id") == "kb-triage-results"
        box = page.locator(".kb-triage__do").first.bounding_box()
        assert box and 0 <= box["y"] and box["y"] + box["height"] <= height
        page.fill("#kb-triage-log", "RuntimeError: my own log")  # no longer the sample: its source goes
        assert page.locator(".kb-triage__sample-source").is_hidden()
    context.close()


def test_no_match_without_an_issue_tracker_copies_a_request_titled_with_the_error_line(live_site, browser):
    """The live site is built without a repository URL (a local preview, a fork)."""
    made = request.new_failure(TP2["log"])
    context = browser.new_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    with serve(live_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", "\n".join(TP2["log"]))
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results='[]']")
        assert page.inner_text(".kb-triage__status") == "No known failure matches this log."
        assert page.evaluate("document.activeElement.id") == "kb-triage-results"
        assert page.input_value("#kb-triage-title") == TP2["title"] == made.title
        assert page.input_value("#kb-triage-issue") == made.text
        assert page.locator("#kb-triage-open").count() == 0
        new = page.inner_text(".kb-triage__new")
        assert "no issue tracker" in new and "Copy" in new and " cell" not in new.lower()
        page.click("#kb-triage-copy")
        page.wait_for_function("document.querySelector('.kb-triage__copied').textContent !== ''")
        assert page.evaluate("navigator.clipboard.readText()") == made.title + "\n\n" + made.text
        # What the reader edits is what is copied.
        page.fill("#kb-triage-title", "New failure: my own words")
        page.click("#kb-triage-copy")
        page.wait_for_function("navigator.clipboard.readText().then(t => t.startsWith('New failure: my own words'))")
        # "Search the index" puts the error line into the search box.
        page.fill("#kb-triage-title", TP2["title"])
        page.click("#kb-triage-search")
        assert page.input_value("#kb-search-input") == TP2["title"].removeprefix(request.TITLE_PREFIX)
    context.close()


def test_a_log_only_a_family_explains_gets_the_family_answer_marked_below_where_entries_go(live_site, browser):
    """The family answer on the page is `kb match --json`'s (answer: family), shown only when no
    entry matches, marked as a family answer, linked to the family's page, with its check and fix."""
    log = f"Running on NVIDIA GeForce RTX 5090\n{family_only()}\n"  # a line of the family no entry prints
    expected = _kb_match(log)
    assert [h["answer"] for h in expected] == ["family"]
    page = browser.new_page()
    with serve(live_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", log)
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results='[]'][data-families]")
        shown = json.loads(page.get_attribute("#kb-triage", "data-families"))
        assert shown == expected
        assert page.inner_text(".kb-triage__status") == ("No known failure matches this log. Its lines fit a family "
                                                         "of failures, below.")
        item = page.locator("li.kb-triage__family")
        assert item.count() == 1
        text = item.inner_text()
        assert text.startswith("Family answer: no entry matches")
        assert expected[0]["title"] in text and expected[0]["check"] in text and expected[0]["fix"] in text
        href = item.locator("a.kb-triage__link").get_attribute("href")
        assert href.endswith("/families/no-code-for-gpu/")
        page.goto(base + href.lstrip("/"))
        assert page.inner_text("h1") == expected[0]["title"]
        # The new-failure request still follows: a family is a start, not the entry.
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", log)
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-families]")
        assert page.locator(".kb-triage__new").is_visible()
    page.close()


def test_a_log_whose_entries_match_only_a_generic_line_gets_the_family_answer_first(live_site, browser):
    """Issue 35 item 2, on the page as in `kb match --json`: the family answer first, marked, then the
    entries that match only the generic line, each marked as also printing it; no new-failure request."""
    log = "NVIDIA GeForce RTX 5090\nRuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    expected = _kb_match(log)
    families = [h for h in expected if h.get("answer") == "family"]
    entries = [h for h in expected if h.get("answer") != "family"]
    assert [h["family"] for h in families] == ["no-code-for-gpu"] and expected[:1] == families and entries
    page = browser.new_page()
    with serve(live_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", log)
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results][data-families]")
        assert json.loads(page.get_attribute("#kb-triage", "data-families")) == families
        shown = json.loads(page.get_attribute("#kb-triage", "data-results"))
        assert shown == [{k: v for k, v in h.items() if k != "citable_id"} for h in entries]
        items = page.locator(".kb-triage__results > li")
        assert items.count() == 1 + len(entries)
        assert items.nth(0).inner_text().startswith("Family answer: every known failure that matches rests only on a "
                                                     "generic line")
        for k in range(1, 1 + len(entries)):
            assert items.nth(k).inner_text().startswith("Also prints this line:")
        assert page.inner_text(".kb-triage__status").startswith("The family answer comes first:")
        assert page.locator(".kb-triage__new").is_hidden()
    page.close()


def test_triage_page_words_say_failure_not_cell(live_site):
    """The page's own text (the site's navigation and feed title are other pages' business)."""
    page = (live_site / "triage" / "index.html").read_text(encoding="utf-8")
    main = html.unescape(re.sub(r"<[^>]+>", " ", page[page.index("<h1>Triage a log</h1>"):page.index("</form>")]))
    assert not re.search(r"\bcells?\b", main, re.I), re.findall(r".{40}\bcells?\b.{40}", main, re.I)


@pytest.mark.parametrize("color_scheme", ["light", "dark"])
def test_results_and_request_are_readable_in_both_colour_schemes(live_site, browser, color_scheme):
    """WCAG AA contrast (test_lighthouse_fixes.CONTRAST) of what triage adds to the page: the
    results with their status badges and links, then the new-failure request with its buttons."""
    from test_lighthouse_fixes import CONTRAST

    context = browser.new_context(color_scheme=color_scheme)
    page = context.new_page()
    low = []
    with serve(live_site) as base:
        page.goto(base + "triage/")
        for log in [_logs()["three corpus logs in one"], "\n".join(TP2["log"])]:
            page.fill("#kb-triage-log", log)
            # From the keyboard: a pointer left on the button would hover the link scrolled under it.
            page.focus("#kb-triage-run")
            page.keyboard.press("Enter")
            page.wait_for_selector("#kb-triage[data-results]")
            low += page.evaluate(CONTRAST)
    context.close()
    assert low == []


def test_a_log_from_a_gpu_the_index_does_not_cover_says_so_and_keeps_its_file_names(live_site, page):
    """ux-review-2026-12-05 S2-10: the H100 log is told the index covers sm_120/sm_121 (what `kb
    match` notes too); the request keeps the frame's file path as {path}, never {secret}, lists
    the harmless WARNING last, and carries nccl== and the GPU into its environment."""
    made = request.new_failure(NCCL["log"])
    with serve(live_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", "\n".join(NCCL["log"]))
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results]")
        scope = page.inner_text(".kb-triage__scope")
        text = page.input_value("#kb-triage-issue")
        hint_hidden = page.locator(".kb-triage__hint").is_hidden()
    assert scope == "This index covers sm_120/sm_121; your GPU is NVIDIA H100 80GB HBM3 (sm_90)."
    assert text == made.text
    lines = text.split("```text\n", 1)[1].split("\n```", 1)[0].split("\n")
    assert not [line for line in lines if "{secret}" in line] and lines[0] == "Traceback (most recent call last):"
    assert lines[-1].startswith("Custom allreduce is disabled")
    assert "- nccl: 2.27.7" in text and "- GPU: NVIDIA H100" in text
    assert hint_hidden
    assert verdict.out_of_scope(json.loads(_kb_match_facts("\n".join(NCCL["log"])))) == scope[0].lower() + scope[1:-1]


def _kb_match_facts(log: str) -> str:
    """The GPUs `kb match` reads in a log (its facts reader, kb.triage.match.read_facts), as JSON."""
    import io

    from kb.triage import match

    return json.dumps(match.read_facts(io.BytesIO(log.encode("utf-8")))["gpus"])


def test_a_version_that_would_decide_asks_for_pip_list(live_site, page):
    """ux-review-2026-12-05 S2-10: the versions `print(torch.__version__, torch.version.cuda,
    torch.cuda.is_available())` prints are read (torch decides its entry); where a version the log
    lacks would decide a match (vLLM's here), the page asks for what `pip list` prints, as
    `kb match` does (verdict.undecided_versions)."""
    log = "\n".join(["2.7.0+cu128 12.8 True", "NVIDIA GeForce RTX 5090",
                     "RuntimeError: CUDA error: no kernel image is available for execution on the device"])
    expected = {h["entry"]: h for h in _kb_match(log) if h["entry"]}  # the entries (a family answer leads here)
    assert expected["torch-sm120-not-compatible-pytorch-install"]["why"].startswith("line 1: torch 2.7.0+cu128 ")
    assert expected["vllm-no-kernel-image-sm120-build"]["verdict"] == "unknown"
    with serve(live_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", log)
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results]")
        got = {h["entry"]: h for h in json.loads(page.get_attribute("#kb-triage", "data-results")) if h["entry"]}
        hint = page.inner_text(".kb-triage__hint")
    assert {k: (h["verdict"], h["why"]) for k, h in got.items()} == \
        {k: (h["verdict"], h["why"]) for k, h in expected.items()}
    # vLLM's entry and the source-build entries that share the generic line each have a version range:
    # the page names the same packages as `kb match` (verdict.undecided_versions).
    from kb.triage import run

    said = run.triage(ROOT / "kb" / "entries", io.BytesIO(log.encode()), request=False).pip_hint
    assert "vllm" in said and hint == said[0].upper() + said[1:] + "."


def test_the_gpus_a_matched_error_line_requires_are_not_the_logs(live_site, page):
    """FlashInfer's "CUTLASS FMHA requires SM100a (B200/GB200) or SM110a" names the GPUs its kernel
    needs: read alone it gives sm_100 and sm_110, but on the line its entry's signature matched they
    are the code's, not the log's GPU (logfacts.without_own), so neither `kb match` nor the page says
    the log comes from a GPU the index does not cover."""
    import io

    from kb.triage import logfacts, run

    line = ("ValueError: CUTLASS FMHA requires SM100a (B200/GB200) or SM110a. SM12x (RTX 5090/DGX Spark) lacks "
            "tcgen05 MMA required by this kernel. Use backend='fa2' instead.")
    assert [g["compute_capability"] for g in logfacts.read([line]).as_json()["gpus"]] == ["10.0", "11.0"]
    found = run.triage(ROOT / "kb" / "entries", io.BytesIO(line.encode()), request=False)
    assert found.hits[0].entry == "flashinfer-cutlass-fmha-prefill-requires-sm100a-sm12x" and found.scope is None
    with serve(live_site) as base:
        page.goto(base + "triage/")
        page.fill("#kb-triage-log", line)
        page.click("#kb-triage-run")
        page.wait_for_selector("#kb-triage[data-results]")
        first = json.loads(page.get_attribute("#kb-triage", "data-results"))[0]["entry"]
        scope_hidden = page.locator(".kb-triage__scope").is_hidden()
    assert first == found.hits[0].entry and scope_hidden
