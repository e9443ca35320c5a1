"""kb/redirects.yaml is stranger-written (attack review 2026-12-04, H1): `kb check` and `kb build`
refuse any key that is not a published site URL in normal form or that names a file the build
writes itself (KB070-KB074), and no writer of the build writes outside the site even when the
check is skipped (`kb.site.paths.inside`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kb import cli
from kb.records import redirects
from kb.records.rules import RULES
from kb.site import build, urls
from kb.site.paths import OutsideSite, inside

from conftest import FIXTURES, ROOT

HOSTILE = FIXTURES / "hostile" / "redirects"
SITE_URL = "https://example.org/kb/"
EXPECTED = {
    "absolute.yaml": ["KB070"],
    "dot-dot.yaml": ["KB070"],
    "theme-bundle.yaml": ["KB070"],
    "search-script.yaml": ["KB070"],
    "search-shard.yaml": ["KB071", "KB074"],
    "feed-folder.yaml": ["KB071", "KB074"],
}


@pytest.fixture(scope="module")
def cells():
    from kb.records import lint

    result = lint.check([ROOT / "kb" / "entries"])
    assert result.problems == []
    return result.cells


def test_every_hostile_file_has_its_expected_codes():
    assert sorted(p.name for p in HOSTILE.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_kb_check_refuses_each_hostile_redirect(name, monkeypatch, capsys):
    monkeypatch.setattr(urls, "OWN_REDIRECTS", HOSTILE / name)
    assert cli.main(["check"]) == 1
    out = capsys.readouterr().out.splitlines()
    shown = os.path.relpath(HOSTILE / name)
    assert out and all(line.startswith(f"{shown}:") for line in out), out
    assert [line.rsplit("[", 1)[1].rstrip("]") for line in out] == EXPECTED[name]
    line = next(n for n, text in enumerate((HOSTILE / name).read_text().splitlines(), 1) if not text.startswith("#"))
    assert all(text.startswith(f"{shown}:{line}: ") for text in out)


def test_the_committed_redirects_pass(cells):
    assert urls.site_problems(cells, urls.OWN_LOCK, urls.OWN_REDIRECTS) == []


def _lock_with(tmp_path: Path, *extra: str) -> Path:
    lock = tmp_path / "urls.lock"
    lock.write_text(urls.OWN_LOCK.read_text(encoding="utf-8") + "".join(f"/{url}\n" for url in extra),
                    encoding="utf-8")
    return lock


@pytest.mark.parametrize("key", ["search/literals/0.json", "feed.xml/", "assets/kb-page.json", "pagefind/x/",
                                 "api/v1/index.json/", "404.html/", "sitemap.xml/", "triage/patterns.json/"])
def test_a_locked_key_naming_a_file_of_the_build_is_refused(tmp_path, cells, key):
    """A pull request can add the key to the lock as well: the build's own files stay its own."""
    moved = tmp_path / "redirects.yaml"
    moved.write_text(f"'{key}': 'triage/'\n", encoding="utf-8")
    codes = [p.code for p in urls.site_problems(cells, _lock_with(tmp_path, key), moved)]
    assert codes == ["KB074"]


@pytest.mark.parametrize("url", ["", "/e/x/", "e//x/", "e/./x/", "e/../x/", "e\\x/", "e/x", "e/x.js", "e/%2e%2e/",
                                 "e/x\u200b/", "e/x\x1b/", "e/x /", "https://example.org/", "e/" + "x" * 101 + "/",
                                 "C:/x/", "~/x/"[1:] + "\u2024/"])
def test_url_form_is_refused(url):
    assert redirects.url_problem(url) is not None


@pytest.mark.parametrize("url", ["e/x/", "api/v1/cells/x.json", "by/gpu/rtx-5090/", "a.b_c~d/"])
def test_url_form_is_accepted(url):
    assert redirects.url_problem(url) is None


