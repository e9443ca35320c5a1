"""Public words: what a reader sees on a public page, the text of the body plus the tab title, never
holds the index's internal vocabulary: the
"seed document" its first claims came from, "cell" (the records' own word, which on the matrix
collides with a grid's cells), or a record's field path such as `claims[3].as_of`.

Contributor pages, where those words are the subject, are exempt by name (EXEMPT); so are the
redirect stubs, which show nothing.

The words must be gone from what the templates and pages write and from the records' prose:
`kb check` refuses them in every prose field a page shows (rule KB082). Only a literal string
copied from upstream (a signature's text or pattern, an evidence term, a link's title, a flag),
which KB082 does not read and nobody may reword, may hold one; a hit that stands in such a string
is counted apart.

Every public page is read from its built HTML (html_page: the body's text in lines, as Chromium's
`innerText` gives them, no browser). Chromium reads the pages whose scripts write text the HTML
does not hold (the triage and stack pages), after their scripts ran.
"""

from __future__ import annotations

import functools
import re

import pytest
import yaml

from browser import serve
from conftest import ROOT
from html_page import Page
from kb.records.prosecheck import prose_field

ENTRIES = ROOT / "kb" / "entries"

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
    # How the index did its research, not what it found (UX review 2026-12-05, S2-8).
    ("a research-trail word", re.compile(r"\bsnapshots?\b|\bfetch(?:\s+size)?\s+limit\b|\btag\s+checks?\b"
                                         r"|\bnext\s+signatures?\b|\bgives\s+no\s+version\s+range\b"
                                         r"|\brelease\s+not\s+checked\b", re.I)),
    # A signature's kind as the record spells it, where a page labels it "Error line", "Log line".
    ("a record's kind as a label", re.compile(r"(?<![\w-])(exception|log-line|kernel-message):")),
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


def _file(site, url: str):
    """The built file of a page's URL (`404.html` is a file; every other page a folder's index)."""
    return site / url if url.endswith(".html") else site / url / "index.html"


def _words(text: str) -> str:
    """Text as words: Markdown's backticks and emphasis marks dropped, white space collapsed."""
    return " ".join(re.sub(r"[`*]", "", text).split())


@functools.cache
def _records() -> str:
    """The literal strings of every record, as words: what KB082 leaves to upstream's wording."""
    return _words(" ".join(text for path in sorted(ENTRIES.glob("*.yaml"))
                           for text in _literals(yaml.safe_load(path.read_text(encoding="utf-8")))))


def _hits(text: str, records: str = "") -> tuple[list[str], list[str]]:
    """(internal words the page or a record's prose writes, internal words in a record's literal
    strings), each with its context. A hit is a literal's when it and three words next to it on
    its line (before, after or both) stand in `records` (the literals) as they are."""
    made, literal = [], []
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
                (literal if theirs else made).append(f"{what}: {around!r}")
    return made, literal


