"""`kb match`'s block scan finds exactly what a plain reading of every line finds.

The scan (kb.triage.match.Matcher.scan) reads big blocks, lower-cases them whole, looks for one word
per rule with one automaton, changes those words when they bring only noise, and decodes and
normalises only the lines they find. The reference below does none of that: it reads the log line
by line and asks every rule of every line what `kb match` and the triage page promise. A rule
shows in a line when its anchor is in the line's ASCII-lowered bytes, every one of its `words` is
in the line's lower case, and its pattern matches the normalised line (for a line longer than
2 * WINDOW characters: a window of WINDOW characters on each side of the first place of each such
rule's anchor). It shows in two or three lines read as one by the rules of kb.triage.wrapped,
asked here of every run of lines and every rule whose anchor one of them holds. Random logs are
built from signature texts, pieces of them, near-misses (one word changed or cut, a letter
doubled), case changes, log prefixes, ANSI codes, invalid bytes, the two non-ASCII characters
whose lower case is ASCII, serving noise, and signature texts wrapped over lines (broken inside a
word or at a space, quoted, with the log prefix repeated or not).
"""

from __future__ import annotations

import contextlib
import functools
import io
import random
import re
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from kb.records import lint
from kb.records.normalise import normalise
from kb.triage import match, prefilter, wrapped
from kb.triage import rules as triage_rules

# Small enough that a few kilobytes of log cross many reads, blocks and automata, and that a word
# is weighed again after each line it brings that no rule confirms.
TINY = {"CHUNK": 64, "BLOCK": 16, "WASTE": 1, "PACKED": 5}


@functools.lru_cache(maxsize=1)
def live_rules() -> list[triage_rules.SignatureRule]:
    return triage_rules.rules(lint.check([ROOT / "kb" / "entries"]).cells)


@pytest.fixture(scope="module")
def rules() -> list[triage_rules.SignatureRule]:
    return live_rules()


@pytest.fixture(autouse=True, scope="module")
def _every_rule_looked_for_wrapped():
    """The reference looks for every rule over every run of lines; the scan's bound on the rules
    looked for wrapped per line (wrapped.RULES, which keeps crafted logs cheap: tests/test_hostile_logs.py)
    is lifted here, so that the two must agree on everything else."""
    with mock.patch.object(wrapped, "RULES", 10**9):
        yield


def reference(rule_list: list[triage_rules.SignatureRule], log: bytes) -> list[tuple]:
    """(entry, score, lines, texts, signatures) of each cell, as the scan reports it, by the book."""
    ordered = sorted((r for r in rule_list if r.anchor), key=lambda r: r.anchor)  # stable: list order within
    hits: dict[str, match.Hit] = {}
    lines = log.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # what follows a final line end is no line
    for number, raw in enumerate(lines, 1):
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        lower, raw_lower = line.lower(), raw.lower()
        candidates = [r for r in ordered if r.anchor.encode() in raw_lower and all(w in lower for w in r.words)]
        if len(line) <= 2 * match.WINDOW:
            texts = [normalise(line)]
        else:
            starts = sorted({lower.find(r.anchor) for r in candidates} - {-1})
            texts = [normalise(line[max(0, p - match.WINDOW): p + match.WINDOW]) for p in starts]
        for rule in candidates:
            if any(re.search(rule.source, text) for text in texts):
                _add(hits, rule, {number: line})
    # Every run of two or three lines, for every rule whose anchor one of them holds.
    texts = [raw.decode("utf-8", errors="replace").rstrip("\r") for raw in lines]
    every = wrapped.Lines(texts)
    for a in range(len(lines)):
        for size in range(2, wrapped.LINES + 1):
            held = {r.anchor for r in ordered if any(r.anchor.encode() in lines[i].lower() for i in range(a, min(a + size, len(lines))))}
            for key, rule in enumerate(ordered):
                if rule.anchor in held and every.shows(wrapped.ScanRule(key, rule.anchor, triage_rules._options(rule), rule.words, rule.source, rule.edges, rule.signature), a, a + size - 1):
                    _add(hits, rule, {i + 1: texts[i] for i in range(a, a + size)})
    for hit in hits.values():
        hit.lines.sort()
    return _shown(sorted(hits.values(), key=lambda h: (-h.score, h.entry)))


def _add(hits: dict[str, match.Hit], rule: triage_rules.SignatureRule, texts: dict[int, str]) -> None:
    hit = hits.setdefault(rule.entry, match.Hit(rule.entry, rule.url, rule.title))
    hit.signatures.setdefault(rule.signature, rule.weight)
    hit.found.setdefault(rule.signature, set()).update(texts)
    hit.score = match.signature_score(hit.signatures, hit.found)
    for number, text in texts.items():
        if number not in hit.texts:
            hit.lines.append(number)
            hit.texts[number] = text


