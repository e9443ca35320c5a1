import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")

# Hypothesis, chosen by HYPOTHESIS_PROFILE: `ci` (the default, what `make test` runs) keeps each
# test's own example count; `fast` (`make test-fast`) caps every test at FAST_EXAMPLES. Every
# property here sets its own @settings(max_examples=...), which wins over a profile, so the cap is
# put on each test's settings in pytest_collection_modifyitems.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

FAST_EXAMPLES = 20
_hypothesis_settings.register_profile("ci")
_hypothesis_settings.register_profile("fast", max_examples=FAST_EXAMPLES)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Fixtures that open Chromium, and the marker their tests get.
_BROWSER_FIXTURES = {"page", "browser"}


def builds_site(fixture):
    """Mark a fixture function as one that builds a site (mkdocs, Pagefind): every test using it,
    directly or through another fixture, is marked `build` (not run by `make test-fast`)."""
    fixture.builds_site = True
    return fixture


def pytest_collection_modifyitems(config, items):
    """Mark `browser` every test that opens Chromium and `build` every test that needs a built
    site, so that `-m "not browser and not build and not slow"` is the quick run."""
    fast = _hypothesis_settings.default.max_examples == FAST_EXAMPLES
    for item in items:
        # The settings @given reads when the test runs (hypothesis keeps them on the test function).
        own = getattr(getattr(item, "obj", None), "_hypothesis_internal_use_settings", None)
        if fast and own is not None and own.max_examples > FAST_EXAMPLES:
            item.obj._hypothesis_internal_use_settings = _hypothesis_settings(own, max_examples=FAST_EXAMPLES)
        names = set(getattr(item, "fixturenames", ()))
        if names & _BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info else ()
        if any(getattr(d.func, "builds_site", False) for chain in defs for d in chain):
            item.add_marker(pytest.mark.build)


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    """Paths in messages are shown relative to the working directory: run from the repo root."""
    monkeypatch.chdir(ROOT)
    yield


def _build(entries: Path, out: Path, **kwargs) -> Path:
    from kb.site import build

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert build.build(out, entries, **kwargs) == 0
    finally:
        os.chdir(cwd)
    return out


def checked_site(entries: Path):
    """The catalog of an entries folder that must check clean, with the citable ids of its lock
    (kb/ids.lock beside the entries), as the build numbers them."""
    from kb.records import families, ids, lint
    from kb.records.catalog import Site

    result = lint.check([entries])
    assert result.problems == []
    locked, problems = ids.read(ids.lock_for(entries))
    assert problems == []
    records, problems = families.load_families(families.folder_for(entries))
    assert problems == []
    return Site(result.cells, locked, records)


@pytest.fixture(scope="session")
@builds_site
def live_site(tmp_path_factory) -> Path:
    """The site built from kb/entries/, once per test run."""
    return _build(ROOT / "kb" / "entries", tmp_path_factory.mktemp("live") / "site")


@pytest.fixture(scope="session")
@builds_site
def fixture_site(tmp_path_factory) -> Path:
    """The site built from tests/fixtures/site/ (hostile string, a shared look-alike line)."""
    return _build(FIXTURES / "site", tmp_path_factory.mktemp("fixture") / "site")


# The address Edit and Report links point at in the built pages the reader-facing tests open.
EXAMPLE_REPO = "https://github.com/example/blackwell-kb"


@pytest.fixture(scope="session")
@builds_site
def live_site_with_repo(tmp_path_factory) -> Path:
    """The site built from kb/entries/ with Edit and Report links to EXAMPLE_REPO, once per run
    (the first-screen, phone, public-words and match tests share it)."""
    return _build(ROOT / "kb" / "entries", tmp_path_factory.mktemp("live-repo") / "site", repo_url=EXAMPLE_REPO)


@pytest.fixture(scope="session")
def browser():
    from browser import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: install Debian's chromium (make chromium)"
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()
