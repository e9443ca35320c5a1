"""URL permanence: every published URL is recorded in a lock file; none may vanish silently.

The lock (`kb/urls.lock`, one URL a line, from the site root) only grows: `kb lock` adds the URLs a
build publishes. A URL that is in the lock but no longer published must be given a target in
`kb/redirects.yaml` (`old: new`); the build then writes a redirect page at the old URL.
"""

from __future__ import annotations

from pathlib import Path

import yaml

SITE_SRC = Path(__file__).resolve().parents[2] / "site_src"


class PermanenceError(ValueError):
    pass


def hand_written(site_src: Path = SITE_SRC) -> list[str]:
    """URLs of the hand-written Markdown pages."""
    return [page_url(path, site_src) for path in sorted(site_src.rglob("*.md"))]


def page_url(path: Path, site_src: Path = SITE_SRC) -> str:
    """The URL (directory style, from the site root) of the hand-written page at `path`."""
    rel = path.relative_to(site_src).with_suffix("").as_posix()
    return "" if rel == "index" else rel.removesuffix("/index") + "/"


def page_urls(site) -> list[str]:
    """Every URL a site publishes for the cells and indexes of `site` (a kb.records.catalog.Site),
    sorted: what the renderer makes, known without rendering."""
    from kb.records.catalog import RULES_URL, facet_url, paged_urls, string_url
    from kb.site import freshness, matrix

    urls = {string_url(text) for text in site.owners}
    urls.update({"by/", "triage/"})
    for facet, groups in site.facet_index.items():
        urls.add(facet_url(facet))
        for value, (_, cells) in groups.items():
            urls.update(paged_urls(facet_url(facet, value), len(cells)))
    urls.update(matrix.urls(site.cells))
    urls.update(freshness.urls(site.cells))
    urls.add(RULES_URL)
    return sorted(urls)


# Files the site's own scripts fetch, named by how the data is split (the search box's shards of
# literal strings): they change with the data and are no promise to anyone, like Pagefind's files.
INTERNAL = ("search/literals/",)


def published(page_urls: list[str], export_paths: list[str], site_src: Path = SITE_SRC) -> list[str]:
    """Every URL the site promises to keep: its pages, its data files but the internal ones, and
    the hand-written pages."""
    exports = [path for path in export_paths if not path.startswith(INTERNAL)]
    return sorted(set(page_urls) | set(exports) | set(hand_written(site_src)))


def read_lock(path: Path) -> list[str]:
    """The locked URLs, site-relative ('' is the home page); the file writes each with a leading '/'."""
    return [line.strip().removeprefix("/") for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def read_redirects(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise PermanenceError(f"{path}: must be a mapping of old URL to new URL, both site-relative strings")
    return data


def check(locked: list[str], current: list[str], redirects: dict[str, str], lock_path: Path,
          redirects_path: Path) -> None:
    now = set(current)
    problems = []
    for url in locked:
        if url in now:
            continue
        if url not in redirects:
            problems.append(f"{lock_path}: published URL {url!r} is gone; add '{url}: <new URL>' to {redirects_path} "
                            "(or restore the page)")
    for old, new in sorted(redirects.items()):
        if new not in now:
            problems.append(f"{redirects_path}: redirect target {new!r} (from {old!r}) is not a published URL")
        if old in now:
            problems.append(f"{redirects_path}: {old!r} is still published; remove its redirect")
    if problems:
        raise PermanenceError("\n".join(problems))


def write_lock(path: Path, locked: list[str], current: list[str]) -> list[str]:
    """Add the current URLs to the lock; returns the URLs added."""
    added = sorted(set(current) - set(locked))
    lines = sorted(set(locked) | set(current))
    path.write_text("# Every URL this site has published. Managed by `kb lock`; see kb/site/urls.py.\n"
                    + "\n".join("/" + url for url in lines) + "\n", encoding="utf-8")
    return added


def redirect_page(old: str, new: str, site_url: str | None) -> str:
    """A standalone page at `old` sending readers (and search engines) to `new`."""
    from markupsafe import escape

    from kb.records.catalog import rel

    target = rel(old, new) if not new.endswith(".json") else rel(old, new).rstrip("/")
    canonical = (site_url.rstrip("/") + "/" + new) if site_url else target
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>Moved to {escape(new)}</title>\n"
            f"<link rel=\"canonical\" href=\"{escape(canonical)}\">\n"
            f"<meta http-equiv=\"refresh\" content=\"0; url={escape(target)}\">\n"
            "<meta name=\"robots\" content=\"noindex\">\n</head>\n<body>\n"
            f"<p>This page has moved to <a href=\"{escape(target)}\">{escape(new)}</a>.</p>\n</body>\n</html>\n")
