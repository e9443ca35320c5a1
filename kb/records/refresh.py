"""Refresh: read the live state of each upstream issue and pull request from GitHub's REST API,
print what differs from the records and, with `--write`, record it (`kb refresh`).

What is read, for the `upstream[]` links of kind issue and pr (commit, release and doc links do
not change state and are not read):

- an issue: `GET /repos/{owner}/{repo}/issues/{n}`: `state` (open, closed) and `closed_at`;
- a pull request: `GET /repos/{owner}/{repo}/pulls/{n}`: `state`, `merged_at` (merged when set),
  `closed_at` and `merge_commit_sha`;
- a pull request that is merged upstream but not in the record: the first final release whose
  tag contains the merge commit, to print beside the new state. `GET .../releases` (the newest
  RELEASES_PAGE releases, once per repository and run) gives the candidates: published after the
  merge, no drafts, no pre-releases (GitHub's flag, or a PEP 440 pre- or dev-release tag), oldest
  published first. Each is tried in turn with `GET .../compare/{tag}...{merge_commit_sha}`, whose
  `status` is "behind" or "identical" when the tag contains the commit; at most MAX_COMPARES are
  tried. The compare asks for `per_page=1&page=2`: GitHub sends the list of changed files only with
  page 1, so the answer stays small however far apart the two commits are.

What is checked, for each component with `fixed_by` (a pull request) and `fixed_in` (a version):
that `fixed_in` is the first release containing the fix. The pull request must be merged, and
(a) a tag for the version must exist in the pull request's repository, spelled `v0.6.18` or
`0.6.18` for version 0.6.18 (and first `sgl-kernel-v0.3.1` or `sgl-kernel-0.3.1` for a package not
named like its repository, sgl-kernel in sgl-project/sglang): a release in the same listing (any
non-draft release whose tag reads as that version), else `GET .../git/ref/tags/{tag}` for each
spelling in turn, a 404 meaning no such tag; (b) that tag must contain the merge commit (the
compare above); (c) the final release before it must not: the final releases of the listing in the
same spelling (no drafts, no pre-releases, no local versions), ordered by version, are walked down
from the one before `fixed_in` while they contain the commit, to name the first that does. When
(b) fails the walk goes up instead, to name the first release that contains it. A mismatch is
printed as a difference (`cell: components[0].fixed_in 0.6.18.post1: the first release containing
<PR> is v0.6.18`); `--write` never changes `fixed_in`, a person decides. The walk sees only the
listing: a previous release that is a tag without a GitHub release, or older than the
RELEASES_PAGE newest releases, is not compared, and a history of branches is read as if linear.

Request budget: one request per distinct issue or pull-request URL (a URL that several cells
link is read once), plus, for each pull request newly merged, one releases listing per repository
and at most MAX_COMPARES compares; plus, for each distinct (fixed_by, fixed_in, package), the pull
request when no link reads it, the releases listing (shared, once per repository), at most two
`git/ref` lookups per spelling series tried (only when the listing lacks the version; so two, or
four for a package not named like its repository) and at most MAX_COMPARES compares. No URL is
requested twice in a run; never more than `--max-requests` in all. Nothing is retried.

Every request has a wall-clock deadline (`--timeout`, connection to last byte: each read of the
socket may take only the time left, so a server that trickles its headers or body cannot stretch
it) and carries an ETag from the last answer to the same URL
(`If-None-Match`): a 304 reuses the stored answer, and does not count against GitHub's rate limit.
The ETags live in `.cache/kb/github-etags.json` (JSON, safe to delete) with the few fields read
of each answer, dropped after CACHE_DAYS days unused; a stored answer goes through the same
checks as a fresh one. When `x-ratelimit-remaining` reaches 0 no further request
is sent, and a 403 or 429 that is a rate limit stops the run with the time it resets. A redirect
is never followed (the token would go with it): a moved issue is reported like a missing one.

Answers are not trusted: at most MAX_BODY bytes, JSON of the documented shape, states from the
documented vocabulary, timestamps that are real dates, tag names that are plain refnames. What is
written is chosen here (one of the schema's link states, today's date), never copied.

Exit status: 0 when every state read matches its record and every fixed_in checked is right, 1
when some differ (with `--write`: the states were written, fixed_in never is), 2 on any error, in
which case nothing is written. With `--write`, each link read gets `as_of` = today (the day its
state was read) and its `state` when it differs; nothing else in the file changes, comments and
layout included (a ruamel.yaml round trip, checked line by line), and each file is replaced
atomically.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import http.client
import io
import json
import os
import re
import socket
import stat
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kb import cache
from kb.records import load
from kb.records.visible import visible
from kb.records.schema import FIRST_DATE, ID_PATTERN

API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
TIMEOUT = 20.0  # seconds for one request, connection to last byte
MAX_BODY = 4 * 1024 * 1024  # a page of 30 releases carries their notes (up to 125,000 characters each)
MAX_REQUESTS = 1000  # what GitHub Actions' token may make in an hour
MAX_COMPARES = 4  # releases tried per newly merged pull request
RELEASES_PAGE = 30
CACHE_FILE = cache.FOLDER / "github-etags.json"
MAX_CACHE_BYTES = 64 * 1024 * 1024
CACHE_DAYS = 90

READ_KINDS = ("issue", "pr")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_SHA = re.compile(r"[0-9a-f]{40}")
# A tag name as git allows it, narrowed to printable ASCII without the characters git refuses.
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@/-]{0,99}")
_ETAG = re.compile(r'(W/)?"[\x21\x23-\x7e]{1,200}"')
# What is kept (and cached) of each answer: the fields read below.
KEEP = {"issues": ("number", "state", "closed_at"),
        "pulls": ("number", "state", "closed_at", "merged", "merged_at", "merge_commit_sha"),
        "releases": ("tag_name", "draft", "prerelease", "published_at"),
        "compare": ("status",),
        "ref": ("ref", "object")}
_URL = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/(issues|pull)/([0-9]{1,9})(#.*)?")


class Abort(Exception):
    """An error after which no further request is sent (bad token, rate limit, no network)."""


class LinkError(Exception):
    """An error about one link (gone, moved, an answer refused); the others are still read."""


# --- the records --------------------------------------------------------------------------------


@dataclass
class Link:
    cell: str
    path: Path
    index: int
    kind: str
    url: str
    state: str
    as_of: str
    line: int  # of the link's url

    @property
    def where(self) -> str:
        return f"{_where(self.path)}:{self.line}: upstream[{self.index}] {visible(self.url)}"


@dataclass
class Fix:
    """A component that names its fix pull request and the first release said to contain it."""

    cell: str
    path: Path
    index: int
    package: str
    pull: str  # fixed_by
    version: str  # fixed_in
    line: int  # of fixed_in

    @property
    def key(self) -> tuple[str, str, str]:
        return self.pull, self.version, self.package

    @property
    def where(self) -> str:
        return f"{_where(self.path)}:{self.line}: components[{self.index}].fixed_in {visible(self.version)}"

    def difference(self, problem: str) -> str:
        return f"{visible(self.cell)}: components[{self.index}].fixed_in {visible(self.version)}: {problem}"


@dataclass
class Record:
    id: str
    path: Path
    raw: bytes
    loaded: load.Loaded
    links: list[Link]
    fixes: list[Fix] = field(default_factory=list)


def _where(path: Path) -> str:
    """A path as messages show it: file names are written by whoever wrote the pull request."""
    return visible(str(path))


def read_records(entries: Path, only: list[str]) -> tuple[list[Record], list[str]]:
    """The cells of `entries` (those named by `only`, when given), read by kb's own safe reader,
    with their issue and pull-request links; and the errors met."""
    from pydantic import ValidationError

    from kb.records.lint import entry_files
    from kb.records.schema import Component as ComponentModel
    from kb.records.schema import Link as LinkModel

    errors: list[str] = []
    if not entries.is_dir() or entries.is_symlink():
        return [], [f"{_where(entries)}: not an entries folder"]
    paths = {}
    for path in entry_files([entries]):
        if path.suffix != ".yaml":
            continue
        if not re.fullmatch(ID_PATTERN, path.stem):
            # As `kb check` (KB010): a name that is no id is no cell, and is never printed raw.
            errors.append(f"{_where(path)}:1: (file name): entry files are named <id>.yaml, the id lowercase words, "
                          "digits and hyphens [KB010]; not refreshed (run `kb check`)")
            continue
        paths[path.stem] = path
    for name in only:
        if name not in paths:
            errors.append(f"--only {visible(name)}: no cell of that id in {_where(entries)}")
    chosen = sorted(set(only) & paths.keys()) if only else sorted(paths)
    records = []
    for cell in chosen:
        path = paths[cell]
        raw = load.read(path)
        loaded = raw if isinstance(raw, load.Loaded) else load.parse(path, raw)
        if loaded.problems or not isinstance(loaded.data.get("upstream"), list):
            first = loaded.problems[0].format() if loaded.problems else f"{_where(path)}:1: upstream: not a list"
            errors.append(f"{first} (run `kb check`; a cell is refreshed only once it reads clean)")
            continue
        links = []
        for i, item in enumerate(loaded.data["upstream"]):
            try:
                link = LinkModel.model_validate(item)
            except ValidationError as exc:
                where = loaded.line_of(("upstream", i))
                errors.append(f"{_where(path)}:{where}: upstream[{i}]: not a valid link ({exc.error_count()} problem(s); "
                              "run `kb check`)")
                continue
            if link.kind in READ_KINDS:
                links.append(Link(cell, path, i, link.kind, link.url, link.state, link.as_of,
                                  loaded.line_of(("upstream", i, "url"))))
        fixes = []
        components = loaded.data.get("components")
        for i, item in enumerate(components if isinstance(components, list) else []):
            if not (isinstance(item, dict) and item.get("fixed_by") and item.get("fixed_in")):
                continue
            try:
                component = ComponentModel.model_validate(item)
            except ValidationError as exc:
                where = loaded.line_of(("components", i))
                errors.append(f"{_where(path)}:{where}: components[{i}]: not a valid component ({exc.error_count()} "
                              "problem(s); run `kb check`)")
                continue
            fixes.append(Fix(cell, path, i, component.package, component.fixed_by, component.fixed_in,
                             loaded.line_of(("components", i, "fixed_in"))))
        records.append(Record(cell, path, raw, loaded, links, fixes))
    return records, errors


# --- GitHub's answers -----------------------------------------------------------------------------


def _timestamp(value, what: str) -> dt.datetime:
    """A GitHub timestamp ("2026-11-20T10:31:07Z") between FIRST_DATE and tomorrow."""
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value):
        raise LinkError(f"{what} is not a timestamp (got {_shown(value)})")
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise LinkError(f"{what} is not a real date (got {_shown(value)})") from None
    if moment.date() < FIRST_DATE or moment > dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1):
        raise LinkError(f"{what} is out of range (got {_shown(value)})")
    return moment


def _shown(value) -> str:
    text = repr(value)
    return visible(text if len(text) <= 60 else text[:57] + "...")


def _object(data, what: str) -> dict:
    if not isinstance(data, dict):
        raise LinkError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _number(data: dict, number: int) -> None:
    got = data.get("number")
    if type(got) is not int or got != number:
        raise LinkError(f"the answer is about number {_shown(got)}, not {number}")


@dataclass(frozen=True)
class Live:
    """A link's state as read: `on` is when it was merged or closed."""

    state: str
    on: dt.datetime | None = None
    sha: str | None = None  # merge commit of a merged pull request
    release: str | None = None  # first final release containing it (pull requests newly merged)
    note: str | None = None  # why no release is named

    def describe(self) -> str:
        text = self.state + (f" {self.on.date().isoformat()}" if self.on else "")
        if self.release:
            text += f" ({self.release})"
        elif self.note:
            text += f" ({self.note})"
        return text


