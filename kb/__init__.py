"""Blackwell serving-failure knowledge base, one folder per stage, imported in one direction:
records/ (load -> schema -> check -> catalog) -> site/ (render, export, search index, build, serve),
triage/ (`kb match`) and doctor/ (`kb doctor`); cli.py is the commands."""

from pathlib import Path

ENTRIES = Path("kb/entries")  # the live entries, relative to the repository root


def default_entries() -> Path:
    """The entries a command reads when none are named: kb/entries/ under the working directory
    (a checkout), else those of the checkout this kb runs from (`make setup` installs it editable),
    so `kb match` and `kb doctor` work from any folder."""
    if ENTRIES.is_dir():
        return ENTRIES
    installed = Path(__file__).resolve().parent / "entries"
    return installed if installed.is_dir() else ENTRIES
