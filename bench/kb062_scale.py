"""What many signatures made of one small word pool cost `kb check` and `kb match` (issue 38 item 8).

Usage: .venv/bin/python bench/kb062_scale.py [--cells 50 100 198] [--log-kib 64] [--code DIR ...] [--json]

The attack review's construction (notes/attack-review-2026-12-05.md, Informational, KB062): valid
synthetic cells (bench/synth.py, written outside the checkout) whose signatures after the first are
rewritten as 8-word subsets of a 12-word pool, in a different order each time (495 sets, each used
at most 8 times, so KB062's same-word-set rule passes them; every pool word is then held by two
thirds of all signatures). Printed for each size: a cold `kb check` of the hostile folder and of the
same cells unmodified, and `kb match --entries` of each on a log of lines holding the 12 words. The
commands run in fresh processes with an empty cache, with the code of each --code folder in turn
(default: this checkout), so `--code OLD .` gives the figures before and after a change side by side,
measured on the same folders in one run.
tests/test_kb062_scale.py asserts a generous bound on how the check grows with the size.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402  (bench/synth.py, beside this file)

POOL = ("kernel launch failed device memory allocator stream context module driver runtime fault"
        .split())
SET_SIZE = 8
USES = 8  # times each word set is used, as the review did: KB062 allows 8
PER_CELL = 19  # hostile signatures after each cell's own first one (20 at most, kb.records.schema)
SETS = list(itertools.combinations(POOL, SET_SIZE))


def hostile_texts(count: int) -> list[str]:
    """`count` distinct texts: text k holds word set k mod 495, in an order fixed by k."""
    assert count <= len(SETS) * USES, f"at most {len(SETS) * USES} texts"
    out = []
    for k in range(count):
        words = list(SETS[k % len(SETS)])
        random.Random(k).shuffle(words)
        out.append(" ".join(words))
    return out


def build(folder: Path, cells: int, hostile: bool) -> Path:
    """`cells` synthetic cells in `folder` (bench/synth.py); with `hostile`, every signature after
    the first replaced by PER_CELL texts of the pool (`hostile_texts`)."""
    synth.generate(cells, folder, seed=7)
    if not hostile:
        return folder
    texts = iter(hostile_texts(cells * PER_CELL))
    for path in sorted(folder.glob("*.yaml")):
        raw = path.read_text(encoding="utf-8")
        header = "".join(line for line in raw.splitlines(keepends=True) if line.startswith("#"))
        data = yaml.safe_load(raw)
        data["signatures"] = data["signatures"][:1] + [{"text": next(texts), "kind": "log-line"}
                                                       for _ in range(PER_CELL)]
        path.write_text(header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return folder


def log(size: int) -> str:
    """Lines holding the 12 pool words, in orders that differ from line to line."""
    rng = random.Random(12)
    lines, total = [], 0
    while total < size:
        words = list(POOL)
        rng.shuffle(words)
        line = "ERROR " + " ".join(words) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)


def kb(code: Path, args: list[str]) -> tuple[float, int]:
    """Seconds and exit status of `kb ARGS` with the code in `code`, in a fresh process with an
    empty cache (XDG_CACHE_HOME): what a first `kb check` costs."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache, PYTHONPATH=str(code))
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", "import sys; from kb import cli; sys.exit(cli.main(sys.argv[1:]))",
                               *args], env=env, cwd=code, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - started, done.returncode


def measure(sizes: list[int], log_bytes: int, codes: tuple[Path, ...] = (ROOT,)) -> list[dict]:
    """For each size and code folder: seconds and exit status of a cold check and a match, of the
    hostile cells and of the same cells unmodified."""
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        logfile = Path(scratch) / "pool.log"
        logfile.write_text(log(log_bytes), encoding="utf-8")
        for cells in sizes:
            folders = {name: build(Path(scratch) / f"{name}-{cells}", cells, hostile)
                       for name, hostile in (("hostile", True), ("plain", False))}
            for code in codes:
                row: dict = {"code": str(code), "cells": cells, "signatures": cells * PER_CELL}
                for name, folder in folders.items():
                    row[f"check {name}"] = kb(code, ["check", str(folder)])
                    row[f"match {name}"] = kb(code, ["match", "--entries", str(folder), "--json", str(logfile)])
                rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[50, 100, 198], help="sizes (default 50 100 198)")
    parser.add_argument("--log-kib", type=int, default=64, help="size of the log in KiB (default 64)")
    parser.add_argument("--code", type=Path, nargs="+", default=[ROOT],
                        help="checkouts whose kb runs, each in turn (default: this one)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    rows = measure(args.cells, args.log_kib * 1024, tuple(code.resolve() for code in args.code))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"seconds (exit status); log of {args.log_kib} KiB")
    for row in rows:
        print(f"{row['code']}  {row['cells']:4} cells {row['signatures']:5} pool signatures: "
              + "  ".join(f"{k} {v[0]:6.2f} ({v[1]})" for k, v in row.items() if isinstance(v, tuple)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
