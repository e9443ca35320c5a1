"""Stage 3, lint, part one: an entry's data through the schema (kb.records.schema.Entry).

`_validate` hands the per-file pipeline (kb.records.lint) the valid `Entry`, or the problems
pydantic found, each mapped back to the record: its key path with pydantic's union-branch names
dropped, its YAML line, a message in the project's words and the rule's KB code.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from kb.records.load import Loaded, dotted
from kb.records.problems import MISSING, Problem
from kb.records.rules import code_of_pydantic
from kb.records.schema import Entry


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
