"""The content-hash cache of `kb check` (kb/cache.py): same answers as no cache, reused while the
bytes stay the same, redone when they change, never read when a commit could have written it."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess

import pytest

from kb import cache as cache_mod
from kb import cli
from kb.records import lint

from conftest import FIXTURES, ROOT


def _answers(result: lint.Result):
    return [c.id for c in result.cells], [p.format() for p in result.problems]


@pytest.fixture
def entries(tmp_path):
    folder = tmp_path / "entries"
    shutil.copytree(FIXTURES / "site", folder)
    return folder


def test_cached_answers_equal_uncached_ones_cold_and_warm(entries, tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "FOLDER", tmp_path / "cache")
    plain = _answers(lint.check([entries]))
    cold = lint.check([entries], cache_mod.Cache("check", tmp_path / "cache"))
    store = cache_mod.Cache("check", tmp_path / "cache")
    warm = lint.check([entries], store)
    assert _answers(cold) == _answers(warm) == plain
    assert [c.entry for c in warm.cells] == [c.entry for c in lint.check([entries]).cells]


def test_a_warm_check_neither_parses_nor_validates_unchanged_files(entries, tmp_path, monkeypatch):
    first = cache_mod.Cache("check", tmp_path / "cache")
    lint.check([entries], first)
    first.save()

    def never(*args):
        raise AssertionError("parsed or validated again")

    monkeypatch.setattr(lint, "parse", never)
    monkeypatch.setattr(lint, "_validate", never)
    result = lint.check([entries], cache_mod.Cache("check", tmp_path / "cache"))
    assert len(result.cells) == len(list(entries.glob("*.yaml"))) and result.problems == []


def test_an_edited_file_is_checked_again(entries, tmp_path):
    store = cache_mod.Cache("check", tmp_path / "cache")
    lint.check([entries], store)
    store.save()
    path = entries / "mla-decode-fp8-kv-triton-shared-memory.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("symptoms: [crash]", "symptoms: [melted]"),
                    encoding="utf-8")
    result = lint.check([entries], cache_mod.Cache("check", tmp_path / "cache"))
    assert [(p.path.name, p.loc, p.code) for p in result.problems] == [(path.name, "symptoms[0]", "KB023")]
    # the problem's path is this file's, even when the same bytes were cached from another folder
    assert result.problems[0].path == path


@pytest.mark.slow
def test_kb_check_uses_the_cache_and_deleting_it_changes_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cache_mod, "FOLDER", tmp_path / "cache")
    assert cli.main(["check"]) == 0
    assert list((tmp_path / "cache").glob("check-*.pickle"))
    warm = capsys.readouterr().out
    assert cli.main(["check"]) == 0 and capsys.readouterr().out == warm
    shutil.rmtree(tmp_path / "cache")
    assert cli.main(["check"]) == 0 and capsys.readouterr().out == warm


class _Planted:
    def __reduce__(self):
        return (open, (str(MARKER), "w"))


MARKER = None


def test_a_cache_committed_to_git_is_never_read(tmp_path, capsys, monkeypatch):
    global MARKER
    MARKER = tmp_path / "pickle-ran"
    repo = tmp_path / "repo"
    folder = repo / ".cache" / "kb"
    folder.mkdir(parents=True)
    (folder / "check.pickle").write_bytes(pickle.dumps({"k": _Planted()}))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "-f", ".cache"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "cache"], check=True)
    store = cache_mod.Cache("check", folder, root=repo)
    assert not store.enabled and store.get("k") is None
    assert not MARKER.exists()
    assert "git tracks files under it" in capsys.readouterr().err
    # untracked, this checkout's own cache is read: what this user's kb wrote, sealed with its key
    subprocess.run(git + ["rm", "-q", "--cached", "-r", ".cache"], check=True)
    own = cache_mod.Cache("check", folder, root=repo)
    own.put("k", ([], None, {}))
    own.save()
    assert cache_mod.Cache("check", folder, root=repo).get("k") == ([], None, {})


PLANTED = FIXTURES / "hostile" / "cache" / "check.pickle"


@pytest.fixture
def own_key(tmp_path, monkeypatch):
    """A key folder of this test's own (the user's real key stays untouched)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)  # where the planted pickle would write its file
    return tmp_path / "config" / "kb" / "cache-key"


