"""Stages 4 and 6, render and export: an entry's recorded reproductions as its page and its exports show them.

A reproduction (kb.records.reproduction) is the evidence anyone can re-run with `bwkb repro ID`. The
page shows each recorded run (what was installed, the tool's version line, the date and machine and
the verbatim output) with the output's lines that show the entry's literal marked; the JSON API and
the OSV record carry the same facts. A line is marked by the comparison KB090 makes on the whole
output (`reproduction.shown`), made here on one line at a time, so the page marks exactly what the
lint accepted. A reproduction not yet run (no `printed`, which KB090 reports) has nothing to show.
"""

from __future__ import annotations

from kb.records.reproduction import Reproduction, shown
from kb.records.schema import Cell


def command(cell: Cell) -> str:
    """What a reader types to run the entry's reproductions again (the installed command is `bwkb`)."""
    return f"bwkb repro {cell.id}"


def lines(entry, output: str) -> list[tuple[str, bool]]:
    """Each line of a recorded output, with whether it shows one of the entry's signatures."""
    return [(line, bool(line.strip()) and bool(shown(entry, line))) for line in output.rstrip("\n").split("\n")]


def _recorded(cell: Cell) -> list[Reproduction]:
    return [r for r in cell.entry.reproductions if r.printed is not None]


def runs(cell: Cell) -> list[dict]:
    """The recorded runs as the entry page shows them (empty: the page shows no block)."""
    return [{"install": f"{r.install.package}=={r.install.version}", "run": r.command(), "printed": r.printed,
             "lines": lines(cell.entry, r.printed.output)} for r in _recorded(cell)]


def exported(cell: Cell) -> list[dict]:
    """The recorded runs as the API record and the OSV record carry them: the page's facts, with
    the marked lines as 1-based numbers of the output's lines."""
    out = []
    for run in runs(cell):
        printed = run["printed"]
        out.append({"command": command(cell), "install": run["install"], "run": run["run"],
                    "tool_version": printed.tool_version, "date": printed.date, "machine": printed.machine,
                    "exit": printed.exit, "output": printed.output,
                    "literal_lines": [n for n, (_, marked) in enumerate(run["lines"], 1) if marked]})
    return out
