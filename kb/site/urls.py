"""URL permanence: every published URL is recorded in a lock file; none may vanish silently.

The lock (`kb/urls.lock`, one URL a line, from the site root) only grows: `kb lock` adds the URLs a
build publishes. A URL that is in the lock but no longer published must be given a target in
`kb/redirects.yaml` (`old: new`); the build then writes a redirect page at the old URL.
"""

from __future__ import annotations

from pathlib import Path

from kb.records import redirects
from kb.records.load import dotted
from kb.records.problems import Problem

SITE_SRC = Path(__file__).resolve().parents[2] / "site_src"
# The lock and redirects of the repository's own entries, as mkdocs.yml names them (`kb check` reads them).
OWN_LOCK = SITE_SRC.parent / "kb" / "urls.lock"
OWN_REDIRECTS = SITE_SRC.parent / "kb" / "redirects.yaml"


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
    from kb.records import ids
    from kb.records.catalog import RULES_URL, facet_url, paged_urls, string_url
    from kb.site import familypages, freshness, matrix

    urls = {string_url(text) for text in site.owners}
    urls.update({"by/", "triage/", "stack/"})
    urls.update(paged_urls("all/", len(site.cells)))  # every failure, paged (kb.site.pages.ALL_URL)
    for facet, groups in site.facet_index.items():
        urls.add(facet_url(facet))
        for value, (_, cells) in groups.items():
            urls.update(paged_urls(facet_url(facet, value), len(cells)))
    urls.update(matrix.urls(site.cells))
    urls.update(freshness.urls(site.cells))
    urls.add(RULES_URL)
    urls.update(familypages.urls(site))
    urls.update(ids.url(citable) for citable in site.citable.values())
    return sorted(urls)


# Files the site's own scripts fetch, named by how the data is split (the search box's shards of
# literal strings) or shaped for one page (the My stack page's cells): they change with the data and
# the page and are no promise to anyone, like Pagefind's files.
INTERNAL = ("search/literals/", "stack/stack.json")


def published(page_urls: list[str], export_paths: list[str], site_src: Path = SITE_SRC) -> list[str]:
    """Every URL the site promises to keep: its pages, its data files but the internal ones, and
    the hand-written pages."""
    exports = [path for path in export_paths if not path.startswith(INTERNAL)]
    return sorted(set(page_urls) | set(exports) | set(hand_written(site_src)))


def read_lock(path: Path) -> list[str]:
    """The locked URLs, site-relative ('' is the home page); the file writes each with a leading '/'."""
    from kb.site import sources

    return [line.strip().removeprefix("/") for line in sources.read_regular_text(path).splitlines()
            if line.strip() and not line.startswith("#")]


def check(locked: list[str], current: list[str], redirects: dict[str, str], lock_path: Path,
          redirects_path: Path) -> None:
    """Every locked URL is still published or has a redirect (the redirects themselves are
    checked by `redirect_problems`)."""
    now = set(current)
    problems = []
    for url in locked:
        if url in now:
            continue
        if url not in redirects:
            problems.append(f"{lock_path}: published URL {url!r} is gone; add '{url}: <new URL>' to {redirects_path} "
                            "(or restore the page)")
    if problems:
        raise PermanenceError("\n".join(problems))


# What the build writes besides the pages and the data files kb generates: the theme's and the
# hand-written pages' assets, the search index, the engine's own files, the site's marker.
BUILD_FOLDERS = ("assets/", "search/", "pagefind/")
BUILD_FILES = ("404.html", "sitemap.xml", "sitemap.xml.gz", ".kb-site")


def static_files(site_src: Path = SITE_SRC) -> list[str]:
    """The site paths of the files the engine copies from the hand-written pages' folder."""
    return sorted(p.relative_to(site_src).as_posix() for p in site_src.rglob("*")
                  if p.suffix != ".md" and not p.is_dir())


def redirect_problems(moved: list[redirects.Redirect], path: Path, published: set[str], written: set[str],
                      folders: tuple[str, ...] = BUILD_FOLDERS) -> list[Problem]:
    """What the redirects of the file at `path` break against the site: KB072, the target is not
    a URL the site publishes; KB073, the old URL still is; KB074, the file the redirect would
    write (`kb.records.redirects.written_path`) is one the build writes itself (`written`, site
    paths), lies inside one of `folders` or one of those files, or would hold one of them."""
    problems: list[Problem] = []
    for r in moved:
        if r.new not in published:
            problems.append(Problem(path, r.line, r.old, "the new URL is not a URL the site publishes; give the "
                                    "page's or export's URL as the site has it now", "KB072", r.new))
        if r.old in published:
            problems.append(Problem(path, r.line, r.old, "the old URL is still published; remove the redirect",
                                    "KB073", r.old))
            continue
        target = redirects.written_path(r.old)
        parts = target.split("/")
        above = {"/".join(parts[:n]) for n in range(1, len(parts))}
        if (target in written or above & written or target.startswith(folders)
                or any(p.startswith(target + "/") for p in written)):
            problems.append(Problem(path, r.line, r.old, f"a redirect from here would write {target!r}, where the "
                                    "build writes a file of its own (theme assets, search index, exports, the "
                                    "feed, the sitemap); remove the line", "KB074", r.old))
    return problems


