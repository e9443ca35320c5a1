"""The one shape every stage reports a fault in: file, line, field, rule, bad value, code."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MISSING = object()


def show(value, limit: int = 60) -> str:
    """repr() of a bad value, cut short so a 1 MB string cannot flood the terminal."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Problem:
    path: Path
    line: int
    loc: str
    message: str
    code: str
    got: object = MISSING

    def format(self) -> str:
        try:
            shown = os.path.relpath(self.path)
        except ValueError:
            shown = str(self.path)
        got = "" if self.got is MISSING else f" (got {show(self.got)})"
        return f"{shown}:{self.line}: {self.loc}: {self.message}{got} [{self.code}]"

    def sort_key(self):
        return (str(self.path), self.line, self.loc, self.code)
