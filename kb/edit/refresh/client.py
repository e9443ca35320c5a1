"""The network client, and the only module of kb that opens a connection (tests/test_layout.py):
GET requests to GitHub's REST API, each with a wall-clock deadline, a size limit and the ETag of
the last answer to the same URL (EtagCache, kept in .cache/kb/); rate limits stop the run (Abort),
redirects are never followed."""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import io
import json
import os
import re
import socket
import stat
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from kb import cache
from kb.edit.refresh.answers import Abort, LinkError
from kb.records.files import write_regular
from kb.records.visible import visible

API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
TIMEOUT = 20.0  # seconds for one request, connection to last byte
MAX_BODY = 4 * 1024 * 1024  # a page of 30 releases carries their notes (up to 125,000 characters each)
MAX_REQUESTS = 1000  # what GitHub Actions' token may make in an hour
CACHE_FILE = cache.FOLDER / "github-etags.json"
MAX_CACHE_BYTES = 64 * 1024 * 1024
CACHE_DAYS = 90
_ETAG = re.compile(r'(W/)?"[\x21\x23-\x7e]{1,200}"')


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # the 3xx comes back as an HTTPError: the token never follows a redirect


class _DeadlineSocket:
    """A connected socket whose every read may take only the time left before a deadline.

    A socket timeout bounds one read: a server that trickles a byte a second keeps each read
    short and the request alive for hours (http.client reads the headers line by line). Before
    each read the timeout is set to what is left of the request's wall-clock budget, so status
    line, headers and body together end by the deadline; past it a read fails at once."""

    def __init__(self, sock, deadline: float):
        self._sock = sock
        self._deadline = deadline

    def _left(self) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        return left

    def recv_into(self, buffer, nbytes: int = 0, flags: int = 0) -> int:
        self._sock.settimeout(self._left())
        return self._sock.recv_into(buffer, nbytes, flags)

    def recv(self, size: int, flags: int = 0) -> bytes:
        self._sock.settimeout(self._left())
        return self._sock.recv(size, flags)

    def makefile(self, mode: str = "r", buffering=None, **_):
        # What http.client reads the answer through: a buffered reader whose raw reads call
        # recv_into above (socket.makefile would read the socket directly).
        if mode != "rb":
            raise ValueError("only binary reads go through the deadline")
        self._sock._io_refs += 1  # as socket.makefile does; SocketIO.close gives it back
        return io.BufferedReader(socket.SocketIO(self, "rb"), buffering or io.DEFAULT_BUFFER_SIZE)

    def __getattr__(self, name):  # sendall, close, _decref_socketios ...: the socket's own
        return getattr(self._sock, name)


def _with_deadline(base: type) -> type:
    class Connection(base):
        deadline: float = float("inf")

        def connect(self):
            super().connect()  # bounded by the socket timeout, itself no longer than the budget
            self.sock = _DeadlineSocket(self.sock, self.deadline)

    Connection.__name__ = f"Deadline{base.__name__}"
    return Connection


_HTTP = _with_deadline(http.client.HTTPConnection)
_HTTPS = _with_deadline(http.client.HTTPSConnection)


def _connection(kind: type, deadline: float):
    def make(host, **kwargs):
        connection = kind(host, **kwargs)
        connection.deadline = deadline
        return connection
    return make


class _DeadlineHTTP(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_connection(_HTTP, req.deadline), req)


class _DeadlineHTTPS(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_connection(_HTTPS, req.deadline), req, context=self._context)


