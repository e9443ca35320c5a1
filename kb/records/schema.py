"""Stage 2, validate: the record of one cell, as pydantic models.

A cell lives in `kb/entries/<id>.yaml`; its id is the file stem and is never written inside.
Field rules that a single value can break carry their stable rule code (`KB0xx`, see
`kb.records.rules`) as the pydantic error type, so the linter reports them with file, line and field.
Rules across records (unknown related ids, shared signatures) live in `kb.records.lint`.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, Union

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from kb.records import facets, patterns
from kb.records.reproduction import Reproduction
from kb.records.scan import Scan

# Whole-value patterns. In Python's `re`, `$` also matches before a trailing newline, so every
# `re` pattern here is applied with `fullmatch` and written without `^...$`; digits are spelled
# [0-9] because `\d` also matches other scripts' digits. The three `*_PATTERN`s below keep their
# anchors: they are pydantic `pattern=` constraints, run as Rust regexes, where `$` is the very
# end (tests/test_hostile_entries.py pins that); `kb.records.lint` applies ID_PATTERN with fullmatch.
ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
PACKAGE_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
COMMIT_PATTERN = r"^[0-9a-f]{7,40}$"

# Where an upstream link may point: public trackers, by kind of link.
_GITHUB = r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
LINK_FORMS = {
    "issue": re.compile(_GITHUB + r"/issues/[0-9]+(#[A-Za-z0-9_-]+)?"),
    "pr": re.compile(_GITHUB + r"/pull/[0-9]+(#[A-Za-z0-9_-]+)?"),
    "commit": re.compile(_GITHUB + r"/commit/[0-9a-f]{7,40}"),
    "release": re.compile(_GITHUB + r"/releases/tag/[A-Za-z0-9_.+-]+"),
    "doc": re.compile(
        r"https://(docs\.nvidia\.com|docs\.vllm\.ai|docs\.flashinfer\.ai|docs\.sglang\.ai|pytorch\.org"
        r"|docs\.pytorch\.org|triton-lang\.org|nvidia\.github\.io|developer\.nvidia\.com"
        r"|forums\.developer\.nvidia\.com|github\.com)/[^\s<>\"']*"
    ),
}
ANY_SOURCE = re.compile("|".join(f"(?:{form.pattern})" for form in LINK_FORMS.values()))

# What a page can draw (kb.site.charts) and a feed can date. Beyond 1e15 an int is no longer exact as
# a float, and a 400-digit one is no float at all; below 1e-9 tick labels run out of digits.
# Before 2000 there were no CUDA-era tools to report on, and dates before 1970 break the build's
# timestamps (SOURCE_DATE_EPOCH, sitemap gzip).
MAX_NUMBER = 10 ** 15
MIN_NUMBER = 1e-9
FIRST_DATE = dt.date(2000, 1, 1)

_BIDI = {"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
         "\u200e", "\u200f", "\u061c"}

# Characters that draw as nothing or as a blank though Unicode files them as letters, marks or
# symbols (so category alone misses them): the Default_Ignorable_Code_Point ranges of
# DerivedCoreProperties.txt that are not Cf or Cn (the combining grapheme joiner, the Hangul fillers,
# the Khmer inherent vowels, the Mongolian and other variation selectors), the blank Braille
# pattern and the object replacement character. Each can make a copy of a text look the same as
# the original while differing from it.
_INVISIBLE_RANGES = [(0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2800, 0x2800),
                     (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFFC, 0xFFFC), (0xE0000, 0xE0FFF)]
_INVISIBLE = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _INVISIBLE_RANGES) + "]")
NO_BREAK_SPACE = "\u00a0"


def _fail(code: str, message: str, **ctx):
    raise PydanticCustomError(code, message, ctx)


def _non_character(cp: int) -> bool:
    """U+FDD0-U+FDEF and the last two code points of every plane (U+FFFE, U+FFFF, U+1FFFE ...)."""
    return 0xFDD0 <= cp <= 0xFDEF or cp & 0xFFFE == 0xFFFE


def _named(ch: str) -> str:
    """`U+200B ZERO WIDTH SPACE`: a code point as a message names it."""
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def _no_controls(value: str, allow_newlines: bool, prose: bool = False) -> str:
    """KB031, for every string a record holds (text, prose, literals, links, versions): no control
    character, bidirectional control, line or paragraph separator, non-character or lone surrogate,
    and nothing a reader cannot see: no format character (zero-width space, joiners, the BOM, soft
    hyphen, tag characters), private-use or unassigned code point, space other than U+0020 (prose,
    `prose=True`, may keep the no-break space) or other invisible character (`_INVISIBLE`)."""
    # Every refused character but those of _INVISIBLE is non-printable: the common case costs a few calls.
    plain = value.replace("\n", "").replace("\t", "") if allow_newlines else value
    if prose and NO_BREAK_SPACE in plain:
        plain = plain.replace(NO_BREAK_SPACE, " ")
    if plain.isprintable() and not _INVISIBLE.search(plain):
        return value
    for ch in value:
        cp = ord(ch)
        if ch in _BIDI:
            _fail("KB031", "must not contain bidirectional control character U+{cp}; type the text plainly",
                  cp=f"{cp:04X}")
        category = unicodedata.category(ch)
        if category == "Cc" and not (allow_newlines and ch in "\n\t"):
            _fail("KB031", "must not contain control character U+{cp}", cp=f"{cp:04X}")
        if category in ("Zl", "Zp"):
            _fail("KB031", "must not contain line or paragraph separator U+{cp}; feeds and scripts read it as a "
                  "line break (write a plain line break in prose)", cp=f"{cp:04X}")
        if category == "Cs":
            _fail("KB031", "must not contain lone surrogate U+{cp}: it is not a character", cp=f"{cp:04X}")
        if _non_character(cp):
            _fail("KB031", "must not contain non-character U+{cp}: it is not text, and it breaks the feed's XML",
                  cp=f"{cp:04X}")
        if category == "Cf":
            _fail("KB031", "must not contain invisible format character {char}: it shows as nothing, so a text "
                  "holding it looks like one without it; delete it (retype the characters around it)",
                  char=_named(ch))
        if category == "Co":
            _fail("KB031", "must not contain private-use character U+{cp}: no two fonts show it alike; delete it "
                  "or write the character it stands for", cp=f"{cp:04X}")
        if category == "Cn":
            _fail("KB031", "must not contain U+{cp}, unassigned in Unicode {version}: nothing can show it; delete it",
                  cp=f"{cp:04X}", version=unicodedata.unidata_version)
        if category == "Zs" and ch != " " and not (prose and ch == NO_BREAK_SPACE):
            _fail("KB031", "must not contain space character {char}; type a plain space (U+0020)" +
                  ("" if prose else ", as the program prints it"), char=_named(ch))
        if _INVISIBLE.match(ch):
            _fail("KB031", "must not contain {char}, which shows as nothing or as a blank; delete it, or type a "
                  "plain space (U+0020) if a space is meant", char=_named(ch))
    return value


def _ascii_url(value: str) -> None:
    """KB033: a link is ASCII (RFC 3986), its host above all, so that what is shown is where it goes."""
    if value.isascii():
        return
    index, ch = next((i, c) for i, c in enumerate(value) if not c.isascii())
    rest = value.split("://", 1)[-1]
    host_end = len(value) - len(rest) + len(rest.split("/", 1)[0])
    encoded = "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
    if index < host_end:
        _fail("KB033", "the host of a link must be ASCII: {char} at character {at} makes it another host that "
              "looks the same; type the host name in ASCII", char=_named(ch), at=index + 1)
    _fail("KB033", "a link must be ASCII only (RFC 3986): {char} at character {at} is written percent-encoded, "
          "as {encoded}", char=_named(ch), at=index + 1, encoded=encoded)


def _no_markup(value: str) -> None:
    """No raw HTML, images or headings, links https only: the same parse as the renderer
    (`kb.records.prose`), so what is reported here is exactly what the page would show as text."""
    from kb.records import prose  # late: markdown-it is only needed when a record is checked

    for code, message, found, line in prose.problems(value):
        where = f" on line {line} of the text" if "\n" in value.rstrip("\n") else ""
        _fail(code, message + " (found {found}" + where + ")", found=repr(found[:60]))


def _text(value: str) -> str:
    """Plain words on one line."""
    if not value.strip():
        _fail("KB025", "must not be empty or only whitespace")
    if value != value.strip():
        _fail("KB026", "must not start or end with whitespace")
    _no_controls(value, allow_newlines=False, prose=True)
    _no_markup(value)
    return value


def _markdown(value: str) -> str:
    """Markdown prose without raw HTML, links https only."""
    if not value.strip():
        _fail("KB025", "must not be empty or only whitespace")
    _no_controls(value, allow_newlines=True, prose=True)
    _no_markup(value)
    return value


def _literal(value: str) -> str:
    """A literal error string, exactly as it is printed."""
    if not value.strip():
        _fail("KB025", "must not be empty or only whitespace")
    if "\t" in value:
        _fail("KB030", "literal text must not contain tabs; copy the line with spaces as printed")
    if value != value.strip():
        _fail("KB030", "literal text must not start or end with spaces; trim the copied line")
    if "\n" in value:
        _fail("KB030", "literal text must be one line; keep the line people search for")
    return _no_controls(value, allow_newlines=False)


def _in_range(day: dt.date) -> None:
    if day < FIRST_DATE:
        _fail("KB034", "date is before {first}; the index covers CUDA-era tools", first=FIRST_DATE.isoformat())
    if day > dt.date.today():
        _fail("KB034", "date is in the future")


def _full_date(value: str) -> str:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        _fail("KB034", "must be a date written YYYY-MM-DD")
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        _fail("KB034", "is not a real calendar date")
    _in_range(day)
    return value


def _as_of(value: str) -> str:
    """The day (or, when the source gives no day, the month) a claim was read from its source."""
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}", value):
        try:
            month = dt.date.fromisoformat(value + "-01")
        except ValueError:
            _fail("KB034", "is not a real month")
        _in_range(month)
        return value
    return _full_date(value)


def _trimmed_plain(value: str) -> None:
    """A version or range is compared and shown as written: no controls, no surrounding space
    (packaging itself would accept a trailing newline)."""
    _no_controls(value, allow_newlines=False)
    if value != value.strip():
        _fail("KB026", "must not start or end with whitespace")


def _specifier(value: str) -> str:
    _trimmed_plain(value)
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        _fail("KB035", "is not a PEP 440 version specifier such as '>=0.25.1,<0.26'")
    if not value.strip():
        _fail("KB025", "must not be empty or only whitespace")
    return value


def _version(value: str) -> str:
    _trimmed_plain(value)
    try:
        Version(value)
    except InvalidVersion:
        _fail("KB035", "is not a PEP 440 version such as '0.6.18.post1'")
    return value


def _pull_request(value: str) -> str:
    _source(value)
    if not re.fullmatch(_GITHUB + r"/pull/[0-9]+", value):
        _fail("KB056", "must be the URL of a GitHub pull request, https://github.com/<owner>/<repo>/pull/<number>")
    return value


def _source(value: str) -> str:
    _no_controls(value, allow_newlines=False)
    _ascii_url(value)
    if not value.startswith("https://"):
        _fail("KB033", "must be an https:// link to a public tracker")
    if not ANY_SOURCE.fullmatch(value):
        _fail("KB033", "must link a public tracker: a GitHub issue, pull request, commit, release or a known docs site")
    return value


Text = Annotated[str, Field(min_length=1, max_length=300), AfterValidator(_text)]
LongText = Annotated[str, Field(min_length=1, max_length=1200), AfterValidator(_text)]
Markdown = Annotated[str, Field(min_length=1, max_length=12000), AfterValidator(_markdown)]
LiteralText = Annotated[str, Field(min_length=1, max_length=400), AfterValidator(_literal)]
FullDate = Annotated[str, Field(max_length=10), AfterValidator(_full_date)]
AsOf = Annotated[str, Field(max_length=10), AfterValidator(_as_of)]
Specifier = Annotated[str, Field(max_length=120), AfterValidator(_specifier)]
VersionStr = Annotated[str, Field(max_length=60), AfterValidator(_version)]
SourceUrl = Annotated[str, Field(max_length=300), AfterValidator(_source)]
Package = Annotated[str, Field(pattern=PACKAGE_PATTERN, max_length=40)]
CellId = Annotated[str, Field(pattern=ID_PATTERN, max_length=80)]


def _drawable(value: int | float) -> int | float:
    """KB052: a number a chart can draw and a float can hold exactly enough to label."""
    size = abs(value)
    if size > MAX_NUMBER or (size and size < MIN_NUMBER):
        _fail("KB052", "must be 0 or between {low} and {high} in size, what a chart can draw; write it in a "
              "unit that brings it in range", low="1e-9", high="1e15")
    return value


Number = Union[Annotated[int, AfterValidator(_drawable)],
               Annotated[float, Field(allow_inf_nan=False), AfterValidator(_drawable)]]

SymptomClass = Literal[tuple(facets.SYMPTOM_NAMES)]
StatusState = Literal[tuple(facets.STATUS_NAMES)]
Arch = Literal[tuple(facets.ARCH_NAMES)]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _pattern(value: str) -> str:
    try:
        compiled = patterns.compile_signature(value, value)
    except patterns.PatternError as exc:
        _fail("KB044", "malformed placeholder pattern: {why}", why=str(exc))
    if not compiled.anchor:
        _fail("KB044", "a pattern needs a word of letters or digits to be found by")
    return value


def matches_own_text(match: str | None, info: ValidationInfo) -> str | None:
    """KB045, for a signature's or a family pattern's `match`: it matches its own `text`."""
    text = info.data.get("text")
    if match is not None and text is not None and not patterns.matches(patterns.compile_signature(text, match), text):
        _fail("KB045", "the pattern does not match the signature's own literal text; mark only the parts that vary")
    return match


class Signature(Record):
    text: LiteralText
    kind: Literal[tuple(facets.KIND_NAMES)]
    match: Annotated[str, Field(min_length=1, max_length=400), AfterValidator(_literal), AfterValidator(_pattern)] | None = None
    note: Text | None = None
    # A string many unrelated failures print (a CUDA error): its page says it does not identify the cell.
    generic: bool = False
    # The line proves the failure by itself (torch's own "not compatible" warning, a tool refusing the
    # architecture): a log showing it gets the verdict "applies" whatever versions it lacks (KB084).
    decisive: bool = False
    # The string was assembled from the program's source (its format string with this failure's values),
    # not seen in a report: the header search never ranks it above a string someone saw printed.
    from_source: bool = False

    @model_validator(mode="after")
    def _decisive_names_the_arch(self) -> "Signature":
        if self.decisive and (self.generic or self.kind == "symptom" or not decisive_line(self.text)):
            _fail("KB084", "decisive: true is for a line printed by the failing program that names the GPU "
                  "architecture (sm_120, compute_120a, SM 12.0, capability 120) or says the build lacks it; "
                  "this one is {why}: drop decisive", why="marked generic" if self.generic else
                  "a symptom, written by a person" if self.kind == "symptom" else "neither")
        return self

    @field_validator("match")
    @classmethod
    def _matches_own_text(cls, match: str | None, info: ValidationInfo) -> str | None:
        return matches_own_text(match, info)


# Evidence (kb.triage.evidence): identifiers that, found together within a few lines, show a cell in a
# log that prints no error string. A term is one code identifier, matched case-sensitively as a
# whole identifier; it must look like code (an `_`, `.`, `/` or digit, or a CamelCase hump), since
# a plain word (`workspace`, `WARNING`) is in too many logs to be evidence of anything.
_TERM = re.compile(r"[A-Za-z0-9_./:=-]{6,80}")
_CAMEL = re.compile(r"[a-z][A-Z]")
MAX_EVIDENCE_WINDOW = 200


def _term(value: str) -> str:
    if not _TERM.fullmatch(value):
        _fail("KB058", "an evidence term is one identifier of 6 to 80 characters from A-Z a-z 0-9 _ . / : = - "
                       "(no spaces, nothing shorter)")
    if not (any(c in "_./" or c.isdigit() for c in value) or _CAMEL.search(value)):
        _fail("KB058", "an evidence term must look like code, not a word: give it an '_', '.', '/', a digit or a "
                       "CamelCase hump (PleOffloadWorker)")
    return value


def _number(value: str) -> str:
    try:
        parts = patterns.parse(value)
    except patterns.PatternError as exc:
        _fail("KB059", "malformed evidence number: {why}", why=str(exc))
    if not any((kind == "text" and any(c.isdigit() for c in text)) or
               (kind == "slot" and text in ("int", "num", "size", "hex")) for kind, text in parts):
        _fail("KB059", "an evidence number holds a digit or a number placeholder (int, num, size or hex)")
    return value


def _window(value: int) -> int:
    if not 2 <= value <= MAX_EVIDENCE_WINDOW:
        _fail("KB058", "an evidence window is 2 to {most} lines", most=MAX_EVIDENCE_WINDOW)
    return value


Term = Annotated[str, Field(max_length=80), AfterValidator(_term)]
NumberPattern = Annotated[str, Field(min_length=1, max_length=60), AfterValidator(_literal), AfterValidator(_number)]


class Evidence(Record):
    """Identifiers (and numbers) that show the cell when all of them appear within `window` lines."""

    terms: list[Term] = Field(min_length=2, max_length=6)
    numbers: list[NumberPattern] = Field(default=[], max_length=4)
    window: Annotated[int, AfterValidator(_window)] = 20
    note: Text | None = None

    @field_validator("terms")
    @classmethod
    def _distinct(cls, terms: list[str]) -> list[str]:
        if len(set(terms)) != len(terms):
            _fail("KB058", "each evidence term is listed once")
        return terms


# What a decisive line must hold (KB084): an architecture named as tools and checks print it, or
# the words of a program saying its build lacks the running GPU's architecture.
# Also a capability a check states of the running GPU: "compute capability in your current machine is
# 120", "Runtime compute cap 120", "your current GPU is 120", XLA's "CC 12.0", "on 12.0+ architectures".
_ARCH_NAMED = re.compile(r"(?i)\b(?:sm|compute)_?[0-9]{2,3}[a-z]?\b|\bSM ?[0-9]{2}\.[0-9x]\b|capability (?:sm_)?[0-9]{2,3}\b"
                         r"|\b(?:compute cap(?:ability)?|current gpu)\b[^.;,]{0,40}? (?:is )?[0-9]{2,3}\b"
                         r"|\bCC [0-9]{1,2}\.[0-9]\b|\b[0-9]{2}\.[0-9]\+? architectures?\b")
BUILD_LACKS = ("is not compatible with the current pytorch installation", "unsupported gpu architecture",
               "is not defined for option 'gpu-name'")


def decisive_line(text: str) -> bool:
    """Whether a literal names an architecture or says the build lacks it (KB084)."""
    return bool(_ARCH_NAMED.search(text)) or any(words in text.lower() for words in BUILD_LACKS)


# A local version label (PEP 440, after the '+'), as a component's `builds` lists it: '+cu126'.
BUILD_PATTERN = r"^\+[a-z0-9]+(\.[a-z0-9]+)*$"


class Hardware(Record):
    architectures: list[Arch] = Field(min_length=1, max_length=4)
    gpus: list[Text] = Field(min_length=1, max_length=20)


class Component(Record):
    package: Package
    role: Literal[facets.ROLES]
    # `affected`: the range whose bounds were checked (first bad release, the fix); above it a version
    # reads as fixed only at or past `fixed_in`. `seen_failing`: the versions seen failing and nothing
    # more, so any other version is "not known to be affected" (KB085: one or the other).
    affected: Specifier | None = None
    seen_failing: Specifier | None = None
    # Local version labels whose builds fail at any version (torch '+cu126'): where the record gives
    # them, a version without a label cannot be decided outside the range (kb.records.verdict).
    builds: list[Annotated[str, Field(pattern=BUILD_PATTERN, max_length=30)]] = Field(default=[], max_length=20)
    fixed_in: VersionStr | None = None
    fixed_commit: Annotated[str, Field(pattern=COMMIT_PATTERN)] | None = None
    fixed_by: Annotated[str, Field(max_length=300), AfterValidator(_pull_request)] | None = None
    note: Text | None = None

    @model_validator(mode="after")
    def _fix_has_version(self) -> "Component":
        # After the fields: a fixed_in or fixed_commit that failed its own check is reported once, there.
        if self.affected and self.seen_failing:
            _fail("KB085", "give affected (a range whose bounds were checked) or seen_failing (only the versions "
                  "seen failing), not both")
        if self.builds and not (self.affected or self.seen_failing):
            _fail("KB085", "builds lists the local labels that fail at any version; give the range that holds "
                  "for the other builds too (affected or seen_failing)")
        if self.fixed_by and not (self.fixed_in or self.fixed_commit):
            _fail("KB056", "fixed_by names the pull request that fixes it but not where the fix is: add fixed_in "
                  "(the first release that contains it) or fixed_commit (its merge commit on main)")
        if self.fixed_in and not (self.fixed_by or self.fixed_commit):
            _fail("KB061", "fixed_in {version} says which release holds a fix but not which fix: add fixed_by (the "
                  "merged pull request) or fixed_commit (its merge commit), the commit `git tag --contains` was "
                  "run on; without one, drop fixed_in and give the release as a claim with confirmed: false",
                  version=repr(self.fixed_in))
        return self


class Status(Record):
    state: StatusState
    as_of: AsOf
    source: SourceUrl
    # Why the state is not what the fixes suggest (a release named by a thread but not checked
    # against a tag): shown below the badge, never in it; KB086 asks for it (kb.records.state).
    reason: Text | None = None


class Conditions(Record):
    hardware: Text
    versions: dict[Package, Annotated[str, Field(min_length=1, max_length=60), AfterValidator(_text)]] = {}
    flags: list[Text] = Field(default=[], max_length=20)


class Point(Record):
    x: Number | Text
    value: Number
    label: Text | None = None


class Limit(Record):
    """A level the values are measured against (a hardware limit, a budget), drawn across the chart."""
    value: Number
    label: Text


class Series(Record):
    x: Text
    x_unit: Text | None = None
    rows: list[Point] = Field(min_length=2, max_length=200)
    limit: Limit | None = None


class Measurement(Record):
    quantity: Text
    unit: Text
    value: Number | None = None
    series: Series | None = None
    conditions: Conditions
    source: SourceUrl
    as_of: AsOf
    note: Text | None = None

    @model_validator(mode="after")
    def _one_of(self):
        if (self.value is None) == (self.series is None):
            _fail("KB027", "a measurement has exactly one of 'value' (a single number) or 'series' (rows)")
        return self


class Remedy(Record):
    kind: Literal[facets.REMEDY_KINDS]
    what: Text
    note: LongText | None = None
    package: Package | None = None
    applies: Specifier | None = None
    # What the remedy costs the reader (memory, speed, a feature given up), as its source says, or
    # that the source does not say: every workaround gives one (KB095), the card shows it.
    cost: Text | None = None
    # The pin of a released package this upgrade breaks ("vLLM 0.28.0 requires
    # flashinfer-python==0.6.16.post3"): a workaround that works on the stack as shipped goes before
    # it (kb.records.remedies).
    breaks_pin: Text | None = None
    source: SourceUrl
    as_of: AsOf


_LINK_STATES = {"issue": {"open", "closed"}, "pr": {"open", "closed", "merged"},
                "commit": {"merged", "published"}, "release": {"published"}, "doc": {"published"}}


class Link(Record):
    kind: Literal["issue", "pr", "commit", "release", "doc"]
    url: Annotated[str, Field(max_length=300)]
    state: Literal["open", "closed", "merged", "published"]
    as_of: AsOf
    title: Text | None = None

    @field_validator("url")
    @classmethod
    def _form(cls, url: str, info: ValidationInfo) -> str:
        _no_controls(url, allow_newlines=False)
        _ascii_url(url)
        if not url.startswith("https://"):
            _fail("KB033", "must be an https:// link to a public tracker")
        kind = info.data.get("kind")
        if kind and not LINK_FORMS[kind].fullmatch(url):
            _fail("KB033", "is not the URL form of a link of kind '{kind}' on a known public tracker", kind=kind)
        return url

    @field_validator("state")
    @classmethod
    def _state_fits(cls, state: str, info: ValidationInfo) -> str:
        kind = info.data.get("kind")
        if kind and state not in _LINK_STATES[kind]:
            _fail("KB028", "state '{state}' does not fit a link of kind '{kind}' (one of {allowed})",
                  state=state, kind=kind, allowed=", ".join(sorted(_LINK_STATES[kind])))
        return state


class Claim(Record):
    says: LongText
    source: SourceUrl | Literal["seed"]
    as_of: AsOf
    confirmed: bool

    @field_validator("confirmed")
    @classmethod
    def _seed_is_unconfirmed(cls, confirmed: bool, info: ValidationInfo) -> bool:
        if confirmed and info.data.get("source") == "seed":
            _fail("KB055", "a claim whose only source is the seed document is not confirmed: cite the public "
                  "thread or source file that shows it as `source`, or set `confirmed: false`")
        return confirmed


class Related(Record):
    id: CellId
    how: Literal[facets.RELATED_HOW]
    note: LongText | None = None


class Entry(Record):
    """One cell: a failure, how to recognise it, why it happens, and what to do."""

    title: Text
    summary: LongText
    # Why it happens, in one plain sentence: the answer card's Cause line (kb.records.cause). Every
    # entry gives one (KB080 requires and checks it); optional here so that a missing one is a lint
    # problem reported with the others, not a load failure.
    cause: Text | None = None
    # What a stack must use or pass for the failure to happen (a flag, a model kind), when the record
    # says it: My stack shows the entry as "applies when you use or pass" it.
    trigger: Text | None = None
    symptoms: list[SymptomClass] = Field(min_length=1, max_length=6)
    # The recurring mechanism it is one case of (kb/families/<id>.yaml); KB092 checks the id.
    family: CellId | None = None
    status: Status
    signatures: list[Signature] = Field(min_length=1, max_length=20)
    evidence: list[Evidence] = Field(default=[], max_length=6)
    hardware: Hardware
    components: list[Component] = Field(min_length=1, max_length=20)
    mechanism: Markdown
    measurements: list[Measurement] = Field(default=[], max_length=50)
    fixes: list[Remedy] = Field(default=[], max_length=20)
    workarounds: list[Remedy] = Field(default=[], max_length=20)
    upstream: list[Link] = Field(min_length=1, max_length=40)
    claims: list[Claim] = Field(default=[], max_length=20)
    related: list[Related] = Field(default=[], max_length=40)
    published: FullDate
    updated: FullDate
    reproductions: list[Reproduction] = Field(default=[], max_length=10)
    scans: list[Scan] = Field(default=[], max_length=6)

    @field_validator("updated")
    @classmethod
    def _dates_in_order(cls, updated: str, info: ValidationInfo) -> str:
        published = info.data.get("published")
        if published and updated < published:
            _fail("KB039", "'updated' ({updated}) is before 'published' ({published})",
                  updated=updated, published=published)
        return updated



@dataclass(frozen=True)
class Cell:
    """A validated entry with its identity (the file stem) and where its values sit."""

    id: str
    path: Path
    entry: Entry
    lines: dict = field(repr=False, compare=False, hash=False)

    def line_of(self, loc: tuple) -> int:
        while loc and loc not in self.lines:
            loc = loc[:-1]
        return self.lines.get(loc, 1)


def json_schema() -> dict:
    """The JSON Schema of an entry file, for editors (`kb schema`)."""
    schema = Entry.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Blackwell serving failure cell (kb/entries/<id>.yaml)"
    return schema
