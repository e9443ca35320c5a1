"""Blackwell serving-failure knowledge base: load -> check -> catalog -> render / export / triage / doctor."""

from pathlib import Path

ENTRIES = Path("kb/entries")  # the live entries, relative to the repository root