def _git_repo(repo):
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return git


def test_a_planted_pickle_is_never_unpickled(tmp_path, own_key):
    """A pickle nobody's kb sealed (a shared folder, a download, a pull request) is a cold cache,
    never loaded (attack review M3); the key is this user's alone."""
    folder = tmp_path / "cache"
    folder.mkdir()
    shutil.copy(PLANTED, folder / "check.pickle")
    store = cache_mod.Cache("check", folder)
    assert store.enabled and store.get("k") is None
    assert not (tmp_path / "pickle-ran").exists()
    assert own_key.stat().st_mode & 0o777 == 0o600
    # sealed with another key (another user's, or one a checkout planted) is no better
    store.put("k", 1)
    store.save()
    own_key.write_bytes(b"x" * cache_mod.KEY_BYTES)
    assert cache_mod.Cache("check", folder).get("k") is None


def test_a_key_file_others_can_read_or_a_linked_one_turns_the_cache_off(tmp_path, own_key, capsys):
    cache_mod.Cache("check", tmp_path / "cache")  # makes the key
    own_key.chmod(0o644)
    assert not cache_mod.Cache("check", tmp_path / "cache").enabled
    own_key.unlink()
    (tmp_path / "planted-key").write_bytes(b"k" * cache_mod.KEY_BYTES)
    own_key.symlink_to(tmp_path / "planted-key")
    assert not cache_mod.Cache("check", tmp_path / "cache").enabled
    assert "no private cache key" in capsys.readouterr().err


@pytest.mark.parametrize("committed", [True, False])
def test_a_cache_folder_that_is_a_link_is_never_read(tmp_path, own_key, capsys, committed):
    """`.cache` as a symbolic link (committed by a pull request, or planted) to a folder outside the
    checkout holding a pickle: the cache is off and nothing is unpickled, whatever the link
    resolves to; kb serve refuses to build its preview there."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = _git_repo(repo)
    outside = tmp_path / "outside"
    (outside / "kb").mkdir(parents=True)
    shutil.copy(PLANTED, outside / "kb" / "check.pickle")
    (repo / ".cache").symlink_to(outside)
    if committed:
        subprocess.run(git + ["add", "-f", ".cache"], check=True)
        subprocess.run(git + ["commit", "-q", "-m", "PR: .cache link"], check=True)
    store = cache_mod.Cache("check", repo / ".cache" / "kb", root=repo)
    assert not store.enabled and store.get("k") is None
    assert not (tmp_path / "pickle-ran").exists()
    why = "git tracks files under it" if committed else "is a symbolic link"
    assert why in capsys.readouterr().err
    assert cache_mod.unsafe_folder(repo / ".cache" / "serve" / "site", repo) == f"{repo / '.cache'} is a symbolic link"


def test_the_live_checkout_has_no_tracked_cache():
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", ".cache"], capture_output=True, text=True, check=True)
    assert done.stdout == ""


def test_a_warm_kb_match_reads_its_rules_from_the_cache_without_the_check():
    """Start-up of `kb match`: the second run in a fresh process imports neither pydantic nor the
    check, and finds the same cells as the first."""
    import sys

    code = ("import sys, json; from pathlib import Path; from kb.triage.rules import load_rules; "
            f"rules, problems = load_rules(Path({str(ROOT / 'kb' / 'entries')!r})); "
            "print(json.dumps([len(rules), len(problems), 'pydantic' in sys.modules, "
            "'kb.records.lint' in sys.modules]))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
            for _ in range(2)]
    first, second = (json.loads(run.stdout) for run in runs)
    assert first[:2] == second[:2] and first[0] > 0 and first[1] == 0
    assert second[2:] == [False, False]


@pytest.fixture
def package_copy(tmp_path, monkeypatch, request):
    """A copy of the kb package's modules that kb.cache.code_fingerprint reads instead of kb/."""
    package = tmp_path / "package" / "kb"
    shutil.copytree(cache_mod.PACKAGE, package, ignore=shutil.ignore_patterns("entries", "__pycache__"))
    monkeypatch.setattr(cache_mod, "PACKAGE", package)
    cache_mod.code_fingerprint.cache_clear()
    request.addfinalizer(cache_mod.code_fingerprint.cache_clear)  # the next test hashes kb/ again
    return package


