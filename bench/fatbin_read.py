"""Benchmark: kb.records.fatbin's pure-Python reader against NVIDIA's cuobjdump on real libraries.

Usage: .venv/bin/python bench/fatbin_read.py [--cuobjdump PATH] [--runs 5] LIBRARY.so [...]

For each library, prints the wall-clock median of the Python reader (headers only, through its
read cap) and of `cuobjdump -all --list-elf` plus `cuobjdump -all --list-ptx` (which walks every
fatbin too), the bytes the reader read, and whether the two agree on the set of SASS and PTX
architectures and on the number of images. cuobjdump comes from the `nvidia-cuda-cuobjdump` wheel
(`pip download nvidia-cuda-cuobjdump`, unzip, nvidia/cu13/bin/cuobjdump) or a CUDA toolkit; it is
looked for on PATH when --cuobjdump is not given. Not a test: timings on these machines are noisy.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kb.records import fatbin  # noqa: E402

# cuobjdump names each image `<lib>.<n>.sm_120a.cubin` / `<lib>.<n>.sm_120.ptx`.
_LISTED = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.sm_(\d+)([af]?)\.(?:cubin|ptx)$", re.M)


def cuobjdump_images(tool: str, path: str) -> Counter:
    found: Counter = Counter()
    for flag in ("--list-elf", "--list-ptx"):
        done = subprocess.run([tool, "-all", flag, path], capture_output=True, text=True, timeout=600)
        for kind, arch, variant in _LISTED.findall(done.stdout):
            found[("sm" if kind == "ELF" else "compute") + f"_{arch}{variant}"] += 1
    return found


def python_images(path: str) -> tuple[Counter, fatbin.Library]:
    library = fatbin.read(path)
    return Counter(i.name for i in library.images), library


def timed(fn, runs: int):
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("libraries", nargs="+")
    parser.add_argument("--cuobjdump", default=shutil.which("cuobjdump"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for path in args.libraries:
        size = Path(path).stat().st_size
        py_time, (py_found, library) = timed(lambda: python_images(path), args.runs)
        print(f"{path} ({size:,} bytes): {len(library.units)} fatbin(s), {sum(py_found.values())} image(s), "
              f"compressed: {library.compressed}, problem: {library.problem}")
        print(f"  python reader: {py_time * 1000:.1f} ms median of {args.runs}, {library.bytes_read:,} bytes read")
        print(f"    SASS {', '.join(library.names('sass'))}; PTX {', '.join(library.names('ptx'))}")
        if not args.cuobjdump:
            print("  cuobjdump: not found (pass --cuobjdump PATH)")
            continue
        cu_time, cu_found = timed(lambda: cuobjdump_images(args.cuobjdump, path), args.runs)
        print(f"  cuobjdump -all --list-elf/--list-ptx: {cu_time * 1000:.1f} ms median of {args.runs}")
        print(f"  agree: architectures {set(py_found) == set(cu_found)}, image counts {py_found == cu_found}"
              + ("" if py_found == cu_found else f" (python {dict(py_found)}, cuobjdump {dict(cu_found)})"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
