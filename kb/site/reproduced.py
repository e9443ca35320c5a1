"""Stages 4 and 6, render and export: an entry's recorded reproductions as its page and its exports show them.

A reproduction (kb.records.reproduction) is the evidence anyone can re-run with `bwkb repro ID`. The
page shows each recorded run (what was installed, the tool's version line, the date and machine and
the verbatim output) with the output's lines that show the entry's literal marked; the JSON API and
the OSV record carry the same facts. A run on a release the entry names as fixed (`fixed`) is shown
as such: its output, which shows none of the literals, is the evidence that the fix works. A line is marked by the comparison KB090 makes on the whole
output (`reproduction.shown`), made here on one line at a time, so the page marks exactly what the
lint accepted. A reproduction not yet run (no `printed`, which KB090 reports) has nothing to show.

An entry with no recorded run says instead what kind of evidence it rests on (`evidence`), from what
the record already holds, strongest first: a scan of the released wheels, a measurement on named
hardware, statements checked against a public thread or source file (claims with `confirmed: true`),
else only the reports its links lead to.
"""

from __future__ import annotations

from kb.records.reproduction import Reproduction, shown
from kb.records.scan import boundary, regressed
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
    return [{"install": r.install.pinned_as() + (" (Debian)" if r.install.source == "debian" else "")
             + (" with " + ", ".join(n.pinned_as() for n in r.needs) if r.needs else ""),
             "run": r.command(), "note": r.note, "fixed": r.fixed,
             "printed": r.printed, "lines": lines(cell.entry, r.printed.output)} for r in _recorded(cell)]


def exported(cell: Cell) -> list[dict]:
    """The recorded runs as the API record and the OSV record carry them: the page's facts, with
    the marked lines as 1-based numbers of the output's lines."""
    out = []
    for run in runs(cell):
        printed = run["printed"]
        out.append({"command": command(cell), "install": run["install"], "run": run["run"], "note": run["note"],
                    "fixed": run["fixed"],
                    "tool_version": printed.tool_version, "date": printed.date, "machine": printed.machine,
                    "exit": printed.exit, "output": printed.output,
                    "literal_lines": [n for n, (_, marked) in enumerate(run["lines"], 1) if marked]})
    return out


def evidence(cell: Cell) -> str:
    """One sentence: the kind of evidence an entry without a recorded reproduction rests on."""
    entry = cell.entry
    scanned = [s for s in entry.scans if s.found is not None]
    if scanned:
        parts = []
        for s in scanned:
            last, first = boundary(s)
            # Linux x86_64 goes unsaid, as the pages always did; another platform is named.
            among = {"win_amd64": " in the Windows wheels"}.get(
                s.platform, " in the Linux aarch64 wheels" if s.platform.endswith("_aarch64") else "")
            split = regressed(s)
            if split:
                # A release in between lost the code (onnxruntime-gpu 1.23.0): no single boundary, so name each.
                has = f"{s.package} {', '.join(split[0])} carry code {s.arch} runs{among}, {', '.join(split[1])} none"
            elif first:
                has = f"{s.package} {first} is the first scanned release with {s.arch} code{among}" + \
                    (f", {last} the last without" if last else "")
            else:
                # No release has the code yet (an open failure): "the last without" would promise a later
                # version with it, so name the versions read instead.
                has = f"none of the scanned {s.package} releases ({', '.join(s.versions)}) has {s.arch} code{among}"
            parts.append(f"{has} (wheels read {s.found.date}; bwkb repro {cell.id} reads them again)")
        how = "their fat binary headers" if any(s.reader == "fatbin-headers" for s in scanned) else "cuobjdump"
        return f"Read in the released wheels with {how}: " + "; ".join(parts) + "."
    if entry.measurements:
        where = sorted({m.conditions.hardware for m in entry.measurements})
        return (f"Measured on {', '.join(where)}: {len(entry.measurements)} measurement(s) whose raw output is "
                "public (under Measured, below).")
    confirmed = [c for c in entry.claims if c.confirmed]
    if confirmed:
        return (f"Read in the sources: {len(confirmed)} statement(s) below checked against a public thread or "
                "source file; not reproduced or measured here.")
    return "Reported in the threads linked below; not reproduced, measured or checked against a source here."
