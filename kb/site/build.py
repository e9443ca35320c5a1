"""`kb build`: check the entries, then build the whole site (pages and search index) atomically.

Before anything is touched the target is checked: `kb build` replaces the target folder whole,
so it refuses a file, a non-empty folder it did not build (no `.kb-site` marker), the repository,
the entries folder, anything holding either, anything inside the entries or `.git` (exit 2).

When an earlier build of the target left its state (`kb.site.incremental`) and only records changed,
the files whose content changed are rewritten in place (one rename each) without running the
engine; otherwise the site is built whole.

A whole site is built into a staging folder (in `.<name>.kb-work/` beside the target, the one
folder kb keeps them in) and moved in only when every stage succeeded, so a failed build never leaves a half-written or emptied site. Only files whose bytes
changed are moved, each with one rename over the old file: a reader never finds the site or a
page missing, and a rebuild with nothing changed touches no file. A lock
file beside the target (`.<name>.lock`) lets one build of a target run at a time; a second one
waits for it. Holding the lock, a build removes the staging folders that killed builds left in
the work folder, and nothing else beside the target.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kb.records import lint
from kb.site import hookconfig, incremental, index, shell
from kb.site.generate import GenerateError
from kb.site.paths import clear_work, inside, work_folder

ROOT = Path(__file__).resolve().parents[2]
MARKER = ".kb-site"
MARKER_TEXT = "Built by `kb build`. The next `kb build` into this folder replaces it whole.\n"


class _Progress(logging.Handler):
    """Prints the hook's stage lines (`kb: ...`) and every warning as the build goes."""

    def emit(self, record):
        message = record.getMessage()
        if record.levelno >= logging.WARNING:
            print(f"{record.levelname.lower()}: {message}", file=sys.stderr)
        elif message.startswith("kb: "):
            print(message.removeprefix("kb: "))


def refusal(site_dir: Path, entries: Path, config_file: Path) -> str | None:
    """Why building into `site_dir` (which replaces it whole) would destroy something; None if safe."""
    from kb.site.sources import linked

    fix = "name a folder of its own, e.g. -d site"
    target, repo, entries = site_dir.resolve(), config_file.resolve().parent, entries.resolve()
    if target == repo:
        return f"it is the repository root (it holds {config_file.name}); {fix}"
    if target in repo.parents:
        return f"it holds the repository {str(repo)!r}; {fix}"
    if target == entries:
        return f"it is the entries folder; {fix}"
    if target in entries.parents:
        return f"it holds the entries folder {str(entries)!r}; {fix}"
    if entries in target.parents:
        return f"it is inside the entries folder {str(entries)!r}; {fix}"
    if ".git" in target.parts:
        return f"it is inside a .git folder; {fix}"
    # A committed link (`site -> ../www`, which `make site` would build through) sends the site, its
    # lock, state and work folder outside: a build never writes through a link (kb.site.sources).
    link = linked(site_dir, repo)
    if link is not None:
        return (f"{str(link)!r} is a symbolic link and a build never writes through one; remove the link (git rm "
                f"it if it is committed) or {fix}")
    if target.exists() and not target.is_dir():
        return f"it is a file, not a folder; {fix}"
    if target.is_dir() and not (target / MARKER).is_file() and any(target.iterdir()):
        return (f"it is not empty and has no {MARKER} marker, so kb build did not make it and would delete "
                f"its files; {fix}, or empty it (a site built by an older kb: delete it once)")
    return None


