"""Properties, with hypothesis: the loader and linter never crash, whatever the file holds (they
report problems instead); signature-to-slug never maps two different strings to one URL and
slugs are URL-safe; text normalisation never crashes and is idempotent."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kb.records import lint, load
from kb.records.normalise import normalise
from kb.records.problems import Problem
from kb.records.rules import RULES
from kb.records.slug import MAX_WORDS_CHARS, slug

from conftest import FIXTURES

GOOD_BYTES = (FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml").read_bytes()
# KB_HYPOTHESIS_EXAMPLES=5000 for a deeper run; the default keeps the suite quick.
SETTINGS = settings(max_examples=int(os.environ.get("KB_HYPOTHESIS_EXAMPLES", "200")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
# For the tests marked xfail below: one exception, of the type the mark names, not a group.
ONE_BUG = settings(SETTINGS, report_multiple_bugs=False)

# Pieces of YAML and of log lines, so that generated input reaches past the first parse error.
YAML_PIECES = ["\n", "  ", "- ", ": ", "title: ", "signatures:\n  - text: ", "kind: exception", "{", "}", "[", "]",
               "&a ", "*a", "!!python/object:os.system ", "!!binary ", "? ", "|\n  ", ">-\n  ", "'", '"', "\\u202e",
               "#", "---\n", "...\n", "%YAML 1.1\n", "<<: ", "2026-02-30", "1e400", ".nan", "~", "\t", "\ufeff",
               "\x00", "\ud7ff", "\U0001f600"]
LOG_PIECES = ["info 12-01 10:00:00 [x] ", "INFO 12-01 10:00:00.123 [core.py:10] ", " ", "\t", "\n", "[ 1.0] ",
              "\x1b[", "\x1b[31m", "m", "error:a: ", "(EngineCore pid=12) ", "(Worker pid=1, ip=10.0.0.1) ",
              "[2026-01-01 10:00:00] ", "Dec 01 10:00:00 host kernel: ", "2026-01-01T10:00:00Z ",
              " [repeated 2x across cluster]", "torch.cuda.OutOfMemoryError", "torch.AcceleratorError",
              "/usr/lib/python3/site-packages/", "x.py:12", "line 3", "sm_120a", "compute_121", "SM120", "x"]


def _pieces(pieces: list[str], max_size: int = 12) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces) | st.text(max_size=4), max_size=max_size).map("".join)


def _check_file(raw: bytes, name: str = "fuzzed-entry.yaml") -> tuple[load.Loaded, lint.Result]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(raw)
        loaded = load.load(path)
        result = lint.check([path])
    # Either plain data and no problem, or no data and at least one problem naming its rule.
    if loaded.data is None:
        assert loaded.problems
    else:
        assert isinstance(loaded.data, dict) and loaded.problems == []
    for problem in loaded.problems + result.problems:
        assert isinstance(problem, Problem) and problem.code in RULES and problem.line >= 1
        assert len(problem.format()) < 1000
    assert len(result.cells) <= 1
    return loaded, result


@SETTINGS
@given(st.binary(max_size=2048))
def test_loader_and_linter_never_crash_on_bytes(raw):
    _check_file(raw)


@SETTINGS
@given(st.text(max_size=1024))
def test_loader_and_linter_never_crash_on_text(text):
    _check_file(text.encode("utf-8", "surrogatepass"))


@SETTINGS
@given(_pieces(YAML_PIECES, 24))
def test_loader_and_linter_never_crash_on_yaml_like_text(text):
    _check_file(text.encode("utf-8", "surrogatepass"))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(GOOD_BYTES)), st.integers(0, 8), st.binary(max_size=8)), max_size=4))
def test_loader_and_linter_never_crash_on_a_damaged_good_entry(edits):
    raw = GOOD_BYTES
    for at, cut, insert in edits:
        raw = raw[:at] + insert + raw[at + cut:]
    loaded, result = _check_file(raw, "mla-decode-fp8-kv-triton-shared-memory.yaml")
    if not result.problems:
        assert len(result.cells) == 1


# A real bug, found by the test below: the loader crashes (ValueError, KeyError, IndexError out of
# PyYAML's constructors) instead of reporting a problem when a scalar cannot be built as the
# type it is tagged or resolved as. Minimal cases:
#   title: !!int abc        ValueError: invalid literal for int() with base 10: 'abc'
#   title: !!bool maybe     KeyError: 'maybe'
#   title: !!int ""         IndexError: string index out of range
#   title: 111...1 (4301 digits, no tag)  ValueError: Exceeds the limit (4300 digits) for integer
#                           string conversion (Python's int() guard; the file is well under 256 KiB)
# The property stays as it is; the marks go once kb/records/load.py turns these into problems.
LOADER_CRASHES = pytest.mark.xfail(strict=True, raises=(ValueError, KeyError, IndexError, TypeError),
                                   reason="kb.records.load crashes on scalars its constructors reject (see above)")
SCALAR_TAGS = ["!!int ", "!!float ", "!!bool ", "!!null ", "!!timestamp ", "!!str ", ""]


@ONE_BUG
@given(st.sampled_from(SCALAR_TAGS), st.text(max_size=20) | st.integers(4295, 4400).map(lambda n: "1" * n))
@example("!!int ", "abc")
def test_loader_never_crashes_on_a_tagged_or_huge_scalar(tag, value):
    _check_file(f"title: {tag}{value}\n".encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("line", ["title: !!int abc", "title: !!bool maybe", 'title: !!int ""',
                                  "title: " + "1" * 4301])
def test_loader_never_crashes_on_the_minimal_cases(line):
    _check_file((line + "\n").encode("utf-8"))


def test_the_undamaged_good_entry_is_clean():
    _, result = _check_file(GOOD_BYTES, "mla-decode-fp8-kv-triton-shared-memory.yaml")
    assert result.problems == [] and len(result.cells) == 1


# --- slugs --------------------------------------------------------------------------------

SLUG = re.compile(r"^(?:[a-z0-9]+(?:-[a-z0-9]+)*-)?[0-9a-f]{10}$")


def _variants(text: str) -> st.SearchStrategy[str]:
    """Strings close to `text`: case, punctuation and spacing changed, characters added or cut."""
    return st.sampled_from([
        text.swapcase(), text.upper(), text + ".", text + " ", " " + text, text.replace(" ", "  "),
        text.replace(":", ""), text.replace("_", "-"), text[:-1], text + "\u0301", text.replace("e", "\u00e9"),
    ])


@SETTINGS
@given(st.text(max_size=200))
def test_slug_is_url_safe(text):
    url = slug(text)
    assert SLUG.match(url), url
    assert len(url) <= MAX_WORDS_CHARS + 11
    assert url == slug(text)  # deterministic


@SETTINGS
@given(st.text(max_size=120), st.text(max_size=120))
def test_slug_never_maps_two_strings_to_one_url(a, b):
    if a != b:
        assert slug(a) != slug(b)


@SETTINGS
@given(st.text(min_size=1, max_size=120).flatmap(lambda t: st.tuples(st.just(t), _variants(t))))
def test_slug_tells_near_identical_strings_apart(pair):
    a, b = pair
    if a != b:
        assert slug(a) != slug(b)


@SETTINGS
@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=MAX_WORDS_CHARS, max_size=400))
def test_long_strings_with_one_prefix_still_differ(text):
    # The readable words are cut at MAX_WORDS_CHARS: strings that agree up to there differ by the hash.
    assert slug(text + "a") != slug(text + "b")


# --- normalisation --------------------------------------------------------------------------

def _idempotent(text: str) -> None:
    once = normalise(text)
    assert isinstance(once, str)
    assert normalise(once) == once, (text, once, normalise(once))


@SETTINGS
@given(st.text(max_size=300))
def test_normalise_never_crashes(text):
    once = normalise(text)
    assert once == once.strip() and "  " not in once and "\n" not in once


@SETTINGS
@given(st.text(max_size=300))
def test_normalise_is_idempotent_on_arbitrary_text(text):
    _idempotent(text)


# A real bug, found by the test below: normalise() removes one log prefix per pass, and only at
# the very start of the line, so a second pass removes what the first uncovered. Minimal cases:
#   " [ 1.0] x"                      -> "[ 1.0] x"                     -> "x"   (space before a prefix)
#   "info 12-01 10:00:00 [x] info 12-01 10:00:00 [x] " -> "info 12-01 10:00:00 [x]" -> ""  (two prefixes)
#   "error:a: error:b: x"            -> "error:b: x"                   -> "x"
#   "\x1b[\x1b[mm"                   -> "\x1b[m"                       -> ""    (colour code split by one)
# The property stays as it is; the marks go once kb/records/normalise.py is fixed (strict: a fix makes
# these fail as XPASS, so the marks cannot be forgotten).
NOT_IDEMPOTENT = pytest.mark.xfail(strict=True, raises=AssertionError,
                                   reason="kb.records.normalise.normalise is not idempotent (see the comment above)")


@ONE_BUG
@given(_pieces(LOG_PIECES))
@example(" [ 1.0] x")
def test_normalise_is_idempotent_on_log_like_text(text):
    _idempotent(text)


@pytest.mark.parametrize("text", [" [ 1.0] x", "info 12-01 10:00:00 [x] info 12-01 10:00:00 [x] ",
                                  "error:a: error:b: x", "\x1b[\x1b[mm"])
def test_normalise_is_idempotent_on_the_minimal_cases(text):
    _idempotent(text)
