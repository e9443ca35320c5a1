"""Stage 3, lint: load and validate every entry, then check the records against each other.

`check(paths)` hands on the valid cells and every problem found, in file and line order.
Nothing here writes a file.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from kb.load import Loaded, dotted, load
from kb.problems import MISSING, Problem
from kb.rules import code_of_pydantic
from kb.schema import ID_PATTERN, Entry
from kb.slug import slug

ENTRIES = Path("kb/entries")


@dataclass(frozen=True)
class Cell:
    """A validated entry with its identity (the file stem) and where its values sit."""

    id: str
    path: Path
    entry: Entry
    lines: dict = field(repr=False, compare=False, hash=False)

    def line_of(self, loc: tuple) -> int:
        while loc and loc not in self.lines:
            loc = loc[:-1]
        return self.lines.get(loc, 1)


@dataclass
class Result:
    cells: list[Cell]
    problems: list[Problem]
    files: int


def entry_files(paths: list[Path]) -> list[Path]:
    """The entry files named by `paths` (files as given, folders searched for *.yaml)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(path.glob("*.yaml")))
        else:
            found.append(path)
    return found


def _value_at(data, loc: tuple):
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return MISSING
    return data


def _clean_loc(data, loc: tuple, error_type: str) -> tuple:
    """Drop pydantic's union-branch names, keeping the keys that exist in the data."""
    kept: list = []
    node = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and part in node:
            kept.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            kept.append(part)
            node = node[part]
        elif last and error_type == "missing" and isinstance(part, str):
            kept.append(part)
    return tuple(kept)


_FRIENDLY = {
    "missing": "required field is missing; add it",
    "extra_forbidden": "unknown field; check its spelling against the schema (kb schema)",
}


def _message(error: dict) -> str:
    kind = error["type"]
    if kind in _FRIENDLY:
        return _FRIENDLY[kind]
    message = error["msg"]
    message = re.sub(r"^(Value error, |Assertion failed, )", "", message)
    return re.sub(r"^(Input|String|List|Value|Dictionary|Object) should", "must", message)


def _validate(loaded: Loaded, cell_id: str) -> tuple[Entry | None, list[Problem]]:
    data = loaded.data
    problems: list[Problem] = []
    if "id" in data:
        problems.append(Problem(loaded.path, loaded.line_of(("id",)), "id",
                                "the id is the file name; remove this key", "KB011", data["id"]))
        data = {k: v for k, v in data.items() if k != "id"}
    try:
        return Entry.model_validate(data), problems
    except ValidationError as exc:
        by_loc: dict[tuple, dict] = {}
        for error in exc.errors():
            loc = _clean_loc(data, error["loc"], error["type"])
            previous = by_loc.get(loc)
            # A union reports one error per branch: keep the one that names a project rule.
            if previous is None or (not previous["type"].startswith("KB") and error["type"].startswith("KB")):
                by_loc[loc] = error
        for loc, error in by_loc.items():
            got = MISSING if error["type"] == "missing" else _value_at(data, loc)
            if isinstance(got, (dict, list)):
                got = MISSING  # the field path names it; a whole mapping is noise
            problems.append(Problem(loaded.path, loaded.line_of(loc), dotted(loc), _message(error),
                                    code_of_pydantic(error["type"]), got))
        return None, problems


def _cross_checks(cells: list[Cell], ids: set[str]) -> list[Problem]:
    problems: list[Problem] = []
    owners: dict[str, list[Cell]] = defaultdict(list)
    slugs: dict[str, set[str]] = defaultdict(set)
    for cell in cells:
        seen: dict[str, int] = {}
        for i, signature in enumerate(cell.entry.signatures):
            loc = ("signatures", i, "text")
            if signature.text in seen:
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        f"same text as signatures[{seen[signature.text]}]; list it once",
                                        "KB032", signature.text))
                continue
            seen[signature.text] = i
            owners[signature.text].append(cell)
            slugs[slug(signature.text)].add(signature.text)
        for i, related in enumerate(cell.entry.related):
            loc = ("related", i, "id")
            if related.id == cell.id:
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        "a cell cannot be related to itself", "KB037", related.id))
            elif related.id not in ids:
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        "no cell has this id; use the file stem of an entry in kb/entries/",
                                        "KB036", related.id))
    for cell in cells:
        primary = cell.entry.signatures[0].text
        others = sorted(other.id for other in owners[primary] if other.id != cell.id)
        if others:
            loc = ("signatures", 0, "text")
            problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                    f"the first signature is also listed by {', '.join(others)}; "
                                    "put a signature only this cell has first", "KB040", primary))
    for key, texts in sorted(slugs.items()):
        if len(texts) > 1:
            for cell in cells:
                for i, signature in enumerate(cell.entry.signatures):
                    if signature.text in texts:
                        loc = ("signatures", i, "text")
                        problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                                f"URL slug {key!r} is shared with a different text; reword one",
                                                "KB041", signature.text))
    return problems


def check(paths: list[Path]) -> Result:
    """Load, validate and cross-check the entries at `paths`."""
    files = entry_files(paths)
    cells: list[Cell] = []
    problems: list[Problem] = []
    first_path: dict[str, Path] = {}
    for path in files:
        cell_id = path.stem
        if not path.exists():
            problems.append(Problem(path, 1, "(file)", "no such file or folder", "KB001"))
            continue
        if path.suffix != ".yaml" or not re.fullmatch(ID_PATTERN, cell_id):
            problems.append(Problem(path, 1, "(file name)",
                                    "entry files are named <id>.yaml, the id lowercase words, digits and hyphens",
                                    "KB010", path.name))
        loaded = load(path)
        problems.extend(loaded.problems)
        if loaded.data is None:
            continue
        entry, found = _validate(loaded, cell_id)
        problems.extend(found)
        if cell_id in first_path:
            problems.append(Problem(path, 1, "(file name)",
                                    f"id is also used by {first_path[cell_id]}; rename one", "KB038", cell_id))
            continue
        first_path[cell_id] = path
        if entry is not None and not found:
            cells.append(Cell(cell_id, path, entry, loaded.lines))
    problems.extend(_cross_checks(cells, set(first_path)))
    problems.sort(key=Problem.sort_key)
    return Result(cells=cells, problems=problems, files=len(files))
