"""Stage 3, lint (beside the entries): each cell's short citable id, `BWKB-<year>-<number>`.

Like RUSTSEC-2024-0001 or GO-2024-2687, an id names one cell for good: it is assigned once, in
publication order (the `published` date, then the file name), and never given to another cell.
The ids live in a lock file (`kb/ids.lock`, one `<id> <cell file name without .yaml>` a line), which
only grows: `kb lock` appends the next numbers for cells that have none. The number runs on across
years (the year is the cell's publication year, for the reader); line N holds number N.

An id once published belongs to its entry for good (KB083): `kb check` compares the lock with its own
history in git (every version of kb/ids.lock ever committed, `git log -p`): an id keeps the entry of
the first committed line that gave it, and no id that was ever committed leaves the lock. Swapping two
lines, or giving a published id to a new entry, is refused. A renamed entry keeps its id through an
explicit rename record: change the name on its id line and add a line `renamed <old name> <new name>`
(kept for good, like the ids); the old name may then no longer be an entry. Without git, or outside a
git checkout (an unpacked archive, the installed wheel), there is no history and the check is skipped;
in a shallow clone the history is cut, so the check refuses to pass (`git fetch --unshallow`; CI
checks out the full history). A removed entry keeps its line (the id is not reused); its id URL then
needs a redirect like any other published URL (kb/redirects.yaml).

Nothing here writes a file but `write`, which `kb lock` calls; the lock is read and written through
kb.records.files (never through a symbolic link: a link is KB076, and its target is neither shown nor
overwritten).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kb import checkout_of
from kb.records.problems import Problem

PREFIX = "BWKB"
ID = re.compile(rf"{PREFIX}-(\d{{4}})-(\d{{4,}})")
_LINE = re.compile(rf"({PREFIX}-\d{{4}}-\d{{4,}}) ([a-z0-9][a-z0-9-]*)")
_RENAMED = re.compile(r"renamed ([a-z0-9][a-z0-9-]*) ([a-z0-9][a-z0-9-]*)")
HEADER = ("# Each cell's citable id, assigned once in publication order (published, then file name) and never "
          "reused. Managed by `kb lock`; see kb/records/ids.py.\n")
URL_PREFIX = "id/"


@dataclass(frozen=True)
class Locked:
    id: str
    cell: str
    line: int


def number(citable: str) -> int:
    """The running number of a well-formed id: 12 for BWKB-2026-0012."""
    return int(ID.fullmatch(citable).group(2))


def url(citable: str) -> str:
    """The URL that redirects to the cell's page."""
    return f"{URL_PREFIX}{citable}/"


def read(path: Path | None) -> tuple[list[Locked], list[Problem]]:
    """The well-formed lines of the lock at `path` (none when there is no lock) and a KB077 Problem
    for each line that breaks the format or the numbering."""
    from kb.records import files as sources

    if path is None:
        return [], []
    refused = sources.unreadable(path)
    if refused is not None:  # a link is never followed: its target's lines are never shown (KB076)
        return [], [refused]
    if not path.exists():
        return [], []
    found: list[Locked] = []
    problems: list[Problem] = []
    seen_ids: dict[str, int] = {}
    seen_cells: dict[str, int] = {}
    text = sources.read_regular_text(path)
    for at, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or _RENAMED.fullmatch(line):
            continue  # rename records: `renames`
        m = _LINE.fullmatch(line)
        if m is None:
            problems.append(Problem(path, at, "(line)", f"each line is '<id> <cell>', such as "
                                    f"'{PREFIX}-2026-0001 mla-decode-fp8-kv-triton-shared-memory', or "
                                    "'renamed <old name> <new name>'", "KB077", line))
            continue
        citable, cell = m.groups()
        expected = len(found) + 1
        if citable in seen_ids:
            problems.append(Problem(path, at, citable, f"this id is already given on line {seen_ids[citable]}; an "
                                    "id names one cell and is never reused", "KB077", citable))
            continue
        if cell in seen_cells:
            problems.append(Problem(path, at, cell, f"this cell already has an id on line {seen_cells[cell]}; a "
                                    "cell has one id", "KB077", cell))
            continue
        if number(citable) != expected:
            problems.append(Problem(path, at, citable, f"ids are numbered in order without gaps: this line must "
                                    f"hold number {expected:04d} (a removed line's id would be given again; restore "
                                    "it)", "KB077", citable))
        seen_ids[citable] = at
        seen_cells[cell] = at
        found.append(Locked(citable, cell, at))
    return found, problems


