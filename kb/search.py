"""Stage 5, index: build the Pagefind search index over a built site folder.

Only pages marked `data-pagefind-body` (cell and disambiguation pages) are indexed, so an
index page never outranks a cell for its own string.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Extra characters kept inside words (Pagefind already keeps "_"); see stack-notes pitfall 8.
INCLUDE_CHARACTERS = ""


class SearchIndexError(RuntimeError):
    pass


def build_index(site_dir: Path) -> str:
    """Index `site_dir` into `site_dir/pagefind/`; returns Pagefind's summary output."""
    command = [sys.executable, "-m", "pagefind_bin", "--site", str(site_dir), "--output-subdir", "pagefind",
               "--force-language", "en"]
    if INCLUDE_CHARACTERS:
        command += ["--include-characters", INCLUDE_CHARACTERS]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SearchIndexError(f"pagefind failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout
