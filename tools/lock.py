"""Turn the `==` pin lists into the hashed locks that `pip install --require-hashes` reads.

requirements.in -> requirements.lock (runtime: kb and the site build; the deploy installs only
this) and requirements-test.in -> requirements-test.lock (the test tools on top of it).
kb/repro/tools.in -> kb/repro/tools.lock: the tools `kb repro` installs into its own cache, one
release at a time, so that lock may pin several versions of one name (ptxas 12.4 and 12.8).

For every pin it records the sha256 of every file of that release (each wheel and the sdist), as
listed by the indexes pip is configured with (PyPI when none is set) and found in pip's find-links
folders, so that pip accepts whichever file it picks on any platform and Python. A pin with no
file anywhere is an error; so is any line that is not NAME==VERSION, a name pinned twice, or a
name in both lists. All problems are printed at once and then nothing is written.

    python3 tools/lock.py            # rewrite the locks (a lock is written only if it changed)
    python3 tools/lock.py --check    # offline: do the locks pin exactly what the .in files pin?

Standard library only, so it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = (("requirements.in", "requirements.lock"), ("requirements-test.in", "requirements-test.lock"))
# Never installed with the pairs above (each release goes alone into its own folder): several
# versions of a name may be pinned, and a name may also be a requirement.
TOOLS = ("kb/repro/tools.in", "kb/repro/tools.lock")
PYPI = "https://pypi.org/simple"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==(?P<version>[A-Za-z0-9.+!_-]+)$")
SDIST_EXTS = (".tar.gz", ".zip", ".tar.bz2", ".tgz")
TIMEOUT_S = 60


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    path: str
    line: int

    @property
    def key(self) -> str:
        return canonical(self.name)


def canonical(name: str) -> str:
    """PEP 503 name: case and runs of -_. do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


def same_version(a: str, b: str) -> bool:
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:
        return a.lower() == b.lower()
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a.lower() == b.lower()


def read_pins(path: Path, several: bool = False) -> tuple[list[Pin], list[str]]:
    """Each line is a comment, blank, or NAME==VERSION (no extras, markers, options or ranges);
    with `several`, one name may be pinned at several versions (each once)."""
    pins, errors, seen = [], [], {}
    rel = path.relative_to(ROOT).as_posix()
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        m = PIN.match(text)
        if not m:
            errors.append(f"{rel}:{number}: a pin must be NAME==VERSION (got {text!r})")
            continue
        pin = Pin(m["name"], m["version"], rel, number)
        key = (pin.key, pin.version) if several else pin.key
        if key in seen:
            errors.append(f"{rel}:{number}: {pin.name!r} is already pinned on line {seen[key]}")
            continue
        seen[key] = number
        pins.append(pin)
    return pins, errors


def read_lock(path: Path) -> set[tuple[str, str]]:
    """(canonical name, version) of each requirement in a generated lock (continuations joined)."""
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    out = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, rest = line.partition("==")
            out.add((canonical(name), rest.split()[0] if rest else ""))
    return out


# --- where pip looks -----------------------------------------------------------------------------


def pip_sources() -> tuple[list[str], list[str]]:
    """(index URLs, find-links) from pip's configuration and environment, as `pip config list` shows."""
    try:
        listing = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True, text=True, check=True, timeout=TIMEOUT_S,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listing = ""
    values: dict[str, list[str]] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            option = key.rsplit(".", 1)[-1]
            values.setdefault(option, []).extend(value.strip().strip("'\"").split())
    indexes = values.get("index-url", [])[-1:] or [PYPI]
    return dedupe(indexes + values.get("extra-index-url", [])), dedupe(values.get("find-links", []))


def dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