def issue_state(data, number: int) -> Live:
    """The state of an issue from `GET /repos/{o}/{r}/issues/{n}`."""
    data = _object(data, "issue")
    _number(data, number)
    state = data.get("state")
    if state not in ("open", "closed"):
        raise LinkError(f"issue state {_shown(state)} is not open or closed")
    if state == "open":
        return Live("open")
    return Live("closed", _timestamp(data.get("closed_at"), "closed_at"))


def pull_state(data, number: int) -> Live:
    """The state of a pull request from `GET /repos/{o}/{r}/pulls/{n}`."""
    data = _object(data, "pull request")
    _number(data, number)
    state = data.get("state")
    if state not in ("open", "closed"):
        raise LinkError(f"pull request state {_shown(state)} is not open or closed")
    merged_at = data.get("merged_at")
    merged = data.get("merged", merged_at is not None)
    if type(merged) is not bool or merged != (merged_at is not None):
        raise LinkError(f"merged {_shown(merged)} disagrees with merged_at {_shown(merged_at)}")
    if merged_at is None:
        if state == "open":
            return Live("open")
        return Live("closed", _timestamp(data.get("closed_at"), "closed_at"))
    if state != "closed":
        raise LinkError("a merged pull request whose state is not closed")
    sha = data.get("merge_commit_sha")
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise LinkError(f"merge_commit_sha {_shown(sha)} is not a commit SHA")
    return Live("merged", _timestamp(merged_at, "merged_at"), sha)


