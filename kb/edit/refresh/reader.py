"""Reading the links: the live state of each issue and pull request (every URL read once per
run), the first release containing a newly merged pull request, and the check of a component's
fixed_in against the releases; GitHub's answers come through the client and are checked in
kb.edit.refresh.answers."""

from __future__ import annotations

import datetime as dt
import re
import urllib.parse

from packaging.version import Version

from kb.edit.refresh.answers import (KEEP, RELEASES_PAGE, LinkError, Live, Release, contains, issue_state, pull_state,
                                     releases, series, spellings, tag_ref, tag_version)
from kb.edit.refresh.client import Client

MAX_COMPARES = 4  # releases tried per newly merged pull request
_URL = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/(issues|pull)/([0-9]{1,9})(#.*)?")


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
