"""`kb serve` (what `make serve` runs): the site built into a folder, served on this machine and
rebuilt at every saved edit; the open page reloads itself once its new bytes are on disk.

The first build is `kb build --preview` into the folder (`.cache/serve/site` by default); each
edit of an entry file is a rebuild in place (`kb.site.incremental`: only the files whose content
changed are written), run in this process, and the search index follows right after the pages;
an edit saved while the index runs stops it, and the next rebuild indexes the pages of both.
An edit of the code, the templates, the hand-written pages or mkdocs.yml restarts the server
process (`os.execv`), so the new code builds the site. Pages are served as they are on disk with
one addition: a script (`/__kb/reload.js`) that waits on `/__kb/reload` and reloads the page when
the site changed. A build that fails (a record with a problem) prints its problems and keeps the
last good site.
"""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from kb.site import build

ROOT = Path(__file__).resolve().parents[2]
POLL_SECONDS = 0.2  # how often the watched files are looked at
WAIT_SECONDS = 25  # a reload request is answered at the latest after this long
MAX_WAITING = 32  # reload requests held at once; more are answered at once (a thread each)
RELOAD_JS = """(function () {
  var version = document.currentScript.dataset.version;
  function wait() {
    fetch("/__kb/reload?since=" + version, {cache: "no-store"})
      .then(function (r) { return r.json(); })
      .then(function (d) { if (String(d.version) !== version) { location.reload(); } else { wait(); } })
      .catch(function () { setTimeout(wait, 1000); });
  }
  wait();
})();
"""


