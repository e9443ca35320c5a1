"""A new-cell request made from a log that no cell matches: the lines that look like errors, with
what varies between runs written as the placeholders of a signature's `match` pattern, and the GPU
and versions the log names. Nothing else of the log goes in.

What a log line may hold that must not leave the reader's machine (a password in a URL, a
`Cookie:` or `Authorization:` header, a `*_TOKEN=` value or `--api-key X` flag, a quoted
`'api_key': '...'` or JSON `"password": "..."` key, a bearer token, an API key by its known prefix,
a long base64 or hex run, an e-mail address) is written `{secret}` first (SECRETS). An error line that starts with `#` or a
backtick is escaped with a backslash, so it can neither end the code block nor start a section of
the request. A library's own warning (`NCCL WARN Cuda failure ...`, LIBRARY_WARN) is an error line.

The issue's title is the error line that says most (`title_rank`): an exception line
(`RuntimeError: ...`, EXCEPTION) before a library warning before any other error line; never a
harmless DEBUG, INFO or WARNING line (a log starts with those, e.g. vLLM's "Custom allreduce is
disabled ..."), a traceback's header or frame. Such a harmless line that looks like an error (the
same vLLM line says "not supported") is listed after the others, never first. Among lines of the best rank it is the last one
before the log's first `Traceback (most recent call last)` (what failed before a cascade of
tracebacks: vLLM's engine core prints the cause, then the API server's traceback follows), else
the first one after it (the exception that ends the first traceback, the root of a chain).

The rules are data in the subset of regular expressions that Python and JavaScript read the same
way; `kb match` uses them here and the triage page gets them in `triage/patterns.json`, so both
write the same request from the same log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import BinaryIO

from kb.records import secrets
from kb.records.normalise import RULES as NORMALISE
from kb.records.secrets import SECRETS, redact

MAX_LINES = 15
MAX_LINE_CHARS = 400
SECRET_MARGIN = 200  # characters past the cut that are read for secrets: one cut in two is still found
UNTITLED = "(say in a few words what failed)"
TITLE_PREFIX = "New failure: "
NO_GPU = "not found in the log (name your GPU here)"

ERRORISH = r"(error|exception|failed|fatal|xid|assert|traceback|out of memory|illegal|unsupported|not supported)"
# A library's own warning level, as NCCL prints it (`host:pid:tid [0] include/alloc.h:113 NCCL WARN
# Cuda failure 'invalid argument'`): the library's name in capitals, then WARN. Case-sensitive, so
# a Python logger's WARNING (or a word like "warn") is not one.
LIBRARY_WARN = r"\b[A-Z][A-Z0-9_]{1,15} WARN\b"
# An exception line once its log prefix is gone: a (dotted) Python exception name and a colon.
# Bounded, so a long run of letters costs a constant, not the square of its length.
EXCEPTION = (r"^(?:[A-Za-z_][A-Za-z0-9_]{0,63}\.){0,8}[A-Za-z0-9_]{0,63}(?:Error|Exception|Fault|OutOfResources)"
             r"[A-Za-z0-9_]{0,31}:")
# The start of a traceback (on the raw line, a log prefix before it), and lines that belong to one
# without saying what failed (once the prefix is gone): never a title.
TRACEBACK = r"Traceback \(most recent call last\)"
NOT_TITLE = (r"^(?:Traceback \(most recent call last\)|File \"|During handling of the above exception"
             r"|The above exception was the direct cause)")
# The name's middle is bounded: a lazy run that any `NVIDIA ` may start is read to the line's end from each.
# A data-centre card of another architecture (`NVIDIA H100 80GB HBM3`, `NVIDIA B200`) is named too: the
# report says which GPU the log is from, and the page that the index does not cover it.
GPU = (r"(NVIDIA [A-Za-z0-9][A-Za-z0-9 ]{0,40}?(?:Blackwell|GB10|\d{4}[A-Za-z ]*)|NVIDIA G?[A-Z]\d{3}\b"
       r"|RTX PRO \d{4}[A-Za-z ]*|GB10|DGX Spark)")
VERSION = (r"\b(vllm|sglang|flashinfer(?:-python)?|torch|triton|cudnn|cuda|driver|tensorrt[_-]llm|nccl)\b"
           r"(?:[\w ]{0,24}?\bversion\b)?[\s=:_-]*v?(\d+\.\d+[\w.+-]*)")

# The log level of a line, if one of the first words is one: DEBUG, INFO and WARNING lines do not
# name the issue.
LEVEL = r"^.{0,60}?\b(DEBUG|INFO|NOTICE|WARNING|WARN|TRACE|ERROR|CRITICAL|FATAL)\b"
HARMLESS_LEVELS = ("DEBUG", "INFO", "NOTICE", "WARNING", "WARN", "TRACE")

# Log prefixes go first (the normalisation's own rules, applied case-insensitively to the line as
# printed); then what varies is marked with the placeholders of the pattern grammar (KB044).
_PREFIX_RULES = {"ansi colour codes", "ray / engine-core process prefix", "vllm level and time prefix",
                 "sglang time prefix", "dmesg timestamp", "journal prefix", "iso timestamp", "python logging level",
                 "ray repeat count"}
# NCCL's own prefix (`host:pid:tid [rank] `) goes too: it names the machine.
_PREFIXES = [rule for rule in NORMALISE if rule[0] in _PREFIX_RULES] + [
    ("nccl host prefix", r"^\s*[a-z0-9_.-]{1,64}:\d+:\d+ \[\d+\]\s*", "")]
PLACEHOLDERS: list[tuple[str, str, str]] = [
    # Line numbers, in a frame (`line 698`) or after a source file (`alloc.h:113`), whatever their
    # length: the same frame gives the same line in every run of the same build.
    ("line number", r"\bline \d+\b", "line {int}"),
    ("source line", r"\b([\w-]+\.(?:py|pyx|h|hh|hpp|c|cc|cpp|cu|cuh)):\d+\b", "$1:{int}"),
    ("path", r"(?:/[\w.+-]+){2,}/?", "{path}"),
    ("hex", r"\b0x[0-9a-fA-F]+\b", "{hex}"),
    ("pid", r"\bpid[= ]\d+", "pid={pid}"),
    ("size", r"\b\d+(?:\.\d+)? ?(?:[KMGT]i?B|bytes)\b", "{size}"),
    ("long number", r"\b\d{4,}\b", "{int}"),
]


@lru_cache(maxsize=1)
def _compiled():
    # ASCII: \b, \d and \w mean what they mean in JavaScript, which runs the same rules.
    prefixes = [(re.compile(p, re.I | re.A), r.replace("$1", r"\1")) for _, p, r in _PREFIXES]
    marks = [(re.compile(p, re.A), r.replace("$1", r"\1")) for _, p, r in PLACEHOLDERS]
    return (prefixes, marks, re.compile(ERRORISH, re.I | re.A), re.compile(GPU, re.A),
            re.compile(VERSION, re.I | re.A))


@lru_cache(maxsize=1)
def _titles():
    return (re.compile(LIBRARY_WARN, re.A), re.compile(EXCEPTION, re.A), re.compile(TRACEBACK, re.A),
            re.compile(NOT_TITLE, re.A))


@lru_cache(maxsize=1)
def _level():
    return re.compile(LEVEL, re.A)


def harmless(raw: str) -> bool:
    """Whether a log line is a DEBUG, INFO or WARNING line (its level among its first words), and
    not a library's own warning (LIBRARY_WARN)."""
    found = _level().search(raw)
    return bool(found) and found.group(1) in HARMLESS_LEVELS and not _titles()[0].search(raw)


