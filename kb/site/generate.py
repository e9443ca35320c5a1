"""The whole pipeline, engine-independent: entries -> checked cells -> pages and data files.

`generate()` is what a static-site engine adapter (hooks/kb_pages.py for mkdocs) calls; it
hands on the pages to render inside the theme and the files to write as they are.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

from kb.cache import code_fingerprint, for_folders, fingerprint
from kb.doctor import facts  # the JSON Schema of `kb doctor`'s facts is published with the exports
from kb.records import families, ids, lint
from kb.records import redirects as redirects_file
from kb.records.catalog import Site
from kb.site import export, search, stack, triage, urls
from kb.site.page import Page
from kb.site.pages import Renderer
from kb.triage import evidence, familyanswer, rules, run


class GenerateError(RuntimeError):
    pass


@dataclass
class Generated:
    renderer: Renderer
    pages: list[Page]
    files: dict[str, str]  # site path -> content, written as is
    published: list[str]  # every URL the site publishes (pages, data files, hand-written pages)
    seconds: float


def _cached(cache, key_parts: list[str], make):
    """`make()`, kept in `cache` under the code and `key_parts` (what it reads of the records)."""
    if cache is None:
        return make()
    return cache.fetch(fingerprint(code_fingerprint(), *key_parts), make)


def _searched(site) -> list[str]:
    """What the search literals read of each cell: its URL, title, signatures and filters."""
    return [repr((site.url(c), c.entry.title, [s.text for s in c.entry.signatures], search.filters(c.entry)))
            for c in site.cells]


def generate(entries: Path, site_url: str | None = None, lock: Path | None = None,
             redirects: Path | None = None, checked: lint.Result | None = None,
             repo_url: str | None = None, id_lock: Path | None = None) -> Generated:
    """Everything the site publishes. `checked` is the result of `lint.check([entries])` when the
    caller already has it (`kb build` checks before it starts the engine). `id_lock`: the cells'
    citable ids (kb.records.ids; cells it lacks get the next numbers, as `kb lock` would give them)."""
    started = time.perf_counter()
    result = checked if checked is not None else lint.cached_check([entries])
    if result.problems:
        shown = "\n".join(p.format() for p in result.problems[:50])
        raise GenerateError(f"{len(result.problems)} problem(s) in the entries; run `kb check`:\n{shown}")
    locked_ids, id_problems = ids.read(id_lock)
    if id_problems:
        raise GenerateError("the id lock breaks its rules; run `kb check`:\n"
                            + "\n".join(p.format() for p in id_problems[:50]))
    family_records, family_problems = families.load_families(families.folder_for(entries))
    if family_problems:
        raise GenerateError(f"{len(family_problems)} problem(s) in the families; run `kb check`:\n"
                            + "\n".join(p.format() for p in family_problems[:50]))
    site = Site(result.cells, locked_ids, family_records)
    cache = for_folders("render", [entries])
    renderer = Renderer(site, repo_url, cache)
    per_cell = export.cell_exports(site, site_url, cache)
    by_cell_url = {site.url(c): c for c in site.cells}
    pages = [dataclasses.replace(p, jsonld=per_cell[by_cell_url[p.url].id][2])
             if p.kind == "cell" else p for p in renderer.all_pages()]
    files = export.files(site, site_url, facts.json_schema(), per_cell)
    files["triage/patterns.json"] = json.dumps(
        run.patterns(rules.rules(result.cells, cache), evidence.rules(result.cells),
                     (familyanswer.answers(family_records), familyanswer.rules(family_records)))
        | {"results": triage.results(site)},
        separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"
    files[stack.DATA] = stack.data(site)
    files.update(_cached(cache, ["literals", *_searched(site)], lambda: search.literal_files(site)))
    if cache is not None:
        cache.save()
    # A URL by citable id (id/BWKB-2026-0001/) sends readers to the cell's page: a redirect page
    # like those of kb/redirects.yaml, written through the same writer.
    by_id = {ids.url(site.citable[c.id]): site.url(c) for c in site.cells}
    for old, new in by_id.items():
        files[redirects_file.written_path(old)] = urls.redirect_page(old, new, site_url)
    current = urls.published([p.url for p in pages] + list(by_id), [f for f in files if f.removesuffix("index.html")
                                                                    not in by_id])
    if lock is not None and lock.exists():
        locked = urls.read_lock(lock)
        found, problems = redirects_file.read_file(redirects, locked) if redirects is not None else ([], [])
        # The same rules as `kb check` (kb.site.urls.site_problems), here against the files really
        # generated: a redirect never writes where the build writes a file of its own.
        written = {f"{p.url}index.html" for p in pages} | set(files) | set(urls.BUILD_FILES)
        written |= {f"{url}index.html" for url in urls.hand_written()} | set(urls.static_files())
        problems += urls.redirect_problems(found, redirects, set(current), written)
        if problems:
            raise GenerateError("the redirects break their rules; run `kb check`:\n"
                                + "\n".join(p.format() for p in problems[:50]))
        moved = {r.old: r.new for r in found}
        try:
            urls.check(locked, current, moved, lock, redirects)
        except urls.PermanenceError as exc:
            raise GenerateError(str(exc)) from exc
        for old, new in moved.items():
            if old.endswith(".json"):
                files[old] = json.dumps({"moved_to": export.absolute(site_url, new)}, indent=2) + "\n"
            else:
                files[redirects_file.written_path(old)] = urls.redirect_page(old, new, site_url)
    return Generated(renderer, pages, files, current, time.perf_counter() - started)
