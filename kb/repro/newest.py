"""`kb repro --newest`: whether the package index has a release newer than a scan's newest version.

A scan proves a range only up to the versions it lists; a release after them may carry the code
(the range's first good version) or lose it again. For each scan this reads the index's JSON API
(PyPI's `<host>/pypi/<package>/json`, beside the simple index pip is set to use: `PIP_INDEX_URL`,
else pip's `index-url` setting, else pypi.org), takes the newest final release that has a wheel
for the scan's platform and is not yanked, and compares it with the newest version the scan lists
and with the one it recorded (`newest`). With `--write` that release is recorded as the scan's
`newest`, so a new release shows as a change to the entry (the scheduled workflow opens a pull
request on it); the exit status is 1 when one changed, whether or not it was written. Nothing is downloaded but the
JSON document.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from kb.records.scan import boundary
from kb.repro.scan import platforms

PYPI = "https://pypi.org/simple"
TIMEOUT_S = 60.0


class IndexUnreadable(Exception):
    """The index could not be read, or answered something else than a JSON API document."""


@dataclass(frozen=True)
class Newest:
    """What the index holds for one scan: its newest release with a wheel for the platform."""

    version: str
    uploaded: str  # the day its first file was uploaded, as the index says (YYYY-MM-DD), or ''


def pip_setting(name: str) -> str | None:
    """pip's own value for `name` (index-url, cert): the environment first, as pip reads it, then
    `pip config list` (the download command's section before the global one)."""
    env = os.environ.get(f"PIP_{name.upper().replace('-', '_')}")
    if env:
        return env.split()[0]
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, timeout=TIMEOUT_S)
    values = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip().strip("'\"")
    for section in ("download", "global"):
        if values.get(f"{section}.{name}"):
            return values[f"{section}.{name}"].split()[0]
    return None


def json_url(index: str, package: str) -> str:
    """The JSON API document of `package` beside a simple index ('https://pypi.org/simple' ->
    'https://pypi.org/pypi/<package>/json')."""
    base = index.rstrip("/")
    if not base.endswith("/simple"):
        raise IndexUnreadable(f"pip's index {index!r} does not end in /simple, so its JSON API cannot be found beside it; "
                          "set PIP_INDEX_URL to a PyPI-style index (https://pypi.org/simple)")
    return f"{base.removesuffix('/simple')}/pypi/{package}/json"


def fetch(url: str, cert: str | None, timeout: float = TIMEOUT_S) -> dict:
    """The JSON document at `url`; IndexUnreadable with one line a reader can act on otherwise."""
    context = ssl.create_default_context(cafile=cert) if cert and url.startswith("https:") else None
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as answer:
            raw = answer.read()
    except urllib.error.HTTPError as exc:
        raise IndexUnreadable(f"the package index answered {exc.code} {exc.reason} for {url}") from None
    except (urllib.error.URLError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        raise IndexUnreadable(f"cannot reach the package index at {url} ({why}); check the network and pip's index "
                          "settings (`pip config list`, PIP_INDEX_URL)") from None
    try:
        document = json.loads(raw)
        releases = document["releases"]
    except (ValueError, KeyError, TypeError):
        raise IndexUnreadable(f"{url} is not a JSON API document (no 'releases' mapping)") from None
    if not isinstance(releases, dict):
        raise IndexUnreadable(f"{url} is not a JSON API document (no 'releases' mapping)")
    return document


def newest(document: dict, platform: str) -> Newest | None:
    """The newest final release with a wheel for `platform` (any of the tags pip accepts there, or
    a pure-Python wheel) that is not yanked; None when there is none."""
    accepted = set(platforms(platform)) | {"any"}
    best: tuple[Version, str, str] | None = None
    for text, files in document["releases"].items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue  # pip ignores such releases too
        if version.is_prerelease or version.is_devrelease or not isinstance(files, list):
            continue
        wheels = [f for f in files if isinstance(f, dict) and not f.get("yanked")
                  and _has_platform(str(f.get("filename", "")), accepted)]
        if wheels and (best is None or version > best[0]):
            uploaded = min(str(f.get("upload_time_iso_8601") or f.get("upload_time") or "") for f in wheels)[:10]
            best = (version, text, uploaded)
    return None if best is None else Newest(best[1], best[2])


def _has_platform(filename: str, accepted: set[str]) -> bool:
    if not filename.endswith(".whl"):
        return False
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return False
    return any(tag.platform in accepted for tag in tags)


def newest_scanned(scan) -> str:
    return max(scan.versions, key=Version)


def message(where: str, scan, found: Newest | None) -> tuple[str, bool]:
    """The line printed for one scan, and whether the index's newest release differs from the one
    the scan records as `newest` (a change since the last look, which `--write` records)."""
    scanned = newest_scanned(scan)
    if found is None:
        return (f"{'ok':<8} {where}: the index has no final release of {scan.package} with a {scan.platform} wheel",
                scan.newest is not None)
    changed = scan.newest != found.version
    since = (f" (new since the last look, which recorded {scan.newest})" if changed and scan.newest
             else " (not recorded yet)" if changed else "")
    if Version(found.version) <= Version(scanned):
        return f"{'ok':<8} {where}: {scan.package} {scanned} is the newest release on the index{since}", changed
    when = f", uploaded {found.uploaded}" if found.uploaded else ""
    _, first = boundary(scan)
    # Without a good version yet the new release may be the fix; with one, it can only break it again.
    why = (f"the scan's newest, {scanned}, has no {scan.arch} code: scan {found.version} to see whether it does"
           if first is None else f"the scan proves {scan.arch} code from {first}: scan {found.version} to see that "
           "it still has it")
    return (f"{'newer':<8} {where}: {scan.package} {found.version} is on the index{when}{since}; {why} (add it to "
            "the scan's versions, then `kb repro --write`)"), changed


def main(chosen, write: bool) -> int:
    """One line per scan of the chosen cells; exit 0 when every scan's recorded `newest` is the index's,
    1 when one differs (`write` then records it), 2 when the index could not be read."""
    from kb.repro import write as writer

    index = pip_setting("index-url") or PYPI
    cert = pip_setting("cert")
    documents: dict[str, dict] = {}
    differs = errors = False
    changed = []
    for cell in chosen:
        for i, scan in enumerate(cell.entry.scans):
            where = f"{cell.id} scans[{i}]"
            try:
                if scan.package not in documents:
                    documents[scan.package] = fetch(json_url(index, scan.package), cert)
            except IndexUnreadable as exc:
                print(f"error    {where}: {exc}")
                errors = True
                continue
            found = newest(documents[scan.package], scan.platform)
            line, changed_here = message(where, scan, found)
            print(line)
            differs |= changed_here
            if changed_here:
                changed.append((cell, i, found.version if found else None))
    if write:
        for line in writer.record_newest(changed):
            print(line, file=sys.stderr)
    return 2 if errors else 1 if differs else 0
