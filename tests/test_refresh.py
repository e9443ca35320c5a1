"""`kb refresh`: upstream states read from GitHub's REST API, here a local server on 127.0.0.1
replaying the recorded answers in tests/fixtures/github/ (hand-written in GitHub's documented
shapes). Entries are copied to a temporary folder; nothing touches kb/entries/ or the network."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, checked_site
from kb import cli
from kb.edit.refresh import answers, client, command, reader, records, rewrite
from kb.records import load
from kb.site import freshness
from kb.site.pages import Renderer

GITHUB = FIXTURES / "github"
CANONICAL = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
OLD_CELL = FIXTURES / "freshness" / "fixed-release-old.yaml"
CELL = CANONICAL.stem
ISSUE_URL = "https://github.com/vllm-project/vllm/issues/53748"
PR_URL = "https://github.com/vllm-project/vllm/pull/54013"
SHA = "6dd94dd3bfb1d4b9a8cf1c5a3bbaa0ff5f8e0a11"
ISSUE = "/repos/vllm-project/vllm/issues/53748"
PULL = "/repos/vllm-project/vllm/pulls/54013"
RELEASES = "/repos/vllm-project/vllm/releases?per_page=30"
OLD_ISSUE = "/repos/flashinfer-ai/flashinfer/issues/3566"
TODAY = "2026-12-05"  # the day every run of these tests records (see the fixture below)


@pytest.fixture(autouse=True)
def fixed_run_date(monkeypatch):
    """Every `kb refresh` run here records the same day, so a suite that runs across midnight
    compares what was written with the day it was written (it once failed in CI at 00:05)."""
    monkeypatch.setattr(command, "run_date", lambda: dt.date.fromisoformat(TODAY))


def compare(tag: str) -> str:
    return f"/repos/vllm-project/vllm/compare/{tag}...{SHA}?per_page=1&page=2"


def recorded(name: str):
    return json.loads((GITHUB / name).read_text(encoding="utf-8"))


# --- a GitHub that answers from the recordings ---------------------------------------------------


@dataclass
class Reply:
    body: object = None  # JSON-able, or bytes sent as they are
    status: int = 200
    headers: dict = field(default_factory=dict)
    etag: str | None = None
    length: bool = True  # send Content-Length


class FakeGitHub:
    """Answers GET requests from `routes` (path with query -> Reply); logs every request."""

    def __init__(self):
        self.routes: dict[str, Reply] = {}
        self.log: list[tuple[str, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.log.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                reply = fake.routes.get(self.path) or Reply(
                    {"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}, 404)
                headers = {"Content-Type": "application/json; charset=utf-8", "x-ratelimit-limit": "5000",
                           "x-ratelimit-remaining": "4990", "x-ratelimit-reset": str(int(time.time()) + 3600)}
                if reply.etag:
                    headers["ETag"] = reply.etag
                headers.update(reply.headers)
                if reply.etag and self.headers.get("If-None-Match") == reply.etag:
                    self.send_response(304)
                    for key in ("ETag", "x-ratelimit-remaining", "x-ratelimit-reset"):
                        self.send_header(key, headers[key])
                    self.end_headers()
                    return
                body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode("utf-8")
                self.send_response(reply.status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if reply.length:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading a body it refused

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def paths(self) -> list[str]:
        return [path for path, _ in self.log]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def merged_routes() -> dict[str, Reply]:
    """Issue 53748 still open, PR 54013 merged on 2026-11-20: v0.7.0 came before the merge, v0.7.1
    was cut from a release branch without it, v0.7.2rc1 is a pre-release, v0.7.3 a draft; v0.7.2
    is the first release that contains the merge commit."""
    return {
        ISSUE: Reply(recorded("issues-vllm-53748-open.json"), etag='W/"issue-53748"'),
        PULL: Reply(recorded("pulls-vllm-54013-merged.json"), etag='W/"pull-54013-merged"'),
        RELEASES: Reply(recorded("releases-vllm.json"), etag='W/"releases"'),
        compare("v0.7.1"): Reply(recorded("compare-diverged.json"), etag='W/"cmp-071"'),
        compare("v0.7.2"): Reply(recorded("compare-behind.json"), etag='W/"cmp-072"'),
        OLD_ISSUE: Reply(recorded("issues-flashinfer-3566-closed.json"), etag='W/"issue-3566"'),
    }


def open_routes() -> dict[str, Reply]:
    routes = merged_routes()
    routes[PULL] = Reply(recorded("pulls-vllm-54013-open.json"), etag='W/"pull-54013-open"')
    return routes


@pytest.fixture
def github():
    fake = FakeGitHub()
    yield fake
    fake.close()


@pytest.fixture
def entries(tmp_path, monkeypatch) -> Path:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
                 "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    folder = tmp_path / "entries"
    folder.mkdir()
    shutil.copy(CANONICAL, folder)
    return folder


def run(github: FakeGitHub, entries: Path, *args: str, capsys=None) -> tuple[int, str, str]:
    cache = entries.parent / "etags.json"
    code = cli.main(["refresh", "--api-url", github.url, "--entries", str(entries), "--cache", str(cache), *args])
    out, err = capsys.readouterr() if capsys else ("", "")
    return code, out, err


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def line_of(text: str, needle: str, after: str = "") -> int:
    """1-based number of the first line equal to `needle` after the line equal to `after`."""
    lines = text.splitlines()
    start = lines.index(after) + 1 if after else 0
    return lines.index(needle, start) + 1


# --- nothing differs, something differs ------------------------------------------------------------


def test_nothing_differs_exits_0_and_writes_nothing(github, entries, capsys):
    github.routes = open_routes()
    before = snapshot(entries)
    code, out, err = run(github, entries, capsys=capsys)
    assert (code, out) == (0, "")
    assert "2 link(s) read with 2 request(s)" in err and "0 state(s) differ" in err
    assert snapshot(entries) == before
    assert github.paths() == [ISSUE, PULL]  # an open PR needs no release lookup
    headers = github.log[0][1]
    assert headers["authorization"] == "Bearer test-token"
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["x-github-api-version"] == "2022-11-28"


def test_a_merged_pr_is_printed_with_its_first_release(github, entries, capsys):
    github.routes = merged_routes()
    before = snapshot(entries)
    code, out, err = run(github, entries, capsys=capsys)
    assert code == 1
    assert out == f"{CELL}: upstream[1] {PR_URL}: state open -> merged 2026-11-20 (v0.7.2)\n"
    assert "1 state(s) differ" in err
    assert snapshot(entries) == before  # without --write nothing is written
    # v0.7.0 was published before the merge, v0.7.2rc1 is a pre-release and v0.7.3 a draft: never
    # compared; v0.7.1 (published first after the merge) does not contain it, v0.7.2 does.
    assert github.paths() == [ISSUE, PULL, RELEASES, compare("v0.7.1"), compare("v0.7.2")]


def test_write_changes_only_the_state_and_as_of_lines(github, entries, capsys):
    text = CANONICAL.read_text(encoding="utf-8")
    commented = (text.replace("upstream:\n  - kind: issue\n", "upstream:\n  # read by kb refresh\n  - kind: issue\n")
                 .replace(f"    url: {PR_URL}\n    state: open\n", f"    url: {PR_URL}\n    state: open  # the fix\n"))
    assert commented.count("#") == text.count("#") + 2
    path = entries / CANONICAL.name
    path.write_text(commented, encoding="utf-8")
    os.chmod(path, 0o640)
    github.routes = merged_routes()
    code, out, _ = run(github, entries, "--write", capsys=capsys)
    assert code == 1 and out.startswith(f"{CELL}: upstream[1] {PR_URL}: state open -> merged 2026-11-20")
    after = path.read_text(encoding="utf-8")
    old_lines, new_lines = commented.splitlines(keepends=True), after.splitlines(keepends=True)
    changed = {n: line for n, (old, line) in enumerate(zip(old_lines, new_lines), 1) if old != line}
    issue_as_of = line_of(commented, "    as_of: 2026-09", after=f"    url: {ISSUE_URL}")
    pr_state = line_of(commented, "    state: open  # the fix")
    pr_as_of = line_of(commented, "    as_of: 2026-09", after=f"    url: {PR_URL}")
    assert len(new_lines) == len(old_lines)
    assert changed == {issue_as_of: f"    as_of: {TODAY}\n", pr_state: "    state: merged # the fix\n",
                       pr_as_of: f"    as_of: {TODAY}\n"}
    assert "  # read by kb refresh\n" in new_lines  # comments stay
    assert load.load(path).problems == []
    assert os.stat(path).st_mode & 0o777 == 0o640  # the file keeps its mode
    assert sorted(p.name for p in entries.iterdir()) == [CANONICAL.name]  # no temporary file left


def test_write_without_ruamel_names_the_extra_before_any_request(github, entries, capsys, monkeypatch):
    """An install without the refresh extra: `--write` says what to install and reads nothing."""
    monkeypatch.setitem(sys.modules, "ruamel.yaml", None)  # what an import of a missing module finds
    before = snapshot(entries)
    github.routes = merged_routes()
    code, out, err = run(github, entries, "--write", capsys=capsys)
    assert (code, out, github.log) == (2, "", [])
    assert "--write needs ruamel.yaml" in err and "pip install 'blackwell-serving-kb[refresh]'" in err
    assert snapshot(entries) == before


def test_write_moves_as_of_when_no_state_differs_then_nothing(github, entries, capsys):
    github.routes = open_routes()
    path = entries / CANONICAL.name
    before = path.read_text(encoding="utf-8")
    code, out, err = run(github, entries, "--write", capsys=capsys)
    assert (code, out) == (0, "") and "1 file(s) written" in err
    assert path.read_text(encoding="utf-8") == before.replace("    as_of: 2026-09\n  - kind: pr\n",
                                                              f"    as_of: {TODAY}\n  - kind: pr\n").replace(
        "    state: open\n    as_of: 2026-09\nclaims:", f"    state: open\n    as_of: {TODAY}\nclaims:")
    stamp = path.stat().st_mtime_ns
    code, out, err = run(github, entries, "--write", capsys=capsys)
    assert (code, out) == (0, "") and "0 file(s) written" in err
    assert path.stat().st_mtime_ns == stamp


def test_a_closed_issue_prints_its_date(github, entries, capsys):
    github.routes = open_routes()
    github.routes[ISSUE] = Reply(recorded("issues-flashinfer-3566-closed.json") | {"number": 53748})
    code, out, _ = run(github, entries, capsys=capsys)
    assert code == 1
    assert out == f"{CELL}: upstream[0] {ISSUE_URL}: state open -> closed 2026-07-29\n"


@pytest.mark.parametrize("releases, compares, note", [
    ([], {}, "in no release yet"),
    (["v0.7.0"], {}, "in no release yet"),  # published before the merge: never compared
    (["v0.7.1"], {"v0.7.1": "diverged"}, "in no release yet"),
    (["v0.8.0", "v0.7.5", "v0.7.4", "v0.7.3", "v0.7.2", "v0.7.1"],
     {t: "diverged" for t in ("v0.7.1", "v0.7.2", "v0.7.3", "v0.7.4")}, "in none of the first 4 releases after the merge"),
    (["v0.7.1"], {"v0.7.1": "identical"}, "v0.7.1"),
])
def test_first_release_lookup(github, entries, capsys, releases, compares, note):
    github.routes = merged_routes()
    template = recorded("releases-vllm.json")[1]
    day = iter(range(28, 0, -1))
    github.routes[RELEASES] = Reply([template | {"tag_name": tag, "published_at": f"2026-11-{next(day):02d}T00:00:00Z"}
                                     if tag != "v0.7.0" else template | {"tag_name": tag,
                                                                        "published_at": "2026-11-10T00:00:00Z"}
                                     for tag in releases])
    for tag, status in compares.items():
        github.routes[compare(tag)] = Reply(recorded("compare-behind.json") | {"status": status})
    code, out, _ = run(github, entries, capsys=capsys)
    assert code == 1
    assert out == f"{CELL}: upstream[1] {PR_URL}: state open -> merged 2026-11-20 ({note})\n"
    compared = [p for p in github.paths() if "/compare/" in p]
    assert len(compared) == min(len(compares), reader.MAX_COMPARES)
    assert compare("v0.7.0") not in compared


def test_a_pr_already_merged_in_the_record_needs_no_release_lookup(github, entries, capsys):
    path = entries / CANONICAL.name
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f"    url: {PR_URL}\n    state: open\n", f"    url: {PR_URL}\n    state: merged\n"),
                    encoding="utf-8")
    github.routes = merged_routes()
    code, out, _ = run(github, entries, capsys=capsys)
    assert (code, out) == (0, "")
    assert github.paths() == [ISSUE, PULL]


# --- conditional requests ----------------------------------------------------------------------------


def test_etags_are_sent_and_a_304_reuses_the_stored_answer(github, entries, capsys):
    github.routes = merged_routes()
    first = run(github, entries, capsys=capsys)
    assert all("if-none-match" not in headers for _, headers in github.log)
    cache = json.loads((entries.parent / "etags.json").read_text(encoding="utf-8"))
    assert cache[github.url + PULL]["etag"] == 'W/"pull-54013-merged"'
    assert set(cache[github.url + PULL]["body"]) <= set(answers.KEEP["pulls"])  # only what is read is kept
    github.log.clear()
    second = run(github, entries, capsys=capsys)
    assert second[:2] == first[:2]
    assert [h.get("if-none-match") for _, h in github.log] == [
        'W/"issue-53748"', 'W/"pull-54013-merged"', 'W/"releases"', 'W/"cmp-071"', 'W/"cmp-072"']
    assert "5 request(s) (5 unchanged since the last run, 304)" in second[2]


def test_a_stored_answer_is_checked_like_a_fresh_one(github, entries, capsys):
    github.routes = open_routes()
    run(github, entries, capsys=capsys)
    cache_path = entries.parent / "etags.json"
    cache = json.loads(cache_path.read_text(encoding="utf-8"))
    cache[github.url + ISSUE]["body"]["state"] = "exploded"
    cache_path.write_text(json.dumps(cache), encoding="utf-8")
    before = snapshot(entries)
    code, _, err = run(github, entries, "--write", capsys=capsys)
    assert code == 2 and "issue state 'exploded' is not open or closed" in err
    assert snapshot(entries) == before


def test_a_torn_cache_is_a_cold_cache(github, entries, capsys):
    (entries.parent / "etags.json").write_bytes(b"\x00{not json")
    github.routes = open_routes()
    assert run(github, entries, capsys=capsys)[0] == 0


# --- errors: exit 2, nothing written -------------------------------------------------------------


def _url_line(entries: Path, url: str) -> str:
    path = entries / CANONICAL.name
    return f"{path}:{line_of(path.read_text(encoding='utf-8'), f'    url: {url}')}"


RESET = int(time.time()) + 1800
RESET_TEXT = dt.datetime.fromtimestamp(RESET, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


@pytest.mark.parametrize("reply, expected", [
    (Reply({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}, 401),
     "GitHub refused the token (401 Bad credentials): check GITHUB_TOKEN"),
    (Reply({"message": "API rate limit exceeded for user ID 1."}, 403,
           {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(RESET)}),
     f"GitHub's API rate limit is used up (x-ratelimit-remaining: 0); it resets at {RESET_TEXT}"),
    (Reply({"message": "API rate limit exceeded"}, 429, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(RESET)}),
     f"it resets at {RESET_TEXT}"),
    (Reply({"message": "You have exceeded a secondary rate limit."}, 429, {"retry-after": "60"}),
     "GitHub asks to wait 60 s before the next request (429, rate limit with retry-after)"),
    (Reply({"message": "You have exceeded a secondary rate limit. Please wait a few minutes."}, 403),
     "GitHub's secondary rate limit (403); wait at least a minute"),
    (Reply({"message": "Server Error"}, 502), "GitHub answered 502 to GET /repos/vllm-project/vllm/issues/53748"),
])
def test_global_errors_stop_at_once(github, entries, capsys, reply, expected):
    github.routes = merged_routes()
    github.routes[ISSUE] = reply
    before = snapshot(entries)
    code, out, err = run(github, entries, "--write", capsys=capsys)
    assert code == 2 and out == ""
    assert expected in err and "nothing was written" in err
    assert github.paths() == [ISSUE]  # no further request once GitHub said stop
    assert snapshot(entries) == before


def test_no_request_is_sent_once_the_limit_is_used_up(github, entries, capsys):
    github.routes = merged_routes()
    github.routes[ISSUE].headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(RESET)}
    code, _, err = run(github, entries, "--write", capsys=capsys)
    assert code == 2 and f"resets at {RESET_TEXT}" in err
    assert github.paths() == [ISSUE]


@pytest.mark.parametrize("reply, expected", [
    (Reply({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, 404),
     "not found on GitHub (404)"),
    (Reply({"message": "This issue was deleted"}, 410), "not found on GitHub (410)"),
    (Reply({"message": "Moved Permanently", "url": "https://api.github.com/repositories/1/issues/1"}, 301,
           {"Location": "http://127.0.0.1:9/elsewhere"}), "GitHub answers 301 (moved)"),
])
def test_a_gone_link_names_its_cell_line_and_url(github, entries, capsys, reply, expected):
    github.routes = merged_routes()
    github.routes[PULL] = reply
    before = snapshot(entries)
    code, out, err = run(github, entries, "--write", capsys=capsys)
    assert code == 2 and out == ""
    assert f"kb refresh: {_url_line(entries, PR_URL)}: upstream[1] {PR_URL}: {expected}" in err
    assert github.paths() == [ISSUE, PULL]  # a redirect is not followed
    assert snapshot(entries) == before


def test_no_network_is_one_line(entries, capsys, tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    before = snapshot(entries)
    code = cli.main(["refresh", "--api-url", f"http://127.0.0.1:{port}", "--entries", str(entries), "--no-cache",
                     "--write"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert f"kb refresh: cannot reach http://127.0.0.1:{port}: Connection refused" in err
    assert snapshot(entries) == before


def test_a_slow_server_times_out(github, entries, capsys, monkeypatch):
    github.routes = open_routes()
    gate = threading.Event()
    monkeypatch.setattr(github.server.RequestHandlerClass, "do_GET", lambda self: gate.wait(5))
    try:
        code, _, err = run(github, entries, "--timeout", "0.5", capsys=capsys)
    finally:
        gate.set()
    assert code == 2 and "no answer from" in err and "within 0.5 s" in err


def test_only_http_to_this_machine(entries, capsys):
    code = cli.main(["refresh", "--api-url", "http://api.example.org", "--entries", str(entries), "--no-cache"])
    assert code == 2 and "must be an https:// URL" in capsys.readouterr().err


# --- hostile answers ---------------------------------------------------------------------------------


def _issue(**changes) -> dict:
    return recorded("issues-vllm-53748-open.json") | changes


def _pull(**changes) -> dict:
    return recorded("pulls-vllm-54013-merged.json") | changes


HOSTILE = {
    "number as text": (ISSUE, Reply(_issue(number="53748")), "the answer is about number '53748', not 53748"),
    "another number": (ISSUE, Reply(_issue(number=1)), "not 53748"),
    "state of the wrong type": (ISSUE, Reply(_issue(state=1)), "issue state 1 is not open or closed"),
    "issue state merged": (ISSUE, Reply(_issue(state="merged")), "issue state 'merged' is not open or closed"),
    "pull state not in the vocabulary": (PULL, Reply(_pull(state="exploded")),
                                         "pull request state 'exploded' is not open or closed"),
    "merged disagrees": (PULL, Reply(_pull(merged=False)), "disagrees with merged_at"),
    "merged_at a number": (PULL, Reply(_pull(merged_at=1763657282)), "merged_at is not a timestamp"),
    "merged_at not a date": (PULL, Reply(_pull(merged_at="2026-02-30T00:00:00Z")), "merged_at is not a real date"),
    "merged_at in the future": (PULL, Reply(_pull(merged_at="2099-01-01T00:00:00Z")), "merged_at is out of range"),
    "closed without a date": (ISSUE, Reply(_issue(state="closed")), "closed_at is not a timestamp"),
    "merge sha a path": (PULL, Reply(_pull(merge_commit_sha="../../../../etc/passwd")), "is not a commit SHA"),
    "a list": (ISSUE, Reply([_issue()]), "expected a JSON object, got list"),
    "not JSON": (ISSUE, Reply(b"<html>rate limited</html>", headers={"Content-Type": "text/html"}),
                 "the answer is 'text/html', not JSON"),
    "broken JSON": (ISSUE, Reply(b'{"state": "open"'), "the answer is not JSON"),
    "deep JSON": (ISSUE, Reply(b"[" * 30000 + b"]" * 30000), "the answer is not JSON"),
    "tag with controls": (RELEASES, Reply([recorded("releases-vllm.json")[1] | {"tag_name": "v0.7.2\x1b[2J\r"}]),
                          r"releases[0].tag_name 'v0.7.2\x1b[2J\r' is not a tag name"),
    "tag with dots": (RELEASES, Reply([recorded("releases-vllm.json")[1] | {"tag_name": "../../etc"}]),
                      "is not a tag name"),
    "comparison status unknown": (compare("v0.7.1"), Reply({"status": "contains"}),
                                  "comparison status 'contains' is not ahead, behind, identical or diverged"),
    "huge body": (ISSUE, Reply(_issue(body="x" * 100_000)), "over 65536 bytes; refused"),
    "huge body, no length": (ISSUE, Reply(_issue(body="x" * 100_000), length=False), "over 65536 bytes; refused"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_hostile_answers_are_refused(github, entries, capsys, monkeypatch, case):
    monkeypatch.setattr(client, "MAX_BODY", 65536)
    path, reply, expected = HOSTILE[case]
    github.routes = merged_routes()
    github.routes[path] = reply
    before = snapshot(entries)
    code, out, err = run(github, entries, "--write", capsys=capsys)
    assert code == 2, (out, err)
    assert expected in err
    assert "\x1b" not in out + err and "\r" not in out + err
    assert snapshot(entries) == before


# --- which cells, which files -----------------------------------------------------------------------


def test_only_reads_the_cells_named(github, entries, capsys):
    shutil.copy(OLD_CELL, entries)
    github.routes = merged_routes()
    before = snapshot(entries)
    code, out, _ = run(github, entries, "--only", OLD_CELL.stem, "--write", capsys=capsys)
    assert (code, out) == (0, "")
    assert github.paths() == [OLD_ISSUE]
    after = snapshot(entries)
    assert after[CANONICAL.name] == before[CANONICAL.name]
    assert after[OLD_CELL.name] == before[OLD_CELL.name].replace(b"as_of: 2026-08-01\npublished",
                                                                  f"as_of: {TODAY}\npublished".encode())
    code, _, err = run(github, entries, "--only", "no-such-cell", capsys=capsys)
    assert code == 2 and "--only no-such-cell: no cell of that id" in err


def test_a_url_several_cells_link_is_read_once(github, entries, capsys):
    shutil.copy(FIXTURES / "freshness" / "proposed-long-ago.yaml", entries)
    github.routes = merged_routes()
    code, out, _ = run(github, entries, capsys=capsys)
    assert code == 1
    assert out.splitlines() == [f"{CELL}: upstream[1] {PR_URL}: state open -> merged 2026-11-20 (v0.7.2)",
                                f"proposed-long-ago: upstream[0] {PR_URL}: state open -> merged 2026-11-20 (v0.7.2)"]
    assert github.paths().count(PULL) == 1 and github.paths().count(RELEASES) == 1


def test_a_linked_entry_is_refused_unread(github, entries, capsys, tmp_path):
    outside = tmp_path / "outside.yaml"
    shutil.copy(OLD_CELL, outside)
    (entries / OLD_CELL.name).symlink_to(outside)
    github.routes = merged_routes()
    before = outside.read_bytes()
    code, _, err = run(github, entries, "--write", capsys=capsys)
    assert code == 2 and "is a symbolic link, not a regular file" in err
    assert outside.read_bytes() == before and OLD_ISSUE not in github.paths()


def test_a_layout_ruamel_cannot_keep_is_not_written(github, entries, capsys):
    # upstream's items are not indented while the file's other lists are: ruamel.yaml writes one
    # indentation per file, so the file would change beyond its state and as_of lines
    path = entries / CANONICAL.name
    text = path.read_text(encoding="utf-8")
    start = text.index("upstream:\n")
    end = text.index("claims:\n")
    block = text[start:end].replace("\n  - ", "\n- ").replace("\n    ", "\n  ")
    path.write_text(text[:start] + block + text[end:], encoding="utf-8")
    shutil.copy(OLD_CELL, entries)
    assert load.load(path).problems == []
    github.routes = merged_routes()
    before = snapshot(entries)
    code, _, err = run(github, entries, "--write", capsys=capsys)
    assert code == 2 and "does not come back byte for byte through ruamel.yaml" in err
    assert snapshot(entries) == before  # the other file is not written either


@pytest.mark.slow
def test_every_loadable_entry_round_trips_byte_for_byte():
    """What --write relies on: an unchanged file comes back from ruamel.yaml as it was."""
    paths = sorted((ROOT / "kb" / "entries").glob("*.yaml"))
    paths += [p for folder in ("good", "site", "freshness") for p in sorted((FIXTURES / folder).glob("*.yaml"))]
    checked = 0
    for path in paths:
        if path.is_symlink() or load.load(path).problems:
            continue  # what kb's own reader refuses, refresh never rewrites
        text = path.read_text(encoding="utf-8")
        yaml = rewrite._yaml(text)
        assert rewrite._dump(yaml, yaml.load(text)) == text, path
        checked += 1
    assert checked >= 20


# --- the freshness page --------------------------------------------------------------------------


def test_freshness_shows_when_upstream_states_were_read():
    site = checked_site(FIXTURES / "freshness")
    cells = {cell.id: cell for cell in site.cells}
    assert freshness.links_read(cells["proposed-long-ago"]) == "2026-11-20"
    assert freshness.links_read(cells["fixed-release-old"]) == "2026-08-01"
    pages = {page.url: page for page in Renderer(site).all_pages()}
    for url in (freshness.URL, freshness.WAITING_URL):
        rows = re.findall(r'<li data-cell="([^"]+)" data-days="\d+" data-links-read="([^"]+)">.*?'
                          r"upstream states read ([0-9-]+)\.</li>", pages[url].body)
        assert rows == [("proposed-long-ago", "2026-11-20", "2026-11-20")], url


# --- the token and the budget ------------------------------------------------------------------------


def test_without_a_token_no_authorization_is_sent(github, entries, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    github.routes = open_routes()
    code, _, err = run(github, entries, capsys=capsys)
    assert code == 0 and "no GITHUB_TOKEN" in err
    assert all("authorization" not in headers for _, headers in github.log)


def test_a_token_that_is_no_token_is_refused_before_any_request(github, entries, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_abc\r\nX-Injected: 1")
    github.routes = open_routes()
    code, _, err = run(github, entries, capsys=capsys)
    assert code == 2 and "GITHUB_TOKEN is not a token" in err and github.log == []


def test_the_request_budget_is_a_hard_stop(github, entries, capsys):
    github.routes = merged_routes()
    before = snapshot(entries)
    code, _, err = run(github, entries, "--write", "--max-requests", "3", capsys=capsys)
    assert code == 2 and "stopped at 3 requests (--max-requests)" in err
    assert len(github.log) == 3 and snapshot(entries) == before


def test_a_failed_run_keeps_the_etag_cache(github, entries, capsys):
    github.routes = merged_routes()
    run(github, entries, capsys=capsys)
    cache_path = entries.parent / "etags.json"
    before = json.loads(cache_path.read_text(encoding="utf-8"))
    assert len(before) == 5 and {entry["used"] for entry in before.values()} == {TODAY}
    github.routes[ISSUE] = Reply({"message": "Bad credentials"}, 401)
    assert run(github, entries, capsys=capsys)[0] == 2
    assert json.loads(cache_path.read_text(encoding="utf-8")) == before


def test_an_answer_unused_for_long_leaves_the_cache(github, entries, capsys):
    cache_path = entries.parent / "etags.json"
    old = {"etag": 'W/"old"', "body": {"state": "open"}, "used": "2001-01-01"}
    cache_path.write_text(json.dumps({github.url + "/repos/o/r/issues/1": old}), encoding="utf-8")
    github.routes = open_routes()
    run(github, entries, capsys=capsys)
    assert github.url + "/repos/o/r/issues/1" not in json.loads(cache_path.read_text(encoding="utf-8"))


# --- fixed_in: the first release that contains the fix -------------------------------------------

FIX_CELL = GITHUB / "fix-released-in-0-6-18.yaml"
FIX_URL = "https://github.com/flashinfer-ai/flashinfer/pull/4165"
FIX_SHA = "a4165b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f40"
FIX_PULL = "/repos/flashinfer-ai/flashinfer/pulls/4165"
FIX_RELEASES = "/repos/flashinfer-ai/flashinfer/releases?per_page=30"


def fix_compare(tag: str) -> str:
    return f"/repos/flashinfer-ai/flashinfer/compare/{tag}...{FIX_SHA}?per_page=1&page=2"


def fix_ref(tag: str) -> str:
    return f"/repos/flashinfer-ai/flashinfer/git/ref/tags/{tag}"


def status(value: str) -> Reply:
    """A compare of a flashinfer tag with the fix's merge commit, in GitHub's shape, with this status."""
    name = "compare-flashinfer-v0.6.18-behind.json" if value in ("behind", "identical") else \
        "compare-flashinfer-v0.6.17-ahead.json"
    return Reply(recorded(name) | {"status": value})


def fix_routes() -> dict[str, Reply]:
    """PR 4165 merged on 2026-10-05. Final releases v0.6.16 and v0.6.17 came before it; v0.6.18rc1 is
    a pre-release, v0.6.20 a draft; v0.6.18 is the first final release that contains the merge commit,
    v0.6.18.post1 and v0.6.19 contain it too. v0.6.15 is a tag with no GitHub release."""
    return {
        FIX_PULL: Reply(recorded("pulls-flashinfer-4165-merged.json"), etag='W/"pull-4165"'),
        FIX_RELEASES: Reply(recorded("releases-flashinfer.json"), etag='W/"fi-releases"'),
        fix_compare("v0.6.15"): status("ahead"),
        fix_compare("v0.6.16"): status("ahead"),
        fix_compare("v0.6.17"): Reply(recorded("compare-flashinfer-v0.6.17-ahead.json"), etag='W/"cmp-0617"'),
        fix_compare("v0.6.18"): Reply(recorded("compare-flashinfer-v0.6.18-behind.json"), etag='W/"cmp-0618"'),
        fix_compare("v0.6.18rc1"): status("behind"),
        fix_compare("v0.6.18.post1"): status("behind"),
        fix_compare("v0.6.19"): status("identical"),
        fix_ref("v0.6.15"): Reply(recorded("git-ref-flashinfer-v0.6.15.json")),
    }


@pytest.fixture
def fix_entries(entries) -> Path:
    """An entries folder holding only the cell whose component says PR 4165 first shipped in 0.6.18."""
    (entries / CANONICAL.name).unlink()
    shutil.copy(FIX_CELL, entries)
    return entries


def fixed_in(folder: Path, version: str, name: str = FIX_CELL.name) -> Path:
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert text.count("    fixed_in: 0.6.18\n") == 1
    path.write_text(text.replace("    fixed_in: 0.6.18\n", f"    fixed_in: {version}\n"), encoding="utf-8")
    return path


def fix_line(version: str, problem: str, cell: str = FIX_CELL.stem) -> str:
    return f"{cell}: components[0].fixed_in {version}: {problem}\n"


@pytest.mark.parametrize("version, compared", [
    ("0.6.18", ["v0.6.18", "v0.6.17"]),
    # a pre-release may name the fix too: the final release before it (v0.6.17) does not have it
    ("0.6.18rc1", ["v0.6.18rc1", "v0.6.17"]),
])
def test_the_first_release_with_the_fix_prints_nothing(github, fix_entries, capsys, version, compared):
    fixed_in(fix_entries, version)
    github.routes = fix_routes()
    code, out, err = run(github, fix_entries, capsys=capsys)
    assert (code, out) == (0, ""), err
    assert "1 fixed_in release(s) checked, 0 mismatched" in err
    # the PR is merged in the record: no release lookup for the link; the check reads the listing
    # once and compares the tag and the final release before it
    assert github.paths() == [FIX_PULL, FIX_RELEASES, *map(fix_compare, compared)]


@pytest.mark.parametrize("version, problem, requests", [
    # not the first: the final release before it contains the merge commit too; the walk goes down
    # to the first that does not
    ("0.6.18.post1", f"the first release containing {FIX_URL} is v0.6.18",
     [fix_compare("v0.6.18.post1"), fix_compare("v0.6.18"), fix_compare("v0.6.17")]),
    ("0.6.19", f"the first release containing {FIX_URL} is v0.6.18",
     [fix_compare("v0.6.19"), fix_compare("v0.6.18.post1"), fix_compare("v0.6.18"), fix_compare("v0.6.17")]),
    # a tag that does not contain the commit: the walk goes up (v0.6.18rc1 is a pre-release: skipped)
    ("0.6.17", f"v0.6.17 does not contain {FIX_URL}; the first release containing it is v0.6.18",
     [fix_compare("v0.6.17"), fix_compare("v0.6.18")]),
    # a tag with no GitHub release, found by its git reference, that does not contain it either
    ("0.6.15", f"v0.6.15 does not contain {FIX_URL}; the first release containing it is v0.6.18",
     [fix_ref("v0.6.15"), fix_compare("v0.6.15"), fix_compare("v0.6.16"), fix_compare("v0.6.17"),
      fix_compare("v0.6.18")]),
    # no release and no tag in either spelling (both git references answer 404)
    ("0.6.99", "no such release in flashinfer-ai/flashinfer (no tag v0.6.99 or 0.6.99)",
     [fix_ref("v0.6.99"), fix_ref("0.6.99")]),
    # a draft's tag may not exist yet: it is looked up like any other
    ("0.6.20", "no such release in flashinfer-ai/flashinfer (no tag v0.6.20 or 0.6.20)",
     [fix_ref("v0.6.20"), fix_ref("0.6.20")]),
])
def test_a_fixed_in_that_is_not_the_first_release_is_one_line(github, fix_entries, capsys, version, problem,
                                                                 requests):
    fixed_in(fix_entries, version)
    github.routes = fix_routes()
    before = snapshot(fix_entries)
    code, out, err = run(github, fix_entries, capsys=capsys)
    assert code == 1, err
    assert out == fix_line(version, problem)
    assert "0 state(s) differ, 1 fixed_in release(s) checked, 1 mismatched" in err
    assert github.paths() == [FIX_PULL, FIX_RELEASES, *requests]
    assert len([p for p in requests if "/compare/" in p]) <= reader.MAX_COMPARES
    assert snapshot(fix_entries) == before


def test_a_tag_without_a_release_is_found_in_the_projects_spelling(github, fix_entries, capsys):
    github.routes = fix_routes()
    github.routes[FIX_RELEASES] = Reply([])  # a repository that tags its versions without GitHub releases
    github.routes[fix_ref("0.6.18")] = Reply(recorded("git-ref-flashinfer-v0.6.15.json") | {"ref": "refs/tags/0.6.18"})
    github.routes[fix_compare("0.6.18")] = status("behind")
    code, out, err = run(github, fix_entries, capsys=capsys)
    assert (code, out) == (0, ""), err
    # v0.6.18 is tried first (404), then 0.6.18; no earlier release is known, so none is compared
    assert github.paths() == [FIX_PULL, FIX_RELEASES, fix_ref("v0.6.18"), fix_ref("0.6.18"), fix_compare("0.6.18")]


def package(folder: Path, name: str) -> None:
    path = folder / FIX_CELL.name
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("  - package: flashinfer\n", f"  - package: {name}\n"), encoding="utf-8")


def test_a_package_released_under_its_own_tags_is_checked_against_them(github, fix_entries, capsys):
    """A package not named like the repository it is released from (sgl-kernel in sgl-project/sglang):
    its own tags come first, and only they are walked; the repository's v0.6.18 is not its release."""
    package(fix_entries, "flashinfer-jit-cache")
    fixed_in(fix_entries, "0.6.19")
    template = recorded("releases-flashinfer.json")[1]
    own = [template | {"tag_name": f"flashinfer-jit-cache-v0.6.{n}", "published_at": f"2026-11-0{n - 16}T00:00:00Z"}
           for n in (19, 18, 17)]
    github.routes = fix_routes()
    github.routes[FIX_RELEASES] = Reply(own + recorded("releases-flashinfer.json"))
    github.routes[fix_compare("flashinfer-jit-cache-v0.6.19")] = status("behind")
    github.routes[fix_compare("flashinfer-jit-cache-v0.6.18")] = status("behind")
    github.routes[fix_compare("flashinfer-jit-cache-v0.6.17")] = status("diverged")
    code, out, err = run(github, fix_entries, capsys=capsys)
    assert code == 1, err
    assert out == fix_line("0.6.19", f"the first release containing {FIX_URL} is flashinfer-jit-cache-v0.6.18")
    assert github.paths() == [FIX_PULL, FIX_RELEASES, *map(fix_compare, (
        "flashinfer-jit-cache-v0.6.19", "flashinfer-jit-cache-v0.6.18", "flashinfer-jit-cache-v0.6.17"))]


