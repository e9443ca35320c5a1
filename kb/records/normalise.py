"""Normalisation of log lines and signatures before matching, as data shared with the browser.

Each rule is a regular expression written in the subset that Python's `re` and JavaScript's
RegExp read the same way (no lookbehind, no named groups, ASCII classes), applied in order to
the lower-cased line; `$1`, `$2` in a replacement are the first and second groups. What varies
between logs goes (log prefixes, timestamps, cluster repeat counts, install paths, source line
numbers, exception-class drift, sizes written `34.00 MiB` or `34MiB` for `34 MiB`, architecture
spellings, the `> ` of a Markdown quote); discriminating numbers such as `hardware limit: 101376`
stay as they are.
"""

from __future__ import annotations

import re
from functools import lru_cache

RULES: list[tuple[str, str, str]] = [
    ("ansi colour codes", r"\x1b\[[0-9;]*[a-z]", ""),
    ("markdown quote markers", r"^(?:>[ \t]*)+", ""),
    ("ray / engine-core process prefix", r"^\s*\([a-z0-9_]+ pid=\d+(?:, ip=[0-9a-f.:]+)?\)\s*", ""),
    ("vllm level and time prefix", r"^(?:debug|info|warning|warn|error|critical) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[^\]]*\]\s*", ""),
    ("sglang time prefix", r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\]\s*", ""),
    ("dmesg timestamp", r"^\[\s*\d+\.\d+\]\s*", ""),
    ("journal prefix", r"^[a-z]{3} [ \d]\d \d\d:\d\d:\d\d \S+ [a-z0-9_.\-\[\]]+:\s*", ""),
    ("iso timestamp", r"^\d{4}-\d\d-\d\d[t ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:z|[+-]\d\d:?\d\d)?\s*", ""),
    ("python logging level", r"^(?:debug|info|warning|error|critical):[a-z0-9_.]*:\s*", ""),
    ("ray repeat count", r"\[repeated \d+x across cluster\]", ""),
    ("out-of-memory class", r"\btorch\.cuda\.outofmemoryerror\b", "torch.outofmemoryerror"),
    ("accelerator error class", r"\btorch\.acceleratorerror\b", "runtimeerror"),
    ("tvm error class", r"\btvm\.error\.internalerror\b", "runtimeerror"),
    ("install path", r"[^\s'\"(]{0,256}/(?:site|dist)-packages/", "pkgs/"),
    ("source line number", r"(\.(?:py|cu|cuh|cc|cpp|h|hpp)):\d+", "$1:n"),
    ("traceback line number", r"\bline \d+\b", "line n"),
    ("size written with zero decimals or no space", r"\b([0-9]+)(?:\.0+)? ?([kmgt]i?b)\b", "$1 $2"),
    ("architecture spelling", r"\b(?:sm|compute)_?(1[0-2][0-9])[af]?\b", "sm_$1"),
    ("whitespace", r"\s+", " "),
]


# The rules above that remove what starts a line (a quote marker, a log prefix): what
# kb.triage.wrapped compares to tell a wrapped line's continuation from a new log record.
PREFIXES = ("markdown quote markers", "ray / engine-core process prefix", "vllm level and time prefix",
            "sglang time prefix", "dmesg timestamp", "journal prefix", "iso timestamp", "python logging level")

# Words the rules above write in place of others: a raw line may not contain them, so the
# matcher's prefilter never uses them as anchors.
PRODUCED_WORDS = re.compile(r"^(?:runtimeerror|pkgs|n|sm_\d+)$")


@lru_cache(maxsize=1)
def _compiled() -> list[tuple[re.Pattern, str]]:
    return [(re.compile(pattern), re.sub(r"\$([0-9])", r"\\\1", replacement)) for _, pattern, replacement in RULES]


MAX_PASSES = 8


def normalise(text: str) -> str:
    """The comparable form of a line: lower case, variable parts removed or made canonical.

    The rules run again until the line stops changing (a prefix may hide another), so
    normalising a normalised line changes nothing."""
    line = text.lower()
    for _ in range(MAX_PASSES):
        before = line
        for pattern, replacement in _compiled():
            line = pattern.sub(replacement, line)
        line = line.strip()
        if line == before:
            break
    return line


def export() -> list[dict]:
    """The rules for the browser (`[{name, pattern, replacement}]`, replacement in `$1` form)."""
    return [{"name": name, "pattern": pattern, "replacement": replacement} for name, pattern, replacement in RULES]


