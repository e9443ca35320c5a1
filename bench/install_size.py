"""Benchmark: the slim install of `bwkb` against the full one (with the `site` extra, what every
install pulled in before the runtime was slimmed), side by side in one run.

Usage: .venv/bin/python bench/install_size.py [--runs 15]

Builds the wheel once, installs it into three fresh venvs from the locked wheelhouse (no network;
`make .venv/.installed-test` fills it): an empty venv (pip and setuptools only, the floor),
`wheel` and `wheel[site]`; prints each one's size on disk (du of the venv) and its distribution
count, then the start-up time of `bwkb --version` from an empty folder, the two installs timed in
alternation after one untimed run each (which writes the check cache), as wall-clock medians and
their ratio. Not a test: these machines are noisy, so the medians and the ratio are what to read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import wheel_install  # noqa: E402


def du(path: Path) -> int:
    """Bytes of the blocks the files under `path` take (what `du -s` counts), links not followed."""
    total = 0
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


def distributions(venv: Path) -> int:
    (site,) = venv.glob("lib/python*/site-packages")
    return sum(1 for p in site.iterdir() if p.name.endswith(".dist-info"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each install (default: 15)")
    args = parser.parse_args()
    why = wheel_install.missing_wheelhouse()
    if why:
        print(why, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        wheel = wheel_install.build_wheel(base, home)
        empty = base / "empty"
        subprocess.run([sys.executable, "-m", "venv", str(empty)], check=True, env=wheel_install.pip_env(home))
        installs = {"slim": wheel_install.install(base / "slim", str(wheel), home),
                    "full [site]": wheel_install.install(base / "full", f"{wheel}[site]", home)}
        floor = du(empty)
        print(f"{'install':12} {'venv MiB':>9} {'less empty venv':>16} {'distributions':>14}")
        print(f"{'empty venv':12} {floor / 2**20:9.1f} {0:16.1f} {distributions(empty):14d}")
        for name, bin_dir in installs.items():
            size = du(bin_dir.parent)
            print(f"{name:12} {size / 2**20:9.1f} {(size - floor) / 2**20:16.1f} {distributions(bin_dir.parent):14d}")
        work = base / "work"
        work.mkdir()
        env = {"PATH": os.defpath, "HOME": str(home), "LANG": "C.UTF-8"}
        times: dict[str, list[float]] = {name: [] for name in installs}
        for run in range(args.runs + 1):
            for name, bin_dir in installs.items():
                start = time.perf_counter()
                subprocess.run([str(bin_dir / "bwkb"), "--version"], check=True, cwd=work, env=env,
                               stdout=subprocess.DEVNULL)
                if run:  # the first run of each is untimed: it writes the check cache
                    times[name].append(time.perf_counter() - start)
        medians = {name: statistics.median(t) * 1000 for name, t in times.items()}
        print(f"\n`bwkb --version` start-up, median of {args.runs} (warm cache):")
        for name, ms in medians.items():
            print(f"  {name:12} {ms:7.0f} ms")
        slim, full = medians.values()
        print(f"  slim / full  {slim / full:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