def _final(tag: str) -> bool:
    """False for a tag that reads as a PEP 440 pre- or dev-release (v0.7.1rc1, 0.8.0.dev3)."""
    try:
        version = Version(tag)
    except InvalidVersion:
        return True
    return not (version.is_prerelease or version.is_devrelease)


@dataclass(frozen=True)
class Release:
    """One release of a `GET .../releases` page, as read."""

    tag: str
    draft: bool
    prerelease: bool  # GitHub's flag
    published: dt.datetime | None

    @property
    def final(self) -> bool:
        """Published, neither a draft nor a pre-release (GitHub's flag, or a PEP 440 pre- or dev-release tag)."""
        return not (self.draft or self.prerelease) and self.published is not None and _final(self.tag)



def _tag_name(tag) -> bool:
    """A plain refname that git would accept as a tag."""
    return (isinstance(tag, str) and bool(_TAG.fullmatch(tag)) and ".." not in tag
            and not tag.endswith((".lock", "/", ".")))


def releases(data) -> list[Release]:
    """The releases of a `GET .../releases` page, newest first as GitHub lists them."""
    if not isinstance(data, list) or len(data) > RELEASES_PAGE:
        raise LinkError(f"releases: expected a list of at most {RELEASES_PAGE}")
    found = []
    for i, item in enumerate(data):
        item = _object(item, f"releases[{i}]")
        tag = item.get("tag_name")
        if not _tag_name(tag):
            raise LinkError(f"releases[{i}].tag_name {_shown(tag)} is not a tag name")
        draft, pre = item.get("draft"), item.get("prerelease")
        if type(draft) is not bool or type(pre) is not bool:
            raise LinkError(f"releases[{i}]: draft and prerelease must be true or false")
        published = item.get("published_at")
        if not draft and published is not None:
            published = _timestamp(published, f"releases[{i}].published_at")
        found.append(Release(tag, draft, pre, None if draft else published))
    return found


