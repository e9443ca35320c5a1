"""Stage 3, lint: load and validate every entry, then check the records against each other.

`check(paths)` hands on the valid cells and every problem found, in file and line order.
Here: listing the files, the per-file pipeline (read, look up in the cache, parse, the prose
checks of kb.records.prosecheck, validation by kb.records.validate), on a process pool when
there are many, then the cross-record checks (kb.records.crosscheck). Nothing here writes a file.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kb.cache import code_fingerprint, fingerprint
from kb.records.crosscheck import _cross_checks
from kb.records.load import Loaded, load, not_regular, parse, read
from kb.records.problems import Problem
from kb.records.prosecheck import _internal_words, _todo_markers
from kb.records.schema import ID_PATTERN, Cell, Entry
from kb.records.validate import _validate


@dataclass
class Result:
    cells: list[Cell]
    problems: list[Problem]
    files: int


def _listed(paths: list[Path]) -> list[tuple[Path, bool]]:
    """(path, found in a folder) for each file named by `paths`: files as given, and every
    visible name in a folder, whatever it is (a folder, a link, a `.yml` file), so that `check`
    can refuse what is not an entry instead of skipping it. Hidden names (`.gitkeep`, editor
    files) are not entries and are skipped: they are never read or published. A link is never
    searched as a folder, even when named: a pull request can commit `kb/entries` itself, or a
    file a hook names, as a link to a folder outside the repository."""
    found: list[tuple[Path, bool]] = []
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            found.extend((child, True) for child in sorted(path.iterdir()) if not child.name.startswith("."))
        else:
            found.append((path, False))
    seen: set[Path] = set()  # a file named and also found in its folder (a broken link does) is checked once
    return [(path, in_folder) for path, in_folder in found if not (path in seen or seen.add(path))]


def entry_files(paths: list[Path]) -> list[Path]:
    """The files named by `paths`: files as given, and every visible name in a folder (see `check`
    for what is refused)."""
    return [path for path, _ in _listed(paths)]


def _not_an_entry(path: Path) -> Problem:
    """KB051: a file in an entries folder that is not named `*.yaml` is reported, not skipped."""
    return Problem(path, 1, "(file)", "an entries folder holds only <id>.yaml files: rename this file to .yaml "
                   "if it is an entry, or move it out of the folder (it was not read)", "KB051")


def _one_file(path: Path, cell_id: str, cache):
    """Read one file and look it up in `cache`: (problems, entry, lines) when it was refused
    unread or these bytes were checked by this code today, else (None, raw bytes, cache key)."""
    raw = read(path)
    if isinstance(raw, Loaded):
        return raw.problems, None, None
    key = None
    if cache is not None:
        # "today" is part of the key: a date in the future is refused until that day comes.
        key = fingerprint(cache.code, dt.date.today().isoformat(), cell_id, raw)
        hit = cache.get(key)
        if hit is not None:
            problems, entry, lines = hit
            return [dataclasses.replace(p, path=path) for p in problems], entry, lines
    return None, raw, key


def _parse_and_validate(job: tuple[Path, str, bytes]) -> tuple[list[Problem], Entry | None, dict | None]:
    """Load and validate one file's bytes: its problems, its entry (None when it is not valid)
    and the lines of its values (None when it is not a YAML mapping)."""
    path, cell_id, raw = job
    loaded = parse(path, raw)
    problems = list(loaded.problems)
    entry = None
    if loaded.data is not None:
        problems.extend(_todo_markers(loaded))
        problems.extend(_internal_words(loaded))
        entry, found = _validate(loaded, cell_id)
        problems.extend(found)
        entry = entry if not found else None  # a TODO marker (KB046) alone still makes a cell
    return problems, entry, loaded.lines if loaded.data is not None else None


PARALLEL_FROM = 256  # files to parse and validate at least, for the work to be shared between processes


def _parse_all(jobs: list[tuple[Path, str, bytes]]) -> list:
    """`_parse_and_validate` of every job, in order; on every core when there are many (each
    file is independent: the cross checks come after)."""
    workers = min(os.cpu_count() or 1, 8)
    if len(jobs) < PARALLEL_FROM or workers < 2:
        return [_parse_and_validate(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from kb.records.workers import die_with_parent, interrupts_held

    # spawn: fresh interpreters, never forked from this process (which may run threads), and
    # children of this process, so they die with it (a forkserver's children wait on the server,
    # which waits on them: killed, neither ever exits; attack review N4).
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        with interrupts_held():  # map hands out every job (starting the workers) before it returns
            results = pool.map(_parse_and_validate, jobs, chunksize=max(1, len(jobs) // (workers * 8)))
        return list(results)


def cached_check(paths: list[Path]) -> Result:
    """`check` with the content-hash cache under `.cache/kb/` (what the commands use)."""
    from kb.cache import for_folders

    cache = for_folders("check", paths)
    result = check(paths, cache)
    if cache is not None:
        cache.save()
    return result


def _family_checks(cells: list[Cell], paths: list[Path]) -> list[Problem]:
    """The family records beside the entries folder (kb.records.families), checked with the
    entries, and each entry's `family` against their ids (KB092). Only a folder's own families
    are reported: entries checked elsewhere (a fixture) are held to the shipped ones, unreported."""
    from kb.records import families

    if not paths:
        return []
    folder = families.folder_for(paths[0])
    own = [] if folder == families.HERE and paths[0].resolve().parent != families.HERE.parent else \
        families.load_families(folder)[1]
    return own + families.unknown_family(cells, folder)


def check(paths: list[Path], cache=None) -> Result:
    """Load, validate and cross-check the entries at `paths`. With a `kb.cache.Cache`, files whose
    bytes were checked before are not parsed or validated again."""
    if cache is not None:
        cache.code = code_fingerprint()
    files = _listed(paths)
    problems: list[Problem] = []
    read_files: list[tuple[Path, str, object]] = []  # (path, id, its check or the bytes to check)
    jobs: list[tuple[Path, str, bytes]] = []
    keys: list[str | None] = []
    for path, in_folder in files:
        cell_id = path.stem
        try:
            mode = path.lstat().st_mode  # the path itself: a broken link exists, and is refused below
        except OSError:
            problems.append(Problem(path, 1, "(file)", "no such file or folder", "KB001"))
            continue
        if not_regular(mode):
            problems.extend(load(path).problems)  # KB050 whatever its name: a link, pipe or folder is never read
            continue
        if in_folder and path.suffix != ".yaml":
            problems.append(_not_an_entry(path))
            continue
        if path.suffix != ".yaml" or not re.fullmatch(ID_PATTERN, cell_id):
            problems.append(Problem(path, 1, "(file name)",
                                    "entry files are named <id>.yaml, the id lowercase words, digits and hyphens",
                                    "KB010", path.name))
        found, got, lines = _one_file(path, cell_id, cache)
        if found is None:
            read_files.append((path, cell_id, len(jobs)))
            jobs.append((path, cell_id, got))
            keys.append(lines)
        else:
            read_files.append((path, cell_id, (found, got, lines)))
    checked = _parse_all(jobs)
    for job, key, result in zip(jobs, keys, checked):
        if key is not None:
            cache.put(key, result)
    cells: list[Cell] = []
    first_path: dict[str, Path] = {}
    for path, cell_id, done in read_files:
        found, entry, lines = checked[done] if isinstance(done, int) else done
        problems.extend(found)
        if lines is None:
            continue  # refused unread, or not a YAML mapping: it claims no id
        if cell_id in first_path:
            problems.append(Problem(path, 1, "(file name)",
                                    f"id is also used by {first_path[cell_id]}; rename one", "KB038", cell_id))
            continue
        first_path[cell_id] = path
        if entry is not None:
            cells.append(Cell(cell_id, path, entry, lines))
    problems.extend(_cross_checks(cells, set(first_path), cache))
    problems.extend(_family_checks(cells, paths))
    problems.sort(key=Problem.sort_key)
    return Result(cells=cells, problems=problems, files=len(files))
