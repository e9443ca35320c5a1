"""Print one pinned tool release's lines of kb/repro/tools.lock (its requirement and every file's
hash), for a `pip download --require-hashes -r` of that release alone: the Makefile fills the
tool wheelhouse for the offline `kb repro` tests with it.

    python tools/repro_lock.py nvidia-cuda-nvcc-cu12==12.8.93 > .venv/repro-wheelhouse/wheel.lock
"""

from __future__ import annotations

import sys

from kb.repro.install import InstallError, lock_lines


def main(argv: list[str]) -> int:
    if len(argv) != 1 or "==" not in argv[0]:
        print("usage: repro_lock.py PACKAGE==VERSION (a release pinned in kb/repro/tools.lock)", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(lock_lines(*argv[0].split("==", 1)))
    except InstallError as exc:
        print(f"repro_lock.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