@pytest.mark.parametrize("version, problem, lookups", [
    ("0.6.18", None, [fix_compare("v0.6.18"), fix_compare("v0.6.17")]),
    ("0.6.99", "no such release in flashinfer-ai/flashinfer (no tag flashinfer-cubin-v0.6.99, "
               "flashinfer-cubin-0.6.99, v0.6.99 or 0.6.99)", [fix_ref("v0.6.99"), fix_ref("0.6.99")]),
])
def test_a_package_without_tags_of_its_own_uses_the_repositorys(github, fix_entries, capsys, version, problem,
                                                                lookups):
    package(fix_entries, "flashinfer-cubin")
    fixed_in(fix_entries, version)
    github.routes = fix_routes()
    code, out, err = run(github, fix_entries, capsys=capsys)
    assert (code, out) == ((1, fix_line(version, problem)) if problem else (0, "")), err
    # at most two git references per series: the package's own spellings, then the repository's
    assert github.paths() == [FIX_PULL, FIX_RELEASES, fix_ref(f"flashinfer-cubin-v{version}"),
                              fix_ref(f"flashinfer-cubin-{version}"), *lookups]


def test_write_never_changes_fixed_in(github, fix_entries, capsys):
    path = fixed_in(fix_entries, "0.6.99")
    before = path.read_text(encoding="utf-8")
    github.routes = fix_routes()
    code, out, err = run(github, fix_entries, "--write", capsys=capsys)
    # the 404 on both git references is the answer "no such tag": one line, not an error
    assert code == 1, err
    assert out == fix_line("0.6.99", "no such release in flashinfer-ai/flashinfer (no tag v0.6.99 or 0.6.99)")
    assert "1 file(s) written (fixed_in is never written: check the release and edit it by hand)" in err
    after = path.read_text(encoding="utf-8")
    assert "    fixed_in: 0.6.99\n" in after
    # only the link's as_of moved: the day its state was read
    assert after == before.replace("    state: merged\n    as_of: 2026-11-25\n",
                                   f"    state: merged\n    as_of: {TODAY}\n")


