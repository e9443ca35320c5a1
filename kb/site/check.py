"""The checks of the site as a whole, run by `kb check` (of the repository's own entries) and by
`kb build` before the engine reads anything: the files the build reads besides the entries are
regular files (kb.site.sources, KB076), and the URLs, redirects and id lock agree with the checked
cells (kb.site.urls.site_problems, KB070-KB079). Hands back the problems; the callers print them."""

from __future__ import annotations

from pathlib import Path

from kb.records.problems import Problem
from kb.site import sources, urls


def problems(cells, config_file: Path, url_lock: Path | None, redirects: Path | None, id_lock: Path | None,
             docs_dir: Path | None = None, unlocked_ids: bool = False) -> list[Problem]:
    """Every whole-site problem of the checked `cells` for the build configured by `config_file`
    (its pages in `docs_dir`, the default site_src/ when None). With `unlocked_ids`, a cell the id
    lock lacks (KB078) is no problem: the build numbers it as `kb lock` will, without waiting."""
    found = sources.problems(docs_dir, config_file)
    found += [p for p in urls.site_problems(cells, url_lock, redirects, id_lock=id_lock)
              if not (unlocked_ids and p.code == "KB078")]
    return list(dict.fromkeys(found))  # a linked lock is KB076 both as a source and as a lock
