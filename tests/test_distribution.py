"""Distribution: search-engine tags, the JSON API, OSV, Atom, sitemap, URL permanence, sub-path."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from browser import search, serve
from conftest import FIXTURES, ROOT, _build, builds_site
from kb.records import lint
from kb.site import build, urls
from kb.site.generate import generate
from kb.site.pages import Site

SITE_URL = "https://example.org/kb/"
ATOM = "{http://www.w3.org/2005/Atom}"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@pytest.fixture(scope="module")
@builds_site
def site_dir(tmp_path_factory) -> Path:
    return _build(ROOT / "kb" / "entries", tmp_path_factory.mktemp("dist") / "site", site_url=SITE_URL)


@pytest.fixture(scope="module")
def live() -> Site:
    return Site(lint.check([ROOT / "kb" / "entries"]).cells)


def _head(html: str) -> str:
    return html.split("</head>")[0]


def test_cell_pages_carry_canonical_description_opengraph_and_jsonld(site_dir, live):
    for cell in live.cells:
        html = (site_dir / live.url(cell) / "index.html").read_text(encoding="utf-8")
        head = _head(html)
        canonical = re.findall(r'<link rel="canonical" href="([^"]+)"', head)
        assert canonical == [SITE_URL + live.url(cell)], cell.id
        for tag in ('name="description"', 'property="og:title"', 'property="og:description"',
                    'property="og:url"', 'name="twitter:card"'):
            assert head.count(tag) == 1, (cell.id, tag)
        assert 'name="twitter:title"' not in head and 'name="twitter:description"' not in head, cell.id
        blocks = re.findall(r'<script type="application/ld\+json">(.*?)</script>', html, re.S)
        assert len(blocks) == 1
        data = json.loads(blocks[0])
        article, faq = data["@graph"]
        assert data["@context"] == "https://schema.org"
        assert article["@type"] == "TechArticle" and article["headline"] == cell.entry.signatures[0].text
        assert article["dateModified"] == cell.entry.updated and article["url"] == SITE_URL + live.url(cell)
        assert {a["name"] for a in article["about"]} >= {"vLLM"} or article["about"]
        assert faq["@type"] == "FAQPage" and cell.entry.summary in faq["mainEntity"][0]["acceptedAnswer"]["text"]


def test_robots_and_sitemap_dates_come_from_the_records(site_dir, live):
    assert (site_dir / "robots.txt").read_text() == f"User-agent: *\nAllow: /\nSitemap: {SITE_URL}sitemap.xml\n"
    root = ET.parse(site_dir / "sitemap.xml").getroot()
    lastmod = {u.findtext(f"{SITEMAP}loc"): u.findtext(f"{SITEMAP}lastmod") for u in root}
    for cell in live.cells:
        assert lastmod[SITE_URL + live.url(cell)] == cell.entry.updated
    assert lastmod[SITE_URL + "about/"] is None  # hand-written pages have no record date
    with gzip.open(site_dir / "sitemap.xml.gz") as packed:
        assert packed.read() == (site_dir / "sitemap.xml").read_bytes()


def test_json_api_and_osv(site_dir, live):
    index = json.loads((site_dir / "api/v1/index.json").read_text(encoding="utf-8"))
    assert index["version"] == 1
    assert [c["id"] for c in index["cells"]] == [c.id for c in live.cells]
    entry_schema = json.loads((site_dir / "api/v1/schema/entry.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(entry_schema)
    facts_schema = json.loads((site_dir / "api/v1/schema/facts.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(facts_schema)
    for summary, cell in zip(index["cells"], live.cells):
        assert set(summary) == {"id", "citable_id", "title", "signatures", "status", "updated", "published", "url",
                                "record"}
        assert summary["url"] == SITE_URL + live.url(cell)
        record = json.loads((site_dir / f"api/v1/cells/{cell.id}.json").read_text(encoding="utf-8"))
        validator.validate(record["record"])
        assert record["record"]["signatures"][0]["text"] == cell.entry.signatures[0].text
        osv = json.loads((site_dir / f"osv/{cell.id}.json").read_text(encoding="utf-8"))
        assert osv["id"].startswith("BWKB-") and osv["database_specific"]["cell"] == cell.id and osv["modified"] == f"{cell.entry.updated}T00:00:00Z"
        assert osv["summary"] and osv["details"].startswith(cell.entry.summary)
        assert {r["url"] for r in osv["references"]} >= {link.url for link in cell.entry.upstream}
        assert osv["database_specific"]["architectures"] == list(cell.entry.hardware.architectures)
        assert osv["database_specific"]["gpus"] == list(cell.entry.hardware.gpus)
        for affected in osv["affected"]:
            assert affected["package"]["ecosystem"] == "PyPI"
            for r in affected.get("ranges", []):
                assert r["type"] == "ECOSYSTEM" and "introduced" in r["events"][0]


def test_atom_feed_is_valid_and_newest_first(site_dir, live):
    root = ET.parse(site_dir / "feed.xml").getroot()
    assert root.tag == f"{ATOM}feed"
    for child in ("title", "id", "updated"):
        assert root.find(f"{ATOM}{child}") is not None
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == len(live.cells)
    dates = [e.findtext(f"{ATOM}updated") for e in entries]
    assert dates == sorted(dates, reverse=True)
    assert len({e.findtext(f"{ATOM}id") for e in entries}) == len(entries)
    newest = max(c.entry.updated for c in live.cells)
    assert root.findtext(f"{ATOM}updated") == f"{newest}T00:00:00Z"


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_two_builds_are_byte_identical(site_dir, tmp_path):
    again = _build(ROOT / "kb" / "entries", tmp_path / "again", site_url=SITE_URL)
    first, second = _tree(site_dir), _tree(again)
    # Pagefind 1.5.2 writes its filter maps in hash-map order: those shards (and the two files
    # naming them) vary in name and byte order, never in size or in what they hold.
    varying = re.compile(r"^pagefind/(filter/.*\.pf_filter|pagefind\.en_[0-9a-f]+\.pf_meta|pagefind-entry\.json)$")
    assert {k: v for k, v in first.items() if not varying.match(k)} == \
        {k: v for k, v in second.items() if not varying.match(k)}

    def unpacked_sizes(folder):
        return sorted(len(gzip.decompress(p.read_bytes())) for p in (folder / "pagefind" / "filter").iterdir())

    assert unpacked_sizes(site_dir) == unpacked_sizes(again)
    assert not any(str(ROOT) in p.read_text(encoding="utf-8", errors="ignore")
                   for p in again.rglob("*") if p.is_file() and p.suffix in {".html", ".json", ".xml", ".txt"})


def test_the_committed_lock_records_every_published_url():
    generated = generate(ROOT / "kb" / "entries")
    locked = set(urls.read_lock(ROOT / "kb" / "urls.lock"))
    assert set(generated.published) - locked == set(), "run `.venv/bin/kb lock` and commit kb/urls.lock"


def _project(tmp_path: Path) -> tuple[Path, Path, Path]:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURES / "site", entries)
    lock, redirects = tmp_path / "urls.lock", tmp_path / "redirects.yaml"
    urls.write_lock(lock, [], generate(entries).published)
    return entries, lock, redirects


def _build_with(entries, lock, redirects, out, monkeypatch, capsys) -> tuple[int, str]:
    code = build.build(out, entries, site_url=SITE_URL, lock=lock, redirects=redirects)
    return code, capsys.readouterr().err


def test_renamed_cell_and_reworded_signature_keep_their_old_urls(tmp_path, monkeypatch, capsys, page):
    entries, lock, redirects = _project(tmp_path)
    original = Site(lint.check([entries]).cells)
    old_page = original.url(original.by_id["look-alike-cell"])
    # rename the cell and reword its first signature
    text = (entries / "look-alike-cell.yaml").read_text(encoding="utf-8")
    (entries / "look-alike-cell.yaml").unlink()
    (entries / "look-alike-renamed.yaml").write_text(
        text.replace("ValueError: look-alike cell own first line", "ValueError: look-alike cell, reworded"),
        encoding="utf-8")
    hostile = entries / "hostile-signature.yaml"
    hostile.write_text(hostile.read_text(encoding="utf-8").replace("id: look-alike-cell", "id: look-alike-renamed"),
                       encoding="utf-8")
    site = tmp_path / "site"
    code, err = _build_with(entries, lock, redirects, site, monkeypatch, capsys)
    assert code == 1 and not site.exists()
    assert f"published URL '{old_page}' is gone" in err
    assert "published URL 'api/v1/cells/look-alike-cell.json' is gone" in err

    renamed = Site(lint.check([entries]).cells)
    new_page = renamed.url(renamed.by_id["look-alike-renamed"])
    redirects.write_text(f"{old_page}: {new_page}\n"
                         "api/v1/cells/look-alike-cell.json: api/v1/cells/look-alike-renamed.json\n"
                         "osv/look-alike-cell.json: osv/look-alike-renamed.json\n", encoding="utf-8")
    code, err = _build_with(entries, lock, redirects, site, monkeypatch, capsys)
    assert code == 0, err
    moved = (site / old_page / "index.html").read_text(encoding="utf-8")
    assert f'<link rel="canonical" href="{SITE_URL}{new_page}">' in moved
    assert json.loads((site / "api/v1/cells/look-alike-cell.json").read_text())["moved_to"] == \
        SITE_URL + "api/v1/cells/look-alike-renamed.json"
    with serve(site) as base:
        page.goto(base + old_page)
        page.wait_for_url(base + new_page)
        assert page.locator("article h1").inner_text() == "ValueError: look-alike cell, reworded"


def test_site_works_under_a_sub_path_search_included(site_dir, live, page):
    cell = live.by_id["mla-decode-fp8-kv-triton-shared-memory"]
    with serve(site_dir, prefix="/kb/") as base:
        page.goto(base + "about/")
        results = search(page, "Required: 102400, Hardware limit: 101376")
        assert results[0] == "/kb/" + live.url(cell)
        page.click(".kb-search__link >> nth=0")
        page.wait_for_url(base + live.url(cell))
        assert page.locator("article h1").inner_text() == cell.entry.signatures[0].text
        page.goto(base + "by/component/vllm/")
        page.click(f'a[href$="{live.url(cell)}"] >> nth=0')
        page.wait_for_url(base + live.url(cell))
