import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")


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
    """The catalog of an entries folder that must check clean."""
    from kb.records import lint
    from kb.records.catalog import Site

    result = lint.check([entries])
    assert result.problems == []
    return Site(result.cells)


@pytest.fixture(scope="session")
def live_site(tmp_path_factory) -> Path:
    """The site built from kb/entries/, once per test run."""
    return _build(ROOT / "kb" / "entries", tmp_path_factory.mktemp("live") / "site")


@pytest.fixture(scope="session")
def fixture_site(tmp_path_factory) -> Path:
    """The site built from tests/fixtures/site/ (hostile string, a shared look-alike line)."""
    return _build(FIXTURES / "site", tmp_path_factory.mktemp("fixture") / "site")


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
