"""A new-cell request made from a log that no cell matches: the lines that look like errors, with
what varies between runs written as the placeholders of a signature's `match` pattern, and the GPU
and versions the log names. Nothing else of the log goes in.

The rules are data in the subset of regular expressions that Python and JavaScript read the same
way; `kb match` uses them here and the triage page gets them in `triage/patterns.json`, so both
write the same request from the same log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from kb.records.normalise import RULES as NORMALISE

MAX_LINES = 15
MAX_LINE_CHARS = 400

ERRORISH = r"(error|exception|failed|fatal|xid|assert|traceback|out of memory|illegal|unsupported|not supported)"
GPU = r"(NVIDIA [A-Za-z0-9][A-Za-z0-9 ]*?(?:Blackwell|GB10|\d{4}[A-Za-z ]*)|RTX PRO \d{4}[A-Za-z ]*|GB10|DGX Spark)"
VERSION = (r"\b(vllm|sglang|flashinfer(?:-python)?|torch|triton|cudnn|cuda|driver|tensorrt[_-]llm)\b"
           r"(?:[\w ]{0,24}?\bversion\b)?[\s=:_-]*v?(\d+\.\d+[\w.+-]*)")

# Log prefixes go first (the normalisation's own rules, applied case-insensitively to the line as
# printed); then what varies is marked with the placeholders of the pattern grammar (KB044).
_PREFIX_RULES = {"ansi colour codes", "ray / engine-core process prefix", "vllm level and time prefix",
                 "sglang time prefix", "dmesg timestamp", "journal prefix", "iso timestamp", "python logging level",
                 "ray repeat count"}
_PREFIXES = [rule for rule in NORMALISE if rule[0] in _PREFIX_RULES]
PLACEHOLDERS: list[tuple[str, str, str]] = [
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
    marks = [(re.compile(p, re.A), r) for _, p, r in PLACEHOLDERS]
    return (prefixes, marks, re.compile(ERRORISH, re.I | re.A), re.compile(GPU, re.A),
            re.compile(VERSION, re.I | re.A))


def error_line(line: str) -> str:
    """`line` without its log prefix, the parts that vary written as placeholders."""
    prefixes, marks, *_ = _compiled()
    line = line[:MAX_LINE_CHARS]
    for pattern, replacement in prefixes:
        line = pattern.sub(replacement, line)
    for pattern, replacement in marks:
        line = pattern.sub(replacement, line)
    return line.strip(" \t")


def new_cell_text(log: str | Iterable[str]) -> str:
    """The body of a "new cell" issue for a log (its text, or its lines as they stream), in
    Markdown: the last MAX_LINES different error-looking lines (a failure ends a log)."""
    _, _, errorish, gpu, version = _compiled()
    lines: dict[str, None] = {}  # insertion-ordered set
    gpus: set[str] = set()
    versions: dict[str, str] = {}
    for raw in (log.split("\n") if isinstance(log, str) else log):
        raw = raw.removesuffix("\n").removesuffix("\r")[:MAX_LINE_CHARS * 4]  # lines end at "\n" only
        if errorish.search(raw):
            line = error_line(raw)
            if line:
                lines.pop(line, None)
                lines[line] = None
                if len(lines) > MAX_LINES:
                    del lines[next(iter(lines))]
        gpus.update(m.rstrip(" ") for m in gpu.findall(raw))
        for m in version.finditer(raw):
            versions[m.group(1).lower()] = m.group(2)
    gpus = sorted(gpus)
    out = ["### Literal error lines", "",
           "Only the lines of the log that look like errors, without their log prefixes; parts that vary "
           "between runs are written as placeholders ({int}, {hex}, {size}, {path}, {pid}). Nothing else of "
           "the log is included.", "", "```text", *(lines or ["(no error-looking line found)"]), "```", "",
           "### Environment found in the log", "",
           "- GPU: " + (", ".join(gpus) or "not found in the log"),
           *[f"- {name}: {versions[name]}" for name in sorted(versions)], "",
           "### What you were running", "", "(command line, model, flags)", ""]
    return "\n".join(out)


def export() -> dict:
    """The rules for the triage page (same order and meaning as above)."""
    return {"max_lines": MAX_LINES, "max_line_chars": MAX_LINE_CHARS, "errorish": ERRORISH, "gpu": GPU,
            "version": VERSION,
            "prefixes": [{"name": n, "pattern": p, "replacement": r} for n, p, r in _PREFIXES],
            "placeholders": [{"name": n, "pattern": p, "replacement": r} for n, p, r in PLACEHOLDERS]}