def test_a_fix_pull_request_not_merged_is_a_difference(github, fix_entries, capsys):
    github.routes = fix_routes()
    github.routes[FIX_PULL] = Reply(recorded("pulls-flashinfer-4165-merged.json") | {
        "state": "open", "merged": False, "merged_at": None, "closed_at": None})
    code, out, _ = run(github, fix_entries, capsys=capsys)
    assert code == 1
    assert out.splitlines() == [f"{FIX_CELL.stem}: upstream[0] {FIX_URL}: state merged -> open",
                                fix_line("0.6.18", f"{FIX_URL} is not merged (open)").rstrip("\n")]
    assert github.paths() == [FIX_PULL]


def _fix_line(folder: Path, key: str = "    fixed_in: ") -> str:
    path = folder / FIX_CELL.name
    text = path.read_text(encoding="utf-8")
    number = next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(key))
    return f"{path}:{number}"


@pytest.mark.parametrize("version, route, reply, expected", [
    ("0.6.99", fix_ref("v0.6.99"), Reply({"message": "Server Error"}, 502),
     "GitHub answered 502 to GET /repos/flashinfer-ai/flashinfer/git/ref/tags/v0.6.99; try again later"),
    ("0.6.18", fix_compare("v0.6.18"), Reply({"message": "Not Found"}, 404),
     "{where}: components[0].fixed_in 0.6.18: GitHub cannot compare v0.6.18 with a4165b0c9d8e in "
     "flashinfer-ai/flashinfer (404)"),
    ("0.6.15", fix_ref("v0.6.15"), Reply(recorded("git-ref-flashinfer-v0.6.15.json") | {"ref": "refs/tags/v0.6.1"}),
     "{where}: components[0].fixed_in 0.6.15: the answer is about ref 'refs/tags/v0.6.1', not refs/tags/v0.6.15"),
    ("0.6.15", fix_ref("v0.6.15"), Reply([recorded("git-ref-flashinfer-v0.6.15.json")]),  # List matching references
     "reference: expected a JSON object, got list"),
    ("0.6.15", fix_ref("v0.6.15"), Reply(recorded("git-ref-flashinfer-v0.6.15.json") | {
        "object": {"type": "tree", "sha": "../../../etc/passwd\x1b[2J"}}),
     r"refs/tags/v0.6.15 does not point at a commit or tag object (got type 'tree', sha '../../../etc/passwd\x1b[2J')"),
    ("0.6.18", fix_compare("v0.6.17"), Reply({"status": "contains"}),
     "comparison status 'contains' is not ahead, behind, identical or diverged"),
    ("0.6.18", FIX_RELEASES, Reply([recorded("releases-flashinfer.json")[1] | {"tag_name": "v0.6.18\x1b]8;;"}]),
     r"releases[0].tag_name 'v0.6.18\x1b]8;;' is not a tag name"),
])
def test_errors_in_the_fixed_in_check_write_nothing(github, fix_entries, capsys, version, route, reply, expected):
    fixed_in(fix_entries, version)
    github.routes = fix_routes()
    github.routes[route] = reply
    before = snapshot(fix_entries)
    code, out, err = run(github, fix_entries, "--write", capsys=capsys)
    assert code == 2 and out == ""
    assert expected.format(where=f"kb refresh: {_fix_line(fix_entries)}") in err
    assert "nothing was written" in err
    assert "\x1b" not in out + err
    assert snapshot(fix_entries) == before


