"""Thin mkdocs adapter: hands the output of `kb.site.generate` to mkdocs and indexes the built site.

All generation lives in `kb/`; this file only maps it onto mkdocs events. What `kb build` hands
it (and what it hands the theme) is declared in kb/site/hookconfig.py.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

from markupsafe import escape
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from kb.site import hookconfig, indent, index, search, shell, sources
from kb.site.generate import GenerateError
from kb.site.hookconfig import BuildPlan, ThemeValues
from kb.site.page import Page
from kb.site.paths import OutsideSite, inside

log = logging.getLogger("mkdocs.hooks.kb")


@dataclass
class Run:
    """What the events of one engine build share, kept on that build's config (`hookconfig.RUN`)
    rather than in this module, which mkdocs loads once and shares between builds."""

    plan: BuildPlan
    pages: dict[str, Page]  # source path -> the generated page the theme renders there (stand-ins included)
    stand_ins: dict[str, str]  # source path of a stand-in -> the kind of shell it makes (kb.site.shell)
    theme: ThemeValues  # the template global `kb`
    shells: dict[str, shell.Shell] = field(default_factory=dict)  # kind -> the theme's output for its stand-in
    fragments: dict[str, str | None] = field(default_factory=dict)  # URL -> the generated part of its page
    splices: dict[str, tuple[str, str] | None] = field(default_factory=dict)  # site path -> output around it


def _run(config) -> Run:
    return config[hookconfig.RUN]


def on_config(config):
    try:
        plan = hookconfig.received(config) or _plan(config)
    except hookconfig.PlanError as exc:
        raise PluginError(str(exc)) from exc
    layout = plan.layout
    # Pages outside the navigation share the theme's chrome within a folder: the theme renders one
    # stand-in per folder (kb.site.shell) and on_post_build fills it for each page; the pages the
    # navigation lists go through the theme one by one.
    config[hookconfig.RUN] = Run(
        plan, pages={p.src: p for p in layout.rendered + list(layout.stand_ins.values())},
        stand_ins={p.src: kind for kind, p in layout.stand_ins.items()},
        # The search box's filter menus are filled in every page (theme main.html) rather than on first use.
        theme=ThemeValues(layout.repo_url, search.menus(layout.generated.renderer.site), layout.sitemap))
    # mkdocs stamps sitemap.xml.gz and page dates with the build time unless told otherwise:
    # use the newest record date, so two builds of one commit give the same bytes.
    os.environ["SOURCE_DATE_EPOCH"] = str(layout.epoch)
    log.info("kb: %d pages and %d data files in %.2fs", len(layout.generated.pages), len(layout.generated.files),
             layout.generated.seconds)
    return config


def _plan(config) -> BuildPlan:
    """The plan of mkdocs run directly, not through `kb build` (which checked the same before):
    the site mkdocs.yml's settings describe, indexed by the hook."""
    refused = sources.problems(Path(config["docs_dir"]), Path(config["config_file_path"]))
    if refused:
        raise PluginError("\n".join(p.format() for p in refused))
    config_file = Path(config["config_file_path"])
    try:
        layout = shell.layout(hookconfig.settings(config["extra"], config_file), config["site_url"], config["nav"],
                              config_file.parent)
    except GenerateError as exc:
        raise PluginError(str(exc)) from exc
    return hookconfig.plan(layout=layout, index_search=True, keep=None)


def on_env(env, config, files):
    env.globals["kb"] = _run(config).theme
    return env


def _inside(config, path: str) -> Path:
    """Where the site file `path` goes; never outside the site (kb.site.paths)."""
    try:
        return inside(Path(config["site_dir"]), path)
    except OutsideSite as exc:
        raise PluginError(f"kb: refusing to write {exc}") from None


@event_priority(100)
def on_files(files, config):
    run = _run(config)
    for src in run.pages:
        _inside(config, src)
        files.append(File.generated(config, src, content=""))
    for path, content in sorted(run.plan.layout.generated.files.items()):
        _inside(config, path)
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    run = _run(config)
    generated = run.pages.get(page.file.src_uri)
    if generated is not None:
        # Material writes both into <title> and <meta> unescaped: escape here, once.
        page.meta["title"] = str(escape(generated.title))
        page.meta["description"] = str(escape(generated.description))
        if generated.updated:
            page.meta["kb_updated"] = generated.updated
        if generated.jsonld:
            page.meta["kb_jsonld"] = generated.jsonld
        if generated.canonical:  # a variant page defers to its entry's (kb.site.pages): not in the sitemap
            page.meta["kb_canonical"] = generated.canonical
            if page.canonical_url:
                page.canonical_url = urljoin(config["site_url"], generated.canonical)
        run.fragments[page.url] = generated.body
        return markdown
    filled: list[str] = []

    def fill(match):
        if match.group(1) == "newest":
            filled.append(run.plan.layout.generated.renderer.newest(page.url))
            return filled[-1]
        raise PluginError(f"{page.file.src_uri}: unknown marker <!-- kb:{match.group(1)} -->")

    markdown = shell.MARKER.sub(fill, markdown)
    if filled:
        run.fragments[page.url] = filled[0] if len(filled) == 1 else None
    return markdown


def on_page_content(html, page, config, files):
    generated = _run(config).pages.get(page.file.src_uri)
    return generated.body if generated is not None else html


def on_post_page(output, page, config):
    # The theme's indentation goes (kb.site.indent) from the chrome only: a generated body is kept as
    # it is, since shells and `kb build`'s splices put bodies in place without passing through here.
    run = _run(config)
    kind = run.stand_ins.get(page.file.src_uri)
    fragment = run.fragments.get(page.url) if kind is None else None
    if fragment is not None and output.count(fragment) == 1:
        # Kept so `kb build` can put a new fragment in place next time (kb.site.incremental).
        before, after = (indent.strip(part) for part in output.split(fragment))
        run.splices[f"{page.url}index.html"] = (before, after)
        return before + fragment + after
    output = indent.strip(output)
    if kind is not None:
        run.shells[kind] = shell.Shell(output, kind)
    elif page.url in run.fragments:
        run.splices[f"{page.url}index.html"] = None
    return output


def on_post_build(config):
    run = _run(config)
    layout = run.plan.layout
    site_dir = Path(config["site_dir"])
    for src in run.stand_ins:
        stand_in = run.pages[src]
        _inside(config, f"{stand_in.url}index.html").unlink()
        _inside(config, stand_in.url).rmdir()
    for page in layout.filled:
        target = _inside(config, f"{page.url}index.html")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(run.shells[shell.kind_of(page)].fill(page), encoding="utf-8")
    if run.plan.keep is not None:  # `kb build` keeps the shells to rebuild the site in place next time
        sitemap = (site_dir / "sitemap.xml").read_text(encoding="utf-8")
        cut = bool(layout.sitemap) and sitemap.count(layout.sitemap) == 1
        run.splices["sitemap.xml"] = tuple(sitemap.split(layout.sitemap)) if cut else None
        run.plan.keep(dict(run.shells), dict(run.splices))
    if not run.plan.index_search:
        return  # kb build indexes the site itself, once its pages are in place
    started = time.perf_counter()
    try:
        urls = index.indexed_urls(layout.generated.pages)
        summary = index.build_index(site_dir, site_dir / index.FOLDER, urls)
    except index.SearchIndexError as exc:
        raise PluginError(str(exc)) from exc
    log.info("kb: search index of %s pages in %.2fs", summary.pages, time.perf_counter() - started)