def test_the_file_is_read_as_an_entry_is(tmp_path):
    (tmp_path / "real.yaml").write_text("'e/x/': 'triage/'\n", encoding="utf-8")
    (tmp_path / "redirects.yaml").symlink_to(tmp_path / "real.yaml")
    assert [p.code for p in redirects.read_file(tmp_path / "redirects.yaml")[1]] == ["KB050"]
    (tmp_path / "bomb.yaml").write_text("a: &a ['e/x/']\nb: *a\n", encoding="utf-8")
    assert [p.code for p in redirects.read_file(tmp_path / "bomb.yaml")[1]] == ["KB007"]
    (tmp_path / "empty.yaml").write_text("# nothing moved yet\n", encoding="utf-8")
    assert redirects.read_file(tmp_path / "empty.yaml") == ([], [])
    (tmp_path / "list.yaml").write_text("- e/x/\n", encoding="utf-8")
    assert [p.code for p in redirects.read_file(tmp_path / "list.yaml")[1]] == ["KB004"]
    assert redirects.read_file(tmp_path / "absent.yaml") == ([], [])


# --- the rules' examples ----------------------------------------------------------------------

EXAMPLE_KEYS = ["e/plan-index-is-invalid-0123456789/", "api/v1/cells/plan-index-old.json", "search/literals/0.json"]


@pytest.mark.parametrize("code", ["KB070", "KB071", "KB072", "KB073", "KB074"])
def test_redirect_rule_examples(tmp_path, cells, code):
    rule = RULES[code]
    lock = _lock_with(tmp_path, *EXAMPLE_KEYS)
    for label, example, wanted in (("good", rule.good, set()), ("bad", rule.bad, {code})):
        moved = tmp_path / f"{label}.yaml"
        moved.write_text(example, encoding="utf-8")
        if code == "KB071" and label == "bad":
            lock = _lock_with(tmp_path)
        found = {p.code for p in urls.site_problems(cells, lock, moved)}
        assert (found == wanted) if label == "good" else (code in found), (label, found)


# --- no writer writes outside the site ---------------------------------------------------------

@pytest.mark.parametrize("path", ["/tmp/x/index.html", "../x/index.html", "a/../../x", "a//b", "a\\b", "", ".",
                                  "a/./b", "x\0y"])
def test_inside_refuses_what_is_not_a_plain_path_below_the_root(tmp_path, path):
    with pytest.raises(OutsideSite):
        inside(tmp_path, path)


def test_inside_refuses_a_path_through_a_link_out_of_the_root(tmp_path):
    site, outside = tmp_path / "site", tmp_path / "outside"
    site.mkdir(), outside.mkdir()
    (site / "e").symlink_to(outside)
    with pytest.raises(OutsideSite):
        inside(site, "e/x/index.html")
    (site / "f").mkdir()
    (site / "g").symlink_to(site / "f")  # a link that stays inside is no escape
    assert inside(site, "g/x/index.html") == site / "g" / "x" / "index.html"
    assert inside(site, "by/gpu/x/index.html") == site / "by" / "gpu" / "x" / "index.html"


def test_a_build_whose_check_is_skipped_still_writes_nothing_outside(tmp_path, monkeypatch, capsys):
    """With every redirect rule switched off, the absolute and '..' keys reach the hook as they
    did before the fix: the hook refuses them (kb.site.paths.inside) and the build fails."""
    from kb.site import generate

    target = tmp_path / "outside" / "planted"
    climbed = tmp_path / "climbed"
    keys = [f"{target}/", "../climbed/"]
    moved = tmp_path / "redirects.yaml"
    moved.write_text("".join(f"'{key}': 'triage/'\n" for key in keys), encoding="utf-8")
    monkeypatch.setattr(urls, "site_problems", lambda *args, **kwargs: [])
    monkeypatch.setattr(urls, "redirect_problems", lambda *args, **kwargs: [])
    committed = redirects.read_file(urls.OWN_REDIRECTS)[0]
    monkeypatch.setattr(generate.redirects_file, "read_file", lambda path, locked=None: (
        committed + [redirects.Redirect(key, "triage/", 1) for key in keys], []))
    site = tmp_path / "site" / "site"
    code = build.build(site, ROOT / "kb" / "entries", site_url=SITE_URL, lock=_lock_with(tmp_path, *keys),
                       redirects=moved)
    err = capsys.readouterr().err
    assert code == 1 and "refusing to write" in err
    assert not target.exists() and not climbed.exists() and not (tmp_path / "site" / "climbed").exists()
    assert not site.exists()