def test_a_fix_pull_request_no_link_names_is_read_for_the_check(github, fix_entries, capsys):
    path = fix_entries / FIX_CELL.name
    text = path.read_text(encoding="utf-8")
    start, end = text.index("upstream:\n"), text.index("published:")
    path.write_text(text[:start] + "upstream: []\n" + text[end:], encoding="utf-8")
    github.routes = fix_routes()
    code, out, err = run(github, fix_entries, capsys=capsys)
    assert (code, out) == (0, "") and "0 link(s) read" in err
    assert github.paths() == [FIX_PULL, FIX_RELEASES, fix_compare("v0.6.18"), fix_compare("v0.6.17")]
    github.log.clear()
    del github.routes[FIX_PULL]  # gone: an error at the component, nothing written
    code, _, err = run(github, fix_entries, "--write", capsys=capsys)
    assert code == 2
    assert f"kb refresh: {_fix_line(fix_entries)}: components[0].fixed_in 0.6.18: not found on GitHub (404)" in err
    assert github.paths() == [FIX_PULL]


# --- fixed_in: the request budget ---------------------------------------------------------------


def test_each_fix_and_each_url_is_read_once(github, fix_entries, capsys):
    """Three cells name the same fix and release, one of them with a second component that gives
    another release; the vLLM cell's newly merged PR shares nothing. No URL is requested twice."""
    for name in ("a.yaml", "b.yaml"):
        shutil.copy(FIX_CELL, fix_entries / name)
    path = fix_entries / "b.yaml"
    text = path.read_text(encoding="utf-8")
    component = text[text.index("  - package: flashinfer\n"):text.index("mechanism:")]
    path.write_text(text.replace(component, component + component.replace("fixed_in: 0.6.18", "fixed_in: 0.6.19")),
                    encoding="utf-8")
    shutil.copy(CANONICAL, fix_entries)
    github.routes = merged_routes() | fix_routes()
    code, out, err = run(github, fix_entries, capsys=capsys)
    assert code == 1, err
    assert out.splitlines() == [
        f"b: components[1].fixed_in 0.6.19: the first release containing {FIX_URL} is v0.6.18",
        f"{CELL}: upstream[1] {PR_URL}: state open -> merged 2026-11-20 (v0.7.2)",
    ]
    paths = github.paths()
    assert len(paths) == len(set(paths))  # the compares of v0.6.18 and v0.6.17 serve both releases
    assert sorted(p for p in paths if "flashinfer" in p) == sorted([
        FIX_PULL, FIX_RELEASES, fix_compare("v0.6.18"), fix_compare("v0.6.17"), fix_compare("v0.6.19"),
        fix_compare("v0.6.18.post1")])
    assert "2 fixed_in release(s) checked, 1 mismatched" in err