def _add_symptom(package):
    """What the review did: a new symptom name in kb/records/facets.py (the schema's choices come
    from it), a module the check's hand-kept list of modules left out."""
    facets = package / "records" / "facets.py"
    text = facets.read_text(encoding="utf-8")
    assert text.count("SYMPTOM_NAMES = {\n") == 1
    facets.write_text(text.replace("SYMPTOM_NAMES = {\n", 'SYMPTOM_NAMES = {\n    "thermal-throttle": "Throttled",\n'),
                      encoding="utf-8")
    cache_mod.code_fingerprint.cache_clear()  # a new process would hash the edited module


def test_a_changed_module_is_a_cache_miss_for_the_check(entries, tmp_path, monkeypatch, package_copy):
    store = cache_mod.Cache("check", tmp_path / "cache")
    lint.check([entries], store)
    store.save()
    plain_parse = lint.parse
    parsed = []
    monkeypatch.setattr(lint, "parse", lambda *args: parsed.append(args) or plain_parse(*args))

    lint.check([entries], cache_mod.Cache("check", tmp_path / "cache"))
    assert parsed == []  # the same code: every file from the cache
    _add_symptom(package_copy)
    lint.check([entries], cache_mod.Cache("check", tmp_path / "cache"))
    assert len(parsed) == len(list(entries.glob("*.yaml")))  # every file checked again


def test_a_changed_module_is_a_new_key_for_every_stage(package_copy):
    """Every cache (check, rules, evidence, pages, exports, search data) keys on
    code_fingerprint, and the rules' keys on it too: one edit anywhere in the package changes them."""
    entries = ROOT / "kb" / "entries"
    before = [cache_mod.code_fingerprint(), cache_mod.rules_cache("match", entries)[1],
              cache_mod.rules_cache("evidence", entries)[1]]
    assert None not in before and len(set(before)) == 3
    _add_symptom(package_copy)
    after = [cache_mod.code_fingerprint(), cache_mod.rules_cache("match", entries)[1],
             cache_mod.rules_cache("evidence", entries)[1]]
    assert set(before).isdisjoint(after)


def test_only_folders_of_this_checkout_are_cached_each_in_its_own_file(tmp_path):
    assert cache_mod.for_folders("check", [tmp_path]) is None
    live = cache_mod.for_folders("check", [ROOT / "kb" / "entries"])
    other = cache_mod.for_folders("check", [ROOT / "tests" / "fixtures" / "site"])
    assert live is not None and other is not None and live.path != other.path


def _render(entries, store=None, calls=None):
    from kb.records.catalog import Site
    from kb.site.pages import Renderer

    renderer = Renderer(Site(lint.check([entries]).cells), "https://github.com/example/kb", store)
    if calls is not None:
        plain = renderer._render
        renderer._render = lambda template, here, **context: calls.append(here) or plain(template, here, **context)
    pages = renderer.all_pages()
    if store is not None:
        store.save()
    return {p.url: p for p in pages}, renderer.site


