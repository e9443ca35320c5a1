"""Secret shapes: what a log line or a value may hold that must not leave the reader's machine (a
password in a URL, a credentials header, a `--token X` flag, a `*_TOKEN=` value or a quoted key in a
dict or JSON, a bearer token, an API key by its known prefix, an e-mail address, a long base64 or hex
run). One list, used by the new-failure request (kb.triage.request, and the triage page through the
request's export) and by `kb doctor` for the environment values it prints.

The rules are data in the subset of regular expressions that Python and JavaScript read the same
way."""

from __future__ import annotations

import re
from functools import lru_cache

# Secrets go before anything else, in this order. Every quantifier that could scan far is bounded or
# starts at a fixed word, so each rule is linear in the line. `mixed`: the match is replaced only
# when it holds a digit and a letter (a long identifier is no secret; a token or digest has both)
# and is not a run of plain words (`plain_words`: a file path or a snake_case name).
SECRET = "{secret}"
SECRETS: list[dict] = [
    {"name": "password in a URL", "pattern": r"([a-z][a-z0-9+.-]{0,20}://)[^\s/@]{1,200}@", "replacement": "$1{secret}@",
     "ignore_case": True},
    # A header that carries credentials: its whole value goes (a cookie holds several secrets).
    {"name": "credentials header", "pattern": r"\b((?:proxy-)?authorization|(?:set-)?cookie)([\"']?\s*:\s*)[^\r\n]{1,2000}",
     "replacement": "$1$2{secret}", "ignore_case": True},
    {"name": "bearer or basic credentials", "pattern": r"\b(bearer|basic)(\s+)[A-Za-z0-9._~+/-]{1,2000}=*",
     "replacement": "$1$2{secret}", "ignore_case": True},
    # A command-line flag and its value (`--api-key X`): the value is the next word, unless that is a flag.
    {"name": "secret flag", "pattern": r"(--?[A-Za-z0-9_.-]{0,64}(?:token|key|password|passwd|passphrase|secret|pass|pwd"
     r"|credentials?|auth|cookie))(\s+|=)(?!-)(\"[^\"]{0,500}\"|'[^']{0,500}'|[^\s,;'\"]{1,500})",
     "replacement": "$1$2{secret}", "ignore_case": True},
    # NAME=value, NAME: value, and the quoted keys of a Python dict or JSON ('api_key': 'x', "password": "x").
    {"name": "secret variable", "pattern": r"\b([A-Za-z0-9_.-]{0,64}(?:token|key|password|passwd|passphrase|secret|pass|pwd"
     r"|credentials?|auth|cookie))([\"']?\s*[=:]\s*)(\"[^\"]{0,500}\"|'[^']{0,500}'|[^\s,;'\"]{1,500})",
     "replacement": "$1$2{secret}", "ignore_case": True},
    {"name": "known token prefix", "pattern": r"\b(?:hf_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|sk-|xox[abprs]-|glpat-|AKIA)"
     r"[A-Za-z0-9_-]{16,500}", "replacement": "{secret}", "ignore_case": False},
    {"name": "e-mail address", "pattern": r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}",
     "replacement": "{secret}", "ignore_case": False},
    {"name": "long base64 or hex run", "pattern": r"[A-Za-z0-9+/_-]{32,2000}={0,2}", "replacement": "{secret}",
     "ignore_case": False, "mixed": True},
]


@lru_cache(maxsize=1)
def compiled() -> list[tuple[re.Pattern, object]]:
    """(pattern, replacement) of each rule, in order, for `re.sub`."""
    rules = []
    for rule in SECRETS:
        pattern = re.compile(rule["pattern"], re.A | (re.I if rule["ignore_case"] else 0))
        replacement = re.sub(r"\$([0-9])", r"\\\1", rule["replacement"])
        if rule.get("mixed"):
            rules.append((pattern, lambda m, r=rule["replacement"]: r if secret_run(m.group(0)) else m.group(0)))
        else:
            rules.append((pattern, replacement))
    return rules


# A run of plain words: pieces between these separators, one at least a `/` or `_`, each a word
# in one case (`pynccl`, `python3`, `Projects`, `SM100`). A token's pieces mix upper and lower
# case: a random base64 run of 32 characters passes with odds under 1 in 10^7 (36/64 per
# character). The path `python3.12/dist-packages/vllm/.../device_communicators/pynccl` is one.
WORDS = {"separators": r"[/_.-]", "joined": r"[/_]", "piece": r"^(?:[A-Z]?[a-z0-9]*|[A-Z0-9]*)$"}


def plain_words(text: str) -> bool:
    """Whether a long run is words joined by `/`, `_`, `.` or `-` (WORDS): a file path or a
    snake_case name, never a secret. The twin is kb-request.js's `plainWords`."""
    if not re.search(WORDS["joined"], text):
        return False
    piece = re.compile(WORDS["piece"])
    return all(piece.search(part) for part in re.split(WORDS["separators"], text))


def secret_run(text: str) -> bool:
    """Whether a long base64 or hex run is a secret: it mixes digits and letters (`mixed_run`) and
    is not plain words (`plain_words`)."""
    return mixed_run(text) and not plain_words(text)


def mixed_run(text: str) -> bool:
    """Whether `text` holds a digit and a letter: a token or a digest does, a word or a number does not."""
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def redact(line: str) -> str:
    """`line` with every secret shape (SECRETS) written `{secret}`."""
    for pattern, replacement in compiled():
        line = pattern.sub(replacement, line)
    return line
