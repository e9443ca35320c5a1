"""The command, `kb refresh`: read the records, read their links' live state, print what differs
and, with `--write`, write it; the exit status says which (see kb.edit.refresh)."""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import sys
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from kb.edit.refresh.answers import Abort, LinkError, Live
from kb.edit.refresh.client import API_URL, CACHE_FILE, Client, EtagCache
from kb.edit.refresh.reader import Reader
from kb.edit.refresh.records import EntryFile, UpstreamLink, file_shown, read_records
from kb.edit.refresh.rewrite import RewriteError, rewrite
from kb.records.files import write_regular
from kb.records import load
from kb.records.visible import visible

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
    by_url: dict[str, list[UpstreamLink]] = {}
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
            out.errors.append(f"{file_shown(record.path)}: {exc}")
    for record, _ in planned:
        if load.read(record.path) != record.raw:
            out.errors.append(f"{file_shown(record.path)}: changed while it was being refreshed; run again")
    if out.errors:
        return out
    for record, data in planned:
        write_regular(record.path, data, stat.S_IMODE(os.lstat(record.path).st_mode))
        out.written.append(record.path)
    return out


def check_fixes(records: list[EntryFile], reader: Reader, live: dict[str, Live], linked: set[str],
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


def _has_ruamel() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("ruamel.yaml") is not None
    except ModuleNotFoundError:  # no ruamel package at all
        return False


def run_date() -> dt.date:
    """The day a run records (each link's as_of, each cache entry's last use): read once at its start."""
    return dt.date.today()


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
    if args.write and not _has_ruamel():  # before any request: the run would read every link, then fail
        print("kb refresh: --write needs ruamel.yaml, which keeps each file's comments and layout: install the "
              "refresh extra (pip install 'blackwell-serving-kb[refresh]'), or run without --write to see what "
              "differs", file=sys.stderr)
        return 2
    token = os.environ.get("GITHUB_TOKEN", "").strip() or None
    if token is not None and not re.fullmatch(r"[\x21-\x7e]{1,1000}", token):
        print("kb refresh: GITHUB_TOKEN is not a token (printable ASCII without spaces)", file=sys.stderr)
        return 2
    if token is None:
        print("kb refresh: no GITHUB_TOKEN: reading without one (GitHub allows 60 requests an hour)", file=sys.stderr)
    today = run_date()
    etags = EtagCache(None if args.no_cache else Path(args.cache) if args.cache else CACHE_FILE, today)
    client = Client(api_url, token, args.timeout, etags, args.max_requests)
    out = refresh(Path(args.entries), Reader(client), args.only or [], args.write, today)
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