class EtagCache:
    """URL -> (ETag, the answer's fields that are read, the last day it was used), kept in one JSON
    file across runs; an answer no run has used for CACHE_DAYS days is dropped."""

    def __init__(self, path: Path | None, today: dt.date | None = None):
        self.path = path
        self.today = today or dt.date.today()  # one date for the whole run, even one that spans midnight
        self.old: dict[str, dict] = {}
        self.new: dict[str, dict] = {}
        if path is not None and (why := cache.unsafe_folder(path.parent)):
            print(f"kb refresh: not using the ETag cache {path}: {why}", file=sys.stderr)
            path = self.path = None
        if path is None:
            return
        try:
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_CACHE_BYTES:
                loaded = json.loads(path.read_bytes())
                if isinstance(loaded, dict):
                    self.old = {url: entry for url, entry in loaded.items() if isinstance(entry, dict)
                                and isinstance(entry.get("etag"), str) and _ETAG.fullmatch(entry["etag"])
                                and "body" in entry and isinstance(entry.get("used"), str)}
        except (OSError, ValueError, RecursionError):
            self.old = {}  # a missing, torn or foreign file is a cold cache

    def get(self, url: str) -> dict | None:
        return self.new.get(url) or self.old.get(url)

    def put(self, url: str, etag: str, body) -> None:
        self.new[url] = {"etag": etag, "body": body, "used": self.today.isoformat()}

    def save(self) -> None:
        if self.path is None:
            return
        oldest = (self.today - dt.timedelta(days=CACHE_DAYS)).isoformat()
        kept = {url: entry for url, entry in {**self.old, **self.new}.items() if entry["used"] >= oldest}
        if kept == self.old:
            return
        with contextlib.suppress(OSError):  # a cache that cannot be written is only a cold cache
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_regular(self.path, json.dumps(kept, sort_keys=True).encode("utf-8"), 0o644)


def _keep(data, keys: tuple[str, ...]):
    """Only `keys` of an object, or of each object of a list; anything else as it is (and refused
    by the checks that follow)."""
    if not keys:
        return data
    if isinstance(data, dict):
        return {key: data[key] for key in keys if key in data}
    if isinstance(data, list):
        return [_keep(item, keys) if isinstance(item, dict) else item for item in data]
    return data


def _when(epoch: str | None) -> str:
    try:
        moment = dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return "at a time GitHub did not say (wait an hour)"
    minutes = max(0, round((moment - dt.datetime.now(dt.timezone.utc)).total_seconds() / 60))
    return f"at {moment:%Y-%m-%d %H:%M} UTC (in {minutes} min)"


