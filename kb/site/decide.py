"""Stage 4, render: the decision list of a page that tells apart the failures printing one string.

The string alone does not say which failure a reader has; something else in the log or the stack
does. Each failure gets the first sign that only it shows, in this order: another line of its own
that it prints (a sign in the log itself), an architecture none of the others is seen on, a
package none of the others involves. The list is read top to bottom, so failures with a printed
line come first and the last one is what is left ("otherwise"); each line ends in that failure's
Do now (kb.records.state), what the reader came for.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb.records import facets
from kb.records.schema import Cell

_ORDER = ("line", "architecture", "package", "none")


@dataclass(frozen=True)
class Choice:
    """One line of the decision list: the sign (`kind` one of _ORDER, `value` the line, architecture
    or package name it names; empty for "none") and the failure it points at."""

    kind: str
    value: str
    cell: Cell


def choices(cells: list[Cell], owners: dict[str, list[Cell]]) -> list[Choice]:
    """The decision list of the failures `cells` that print one string; `owners`: every literal's
    cells (a line another failure prints too tells nothing apart)."""
    found = []
    for cell in cells:
        others = [o for o in cells if o is not cell]
        line = next((s.text for s in cell.entry.signatures
                     if s.kind != "symptom" and not s.generic and len(owners[s.text]) == 1), None)
        archs = [a for a in cell.entry.hardware.architectures
                 if not any(a in o.entry.hardware.architectures for o in others)]
        theirs = {c.package for o in others for c in o.entry.components}
        packages = [facets.package_name(c.package) for c in cell.entry.components
                    if c.package not in theirs and c.role in ("raises", "triggers")]
        if line:
            found.append(Choice("line", line, cell))
        elif archs:
            found.append(Choice("architecture", facets.ARCH_NAMES.get(archs[0], archs[0]), cell))
        elif packages:
            found.append(Choice("package", packages[0], cell))
        else:
            found.append(Choice("none", "", cell))
    # A stable sort: the record order of the cells (by id) stays within each kind of sign.
    return sorted(found, key=lambda c: _ORDER.index(c.kind))