def site_problems(cells, lock: Path | None, redirects_file: Path | None, site_src: Path = SITE_SRC,
                  id_lock: Path | None = None) -> list[Problem]:
    """The checks of the site as a whole, known from the checked `cells` without rendering (what
    `kb check` and `kb build` run before the engine): every URL short enough (KB075), the
    redirects of `redirects_file` (KB070-KB074) against the URLs locked in `lock`, and the id lock
    `id_lock` (KB077-KB079, kb.records.ids) against the cells and `lock`."""
    from kb.records import ids
    from kb.records.catalog import Site
    from kb.site import export

    from kb.records import families

    locked_ids, _ = ids.read(id_lock)
    # The families the cells name (their own problems are the check's to report): their pages are published too.
    found_families = families.load_families(families.folder_for(cells[0].path))[0] if cells else []
    site = Site(cells, locked_ids, found_families)
    pages = page_urls(site)
    exports = export.paths(site)
    problems = segment_problems(site, pages + exports)
    # A lock that is a link (or not a regular file) is KB076 and not read: no check runs on what it
    # points at, and none of its lines is shown.
    from kb.site import sources

    refused = sources.unreadable(lock) if lock is not None else None
    if refused is not None:
        problems.append(refused)
    readable = lock is not None and refused is None and lock.is_file()
    if id_lock is not None:
        problems += ids.problems(id_lock, cells, read_lock(lock) if readable else [])
    if redirects_file is None:
        return problems
    locked = read_lock(lock) if readable else None
    moved, found = redirects.read_file(redirects_file, locked)
    problems += found
    now = set(published(pages, exports, site_src))
    written = {f"{url}index.html" for url in pages + hand_written(site_src)} | set(exports) | set(BUILD_FILES)
    written |= {"triage/patterns.json", "stack/stack.json"} | set(static_files(site_src))
    return problems + redirect_problems(moved, redirects_file, now, written)


def segment_problems(site, urls: list[str]) -> list[Problem]:
    """KB075: every URL the site would publish (`urls`) has segments of at most
    MAX_SEGMENT_BYTES bytes, a folder or file name any file system can hold. Each long URL is
    reported at the value of the record it comes from (a GPU name, an upstream repository, a
    component, the id), else at the first cell's file."""
    from kb.records.catalog import facet_url, string_url
    from kb.records.facets import key, repository, values

    long = sorted(u for u in urls if any(len(s.encode("utf-8")) > redirects.MAX_SEGMENT_BYTES for s in u.split("/")))
    if not long:
        return []
    where: dict[str, tuple] = {}
    for cell in site.cells:
        e = cell.entry
        for loc_url, loc in ([(f"api/v1/cells/{cell.id}.json", ()), (f"osv/{cell.id}.json", ())]
                             + [(string_url(s.text), ("signatures", i, "text")) for i, s in enumerate(e.signatures)]
                             + [(facet_url("gpu", k), ("hardware", "gpus", i))
                                for i, (k, _) in enumerate(values("gpu", e))]
                             + [(facet_url("component", k), ("components", i, "package"))
                                for i, (k, _) in enumerate(values("component", e))]):
            where.setdefault(loc_url, (cell, loc))
        for i, link in enumerate(e.upstream):
            where.setdefault(facet_url("upstream", key(repository(link.url))), (cell, ("upstream", i, "url")))
    problems = []
    for url in long:
        base = next((w for u, w in where.items() if url == u or url.startswith(u)), None)
        cell, loc = base if base is not None else (site.cells[0], ())
        field = dotted(loc) if loc else "(file name)"
        problems.append(Problem(cell.path, cell.line_of(loc) if loc else 1, field,
                                f"this makes the URL {url[:120]!r} with a segment over {redirects.MAX_SEGMENT_BYTES} "
                                "bytes, more than a folder or file name of the site may be; shorten it", "KB075"))
    return problems


def write_lock(path: Path, locked: list[str], current: list[str]) -> list[str]:
    """Add the current URLs to the lock; returns the URLs added."""
    from kb.site import sources

    added = sorted(set(current) - set(locked))
    lines = sorted(set(locked) | set(current))
    sources.write_regular(path, ("# Every URL this site has published. Managed by `kb lock`; see kb/site/urls.py.\n"
                                 + "\n".join("/" + url for url in lines) + "\n").encode("utf-8"))
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