def build(site_dir: Path, entries: Path, config_file: Path = ROOT / "mkdocs.yml", site_url: str | None = None,
          lock: Path | None = None, redirects: Path | None = None, repo_url: str | None = None,
          shells: bool = True, in_place: bool = True, on_pages=None, superseded=None) -> int:
    """Check `entries` and build the site into `site_dir`. The URL lock and redirects of the
    config guard its own entries folder; another folder is built without them unless given.
    `in_place`: when an earlier build of `site_dir` left its state (`kb.site.incremental`), write only
    the files whose content changed instead of running the engine. `on_pages()` is called once
    the pages are in place, before the search index is rebuilt (`kb serve` reloads the browser).
    `superseded()`, asked while the index of a rebuild in place runs: True stops it, and the next
    build indexes the pages of both (`kb serve`, when another edit was saved meanwhile)."""
    from mkdocs.exceptions import MkDocsException

    reason = refusal(site_dir, entries, config_file)
    if reason is not None:
        print(f"kb build: refusing -d {str(site_dir)!r} ({site_dir.resolve()}): {reason}", file=sys.stderr)
        return 2

    started = time.perf_counter()
    result = lint.cached_check([entries])
    if result.problems:
        for problem in result.problems:
            print(problem.format())
        print(f"{len(result.problems)} problem(s); nothing was built (run `kb check`)", file=sys.stderr)
        return 1
    print(f"check: {len(result.cells)} entries valid ({time.perf_counter() - started:.2f}s)")

    site_dir = site_dir.resolve()
    site_dir.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(_exclusive(site_dir))
        except LockTimeout as why:
            print(f"kb build: {why}", file=sys.stderr)
            return 1
        _remove_leftovers(site_dir)
        try:
            with _mkdocs_log():
                config, settings = _config(config_file, entries, site_url, lock, redirects, repo_url, shells)
                if _site_refused(config, settings, result):
                    return 1
                layout = shell.layout(settings, config["site_url"], config["nav"], config_file.parent, checked=result)
        except (MkDocsException, GenerateError, hookconfig.PlanError) as exc:
            print(f"build failed: {exc}; {site_dir} was left as it was", file=sys.stderr)
            return 1
        docs_dir = Path(config["docs_dir"])
        inputs = incremental.inputs(config_file, docs_dir, settings,
                                    {"site_url": str(config["site_url"]), "repo_url": str(layout.repo_url)})
        marked = incremental.marked_urls(docs_dir, shell.MARKER)
        theme = incremental.theme_fingerprint(layout, marked)
        state = incremental.load(site_dir) if in_place and (site_dir / MARKER).is_file() else None
        try:
            changed = incremental.rebuild(site_dir, state, inputs, layout, theme, marked)
        except incremental.FullBuild as why:
            changed = None
            if state is not None:
                print(f"full build: {why}")
        if changed is not None:
            done = f"rebuilt {site_dir} in place: {len(changed)} file(s) rewritten"
            print(f"pages: {len(changed)} file(s) rewritten in place after {time.perf_counter() - started:.2f}s")
            if on_pages is not None:
                on_pages()
            if not any(path.endswith(".html") for path in changed) and not state.unindexed:
                if changed:  # else the state is as it was: nothing to write
                    incremental.save(site_dir, state, changed)
                print(f"{done}, no page changed, the search index kept, in {time.perf_counter() - started:.2f}s")
                return 0
        else:
            incremental.forget(site_dir)  # the site changes whole: no state of the old one stays
            built = _build_whole(site_dir, config, layout)
            if built is None:
                return 1
            state = incremental.State(inputs, theme, built["shells"], built["splices"],
                                      incremental.identities(layout, marked))
            pages = sum(1 for _ in site_dir.rglob("*.html"))
            done = f"built {pages} pages into {site_dir}"
            print(f"pages: {pages} in place in {site_dir} after {time.perf_counter() - started:.2f}s")
            if on_pages is not None:
                on_pages()
        urls = index.indexed_urls(layout.generated.pages)
        rebuilt = changed is not None
        try:
            summary = _index(site_dir, urls, (state.indexed, changed + state.unindexed) if rebuilt else None,
                             superseded if rebuilt else None)
        except index.Cancelled:
            state.unindexed = sorted(set(state.unindexed) | set(changed))
            incremental.save(site_dir, state, changed)
            print(f"{done}; the search index is left to the next build (another edit came in), "
                  f"in {time.perf_counter() - started:.2f}s")
            return 0
        if summary is None:
            return 1  # no state is kept: the next build is a full one, which indexes the site again
        # Kept only now: a build killed before this point leaves the site unlike the state (or
        # no state), so the next one builds and indexes it whole.
        state.indexed, state.unindexed = urls, []
        incremental.save(site_dir, state, changed)
    print(f"{done} and searched {summary.pages} of them ({summary.shards} index shard(s), {summary.again} indexed "
          f"again) in {time.perf_counter() - started:.2f}s")
    return 0


def os_error(exc: OSError) -> str:
    """An OSError as one line naming the file: "cannot write '<file>': File name too long"."""
    name = exc.filename if exc.filename is not None else "a file"
    return f"cannot write {str(name)[:300]!r}: {exc.strerror or exc}"


