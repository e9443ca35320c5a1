"""The `kb` command: one subcommand per job, each a thin call into its stage."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kb import lint, schema


def _check(args) -> int:
    result = lint.check([Path(p) for p in args.paths] or [lint.ENTRIES])
    for problem in result.problems:
        print(problem.format())
    if result.problems:
        files = len({p.path for p in result.problems})
        print(f"{len(result.problems)} problem(s) in {files} of {result.files} file(s)", file=sys.stderr)
        return 1
    print(f"ok: {result.files} entr{'y' if result.files == 1 else 'ies'} checked, no problems")
    return 0


def _schema(args) -> int:
    text = json.dumps(schema.json_schema(), indent=2, sort_keys=True) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _build(args) -> int:
    from kb import build

    return build.build(Path(args.site_dir), Path(args.entries), site_url=args.site_url)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kb", description="Blackwell serving-failure knowledge base")
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="validate and lint entries (default: kb/entries/)")
    p.add_argument("paths", nargs="*", help="entry files or folders")
    p.set_defaults(run=_check)

    p = sub.add_parser("schema", help="print the JSON Schema of an entry")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(run=_schema)

    p = sub.add_parser("build", help="check the entries and build the site with its search index")
    p.add_argument("-d", "--site-dir", default="site", help="output folder (default: site/)")
    p.add_argument("--entries", default=str(lint.ENTRIES), help="entries folder (default: kb/entries/)")
    p.add_argument("--site-url", help="public URL of the site, e.g. https://example.org/sub/path/")
    p.set_defaults(run=_build)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