class Changes:
    """The version of the served site: a number that grows at every rebuild (and across restarts)."""

    def __init__(self):
        self.version = time.time_ns() // 1_000_000
        self._changed = threading.Condition()

    def bump(self) -> None:
        with self._changed:
            self.version = max(self.version + 1, time.time_ns() // 1_000_000)
            self._changed.notify_all()

    def wait(self, since: int, timeout: float) -> int:
        with self._changed:
            self._changed.wait_for(lambda: self.version != since, timeout=timeout)
            return self.version


def allowed_hosts(host: str, port: int) -> set[str]:
    """The Host headers the preview answers: its loopback names and the address it is bound to,
    with the port (and without it on port 80). Any other name is a page of another site that
    made its own name point here (DNS rebinding) to read the preview."""
    names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    hosts = {f"{name}:{port}" for name in names}
    return hosts | names if port == 80 else hosts


def _handler(site: Path, changes: Changes, hosts: set[str]):
    root = os.path.realpath(site)
    waiting = threading.BoundedSemaphore(MAX_WAITING)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site), **kwargs)

        def log_message(self, format, *args):  # noqa: A002 (the base class's name)
            pass  # one line per request would bury the build's output

        def do_HEAD(self):
            if self._refused():
                return None
            return super().do_HEAD()

        def do_GET(self):
            if self._refused():
                return None
            try:
                return self._get()
            except (ValueError, UnicodeError):  # a NUL byte or a broken escape in the path
                return self._send(400, "text/plain; charset=utf-8", "bad request\n")

        def _refused(self) -> bool:
            """Answer 421 to a Host that is not this preview's, 404 to a path whose real file lies
            outside the site (a link inside it); True when answered."""
            if (self.headers.get("Host") or "").lower() not in hosts:
                self._send(421, "text/plain; charset=utf-8", "kb serve answers only http://127.0.0.1 and localhost\n")
                return True
            try:
                real = os.path.realpath(self.translate_path(self.path))
            except (ValueError, UnicodeError):  # a NUL byte or a broken escape in the path
                self._send(400, "text/plain; charset=utf-8", "bad request\n")
                return True
            if real != root and not real.startswith(root + os.sep):
                self._send(404, "text/plain; charset=utf-8", "not found\n")
                return True
            return False

        def _get(self):
            parts = urlsplit(self.path)
            if parts.path == "/__kb/reload":
                try:
                    since = int(parse_qs(parts.query).get("since", ["0"])[0])
                except ValueError:
                    since = 0
                if not waiting.acquire(blocking=False):
                    return self._send(200, "application/json", json.dumps({"version": changes.version}))
                try:
                    version = changes.wait(since, WAIT_SECONDS)
                finally:
                    waiting.release()
                return self._send(200, "application/json", json.dumps({"version": version}))
            if parts.path == "/__kb/reload.js":
                return self._send(200, "text/javascript", RELOAD_JS)
            page = self._page(unquote(parts.path))
            if page is None:
                return super().do_GET()
            status = 200
            if not page.is_file():
                page, status = site / "404.html", 404
            html = page.read_text(encoding="utf-8")
            tag = f'<script src="/__kb/reload.js" data-version="{changes.version}"></script>'
            at = html.rfind("</body>")
            html = html[:at] + tag + html[at:] if at >= 0 else html + tag
            return self._send(status, "text/html; charset=utf-8", html)

        def _page(self, path: str) -> Path | None:
            """The HTML file a request for `path` is answered with (None: not a page)."""
            if ".." in path.split("/"):
                return None  # the base class refuses it
            target = site / path.lstrip("/")
            if path.endswith("/"):
                return target / "index.html"
            if path.endswith(".html"):
                return target
            if target.is_dir():
                return None  # the base class redirects to the folder with its slash
            return target if not target.exists() and not Path(path).suffix else None

        def _send(self, status: int, kind: str, text: str):
            data = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _signature(paths: list[Path], skip: Path | None = None) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every file under `paths`, but for those under `skip`."""
    skipped = os.path.abspath(skip) if skip is not None else None
    found: dict[str, tuple[int, int]] = {}
    for top in paths:
        if top.is_file():
            st = top.stat()
            found[str(top)] = (st.st_mtime_ns, st.st_size)
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")
                       and os.path.abspath(os.path.join(folder, d)) != skipped]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                found[path] = (st.st_mtime_ns, st.st_size)
    return found


def serve(entries: Path, site: Path, host: str, port: int, config_file: Path = ROOT / "mkdocs.yml") -> int:
    from kb.cache import unsafe_folder

    if Path(os.path.abspath(site)).is_relative_to(ROOT) and (why := unsafe_folder(site)):
        print(f"kb serve: not building into {site}: {why} (a link committed in place of .cache would send the "
              "preview, and what it serves, elsewhere); remove it or give -d another folder", file=sys.stderr)
        return 2
    changes = Changes()
    code = [ROOT / "kb", ROOT / "hooks", ROOT / "templates", ROOT / "site_src", config_file]
    code_seen = _signature(code, entries)
    entries_seen = _signature([entries])
    if build.build(site, entries, config_file, on_pages=changes.bump) != 0 and not (site / "index.html").is_file():
        print("kb serve: the first build failed; fix the problems above and run it again", file=sys.stderr)
        return 1
    server = http.server.ThreadingHTTPServer((host, port), _handler(site, changes, allowed_hosts(host, port)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"kb serve: serving {site} on http://{host}:{port}/ (Ctrl+C stops it); watching {entries} and the code")
    try:
        while True:
            time.sleep(POLL_SECONDS)
            now = _signature(code, entries)
            if now != code_seen:
                print("kb serve: the code, templates or config changed; restarting")
                server.server_close()
                os.execv(sys.executable, [sys.executable, *sys.argv])
            now = _signature([entries])
            if now != entries_seen:
                entries_seen = now
                # An edit saved while the search index runs stops it: the pages of that edit
                # come first, and the next index covers both.
                build.build(site, entries, config_file, on_pages=changes.bump,
                            superseded=lambda seen=now: _signature([entries]) != seen)
    except KeyboardInterrupt:
        return 0
    finally:
        server.shutdown()