def _site_refused(config, settings: hookconfig.Settings, result: lint.Result) -> bool:
    """The checks of the site as a whole that `kb check` runs (kb.site.check), on the lock and
    redirects of this build's settings, before the engine reads anything. True when one failed
    (each problem said)."""
    from kb.site import check

    problems = check.problems(result.cells, Path(config["config_file_path"]), settings.url_lock, settings.redirects,
                              settings.id_lock, docs_dir=Path(config["docs_dir"]), unlocked_ids=True)
    for problem in problems:
        print(problem.format())
    if problems:
        print(f"{len(problems)} problem(s); nothing was built (run `kb check`)", file=sys.stderr)
    return bool(problems)


def _build_whole(site_dir: Path, config, layout: shell.Layout) -> dict | None:
    """The engine builds the whole site into a staging folder beside `site_dir`, moved in when it
    succeeded (`_swap_in`): what the hook hands back for the next rebuild in place (the shells
    and the cut pages), or None when it failed (said; `site_dir` is left as it was)."""
    from mkdocs.commands.build import build as engine_build
    from mkdocs.exceptions import MkDocsException

    built: dict = {}
    try:
        with _staging(site_dir, "building") as staging:
            config["site_dir"] = str(staging)
            # kb build indexes the site itself once its pages are in place (`_index`).
            hookconfig.hand_over(config, hookconfig.plan(
                layout=layout, index_search=False, keep=lambda shells, splices: built.update(shells=shells,
                                                                                          splices=splices)))
            with _mkdocs_log():
                engine_build(config)
            (staging / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    except (MkDocsException, SystemExit) as exc:
        print(f"build failed: {exc}; {site_dir} was left as it was", file=sys.stderr)
        return None
    except OSError as exc:  # a file the engine could not write (a name too long, a full disk)
        print(f"build failed: {os_error(exc)}; {site_dir} was left as it was", file=sys.stderr)
        return None
    # The pages first, the search index right after: an edited page is on disk before
    # Pagefind has read the whole site again.
    _swap_in(staging, site_dir, keep=index.FOLDER)
    return built


def _index(site_dir: Path, urls: list[str], since: tuple[list[str], list[str]] | None,
           cancelled=None) -> index.Indexed | None:
    """The search index of the pages `urls`, into a folder beside the site, swapped in when it
    succeeded: what was indexed, or None when it failed (said; the old index is kept). `since`, after
    a rebuild in place: the URLs the index held and the site paths the rebuild wrote or deleted
    (only the index shards holding one of those pages are indexed again). Raises index.Cancelled
    when `cancelled()` stops it (nothing of it is left)."""
    try:
        with _staging(site_dir, "index") as staging:
            summary = index.build_index(site_dir, staging, urls, site_dir / index.FOLDER, since, cancelled)
    except index.SearchIndexError as exc:
        print(f"search index failed: {exc}; the pages are built, the old search index was kept", file=sys.stderr)
        return None
    _swap_in(staging, site_dir / index.FOLDER)
    return summary


def _config(config_file: Path, entries: Path, site_url: str | None, lock: Path | None, redirects: Path | None,
            repo_url: str | None, shells: bool):
    """The engine's config for this build (with the kb hook) and the settings the site is generated
    from: the config file's (kb.site.hookconfig.settings) as the options override them. Nothing is
    written into the config's `extra`: the hook gets what it needs as one plan (`_build_whole`)."""
    from mkdocs.config import load_config

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    overrides: dict = {"strict": True}
    if site_url is not None:
        overrides["site_url"] = site_url
    config = load_config(str(config_file), **overrides)
    given = hookconfig.settings(config["extra"], config_file)
    # The config's locks guard its own entries folder; another folder is built without them unless
    # given, its cells numbered as `kb lock` would (kb.records.ids).
    own = given.entries.resolve() == entries.resolve()
    settings = dataclasses.replace(
        given, entries=entries.resolve(), shells=shells,  # shells False: every page through the theme (tests compare)
        url_lock=lock if lock is not None else given.url_lock if own else None,
        redirects=redirects if redirects is not None else given.redirects if own else None,
        id_lock=given.id_lock if own else None, repo_url=repo_url if repo_url is not None else given.repo_url)
    return config, settings


@contextlib.contextmanager
def _staging(site_dir: Path, kind: str):
    """A new folder in the site's work folder (`.<name>.kb-work/<kind>-*`: one a killed build leaves
    is removed by the next), removed again when the block fails."""
    folder = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=work_folder(site_dir)))
    folder.chmod(0o755)  # mkdtemp makes it 0700: a web server running as another user could not read it
    try:
        yield folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


@contextlib.contextmanager
def _mkdocs_log():
    """The engine's stage lines and warnings printed as the build goes."""
    handler = _Progress(logging.INFO)
    logger = logging.getLogger("mkdocs")
    previous_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)