def series(package: str, repo: str) -> list[str]:
    """The tag prefixes under which `repo` may release `package`, most specific first: its own tags
    (`v0.6.18`) when the package is named like the repository, else first the package's
    (`sgl-kernel-v0.3.1` in sgl-project/sglang), then the repository's (`v2.9.0` for torch in pytorch)."""
    if re.sub(r"[-_.]+", "-", package.lower()) == re.sub(r"[-_.]+", "-", repo.lower()):
        return [""]
    return [f"{package}-", ""]


def spellings(version: str, prefix: str) -> list[str]:
    """The tag names of release `version` under `prefix`: v0.6.18, then 0.6.18; only plain refnames."""
    return [tag for tag in (f"{prefix}v{version}", f"{prefix}{version}") if _tag_name(tag)]


def tag_version(tag: str, prefix: str) -> Version | None:
    """`tag` read as a version of the series under `prefix` (`v0.7.2` and `0.7.2` alike), None
    when it is not one of that series."""
    if not tag.startswith(prefix):
        return None
    rest = tag[len(prefix):]
    rest = rest[1:] if rest.startswith("v") else rest
    if not rest[:1] or rest[0] not in "0123456789":
        return None
    try:
        return Version(rest)
    except InvalidVersion:
        return None


def tag_ref(data, tag: str) -> None:
    """Check `GET .../git/ref/tags/{tag}`: the reference to that very tag, naming a commit or a tag object."""
    data = _object(data, "reference")
    ref, target_ = data.get("ref"), data.get("object")
    if ref != f"refs/tags/{tag}":
        raise LinkError(f"the answer is about ref {_shown(ref)}, not refs/tags/{tag}")
    target_ = _object(target_, "reference object")
    if target_.get("type") not in ("commit", "tag") or not isinstance(target_.get("sha"), str) \
            or not _SHA.fullmatch(target_["sha"]):
        raise LinkError(f"refs/tags/{tag} does not point at a commit or tag object (got type "
                        f"{_shown(target_.get('type'))}, sha {_shown(target_.get('sha'))})")


