"""Thin mkdocs adapter: hands the output of `kb.generate` to mkdocs and indexes the built site.

All generation lives in `kb/`; this file only maps it onto mkdocs events.
"""

from __future__ import annotations

import datetime
import logging
import os
import re
import threading
import time
from pathlib import Path

from markupsafe import escape
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from kb import search, shell
from kb.origin import origin_repo
from kb.generate import GenerateError, generate

log = logging.getLogger("mkdocs.hooks.kb")
_state: dict = {}
MARKER = re.compile(r"<!--\s*kb:([a-z-]+)\s*-->")


def _path(extra: dict, key: str) -> Path | None:
    return Path(extra[key]) if extra.get(key) else None


def on_config(config):
    # mkdocs.yml names the entries, the URL lock and the redirects; `kb build` may set them (and
    # hand on its check, `kb_checked`) in this build's config.
    extra = config["extra"]
    entries = Path(extra.get("kb_entries") or "kb/entries")
    # The theme's footer and the cells' Edit and Report links use the repository.
    extra["kb_repo_url"] = extra.get("kb_repo_url") or origin_repo(Path(config["config_file_path"]).parent)
    try:
        generated = generate(entries, config["site_url"] or None, _path(extra, "kb_url_lock"),
                             _path(extra, "kb_redirects"), checked=extra.pop("kb_checked", None),
                             repo_url=extra["kb_repo_url"])
    except GenerateError as exc:
        raise PluginError(str(exc)) from exc
    # Pages outside the navigation share the theme's chrome within a folder: the theme renders one
    # stand-in per folder (kb.shell) and on_post_build fills it for each page; the pages the
    # navigation lists go through the theme one by one.
    in_nav = _nav_sources(config["nav"] or [])
    rendered, filled = shell.without(generated.pages, in_nav) if extra.get("kb_shells", True) else (generated.pages, [])
    stand_ins = {kind: shell.stand_in(kind) for kind in sorted({shell.kind_of(p) for p in filled})}
    _state.update(generated=generated, filled=filled, stand_ins={p.src: kind for kind, p in stand_ins.items()},
                  shells={}, pages={p.src: p for p in rendered + list(stand_ins.values())})
    extra["kb_sitemap"] = [(p.url, p.updated) for p in filled]
    # mkdocs stamps sitemap.xml.gz and page dates with the build time unless told otherwise:
    # use the newest record date, so two builds of one commit give the same bytes.
    newest = max((p.updated for p in generated.pages if p.updated), default="2026-01-01")
    os.environ["SOURCE_DATE_EPOCH"] = str(int(datetime.datetime.fromisoformat(newest + "T00:00:00+00:00").timestamp()))
    log.info("kb: %d pages and %d data files in %.2fs", len(generated.pages), len(generated.files),
             generated.seconds)
    return config


@event_priority(100)
def on_files(files, config):
    for src in _state["pages"]:
        files.append(File.generated(config, src, content=""))
    for path, content in sorted(_state["generated"].files.items()):
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    generated = _state["pages"].get(page.file.src_uri)
    if generated is not None:
        # Material writes both into <title> and <meta> unescaped: escape here, once.
        page.meta["title"] = str(escape(generated.title))
        page.meta["description"] = str(escape(generated.description))
        if generated.updated:
            page.meta["kb_updated"] = generated.updated
        if generated.jsonld:
            page.meta["kb_jsonld"] = generated.jsonld
        return markdown

    def fill(match):
        if match.group(1) == "newest":
            return _state["generated"].renderer.newest(page.url)
        raise PluginError(f"{page.file.src_uri}: unknown marker <!-- kb:{match.group(1)} -->")

    return MARKER.sub(fill, markdown)


def on_page_content(html, page, config, files):
    generated = _state["pages"].get(page.file.src_uri)
    return generated.body if generated is not None else html


def _nav_sources(nav) -> set[str]:
    """The source paths that mkdocs.yml's navigation lists."""
    found: set[str] = set()
    for item in nav if isinstance(nav, list) else [nav]:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            found |= _nav_sources(value)
        elif isinstance(value, str):
            found.add(value)
    return found


def on_post_page(output, page, config):
    kind = _state["stand_ins"].get(page.file.src_uri)
    if kind is not None:
        _state["shells"][kind] = shell.Shell(output, kind)
    return output


def on_post_build(config):
    site_dir = Path(config["site_dir"])
    for src in _state["stand_ins"]:
        stand_in = _state["pages"][src]
        (site_dir / stand_in.url / "index.html").unlink()
        (site_dir / stand_in.url).rmdir()
    for page in _state["filled"]:
        folder = site_dir / page.url
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "index.html").write_text(_state["shells"][shell.kind_of(page)].fill(page), encoding="utf-8")
    if config["extra"].get("kb_search_index") is False:
        return  # kb build indexes the site itself, once its pages are in place
    if _state.get("serving"):
        # `mkdocs serve` reloads the browser when this returns: the edited page shows at once and
        # the search index follows a moment later. The next build waits for it (on_pre_build).
        _state["indexing"] = threading.Thread(target=_index, args=(site_dir, False), daemon=True)
        _state["indexing"].start()
        return
    _index(site_dir, True)


def _index(site_dir: Path, strict: bool) -> None:
    started = time.perf_counter()
    try:
        summary = search.build_index(site_dir)
    except search.SearchIndexError as exc:
        if strict:
            raise PluginError(str(exc)) from exc
        log.error("kb: %s", exc)
        return
    log.info("kb: search index of %s pages in %.2fs", search.pages_indexed(summary), time.perf_counter() - started)


def on_startup(command, dirty):
    _state["serving"] = command == "serve"


def on_pre_build(config):
    _wait_for_index()


def on_shutdown():
    _wait_for_index()


def _wait_for_index() -> None:
    indexing = _state.pop("indexing", None)
    if indexing is not None:
        indexing.join()