@contextlib.contextmanager
def _exclusive(site_dir: Path):
    """Holds an exclusive lock on `.<name>.lock` beside the site; a second build of it waits here,
    naming the holder, for at most LOCK_WAIT_SECONDS (`KB_LOCK_WAIT` seconds when set), then gives up.

    A POSIX record lock (`lockf`): it belongs to this process alone, so workers forked while it is
    held never inherit it, and it ends with the process however it dies. The holder writes its pid
    into the file. The lock file stays (removing it would let a waiting build and a new one lock
    different files); it is outside the site, so it is never published.
    """
    lock = site_dir.with_name(f".{site_dir.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        limit = _lock_wait()
        deadline = time.monotonic() + limit
        told = False
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            holder = _holder(fd)
            if time.monotonic() >= deadline:
                raise LockTimeout(f"another kb build into {site_dir} (pid {holder}) still holds {lock} after "
                                  f"{limit:g} s; stop it (kill {holder}) or wait for it, then build again")
            if not told:
                print(f"kb build: another kb build into {site_dir} (pid {holder}) is running (it holds {lock}); "
                      f"waiting for it, at most {limit:g} s", file=sys.stderr)
                told = True
            time.sleep(LOCK_POLL_SECONDS)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock, also when the process is killed


LOCK_WAIT_SECONDS = 600.0
LOCK_POLL_SECONDS = 0.2


class LockTimeout(Exception):
    """Another build held the site's lock for longer than a build waits."""


def _lock_wait() -> float:
    try:
        value = float(os.environ.get("KB_LOCK_WAIT", LOCK_WAIT_SECONDS))
    except ValueError:
        return LOCK_WAIT_SECONDS
    return value if value >= 0 else LOCK_WAIT_SECONDS


def _holder(fd: int) -> str:
    """The pid the lock's holder wrote into the lock file ('unknown' before it has)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"


def _remove_leftovers(site_dir: Path) -> None:
    """Deletes the staging folders of builds that were killed before cleaning up, all inside the
    site's work folder (kb.site.paths.work_folder, which kb made), and the half-written state
    files (`..<name>.kb-state.json.kb-new.*`, regular files). Nothing else beside the site is
    touched, whatever its name (a page half-written inside the site makes the next build a full
    one, which removes it)."""
    clear_work(site_dir)
    prefix = f".{incremental.state_path(site_dir).name}.kb-new."
    for path in site_dir.parent.iterdir():
        if path.name.startswith(prefix) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)


def _swap_in(staging: Path, site_dir: Path, keep: str | None = None) -> None:
    """Puts the new site at `site_dir`. Over an earlier site, only files whose bytes changed are
    replaced, each by one rename over the old file (a reader sees the old bytes or the new ones,
    never a missing or half-written file); new files arrive before stale ones are deleted, so no
    page links to a page that is gone. A rebuild with nothing changed touches no file. The folder
    `keep` of the old site is left as it is (the search index, swapped in on its own)."""
    if not site_dir.exists():
        staging.rename(site_dir)
        return
    built = {p.relative_to(staging) for p in staging.rglob("*") if not p.is_dir()}
    kept = {p.relative_to(site_dir) for p in (site_dir / keep).rglob("*") if not p.is_dir()} if keep else set()
    for rel in sorted(built):
        new, old = staging / rel, inside(site_dir, rel.as_posix())
        if old.is_file() and not old.is_symlink() and _same_bytes(new, old):
            continue
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        old.parent.mkdir(parents=True, exist_ok=True)
        os.replace(new, old)
    for path in sorted(site_dir.rglob("*"), reverse=True):  # children before their folders
        rel = path.relative_to(site_dir)
        if path.is_dir() and not path.is_symlink():
            if not any(path.iterdir()):
                path.rmdir()
        elif rel not in built and rel not in kept:
            path.unlink()
    shutil.rmtree(staging, ignore_errors=True)


def _same_bytes(a: Path, b: Path) -> bool:
    stat_a, stat_b = a.stat(), b.stat()
    if os.path.samestat(stat_a, stat_b):  # a hard link (an index shard taken over unchanged)
        return True
    if stat_a.st_size != stat_b.st_size:
        return False
    with open(a, "rb") as x, open(b, "rb") as y:
        while True:
            chunk = x.read(1 << 20)
            if chunk != y.read(1 << 20):
                return False
            if not chunk:
                return True
