"""Where the site lives and where its records are edited: the public site URL and the GitHub
repository, checked before they go into every page.

A site URL is what `kb build --site-url` is given (canonical links, sitemap, robots.txt, feed);
the repository is given with `--repo-url` or read from the checkout's `origin` remote, and gives
each cell its "Edit this entry" and "Report a problem" links.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

_NAME = r"[A-Za-z0-9_.-]{1,100}"
_GITHUB = re.compile(rf"https://github\.com/({_NAME})/({_NAME}?)(?:\.git)?/?")
_SSH = re.compile(rf"(?:ssh://)?git@github\.com[:/]({_NAME})/({_NAME}?)(?:\.git)?/?")
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]"}


def site_url(value: str) -> str:
    """`value` as a base URL ending in '/'; https, or http for this machine only."""
    parts = urlsplit(value)
    local = parts.scheme == "http" and parts.netloc.split(":")[0] in _LOCAL_HOSTS
    if parts.scheme != "https" and not local:
        raise ValueError(f"{value!r} is not an https:// URL (http:// only for 127.0.0.1 or localhost)")
    if not parts.netloc or parts.query or parts.fragment or any(c.isspace() or ord(c) < 32 for c in value) \
            or any(c in value for c in "\"'<>\\`"):
        raise ValueError(f"{value!r} is not a plain site URL such as https://example.org/sub/path/")
    return value if value.endswith("/") else value + "/"


def repo_url(value: str) -> str:
    """`value` as https://github.com/<owner>/<repo>, from an https or ssh remote URL."""
    found = _GITHUB.fullmatch(value) or _SSH.fullmatch(value)
    if not found or found.group(2) in ("", ".", ".."):
        raise ValueError(f"{value!r} is not a GitHub repository such as https://github.com/owner/repo")
    return f"https://github.com/{found.group(1)}/{found.group(2)}"


def origin_repo(root: Path) -> str | None:
    """The GitHub repository the checkout at `root` was cloned from, or None (no git, no origin,
    not on GitHub)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "config", "--get", "remote.origin.url"],
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        return repo_url(out.stdout.strip()) if out.returncode == 0 else None
    except ValueError:
        return None
