"""The `kb` command: one subcommand per job, each a thin call into its stage."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from kb import ENTRIES, facets


def _explain(code: str) -> int:
    from kb.rules import RULES

    rule = RULES.get(code.strip().upper())
    if rule is None:
        print(f"kb check: no rule {code!r}; the codes are {min(RULES)} to {max(RULES)} (see the rules page)",
              file=sys.stderr)
        return 2
    print(f"{rule.code} {rule.name}")
    print(f"  {rule.statement}")
    for label, example in (("passes", rule.good), ("fails", rule.bad)):
        print(f"{label}:")
        for line in example.rstrip("\n").splitlines():
            print(f"    {line}")
    return 0


def _check(args) -> int:
    if args.explain is not None:
        return _explain(args.explain)
    from kb import lint

    paths = [Path(p) for p in args.paths] or [ENTRIES]
    named = lint.entry_files(paths)
    # A file named alone is checked among the other entries of its folder (related ids, shared
    # signatures), but only its own problems are reported: what a pre-commit hook needs.
    folders = sorted({p.parent for p in named if p.is_file()} | {p for p in paths if p.is_dir()})
    missing = [p for p in named if not p.exists()]
    result = lint.cached_check(folders + missing if folders else named)
    # abspath, not resolve(): an entry may be a symbolic link (even a loop), refused unread.
    wanted = {os.path.abspath(p) for p in named}
    problems = [p for p in result.problems if os.path.abspath(p.path) in wanted]
    for problem in problems:
        print(problem.format())
    if problems:
        files = len({p.path for p in problems})
        print(f"{len(problems)} problem(s) in {files} of {len(named)} file(s)", file=sys.stderr)
        return 1
    print(f"ok: {len(named)} entr{'y' if len(named) == 1 else 'ies'} checked, no problems")
    return 0


def _schema(args) -> int:
    from kb import schema

    text = json.dumps(schema.json_schema(), indent=2, sort_keys=True) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _build(args) -> int:
    from kb import build

    return build.build(Path(args.site_dir), Path(args.entries), site_url=args.site_url)


def _match(args) -> int:
    from kb import match
    from kb.visible import visible

    rule_list, problems = match.load_rules(Path(args.entries))
    if problems:
        for problem in problems:
            print(problem.format(), file=sys.stderr)
        print("the entries have problems; run `kb check`", file=sys.stderr)
        return 2
    matcher = match.Matcher(rule_list)
    try:
        if args.file == "-":
            hits = matcher.scan(sys.stdin.buffer)
        else:
            with open(args.file, "rb") as stream:
                hits = matcher.scan(stream)
    except OSError as exc:
        print(f"kb match: cannot read {visible(args.file)}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    base = args.site_url.rstrip("/") + "/" if args.site_url else ""
    if args.json:
        # No log text goes into the JSON, only record text (which KB031 keeps free of controls
        # and bidi characters); json.dumps escapes C0 controls in any case.
        out = [hit.as_json() | {"url": base + hit.url} for hit in hits]
        print(json.dumps(out, indent=2, ensure_ascii=False))
    elif not hits:
        print("no known cell matches this log")
    else:
        for rank, hit in enumerate(hits, 1):
            # The log is anyone's text: its lines are shown with controls escaped (an ESC or a CR
            # in a log line would otherwise act on the terminal) and cut to 200 characters.
            print(f"{rank}. {visible(hit.title)} [{hit.entry}] score {hit.score}")
            print(f"   {visible(base + hit.url)}")
            for number in hit.lines[:5]:
                print(f"   line {number}: {visible(hit.texts[number], 200)}")
            if len(hit.lines) > 5:
                print(f"   ... and {len(hit.lines) - 5} more line(s)")
    return 0 if hits else 1


def _doctor(args) -> int:
    from kb import doctor

    return doctor.main(Path(args.entries), facts_path=args.facts, as_json=args.json, facts_schema=args.facts_schema,
                       timeout=args.timeout, site_url=args.site_url)


def _lock(args) -> int:
    from kb import urls
    from kb.generate import GenerateError, generate

    try:
        generated = generate(ENTRIES)
    except GenerateError as exc:
        print(exc, file=sys.stderr)
        return 1
    lock = Path(args.lock)
    locked = urls.read_lock(lock) if lock.exists() else []
    added = urls.write_lock(lock, locked, generated.published)
    print(f"{lock}: {len(added)} URL(s) added, {len(set(locked) | set(generated.published))} recorded")
    return 0


def _new(args) -> int:
    from kb import new

    return new.run(args)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kb", description="Blackwell serving-failure knowledge base")
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
    p.add_argument("--entries", default=str(ENTRIES), help="entries folder (default: kb/entries/)")
    p.add_argument("--site-url", help="public URL of the site, e.g. https://example.org/sub/path/")
    p.set_defaults(run=_build)

    p = sub.add_parser("lock", help="record every URL the site publishes in kb/urls.lock (never drops one)")
    p.add_argument("--lock", default="kb/urls.lock", help="lock file (default: kb/urls.lock)")
    p.set_defaults(run=_lock)

    p = sub.add_parser("match", help="find the cells a log shows (exit 0 matches, 1 none, 2 unreadable)")
    p.add_argument("file", help="log file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print [{entry, score, lines, signature, url}]")
    p.add_argument("--entries", default=str(ENTRIES), help="entries folder (default: kb/entries/)")
    p.add_argument("--site-url", help="prefix for the cell URLs, e.g. https://example.org/")
    p.set_defaults(run=_match)
    p = sub.add_parser("doctor", help="judge which cells apply to this machine (exit 0, 2 on bad input)")
    p.add_argument("--json", action="store_true", help='print {"facts", "key", "cells": [{entry, verdict, why, url}]}')
    p.add_argument("--facts", metavar="FILE", help="read the facts from this JSON file (- for standard input) "
                   "instead of probing")
    p.add_argument("--facts-schema", action="store_true", help="print the JSON Schema of a facts file")
    p.add_argument("--entries", default=str(ENTRIES), help="entries folder (default: kb/entries/)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds each probe may take (default: 20)")
    p.add_argument("--site-url", help="prefix for the cell URLs, e.g. https://example.org/ (default: relative)")
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
    p.add_argument("--id", help="the cell id (default: derived from the error string)")
    p.add_argument("--entries", default=str(ENTRIES), help="entries folder (default: kb/entries/)")
    p.add_argument("-y", "--non-interactive", action="store_true",
                   help="never ask: fail (exit 2) when --text, --gpu or --component is missing")
    p.set_defaults(run=_new)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