def contains(data) -> bool:
    """Whether `GET .../compare/{tag}...{sha}` says the tag contains the commit."""
    status = _object(data, "comparison").get("status")
    if status not in ("ahead", "behind", "identical", "diverged"):
        raise LinkError(f"comparison status {_shown(status)} is not ahead, behind, identical or diverged")
    return status in ("behind", "identical")


# --- the client ---------------------------------------------------------------------------------


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

    def __init__(self, path: Path | None):
        self.path = path
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
        self.new[url] = {"etag": etag, "body": body, "used": dt.date.today().isoformat()}

    def save(self) -> None:
        if self.path is None:
            return
        oldest = (dt.date.today() - dt.timedelta(days=CACHE_DAYS)).isoformat()
        kept = {url: entry for url, entry in {**self.old, **self.new}.items() if entry["used"] >= oldest}
        if kept == self.old:
            return
        with contextlib.suppress(OSError):  # a cache that cannot be written is only a cold cache
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _replace(self.path, json.dumps(kept, sort_keys=True).encode("utf-8"), 0o644)


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


# --- reading the links ---------------------------------------------------------------------------


def target(url: str) -> tuple[str, str, str, int]:
    """(owner, repo, "issues" or "pulls", number) of an issue or pull-request URL."""
    m = _URL.fullmatch(url)
    if not m or m[1] in (".", "..") or m[2] in (".", ".."):
        raise LinkError("not a GitHub issue or pull-request URL")
    return m[1], m[2], "issues" if m[3] == "issues" else "pulls", int(m[4])


class Reader:
    """The live state of each link, every URL read once per run."""

    def __init__(self, client: Client):
        self.client = client
        self._releases: dict[tuple[str, str], tuple[list[Release], bool]] = {}

    def read(self, url: str, want_release: bool) -> Live:
        owner, repo, kind, number = target(url)
        data = self.client.get(f"/repos/{owner}/{repo}/{kind}/{number}", keep=KEEP[kind])
        live = issue_state(data, number) if kind == "issues" else pull_state(data, number)
        if live.state == "merged" and want_release:
            release, note = self.first_release(owner, repo, live.sha, live.on)
            live = Live(live.state, live.on, live.sha, release, note)
        return live

    def listing(self, owner: str, repo: str) -> tuple[list[Release], bool]:
        """The newest RELEASES_PAGE releases of a repository, and whether there may be more."""
        key = (owner, repo)
        if key not in self._releases:
            page = self.client.get(f"/repos/{owner}/{repo}/releases", {"per_page": RELEASES_PAGE},
                                   keep=KEEP["releases"])
            self._releases[key] = (releases(page), isinstance(page, list) and len(page) == RELEASES_PAGE)
        return self._releases[key]

    def contains(self, owner: str, repo: str, tag: str, sha: str) -> bool:
        """Whether tag `tag` contains commit `sha`."""
        compare = f"/repos/{owner}/{repo}/compare/{urllib.parse.quote(tag, safe='')}...{sha}"
        data = self.client.get(compare, {"per_page": 1, "page": 2}, keep=KEEP["compare"], absent=True)
        if data is None:
            raise LinkError(f"GitHub cannot compare {tag} with {sha[:12]} in {owner}/{repo} (404): the tag or the "
                            "commit is not there")
        return contains(data)

    def first_release(self, owner: str, repo: str, sha: str, merged: dt.datetime) -> tuple[str | None, str | None]:
        """(tag, None) of the first final release containing `sha`, or (None, why none is named)."""
        listed, full = self.listing(owner, repo)
        found = [(r.published, r.tag) for r in listed if r.final]
        after = sorted((published, tag) for published, tag in found if published >= merged)
        if full and len(after) == len(found):  # the first release after the merge may be on a later page
            return None, f"release not looked up: over {RELEASES_PAGE} releases since the merge"
        for _, tag in after[:MAX_COMPARES]:
            if self.contains(owner, repo, tag, sha):
                return tag, None
        if len(after) > MAX_COMPARES:
            return None, f"in none of the first {MAX_COMPARES} releases after the merge"
        return None, "in no release yet"

    def tag_of(self, owner: str, repo: str, version: str, package: str) -> tuple[str, str] | None:
        """(tag, its series' prefix) of release `version` of `package`: for each series in turn, a
        release of the listing, else the first spelling with a git reference; None when there is none."""
        wanted = Version(version)
        listed, _ = self.listing(owner, repo)
        for prefix in series(package, repo):
            for release in listed:
                if not release.draft and tag_version(release.tag, prefix) == wanted:
                    return release.tag, prefix
            for tag in spellings(version, prefix):
                data = self.client.get(f"/repos/{owner}/{repo}/git/ref/tags/{urllib.parse.quote(tag, safe='')}",
                                       keep=KEEP["ref"], absent=True)
                if data is not None:
                    tag_ref(data, tag)
                    return tag, prefix
        return None

    def check_fix(self, url: str, live: Live, version: str, package: str) -> str | None:
        """None when release `version` of `package` is the first to contain the fix `url` (read as
        `live`), else what is wrong, to print. At most MAX_COMPARES compares."""
        if live.state != "merged":
            return f"{url} is not merged ({live.state})"
        owner, repo, _, _ = target(url)
        found = self.tag_of(owner, repo, version, package)
        if found is None:
            names = [tag for prefix in series(package, repo) for tag in spellings(version, prefix)]
            tried = f" (no tag {', '.join(names[:-1])}{' or ' if names[1:] else ''}{names[-1]})" if names else ""
            return f"no such release in {owner}/{repo}{tried}"
        tag, prefix = found
        wanted = Version(version)
        listed, full = self.listing(owner, repo)
        by_version: dict[Version, str] = {}
        for release in listed:  # newest first: of two tags for one version, the one listed first
            number = tag_version(release.tag, prefix)
            # a local version (0.6.18+cu128) names a build of a release, not a release
            if release.final and number is not None and number.local is None:
                by_version.setdefault(number, release.tag)
        ordered = sorted(by_version.items())
        walk = MAX_COMPARES - 1
        if not self.contains(owner, repo, tag, live.sha):
            later = [t for v, t in ordered if v > wanted]
            for other in later[:walk]:
                if self.contains(owner, repo, other, live.sha):
                    return f"{tag} does not contain {url}; the first release containing it is {other}"
            if len(later) > walk:
                return f"{tag} does not contain {url}, nor do the {walk} releases after it"
            return f"{tag} does not contain {url}, nor does any later release yet"
        earlier = [t for v, t in reversed(ordered) if v < wanted]
        first, stopped = None, False
        for other in earlier[:walk]:
            if not self.contains(owner, repo, other, live.sha):
                stopped = True
                break
            first = other
        if first is None:
            return None
        if stopped or (len(earlier) <= walk and not full):
            return f"the first release containing {url} is {first}"
        return f"an earlier release, {first}, already contains {url}"


