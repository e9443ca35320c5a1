"""`kb new`: write the skeleton of a new cell into kb/entries/<id>.yaml.

It asks for (or takes as options) the literal error string, the GPUs, the components and an
upstream link, and writes the canonical entry shape (that of
tests/fixtures/good/mla-decode-fp8-kv-triton-shared-memory.yaml) with every field present and
commented. What only the contributor can write (title, summary, mechanism, measurements...)
is a `TODO` marker: the file is valid as written, and the linter's rule KB046 lists each marker
with its file, line and field, so the first `kb check` says exactly what to fill in.

The id is derived from the error string (lowercase words joined by hyphens, at most
`MAX_ID_CHARS`); when a file of that id exists, -2, -3, ... is appended. An id given with `--id`
that is taken is refused. An existing file is never overwritten.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import sys
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pydantic import TypeAdapter, ValidationError

from kb.records import schema
from kb.records import crosscheck, facets, lint
from kb.records.problems import show

MAX_ID_CHARS = 60
MAX_SUFFIX = 99
TODO_ISSUE = "https://github.com/TODO/TODO/issues/1"
TODO_PR = "https://github.com/TODO/TODO/pull/1"
ROLES = ("raises", "triggers", "involved", "unaffected")
KINDS = tuple(facets.KIND_NAMES)
ARCHS = tuple(facets.ARCH_NAMES)
# The state a link of each kind most often has when it is first reported.
FIRST_STATE = {"issue": "open", "pr": "open", "commit": "merged", "release": "published", "doc": "published"}


class Refused(Exception):
    """The input cannot make an entry; the message says why and what to do."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


# --- deriving values -------------------------------------------------------------------------

def words_of(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return re.findall(r"[a-z0-9]+", folded)


def base_id(text: str, limit: int = MAX_ID_CHARS) -> str:
    """Lowercase words of `text` joined by hyphens, cut at a word boundary to `limit` characters."""
    out = ""
    for word in words_of(text):
        candidate = f"{out}-{word}" if out else word
        if len(candidate) > limit:
            break
        out = candidate
    if not out:
        words = words_of(text)
        out = words[0][:limit] if words else ""
    return out


def taken_ids(entries: Path) -> set[str]:
    return {path.stem for path in entries.glob("*.yaml")} if entries.is_dir() else set()


def choose_id(text: str, taken: set[str], wanted: str | None = None) -> tuple[str, str | None]:
    """(id, note): the id for a new cell and, when it had to be changed, why."""
    if wanted is not None:
        if not re.fullmatch(schema.ID_PATTERN, wanted) or len(wanted) > 80:
            raise Refused(f"--id {wanted!r} is not an id: use lowercase words, digits and hyphens (at most 80)")
        if wanted in taken:
            raise Refused(f"kb/entries already has a cell {wanted!r}; pick another --id "
                          "(or edit that cell instead)", code=1)
        return wanted, None
    base = base_id(text)
    if not base:
        raise Refused("the error string has no letters or digits to name the cell by; give one with --id")
    if base not in taken:
        return base, None
    for n in range(2, MAX_SUFFIX + 1):
        candidate = f"{base}-{n}"
        if candidate not in taken:
            return candidate, f"id {base!r} is taken, using {candidate!r}"
    raise Refused(f"ids {base!r} to {base}-{MAX_SUFFIX} are all taken; give one with --id", code=1)


def link_kind(url: str) -> str | None:
    """The kind of an upstream link from its URL form (`doc` last: it takes any GitHub page)."""
    for kind in ("issue", "pr", "commit", "release", "doc"):
        if schema.LINK_FORMS[kind].match(url):
            return kind
    return None


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|OutOfResources)\b")


def guess_kind(text: str) -> str:
    if _EXCEPTION.match(text):
        return "exception"
    if re.search(r"\bxid\b|nvrm|\bptxas\b", text, re.I):
        return "kernel-message"
    return "log-line"


def guess_arch(gpu: str) -> str:
    return "sm_121" if re.search(r"gb10|spark", gpu, re.I) else "sm_120"