def errorish(raw: str) -> bool:
    """Whether a log line looks like an error: an ERRORISH word, or a library's warning."""
    return bool(_compiled()[2].search(raw) or _titles()[0].search(raw))


def title_rank(raw: str, line: str) -> int:
    """How much an error line says, to title the issue: 3 an exception line, 2 a library's warning,
    1 another error line, 0 never a title (a harmless level, a traceback's header or frame).
    `raw` is the line as printed, `line` its `error_line`."""
    library, exception, _, not_title = _titles()
    if harmless(raw) or not_title.search(line):
        return 0
    if exception.search(line):
        return 3
    return 2 if library.search(raw) else 1


def error_line(line: str) -> str:
    """`line` without its secrets and its log prefix, the parts that vary written as placeholders; a
    leading `#` or backtick escaped (it would end the request's code block or start a section)."""
    prefixes, marks, *_ = _compiled()
    line = redact(line[:MAX_LINE_CHARS + SECRET_MARGIN])[:MAX_LINE_CHARS]
    for pattern, replacement in prefixes:
        line = pattern.sub(replacement, line)
    for pattern, replacement in marks:
        line = pattern.sub(replacement, line)
    line = line.strip(" \t")
    return "\\" + line if line[:1] in ("#", "`") else line


@dataclass(frozen=True)
class Issue:
    title: str  # the issue's title
    text: str  # its body, in Markdown


