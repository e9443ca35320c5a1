"""Benchmark: rebuilding the site of N synthetic cells after no change and after one edited title.

Usage: .venv/bin/python bench/rebuild.py [--sizes 1000] [--runs 2]

For each size N the synthetic knowledge base of bench/synth.py is written under
`.cache/bench/synth-N/` (inside the checkout, so `kb build` uses its caches there, as it does for
kb/entries/), then `kb build --preview` runs as a user runs it, in a child process:

  cold        caches removed first (.cache/kb/ entries of that folder)
  warm        nothing changed since the cold build
  one title   one cell's title edited (the cell with the most related cells)

For each it prints the wall time, how many files of the site were rewritten and whether the
edited page shows the new title. Targets (#12): warm under 5 s, one title under 2 s.
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


def _build(entries: Path, site: Path) -> float:
    kb = Path(sys.executable).with_name("kb")
    started = time.perf_counter()
    done = subprocess.run([str(kb), "build", "--preview", "--entries", str(entries), "-d", str(site)],
                          capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"kb build failed:\n{done.stdout}\n{done.stderr}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--runs", type=int, default=2, help="one-title edits per size (each a new title)")
    args = parser.parse_args()
    import synth
    from kb import lint
    from kb.catalog import Site

    work = ROOT / ".cache" / "bench"
    print(f"{'cells':>6}  {'build':<10} {'seconds':>8} {'files rewritten':>16}  target")
    for n in args.sizes:
        entries, site = work / f"synth-{n}", work / f"site-{n}"
        shutil.rmtree(entries, ignore_errors=True)
        shutil.rmtree(site, ignore_errors=True)
        synth.main([str(n), "--out", str(entries)])
        for cached in (ROOT / ".cache" / "kb").glob("*.pickle"):
            cached.unlink()  # cold: nothing checked or rendered before
        rows = [("cold", _build(entries, site), None)]
        before = _snapshot(site)
        rows.append(("warm", _build(entries, site), sum(1 for k, v in _snapshot(site).items() if before.get(k) != v)))
        cells = Site(lint.check([entries]).cells)
        edited = max(cells.cells, key=lambda c: len(c.entry.related))
        path = entries / f"{edited.id}.yaml"
        for run in range(args.runs):
            title = f"Edited title number {run + 1} of the benchmark"
            text = path.read_text(encoding="utf-8")
            old = next(line for line in text.splitlines() if line.startswith("title:"))
            path.write_text(text.replace(old, f"title: {title}", 1), encoding="utf-8")
            before = _snapshot(site)
            seconds = _build(entries, site)
            changed = sum(1 for k, v in _snapshot(site).items() if before.get(k) != v)
            shown = title in (site / cells.url(edited) / "index.html").read_text(encoding="utf-8")
            rows.append((f"one title", seconds, changed if shown else f"{changed} (title NOT shown)"))
        for name, seconds, changed in rows:
            target = TARGETS.get(name)
            verdict = "" if target is None else (f"< {target:g} s " + ("met" if seconds < target else "missed"))
            print(f"{n:>6}  {name:<10} {seconds:>8.2f} {'' if changed is None else changed!s:>16}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
