"""The records `kb refresh` reads: each entry's issue and pull-request links (UpstreamLink) and its
components that name a fix and the release said to contain it (Fix), read by kb's own safe
loader; a record is read only once it checks clean. Hands the Records on to the reader and the
writer."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kb.records import load
from kb.records.schema import ID_PATTERN
from kb.records.visible import visible

READ_KINDS = ("issue", "pr")


@dataclass
class UpstreamLink:
    """One issue or pull request an entry file links to, where it sits (kb.records.schema.Link is its model)."""

    cell: str
    path: Path
    index: int
    kind: str
    url: str
    state: str
    as_of: str
    line: int  # of the link's url

    @property
    def where(self) -> str:
        return f"{file_shown(self.path)}:{self.line}: upstream[{self.index}] {visible(self.url)}"


@dataclass
class Fix:
    """A component that names its fix pull request and the first release said to contain it."""

    cell: str
    path: Path
    index: int
    package: str
    pull: str  # fixed_by
    version: str  # fixed_in
    line: int  # of fixed_in

    @property
    def key(self) -> tuple[str, str, str]:
        return self.pull, self.version, self.package

    @property
    def where(self) -> str:
        return f"{file_shown(self.path)}:{self.line}: components[{self.index}].fixed_in {visible(self.version)}"

    def difference(self, problem: str) -> str:
        return f"{visible(self.cell)}: components[{self.index}].fixed_in {visible(self.version)}: {problem}"


@dataclass
class EntryFile:
    """One entry file as refresh reads it: its bytes, and the links and fixes it would check."""

    id: str
    path: Path
    raw: bytes
    loaded: load.Loaded
    links: list[UpstreamLink]
    fixes: list[Fix] = field(default_factory=list)


def file_shown(path: Path) -> str:
    """A path as messages show it: file names are written by whoever wrote the pull request."""
    return visible(str(path))


def read_records(entries: Path, only: list[str]) -> tuple[list[EntryFile], list[str]]:
    """The cells of `entries` (those named by `only`, when given), read by kb's own safe reader,
    with their issue and pull-request links; and the errors met."""
    from pydantic import ValidationError

    from kb.records.lint import entry_files
    from kb.records.schema import Component as ComponentModel
    from kb.records.schema import Link as LinkModel

    errors: list[str] = []
    if not entries.is_dir() or entries.is_symlink():
        return [], [f"{file_shown(entries)}: not an entries folder"]
    paths = {}
    for path in entry_files([entries]):
        if path.suffix != ".yaml":
            continue
        if not re.fullmatch(ID_PATTERN, path.stem):
            # As `kb check` (KB010): a name that is no id is no cell, and is never printed raw.
            errors.append(f"{file_shown(path)}:1: (file name): entry files are named <id>.yaml, the id lowercase words, "
                          "digits and hyphens [KB010]; not refreshed (run `kb check`)")
            continue
        paths[path.stem] = path
    for name in only:
        if name not in paths:
            errors.append(f"--only {visible(name)}: no cell of that id in {file_shown(entries)}")
    chosen = sorted(set(only) & paths.keys()) if only else sorted(paths)
    records = []
    for cell in chosen:
        path = paths[cell]
        raw = load.read(path)
        loaded = raw if isinstance(raw, load.Loaded) else load.parse(path, raw)
        if loaded.problems or not isinstance(loaded.data.get("upstream"), list):
            first = loaded.problems[0].format() if loaded.problems else f"{file_shown(path)}:1: upstream: not a list"
            errors.append(f"{first} (run `kb check`; an entry is refreshed only once it reads clean)")
            continue
        links = []
        for i, item in enumerate(loaded.data["upstream"]):
            try:
                link = LinkModel.model_validate(item)
            except ValidationError as exc:
                where = loaded.line_of(("upstream", i))
                errors.append(f"{file_shown(path)}:{where}: upstream[{i}]: not a valid link ({exc.error_count()} problem(s); "
                              "run `kb check`)")
                continue
            if link.kind in READ_KINDS:
                links.append(UpstreamLink(cell, path, i, link.kind, link.url, link.state, link.as_of,
                                  loaded.line_of(("upstream", i, "url"))))
        fixes = []
        components = loaded.data.get("components")
        for i, item in enumerate(components if isinstance(components, list) else []):
            if not (isinstance(item, dict) and item.get("fixed_by") and item.get("fixed_in")):
                continue
            try:
                component = ComponentModel.model_validate(item)
            except ValidationError as exc:
                where = loaded.line_of(("components", i))
                errors.append(f"{file_shown(path)}:{where}: components[{i}]: not a valid component ({exc.error_count()} "
                              "problem(s); run `kb check`)")
                continue
            fixes.append(Fix(cell, path, i, component.package, component.fixed_by, component.fixed_in,
                             loaded.line_of(("components", i, "fixed_in"))))
        records.append(EntryFile(cell, path, raw, loaded, links, fixes))
    return records, errors
