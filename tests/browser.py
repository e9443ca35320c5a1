"""Shared test helpers: build a site, serve it on 127.0.0.1, drive Debian's Chromium."""

from __future__ import annotations

import contextlib
import functools
import http.server
import socket
import threading
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory: Path, prefix: str = "", not_found: Path | None = None):
    """Serve `directory` on a free port; yields the base URL. With `prefix`, the site is
    served under that sub-path (as on GitHub Pages) and everything else is a 404; with
    `not_found`, a 404 answers with that page, as GitHub Pages answers with 404.html."""
    root = directory

    class Handler(_Quiet):
        def translate_path(self, path):
            if prefix:
                if not path.startswith(prefix):
                    return str(root / "__outside_prefix__")
                path = "/" + path[len(prefix):]
            return super().translate_path(path)

        def send_error(self, code, message=None, explain=None):
            if code != 404 or not_found is None:
                return super().send_error(code, message, explain)
            body = not_found.read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}{prefix or '/'}"
    finally:
        server.shutdown()
        server.server_close()


def search(page, query: str, timeout: float = 10000) -> list[str]:
    """Type `query` into the header search box; the result links, best first."""
    box = page.locator("#kb-search-input")
    box.fill(query)
    page.wait_for_function(
        "q => document.getElementById('kb-search').getAttribute('data-done-query') === q",
        arg=query.strip(), timeout=timeout)
    return [a.get_attribute("href") for a in page.query_selector_all(".kb-search__link")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