def _literals(data, loc=()):
    """Every literal string of a record: a string value that is not a prose field KB082 reads, nor
    a source, id or link (a claim's `source: seed` is shown as words of the template's, never as is)."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _literals(v, loc + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _literals(v, loc + (i,))
    elif isinstance(data, str) and not prose_field(loc) and loc[-1] not in ("source", "id", "url"):
        yield data


@pytest.fixture
def site(live_site_with_repo):
    """The live site with Edit and Report links, built once per run (conftest)."""
    return live_site_with_repo


def test_the_exempt_pages_exist(site):
    """An exemption names a page that is built (a renamed page must not stay exempt silently)."""
    missing = [url for url in EXEMPT if not (site / url / "index.html").exists()]
    assert missing == []


def test_the_check_finds_each_kind_of_internal_word():
    """The patterns catch what they are for (so the page test below can fail)."""
    for written in ["the index's seed document says", "10 cells, listed by gpu.", "Related cells",
                    "(claims[3].as_of)", "upstream[0].as_of", "the fixed_in version",
                    "Checked in the FlashInfer snapshot", "the repository is over the fetch limit",
                    "over the fetch size limit", "not from a tag check", "the printed line is the next signature",
                    "the record gives no version range", "Upgrade, reported fixed (release not checked)",
                    "exception: RuntimeError", "log-line: WARNING"]:
        assert _hits(written, _records())[0], written
    assert _hits("10 failures seen on RTX 5090; an unpublished report, not yet confirmed by a public link") == ([], [])
    assert _hits("Error line: RuntimeError; read in the repository on 2026-12-04; torch.cuda.memory._snapshot()") == ([], [])
    # A literal string a record copies from upstream is told apart from the page's words around it.
    made, theirs = _hits("Related: this cell is the misaligned-address fault", "x; this cell is the misaligned-address fault.")
    assert made == [] and len(theirs) == 1
    assert _hits("Related cells", "see the related cells. The")[0]


def test_only_a_records_literal_strings_are_let_through():
    """The strings a hit may stand in are the literals: never prose KB082 reads, nor a source."""
    record = {"title": "A cell", "summary": "this cell is x", "hardware": {"gpus": ["GB10 (seed claim)"]},
              "signatures": [{"text": "cell 3 failed", "kind": "log-line", "note": "the seed says"}],
              "upstream": [{"url": "https://github.com/o/r/issues/1", "title": "seed cell issue"}],
              "claims": [{"says": "seed date", "source": "seed"}],
              "related": [{"id": "cell-id", "note": "that cell"}]}
    assert sorted(_literals(record)) == ["cell 3 failed", "log-line", "seed cell issue"]
    assert _hits("A cell", _words(" ".join(_literals(record))))[0]


def _report(found: dict[str, list[str]]) -> str:
    return "\n".join(f"/{url}: {'; '.join(hits[:3])}" + (f" (+{len(hits) - 3})" if len(hits) > 3 else "")
                     for url, hits in found.items())


def test_no_public_page_shows_an_internal_word(site):
    found = {}
    pages = list(_public_pages(site))
    assert len(pages) > 100  # the cells, pointers and listings are among them
    for url in pages:
        page = Page(_file(site, url))
        hits, _ = _hits(page.title + "\n" + page.body.inner_text(), _records())
        if hits:
            found[url] = hits
    assert not found, f"{len(found)} public pages show internal words:\n{_report(found)}"


# The scripts every page loads (Material's own and kb-page, kb-normalise, kb-search): they add
# buttons and the search box's answers, no words of their own before a reader types.
_EVERY_PAGE = re.compile(r"assets/(?:javascripts/[\w.-]+|kb-page|kb-normalise|kb-search)\.js$")


def _scripted(site) -> list[str]:
    """The public pages that load a script beyond those every page loads: their text is partly
    written by it, so only Chromium reads it whole."""
    return [url for url in _public_pages(site)
            if any(not _EVERY_PAGE.search(s.attrs["src"]) for s in Page(_file(site, url)).select("script")
                   if "src" in s.attrs)]


def test_no_page_a_script_writes_shows_an_internal_word(site, browser):
    pages = _scripted(site)
    assert {"triage/", "stack/"} <= set(pages) and len(pages) < 10
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    found = {}
    with serve(site) as base:
        for url in pages:
            page.goto(base + url, wait_until="load")
            hits, _ = _hits(page.title() + "\n" + page.locator("body").inner_text(), _records())
            if hits:
                found[url] = hits
    context.close()
    assert not found, f"{len(found)} public pages show internal words:\n{_report(found)}"


def _fragments(site) -> dict[str, dict]:
    """Pagefind's stored record of every page it indexed (URL -> its fragment: the text a result's
    excerpt is cut from, the title and meta a result shows, the filters the search menu lists)."""
    import gzip
    import json

    out = {}
    for path in sorted((site / "pagefind" / "fragment").glob("*.pf_fragment")):
        raw = gzip.decompress(path.read_bytes())
        assert raw.startswith(b"pagefind_dcd"), path
        data = json.loads(raw[len(b"pagefind_dcd"):])
        out[data["url"]] = data
    return out


def test_no_search_result_shows_an_internal_word(site):
    """What a search result can show (the excerpt's text, the title, every meta field such as the
    failure's title and status, the filter names and values) holds no internal word: Pagefind
    indexes the page body less what `data-pagefind-ignore` hides, so this reads what it stored."""
    fragments = _fragments(site)
    assert len(fragments) > 50  # every entry page is indexed
    found = {}
    for url, data in fragments.items():
        shown = [data["content"], *data.get("meta", {}).values(),
                 *(f"{name}: {value}" for name, values in data.get("filters", {}).items() for value in values)]
        hits, _ = _hits("\n".join(shown), _records())
        if hits:
            found[url.lstrip("/")] = hits
    assert not found, f"{len(found)} search results show internal words:\n{_report(found)}"