def test_an_answer_refused_is_not_asked_again(github, fix_entries, capsys):
    """Two releases of one fix both need the compare of v0.6.17: it fails once, and is reported for each."""
    shutil.copy(FIX_CELL, fix_entries / "a.yaml")
    fixed_in(fix_entries, "0.6.17", "a.yaml")
    github.routes = fix_routes()
    github.routes[fix_compare("v0.6.17")] = Reply({"status": "contains"})
    code, _, err = run(github, fix_entries, capsys=capsys)
    assert code == 2
    assert err.count("comparison status 'contains' is not ahead") == 2
    assert github.paths().count(fix_compare("v0.6.17")) == 1


def test_the_walk_stops_at_max_compares(github, fix_entries, capsys):
    """Every release contains the fix: the walk down stops after MAX_COMPARES compares in all and
    says only that an earlier release has it."""
    template = recorded("releases-flashinfer.json")[1]
    tags = [f"v0.6.{n}" for n in range(30, 10, -1)]
    github.routes = fix_routes()
    github.routes[FIX_RELEASES] = Reply([template | {"tag_name": tag, "published_at": "2026-11-01T00:00:00Z"}
                                         for tag in tags])
    for tag in tags:
        github.routes[fix_compare(tag)] = status("behind")
    fixed_in(fix_entries, "0.6.30")
    code, out, _ = run(github, fix_entries, capsys=capsys)
    assert code == 1
    assert out == fix_line("0.6.30", f"an earlier release, v0.6.27, already contains {FIX_URL}")
    assert github.paths() == [FIX_PULL, FIX_RELEASES] + [fix_compare(f"v0.6.{n}") for n in (30, 29, 28, 27)]
    assert reader.MAX_COMPARES == 4


