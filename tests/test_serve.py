"""`make serve` (`kb serve`): an edited record shows in the open browser page without a manual
reload, the search index follows, a broken record keeps the last good site, and pages and
files are served as the built site has them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from browser import free_port, search
from conftest import FIXTURES, ROOT, builds_site, checked_site


@pytest.fixture
@builds_site
def served(tmp_path):
    """`kb serve` of a copy of the site fixture: (base URL, entries folder, site folder, output file)."""
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURES / "site", entries)
    site = tmp_path / "site"
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        server = subprocess.Popen([str(Path(sys.executable).with_name("kb")), "serve", "--entries", str(entries),
                                   "-d", str(site), "-a", f"127.0.0.1:{port}"], cwd=ROOT, stdout=out,
                                  stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(base, timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        yield base, entries, site, log
    finally:
        server.terminate()
        server.wait(timeout=60)


def _retitle(path: Path, title: str) -> None:
    text = path.read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if line.startswith("title:"))
    path.write_text(text.replace(old, f"title: {title}", 1), encoding="utf-8")


def test_an_edit_shows_in_the_open_page_and_then_in_search(served, page):
    base, entries, site, log = served
    cells = checked_site(entries)
    cell = max(cells.cells, key=lambda c: len(c.entry.related))
    assert page.goto(base + cells.url(cell)).ok
    _retitle(entries / f"{cell.id}.yaml", "Zanzibar quokka title")
    page.wait_for_function("() => document.querySelector('.kb-lede') && "
                           "document.querySelector('.kb-lede').textContent.includes('Zanzibar quokka title')",
                           timeout=120_000)
    assert "rewritten in place" in log.read_text()  # the edit was rebuilt in place, not whole
    # The index is rebuilt after the reload; the search box finds the new title once it is.
    deadline = time.monotonic() + 120
    while "Zanzibar" not in " ".join(page.locator(".kb-search__results").all_inner_texts()):
        assert time.monotonic() < deadline, "the search index did not follow the edit"
        page.reload()
        search(page, "Zanzibar quokka")


def test_a_broken_record_keeps_the_last_good_site_and_says_why(served, page):
    base, entries, site, log = served
    cells = checked_site(entries)
    cell = cells.cells[0]
    path = entries / f"{cell.id}.yaml"
    good = path.read_text(encoding="utf-8")
    path.write_text(good.replace("title:", "title: [unclosed", 1), encoding="utf-8")
    deadline = time.monotonic() + 60
    while "nothing was built" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    assert f"{path.name}:" in log.read_text()  # the problem names the file and line
    assert page.goto(base + cells.url(cell)).ok
    assert page.locator(".kb-lede").count() == 1
    path.write_text(good.replace("title:", "title: Mended", 1), encoding="utf-8")
    page.wait_for_function("() => document.querySelector('.kb-lede').textContent.includes('Mended')",
                           timeout=120_000)


def test_files_and_missing_pages_are_served_as_the_site_has_them(served):
    base, entries, site, log = served
    with urllib.request.urlopen(base + "pagefind/pagefind.js") as answer:
        assert answer.read() == (site / "pagefind" / "pagefind.js").read_bytes()
    with urllib.request.urlopen(base + "api/v1/index.json") as answer:
        assert answer.read() == (site / "api" / "v1" / "index.json").read_bytes()
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(base + "e/no-such-page/")
    with missing.value:
        assert missing.value.code == 404
        assert b"__kb/reload.js" in missing.value.read()
    with urllib.request.urlopen(base + "triage/") as answer:
        html = answer.read().decode("utf-8")
    assert html.replace('<script src="/__kb/reload.js"', "", 1) != html
    assert html.count("__kb/reload.js") == 1
    with pytest.raises(urllib.error.HTTPError) as outside:
        urllib.request.urlopen(base + "../../etc/passwd")
    with outside.value:
        assert outside.value.code in (400, 404)


def test_the_code_watch_leaves_out_the_entries_folder(tmp_path):
    """An edited record is rebuilt in place; only the code, templates or config restart the server."""
    from kb.site.serve import _signature

    (tmp_path / "kb" / "entries").mkdir(parents=True)
    (tmp_path / "kb" / "build.py").write_text("x = 1\n")
    (tmp_path / "kb" / "entries" / "cell.yaml").write_text("title: x\n")
    (tmp_path / "kb" / "__pycache__").mkdir()
    (tmp_path / "kb" / "__pycache__" / "build.cpython-311.pyc").write_bytes(b"\0")
    assert set(_signature([tmp_path / "kb"], tmp_path / "kb" / "entries")) == {str(tmp_path / "kb" / "build.py")}
    assert set(_signature([tmp_path / "kb" / "entries"])) == {str(tmp_path / "kb" / "entries" / "cell.yaml")}


@pytest.fixture
def preview(tmp_path):
    """The preview's request handler on a small site, as kb serve runs it (no build needed)."""
    import http.server
    import threading

    from kb.site import serve as serve_mod

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html><body>home</body></html>", encoding="utf-8")
    (site / "404.html").write_text("<html><body>missing</body></html>", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("PRIVATE KEY", encoding="utf-8")
    (site / "leak.txt").symlink_to(tmp_path / "secret.txt")
    port = free_port()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), serve_mod._handler(site, serve_mod.Changes(), serve_mod.allowed_hosts("127.0.0.1", port)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield port
    server.shutdown()
    server.server_close()


def _ask(port: int, path: str, host: str | None = None) -> tuple[int, bytes]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", f"127.0.0.1:{port}" if host is None else host)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def test_the_preview_answers_only_its_own_host_names(preview):
    """DNS rebinding (attack review L1): a page of another site whose name now points at
    127.0.0.1 sends its own Host, and gets 421, not the preview."""
    assert _ask(preview, "/")[0] == 200
    assert _ask(preview, "/", f"localhost:{preview}")[0] == 200
    assert _ask(preview, "/", f"[::1]:{preview}")[0] == 200
    for host in (f"rebind.attacker.example:{preview}", "127.0.0.1", f"127.0.0.1:{preview + 1}", ""):
        status, body = _ask(preview, "/", host)
        assert status == 421 and b"home" not in body, host


def test_malformed_requests_get_400_and_links_out_of_the_site_404(preview):
    assert _ask(preview, "/index.html%00")[0] == 400
    assert _ask(preview, "/%ff%fe/")[0] in (400, 404)
    status, body = _ask(preview, "/leak.txt")
    assert status == 404 and b"PRIVATE" not in body
    assert _ask(preview, "/")[0] == 200  # the server still answers


@pytest.mark.slow
def test_reload_requests_beyond_the_cap_are_answered_at_once(tmp_path, monkeypatch):
    """Each waiting reload request holds a thread; past MAX_WAITING of them a request is answered
    at once with the current version instead of being held (attack review L1)."""
    import http.server
    import threading

    from kb.site import serve as serve_mod

    monkeypatch.setattr(serve_mod, "MAX_WAITING", 1)
    changes = serve_mod.Changes()
    port = free_port()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), serve_mod._handler(tmp_path, changes, serve_mod.allowed_hosts("127.0.0.1", port)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        first = threading.Thread(target=_ask, args=(port, f"/__kb/reload?since={changes.version}"), daemon=True)
        first.start()
        time.sleep(0.5)
        assert first.is_alive()  # held: nothing changed
        started = time.monotonic()
        status, body = _ask(port, f"/__kb/reload?since={changes.version}")
        assert status == 200 and json.loads(body) == {"version": changes.version}
        assert time.monotonic() - started < 5  # not held for WAIT_SECONDS
        changes.bump()
        first.join(timeout=10)
        assert not first.is_alive()
    finally:
        server.shutdown()
        server.server_close()
