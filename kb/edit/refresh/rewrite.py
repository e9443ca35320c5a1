"""Writing: a record's new link states and as_of dates through a ruamel.yaml round trip that
changes nothing else in the file (checked line by line), and the atomic replacement of a file."""

from __future__ import annotations

import copy
import datetime as dt
import io
import re
from pathlib import Path

from kb.edit.refresh.records import EntryFile
from kb.records import load

class RewriteError(Exception):
    pass


_KEY_LINE = re.compile(r"( *)[A-Za-z_][A-Za-z0-9_-]*:[ \t]*(#.*)?")
_ITEM_LINE = re.compile(r"( *)- ")


def _indents(text: str) -> tuple[int, int]:
    """(sequence, offset) of the file's first block list, as ruamel.yaml.indent() takes them: the
    column of an item's content and of its dash, counted from the key that holds the list."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for key, item in zip(lines, lines[1:]):
        if (k := _KEY_LINE.fullmatch(key)) and (i := _ITEM_LINE.match(item)):
            offset = len(i[1]) - len(k[1])
            if offset >= 0:
                return offset + 2, offset
    return 4, 2


def _yaml(text: str):
    """A round-trip ruamel.yaml set up like `text`: its list indentation, quotes kept, no re-wrapping."""
    from ruamel.yaml import YAML

    sequence, offset = _indents(text)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 20
    yaml.indent(mapping=2, sequence=sequence, offset=offset)
    return yaml


def _dump(yaml, data) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _like(old, new: str, key: str):
    """`new` in the style of `old`: a quoted scalar stays quoted with the same quotes, a plain date
    is written as a plain date."""
    from ruamel.yaml.scalarstring import ScalarString

    if isinstance(old, ScalarString):
        return type(old)(new)
    if key == "as_of":
        return dt.date.fromisoformat(new)
    return new


def rewrite(record: EntryFile, changes: dict[int, dict[str, str]]) -> bytes:
    """The bytes of `record`'s file with, for each upstream[i] in `changes`, its fields set; only
    the lines that hold those values may differ, and the file must read back as the same record
    with those values changed."""
    text = record.raw.decode("utf-8")
    try:
        yaml = _yaml(text)
        data = yaml.load(text)
    except Exception as exc:  # kb's reader read it; a value ruamel.yaml cannot build (2026-02-30) fails here
        raise RewriteError(f"ruamel.yaml cannot read it ({type(exc).__name__}); run `kb check`") from None
    if _dump(yaml, data) != text:
        raise RewriteError("does not come back byte for byte through ruamel.yaml (an unusual layout); "
                           "update its links by hand")
    expected = copy.deepcopy(record.loaded.data)
    allowed = set()
    for i, fields in changes.items():
        for key, value in fields.items():
            data["upstream"][i][key] = _like(data["upstream"][i][key], value, key)
            expected["upstream"][i][key] = value
            allowed.add(record.loaded.line_of(("upstream", i, key)))
    new = _dump(yaml, data)
    old_lines, new_lines = text.splitlines(keepends=True), new.splitlines(keepends=True)
    if len(old_lines) != len(new_lines):
        raise RewriteError("ruamel.yaml would change the number of lines; update its links by hand")
    changed = {n for n, (a, b) in enumerate(zip(old_lines, new_lines), 1) if a != b}
    if not changed <= allowed:
        raise RewriteError(f"ruamel.yaml would change line(s) {sorted(changed - allowed)} too; update its links by hand")
    again = load.parse(record.path, new.encode("utf-8"))
    if again.problems or again.data != expected:
        raise RewriteError("the rewritten file does not read back as the same record with the new values")
    from pydantic import ValidationError

    from kb.records.schema import Link as LinkModel

    for i in changes:
        try:
            LinkModel.model_validate(again.data["upstream"][i])
        except ValidationError as exc:
            raise RewriteError(f"upstream[{i}] would not be a valid link ({exc.error_count()} problem(s))") from None
    return new.encode("utf-8")
