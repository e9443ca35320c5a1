"""Stage 5, index: build the Pagefind search index over a built site folder.

Only pages marked `data-pagefind-body` (cell and disambiguation pages) are indexed, so an
index page never outranks a cell for its own string. `literals()` hands the header search box
the literal strings themselves (`search/literals.json`), which it scores with typos, pasted log
prefixes and changed numbers forgiven.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from kb import normalise

# Extra characters kept inside words (Pagefind already keeps "_"); see stack-notes pitfall 8.
INCLUDE_CHARACTERS = ""


class SearchIndexError(RuntimeError):
    pass


def pages_indexed(summary: str) -> str:
    """How many pages Pagefind's summary says it indexed ("?" when it does not say)."""
    found = re.search(r"Indexed (\d+) pages?", summary)
    return found.group(1) if found else "?"


def build_index(site_dir: Path, output: Path | None = None) -> str:
    """Index `site_dir` into `output` (default `site_dir/pagefind/`); returns Pagefind's summary."""
    where = ["--output-path", str(output.resolve())] if output is not None else ["--output-subdir", "pagefind"]
    command = [sys.executable, "-m", "pagefind_bin", "--site", str(site_dir), *where, "--force-language", "en"]
    if INCLUDE_CHARACTERS:
        command += ["--include-characters", INCLUDE_CHARACTERS]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SearchIndexError(f"pagefind failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


# What the header search box scores pasted text against when Pagefind alone would miss it
# (kb-search.js): every literal string, on the page a search for it must land on. The shared
# rules of kb.normalise run first, then these search-only rules, on the query and on each literal
# alike, in the same regular-expression subset (read the same by Python and the browser).
# They go further than `kb match` may: a whole pasted line is compared with a literal string, not
# searched for one, so everything around the literal that varies between logs must go.
SEARCH_RULES: list[tuple[str, str, str]] = [
    ("torch distributed rank prefix", r"^\[rank[0-9]+\]:\s*", ""),
    ("nvrm xid prefix", r"^nvrm: xid \([^)]*\):\s*[0-9]+,(?:\s*pid=[^,]*,)?(?:\s*name=[^,]*,)?\s*", ""),
    ("ptxas / nvcc temporary file", r"/tmp/tmpxft_[0-9a-f]+_[0-9a-f]+-[0-9]+_", "/tmp/tmpxft_"),
    ("python temporary folder", r"/tmp/tmp[a-z0-9_]{6,}/", "/tmp/tmp/"),
    ("long hex hash", r"(^|[^0-9a-z])[0-9a-f]{16,}(?=$|[^0-9a-z])", "$1#"),
]
# Then every number is masked for the forgiving comparison (byte counts, pids, plan indexes,
# addresses); the browser keeps the unmasked form too, and prefers the literal whose numbers
# the query repeats (`major versions [12]` before `[10]`).
MASK_RULES: list[tuple[str, str, str]] = [
    ("hex number", r"0x[0-9a-f]+", "0x0"),
    ("number", r"[0-9]+", "0"),
]


def comparable(text: str) -> tuple[str, str]:
    """The two forms of a line the search box compares (`prepare` in kb-search.js): quotes and
    white space trimmed, the shared rules and then the search-only ones run until nothing changes,
    and that with its numbers masked."""
    line = re.sub(r"^[\s\"'\u201c\u201d`]+|[\s\"'\u201c\u201d`]+$", "", text)
    line = re.sub(r"\s+", " ", line).lower()
    rules = [(re.compile(p), r.replace("$1", r"\1")) for _, p, r in normalise.RULES + SEARCH_RULES]
    for _ in range(normalise.MAX_PASSES):
        before = line
        for pattern, replacement in rules:
            line = pattern.sub(replacement, line)
        line = line.strip()
        if line == before:
            break
    masked = line
    for _, pattern, replacement in MASK_RULES:
        masked = re.sub(pattern, replacement, masked)
    return line, masked


def _rules(rules: list[tuple[str, str, str]]) -> list[dict]:
    return [{"name": name, "pattern": pattern, "replacement": replacement} for name, pattern, replacement in rules]


def filters(entry) -> list[str]:
    """The Pagefind filters of a cell page, as templates/pages/cell.html writes them."""
    from kb import facets

    values = [f"component:{facets.package_name(c.package)}" for c in entry.components]
    values += [f"architecture:{a}" for a in entry.hardware.architectures]
    values.append(f"status:{facets.STATUS_NAMES[entry.status.state]}")
    return list(dict.fromkeys(values))


def literals(site) -> dict:
    """`search/literals.json`: each search page (a cell, or the page that tells apart the cells
    sharing a string) with the literal strings a search must land it for (the first is the
    page's title unless `title` says otherwise), the cell's title, and its Pagefind filters as
    indexes into one shared list. A string several cells print is listed once, under the page
    that tells those cells apart: a search for it lands there."""
    from kb.catalog import string_url

    table: dict[str, int] = {}
    pages = []
    shared = sorted(text for text, owners in site.owners.items() if len(owners) > 1)
    for cell in site.cells:
        texts = [s.text for s in cell.entry.signatures if len(site.owners[s.text]) == 1]
        flags = [table.setdefault(f, len(table)) for f in filters(cell.entry)]
        page = {"url": site.url(cell), "cell": cell.entry.title, "literals": list(dict.fromkeys(texts)),
                "filters": flags}
        if page["literals"][:1] != [cell.entry.signatures[0].text]:
            page["title"] = cell.entry.signatures[0].text  # else the title is the first literal
        pages.append(page)
    for text in shared:
        pages.append({"url": string_url(text), "cell": f"{len(site.owners[text])} cells print this string",
                      "literals": [text], "filters": []})
    return {
        "version": 1,
        "passes": normalise.MAX_PASSES,
        "normalise": normalise.export(),
        "search": _rules(SEARCH_RULES),
        "mask": _rules(MASK_RULES),
        "filters": list(table),
        "pages": pages,
    }
