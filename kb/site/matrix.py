"""The serving matrix: Blackwell hardware (columns) against serving stack (rows).

Generated from the records only. Placement rules, kept as small data tables so they are easy
to read and extend:

* hardware: each string in a cell's `hardware.gpus` is matched against `HARDWARE` (first match
  wins); a cell sits in every column one of its GPU strings maps to. GPU strings that map to
  no column are listed on the page, and a cell none of whose GPUs map is listed as not placed.
* stack: each component's package is looked up in `STACKS`; a cell sits in the row of each of
  its components' stacks (a cell with vllm and flashinfer components is in both rows). cuDNN
  and CUTLASS kernels are reached through FlashInfer in these records, so they count as the
  FlashInfer row; sgl-kernel counts as SGLang. Packages in no stack (CUDA toolkit, driver)
  place nothing.
* versions shown next to a cell in a grid cell: the `affected` range and `fixed_in` of its
  components in that row, and the versions of that row's packages in measurement conditions
  whose hardware text maps to that column.

The page stays the same size however many cells there are: a grid cell shows its cells' count by
status, linked to its listing (it would list them while it has at most `INLINE`, now none). Every grid cell
has a listing page of its own, `matrix/<stack>/<hardware>/`, in pages of `kb.records.catalog.PER_PAGE`
cells, and so have the cells not on the grid, `matrix/not-placed/`. These URLs exist whether
or not the grid cell is empty, so adding or removing cells never takes one away; only the
later pages of a long listing come and go.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.records import facets
from kb.records.catalog import MATRIX_URL as URL
from kb.records.catalog import paged_title, paged_urls, paginate
from kb.records.schema import Cell
from kb.records.state import state
from kb.site.page import Page


# (column key, column header, pattern matched against a GPU string, case-insensitive)
HARDWARE: tuple[tuple[str, str, str], ...] = (
    ("rtx-pro-6000", "RTX PRO 6000", r"\bRTX\s+(PRO\s+)?6000\s*D\b|\bRTX\s+PRO\s+6000\b"),
    ("rtx-pro-5000", "RTX PRO 5000", r"\bRTX\s+PRO\s+5000\b"),
    ("rtx-50xx", "RTX 50xx", r"\bRTX\s+50[5-9]0\b"),
    ("gb10", "GB10 / DGX Spark", r"\bGB10\b|\bDGX\s+Spark\b"),
)

# (row key, row header, packages placed in that row)
STACKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("vllm", "vLLM", ("vllm",)),
    ("sglang", "SGLang", ("sglang", "sgl-kernel")),
    ("flashinfer", "FlashInfer", ("flashinfer", "cudnn", "cutlass")),
    ("tensorrt-llm", "TensorRT-LLM", ("tensorrt-llm",)),
    ("pytorch-triton", "PyTorch / Triton", ("torch", "triton")),
)

# Status order used for the legend, most settled first (colours live in the page's <style>,
# mirroring the badge colours of kb.css).
STATUS_COLOURS = {
    "fixed-release": "#1b6e20",
    "fixed-main": "#2d5f8b",
    "fix-proposed": "#7a5300",
    "workaround-only": "#8a3f00",
    "device-limit": "#6b2c91",
    "under-investigation": "#9b1c1c",
}

# A grid cell with more cells than this shows counts by status and links to its listing page.
# None are listed on the grid: 20-40-word titles in a column about 130 px wide made the page 11,731 px
# tall on a laptop beside columns of counts (UX review 2026-12-05, S3-16); counts read at a glance.
INLINE = 0
NOT_PLACED_URL = URL + "not-placed/"

_PATTERNS = [(key, re.compile(pattern, re.I)) for key, _, pattern in HARDWARE]
_STACK_OF = {package: key for key, _, packages in STACKS for package in packages}


def hardware_of(text: str) -> str | None:
    """The column key a GPU (or conditions hardware) string maps to, or None."""
    for key, pattern in _PATTERNS:
        if pattern.search(text):
            return key
    return None


def stack_of(package: str) -> str | None:
    return _STACK_OF.get(package)


@dataclass(frozen=True)
class Item:
    cell: Cell
    versions: tuple[str, ...]


@dataclass(frozen=True)
class GridCell:
    stack: str
    hardware: str
    hardware_name: str
    items: tuple[Item, ...]

    @property
    def url(self) -> str:
        return grid_url(self.stack, self.hardware)

    @property
    def inline(self) -> bool:
        return len(self.items) <= INLINE

    def statuses(self) -> list[tuple[str, int]]:
        """(status, how many of the grid cell's cells have it), in the legend's order."""
        counts: dict[str, int] = {}
        for item in self.items:
            key = state(item.cell.entry).key
            counts[key] = counts.get(key, 0) + 1
        return [(status, counts[status]) for status in STATUS_COLOURS if status in counts]


def grid_url(stack: str, hardware: str) -> str:
    return f"{URL}{stack}/{hardware}/"


@dataclass(frozen=True)
class Row:
    key: str
    name: str
    packages: tuple[str, ...]
    cells: tuple[GridCell, ...]


@dataclass(frozen=True)
class Matrix:
    rows: tuple[Row, ...]
    unplaced: tuple[tuple[Cell, str], ...]  # (cell, why it is not on the grid)
    unmapped_gpus: tuple[tuple[str, tuple[Cell, ...]], ...]  # GPU strings in no column
    gpus_seen: dict[str, tuple[str, ...]]  # column key -> the GPU strings mapped to it

    @property
    def filled(self) -> int:
        return sum(1 for row in self.rows for gc in row.cells if gc.items)

    @property
    def size(self) -> int:
        return len(self.rows) * len(HARDWARE)


def _versions(cell: Cell, stack: str, hardware: str) -> tuple[str, ...]:
    found: list[str] = []
    for c in cell.entry.components:
        if stack_of(c.package) != stack:
            continue
        name = facets.package_name(c.package)
        if c.affected:
            found.append(f"{name} {c.affected} (affected)")
        if c.fixed_in:
            found.append(f"{name} fixed in {c.fixed_in}")
    for m in cell.entry.measurements:
        if hardware_of(m.conditions.hardware) != hardware:
            continue
        for package, version in sorted(m.conditions.versions.items()):
            if stack_of(package) == stack:
                found.append(f"{facets.package_name(package)} {version} (measured)")
    return tuple(dict.fromkeys(found))


def build(cells: list[Cell]) -> Matrix:
    cells = sorted(cells, key=lambda c: c.id)
    grid: dict[tuple[str, str], list[Item]] = {}
    unplaced: list[tuple[Cell, str]] = []
    unmapped: dict[str, list[Cell]] = {}
    seen: dict[str, set[str]] = {key: set() for key, _, _ in HARDWARE}
    for cell in cells:
        columns = []
        for gpu in cell.entry.hardware.gpus:
            key = hardware_of(gpu)
            if key is None:
                unmapped.setdefault(gpu, []).append(cell)
            else:
                seen[key].add(gpu)
                if key not in columns:
                    columns.append(key)
        stacks = list(dict.fromkeys(s for c in cell.entry.components if (s := stack_of(c.package))))
        if not columns or not stacks:
            why = []
            if not columns:
                why.append("none of its GPUs (" + ", ".join(cell.entry.hardware.gpus) + ") names a hardware column")
            if not stacks:
                why.append("none of its components ("
                           + ", ".join(facets.package_name(c.package) for c in cell.entry.components)
                           + ") is in a stack row")
            unplaced.append((cell, "; ".join(why)))
            continue
        for stack in stacks:
            for column in columns:
                grid.setdefault((stack, column), []).append(Item(cell, _versions(cell, stack, column)))
    rows = tuple(
        Row(key, name, packages, tuple(GridCell(key, hw, hw_name, tuple(grid.get((key, hw), ())))
                                       for hw, hw_name, _ in HARDWARE))
        for key, name, packages in STACKS)
    return Matrix(rows, tuple(unplaced), tuple((gpu, tuple(cs)) for gpu, cs in sorted(unmapped.items())),
                  {key: tuple(sorted(gpus)) for key, gpus in seen.items()})


def urls(cells: list[Cell]) -> list[str]:
    """Every URL the matrix publishes: the grid, each grid cell's listing and the cells off the grid."""
    matrix = build(cells)
    found = [URL]
    for row in matrix.rows:
        for gc in row.cells:
            found += paged_urls(gc.url, len(gc.items))
    return found + paged_urls(NOT_PLACED_URL, len(matrix.unplaced))


def pages(renderer) -> list[Page]:
    """The matrix (`matrix/`) of a `kb.site.pages.Renderer` and its listing pages."""
    matrix = build(renderer.site.cells)
    out = [Page(URL, "Serving matrix",
                "Which Blackwell serving failures bite on which card (RTX PRO 6000, RTX PRO 5000, RTX 50xx, "
                "GB10 / DGX Spark) with which stack (vLLM, SGLang, FlashInfer, TensorRT-LLM, PyTorch / Triton).",
                renderer._render("matrix.html", URL, matrix=matrix, hardware=HARDWARE, stacks=STACKS,
                                 status_colours=STATUS_COLOURS, inline=INLINE, not_placed_url=NOT_PLACED_URL),
                "index")]
    for row in matrix.rows:
        for gc in row.cells:
            title = f"{row.name} on {gc.hardware_name}"
            for paging, items in paginate(gc.url, list(gc.items)):
                # A listing page shows its items' cells and versions, and where it sits in the paging.
                key = ["matrix listing", title, paging.key,
                       *[part for item in items for part in (renderer.site.shown(item.cell), *item.versions, "")]]
                out.append(renderer._cached(key, lambda: Page(
                    paging.url, paged_title(title, paging),
                    f"{len(gc.items)} Blackwell serving failure(s) with {row.name} on {gc.hardware_name}.",
                    renderer._render("matrix_listing.html", paging.url, title=title, items=items, unplaced=None,
                                     paging=paging), "index")))
    title = "Failures not on the serving matrix"
    for paging, unplaced in paginate(NOT_PLACED_URL, list(matrix.unplaced)):
        key = ["matrix unplaced", paging.key,
               *[part for cell, why in unplaced for part in (renderer.site.shown(cell), why)]]
        out.append(renderer._cached(key, lambda: Page(
            paging.url, paged_title(title, paging),
            f"{len(matrix.unplaced)} failure(s) whose GPUs or components name no column or row of the "
            "serving matrix, and why.",
            renderer._render("matrix_listing.html", paging.url, title=title, items=None, unplaced=unplaced,
                             paging=paging), "index")))
    return out
