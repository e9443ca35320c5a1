"""Thin mkdocs adapter: hands the output of `kb.site.generate` to mkdocs and indexes the built site.

All generation lives in `kb/`; this file only maps it onto mkdocs events.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from markupsafe import escape
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from kb.site import index, search, shell, sources
from kb.site.paths import OutsideSite, inside
from kb.site.generate import GenerateError

log = logging.getLogger("mkdocs.hooks.kb")
_state: dict = {}


def on_config(config):
    # mkdocs.yml names the entries, the URL lock and the redirects; `kb build` may set them in
    # this build's config, and hands on the site it generated (`kb_layout`).
    extra = config["extra"]
    layout = extra.pop("kb_layout", None)
    if layout is None:  # mkdocs run directly, not through `kb build` (which checked the same before)
        refused = sources.problems(Path(config["docs_dir"]), Path(config["config_file_path"]))
        if refused:
            raise PluginError("\n".join(p.format() for p in refused))
        try:
            layout = shell.layout(extra, config["site_url"], config["nav"], Path(config["config_file_path"]).parent)
        except GenerateError as exc:
            raise PluginError(str(exc)) from exc
    # The theme's footer and the cells' Edit and Report links use the repository.
    extra["kb_repo_url"] = layout.repo_url
    # Pages outside the navigation share the theme's chrome within a folder: the theme renders one
    # stand-in per folder (kb.site.shell) and on_post_build fills it for each page; the pages the
    # navigation lists go through the theme one by one.
    _state.update(layout=layout, generated=layout.generated, filled=layout.filled,
                  stand_ins={p.src: kind for kind, p in layout.stand_ins.items()}, shells={}, fragments={}, splices={},
                  pages={p.src: p for p in layout.rendered + list(layout.stand_ins.values())})
    extra["kb_sitemap_xml"] = layout.sitemap
    # The search box's filter menus, filled in every page (theme main.html) rather than on first use.
    extra["kb_filter_menus"] = search.menus(layout.generated.renderer.site)
    # mkdocs stamps sitemap.xml.gz and page dates with the build time unless told otherwise:
    # use the newest record date, so two builds of one commit give the same bytes.
    os.environ["SOURCE_DATE_EPOCH"] = str(layout.epoch)
    log.info("kb: %d pages and %d data files in %.2fs", len(layout.generated.pages), len(layout.generated.files),
             layout.generated.seconds)
    return config


def _inside(config, path: str) -> Path:
    """Where the site file `path` goes; never outside the site (kb.site.paths)."""
    try:
        return inside(Path(config["site_dir"]), path)
    except OutsideSite as exc:
        raise PluginError(f"kb: refusing to write {exc}") from None


@event_priority(100)
def on_files(files, config):
    for src in _state["pages"]:
        _inside(config, src)
        files.append(File.generated(config, src, content=""))
    for path, content in sorted(_state["generated"].files.items()):
        _inside(config, path)
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
        _state["fragments"][page.url] = generated.body
        return markdown
    filled: list[str] = []

    def fill(match):
        if match.group(1) == "newest":
            filled.append(_state["generated"].renderer.newest(page.url))
            return filled[-1]
        raise PluginError(f"{page.file.src_uri}: unknown marker <!-- kb:{match.group(1)} -->")

    markdown = shell.MARKER.sub(fill, markdown)
    if filled:
        _state["fragments"][page.url] = filled[0] if len(filled) == 1 else None
    return markdown


def on_page_content(html, page, config, files):
    generated = _state["pages"].get(page.file.src_uri)
    return generated.body if generated is not None else html


def on_post_page(output, page, config):
    kind = _state["stand_ins"].get(page.file.src_uri)
    if kind is not None:
        _state["shells"][kind] = shell.Shell(output, kind)
    elif page.url in _state["fragments"]:
        # Kept so `kb build` can put a new fragment in place next time (kb.site.incremental).
        fragment = _state["fragments"][page.url]
        cut = fragment is not None and output.count(fragment) == 1
        _state["splices"][f"{page.url}index.html"] = tuple(output.split(fragment)) if cut else None
    return output


def on_post_build(config):
    site_dir = Path(config["site_dir"])
    for src in _state["stand_ins"]:
        stand_in = _state["pages"][src]
        _inside(config, f"{stand_in.url}index.html").unlink()
        _inside(config, stand_in.url).rmdir()
    for page in _state["filled"]:
        target = _inside(config, f"{page.url}index.html")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_state["shells"][shell.kind_of(page)].fill(page), encoding="utf-8")
    built = config["extra"].get("kb_built")
    if built is not None:  # `kb build` keeps the shells to rebuild the site in place next time
        sitemap = (site_dir / "sitemap.xml").read_text(encoding="utf-8")
        cut = bool(_state["layout"].sitemap) and sitemap.count(_state["layout"].sitemap) == 1
        _state["splices"]["sitemap.xml"] = tuple(sitemap.split(_state["layout"].sitemap)) if cut else None
        built.update(shells=dict(_state["shells"]), splices=dict(_state["splices"]))
    if config["extra"].get("kb_search_index") is False:
        return  # kb build indexes the site itself, once its pages are in place
    started = time.perf_counter()
    try:
        urls = index.indexed_urls(_state["layout"].generated.pages)
        summary = index.build_index(site_dir, site_dir / index.FOLDER, urls)
    except index.SearchIndexError as exc:
        raise PluginError(str(exc)) from exc
    log.info("kb: search index of %s pages in %.2fs", summary.pages, time.perf_counter() - started)
