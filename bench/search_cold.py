"""Benchmark: a cold exact-string search in headless Chromium: how long until results show and
how many bytes the search fetched.

Usage: .venv/bin/python bench/search_cold.py --site DIR [--entries DIR] [--searches 5]

The built site at DIR is served on 127.0.0.1. For each search a new browser context (empty
cache) opens the home page and waits until it has loaded; then the network log starts, one
literal string (the first signature of a cell drawn at random, seeded) is typed into the header
search box, and the time until the box shows its results is taken (the box waits 120 ms after
the last keystroke, included). Bytes fetched: every response from typing to results, as raw
bytes and as sent by a static host such as GitHub Pages (text gzipped at level 6; Pagefind's
files, gzip already, as they are). Targets (#12) at 10,000 cells: within 300 ms and at most 150 KB.
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import CHROMIUM, CHROMIUM_ARGS, search, serve  # noqa: E402

TARGET_MS = 300
TARGET_KB = 150


def _sent(url: str, body: bytes) -> int:
    """Bytes a static host sends: Pagefind's files are gzip already and go as they are; text
    (HTML, JSON, JavaScript) is compressed on the way."""
    return len(body) if url.endswith(".pagefind") or ".pagefind" in url else len(gzip.compress(body, 6))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--entries", type=Path, help="entries the site was built from (default: kb/entries)")
    parser.add_argument("--searches", type=int, default=5)
    parser.add_argument("--verbose", action="store_true", help="list every response of each search")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from kb.records import lint
    from kb.records.catalog import Site

    site = Site(lint.cached_check([args.entries or ROOT / "kb" / "entries"]).cells)
    queries = [c.entry.signatures[0].text for c in random.Random(12).sample(site.cells, args.searches)]
    rows = []
    with serve(args.site) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for query in queries:
            context = browser.new_context()
            page = context.new_page()
            page.goto(base, wait_until="load")
            page.wait_for_load_state("networkidle")
            fetched: list = []
            page.on("response", lambda response: fetched.append(response))
            started = time.perf_counter()
            links = search(page, query, timeout=60000)
            ms = (time.perf_counter() - started) * 1000
            bodies = []
            for response in list(fetched):
                try:
                    bodies.append((response.url, response.body()))
                except Exception:
                    pass
            raw = sum(len(b) for _, b in bodies)
            packed = sum(_sent(url, b) for url, b in bodies)
            if args.verbose:
                for url, body in sorted(bodies, key=lambda item: -len(item[1])):
                    print(f"    {len(body) / 1024:8.1f} KB raw {_sent(url, body) / 1024:8.1f} KB sent  {url.removeprefix(base)}")
            largest = max(bodies, key=lambda item: len(item[1]), default=("", b""))
            rows.append((ms, raw / 1024, packed / 1024, len(bodies), bool(links)))
            print(f"{ms:8.0f} ms {raw / 1024:9.1f} KB raw {packed / 1024:8.1f} KB gzip {len(bodies):3d} requests"
                  f"  largest {largest[0].removeprefix(base)} ({len(largest[1]) / 1024:.1f} KB)"
                  f"  {'results' if links else 'NO RESULTS'}  {query[:60]!r}", flush=True)
            context.close()
        browser.close()
    ms = statistics.median(r[0] for r in rows)
    packed = statistics.median(r[2] for r in rows)
    print(f"median {ms:.0f} ms (< {TARGET_MS} ms {'met' if ms < TARGET_MS else 'missed'}), "
          f"{packed:.1f} KB gzip (<= {TARGET_KB} KB {'met' if packed <= TARGET_KB else 'missed'}), "
          f"{statistics.median(r[1] for r in rows):.1f} KB raw, over {len(rows)} cold searches of {len(site.cells)} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