def test_the_request_budget_stops_the_fixed_in_check(github, fix_entries, capsys):
    github.routes = fix_routes()
    before = snapshot(fix_entries)
    code, out, err = run(github, fix_entries, "--write", "--max-requests", "3", capsys=capsys)
    assert code == 2 and out == ""
    assert "stopped at 3 requests (--max-requests)" in err and "nothing was written" in err
    assert github.paths() == [FIX_PULL, FIX_RELEASES, fix_compare("v0.6.18")]
    assert snapshot(fix_entries) == before


def test_the_fixed_in_check_uses_etags(github, fix_entries, capsys):
    fixed_in(fix_entries, "0.6.15")
    github.routes = fix_routes()
    github.routes[fix_ref("v0.6.15")].etag = 'W/"ref-0615"'
    first = run(github, fix_entries, capsys=capsys)
    cache = json.loads((fix_entries.parent / "etags.json").read_text(encoding="utf-8"))
    assert set(cache[github.url + fix_ref("v0.6.15")]["body"]) == {"ref", "object"}
    github.log.clear()
    second = run(github, fix_entries, capsys=capsys)
    assert second[:2] == first[:2] and first[0] == 1
    sent = {path: headers.get("if-none-match") for path, headers in github.log}
    assert sent[fix_ref("v0.6.15")] == 'W/"ref-0615"' and sent[fix_compare("v0.6.18")] == 'W/"cmp-0618"'


