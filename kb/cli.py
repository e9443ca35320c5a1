"""The `kb` command: one subcommand per job, each a thin call into its stage."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from kb import ENTRIES, OWN_ENTRIES, checkout_of, default_entries
from kb.records import facets

DISTRIBUTION = "blackwell-serving-kb"  # pyproject.toml's [project] name
SITE_URL_ENV = "KB_SITE_URL"  # the published site's address, for the page URLs of match and doctor
DOCTOR_EXIT = ("Exit status: 0 when the report is printed, whatever the verdicts; 1 when --fail-on trips (a "
               "failure applies, or with --fail-on predicted one is predicted); 2 when the input cannot be used (an "
               "entries folder that is missing or has problems, a facts file that does not fit, a --python that "
               "cannot be judged, a --target it does not know), with a message on standard error and nothing on "
               "standard output.")
NO_SITE_URL = (f"page paths are relative to the site: no published site URL is configured (pass --site-url URL "
               f"or set {SITE_URL_ENV})")


def _version() -> str:
    """The tool's version, and the index it reads by default: its cell count and the newest day
    anything in it was checked (each record's `updated` and every dated claim's `as_of`)."""
    import importlib.metadata

    from kb.records import lint
    from kb.site import freshness

    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = "(not installed)"
    entries = default_entries()
    head = f"{DISTRIBUTION} {version}"
    result = lint.cached_check([entries])
    if result.problems or not result.cells:
        why = f"{len(result.problems)} problem(s), run `kb check`" if result.problems else "no entries"
        return f"{head}\nindex: {entries}: {why}"
    days = [(freshness.day(d.as_of), d.as_of) for cell in result.cells for d in freshness.dated(cell)]
    days += [(freshness.day(c.entry.updated), c.entry.updated) for c in result.cells]
    newest = max(days)[0].isoformat()
    return f"{head}\nindex: {len(result.cells)} entries, checked up to {newest}, from {os.path.abspath(entries)}"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


def _explain(code: str) -> int:
    from kb.records.rules import RULES

    rule = RULES.get(code.strip().upper())
    if rule is None:
        print(f"kb check: no rule {code!r}; the codes are {min(RULES)} to {max(RULES)} (see the rules page)",
              file=sys.stderr)
        return 2
    print(f"{rule.code} {rule.name}" + (" (retired: no check raises it now)" if rule.retired else ""))
    print(f"  {rule.statement}")
    for label, example in (("passes", rule.good), ("fails", rule.bad)):
        print(f"{label}:")
        for line in example.rstrip("\n").splitlines():
            print(f"    {line}")
    return 0


def _check(args) -> int:
    if args.explain is not None:
        return _explain(args.explain)
    from kb.records import lint

    paths = [Path(p) for p in args.paths] or [default_entries()]
    named = lint.entry_files(paths)
    # A file named alone is checked among the other entries of its folder (related ids, shared
    # signatures), but only its own problems are reported: what a pre-commit hook needs.
    folders = sorted({p.parent for p in named if p.is_file()} | {p for p in paths if p.is_dir()})
    missing = [p for p in named if not p.exists()]
    result = lint.cached_check(folders + missing if folders else named)
    # abspath, not resolve(): an entry may be a symbolic link (even a loop), refused unread.
    wanted = {os.path.abspath(p) for p in named}
    # The checks of the site as a whole (URL lengths; for the repository's own entries, the
    # redirects and the build's source files): a problem in an entry is reported with its file's,
    # one in the redirects file or the sources always.
    entries = {os.path.abspath(c.path) for c in result.cells}
    site = _site_problems(result.cells, folders)
    problems = [p for p in result.problems + site if os.path.abspath(p.path) in wanted]
    problems += [p for p in site if os.path.abspath(p.path) not in entries]
    problems = list(dict.fromkeys(problems))  # a linked lock is KB076 both as a source and as a lock
    for problem in problems:
        print(problem.format())
    if problems:
        files = len({p.path for p in problems})
        print(f"{len(problems)} problem(s) in {files} of {len(named)} file(s)", file=sys.stderr)
        return 1
    print(f"ok: {len(named)} entr{'y' if len(named) == 1 else 'ies'} checked, no problems")
    return 0


def _site_problems(cells, folders: list[Path]) -> list:
    """The URL checks of the checked cells (kb.site.urls); when the repository's own entries folder
    is among `folders`, every whole-site check of its build as mkdocs.yml configures it
    (kb.site.check: its redirects, URL and id locks, and the files it reads)."""
    from kb.site import check, urls

    kb_folder = Path(__file__).resolve().parent
    if not any(folder.resolve() == kb_folder / "entries" for folder in folders):
        # Another checkout's entries (a developer's kb run there): that checkout's locks and pages, so
        # an entry its id lock lacks is KB078 there as it is in its own CI.
        root = next((r for r in map(checkout_of, folders) if r is not None), None)
        if root is None:
            return urls.site_problems(cells, None, None)
        return urls.site_problems(cells, root / "kb" / "urls.lock", root / "kb" / "redirects.yaml",
                                  site_src=root / "site_src", id_lock=root / "kb" / "ids.lock")
    from kb.records import ids

    return check.problems(cells, kb_folder.parent / "mkdocs.yml", urls.OWN_LOCK, urls.OWN_REDIRECTS, ids.OWN_LOCK)


def _schema(args) -> int:
    from kb.records import schema

    text = json.dumps(schema.json_schema(), indent=2, sort_keys=True) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _build(args) -> int:
    from kb.records.visible import visible
    from kb.site import build
    from kb.site.paths import OutsideSite

    try:
        return build.build(Path(args.site_dir), Path(args.entries), site_url=args.site_url, repo_url=args.repo_url,
                           in_place=not args.full)
    except KeyboardInterrupt:
        # The staging folders are gone (kb.site.build._staging); a whole build had not touched the site,
        # a rebuild in place replaces each file by one rename.
        print(f"\nkb build: interrupted; {visible(args.site_dir)} was left as it was (a rebuild in place "
              "already under way leaves each file whole, old or new; the next build finishes it)", file=sys.stderr)
        return 130
    except OutsideSite as exc:
        print(f"kb build: refusing to write {visible(str(exc))}; nothing outside the site was written", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"kb build: failed: {visible(build.os_error(exc))}", file=sys.stderr)
        return 1


def _serve(args) -> int:
    from kb.site import serve

    host, port = args.address
    return serve.serve(Path(args.entries), Path(args.site_dir), host, port)


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT, e.g. 127.0.0.1:8000")
    return host, int(port)


def _site_url(value: str) -> str:
    from kb.site.origin import site_url

    try:
        return site_url(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _repo_url(value: str) -> str:
    from kb.site.origin import repo_url

    try:
        return repo_url(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _families(families, base: str, why: str, gap: bool = True) -> None:
    """The family answer as `kb match` prints it, each family marked with `why` it is given, after
    an empty line (but the first when not `gap`: nothing is printed above it)."""
    from kb.records.visible import visible

    for i, family in enumerate(families):
        if gap or i:
            print()
        print(f"Family answer ({why}): {family.title} [{family.family}]")
        print(f"   {visible(base + family.url)}")
        print(f"   How to tell: {family.how_to_tell}")
        print(f"   Check: {family.check}")
        print(f"   Fix: {family.fix}")
        for number in family.lines[:5]:
            print(f"   line {number}: {visible(family.texts[number], 200)}")


def _match(args) -> int:
    from kb.records.verdict import MATCH_TITLES
    from kb.records.visible import visible
    from kb.triage import stdin
    from kb.triage.familyanswer import ALSO
    from kb.triage.run import triage

    try:
        if args.file == "-":
            try:  # kept, within a bound, for each pass to read again (kb.triage.stdin)
                log = stdin.kept(sys.stdin.buffer)
            except stdin.TooLarge as exc:
                print(f"kb match: {exc}", file=sys.stderr)
                return 2
        else:
            log = open(args.file, "rb")
        with log:
            found = triage(Path(args.entries), log, request=not args.json)
    except OSError as exc:
        print(f"kb match: cannot read {visible(args.file)}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if found.problems:
        for problem in found.problems:
            print(problem.format(), file=sys.stderr)
        print("the entries have problems; run `kb check`", file=sys.stderr)
        return 2
    hits, citable = found.hits, found.citable
    base = args.site_url.rstrip("/") + "/" if args.site_url else ""
    if hits and not base and not args.json:
        print(f"kb match: {NO_SITE_URL}", file=sys.stderr)
    if args.json:
        # No log line goes into the JSON: record text (which KB031 keeps free of controls and
        # bidi characters), and in `why` a GPU name and versions as kb.triage.logfacts reads them
        # (ASCII letters, digits, spaces, `.+-`); json.dumps escapes C0 controls in any case.
        out = [hit.as_json() | {"url": base + hit.url, "citable_id": citable.get(hit.entry)} for hit in hits]
        # The family answer says so (`answer: family`, no entry): alone when no entry matched, else
        # first, each entry after it marked as one that also prints its generic lines.
        families = [family.as_json() | {"url": base + family.url} for family in found.families]
        out = families + [hit | {"answer": ALSO} for hit in out] if found.families_first else out + families
        print(json.dumps(out, indent=2, ensure_ascii=False))
    elif not hits:
        if found.scope:
            print(f"note: {found.scope}")
        print("no known failure matches this log")
        _families(found.families, base, "no entry matches; the log shows a line this family of failures prints")
        if found.families:
            print()
        print("To ask for a new entry, open a \"New failure\" issue with the text below; read and edit it first. It "
              "holds only the log's error-looking lines (prefixes removed, varying parts as placeholders), the GPU "
              "and the versions it names, nothing else of the log.\n")
        print(f"Title: {visible(found.request.title)}\n")
        for line in found.request.text.splitlines():
            print(visible(line))
    else:
        if found.scope:
            print(f"note: {found.scope}\n")
        if found.families_first:
            _families(found.families, base, "every known failure that matches rests only on a generic line, which "
                      "other GPUs and other causes print too", gap=False)
            print("\nAlso prints this line (known failures whose only match is that generic line; nothing in the log "
                  "decides for them):")
        for rank, hit in enumerate(hits, 1):
            # The log is anyone's text: its lines are shown with controls escaped (an ESC or a CR
            # in a log line would otherwise act on the terminal) and cut to 200 characters.
            cited = f"{citable[hit.entry]} " if hit.entry in citable else ""
            print(f"{rank}. {cited}{visible(hit.title)} [{hit.entry}] {hit.verdict}, score {hit.score}")
            print(f"   {visible(base + hit.url)}")
            print(f"   {MATCH_TITLES[hit.verdict]}: {visible(hit.why, 400)}")
            for number in hit.lines[:5]:
                print(f"   line {number}: {visible(hit.texts[number], 200)}")
            if len(hit.lines) > 5:
                print(f"   ... and {len(hit.lines) - 5} more line(s)")
        if found.pip_hint:
            print(f"\nhint: {found.pip_hint}.")
    return 0 if hits else 1


def _doctor(args) -> int:
    from kb.doctor import diagnose

    # the name the user typed, for the `--python` lines the report suggests
    command = "bwkb" if Path(sys.argv[0]).name == "bwkb" else "kb"
    return diagnose.main(Path(args.entries), facts_path=args.facts, as_json=args.json, facts_schema=args.facts_schema,
                         timeout=args.timeout, site_url=args.site_url, python=args.python, command=command,
                         # predictions (kb.doctor.predict)
                         target=args.target, site_packages=args.site_packages, fail_on=args.fail_on)


def _lock(args) -> int:
    from kb.site import urls
    from kb.site.generate import GenerateError, generate

    from kb.records import ids

    from kb.site import sources

    # Neither lock is read or written through a link (KB076): the link is reported, nothing written.
    refused = [p for p in (sources.unreadable(Path(args.lock)), sources.unreadable(Path(args.ids))) if p]
    for problem in refused:
        print(problem.format(), file=sys.stderr)
    if refused:
        print("kb lock: nothing written; restore the lock file itself (git checkout origin/main -- <file>)",
              file=sys.stderr)
        return 1
    try:
        generated = generate(ENTRIES, id_lock=Path(args.ids))
    except GenerateError as exc:
        print(exc, file=sys.stderr)
        return 1
    lock = Path(args.lock)
    locked = urls.read_lock(lock) if lock.exists() else []
    added = urls.write_lock(lock, locked, generated.published)
    print(f"{lock}: {len(added)} URL(s) added, {len(set(locked) | set(generated.published))} recorded")
    id_lock = Path(args.ids)
    try:
        new_ids = ids.write(id_lock, generated.renderer.site.cells)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    shown = ", ".join(new_ids[:5]) + (f" and {len(new_ids) - 5} more" if len(new_ids) > 5 else "")
    print(f"{id_lock}: {len(new_ids)} id(s) added" + (f" ({shown})" if new_ids else ""))
    return 0


def _new(args) -> int:
    from kb.edit import new

    return new.run(args)


def _refresh(args) -> int:
    from kb.edit.refresh import command

    return command.main(args)


# --- kb repro (kb.repro.run): re-run the entries' reproductions ---------------------------------

def _repro(args) -> int:
    from kb.repro import install, run

    # A stop by SIGTERM (a CI job cancelled, `timeout`) unwinds as Ctrl-C does, so the install under
    # way removes its partial folder (kb.repro.install) and pip, its child, is killed.
    def _stop(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        return run.main(args)
    except KeyboardInterrupt:
        print(f"\nkb repro: interrupted; nothing half-installed was left in {install.cache_root()} (a release "
              "is renamed into place only once complete)", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _add_repro(sub) -> None:
    p = sub.add_parser(
        "repro", help="re-run the entries' reproductions and compare what they print with the record "
        "(exit 0 same, 1 differs, 2 errors)",
        description="Install each reproduction's pinned tool release into a per-user cache ($XDG_CACHE_HOME or "
        "~/.cache, blackwell-serving-kb/repro/), run it on its input in a temporary folder and compare what it "
        "prints with the recorded output and the entry's signatures (normalised as kb match does). One line per "
        "reproduction, ok or differs with the difference below it.")
    p.add_argument("ids", nargs="*", metavar="ID", help="entries to reproduce (default: every entry that has one)")
    p.add_argument("--write", action="store_true", help="record the runs that differ in their entry files "
                   "(only the reproductions block changes; each file is replaced whole)")
    p.add_argument("--wheelhouse", metavar="DIR", help="install the tools from the wheels in DIR alone, offline "
                   "(no package index, none of pip's settings; the hashes of kb/repro/tools.lock still checked)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds each run may take (default: 60)")
    p.add_argument("--newest", action="store_true", help="run nothing: ask the package index (its JSON API, beside "
                   "pip's index) whether it has a release newer than each scan's newest version (exit 1 when one "
                   "has); with --write, record the index's newest release as the scan's `newest`")
    p.add_argument("--entries", default=str(default_entries()), help="entries folder (default: kb/entries/ here, else the installed knowledge base's)")
    p.set_defaults(run=_repro)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kb", description="Blackwell serving-failure knowledge base")
    top.add_argument("--version", action=_VersionAction,
                     help="print the version and the default index's entry count and date, and exit")
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="validate and lint entries (default: kb/entries/)")
    p.add_argument("paths", nargs="*", help="entry files or folders")
    p.add_argument("--explain", metavar="CODE", help="print what rule CODE (e.g. KB046) asks, with an example "
                   "that passes and one that fails, and exit")
    p.set_defaults(run=_check)

    p = sub.add_parser("schema", help="print the JSON Schema of an entry")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(run=_schema)

    p = sub.add_parser("build", help="check the entries and build the site with its search index")
    p.add_argument("-d", "--site-dir", default="site",
                   help="output folder, replaced whole: a new or empty folder or an earlier kb site (default: site/)")
    p.add_argument("--entries", default=str(default_entries()), help="entries folder (default: kb/entries/ here, else the installed knowledge base's)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--site-url", type=_site_url,
                       help="public URL the site will be served from, e.g. https://example.org/sub/path/ (canonical "
                            "links, sitemap.xml, robots.txt and the feed use it)")
    where.add_argument("--preview", action="store_true",
                       help="a local preview without a public URL: no canonical links, an empty sitemap (not for "
                            "deployment)")
    p.add_argument("--repo-url", type=_repo_url,
                   help="GitHub repository of this knowledge base, for the Edit and Report links (default: the "
                        "checkout's origin remote when it is on GitHub)")
    p.add_argument("--full", action="store_true",
                   help="build the site whole with the theme, even when only records changed since the last build "
                        "of this folder (which rewrites just the files whose content changed)")
    p.set_defaults(run=_build)

    p = sub.add_parser("serve", help="build the site, serve it on this machine and rebuild it at every saved edit")
    p.add_argument("-a", "--address", default="127.0.0.1:8000", type=_address,
                   help="HOST:PORT to serve on (default: 127.0.0.1:8000)")
    p.add_argument("--entries", default=str(default_entries()), help="entries folder (default: kb/entries/)")
    p.add_argument("-d", "--site-dir", default=".cache/serve/site",
                   help="folder the preview is built into (default: .cache/serve/site)")
    p.set_defaults(run=_serve)

    p = sub.add_parser("lock", help="record every URL the site publishes in kb/urls.lock (never drops one) and give "
                       "new entries the next citable ids in kb/ids.lock")
    p.add_argument("--lock", default="kb/urls.lock", help="lock file (default: kb/urls.lock)")
    p.add_argument("--ids", default="kb/ids.lock", help="id lock file (default: kb/ids.lock)")
    p.set_defaults(run=_lock)

    p = sub.add_parser("match", help="find the failures a log shows (exit 0 matches, 1 none, 2 unreadable)")
    p.add_argument("file", help="log file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print [{entry, score, lines, signature, url, verdict, why, generic_only}], then, when no entry matches, "
                   "the family answer: [{answer: family, entry: null, family, title, url, lines, signature, check, fix}]; "
                   "when every entry matched only generic lines and nothing decides, the family answer first and the "
                   "entries after it with answer: also-prints-this-line")
    p.add_argument("--entries", default=str(default_entries()), help="entries folder (default: kb/entries/ here, else the installed knowledge base's)")
    p.add_argument("--site-url", type=_site_url, default=os.environ.get(SITE_URL_ENV) or None,
                   help=f"the published site, prefix of the entry URLs, e.g. https://example.org/kb/ (default: "
                        f"${SITE_URL_ENV}; without either, page paths relative to the site)")
    p.set_defaults(run=_match)
    p = sub.add_parser(
        "doctor", help="judge which failures apply to this machine and predict what will fail (exit 0; 1 when "
        "--fail-on trips; 2 on bad input)",
        description="Judge which known failures apply to this machine: its GPU and driver, and the packages of "
        "the Python environment that serves. That environment is the one --python names; without it, the active "
        "virtual environment ($VIRTUAL_ENV), the active conda environment ($CONDA_PREFIX), python3 on PATH, or "
        "the interpreter of a running vLLM, SGLang, TensorRT-LLM or llama-cpp-python server of this user, the "
        "first found (the report names it and lists the others). Its packages are read by that interpreter in "
        "a child process; nothing of it is imported here. The verdict comes first: how many failures apply and "
        "what to do now for each; the details follow, then the failures its installed CUDA libraries, Triton's "
        "ptxas and NCCL predict for the GPU (or for --target).",
        epilog=DOCTOR_EXIT)
    p.add_argument("--python", metavar="PATH", help="the serving environment to judge: its interpreter "
                   "(/srv/venv/bin/python) or its folder (a virtual or conda environment)")
    p.add_argument("--json", action="store_true", help='print {"facts", "key", "cells": [{entry, verdict, why, url}]}')
    p.add_argument("--facts", metavar="FILE", help="read the facts from this JSON file (- for standard input) "
                   "instead of probing")
    p.add_argument("--facts-schema", action="store_true", help="print the JSON Schema of a facts file")
    p.add_argument("--entries", default=str(default_entries()), help="entries folder (default: kb/entries/ here, else the installed knowledge base's)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds each probe may take (default: 20)")
    p.add_argument("--site-url", type=_site_url, default=os.environ.get(SITE_URL_ENV) or None,
                   help=f"the published site, prefix of the entry URLs, e.g. https://example.org/kb/ (default: "
                        f"${SITE_URL_ENV}; without either, page paths relative to the site)")
    # predictions (kb.doctor.predict): what will fail on this GPU or on --target, before anything runs
    p.add_argument("--target", metavar="ARCH|GPU", help="judge for this GPU instead of the one here: sm_120, sm_121, "
                   "12.1 or a GPU name (RTX 5090, GB10, DGX Spark); works on a machine without a GPU")
    p.add_argument("--site-packages", action="append", default=None, metavar="DIR",
                   help="a site-packages folder whose CUDA libraries, Triton and NCCL to read (repeatable; default: "
                        "the judged environment's)")
    p.add_argument("--fail-on", choices=("applies", "predicted"), help="exit 1 when a cell applies (applies), or when "
                   "a cell applies or a failure is predicted (predicted); for CI")
    p.set_defaults(run=_doctor)

    p = sub.add_parser("new", help="write a skeleton entry for a new error string (asks for what is not given)")
    p.add_argument("--text", help="the literal error string, exactly as printed (one line)")
    p.add_argument("--gpu", action="append", default=[], help="a GPU it happened on (repeatable)")
    p.add_argument("--arch", action="append", default=[], choices=list(facets.ARCH_NAMES),
                   help="an architecture (repeatable; default: from the GPU names)")
    p.add_argument("--component", action="append", default=[], metavar="PACKAGE:ROLE",
                   help="a package and its role, raises, triggers or involved (repeatable), e.g. vllm:triggers")
    p.add_argument("--link", help="an upstream link: GitHub issue, pull request, commit or release URL")
    p.add_argument("--kind", choices=list(facets.KIND_NAMES),
                   help="the signature's kind (default: guessed from the string)")
    p.add_argument("--title", help="the title, one line in your own words (default: a TODO marker)")
    p.add_argument("--id", help="the entry id (default: derived from the error string)")
    p.add_argument("--entries", default=str(default_entries()), help="entries folder (default: kb/entries/ here, else the installed knowledge base's)")
    p.add_argument("-y", "--non-interactive", action="store_true",
                   help="never ask: fail (exit 2) when --text, --gpu or --component is missing")
    p.set_defaults(run=_new)

    p = sub.add_parser(
        "refresh", help="read the live state of every upstream issue and pull request from GitHub and print "
        "what differs (exit 0 none, 1 some, 2 errors)",
        description="Read the state of each upstream issue and pull-request link from GitHub's REST API "
        "(open, closed, merged, with the date, and for a newly merged pull request the first release that "
        "contains it) and print one line per link whose record differs. It also checks each component's "
        "fixed_in against its fixed_by pull request: the release's tag exists, contains the merge commit, and "
        "the final release before it does not; each mismatch is one more line. --write records what was read: "
        "each link's state, and its as_of set to today; nothing else changes: fixed_in is never written (a "
        "person decides). Nothing is written when any request fails. Token: GITHUB_TOKEN. Exit 0: nothing "
        "differs; 1: some states or fixed_in differ (and, with --write, the states were written); 2: an error.")
    p.add_argument("--write", action="store_true", help="update state and as_of of the links read, in place "
                   "(never fixed_in, versions or prose)")
    p.add_argument("--only", nargs="+", metavar="ID", help="refresh only these entries")
    p.add_argument("--entries", default=str(default_entries()), help="entries folder (default: kb/entries/ here, else the installed knowledge base's)")
    p.add_argument("--api-url", help="GitHub REST API base URL (default: $GITHUB_API_URL or https://api.github.com)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds each request may take (default: 20)")
    p.add_argument("--max-requests", type=int, default=1000, help="stop with an error past this many requests "
                   "(default: 1000)")
    p.add_argument("--cache", metavar="FILE",
                   help="ETag cache for conditional requests (default: .cache/kb/github-etags.json; safe to delete)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the ETag cache")
    p.set_defaults(run=_refresh)

    _add_repro(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    entries = getattr(args, "entries", None)
    if entries == str(ENTRIES) and os.path.abspath(entries) != str(OWN_ENTRIES):
        # a developer's kb in another checkout of this project (kb.default_entries): say which index
        print(f"kb: reading the index of the checkout here, {os.path.abspath(entries)} (not {OWN_ENTRIES})",
              file=sys.stderr)
    try:
        return args.run(args)
    except BrokenPipeError:
        # The reader stopped early (`kb match log | head`): no traceback. Point stdout at devnull so
        # the interpreter's final flush does not raise again, and exit as a killed-by-SIGPIPE tool would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13


if __name__ == "__main__":
    sys.exit(main())
