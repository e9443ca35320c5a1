"""The one-line cause a cell's answer card shows: why the failure happens, not how it shows.

Every record says it in its own `cause:`, one sentence in plain words (the linter, KB080, requires
it: the mechanism's first sentence, which the card showed before, was code trivia on 13 entries,
ux-review 2026-12-05 S2-5). A record that still lacks one shows the mechanism's first sentence, as
plain text, until it is fixed. KB080 checks that the cause names the mechanism in at most MAX_WORDS
words, names no file path or function (`code_names`), and does not repeat the summary's first
sentence (the symptom, which "What it is" prints). Data only: the renderer and the linter call
these functions, nothing here renders HTML.
"""

from __future__ import annotations

import re
from functools import cache

# The end of a sentence: ., ! or ? then a space and a capital, not after "e.g", "i.e", "vs" or "etc".
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\betc)[.!?](?=\s+[A-Z])")
_WORD = re.compile(r"[a-z0-9]+(?:[._'][a-z0-9]+)*")

# A cause longer than this is a paragraph, not a line (KB080): a phone shows 25 words in about
# four lines of the card (the review's bar, S2-5).
MAX_WORDS = 25
# ... and in characters: `a.b.c` and `a_b_c` are one word, so words alone let a 10,000-character
# run through (attack review). The 71 cells of 2026-12-05 show causes of at most 219 characters.
MAX_CHARS = 300
# A cause repeats the summary when at least this share of its words (distinct, lower case) are
# words of the summary's first sentence (KB080). Measured on the 71 cells of 2026-12-05: the causes
# shown score a median of 0.37 and at most 0.69 (a summary whose first sentence already gives the
# cause after a colon); the summary's own first sentence, the card's old Cause line, scores 1.0,
# and so does a shortened copy of it (the rule's bad example).
MAX_OVERLAP = 0.7


def first_sentence(text: str) -> str:
    """The first sentence of `text` (all of it when no sentence end is found)."""
    found = _SENTENCE_END.search(text)
    return text[: found.end()] if found else text


@cache
def _parser():
    # late, as in kb.records.schema: importing the linter loads no Markdown parser (tests/test_layout.py)
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def plain(markdown: str) -> str:
    """The words of the first paragraph of Markdown `markdown`, without markup, on one line."""
    tokens = _parser().parse(markdown)
    for token in tokens:
        if token.type == "inline":
            parts = []
            for child in token.children or []:
                if child.type in ("text", "code_inline"):
                    parts.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    parts.append(" ")
            return re.sub(r"\s+", " ", "".join(parts)).strip()
    return re.sub(r"\s+", " ", markdown).strip()


def derived(entry) -> str:
    """The mechanism's first sentence, as plain text."""
    return first_sentence(plain(entry.mechanism))


def shown(entry) -> str:
    """The cause the card shows: the record's `cause:`, else the mechanism's first sentence."""
    return entry.cause or derived(entry)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def overlap(cause: str, summary: str) -> float:
    """The share of the cause's distinct words that the summary's first sentence also holds."""
    mine = set(words(cause))
    if not mine:
        return 1.0
    return len(mine & set(words(first_sentence(summary)))) / len(mine)


# Code a reader of the card need not know: a file path (`vllm/v1/attention/ops/x.py`, `target_info.py`),
# a call (`has_tma_gather()`, `AttentionOp::initialize()`) or an identifier made of words joined by
# underscores or with a capital inside (`_decode_grouped_att_m_fwd`, `getMMAVersionSafe`).
# Upper-case names with underscores (`BLOCK_DMODEL`, `VLLM_USE_V1`) are settings a reader may set,
# and versions and sizes (`0.6.18`, `sm_120`, `12.0`) are not code; they pass.
_CODE_NAMES = re.compile(
    r"[\w.-]*[a-z][\w-]*/[\w./-]+"  # a path with a slash
    r"|\b[\w-]+\.(?:py|pyx|cu|cuh|cpp|cc|c|h|hpp|cmake|txt|yaml|json|so)\b"  # a file name
    r"|\b[A-Za-z_][\w.]*(?:::[\w]+)*\(\)"  # a call: name() or Class::method()
    r"|\b\w+::\w+"  # a C++ scope
    r"|(?<![\w.])_*[a-z][a-z0-9]*(?:_[a-z0-9]+){2,}\b|(?<![\w.])_[a-z]\w*"  # snake_case of 3+ parts, or _private
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*\b"  # camelCase: getMMAVersionSafe
    r"|\b[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*){2,}\b"  # a dotted attribute: torch.cuda.is_available
)
# Library names written in camelCase or as a file name are names a reader searches for, not code.
PRODUCT_NAMES = frozenset({"cuBLASLt", "cuSPARSELt", "nvFuser", "llama.cpp", "whisper.cpp"})


def code_names(text: str) -> list[str]:
    """The file paths and function or identifier names in `text`, in order (KB080 refuses them)."""
    return [m.group() for m in _CODE_NAMES.finditer(text) if m.group() not in PRODUCT_NAMES]