def renames(text: str) -> dict[str, tuple[str, int]]:
    """old name -> (new name, line) of the rename records (`renamed <old> <new>`) in the lock's `text`."""
    found: dict[str, tuple[str, int]] = {}
    for at, raw in enumerate(text.splitlines(), 1):
        m = _RENAMED.fullmatch(raw.strip())
        if m:
            found.setdefault(m.group(1), (m.group(2), at))
    return found


class History(dict):
    """id -> (the entry its first committed line gave it, that commit's short hash), from the lock's
    git history; `cut`: the clone is shallow, so older versions are missing."""
    cut: bool = False


def _git(folder: Path, *args: str) -> str | None:
    """git's output in `folder`, None without git or outside a git checkout. No external diff or
    text conversion runs: a committed .gitattributes must not choose a program."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"GIT_CONFIG_NOSYSTEM": "1"}
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, env=env,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def history(path: Path) -> History | None:
    """The published owner of every id the lock at `path` ever held in git (`git log -p` of the file,
    oldest first); None when there is no history to read (no git, not a git checkout)."""
    folder = path.parent
    shallow = _git(folder, "rev-parse", "--is-shallow-repository")
    log = _git(folder, "log", "-p", "--reverse", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
               "--format=commit %h", "--", path.name)
    if shallow is None or log is None:
        return None
    owners = History()
    owners.cut = shallow.strip() == "true"
    commit = ""
    for line in log.splitlines():
        if line.startswith("commit "):
            commit = line.removeprefix("commit ")
            continue
        m = _LINE.fullmatch(line[1:].strip()) if line.startswith("+") and not line.startswith("+++") else None
        if m:
            owners.setdefault(m.group(1), (m.group(2), commit))
    return owners


def permanence_problems(path: Path, locked: list[Locked], moved: dict[str, tuple[str, int]],
                        published: History | None, cells: set[str]) -> list[Problem]:
    """KB083: every id of the lock's history (`published`) is still in the lock, for the entry it was
    first given to, or for that entry's new name through the rename records (`moved`), whose old name
    is no longer an entry (`cells`); a shallow clone cannot tell."""
    if published is None:
        return []
    fix = ("restore the line as it was published; an id names its entry for good (a renamed entry keeps its "
           "id: change the name on its line and add 'renamed <old name> <new name>')")
    if published.cut:
        return [Problem(path, 1, "(file)", "the git history of this lock is cut (a shallow clone), so ids cannot be "
                        "checked against what was published; run `git fetch --unshallow` (in CI, check out with "
                        "fetch-depth: 0)", "KB083")]
    found: list[Problem] = []
    now = {entry.id: entry for entry in locked}
    for citable, (owner, commit) in sorted(published.items(), key=lambda item: number(item[0])):
        entry = now.get(citable)
        if entry is None:
            found.append(Problem(path, 1, citable, f"this id was published for {owner!r} (commit {commit}) and is "
                                 f"gone from the lock; {fix}", "KB083", citable))
            continue
        name, seen = owner, {owner}
        while name != entry.cell and name in moved and moved[name][0] not in seen:
            if name in cells:
                break  # the old entry is still there: a rename cannot take its id
            name = moved[name][0]
            seen.add(name)
        if name != entry.cell:
            found.append(Problem(path, entry.line, citable, f"this id was published for {owner!r} (commit "
                                 f"{commit}) and now names {entry.cell!r}; {fix}", "KB083", entry.cell))
    return found


def assign(locked: list[Locked], cells) -> dict[str, str]:
    """cell id -> citable id for every cell of `cells`: the locked ids, and the next numbers for the
    cells the lock lacks, in publication order (published date, then file name)."""
    ids = {entry.cell: entry.id for entry in locked}
    last = max((number(entry.id) for entry in locked), default=0)
    for cell in sorted((c for c in cells if c.id not in ids), key=lambda c: (c.entry.published, c.id)):
        last += 1
        ids[cell.id] = f"{PREFIX}-{cell.entry.published[:4]}-{last:04d}"
    return {c.id: ids[c.id] for c in cells}


_NOT_GIVEN = object()


def problems(path: Path, cells, published_urls: list[str], published=_NOT_GIVEN) -> list[Problem]:
    """What `kb check` says of the lock at `path` against the checked `cells`: KB077 (its lines),
    KB078 (a cell without an id: run `kb lock`), KB079 (an id URL the site published, in
    `published_urls` (kb/urls.lock), whose id is no longer in the lock), KB083 (an id that moved,
    was reused or removed against `published`, by default the lock's git history)."""
    from kb.records import files as sources

    locked, found = read(path)
    if any(p.code == "KB076" for p in found):
        return found  # not read: nothing can be said of its ids
    text = sources.read_regular_text(path) if path.exists() else ""
    found += permanence_problems(path, locked, renames(text), history(path) if published is _NOT_GIVEN else published,
                                 {cell.id for cell in cells})
    have = {entry.cell for entry in locked}
    for cell in sorted(cells, key=lambda c: (c.entry.published, c.id)):
        if cell.id not in have:
            found.append(Problem(cell.path, 1, "(file name)", f"this cell has no citable id in {path}; run `kb lock`, "
                                 "which gives it the next number", "KB078", cell.id))
    ids = {entry.id for entry in locked}
    for published in published_urls:
        m = re.fullmatch(rf"{URL_PREFIX}({ID.pattern})/", published)
        if m and m.group(1) not in ids:
            found.append(Problem(path, 1, m.group(1), "this id was published (kb/urls.lock lists its URL) and is gone "
                                 "from the lock; restore its line: an id is never removed or reused", "KB079",
                                 m.group(1)))
    return found


def write(path: Path, cells) -> list[str]:
    """Append the ids of the cells the lock at `path` lacks; returns the ids added. Refuses (ValueError,
    with every problem) a lock whose lines break KB077."""
    locked, found = read(path)
    if found:
        raise ValueError("\n".join(p.format() for p in found))
    ids = assign(locked, cells)
    known = {entry.cell for entry in locked}
    added = sorted(((citable, cell) for cell, citable in ids.items() if cell not in known),
                   key=lambda pair: int(ID.fullmatch(pair[0]).group(2)))
    from kb.records import files as sources

    text = sources.read_regular_text(path) if path.exists() else HEADER
    if added or not path.exists():
        sources.write_regular(path, (text + ("" if text.endswith("\n") else "\n")
                                     + "".join(f"{citable} {cell}\n" for citable, cell in added)).encode("utf-8"))
    return [citable for citable, _ in added]


OWN_LOCK = Path(__file__).resolve().parents[1] / "ids.lock"


def lock_for(entries: Path) -> Path | None:
    """The id lock of an entries folder: the repository's kb/ids.lock for its own kb/entries/, the
    kb/ids.lock of another checkout of this project for that checkout's kb/entries/ (a developer's kb
    run there: kb.default_entries), none for any other folder (its cells get the numbers `assign`
    gives them). Without the checkout's own lock, its entries would be shown with the numbers of
    others: the first unlocked entry of a branch took an id the lock gives another entry."""
    if entries.resolve() == OWN_LOCK.with_name("entries"):
        return OWN_LOCK
    root = checkout_of(entries)
    return root / "kb" / "ids.lock" if root is not None else None


def for_entries(entries: Path, cells=None) -> dict[str, str]:
    """cell id -> citable id for the cells of `entries`: the lock's, and for `cells` (checked cells, when
    given) the next numbers of those the lock lacks."""
    locked, _ = read(lock_for(entries))
    if cells is None:
        return {entry.cell: entry.id for entry in locked}
    return assign(locked, cells)