def test_render_cache_gives_the_same_pages_and_renders_only_what_an_edit_shows(entries, tmp_path):
    """Warm: no cell, pointer, disambiguation or listing page is rendered again. After one edited
    title: exactly the pages that show that cell (its page, its pointer pages, the pages of the
    cells that link to it, a disambiguation page it is on, the listings it is on) and the few
    pages never cached (matrix, freshness, rules, browse)."""
    plain, site = _render(entries)
    cold_calls, warm_calls = [], []
    cold, _ = _render(entries, cache_mod.Cache("render", tmp_path / "cache"), cold_calls)
    warm, _ = _render(entries, cache_mod.Cache("render", tmp_path / "cache"), warm_calls)
    assert cold == warm == plain
    cell_pages = {p.url for p in plain.values() if p.kind in ("cell", "pointer", "disambiguation")}
    cell_pages |= {u for u in plain if u.startswith("by/") and u.count("/") > 2}  # facet listings
    assert cell_pages and not cell_pages & set(warm_calls)
    listings = set(warm_calls)

    edited = next(c for c in site.cells if c.entry.related and len(c.entry.signatures) > 1)
    path = entries / f"{edited.id}.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(f"title: {edited.entry.title}",
                                                            "title: A new title for this cell", 1), encoding="utf-8")
    calls = []
    after, site_after = _render(entries, cache_mod.Cache("render", tmp_path / "cache"), calls)
    assert after == _render(entries)[0]
    # Rendered again: exactly the pages whose bytes change, and the pages that are never cached.
    changed = {u for u, p in after.items() if warm.get(u) != p}
    assert set(calls) == changed | listings
    shows = {site.url(edited)} | {site_after.url(c) for c in site_after.cells
                                  if any(r.id == edited.id for r in c.entry.related)}
    shows |= {u for u, p in after.items() if p.kind in ("pointer", "disambiguation")
              and edited.entry.signatures[0].text != p.title and any(s.text == p.title for s in edited.entry.signatures)}
    listed = {u for u, p in after.items() if p.kind == "index" and u.startswith("by/") and u.count("/") > 2
              and "A new title for this cell" in p.body}
    assert shows | listed <= changed and listed


@pytest.mark.slow
def test_pages_rendered_on_every_core_equal_those_rendered_in_one_process(entries, tmp_path):
    """Past PARALLEL_FROM missing pages, cell and literal pages are rendered by worker processes:
    the same pages, byte for byte, and a warm run renders none of them again. Run in a process of
    its own: the workers are forked only from a process without other threads (a browser test
    before this one leaves Playwright's)."""
    import sys

    script = """
import sys
from pathlib import Path
from kb import cache as cache_mod
from kb.records import lint
from kb.site import pages

entries, folder, repo = Path(sys.argv[1]), Path(sys.argv[2]), "https://github.com/example/kb"
site = pages.Site(lint.check([entries]).cells)
plain = {p.url: p for p in pages.Renderer(site, repo).all_pages()}  # fewer pages than PARALLEL_FROM
pages.PARALLEL_FROM = 2
ahead = pages.Renderer(site, repo)
assert ahead.render_ahead() >= len(site.cells)
assert {p.url: p for p in ahead.all_pages()} == plain
cached = pages.Renderer(site, repo, cache_mod.Cache("render", folder))
assert {p.url: p for p in cached.all_pages()} == plain
cached.cache.save()
warm = pages.Renderer(site, repo, cache_mod.Cache("render", folder))
assert warm.render_ahead() == 0
assert {p.url: p for p in warm.all_pages()} == plain and warm.keys == cached.keys
print("same pages")
"""
    done = subprocess.run([sys.executable, "-c", script, str(entries), str(tmp_path / "cache")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "same pages", done.stderr


def test_the_entries_state_changes_with_any_write_even_when_size_and_mtime_are_put_back(tmp_path):
    """kb match keys its cached rules by the entry files' state, not their bytes: a rewrite that
    keeps the size and sets the modification time back is still a new key (the change time)."""
    import os
    import time

    folder = tmp_path / "entries"
    shutil.copytree(FIXTURES / "site", folder)
    first = cache_mod.entries_state(folder)
    assert first is not None and first == cache_mod.entries_state(folder)
    path = sorted(folder.glob("*.yaml"))[0]
    before = path.stat()
    time.sleep(0.01)
    path.write_bytes(path.read_bytes().replace(b"a", b"b", 1))  # other bytes, the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert cache_mod.entries_state(folder) != first
    (folder / "notes.txt").write_text("not an entry", encoding="utf-8")
    assert cache_mod.entries_state(folder) is None  # the check then says what is wrong
    (folder / "notes.txt").unlink()
    (folder / "linked.yaml").symlink_to(path)
    assert cache_mod.entries_state(folder) is None
    assert cache_mod.entries_state(tmp_path / "missing") is None
