"""Where the family records of an entries folder live (kb/families/, beside kb/entries/).

Apart from kb.records.families so that `kb match` can key its cache of the family rules on the
folder's files without importing the records' model (pydantic): kb.triage.familyanswer.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "families"  # the families this code ships with


def folder_for(entries: Path) -> Path:
    """The families of an entries folder (or file): the `families` folder beside it, else the
    ones this code ships (a test's or a fork's entries share the project's families)."""
    base = entries if entries.is_dir() else entries.parent
    beside = base.parent / "families"
    return beside if beside.is_dir() and not beside.is_symlink() else HERE
