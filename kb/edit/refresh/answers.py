"""GitHub's answers, not trusted: each is checked for the documented shape, vocabulary, dates and
tag names before anything is read from it (LinkError otherwise), and turned into a link's live
state (Live) or a release (Release); also how a version is spelled as a tag. No network here."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from kb.records.schema import FIRST_DATE
from kb.records.visible import visible

RELEASES_PAGE = 30
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_SHA = re.compile(r"[0-9a-f]{40}")
# A tag name as git allows it, narrowed to printable ASCII without the characters git refuses.
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@/-]{0,99}")
# What is kept (and cached) of each answer: the fields read below.
KEEP = {"issues": ("number", "state", "closed_at"),
        "pulls": ("number", "state", "closed_at", "merged", "merged_at", "merge_commit_sha"),
        "releases": ("tag_name", "draft", "prerelease", "published_at"),
        "compare": ("status",),
        "ref": ("ref", "object")}
class Abort(Exception):
    """An error after which no further request is sent (bad token, rate limit, no network)."""


class LinkError(Exception):
    """An error about one link (gone, moved, an answer refused); the others are still read."""




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
