"""Hostile Markdown in record prose (tests/fixtures/hostile/markdown/, one case per file, its
rule in the first line): `kb check` refuses each with file, line, field and rule code; with
those rules switched off, the built page still shows every case as inert text, checked in
Chromium; and no text at all can become an element or attribute the templates did not write."""

from __future__ import annotations

import html.parser
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb import cli
from kb.records import lint, prose, schema
from kb.site.pages import string_url

from browser import serve
from conftest import FIXTURES, _build, builds_site

HOSTILE = FIXTURES / "hostile" / "markdown"
CASES = sorted(HOSTILE.glob("*.yaml"))
CODE = re.compile(r"^# .*\((KB0\d\d)\)")


def _code(case: Path) -> str:
    return CODE.match(case.read_text(encoding="utf-8")).group(1)


def test_the_corpus_covers_the_reported_attacks():
    names = {case.stem for case in CASES}
    assert {"escaped-code-span", "reference-link-javascript", "reference-image-javascript", "inline-link-data-url",
            "backticks-across-paragraphs"} <= names


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_check_refuses_each_case_with_file_line_field_and_code(case, capsys):
    assert cli.main(["check", str(case)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out
    line = next(n for n, text in enumerate(case.read_text(encoding="utf-8").splitlines(), 1)
                if text.startswith("mechanism:"))
    assert out[0].startswith(f"{os.path.relpath(case)}:{line}: mechanism: ")
    assert out[0].endswith(f"[{_code(case)}]")


@pytest.fixture(scope="module")
@builds_site
def unchecked_site(tmp_path_factory):
    """The hostile folder built with the friendly Markdown rules switched off: only the
    renderer stands between the records and the reader."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema, "_no_markup", lambda value: None)
        patch.setattr(lint, "cached_check", lint.check)  # the cache holds the verdicts of the real rules
        result = lint.check([HOSTILE])
        assert result.problems == [] and len(result.cells) == len(CASES)
        site = _build(HOSTILE, tmp_path_factory.mktemp("hostile-markdown") / "site")
    return site, {cell.id: string_url(cell.entry.signatures[0].text) for cell in result.cells}


INSPECT = """() => {
  const prose = document.querySelector('h2#mechanism + .kb-prose');
  const inside = [...prose.querySelectorAll('*')];
  const everywhere = [...document.querySelectorAll('*')];
  return {
    tags: inside.map(e => e.tagName.toLowerCase()),
    attrs: inside.flatMap(e => [...e.attributes].map(a => [e.tagName.toLowerCase(), a.name, a.value])),
    handlers: everywhere.flatMap(e => [...e.attributes].filter(a => a.name.startsWith('on')).map(a => a.name)),
    urls: everywhere.flatMap(e => ['href', 'src', 'action', 'formaction'].map(n => e.getAttribute(n)))
      .filter(u => u && /^\\s*(javascript|data|vbscript):/i.test(u)),
    images: document.querySelectorAll('article img').length,
    headings: document.querySelectorAll('h1').length,
    text: prose.textContent,
  };
}"""


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_page_shows_the_case_as_inert_text(unchecked_site, page, case):
    site, urls = unchecked_site
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    with serve(site) as base:
        page.goto(base + urls[case.stem])
        page.wait_for_load_state("load")
        seen = page.evaluate(INSPECT)
    assert dialogs == []
    assert set(seen["tags"]) <= prose.TAGS
    for tag, name, value in seen["attrs"]:
        assert name in prose.ATTRIBUTES.get(tag, set()) | {"rel"}, (tag, name, value)
        if name == "href":
            assert value.startswith("https://"), value
    assert seen["handlers"] == [] and seen["urls"] == [] and seen["images"] == 0
    assert seen["headings"] == 1  # the page's own
    written = case.read_text(encoding="utf-8")
    for needle in ("<img src=x onerror=alert(1)>", "javascript:alert(document.domain)", "data:text/html", "# Pwned"):
        if needle in written:
            assert needle in seen["text"]


class _Elements(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))


MARKDOWNISH = st.lists(st.sampled_from(
    list("<>[]()!*_`\\:#|-=\"' \n/.") + ["javascript:", "data:", "https://x.org", "img", "src", "onerror",
                                        "script", "alert(1)", "&#106;", "%6a", "<a href=", "```", "[1]: "]),
    max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(MARKDOWNISH)
def test_no_text_becomes_an_element_or_attribute_the_renderer_does_not_allow(text):
    parser = _Elements()
    parser.feed(str(prose.render(text)))
    for tag, attrs in parser.found:
        assert tag in prose.TAGS, (text, tag)
        for name, value in attrs:
            assert name in prose.ATTRIBUTES.get(tag, set()) | {"rel"}, (text, tag, name)
            if name == "href":
                assert value.startswith("https://"), (text, value)
            if name == "style":
                assert re.fullmatch(r"text-align:\s*(left|right|center)\s*;?", value), (text, value)


@settings(max_examples=400, deadline=None)
@given(MARKDOWNISH)
def test_the_check_skips_only_text_that_cannot_hold_markup(text):
    assert list(prose.problems(text)) == list(prose.parsed_problems(text))