class Anchors(HTMLParser):
    """(filename, href) of every <a> on a simple-index or find-links page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href, self._text = dict(attrs).get("href"), []

    def handle_data(self, data):
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            name = "".join(self._text).strip()
            path = urllib.parse.urlsplit(self._href).path
            self.links.append((name or urllib.parse.unquote(path.rsplit("/", 1)[-1]), self._href))
            self._href = None


def fetch(url: str) -> tuple[bytes, str] | None:
    """Body and content type of a page or file, or None when it does not exist."""
    if url.startswith("file:"):
        path = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
        if path.is_dir():
            path = path / "index.html"
        return (path.read_bytes(), "text/html") if path.is_file() else None
    request = urllib.request.Request(
        url, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def index_files(index: str, name: str) -> list[tuple[str, str, str | None]]:
    """(filename, url, sha256 or None) of every file the index lists for a project."""
    page_url = f"{index.rstrip('/')}/{canonical(name)}/"
    page = fetch(page_url)
    if page is None:
        return []
    body, content_type = page
    if "json" in content_type:
        return [
            (f["filename"], urllib.parse.urljoin(page_url, f["url"]), f.get("hashes", {}).get("sha256"))
            for f in json.loads(body)["files"]
        ]
    return links_on(body.decode("utf-8", "replace"), page_url)


def links_on(html: str, base: str) -> list[tuple[str, str, str | None]]:
    parser = Anchors()
    parser.feed(html)
    out = []
    for filename, href in parser.links:
        url = urllib.parse.urljoin(base, href)
        fragment = urllib.parse.urlsplit(url).fragment
        sha = dict(urllib.parse.parse_qsl(fragment)).get("sha256") if fragment else None
        out.append((filename, url.split("#", 1)[0], sha))
    return out


def find_links_files(location: str) -> list[tuple[str, str, str | None]]:
    if "://" not in location or location.startswith("file:"):
        folder = Path(urllib.request.url2pathname(urllib.parse.urlsplit(location).path))
        if folder.is_dir():
            return [(p.name, p.as_uri(), None) for p in sorted(folder.iterdir()) if p.is_file()]
    page = fetch(location)
    return links_on(page[0].decode("utf-8", "replace"), location) if page else []


def release_of(filename: str) -> tuple[str, str] | None:
    """(canonical name, version) a wheel or sdist file name carries, or None for anything else."""
    if filename.endswith(".whl"):
        parts = filename[: -len(".whl")].split("-")
        return (canonical(parts[0]), parts[1]) if len(parts) >= 5 else None
    for ext in SDIST_EXTS:
        if filename.endswith(ext):
            name, sep, version = filename[: -len(ext)].rpartition("-")
            return (canonical(name), version) if sep else None
    return None


def sha256_of(url: str) -> str:
    page = fetch(url)
    if page is None:
        raise FileNotFoundError(url)
    return hashlib.sha256(page[0]).hexdigest()


def release_files(pin: Pin, indexes: list[str], local: list[tuple[str, str, str | None]]) -> dict[str, str]:
    """sha256 -> file name of every file of the pinned release on any index or find-links."""
    found: dict[str, str] = {}
    candidates = [f for index in indexes for f in index_files(index, pin.name)] + local
    for filename, url, sha in candidates:
        release = release_of(filename)
        if release and release[0] == pin.key and same_version(release[1], pin.version):
            found.setdefault(sha or sha256_of(url), filename)
    return found


# --- writing -------------------------------------------------------------------------------------


def render(source: str, pins: list[Pin], hashes: dict[str, list[str]]) -> str:
    lines = [
        f"# Generated by `make lock` (tools/lock.py) from {source}: edit the pin there, not here.",
        "# Each --hash is one file of that release (wheels for every platform, and the sdist).",
    ]
    for pin in sorted(pins, key=lambda p: (p.key, version_key(p.version))):
        lines.append(f"{pin.name}=={pin.version} \\")
        digests = hashes[pin]
        lines.extend(f"    --hash=sha256:{h}" + (" \\" if i < len(digests) - 1 else "") for i, h in enumerate(digests))
    return "\n".join(lines) + "\n"


def version_key(version: str):
    """Versions in release order (12.4.131 before 12.10.1), as text when not PEP 440."""
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:
        return (0, version)
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def load_all() -> tuple[list[tuple[str, str, list[Pin]]], list[str]]:
    pairs, errors, owner = [], [], {}
    for source, lock in PAIRS:
        pins, errs = read_pins(ROOT / source)
        errors += errs
        for pin in pins:
            if pin.key in owner:
                errors.append(f"{pin.path}:{pin.line}: {pin.name!r} is already pinned in {owner[pin.key]}")
            owner.setdefault(pin.key, pin.path)
        pairs.append((source, lock, pins))
    if (ROOT / TOOLS[0]).is_file():
        pins, errs = read_pins(ROOT / TOOLS[0], several=True)
        errors += errs
        pairs.append((*TOOLS, pins))
    return pairs, errors


def check(pairs) -> list[str]:
    errors = []
    for source, lock, pins in pairs:
        path = ROOT / lock
        locked = read_lock(path) if path.is_file() else set()
        wanted = {(p.key, p.version) for p in pins}
        for key in sorted({k for k, _ in wanted | locked}):
            has = sorted(v for k, v in locked if k == key)
            pinned = sorted(v for k, v in wanted if k == key)
            if has != pinned:
                errors.append(
                    f"{lock}: {key} is {', '.join(has) or 'absent'} but {source} pins "
                    f"{', '.join(pinned) or 'nothing'}: run `make lock`"
                )
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="only check that the locks match the pins (offline)")
    parser.add_argument("--index-url", action="append", help="index to read hashes from (repeat; default: pip's)")
    args = parser.parse_args(argv)

    pairs, errors = load_all()
    if not errors and args.check:
        errors = check(pairs)
    elif not errors:
        indexes, find_links = pip_sources()
        indexes = args.index_url or indexes
        local = [f for location in find_links for f in find_links_files(location)]
        print(f"reading hashes from {len(indexes)} index(es) and {len(find_links)} find-links", file=sys.stderr)
        outputs = []
        for source, lock, pins in pairs:
            hashes = {}
            for pin in pins:
                files = release_files(pin, indexes, local)
                hashes[pin] = sorted(files)
                if not files:
                    errors.append(f"{pin.path}:{pin.line}: no file of {pin.name}=={pin.version} on any index")
                elif not any(name.endswith(".whl") for name in files.values()):
                    # The Makefile installs with --only-binary :all: (no package's build code runs).
                    errors.append(f"{pin.path}:{pin.line}: {pin.name}=={pin.version} has no wheel, only {sorted(files.values())}")
            outputs.append((ROOT / lock, render(source, pins, hashes)))
        if not errors:
            for path, text in outputs:
                if not path.is_file() or path.read_text(encoding="utf-8") != text:
                    path.write_text(text, encoding="utf-8")
                    print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    for error in errors:
        print(error)
    if errors:
        print(f"{len(errors)} problem(s)", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