def new_failure(log: str | Iterable[str]) -> Issue:
    """The "new failure" issue for a log (its text, or its lines as they stream): the last MAX_LINES
    different error-looking lines (a failure ends a log), in Markdown, and the title `title_rank`
    picks (see the module's docstring)."""
    _, _, _, gpu, version = _compiled()
    traceback = _titles()[2]
    lines: dict[str, bool] = {}  # insertion-ordered: line -> whether it was a harmless level's
    gpus: set[str] = set()
    versions: dict[str, str] = {}
    # The title: the last line of the best rank before the first traceback, else the first after it.
    before: dict[int, str] = {}
    after: dict[int, str] = {}
    seen_traceback = False
    for raw in (log.split("\n") if isinstance(log, str) else log):
        raw = raw.removesuffix("\n").removesuffix("\r")[:MAX_LINE_CHARS * 4]  # lines end at "\n" only
        if errorish(raw):
            line = error_line(raw)
            if line:
                lines.pop(line, None)
                lines[line] = harmless(raw)
                if len(lines) > MAX_LINES:
                    del lines[next(iter(lines))]
                rank = title_rank(raw, line)
                if rank and not seen_traceback:
                    before[rank] = line
                elif rank:
                    after.setdefault(rank, line)
            seen_traceback = seen_traceback or bool(traceback.search(raw))
        gpus.update(m.rstrip(" ") for m in gpu.findall(raw))
        for m in version.finditer(raw):
            versions[m.group(1).lower()] = m.group(2)
    gpus = sorted(gpus)
    listed = [line for line, benign in lines.items() if not benign] + [line for line, benign in lines.items() if benign]
    out = ["### Literal error lines", "",
           "Only the lines of the log that look like errors, without their log prefixes; parts that vary "
           "between runs are written as placeholders ({int}, {hex}, {size}, {path}, {pid}), and what looks like "
           "a password, token, key or e-mail address as {secret}. Nothing else of the log is included.", "",
           "```text", *(listed or ["(no error-looking line found)"]), "```", "",
           "### Environment found in the log", "",
           "- GPU: " + (", ".join(gpus) or NO_GPU),
           *[f"- {name}: {versions[name]}" for name in sorted(versions)], "",
           "### What you were running", "", "(command line, model, flags)", ""]
    best = max([*before, *after], default=0)
    title = before.get(best) or after.get(best) or UNTITLED
    return Issue(TITLE_PREFIX + title[:200], "\n".join(out))


def bounded_lines(stream: BinaryIO, limit: int = MAX_LINE_CHARS * 4) -> Iterator[str]:
    """The lines of a binary stream, decoded, each cut to its first `limit` bytes (`new_failure` reads
    no more of a line): a longer line is read on in bounded pieces up to its newline and the rest
    dropped, so a log of one 1 GiB line never is one string in memory."""
    while piece := stream.readline(limit + 1):
        if len(piece) > limit and not piece.endswith(b"\n"):
            piece = piece[:limit]
            while (rest := stream.readline(1 << 16)) and not rest.endswith(b"\n"):
                pass
        yield piece.decode("utf-8", "replace")


def from_stream(stream: BinaryIO) -> Issue:
    """`new_failure` of a log read from a binary stream, in bounded memory (`bounded_lines`)."""
    return new_failure(bounded_lines(stream))


def new_failure_text(log: str | Iterable[str]) -> str:
    """The body of `new_failure`. Only the tests call it: the reference the triage page's
    JavaScript and `kb match`'s output are compared with (tests/test_match.py, tests/test_new.py)."""
    return new_failure(log).text


def export() -> dict:
    """The rules for the triage page (same order and meaning as above)."""
    return {"max_lines": MAX_LINES, "max_line_chars": MAX_LINE_CHARS, "secret_margin": SECRET_MARGIN,
            "errorish": ERRORISH, "library_warn": LIBRARY_WARN, "exception": EXCEPTION, "traceback": TRACEBACK,
            "not_title": NOT_TITLE, "gpu": GPU, "version": VERSION, "secrets": SECRETS,
            "secret_words": secrets.WORDS, "level": LEVEL,
            "harmless_levels": list(HARMLESS_LEVELS), "untitled": UNTITLED, "title_prefix": TITLE_PREFIX,
            "no_gpu": NO_GPU,
            "prefixes": [{"name": n, "pattern": p, "replacement": r} for n, p, r in _PREFIXES],
            "placeholders": [{"name": n, "pattern": p, "replacement": r} for n, p, r in PLACEHOLDERS]}