def _shown(hits: list[match.Hit]) -> list[tuple]:
    """What a scan reports of each cell; its signatures as a set (the order they were found in
    depends on which line the scan found a wrapped run from)."""
    return [(h.entry, h.score, h.lines, h.texts, sorted(h.signatures.items())) for h in hits]


def sizes(**constants) -> contextlib.ExitStack:
    """Some of the scan's sizes changed for the while, each in the module that reads it: the
    scanner's (kb.triage.match) or the prefilter's (kb.triage.prefilter)."""
    unknown = [name for name in constants if not hasattr(match, name) and not hasattr(prefilter, name)]
    assert not unknown, f"no scan size is named {unknown}"
    stack = contextlib.ExitStack()
    for module in (match, prefilter):
        mine = {name: value for name, value in constants.items() if hasattr(module, name)}
        if mine:
            stack.enter_context(mock.patch.multiple(module, **mine))
    return stack


def scanned(rule_list: list[triage_rules.SignatureRule], log: bytes, **constants) -> list[tuple]:
    """What the scan reports, with some of its sizes changed for the while (`sizes`)."""
    with sizes(**constants):
        return _shown(match.Matcher(rule_list).scan(io.BytesIO(log)))


# --- random logs -----------------------------------------------------------------------------

NOISE = [
    "INFO 01-28 06:36:40 [core.py:100] step 12345 tokens=512 throughput=1234.5 tok/s",
    "[12.5] NVRM: GPU at PCI:0000:01:00: GPU-1234 temperature 71C",
    "INFO 05-01 10:00:00 [gpu_model_runner.py:1] Using FlashInfer attention backend; available KV cache memory: 12 GiB",
    "WARNING 05-01 10:00:00 [scheduler.py:1] Sequence group 7 is preempted: invalid state, allocated 3 blocks",
    "SamplingParams(n=1, temperature=0.7, top_p=1.0) different outputs requested",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "ptxas info    : Used 128 registers, 384 bytes cmem[0]",
    "",
]
PREFIXES = ["", "(EngineCore_DP0 pid=120) ERROR 01-28 06:36:45 [core.py:946] ", "[2026-04-06 10:00:00 TP0] ",
            "[  12.500000] ", "ERROR:root: ", "Jan 28 06:36:45 host vllm[120]: "]
ODD = ["\x1b[31m", "\x1b[0m", "\r", "\u0130", "\u212a", "\t", "  ", "\ufffd", "é"]


def _near_miss(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    i = rng.randrange(len(words))
    how = rng.randrange(4)
    if how == 0:
        words[i] = words[i][:-1]
    elif how == 1:
        words[i] = words[i] + words[i][-1:]
    elif how == 2:
        del words[i]
    else:
        words[i] = "".join(c.replace("k", "\u212a").replace("K", "\u212a").replace("i", "\u0130") for c in words[i])
    return " ".join(words)


def _case(text: str, rng: random.Random) -> str:
    how = rng.randrange(4)
    if how == 0:
        return text.upper()
    if how == 1:
        return text.lower()
    if how == 2:
        return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)
    return text


def _line(texts: list[str], rng: random.Random) -> bytes:
    parts = [rng.choice(PREFIXES)]
    for _ in range(rng.randrange(1, 4)):
        kind = rng.randrange(7)
        text = rng.choice(texts)
        if kind == 0:
            parts.append(text)
        elif kind == 1:
            words = text.split(" ")
            a = rng.randrange(len(words))
            parts.append(" ".join(words[a: a + rng.randrange(1, 4)]))
        elif kind == 2:
            parts.append(_near_miss(text, rng))
        elif kind == 3:
            parts.append(_case(text, rng))
        elif kind == 4:
            parts.append(rng.choice(NOISE))
        elif kind == 5:
            parts.append(rng.choice(ODD))
        else:
            parts.append(" " + "".join(rng.choice("0123456789abcdefx_/.:") for _ in range(rng.randrange(1, 12))) + " ")
    if rng.random() < 0.03:  # longer than 2 * WINDOW: matched in windows
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(NOISE) * (2 * match.WINDOW // 40))
    data = "".join(parts).encode("utf-8")
    if rng.random() < 0.05:
        data = data.replace(b" ", b"\xff", 1)  # invalid UTF-8
    return data


def _wrapped(text: str, rng: random.Random) -> list[bytes]:
    """A text broken over two or three lines, inside a word or at a space, quoted or with its log
    prefix repeated on each line, or not; now and then with a blank line or a fence between."""
    breaks = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randrange(1, 3))))
    pieces = [text[a:b] for a, b in zip([0] + breaks, breaks + [len(text)])]
    if rng.random() < 0.5:
        pieces = [piece.strip() for piece in pieces]
    prefix = rng.choice(PREFIXES)
    how = rng.randrange(4)
    out = [prefix + pieces[0]] + [(prefix if how == 1 else "> " if how == 2 else "   " if how == 3 else "") + piece
                                  for piece in pieces[1:]]
    if how == 2:
        out[0] = "> " + out[0]
    if rng.random() < 0.1:
        out.insert(1, rng.choice(["", "```", rng.choice(NOISE)]))
    return [line.encode("utf-8") for line in out]


