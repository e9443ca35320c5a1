"""`kb build`: check the entries, then build the whole site (pages and search index) atomically.

The site is built into a temporary folder beside the target and swapped in only when every
stage succeeded, so a failed build never leaves a half-written or emptied `site/`.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kb import generate

ROOT = Path(__file__).resolve().parent.parent


class _Progress(logging.Handler):
    """Prints the hook's stage lines (`kb: ...`) and every warning as the build goes."""

    def emit(self, record):
        message = record.getMessage()
        if record.levelno >= logging.WARNING:
            print(f"{record.levelname.lower()}: {message}", file=sys.stderr)
        elif message.startswith("kb: "):
            print(message.removeprefix("kb: "))


def build(site_dir: Path, entries: Path, config_file: Path = ROOT / "mkdocs.yml", site_url: str | None = None) -> int:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    started = time.perf_counter()
    result = generate.checked(entries)
    if result.problems:
        for problem in result.problems:
            print(problem.format())
        print(f"{len(result.problems)} problem(s); nothing was built (run `kb check`)", file=sys.stderr)
        return 1
    print(f"check: {len(result.cells)} entries valid ({time.perf_counter() - started:.2f}s)")

    site_dir = site_dir.resolve()
    site_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{site_dir.name}.building-", dir=site_dir.parent))
    handler = _Progress(logging.INFO)
    logger = logging.getLogger("mkdocs")
    previous_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    previous_entries = os.environ.get("KB_ENTRIES")
    os.environ["KB_ENTRIES"] = str(entries.resolve())
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    try:
        overrides = {"site_dir": str(staging), "strict": True}
        if site_url is not None:
            overrides["site_url"] = site_url
        config = load_config(str(config_file), **overrides)
        mkdocs_build(config)
    except (MkDocsException, SystemExit) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        print(f"build failed: {exc}; {site_dir} was left as it was", file=sys.stderr)
        return 1
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)
        if previous_entries is None:
            os.environ.pop("KB_ENTRIES", None)
        else:
            os.environ["KB_ENTRIES"] = previous_entries

    old = None
    if site_dir.exists():
        old = site_dir.with_name(f".{site_dir.name}.old-{os.getpid()}")
        site_dir.rename(old)
    staging.rename(site_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    pages = sum(1 for _ in site_dir.rglob("*.html"))
    print(f"built {pages} pages into {site_dir} in {time.perf_counter() - started:.2f}s")
    return 0
