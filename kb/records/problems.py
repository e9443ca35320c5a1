"""The one shape every stage reports a fault in: file, line, field, rule, bad value, code."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kb.records.visible import visible

class _Missing:
    """No value was found (a Problem's `got`); one object, also after a pickle round trip (the
    check's cache and its worker processes pickle problems)."""

    def __reduce__(self):
        return "MISSING"

    def __repr__(self):
        return "MISSING"


MISSING = _Missing()
LOC_LIMIT = 200  # a key name can be as long as the file allows


def show(value, limit: int = 60) -> str:
    """repr() of a bad value, cut short so a 1 MB string cannot flood the terminal. repr() already
    escapes every character `kb.records.visible` calls risky; `visible` is for a value whose repr() does not."""
    text = repr(value)
    return visible(text if len(text) <= limit else text[: limit - 3] + "...")


@dataclass(frozen=True)
class Problem:
    path: Path
    line: int
    loc: str
    message: str
    code: str
    got: object = MISSING

    def format(self) -> str:
        """One line, whatever the file's name and keys hold: file names, key names and messages
        (which can quote either) go through `kb.records.visible`, so an entry cannot print a fake line."""
        try:
            shown = os.path.relpath(self.path)
        except ValueError:
            shown = str(self.path)
        got = "" if self.got is MISSING else f" (got {show(self.got)})"
        return (f"{visible(shown)}:{self.line}: {visible(self.loc, LOC_LIMIT)}: {visible(self.message)}{got} "
                f"[{self.code}]")

    def sort_key(self):
        return (str(self.path), self.line, self.loc, self.code)