def guess_symptom(text: str) -> str:
    lower = text.lower()
    if "out of memory" in lower or "outofmemory" in lower or " oom" in lower:
        return "out-of-memory"
    if "hang" in lower or "timed out" in lower or "timeout" in lower:
        return "hang"
    return "crash"


# --- YAML ------------------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(value: str) -> str:
    """`value` as a YAML double-quoted scalar that loads back to exactly `value`."""
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == " " or ch.isprintable():
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _flow(values: list[str]) -> str:
    return "[" + ", ".join(quote(v) for v in values) + "]"


# --- the request -----------------------------------------------------------------------------

@dataclass
class Request:
    text: str
    kind: str
    gpus: list[str]
    archs: list[str]
    components: list[tuple[str, str]]  # (package, role)
    link: str | None = None
    title: str | None = None
    related: list[tuple[str, str]] = field(default_factory=list)  # (id, why), look-alikes found


def _pydantic_reason(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    message = re.sub(r"^(Input|String|List|Value) should", "must", error["msg"])
    return f"{where}: {message}" if where else message


def check_text(text: str) -> str:
    if "\n" in text.strip():
        raise Refused("the error string must be one line: keep the line people search for")
    text = text.strip()
    if not text:
        raise Refused("the error string is empty")
    try:
        schema.Signature.model_validate({"text": text, "kind": "log-line"})
    except ValidationError as exc:
        raise Refused(f"the error string cannot be a signature: {_pydantic_reason(exc)}") from None
    return text


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise Refused(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    return kind


def check_gpus(gpus: list[str]) -> list[str]:
    gpus = [g.strip() for g in gpus if g.strip()]
    if not gpus:
        raise Refused("name at least one GPU, e.g. 'RTX PRO 6000 Blackwell' or 'GB10'")
    try:
        schema.Hardware.model_validate({"architectures": ["sm_120"], "gpus": gpus})
    except ValidationError as exc:
        raise Refused(f"GPU names: {_pydantic_reason(exc)}") from None
    return list(dict.fromkeys(gpus))


def check_archs(archs: list[str]) -> list[str]:
    archs = [a.strip() for a in archs if a.strip()]
    for arch in archs:
        if arch not in ARCHS:
            raise Refused(f"architecture {arch!r} is not one of {', '.join(ARCHS)}")
    if not archs:
        raise Refused("name at least one architecture: sm_120 or sm_121")
    return list(dict.fromkeys(archs))


def check_components(specs: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for spec in specs:
        spec = spec.strip()
        if not spec:
            continue
        package, sep, role = spec.rpartition(":")
        if not sep or not package:
            raise Refused(f"component {spec!r}: write PACKAGE:ROLE, e.g. vllm:triggers "
                          f"(role one of {', '.join(ROLES)})")
        package, role = package.strip().lower(), role.strip().lower()
        if role not in ROLES:
            raise Refused(f"component {spec!r}: role {role!r} is not one of {', '.join(ROLES)}")
        try:
            schema.Component.model_validate({"package": package, "role": role})
        except ValidationError:
            raise Refused(f"component {spec!r}: {package!r} is not a package name "
                          "(lowercase letters, digits, '.', '_' and '-', as on PyPI)") from None
        if (package, role) not in out:
            out.append((package, role))
    if not out:
        raise Refused("name at least one component as PACKAGE:ROLE, e.g. vllm:triggers")
    return out


def check_link(url: str | None) -> str | None:
    if url is None or not url.strip():
        return None
    url = url.strip()
    if link_kind(url) is None:
        raise Refused(f"upstream link {show(url)} is not a GitHub issue, pull request, commit or release URL "
                      "or a page of a known docs site")
    return url


def check_title(title: str | None) -> str | None:
    if title is None or not title.strip():
        return None
    title = title.strip()
    try:
        TypeAdapter(schema.Text).validate_python(title, strict=True)
    except ValidationError as exc:
        raise Refused(f"title: {_pydantic_reason(exc)}") from None
    return title


def look_alikes(new: lint.Cell, cells: list[lint.Cell]) -> list[tuple[str, str]]:
    """(id, why) of the existing cells whose signatures fit a line the new cell's signature fits:
    the two must list each other in `related` (rule KB047, found as `kb check` finds it)."""
    found: list[tuple[str, str]] = []
    for a, i, b, j in crosscheck.look_alike_pairs([c for c in cells if c.id != new.id] + [new]):
        if new.id in (a.id, b.id):
            other, k = (b, j) if a.id == new.id else (a, i)
            found.append((other.id, f"signatures[{k}] fits the same log line"))
    return sorted(set(found))


# --- the skeleton ----------------------------------------------------------------------------

def _one_of(words) -> str:
    """'a, b or c' of a vocabulary."""
    words = list(words)
    return ", ".join(words[:-1]) + " or " + words[-1]


def skeleton(request: Request, cell_id: str, today: str) -> str:
    """The entry file text: valid as written, every prose placeholder a TODO marker."""
    r = request
    first_package = r.components[0][0]
    source = r.link or TODO_ISSUE
    lines = [
        f"# kb/entries/{cell_id}.yaml, written by `kb new` on {today}.",
        "# The id is the file name; do not write it inside the file. Replace every TODO (each is reported by `kb check` as KB046 with",
        "# its line and field), delete optional blocks you have nothing for, and run",
        "# `.venv/bin/kb check` until it prints ok. `kb check --explain KB0xx` explains a rule; the",
        "# canonical example is tests/fixtures/good/mla-decode-fp8-kv-triton-shared-memory.yaml.",
        "",
        "# One line naming the failure and its cause, in your own words (not the error string).",
        f"title: {quote(r.title or 'TODO: name the failure and its cause in one line')}",
        "# Two or three plain sentences: who hits it, doing what, and what happens (no links).",
        f"summary: {quote('TODO: who hits this, doing what, and what happens')}",
        "# Why it happens, in one plain sentence of at most 25 words taken from the mechanism (the card's Cause",
        "# line): no file paths or function names, and not a repeat of the summary (rule KB080).",
        f"cause: {quote('TODO: why it happens, in one sentence')}",
        "# What a stack must use or pass for it to happen (a flag, a model kind), if the sources say so;",
        "# My stack then shows it as applying only when you use or pass it. Delete it if any stack hits it.",
        f"trigger: {quote('TODO: the flag or model kind that makes it happen, or delete the line')}",
        f"# One or more of: {', '.join(facets.SYMPTOM_NAMES)}.",
        f"symptoms: [{guess_symptom(r.text)}]",
        "# The recurring mechanism it belongs to, if one fits (a file stem in kb/families/; rule KB092).",
        "# family: no-code-for-gpu",
        "status:",
        f"  # {_one_of(facets.STATUS_NAMES)}.",
        "  # fixed-*: an upstream link merged/published or a component's fixed_in/fixed_commit;",
        "  # fix-proposed: an open pull request in upstream (rule KB049).",
        "  state: under-investigation",
        "  # The day you read the state at its source (YYYY-MM-DD, or YYYY-MM).",
        f"  as_of: {today}",
        "  # The public page that shows the state.",
        f"  source: {quote(source)}",
        "signatures:",
        "  # The line exactly as printed: never retyped, trimmed or with its numbers replaced.",
        f"  - text: {quote(r.text)}",
        "    # exception, log-line, kernel-message, or symptom (a named symptom with no string).",
        f"    kind: {r.kind}",
        "    # Optional: the text with the parts that vary between runs marked, e.g.",
        '    # match: "RuntimeError: Plan index {int} is invalid"',
        "    # ({int} {num} {hex} {size} {path} {pid} {id} {rest}; {{ and }} for literal braces).",
        "    # Where it is printed or when it appears; delete the line if there is nothing to add.",
        f"    note: {quote('TODO: where this is printed, or when it appears')}",
        "# Optional: identifiers that show the cell in a log that prints no error (a benchmark table,",
        "# an allocator snapshot, a py-spy dump) when all appear within `window` lines; each term",
        "# written elsewhere in this record (rules KB058 to KB060).",
        "evidence: []",
        "#   - terms: [_decode_grouped_att_m_fwd, triton_decode_attention.py]",
        '#     numbers: ["101376"]',
        "#     window: 20",
        "hardware:",
        "  # sm_120: RTX PRO 6000 / 5000 and RTX 50xx; sm_121: GB10 (DGX Spark).",
        f"  architectures: [{', '.join(r.archs)}]",
        "  # Every GPU it was seen on, by its marketing name.",
        f"  gpus: {_flow(r.gpus)}",
        "# The packages involved: raises (prints the error), triggers (its code path leads there),",
        "# involved (neither, but part of it). Give the one whose versions were seen failing affected or",
        "# seen_failing, or say in a note why no range is given: \"No range: <why>\" (rule KB096).",
        "components:",
    ]
    for n, (package, role) in enumerate(r.components):
        # The first note asks for the range or the reason (KB096), so a filled skeleton answers it.
        note = (f"TODO: what {package} does in this failure. No range: TODO: why none is given, or give a "
                "component affected or seen_failing and delete this sentence") if n == 0 else \
            f"TODO: what {package} does in this failure, or delete the line"
        lines += [
            f"  - package: {package}",
            f"    role: {role}",
            "    # Optional, PEP 440: affected: \">=0.6.0,<0.6.18\"  fixed_in: 0.6.18  fixed_commit: 1a2b3c4",
            "    # fixed_by: <URL of the merged pull request that fixes it> (with fixed_in or fixed_commit)",
            f"    note: {quote(note)}",
        ]
    lines += [
        "# Why it happens, in Markdown: the code path, the numbers, the limit it hits. Code in",
        "# `backticks`; links https only; no raw HTML.",
        "mechanism: |",
        "  TODO: why this happens: the code path, the numbers and the limit it hits.",
        "# Measured numbers, each with its conditions and the public page that has the raw numbers.",
        "# \"Measured\" means: the hardware, the exact versions, the command and flags you ran, the raw",
        "# numbers and where they are published. Delete the block if there are none.",
        "measurements:",
        f"  - quantity: {quote('TODO: what was measured')}",
        f"    unit: {quote('TODO: unit, e.g. bytes, GiB, tokens/s')}",
        "    # One number in value, or a series instead:",
        "    # series: {x: batch size, rows: [{x: 1, value: 10.5}, {x: 8, value: 61.2}]}",
        "    value: 0",
        "    conditions:",
        f"      hardware: {quote(r.gpus[0])}",
        "      versions:",
    ]
    for package, _ in r.components:
        lines.append(f"        {package}: {quote('TODO: exact version')}")
    lines += [
        f"      flags: [{quote('TODO: the command-line flags you ran with')}]",
        f"    source: {quote(TODO_ISSUE)}",
        f"    as_of: {today}",
        f"    note: {quote('TODO: the command you ran, or delete the line')}",
        f"# {_one_of(facets.REMEDY_KINDS)}; optional `applies: \">=0.6.18\"` (PEP 440).",
        "# Delete a block if there is none yet.",
        "fixes:",
        "  - kind: patch",
        f"    what: {quote('TODO: the fix, e.g. the pull request that fixes it')}",
        f"    note: {quote('TODO: what the fix changes, or delete the line')}",
        f"    package: {first_package}",
        f"    source: {quote(TODO_PR)}",
        f"    as_of: {today}",
        "workarounds:",
        "  - kind: flag",
        f"    what: {quote('TODO: the flag, variable or setting that avoids it')}",
        f"    note: {quote('TODO: how it avoids the failure, or delete the line')}",
        "    # What it costs the reader (memory, speed, a feature given up), as the source says (rule KB095).",
        f"    cost: {quote('TODO: what it costs, or that the source gives no cost and what it turns off')}",
        f"    package: {first_package}",
        f"    source: {quote(TODO_ISSUE)}",
        f"    as_of: {today}",
        "# Issues, pull requests, commits, releases and docs pages, each with its state and the day",
        "# you read it (issue: open/closed; pr: open/closed/merged; commit: merged/published).",
        "upstream:",
    ]
    if r.link:
        kind = link_kind(r.link)
        lines += [f"  - kind: {kind}", f"    url: {quote(r.link)}", f"    state: {FIRST_STATE[kind]}",
                  f"    as_of: {today}"]
    else:
        lines += ["  - kind: issue", f"    url: {quote(TODO_ISSUE)}", "    state: open", f"    as_of: {today}"]
    lines += [
        f"    title: {quote('TODO: the title it has upstream, or delete the line')}",
        "# What a source says that you did not check yourself (confirmed: false), with its link",
        "# (or `seed` for the project's seed notes). Delete the block if there is none.",
        "claims:",
        f"  - says: {quote('TODO: what the source says')}",
        f"    source: {quote(TODO_ISSUE)}",
        f"    as_of: {today}",
        "    confirmed: false",
        "# Cells that look alike or share a cause; each lists the other too (rules KB047, KB048).",
        f"# how: {_one_of(facets.RELATED_HOW)}.",
    ]
    if r.related:
        lines.append("related:")
        for other, why in r.related:
            lines += [f"  - id: {other}", "    how: look-alike",
                      f"    note: {quote('TODO: how to tell the two apart (' + other + ' ' + why + ')')}"]
    else:
        lines += ["related: []", "# related:", "#   - {id: other-cell-id, how: look-alike, note: How to tell them apart.}"]
    lines += [
        "# The day the cell is first published, and the day it last changed.",
        f"published: {today}",
        f"updated: {today}",
        "# Runs anyone can repeat without a Blackwell GPU (CONTRIBUTING.md, \"Adding a reproduction\"):",
        "# write install and run, then `kb repro --write ID` records what it printed.",
        "reproductions: []",
        "# Scans of released wheels that prove a \"no kernel image\" range (CONTRIBUTING.md, \"Adding a scan",
        "# of released wheels\"): `kb repro --write ID` records what each wheel holds.",
        "scans: []",
    ]
    return "\n".join(lines) + "\n"


# --- asking ----------------------------------------------------------------------------------

def _ask_until_valid(ask: Callable[[str], str], prompt: str, check, err) -> object:
    while True:
        try:
            answer = ask(prompt)
        except EOFError:
            raise Refused("no answer given; in scripts, pass every value as an option with -y") from None
        try:
            return check(answer)
        except Refused as exc:
            print(f"  {exc}", file=err)


def _split(answer: str) -> list[str]:
    return [part.strip() for part in answer.split(",") if part.strip()]


def gather(args, ask: Callable[[str], str] | None, err) -> Request:
    """The request from the options, asking for what is missing unless non-interactive."""
    interactive = not args.non_interactive
    ask = ask or (lambda prompt: input(prompt))

    def need(name: str) -> None:
        raise Refused(f"--{name} is required with --non-interactive")

    if args.text is not None:
        text = check_text(args.text)
    elif interactive:
        text = _ask_until_valid(ask, "Error string, exactly as printed (one line): ", check_text, err)
    else:
        need("text")

    guessed = guess_kind(text)
    if args.kind is not None:
        kind = check_kind(args.kind)
    elif interactive:
        kind = _ask_until_valid(ask, f"Kind ({', '.join(KINDS)}) [{guessed}]: ",
                                lambda a: check_kind(a.strip() or guessed), err)
    else:
        kind = guessed

    if args.gpu:
        gpus = check_gpus(args.gpu)
    elif interactive:
        gpus = _ask_until_valid(ask, "GPU(s) it happened on, comma-separated (e.g. RTX PRO 6000 Blackwell, GB10): ",
                                lambda a: check_gpus(_split(a)), err)
    else:
        need("gpu")

    archs_guess = list(dict.fromkeys(guess_arch(g) for g in gpus))
    if args.arch:
        archs = check_archs(args.arch)
    elif interactive:
        default = ", ".join(archs_guess)
        archs = _ask_until_valid(ask, f"Architecture(s), sm_120 or sm_121 [{default}]: ",
                                 lambda a: check_archs(_split(a) or archs_guess), err)
    else:
        archs = archs_guess

    if args.component:
        components = check_components(args.component)
    elif interactive:
        components = _ask_until_valid(
            ask, "Component(s) as PACKAGE:ROLE, comma-separated, role raises, triggers or involved "
                 "(e.g. vllm:triggers, flashinfer:raises): ", lambda a: check_components(_split(a)), err)
    else:
        need("component")

    if args.link is not None:
        link = check_link(args.link)
    elif interactive:
        link = _ask_until_valid(ask, "Upstream link, a GitHub issue or pull request URL (blank if none yet): ",
                                check_link, err)
    else:
        link = None

    if args.title is not None:
        title = check_title(args.title)
    elif interactive:
        title = _ask_until_valid(ask, "Title, one line in your own words (blank to fill in later): ",
                                 check_title, err)
    else:
        title = None
    return Request(text=text, kind=kind, gpus=gpus, archs=archs, components=components, link=link, title=title)


# --- running ---------------------------------------------------------------------------------

def _trial(text: str, cell_id: str) -> tuple[list, lint.Cell | None]:
    """Lint a skeleton alone, in a scratch folder: its problems and its cell."""
    with tempfile.TemporaryDirectory(prefix="kb-new-") as folder:
        path = Path(folder) / f"{cell_id}.yaml"
        path.write_text(text, encoding="utf-8")
        result = lint.check([path])
    unexpected = [p for p in result.problems if p.code not in ("KB046", "KB036", "KB048")]
    if unexpected or not result.cells:
        shown = "\n".join("  " + p.format() for p in unexpected)
        raise Refused(f"the skeleton would not be valid (please report this):\n{shown}")
    return result.problems, result.cells[0]


def run(args, ask: Callable[[str], str] | None = None, out=None, err=None) -> int:
    """`kb new`: 0 written, 1 refused (the id or file exists), 2 bad input."""
    out = out or sys.stdout
    err = err or sys.stderr
    entries = Path(args.entries)
    today = dt.date.today().isoformat()
    try:
        if entries.exists() and not entries.is_dir():
            raise Refused(f"--entries {entries} is not a folder")
        request = gather(args, ask, err)
        cell_id, note = choose_id(request.text, taken_ids(entries), args.id)
        existing = lint.check([entries]).cells if entries.is_dir() else []
        _, trial = _trial(skeleton(request, cell_id, today), cell_id)
        request.related = look_alikes(dataclasses.replace(trial, path=entries / f"{cell_id}.yaml"), existing)
        text = skeleton(request, cell_id, today)
        _trial(text, cell_id)
        entries.mkdir(parents=True, exist_ok=True)
        path = entries / f"{cell_id}.yaml"
        try:
            with open(path, "x", encoding="utf-8") as stream:
                stream.write(text)
        except FileExistsError:
            raise Refused(f"{path} exists; kb new never overwrites a file", code=1) from None
    except Refused as exc:
        print(f"kb new: {exc}", file=err)
        return exc.code
    if note:
        print(f"kb new: {note}", file=err)
    print(f"wrote {path}", file=out)
    for cell in existing:
        if any(signature.text == request.text for signature in cell.entry.signatures):
            print(f"note: {cell.path} already lists this exact string: if yours is the same failure, add to "
                  "that cell instead; if not, put first a line only yours prints (KB040)", file=out)
    for other, why in request.related:
        print(f"note: {other} {why}: the new cell lists it in related; add `- id: {cell_id}` "
              f"(how: look-alike) to the related list of {entries / (other + '.yaml')} too (KB048)", file=out)
    todo = [p for p in lint.check([path]).problems if p.code == "KB046"]
    print(f"next: fill in the {len(todo)} TODO marker(s) below (or delete the optional ones), then run "
          "`.venv/bin/kb check` until it prints ok:", file=out)
    for problem in todo:
        where = problem.format().split(": ", 2)
        print(f"  {where[0]}: {where[1]}: {show(problem.got, 70)}", file=out)
    return 0