class Client:
    """GET requests to GitHub's REST API: ETags, rate limits, a size limit and a timeout each."""

    def __init__(self, api_url: str = API_URL, token: str | None = None, timeout: float = TIMEOUT,
                 etags: EtagCache | None = None, max_requests: int = MAX_REQUESTS):
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.etags = etags or EtagCache(None)
        self.max_requests = max_requests
        self.sent = 0
        self.not_modified = 0
        self.blocked: str | None = None  # why no further request may be sent
        self.opener = urllib.request.build_opener(_NoRedirect, _DeadlineHTTP, _DeadlineHTTPS)
        self.answered: dict[str, object] = {}  # URL -> its answer (or LinkError) in this run: no URL is sent twice

    def get(self, path: str, query: dict | None = None, keep: tuple[str, ...] = (), absent: bool = False):
        """The parsed JSON answer to GET `path`, cut down to the keys `keep` of the object (of each
        object, for a list), which is all that is stored; with `absent`, None for a 404 (a lookup
        whose answer may be "there is none"); Abort or LinkError otherwise."""
        url = self.api_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        if url not in self.answered:
            try:
                self.answered[url] = self._get(url, path, keep, absent)
            except LinkError as exc:
                self.answered[url] = exc
        if isinstance(self.answered[url], LinkError):
            raise self.answered[url]
        return self.answered[url]

    def _get(self, url: str, path: str, keep: tuple[str, ...], absent: bool):
        if self.blocked:
            raise Abort(self.blocked)
        if self.sent >= self.max_requests:
            raise Abort(f"stopped at {self.max_requests} requests (--max-requests)")
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION,
                   "User-Agent": "kb-refresh"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        stored = self.etags.get(url)
        if stored:
            headers["If-None-Match"] = stored["etag"]
        self.sent += 1
        deadline = time.monotonic() + self.timeout
        request = urllib.request.Request(url, headers=headers)
        request.deadline = deadline  # the whole request, connection to last byte (_DeadlineSocket)
        try:
            with self.opener.open(request, timeout=self.timeout) as answer:
                self._note_limits(answer.headers)
                body = self._body(answer, deadline, path)
                etag = answer.headers.get("ETag")
        except urllib.error.HTTPError as exc:
            try:
                self._note_limits(exc.headers)
                if exc.code == 304 and stored:
                    self.not_modified += 1
                    self.etags.put(url, stored["etag"], stored["body"])
                    return stored["body"]
                if exc.code == 404 and absent:
                    return None
                self._fail(exc, path)
            finally:
                exc.close()
        except http.client.HTTPException as exc:
            raise Abort(f"a broken answer from {self.api_url} to GET {path} ({type(exc).__name__})") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, (TimeoutError, socket.timeout)) or isinstance(exc, (TimeoutError, socket.timeout)):
                raise Abort(f"no answer from {self.api_url} within {self.timeout:g} s (GET {path})") from None
            why = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
            raise Abort(f"cannot reach {self.api_url}: {visible(why, 200)} (no network? see --api-url)") from None
        try:
            data = _keep(json.loads(body), keep)
        except (ValueError, RecursionError):
            raise LinkError(f"GET {path}: the answer is not JSON") from None
        if etag and _ETAG.fullmatch(etag):
            self.etags.put(url, etag, data)
        return data

    def _body(self, answer, deadline: float, path: str) -> bytes:
        kind = answer.headers.get("Content-Type", "")
        if not kind.split(";")[0].strip().lower() == "application/json":
            raise LinkError(f"GET {path}: the answer is {visible(kind, 60)!r}, not JSON")
        length = answer.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > MAX_BODY:
            raise LinkError(f"GET {path}: the answer is over {MAX_BODY} bytes; refused")
        out = io.BytesIO()
        while chunk := answer.read(65536):
            if out.tell() + len(chunk) > MAX_BODY:
                raise LinkError(f"GET {path}: the answer is over {MAX_BODY} bytes; refused")
            if time.monotonic() > deadline:
                raise Abort(f"no complete answer from {self.api_url} within {self.timeout:g} s (GET {path})")
            out.write(chunk)
        return out.getvalue()

    def _note_limits(self, headers) -> None:
        if headers is not None and headers.get("x-ratelimit-remaining", "").strip() == "0":
            self.blocked = ("GitHub's API rate limit is used up (x-ratelimit-remaining: 0); it resets "
                            f"{_when(headers.get('x-ratelimit-reset'))}")

    def _fail(self, exc: urllib.error.HTTPError, path: str):
        code, headers = exc.code, exc.headers
        if code in (403, 429):
            message = ""
            with contextlib.suppress(Exception):
                message = exc.read(4096).decode("utf-8", "replace").lower()
            retry = (headers.get("retry-after") or "").strip()
            if headers.get("x-ratelimit-remaining", "").strip() == "0":
                raise Abort(self.blocked)
            if retry.isdigit() and len(retry) < 9:
                self.blocked = (f"GitHub asks to wait {int(retry)} s before the next request ({code}, rate limit "
                                f"with retry-after); try again {_when(str(int(time.time()) + int(retry)))}")
                raise Abort(self.blocked)
            if code == 429 or "rate limit" in message:
                self.blocked = f"GitHub's secondary rate limit ({code}); wait at least a minute before trying again"
                raise Abort(self.blocked)
            raise Abort(f"GitHub refused GET {path} (403 Forbidden): the token may lack access to it")
        if code == 401:
            raise Abort("GitHub refused the token (401 Bad credentials): check GITHUB_TOKEN, or unset it to "
                        "read public links without one")
        if code in (404, 410):
            raise LinkError(f"not found on GitHub ({code}): the issue, pull request or repository is gone or "
                            "private; fix or remove the link")
        if code in (301, 302, 303, 307, 308):
            raise LinkError(f"GitHub answers {code} (moved): the issue or repository moved; update the link")
        if code == 304:
            raise LinkError(f"GET {path}: 304 Not Modified to a request that sent no ETag")
        if code == 422:
            raise LinkError(f"GitHub cannot process GET {path} (422)")
        raise Abort(f"GitHub answered {code} to GET {path}; try again later")
