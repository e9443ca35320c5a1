"""Benchmark: rebuilding the site of N synthetic cells after no change and after one edited title.

Usage: .venv/bin/python bench/rebuild.py [--sizes 1000] [--runs 2]

For each size N the synthetic knowledge base of bench/synth.py is written under
`.cache/bench/synth-N/` (inside the checkout, so `kb build` uses its caches there, as it does for
kb/entries/), then `kb build --preview` runs as a user runs it, in a child process:

  cold        caches removed first (.cache/kb/ entries of that folder)
  warm        nothing changed since the cold build
  one title   one cell's title edited (the cell with the most related cells)

For each it prints the wall time until the pages were in place (kb build's `pages:` line) and
until the build ended (the search index rebuilt when a page changed), how many files of the site
were rewritten and whether the edited page shows the new title. Targets (#12): warm under 5 s,
one title under 2 s to the page on disk.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TARGETS = {"warm": 5.0, "one title": 2.0}


def _snapshot(site: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(site)): (p.stat().st_mtime_ns, p.stat().st_ino) for p in site.rglob("*") if p.is_file()}


def _build(entries: Path, site: Path) -> tuple[float, float]:
    """(seconds until kb build said its pages were in place, seconds until it ended)."""
    kb = Path(sys.executable).with_name("kb")
    started = time.perf_counter()
    child = subprocess.Popen([str(kb), "build", "--preview", "--entries", str(entries), "-d", str(site)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    pages = None
    out = []
    for line in child.stdout:
        out.append(line)
        if pages is None and line.startswith("pages: "):
            pages = time.perf_counter() - started
    err = child.stderr.read()
    seconds = time.perf_counter() - started
    if child.wait() != 0:
        sys.exit(f"kb build failed:\n{''.join(out)}\n{err}")
    return (pages if pages is not None else seconds), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--runs", type=int, default=2, help="one-title edits per size (each a new title)")
    args = parser.parse_args()
    import synth
    from kb.records import lint
    from kb.records.catalog import Site

    work = ROOT / ".cache" / "bench"
    print(f"{'cells':>6}  {'build':<10} {'to pages':>9} {'to end':>8} {'files rewritten':>16}  target (to pages)")
    for n in args.sizes:
        entries, site = work / f"synth-{n}", work / f"site-{n}"
        shutil.rmtree(entries, ignore_errors=True)
        shutil.rmtree(site, ignore_errors=True)
        site.with_name(f".{site.name}.kb-state.json").unlink(missing_ok=True)
        synth.main([str(n), "--out", str(entries)])
        for cached in (ROOT / ".cache" / "kb").glob("*.pickle"):
            cached.unlink()  # cold: nothing checked or rendered before
        rows = [("cold", *_build(entries, site), None)]
        before = _snapshot(site)
        rows.append(("warm", *_build(entries, site), sum(1 for k, v in _snapshot(site).items() if before.get(k) != v)))
        cells = Site(lint.check([entries]).cells)
        edited = max(cells.cells, key=lambda c: len(c.entry.related))
        path = entries / f"{edited.id}.yaml"
        for run in range(args.runs):
            title = f"Edited title number {run + 1} of the benchmark"
            text = path.read_text(encoding="utf-8")
            old = next(line for line in text.splitlines() if line.startswith("title:"))
            path.write_text(text.replace(old, f"title: {title}", 1), encoding="utf-8")
            before = _snapshot(site)
            pages, seconds = _build(entries, site)
            changed = sum(1 for k, v in _snapshot(site).items() if before.get(k) != v)
            shown = title in (site / cells.url(edited) / "index.html").read_text(encoding="utf-8")
            rows.append(("one title", pages, seconds, changed if shown else f"{changed} (title NOT shown)"))
        for name, pages, seconds, changed in rows:
            target = TARGETS.get(name)
            verdict = "" if target is None else (f"< {target:g} s " + ("met" if pages < target else "missed"))
            print(f"{n:>6}  {name:<10} {pages:>9.2f} {seconds:>8.2f} {'' if changed is None else changed!s:>16}  "
                  f"{verdict}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
