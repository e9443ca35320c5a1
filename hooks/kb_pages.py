"""Thin mkdocs adapter: hands the pages of `kb.pages` to mkdocs and indexes the built site.

All generation lives in `kb/`; this file only maps it onto mkdocs events.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path

from markupsafe import escape
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from kb import lint, match, search
from kb.pages import Renderer, Site

log = logging.getLogger("mkdocs.hooks.kb")
_state: dict = {}
MARKER = re.compile(r"<!--\s*kb:([a-z-]+)\s*-->")


def on_config(config):
    entries = Path(os.environ.get("KB_ENTRIES") or config["extra"].get("kb_entries", "kb/entries"))
    started = time.perf_counter()
    result = lint.check([entries])
    if result.problems:
        shown = "\n".join(p.format() for p in result.problems[:50])
        raise PluginError(f"{len(result.problems)} problem(s) in the entries; run `kb check`:\n{shown}")
    renderer = Renderer(Site(result.cells))
    pages = {page.src: page for page in renderer.all_pages()}
    patterns = json.dumps(match.export(match.rules(result.cells)), indent=1, sort_keys=True, ensure_ascii=False)
    _state.update(renderer=renderer, pages=pages, patterns=patterns)
    log.info("kb: %d cells -> %d pages in %.2fs", len(result.cells), len(pages), time.perf_counter() - started)
    return config


@event_priority(100)
def on_files(files, config):
    for src in _state["pages"]:
        files.append(File.generated(config, src, content=""))
    files.append(File.generated(config, "triage/patterns.json", content=_state["patterns"]))
    return files


def on_page_markdown(markdown, page, config, files):
    generated = _state["pages"].get(page.file.src_uri)
    if generated is not None:
        # Material writes both into <title> and <meta> unescaped: escape here, once.
        page.meta["title"] = str(escape(generated.title))
        page.meta["description"] = str(escape(generated.description))
        return markdown

    def fill(match):
        if match.group(1) == "newest":
            return _state["renderer"].newest(page.url)
        raise PluginError(f"{page.file.src_uri}: unknown marker <!-- kb:{match.group(1)} -->")

    return MARKER.sub(fill, markdown)


def on_page_content(html, page, config, files):
    generated = _state["pages"].get(page.file.src_uri)
    return generated.body if generated is not None else html


def on_post_build(config):
    started = time.perf_counter()
    try:
        summary = search.build_index(Path(config["site_dir"]))
    except search.SearchIndexError as exc:
        raise PluginError(str(exc)) from exc
    pages = re.search(r"Indexed (\d+) pages?", summary)
    log.info("kb: search index of %s pages in %.2fs", pages.group(1) if pages else "?", time.perf_counter() - started)
