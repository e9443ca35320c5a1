"""Benchmark: how often the header search box puts the right page first for what people paste.

Usage: .venv/bin/python bench/search_hits.py [--site DIR] [--entries DIR] [--build] [--sample N] [--misses]
With --build, builds the entries into DIR first (default /tmp/search-site). Then, in headless
Chromium (Debian's /usr/bin/chromium, as the browser tests drive it) against that site served on
127.0.0.1, types into the search box every literal string of every cell, and variants of it:

- exact: the literal as written;
- numbers: every number standing alone (not part of a word such as sm_120) changed to another of
  the same length (another byte count, pid, index); literals without one are skipped;
- cut end: the first 60% of its characters, cut wherever that falls (a partial copy);
- cut start: the last 60% (the prefix lost);
- typo: one edit (a letter changed, dropped, doubled or two swapped) in one word of 5+ letters;
- pasted: behind a log prefix (vLLM engine core, Ray worker, torch rank, SGLang), in turn.

A hit is the right page first: the cell, or the page that tells apart the cells printing that
string. A cut literal that another page's literal also holds, or a literal whose numbers are all
it differs by from another's, may land on either (counted as hits, and reported apart); "holds"
and "differs" as the search box compares them (kb.site.search.comparable: normalised, numbers
masked). Prints the hit rate per variant, and the median time from typing to results (the box
waits 120 ms after the last keystroke). With --sample N, N literal strings drawn at random (for large synthetic
sets, bench/synth.py). Not a test: it measures, it asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import CHROMIUM, CHROMIUM_ARGS, search, serve  # noqa: E402
from kb.site.search import comparable  # noqa: E402

PREFIXES = [
    "(EngineCore_DP0 pid=2211) ERROR 12-01 10:02:11 [core.py:710] ",
    "(RayWorkerWrapper pid=4121, ip=10.0.0.2) ",
    "[rank0]: ",
    "[2026-04-06 13:48:43 PP3] ",
]
NUMBER = re.compile(r"(?<![A-Za-z_])[0-9]+(?![A-Za-z_])")
WORD = re.compile(r"[A-Za-z]{5,}")
CUT = 0.6


def change_numbers(text: str, rng: random.Random) -> str:
    def other(m: re.Match) -> str:
        digits = m.group(0)
        while True:
            low = 10 ** (len(digits) - 1) if len(digits) > 1 else 0
            new = str(rng.randrange(low, 10 ** len(digits)))
            if new != digits:
                return new
    return NUMBER.sub(other, text)


def typo(text: str, rng: random.Random) -> str | None:
    words = list(WORD.finditer(text))
    if not words:
        return None
    word = rng.choice(words)
    w = word.group(0)
    i = rng.randrange(1, len(w) - 1)
    kind = rng.randrange(4)
    if kind == 0:
        letters = [c for c in "abcdefghijklmnopqrstuvwxyz" if c != w[i].lower()]
        w = w[:i] + rng.choice(letters) + w[i + 1:]
    elif kind == 1:
        w = w[:i] + w[i + 1:]
    elif kind == 2:
        w = w[:i] + w[i] + w[i:]
    else:
        w = w[:i - 1] + w[i] + w[i - 1] + w[i + 1:] if w[i] != w[i - 1] else w[:i] + w[i + 1:]
    return text[:word.start()] + w + text[word.end():]


def variants(text: str, index: int, rng: random.Random) -> dict[str, str]:
    out = {"exact": text}
    changed = change_numbers(text, rng)
    if changed != text:
        out["numbers"] = changed
    keep = max(12, round(len(text) * CUT))
    if keep < len(text):
        out["cut end"] = text[:keep]
        out["cut start"] = text[-keep:]
    wrong = typo(text, rng)
    if wrong and wrong != text:
        out["typo"] = wrong
    out["pasted"] = PREFIXES[index % len(PREFIXES)] + text
    return out


def acceptable(kind: str, query: str, text: str, forms: dict[str, tuple[str, str]], pages: dict[str, str],
               want: str) -> set[str]:
    """The pages a search may put first for this variant of `text` (`pages`: literal -> page;
    `forms`: literal -> what the search box compares, kb.site.search.comparable)."""
    ok = {want}
    if kind.startswith("cut"):
        cut = comparable(query)[0]
        ok |= {pages[other] for other, (normal, _) in forms.items() if cut in normal}
    if kind == "numbers":
        ok |= {pages[other] for other, (_, masked) in forms.items() if masked == forms[text][1]}
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=Path("/tmp/search-site"), help="a built site folder")
    parser.add_argument("--entries", type=Path, default=ROOT / "kb" / "entries")
    parser.add_argument("--build", action="store_true", help="build --entries into --site first")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sample", type=int, default=0, help="only this many literal strings, drawn at random")
    parser.add_argument("--misses", action="store_true", help="list every miss")
    args = parser.parse_args()

    from kb.records import lint
    from kb.records.catalog import Site, string_url

    result = lint.check([args.entries])
    if result.problems:
        print(f"{len(result.problems)} problem(s) in {args.entries}; run kb check", file=sys.stderr)
        return 1
    if args.build:
        from kb.site import build

        if build.build(args.site, args.entries) != 0:
            return 1
    site = Site(result.cells)
    pages = {text: string_url(text) if len(owners) > 1 else site.url(owners[0])
             for text, owners in sorted(site.owners.items())}
    forms = {text: comparable(text) for text in pages}

    from playwright.sync_api import sync_playwright

    rng = random.Random(args.seed)
    chosen = list(pages.items())
    if args.sample and args.sample < len(chosen):
        chosen = sorted(rng.sample(chosen, args.sample))
    times = []
    tally: dict[str, list[int]] = {}  # kind -> [hits, total, of which on another acceptable page]
    misses = []
    started = time.perf_counter()
    with serve(args.site) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(base + "about/")
        for i, (text, want) in enumerate(chosen):
            for kind, query in variants(text, i, rng).items():
                began = time.perf_counter()
                found = search(page, query)
                times.append(time.perf_counter() - began)
                got = found[0].lstrip("/") if found else None
                ok = acceptable(kind, query, text, forms, pages, want)
                row = tally.setdefault(kind, [0, 0, 0])
                row[1] += 1
                if got in ok:
                    row[0] += 1
                    row[2] += got != want
                else:
                    misses.append((kind, query, got, want))
        browser.close()
    seconds = time.perf_counter() - started

    print(f"{len(chosen)} literal strings ({len(pages)} in all) of {len(site.cells)} cells, "
          f"{len(times)} searches in {seconds:.1f} s ({args.site}); median {1000 * statistics.median(times):.0f} ms, "
          f"slowest {1000 * max(times):.0f} ms from typing to results")
    print(f"{'variant':<10} {'right page first':>18} {'rate':>7}   (of them on another page that also fits)")
    for kind in ["exact", "numbers", "cut end", "cut start", "typo", "pasted"]:
        if kind in tally:
            hits, total, other = tally[kind]
            print(f"{kind:<10} {hits:>8} of {total:<7} {100 * hits / total:>6.1f}%   ({other})")
    if misses and args.misses:
        print("\nmisses:")
        for kind, query, got, want in misses:
            print(f"  [{kind}] {query!r}\n      got {got}\n     want {want}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