# --- writing ------------------------------------------------------------------------------------


class RewriteError(Exception):
    pass


_KEY_LINE = re.compile(r"( *)[A-Za-z_][A-Za-z0-9_-]*:[ \t]*(#.*)?")
_ITEM_LINE = re.compile(r"( *)- ")


def _indents(text: str) -> tuple[int, int]:
    """(sequence, offset) of the file's first block list, as ruamel.yaml.indent() takes them: the
    column of an item's content and of its dash, counted from the key that holds the list."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for key, item in zip(lines, lines[1:]):
        if (k := _KEY_LINE.fullmatch(key)) and (i := _ITEM_LINE.match(item)):
            offset = len(i[1]) - len(k[1])
            if offset >= 0:
                return offset + 2, offset
    return 4, 2


def _yaml(text: str):
    """A round-trip ruamel.yaml set up like `text`: its list indentation, quotes kept, no re-wrapping."""
    from ruamel.yaml import YAML

    sequence, offset = _indents(text)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 20
    yaml.indent(mapping=2, sequence=sequence, offset=offset)
    return yaml


def _dump(yaml, data) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _like(old, new: str, key: str):
    """`new` in the style of `old`: a quoted scalar stays quoted with the same quotes, a plain date
    is written as a plain date."""
    from ruamel.yaml.scalarstring import ScalarString

    if isinstance(old, ScalarString):
        return type(old)(new)
    if key == "as_of":
        return dt.date.fromisoformat(new)
    return new


def rewrite(record: Record, changes: dict[int, dict[str, str]]) -> bytes:
    """The bytes of `record`'s file with, for each upstream[i] in `changes`, its fields set; only
    the lines that hold those values may differ, and the file must read back as the same record
    with those values changed."""
    text = record.raw.decode("utf-8")
    try:
        yaml = _yaml(text)
        data = yaml.load(text)
    except Exception as exc:  # kb's reader read it; a value ruamel.yaml cannot build (2026-02-30) fails here
        raise RewriteError(f"ruamel.yaml cannot read it ({type(exc).__name__}); run `kb check`") from None
    if _dump(yaml, data) != text:
        raise RewriteError("does not come back byte for byte through ruamel.yaml (an unusual layout); "
                           "update its links by hand")
    expected = copy.deepcopy(record.loaded.data)
    allowed = set()
    for i, fields in changes.items():
        for key, value in fields.items():
            data["upstream"][i][key] = _like(data["upstream"][i][key], value, key)
            expected["upstream"][i][key] = value
            allowed.add(record.loaded.line_of(("upstream", i, key)))
    new = _dump(yaml, data)
    old_lines, new_lines = text.splitlines(keepends=True), new.splitlines(keepends=True)
    if len(old_lines) != len(new_lines):
        raise RewriteError("ruamel.yaml would change the number of lines; update its links by hand")
    changed = {n for n, (a, b) in enumerate(zip(old_lines, new_lines), 1) if a != b}
    if not changed <= allowed:
        raise RewriteError(f"ruamel.yaml would change line(s) {sorted(changed - allowed)} too; update its links by hand")
    again = load.parse(record.path, new.encode("utf-8"))
    if again.problems or again.data != expected:
        raise RewriteError("the rewritten file does not read back as the same record with the new values")
    from pydantic import ValidationError

    from kb.records.schema import Link as LinkModel

    for i in changes:
        try:
            LinkModel.model_validate(again.data["upstream"][i])
        except ValidationError as exc:
            raise RewriteError(f"upstream[{i}] would not be a valid link ({exc.error_count()} problem(s))") from None
    return new.encode("utf-8")


def _replace(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to `path` through a temporary file in the same folder and one rename."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# --- the command --------------------------------------------------------------------------------


@dataclass
class Outcome:
    differences: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    read: int = 0
    states: int = 0  # of the differences, link states
    fixes_checked: int = 0  # distinct (fixed_by, fixed_in, package)
    fixes_wrong: int = 0  # components whose fixed_in is not the first release with the fix


def refresh(entries: Path, reader: Reader, only: list[str] = (), write: bool = False,
            today: dt.date | None = None) -> Outcome:
    """Read every issue and pull-request link of the chosen cells; with `write`, record what was
    read, but only when every link was read and every file can be rewritten."""
    today_text = (today or dt.date.today()).isoformat()
    out = Outcome()
    records, out.errors = read_records(entries, list(only))
    by_url: dict[str, list[Link]] = {}
    for record in records:
        for link in record.links:
            by_url.setdefault(link.url.split("#")[0], []).append(link)
    live: dict[str, Live] = {}
    stopped = False
    for url, links in by_url.items():
        try:
            live[url] = reader.read(url, want_release=any(link.state != "merged" for link in links))
        except LinkError as exc:
            more = f" (also linked by {len(links) - 1} more)" if len(links) > 1 else ""
            out.errors.append(f"{links[0].where}: {exc}{more}")
        except Abort as exc:
            out.errors.append(str(exc))
            stopped = True
            break
    out.read = len(live)
    verdicts = {} if stopped else check_fixes(records, reader, live, set(by_url), out)
    changes: dict[str, dict[int, dict[str, str]]] = {}
    for record in records:
        for link in record.links:
            now = live.get(link.url.split("#")[0])
            if now is None:
                continue
            fields = {}
            if now.state != link.state:
                out.differences.append(f"{visible(link.cell)}: upstream[{link.index}] {visible(link.url)}: state {link.state} -> "
                                       f"{now.describe()}")
                out.states += 1
                fields["state"] = now.state
            if link.as_of != today_text:
                fields["as_of"] = today_text
            if fields:
                changes.setdefault(record.id, {})[link.index] = fields
        for fix in record.fixes:  # reported only: a person decides which release to name
            if problem := verdicts.get(fix.key):
                out.differences.append(fix.difference(problem))
                out.fixes_wrong += 1
    if not write or out.errors:
        return out
    planned = []
    for record in records:
        if record.id not in changes:
            continue
        try:
            planned.append((record, rewrite(record, changes[record.id])))
        except RewriteError as exc:
            out.errors.append(f"{_where(record.path)}: {exc}")
    for record, _ in planned:
        if load.read(record.path) != record.raw:
            out.errors.append(f"{_where(record.path)}: changed while it was being refreshed; run again")
    if out.errors:
        return out
    for record, data in planned:
        _replace(record.path, data, stat.S_IMODE(os.lstat(record.path).st_mode))
        out.written.append(record.path)
    return out


def check_fixes(records: list[Record], reader: Reader, live: dict[str, Live], linked: set[str],
                out: Outcome) -> dict[tuple[str, str, str], str | None]:
    """(fixed_by, fixed_in, package) -> what is wrong with that release (None: nothing), each
    checked once; a fix pull request no link reads is read here. Errors go to `out.errors`."""
    verdicts: dict[tuple[str, str, str], str | None] = {}
    failed: set[str] = set()  # pull requests, and pairs, already reported as errors
    for fix in (fix for record in records for fix in record.fixes):
        key = fix.key
        if key in verdicts or key in failed or fix.pull in failed:
            continue
        if fix.pull in linked and fix.pull not in live:
            continue  # its link could not be read: that error is reported already
        try:
            if fix.pull not in live:
                live[fix.pull] = reader.read(fix.pull, want_release=False)
            verdicts[key] = reader.check_fix(fix.pull, live[fix.pull], fix.version, fix.package)
            out.fixes_checked += 1
        except LinkError as exc:
            out.errors.append(f"{fix.where}: {exc}")
            failed.add(key if fix.pull in live else fix.pull)
        except Abort as exc:
            out.errors.append(str(exc))
            break
    return verdicts


def _api_url(value: str) -> str:
    parsed = urllib.parse.urlsplit(value)
    local = parsed.hostname in ("127.0.0.1", "localhost", "::1")
    if parsed.scheme != "https" and not (parsed.scheme == "http" and local):
        raise ValueError("must be an https:// URL (http:// only for a server on this machine)")
    if parsed.query or parsed.fragment or not parsed.hostname:
        raise ValueError("must be a plain base URL such as https://api.github.com")
    return value.rstrip("/")


def main(args) -> int:
    """`kb refresh`: print each state or fixed_in that differs (exit 1), none (exit 0), or errors (exit 2)."""
    given, source = (args.api_url, "--api-url") if args.api_url else (os.environ.get("GITHUB_API_URL"), "GITHUB_API_URL")
    try:
        api_url = _api_url(given or API_URL)
    except ValueError as exc:
        print(f"kb refresh: {source} {visible(given, 100)}: {exc}", file=sys.stderr)
        return 2
    if not args.timeout > 0 or args.max_requests < 1:
        print("kb refresh: --timeout and --max-requests must be positive", file=sys.stderr)
        return 2
    token = os.environ.get("GITHUB_TOKEN", "").strip() or None
    if token is not None and not re.fullmatch(r"[\x21-\x7e]{1,1000}", token):
        print("kb refresh: GITHUB_TOKEN is not a token (printable ASCII without spaces)", file=sys.stderr)
        return 2
    if token is None:
        print("kb refresh: no GITHUB_TOKEN: reading without one (GitHub allows 60 requests an hour)", file=sys.stderr)
    etags = EtagCache(None if args.no_cache else Path(args.cache) if args.cache else CACHE_FILE)
    client = Client(api_url, token, args.timeout, etags, args.max_requests)
    out = refresh(Path(args.entries), Reader(client), args.only or [], args.write)
    etags.save()
    # visible() again where the lines leave: whatever a message quotes, no control character
    # reaches the terminal or the refresh pull request's body.
    for line in out.differences:
        print(visible(line))
    for error in out.errors:
        print(f"kb refresh: {visible(error)}", file=sys.stderr)
    summary = (f"{out.read} link(s) read with {client.sent} request(s) ({client.not_modified} unchanged since the "
               f"last run, 304), {out.states} state(s) differ, {out.fixes_checked} fixed_in release(s) checked, "
               f"{out.fixes_wrong} mismatched")
    if out.errors:
        print(f"kb refresh: {summary}; {len(out.errors)} error(s): nothing was written", file=sys.stderr)
        return 2
    if args.write:
        summary += f"; {len(out.written)} file(s) written"
        if out.fixes_wrong:
            summary += " (fixed_in is never written: check the release and edit it by hand)"
    print(f"kb refresh: {summary}", file=sys.stderr)
    return 1 if out.differences else 0