def test_help_says_refresh_never_writes_fixed_in(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["refresh", "--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "fixed_in is never written (a person decides)" in text
    assert "(never fixed_in, versions or prose)" in text


# --- hostile file names and trickling servers (attack review 2026-12-04, L3 and L2) -------------

ESCAPES = "\x1b[2K\x1b[1Gkb refresh: all links current\x1b[8m"


def test_a_file_name_that_is_no_id_is_skipped_reported_and_never_printed_raw(github, entries, capsys):
    github.routes = open_routes()
    hostile = entries / f"{ESCAPES}x.yaml"
    shutil.copy(OLD_CELL, hostile)
    before = snapshot(entries)
    code, out, err = run(github, entries, "--write", capsys=capsys)
    assert "\x1b" not in out + err
    assert code == 2 and out == "" and ISSUE in github.paths()  # the good cell was read, the other was not
    shown = "\\x1b[2K\\x1b[1Gkb refresh: all links current\\x1b[8mx.yaml"
    assert (f"kb refresh: {entries}/{shown}:1: (file name): entry files are named <id>.yaml, the id lowercase "
            "words, digits and hyphens [KB010]; not refreshed (run `kb check`)") in err.splitlines()
    assert OLD_ISSUE not in github.paths() and snapshot(entries) == before


def test_ids_and_paths_in_every_message_go_through_visible(tmp_path):
    path = tmp_path / f"{ESCAPES}.yaml"
    link = records.UpstreamLink("cell\x1b", path, 0, "issue", ISSUE_URL, "open", "2026-12", 3)
    fix = records.Fix("cell\x1b", path, 1, "vllm", PR_URL, "0.7.2", 9)
    for line in (link.where, fix.where, fix.difference("not the first release")):
        assert "\x1b" not in line and "\\x1b" in line


class Trickle:
    """A server on 127.0.0.1 that answers every request one piece at a time, `pause` s apart:
    60 header lines (`what="headers"`), or whole headers and then a body byte by byte."""

    def __init__(self, what: str, pause: float = 0.2):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.what, self.pause = what, pause
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            conn.recv(65536)
            if self.what == "headers":
                pieces = [b"HTTP/1.1 200 OK\r\n"] + [f"X-Slow-{i}: x\r\n".encode() for i in range(60)]
            else:
                pieces = [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"]
                pieces += [b" "] * 200
            for piece in pieces:
                if self.stop.wait(self.pause):
                    return
                try:
                    conn.sendall(piece)
                except OSError:
                    return  # the client gave up

    def close(self):
        self.stop.set()
        self.listener.close()


@pytest.mark.slow
@pytest.mark.parametrize("what", ["headers", "body"])
def test_a_trickling_server_is_cut_off_at_the_deadline(entries, capsys, what):
    server = Trickle(what)
    try:
        started = time.monotonic()
        code = cli.main(["refresh", "--api-url", server.url, "--entries", str(entries), "--no-cache",
                         "--timeout", "1"])
        took = time.monotonic() - started
    finally:
        server.close()
    out, err = capsys.readouterr()
    # One request, cut at 1 s (the trickle would take 12 s for the headers, 40 s for the body);
    # the run stops at the first (an Abort), so the whole run is bounded by the one deadline.
    assert code == 2 and out == ""
    assert re.search(r"no (complete )?answer from http://127\.0\.0\.1:\d+ within 1 s", err), err
    assert took < 3, took
