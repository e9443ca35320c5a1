"""Families: the recurring mechanisms behind many entries (kb/families/<id>.yaml, issue 35 item 2).

A family record says how to tell the mechanism, the command that checks it, the general fix and
the generic lines it prints (`patterns`, in the signature grammar of kb.records.patterns). Its id
is its file stem, as for entries. `load_families(folder)` reads and validates every record (the
same YAML reader and error mapping as entries: `file:line: field: message [code]`);
kb.records.familyfolder says which folder belongs to an entries folder. kb.triage.familyanswer
compiles the patterns into the rules `kb match` and the triage page fall back on when no entry
matches; kb.site.familypages renders a page per family.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from kb.records import load
from kb.records.catalog import FAMILIES_URL as URL
from kb.records.familyfolder import HERE, folder_for  # noqa: F401 (the folder of an entries folder's families)
from kb.records.problems import MISSING, Problem
from kb.records.rules import code_of_pydantic
from kb.records.schema import ID_PATTERN, matches_own_text, LiteralText, LongText, SourceUrl, Text, _literal, _pattern
from kb.records.validate import _clean_loc, _message, _value_at



class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Check(_Record):
    """One command that tells whether the mechanism is at work, what its output means, and the
    documentation or code that says the command behaves so."""

    command: Annotated[str, Field(min_length=1, max_length=300), AfterValidator(_literal)]
    shows: LongText
    source: SourceUrl


class Pattern(_Record):
    """A generic line the family prints: the literal as seen (`text`), its varying parts marked
    (`match`, optional) and where it was seen verbatim (`source`)."""

    text: LiteralText
    match: Annotated[str, Field(min_length=1, max_length=400), AfterValidator(_literal),
                     AfterValidator(_pattern)] | None = None
    source: SourceUrl

    _matches_own_text = field_validator("match")(classmethod(lambda cls, match, info: matches_own_text(match, info)))


class Family(_Record):
    title: Text
    how_to_tell: LongText
    checks: list[Check] = Field(min_length=1, max_length=3)
    fix: LongText
    sources: list[SourceUrl] = Field(min_length=1, max_length=20)
    patterns: list[Pattern] = Field(default=[], max_length=20)


@dataclass(frozen=True)
class FamilyRecord:
    id: str
    path: Path
    family: Family
    lines: dict = field(repr=False, compare=False, hash=False)

    @property
    def url(self) -> str:
        return f"{URL}{self.id}/"


def _validate(path: Path, loaded: load.Loaded) -> tuple[Family | None, list[Problem]]:
    try:
        return Family.model_validate(loaded.data), []
    except ValidationError as exc:
        problems, seen = [], set()
        for error in exc.errors():
            loc = _clean_loc(loaded.data, error["loc"], error["type"])
            if loc in seen:
                continue
            seen.add(loc)
            got = MISSING if error["type"] == "missing" else _value_at(loaded.data, loc)
            if isinstance(got, (dict, list)):
                got = MISSING
            problems.append(Problem(path, loaded.line_of(loc), load.dotted(loc), _message(error),
                                    code_of_pydantic(error["type"]), got))
        return None, problems


def load_families(folder: Path) -> tuple[list[FamilyRecord], list[Problem]]:
    """Every family record in `folder`, by id, and every problem of every file."""
    records, problems = [], []
    if not folder.is_dir():
        return [], []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if path.suffix != ".yaml" or not path.is_file() or path.is_symlink():
            problems.append(Problem(path, 1, "(file)", "a families folder holds only <id>.yaml files", "KB051"))
            continue
        if not re.fullmatch(ID_PATTERN.strip("^$"), path.stem):
            problems.append(Problem(path, 1, "(file name)", "family files are named <id>.yaml, the id lowercase "
                                    "words, digits and hyphens", "KB010", path.name))
            continue
        loaded = load.load(path)
        problems.extend(loaded.problems)
        if loaded.data is None:
            continue
        if not isinstance(loaded.data, dict):
            problems.append(Problem(path, 1, "(file)", "a family file is a mapping of its fields", "KB022"))
            continue
        family, found = _validate(path, loaded)
        problems.extend(found)
        if family is not None:
            records.append(FamilyRecord(path.stem, path, family, loaded.lines))
    return records, problems


def known_ids(folder: Path) -> list[str]:
    """The ids of the family files in `folder` (valid or not: an entry naming one is not wrong)."""
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def unknown_family(cells, folder: Path) -> list[Problem]:
    """KB092: an entry's `family` names a family file of `folder`."""
    known = known_ids(folder)
    out = []
    for cell in cells:
        family = cell.entry.family
        if family is not None and family not in known:
            out.append(Problem(cell.path, cell.line_of(("family",)), "family",
                               "names no family; use one of " + (", ".join(known) or "(none: the families folder "
                               f"{folder} holds no family)"), "KB092", family))
    return out
