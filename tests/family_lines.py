"""The family pattern lines no entry prints, read from the records (shared by the family tests of
`kb match` and of the triage page): an entry that adopts one of them takes it off the list instead of
breaking a hand-kept line (it happened four times; the last, xsuite#684's CuPy line on 2026-12-06)."""

from __future__ import annotations

import functools
import io

from kb.records import families, lint
from kb.triage import match

from conftest import ROOT


@functools.cache
def orphan_lines() -> tuple[tuple[str, str], ...]:
    """(family, line) for every family pattern's own literal that no entry's signature matches: the
    lines that must get the family's answer."""
    from kb.triage import rules as triage_rules

    records, _ = families.load_families(families.HERE)
    entries = match.Matcher(triage_rules.rules(lint.check([ROOT / "kb" / "entries"]).cells))
    return tuple((record.id, pattern.text) for record in records for pattern in record.family.patterns
                 if not entries.scan(io.BytesIO(pattern.text.encode("utf-8"))))


def family_only(family: str = "no-code-for-gpu") -> str:
    """The first line of `family`'s patterns that no entry prints."""
    return next(line for f, line in orphan_lines() if f == family)
