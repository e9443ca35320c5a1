"""`make serve` (mkdocs serve with the kb hook): an edited record shows in the open browser page
without a manual reload, and the search index follows, built after the page is back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from browser import free_port, search, serve_config
from conftest import FIXTURES, ROOT, checked_site


def test_an_edit_shows_in_the_open_page_and_then_in_search(tmp_path, page):
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURES / "site", entries)
    config = serve_config(entries, tmp_path)
    site = checked_site(entries)
    cell = max(site.cells, key=lambda c: len(c.entry.related))
    port = free_port()
    server = subprocess.Popen([str(Path(sys.executable).with_name("mkdocs")), "serve", "-f", str(config),
                               "-a", f"127.0.0.1:{port}"], cwd=ROOT, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 300
        while True:
            try:
                if page.goto(base + site.url(cell), timeout=5000).ok and page.locator(".kb-lede").count():
                    break
            except Exception:
                pass
            assert time.monotonic() < deadline, "mkdocs serve did not come up"
            time.sleep(0.5)
        path = entries / f"{cell.id}.yaml"
        text = path.read_text(encoding="utf-8")
        old = next(line for line in text.splitlines() if line.startswith("title:"))
        path.write_text(text.replace(old, "title: Zanzibar quokka title", 1), encoding="utf-8")
        page.wait_for_function("() => document.querySelector('.kb-lede') && "
                               "document.querySelector('.kb-lede').textContent.includes('Zanzibar quokka title')",
                               timeout=300_000)
        # The index is rebuilt after the reload; the search box finds the new title once it is.
        deadline = time.monotonic() + 120
        while "Zanzibar" not in " ".join(page.locator(".kb-search__results").all_inner_texts()):
            assert time.monotonic() < deadline, "the search index did not follow the edit"
            page.reload()
            search(page, "Zanzibar quokka")
    finally:
        server.terminate()
        server.wait(timeout=60)