def random_log(rule_list: list[triage_rules.SignatureRule], seed: int, lines: int) -> bytes:
    rng = random.Random(seed)
    texts = sorted({r.signature for r in rule_list}) + NOISE[:-1]
    out: list[bytes] = []
    for _ in range(lines):
        out += _wrapped(rng.choice(texts), rng) if rng.random() < 0.15 else [_line(texts, rng)]
    return b"\n".join(out) + (b"\n" if rng.random() < 0.5 else b"")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), lines=st.integers(0, 60))
def test_block_scan_agrees_with_reading_every_line(seed, lines):
    """At the real sizes (a log is one block) and at tiny ones (each line crosses blocks, reads
    and automata, and words change all the time)."""
    rules = live_rules()
    log = random_log(rules, seed, lines)
    expected = reference(rules, log)
    assert scanned(rules, log) == expected
    assert scanned(rules, log, **TINY) == expected


@pytest.mark.slow
def test_block_scan_agrees_on_a_log_of_many_blocks(rules):
    """Megabytes: many reads and blocks at the real sizes, and words traded along the way."""
    rng = random.Random(15)
    noise = "\n".join(rng.choice(NOISE) for _ in range(3000)) + "\n"
    log = (noise * 4).encode() + random_log(rules, 16, 400) + b"\n" + (noise * 6).encode() + random_log(rules, 17, 400)
    assert len(log) > 4 * match.BLOCK
    expected = reference(rules, log)
    assert len(expected) >= 5
    assert scanned(rules, log) == expected
    assert scanned(rules, log, CHUNK=match.BLOCK + 1000, WASTE=8) == expected


@pytest.mark.slow
@pytest.mark.parametrize("constants", [{}, TINY], ids=["real", "tiny"])
def test_unicode_lower_case_letters_find_their_rule(rules, constants):
    """A line whose words are there only in Unicode's lower case (here `kernel` spelt with a
    KELVIN SIGN) shows its rule also once the scan has given up the rule's anchor and looks for
    `kernel` instead."""
    log = ("available KV cache memory: 12 GiB\n" * 300 + "execution time 3 s\n" * 300 +
           "RuntimeError: CUDA error: no \u212aernel image is available for execution on the device\n"
           "\u0130nvalid \u212a \u0130\n").encode()
    expected = reference(rules, log)
    assert any(601 in e[2] for e in expected)
    assert scanned(rules, log, **constants) == expected


@pytest.mark.slow
def test_a_noisy_word_is_given_up(rules):
    """Thousands of sensor lines holding `temperature` (the anchor of a symptom) cost the scan
    WASTE confirmations, not one per line: the symptom's lines are then looked for by `different`,
    and its line is still found."""
    line = b"[12.5] NVRM: GPU at PCI:0000:01:00: GPU-1234 temperature 71C\n"
    log = line * 3000 + b"different outputs at temperature=0\n" + line * 100
    matcher = match.Matcher(rules)
    calls = []
    confirm = matcher._confirm
    with mock.patch.object(matcher, "_confirm", lambda text, found: calls.append(text) or confirm(text, found)):
        hits = matcher.scan(io.BytesIO(log))
    assert [(h.entry, h.lines) for h in hits] == [(e[0], e[2]) for e in reference(rules, log)]
    assert any(3001 in h.lines for h in hits)
    assert len(calls) <= prefilter.WASTE + 1


def test_scan_reads_in_bounded_pieces_from_a_stream_without_readinto(rules):
    """A stream that has only `read`, and returns a few bytes at a time: the same answer."""
    class Plain:
        def __init__(self, data: bytes):
            self.data, self.at = data, 0

        def read(self, n: int) -> bytes:
            n = min(n, 7)  # short reads
            piece = self.data[self.at: self.at + n]
            self.at += len(piece)
            return piece

    log = random_log(rules, 3, 50)
    with sizes(**TINY):
        got = _shown(match.Matcher(rules).scan(Plain(log)))
    assert got == reference(rules, log)
