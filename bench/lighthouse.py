"""Audit benchmark: serve the built site on 127.0.0.1 and run Lighthouse on three pages.

Usage: .venv/bin/python bench/lighthouse.py [--site site] [--lighthouse PATH]
Needs the npm package `lighthouse` (`npm install --prefix bench/.lighthouse lighthouse@12`) and
Debian's chromium. Prints the four category scores per page; targets: performance >= 95,
accessibility, best practices and SEO 100.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from browser import CHROMIUM, serve  # noqa: E402
from kb import lint  # noqa: E402
from kb.pages import Site  # noqa: E402

CATEGORIES = ["performance", "accessibility", "best-practices", "seo"]
TARGETS = {"performance": 95, "accessibility": 100, "best-practices": 100, "seo": 100}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--site", default=str(ROOT / "site"))
    parser.add_argument("--lighthouse", default=str(ROOT / "bench/.lighthouse/node_modules/.bin/lighthouse"))
    args = parser.parse_args()
    site_dir = Path(args.site)
    if not (site_dir / "index.html").exists():
        print(f"{site_dir} has no built site: run `make site` first", file=sys.stderr)
        return 2
    site = Site(lint.check([ROOT / "kb" / "entries"]).cells)
    cell = site.by_id["mla-decode-fp8-kv-triton-shared-memory"]
    pages = {"home": "", "cell": site.url(cell), "triage": "triage/"}
    failed = False
    with serve(site_dir) as base, tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, CHROME_PATH=CHROMIUM)
        print(f"{'page':8} " + " ".join(f"{c:>15}" for c in CATEGORIES))
        for name, url in pages.items():
            report = Path(tmp) / f"{name}.json"
            subprocess.run([args.lighthouse, base + url, "--quiet", "--output=json", f"--output-path={report}",
                            "--chrome-flags=--headless --no-sandbox --disable-gpu --disable-background-networking",
                            "--only-categories=" + ",".join(CATEGORIES)], env=env, check=True, timeout=300)
            data = json.loads(report.read_text())
            scores = {c: round(100 * (data["categories"][c]["score"] or 0)) for c in CATEGORIES}
            failed |= any(scores[c] < TARGETS[c] for c in CATEGORIES)
            print(f"{name:8} " + " ".join(f"{scores[c]:>15}" for c in CATEGORIES))
            for c in CATEGORIES:
                if scores[c] < TARGETS[c]:
                    misses = [a["id"] for a in data["categories"][c]["auditRefs"]
                              if (data["audits"][a["id"]].get("score") is not None and data["audits"][a["id"]]["score"] < 1
                                  and a.get("weight", 0) > 0)]
                    print(f"         {c} below {TARGETS[c]}: {', '.join(misses[:8])}")
    print("targets met" if not failed else "targets missed (see the audits above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
