"""Benchmark: `kb repro` of the MLA decode entry from a cold cache and again warm (issue 34 targets:
cold within 3 minutes, warm within 10 s).

Usage: .venv/bin/python bench/repro_mla.py [--id ENTRY] [--cache DIR] [--write]

Cold: a fresh, empty cache folder (XDG_CACHE_HOME=DIR, removed first), so `kb repro` downloads and
installs the pinned Triton wheel and downloads and unpacks the pinned vLLM wheel before it compiles.
Warm: the same command again with that cache. Each is one child process timed by its wall clock;
the exit status and the last lines it printed are shown (0 when the recorded output comes out again).
With --write the cold run records its output in the entry (`kb repro --write`).
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


def timed(command: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return time.monotonic() - start, done.returncode, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--id", default="mla-decode-fp8-kv-triton-shared-memory")
    parser.add_argument("--cache", default=str(ROOT / ".cache" / "bench-repro"))
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    cache = Path(args.cache)
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    env = os.environ | {"XDG_CACHE_HOME": str(cache)}
    command = [sys.executable, "-m", "kb.cli", "repro", args.id]
    rows = []
    for label, extra in (("cold", ["--write"] if args.write else []), ("warm", [])):
        wall, status, out = timed(command + extra, env)
        rows.append((label, wall, status))
        tail = [line for line in out.splitlines() if line.startswith(("ok", "differs", "error", "kb repro:"))]
        print(f"{label}: {wall:.1f} s, exit {status}")
        for line in tail[-4:]:
            print(f"    {line[:160]}")
    limits = {"cold": 180.0, "warm": 10.0}
    for label, wall, _ in rows:
        print(f"{label:<5} {wall:7.1f} s  target {limits[label]:.0f} s  {'met' if wall <= limits[label] else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
