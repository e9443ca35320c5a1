"""Hostile entry files: what a contributor sees from `kb check`, and that nothing `kb check`
accepts can crash the build.

Cases that can be files are in tests/fixtures/hostile/entries/ (one case per file, what it is and
its rule on the first line); links, pipes and folders are made at test time in tmp_path.
  files that are not what they seem  a link to /dev/zero or to a secret, a pipe, a folder, a
                                     device named x.yaml (KB050); a .yml, .json or README
                                     beside the entries (KB051). None is read; none is quoted.
  strings                            NUL, newline, non-characters in links and versions (KB031);
                                     whole-value patterns never match a value with a newline after it
  numbers and dates                  a 400-digit int, 5.0e-324, 1.7e+308, 1e-13 (KB052), dates
                                     before 2000 (KB034); the extreme-but-valid record builds
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kb import cli
from kb.records import lint, load, schema
from kb.records.rules import code_of_pydantic
from kb.site import charts, export
from kb.site.pages import Renderer, Site

from conftest import FIXTURES, ROOT

HOSTILE = FIXTURES / "hostile" / "entries"
GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
KB = Path(sys.executable).parent / "kb"  # the installed console script, as a contributor runs it
SECRET = "SECRET-CREDS-7f3a91"
CODE = re.compile(r"^# .*\((KB0\d\d|valid)\)\.$")


def _rel(path: Path) -> str:
    return os.path.relpath(path)


def _check(capsys, *paths: Path) -> tuple[int, list[str], str]:
    code = cli.main(["check", *map(str, paths)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def _kb_check(*paths: Path, timeout: float = 60) -> tuple[int, list[str], str, float]:
    """`kb check` in its own process, so that a read that blocks or never ends fails the test
    (subprocess.TimeoutExpired) instead of hanging the suite."""
    started = time.monotonic()
    done = subprocess.run([str(KB), "check", *map(str, paths)], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)
    return done.returncode, done.stdout.splitlines(), done.stderr, time.monotonic() - started


def _refused(path: Path, kind: str) -> str:
    """The line `kb check` prints for a path refused unread (KB050), up to the rule code."""
    return f"{_rel(path)}:1: (file): is {kind}, not a regular file; "


def _folder(tmp_path: Path, name: str = "entries") -> Path:
    """A folder holding the canonical good entry, so that only the case under test is reported."""
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(GOOD, folder / GOOD.name)
    return folder


def _secret_file(tmp_path: Path) -> Path:
    """A file outside the entries that an entry would quote if it were read: its title has a
    trailing space (KB026), so `kb check` would print it as the bad value."""
    secret = tmp_path / "elsewhere-7f3a" / "creds.yaml"
    secret.parent.mkdir()
    secret.write_text(f'title: "{SECRET} "\ntoken: {SECRET}\n', encoding="utf-8")
    return secret


def test_the_corpus_names_its_rule_on_the_first_line():
    for case in sorted(HOSTILE.iterdir()):
        if case.suffix == ".yaml":
            assert CODE.match(case.read_text(encoding="utf-8").splitlines()[0]), case.name


# --- files that are not what they seem (KB050, KB051) ---------------------------------------

@pytest.mark.slow
def test_link_to_dev_zero_is_refused_without_reading_it(tmp_path):
    folder = _folder(tmp_path)
    link = folder / "zero.yaml"
    link.symlink_to("/dev/zero")
    for named in (folder, link):
        code, out, err, seconds = _kb_check(named, timeout=30)
        assert code == 1 and seconds < 10
        assert len(out) == 1 and out[0].startswith(_refused(link, "a symbolic link")) and out[0].endswith("[KB050]")
        assert "1 problem(s) in 1 of" in err


def test_link_to_a_secret_outside_is_refused_and_the_secret_never_printed(tmp_path, capsys):
    folder = _folder(tmp_path)
    link = folder / "creds.yaml"
    link.symlink_to(_secret_file(tmp_path))
    for named in (folder, link):
        code, out, err = _check(capsys, named)
        assert code == 1
        assert out == [_refused(link, "a symbolic link") + "commit the entry (or the entries folder) itself, not a "
                       "link to it (the link was not followed) [KB050]"]
        assert SECRET not in "\n".join(out) + err and "elsewhere-7f3a" not in "\n".join(out)  # nor where it points


def test_relative_and_broken_links_are_refused_once_each(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / "a-relative.yaml").symlink_to(GOOD.name)  # even to a good entry beside it
    (folder / "b-broken.yaml").symlink_to(tmp_path / "nowhere.yaml")
    code, out, _ = _check(capsys, folder)
    assert code == 1
    assert [line.split(": is ")[0] for line in out] == [f"{_rel(folder / n)}:1: (file)" for n in
                                                        ("a-relative.yaml", "b-broken.yaml")]
    assert all(line.endswith("[KB050]") for line in out)
    code, out, _ = _check(capsys, folder / "b-broken.yaml")  # named, as a pre-commit hook names it
    assert code == 1 and len(out) == 1 and out[0].startswith(_refused(folder / "b-broken.yaml", "a symbolic link"))


def test_a_link_to_itself_is_refused_by_the_linter(tmp_path):
    folder = _folder(tmp_path)
    (folder / "loop.yaml").symlink_to("loop.yaml")
    problems = lint.check([folder]).problems
    assert [(p.path.name, p.code, p.message.split(",")[0]) for p in problems] == [
        ("loop.yaml", "KB050", "is a symbolic link")]


def test_kb_check_reports_a_link_to_itself(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / "loop.yaml").symlink_to("loop.yaml")
    code, out, _ = _check(capsys, folder)
    assert code == 1 and len(out) == 1 and out[0].startswith(_refused(folder / "loop.yaml", "a symbolic link"))


def test_a_link_to_a_folder_is_never_searched(tmp_path, capsys):
    """Neither an entry that links to a folder nor an entries folder that is itself a link: a pull
    request can commit either, pointing at a folder of YAML outside the repository."""
    secret = _secret_file(tmp_path)
    folder = _folder(tmp_path)
    inner = folder / "drafts.yaml"
    inner.symlink_to(secret.parent, target_is_directory=True)
    linked = tmp_path / "linked-entries"
    linked.symlink_to(folder, target_is_directory=True)
    for named, refused in ((folder, inner), (inner, inner), (linked, linked)):
        code, out, err = _check(capsys, named)
        assert code == 1
        assert len(out) == 1 and out[0].startswith(_refused(refused, "a symbolic link")), out
        assert SECRET not in "\n".join(out) + err


@pytest.mark.slow
def test_a_named_pipe_does_not_block(tmp_path):
    folder = _folder(tmp_path)
    fifo = folder / "pipe.yaml"
    os.mkfifo(fifo)
    for named in (folder, fifo):
        code, out, _, seconds = _kb_check(named, timeout=30)
        assert code == 1 and seconds < 10
        assert out == [_refused(fifo, "a named pipe (FIFO)") + "an entry is a plain text file (this one was not "
                       "read) [KB050]"]


def test_a_folder_named_like_an_entry_is_refused(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / "nested.yaml").mkdir()
    (folder / "nested.yaml" / "inside.yaml").write_text(f"title: '{SECRET} '\n", encoding="utf-8")
    code, out, err = _check(capsys, folder)
    assert code == 1
    assert out == [_refused(folder / "nested.yaml", "a folder") + "entries sit directly in the entries folder as "
                   "<id>.yaml files [KB050]"]
    assert SECRET not in err


def test_a_device_is_refused_without_reading_it():
    for device in (Path("/dev/null"), Path("/dev/zero")):
        loaded = load.load(device)
        assert loaded.data is None
        assert [(p.code, p.line, p.loc) for p in loaded.problems] == [("KB050", 1, "(file)")]
        assert loaded.problems[0].message.startswith("is a character device, not a regular file")
    code, out, _, seconds = _kb_check(Path("/dev/zero"), timeout=30)  # named on the command line
    assert code == 1 and seconds < 10
    assert out == [_refused(Path("/dev/zero"), "a character device") + "an entry is a plain text file (this one "
                   "was not read) [KB050]"]


def test_what_a_file_is_is_named_for_every_kind():
    import stat

    assert load.not_regular(stat.S_IFREG | 0o644) is None
    assert [load.not_regular(kind | 0o644) for kind in (stat.S_IFLNK, stat.S_IFIFO, stat.S_IFDIR, stat.S_IFCHR,
                                                         stat.S_IFBLK, stat.S_IFSOCK)] == [
        "a symbolic link", "a named pipe (FIFO)", "a folder", "a character device", "a block device", "a socket"]


def test_a_link_swapped_in_after_the_lstat_is_not_followed(tmp_path, monkeypatch):
    """The lstat and the open are two steps: O_NOFOLLOW refuses a link that appears between them."""
    link = tmp_path / "swapped.yaml"
    link.symlink_to(_secret_file(tmp_path))
    real_lstat = os.lstat
    with monkeypatch.context() as patch:
        patch.setattr(load.os, "lstat", lambda path, *a, **k: real_lstat(GOOD) if Path(path) == link
                      else real_lstat(path, *a, **k))
        loaded = load.load(link)
    assert [(p.code, p.message.split(",")[0]) for p in loaded.problems] == [("KB050", "is a symbolic link")]


def test_a_pipe_swapped_in_after_the_lstat_does_not_block(tmp_path):
    """O_NONBLOCK: the open returns at once, and fstat on what was opened refuses the pipe."""
    fifo = tmp_path / "swapped.yaml"
    os.mkfifo(fifo)
    script = ("import os, sys; from pathlib import Path; from kb.records import load\n"
              "real = os.lstat\n"
              "os.lstat = lambda path, *a, **k: real(sys.argv[1]) if str(path) == sys.argv[2] else real(path, *a, **k)\n"
              "print(*[(p.code, p.message.split(',')[0]) for p in load.load(Path(sys.argv[2])).problems])\n")
    done = subprocess.run([sys.executable, "-c", script, str(GOOD), str(fifo)], capture_output=True, text=True,
                          cwd=ROOT, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "('KB050', 'is a named pipe (FIFO)')"


def test_a_file_that_grows_past_the_limit_is_cut_at_the_limit(tmp_path, monkeypatch):
    path = tmp_path / "growing.yaml"
    path.write_bytes(b"# " + b"x" * (load.MAX_FILE_BYTES * 2) + b"\n")
    real_fstat = os.fstat

    def small(fd):  # what a file that grew after the fstat looks like
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 10, *info[7:]))

    read: list[int] = []
    real_read = os.read
    with monkeypatch.context() as patch:
        patch.setattr(load.os, "fstat", small)
        patch.setattr(load.os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
        loaded = load.load(path)
    assert [p.code for p in loaded.problems] == ["KB009"]
    assert sum(read) <= load.MAX_FILE_BYTES + 1


@pytest.mark.parametrize("name", ["draft.yml", "entry.json", "README.md"])
def test_other_files_beside_the_entries_are_errors_not_skipped(tmp_path, capsys, name):
    folder = _folder(tmp_path)
    shutil.copy(HOSTILE / name, folder / name)
    code, out, err = _check(capsys, folder)
    assert code == 1
    assert out == [f"{_rel(folder / name)}:1: (file): an entries folder holds only <id>.yaml files: rename this "
                   "file to .yaml if it is an entry, or move it out of the folder (it was not read) [KB051]"]
    assert "SECRET" not in "\n".join(out) + err
    assert "1 problem(s) in 1 of 2 file(s)" in err


def test_hidden_files_are_not_entries_and_are_skipped(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / ".gitkeep").write_text("", encoding="utf-8")
    (folder / ".mla.yaml.swp").write_bytes(b"\x00\x01 editor swap file")
    (folder / ".hidden.yaml").symlink_to("/dev/zero")
    code, out, _ = _check(capsys, folder)
    assert (code, out) == (0, ["ok: 1 entry checked, no problems"])


def test_the_live_entries_folder_holds_only_entries():
    assert [p.name for p in (ROOT / "kb" / "entries").iterdir() if p.suffix != ".yaml" or not p.is_file()
            or p.is_symlink()] == []


# --- strings: controls, non-characters and trailing newlines in links and versions (KB031) ----

EXPECTED = {
    "url-nul-byte.yaml": [
        "11: status.source: must not contain control character U+0000 (got 'https://docs.nvidia.com/cuda/\\x00') "
        "[KB031]"],
    "url-trailing-newline.yaml": [
        "65: upstream[0].url: must not contain control character U+000A "
        "(got 'https://github.com/vllm-project/vllm/issues/53748\\n') [KB031]"],
    "noncharacter-title.yaml": [
        "2: title: must not contain non-character U+FFFE: it is not text, and it breaks the feed's XML "
        "(got 'MLA decode with an fp8 KV cache needs 102,400 bytes \\uff...) [KB031]"],
    "noncharacter-doc-url.yaml": [
        "61: workarounds[0].source: must not contain non-character U+FDD0: it is not text, and it breaks the "
        "feed's XML (got 'https://docs.vllm.ai/en/latest/\\ufdd0') [KB031]"],
    "version-trailing-newline.yaml": [
        "27: components[1].fixed_in: must not contain control character U+000A (got '3.7.0\\n') [KB031]"],
    "huge-integer.yaml": [
        "45: measurements[1].series.rows[0].value: " + "must be 0 or between 1e-9 and 1e15 in size, what a chart "
        "can draw; write it in a unit that brings it in range (got " + "1" * 57 + "...) [KB052]"],
    "subnormal-value.yaml": [
        "33: measurements[0].value: must be 0 or between 1e-9 and 1e15 in size, what a chart can draw; write it "
        "in a unit that brings it in range (got 5e-324) [KB052]"],
    "huge-float.yaml": [
        f"{line}: measurements[1].series.rows[{i}].value: must be 0 or between 1e-9 and 1e15 in size, what a "
        f"chart can draw; write it in a unit that brings it in range (got {got}) [KB052]"
        for i, (line, got) in enumerate([(45, "1.7e+308"), (46, "-1.7e+308")])],
    "tiny-values.yaml": [
        f"{45 + i}: measurements[1].series.rows[{i}].value: must be 0 or between 1e-9 and 1e15 in size, what a "
        f"chart can draw; write it in a unit that brings it in range (got {i + 1}e-13) [KB052]" for i in range(4)],
    "date-year-one.yaml": [
        "78: published: date is before 2000-01-01; the index covers CUDA-era tools (got '0001-01-01') [KB034]"],
    "dates-before-1970.yaml": [
        f"{line}: {field}: date is before 2000-01-01; the index covers CUDA-era tools (got '{got}') [KB034]"
        for line, field, got in [
            (10, "status.as_of", "1969-09"), (39, "measurements[0].as_of", "1969-09"),
            (50, "measurements[1].as_of", "1969-09"), (56, "fixes[0].as_of", "1969-09"),
            (62, "workarounds[0].as_of", "1969-09"), (67, "upstream[0].as_of", "1969-09"),
            (71, "upstream[1].as_of", "1969-09"), (75, "claims[0].as_of", "1969-12-02"),
            (78, "published", "1969-12-02"), (79, "updated", "1969-12-02")]],
}


def test_every_hostile_record_has_its_expected_output():
    assert sorted(EXPECTED) == sorted(p.name for p in HOSTILE.glob("*.yaml") if p.stem != "extreme-but-valid")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_check_refuses_each_hostile_record_with_file_line_field_and_code(capsys, name):
    case = HOSTILE / name
    code, out, err = _check(capsys, case)
    assert code == 1
    assert out == [f"{_rel(case)}:{line}" for line in EXPECTED[name]]
    codes = {line[-6:-1] for line in out}
    assert codes == {CODE.match(case.read_text(encoding="utf-8").splitlines()[0]).group(1)}
    assert f"{len(out)} problem(s) in 1 of 1 file(s)" in err


GOOD_DATA = load.load(GOOD).data
# A fixed_in needs the change that holds it (KB061): the fields below set fixed_in on components[0].
GOOD_DATA["components"][0].setdefault("fixed_commit", "0037a9c11")
# Where each kind of string sits in the canonical entry: every validator that takes a string.
STRING_FIELDS = {
    "title": ("title",),
    "summary": ("summary",),
    "mechanism": ("mechanism",),
    "signature": ("signatures", 0, "text"),
    "status.source (docs)": ("status", "source"),
    "upstream url": ("upstream", 0, "url"),
    "fixed_in": ("components", 0, "fixed_in"),
    "affected": ("components", 0, "affected"),
    "versions value": ("measurements", 0, "conditions", "versions", "triton"),
}
PLAIN = {"status.source (docs)": "https://docs.nvidia.com/cuda/x", "fixed_in": "0.12.0", "affected": ">=0.11,<0.12",
         "upstream url": "https://github.com/vllm-project/vllm/issues/53748"}
REFUSED = ["\x00", "\x1b", "\x7f", "\x85", "\u202e", "\u2028", "\u2029", "\ufffe", "\uffff", "\ufdd0", "\ufdef",
           "\U0001fffe", "\U0010ffff"]


def _errors(data) -> dict[tuple, str]:
    """Field path -> rule code of each error the schema finds in `data`."""
    try:
        schema.Entry.model_validate(data)
    except ValidationError as exc:
        return {tuple(e["loc"]): code_of_pydantic(e["type"]) for e in exc.errors()}
    return {}


def _with(loc: tuple, value) -> dict:
    data = copy.deepcopy(GOOD_DATA)
    node = data
    for part in loc[:-1]:
        node = node[part]
    node[loc[-1]] = value
    return data


def test_the_canonical_entry_validates():
    assert _errors(copy.deepcopy(GOOD_DATA)) == {}
    for field, loc in STRING_FIELDS.items():
        assert _errors(_with(loc, PLAIN.get(field, "Plain words"))) == {}, field


@pytest.mark.parametrize("char", REFUSED, ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("field", sorted(STRING_FIELDS))
def test_controls_and_non_characters_are_refused_in_every_string_field(field, char):
    loc = STRING_FIELDS[field]
    plain = PLAIN.get(field, "Plain words")
    mid = len(plain) // 2
    errors = _errors(_with(loc, plain[:mid] + char + plain[mid:]))
    assert list(errors.values()) == ["KB031"], (field, errors)


@pytest.mark.parametrize("field", sorted(STRING_FIELDS))
def test_a_lone_surrogate_is_refused_in_every_string_field(field):
    # pydantic's own str check refuses it first (KB029); KB031 would refuse it after.
    errors = _errors(_with(STRING_FIELDS[field], "Plain \ud800 words"))
    assert list(errors.values()) in (["KB029"], ["KB031"]), errors


SAMPLES = {"issue": "https://github.com/vllm-project/vllm/issues/53748",
           "pr": "https://github.com/vllm-project/vllm/pull/54013#discussion_r1",
           "commit": "https://github.com/vllm-project/vllm/commit/1a2b3c4d",
           "release": "https://github.com/vllm-project/vllm/releases/tag/v0.12.0",
           "doc": "https://docs.vllm.ai/en/latest/"}


def test_python_dollar_matches_before_a_trailing_newline():
    """Why the schema uses fullmatch: `$` in Python's `re` also matches just before a final newline."""
    assert re.match(r"https://x\.org/[0-9]+$", "https://x.org/1\n")
    assert not re.fullmatch(r"https://x\.org/[0-9]+", "https://x.org/1\n")


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_link_forms_match_whole_values_only(kind):
    url = SAMPLES[kind]
    assert schema.LINK_FORMS[kind].fullmatch(url) and schema.ANY_SOURCE.fullmatch(url)
    for tail in ("\n", "\r\n", "\n#x", " "):
        assert not schema.LINK_FORMS[kind].fullmatch(url + tail)
        assert not schema.ANY_SOURCE.fullmatch(url + tail)
        assert _errors(_with(("upstream", 0), {"kind": kind, "url": url + tail, "state": "published" if kind in
                                               ("release", "doc") else "merged" if kind == "commit" else "open",
                                               "as_of": "2026-09"}))


@pytest.mark.parametrize("loc, clean, value", [
    (("components", 0, "package"), "vllm", "vllm\n"),
    (("components", 0, "fixed_commit"), "1a2b3c4", "1a2b3c4\n"),
    (("related",), [{"id": "plan-index-b", "how": "look-alike"}], [{"id": "plan-index-b\n", "how": "look-alike"}]),
    (("measurements", 0, "conditions", "versions"), {"triton": "3.7.0"}, {"triton\n": "3.7.0"}),
])
def test_pydantic_patterns_do_not_match_before_a_trailing_newline(loc, clean, value):
    """`pattern=` is a Rust regex in pydantic, where `$` is the very end: pinned here, since a
    switch to Python's engine would quietly accept these."""
    assert _errors(_with(loc, clean)) == {}
    assert list(_errors(_with(loc, value)).values()) == ["KB024"]


@pytest.mark.parametrize("loc, value, message", [
    (("published",), "\u0662\u0660\u0662\u0666-\u0660\u0661-\u0660\u0661", "must be a date written YYYY-MM-DD"),
    (("published",), "2026-1-2\n", "must be a date written YYYY-MM-DD"),
    (("status", "as_of"), "\uff12\uff10\uff12\uff16-\uff10\uff19", "must be a date written YYYY-MM-DD"),
    (("published",), "1999-12-31", "date is before 2000-01-01; the index covers CUDA-era tools"),
    (("status", "as_of"), "1999-12", "date is before 2000-01-01; the index covers CUDA-era tools"),
    (("upstream", 0, "url"), "https://github.com/vllm-project/vllm/issues/\u0665\u0663", None),
    (("components", 0, "fixed_in"), " 0.12.0", "must not start or end with whitespace"),
])
def test_other_scripts_digits_and_early_dates_are_refused(loc, value, message):
    data = _with(loc, value)
    try:
        schema.Entry.model_validate(data)
    except ValidationError as exc:
        (error,) = exc.errors()
        assert message is None or error["msg"] == message
    else:
        pytest.fail(f"{value!r} was accepted")


# --- numbers and dates the pages can draw (KB052, KB034) ------------------------------------

@pytest.mark.build
def test_the_extreme_but_valid_record_passes_the_check_and_builds(tmp_path, capsys):
    folder = tmp_path / "entries"
    folder.mkdir()
    shutil.copy(HOSTILE / "extreme-but-valid.yaml", folder / GOOD.name)
    code, out, _ = _check(capsys, folder)
    assert (code, out) == (0, ["ok: 1 entry checked, no problems"])
    site = tmp_path / "site"
    assert cli.main(["build", "--preview", "-d", str(site), "--entries", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and out.strip().splitlines()[-1].startswith("built ")
    cell = next(p for p in site.glob("e/*/index.html") if "kb-chart__svg" in p.read_text(encoding="utf-8"))
    assert cell.read_text(encoding="utf-8").count('class="kb-chart__svg"') == 2
    assert "<td>1000000000000000.0</td>" in cell.read_text(encoding="utf-8")  # the table, as written
    assert 'data-points="6"' in cell.read_text(encoding="utf-8")


NUMBERS = st.one_of(
    st.integers(-schema.MAX_NUMBER, schema.MAX_NUMBER),
    st.floats(min_value=schema.MIN_NUMBER, max_value=schema.MAX_NUMBER).flatmap(lambda v: st.sampled_from([v, -v])),
    st.sampled_from([0, 0.0, -0.0, 1e-9, -1e-9, 1e15, -1e15, 10 ** 15, -(10 ** 15), 999999999999999.9,
                     1.0000000000000002, 1.0000000000000002e-9]),
)


def _ulps_apart(base: float, steps: list[int]) -> list[float]:
    """Values a few floats apart: closer together than any label can tell."""
    out = []
    for n in steps:
        value = float(base)
        for _ in range(n):
            value = math.nextafter(value, math.inf)
        out.append(value)
    return out


def _drawable(value) -> bool:
    return value == 0 or schema.MIN_NUMBER <= abs(value) <= schema.MAX_NUMBER


CLUSTERED = st.tuples(NUMBERS, st.lists(st.integers(0, 6), min_size=2, max_size=10)).map(
    lambda t: [v for v in _ulps_apart(t[0], t[1]) if _drawable(v)]).filter(lambda values: len(values) >= 2)
LABELS = st.sampled_from(["fp8", "bf16 num_stages=2", "a configuration label far longer than the chart allows", "x"])


@st.composite
def series_rows(draw) -> list[dict]:
    values = draw(st.one_of(st.lists(NUMBERS, min_size=2, max_size=14), CLUSTERED,
                            st.builds(lambda v, n: [v] * n, NUMBERS, st.integers(2, 8))))
    shape = draw(st.sampled_from(["numbers", "clustered", "labels", "mixed"]))
    if shape == "numbers":
        xs = draw(st.lists(NUMBERS, min_size=len(values), max_size=len(values)))
    elif shape == "clustered":
        xs = (draw(CLUSTERED) * len(values))[: len(values)]
    elif shape == "labels":
        xs = draw(st.lists(LABELS, min_size=len(values), max_size=len(values)))
    else:
        xs = draw(st.lists(NUMBERS | LABELS, min_size=len(values), max_size=len(values)))
    return [{"x": x, "value": v} for x, v in zip(xs, values)]


DAYS = st.dates(min_value=schema.FIRST_DATE, max_value=dt.date.today())
AS_OF = DAYS.flatmap(lambda d: st.sampled_from([d.isoformat(), d.isoformat()[:7]]))


def _measurement(rows: list[dict]) -> dict:
    return {"quantity": "Time per step", "unit": "ms", "series": {"x": "batch size", "rows": rows},
            "conditions": {"hardware": "GB10"}, "source": "https://github.com/vllm-project/vllm/pull/54013",
            "as_of": "2026-09"}


def _drawn(svg: str) -> None:
    """The chart is well-formed XML and every point and bar lies inside the drawing."""
    root = ET.fromstring(svg)
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    ns = "{http://www.w3.org/2000/svg}"
    coordinates = [(float(c.get("cx")), float(c.get("cy"))) for c in root.iter(ns + "circle")]
    coordinates += [(float(r.get("x")), float(r.get("y"))) for r in root.iter(ns + "rect")]
    coordinates += [(float(r.get("x")) + float(r.get("width")), float(r.get("y")) + float(r.get("height")))
                    for r in root.iter(ns + "rect")]
    for line in root.iter(ns + "polyline"):
        coordinates += [tuple(map(float, point.split(","))) for point in line.get("points").split()]
    for path in root.iter(ns + "path"):  # series, bars and grid lines: M x y, H x, V y, h dx, v dy, Z
        x = y = 0.0
        for command, args in re.findall(r"([MHVhvZ])([^MHVhvZ]*)", path.get("d")):
            numbers = [float(n) for n in args.split()]
            if command == "M":
                x, y = numbers
            elif command in "Hh":
                x = numbers[0] + (x if command == "h" else 0)
            elif command in "Vv":
                y = numbers[0] + (y if command == "v" else 0)
            coordinates.append((x, y))
    for x, y in coordinates:
        assert 0 <= x <= width and 0 <= y <= height, (x, y)


CHART_SETTINGS = settings(max_examples=int(os.environ.get("KB_HYPOTHESIS_EXAMPLES", "200")), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
SITE_SETTINGS = settings(CHART_SETTINGS, max_examples=max(20, CHART_SETTINGS.max_examples // 5))


@CHART_SETTINGS
@given(series_rows())
@example([{"x": 1.0, "value": 7.5}, {"x": 1.0000000000000002, "value": 7.5}, {"x": 1.0000000000000004, "value": 7.5},
          {"x": 1.0000000000000007, "value": 7.5}])
@example([{"x": i, "value": v} for i, v in enumerate([1e-9, 2e-9, 3e-9, 1.5e-9])])
@example([{"x": 1e15, "value": -1e15}, {"x": -1e15, "value": 1e15}, {"x": 0, "value": 0}, {"x": 0, "value": 0}])
def test_every_series_the_schema_accepts_is_drawn(rows):
    measurement = schema.Measurement.model_validate(_measurement(rows))  # within the schema by construction
    _drawn(str(charts.svg(measurement)))


@CHART_SETTINGS
@given(NUMBERS, NUMBERS)
def test_ticks_cover_the_values_in_order(a, b):
    ticks = charts.nice_ticks(float(a), float(b))
    assert 2 <= len(ticks) <= 12 and all(math.isfinite(t) for t in ticks)
    assert all(x < y for x, y in zip(ticks, ticks[1:]))
    assert ticks[0] <= min(a, b) and ticks[-1] >= max(a, b)


@pytest.mark.slow
@SITE_SETTINGS
@given(series_rows(), NUMBERS, st.lists(DAYS, min_size=2, max_size=2).map(sorted), AS_OF)
def test_the_site_renders_every_record_the_check_accepts(rows, single, days, as_of):
    """Values, series and dates within the schema through the engine-independent build
    (what kb.site.generate does: every page, the JSON-LD, the data files and the feed)."""
    data = copy.deepcopy(GOOD_DATA)
    data["measurements"] = [dict(data["measurements"][0], value=single, as_of=as_of), _measurement(rows)]
    data["published"], data["updated"] = (d.isoformat() for d in days)
    data["status"] = dict(data["status"], as_of=as_of)
    cell = lint.Cell(GOOD.stem, GOOD, schema.Entry.model_validate(data), {})
    site = Site([cell])
    pages = Renderer(site).all_pages()
    export.jsonld(cell, site, None)
    files = export.files(site, "https://example.org/kb/", None)
    ET.fromstring(files["feed.xml"])
    body = next(p.body for p in pages if p.kind == "cell")
    for svg in re.findall(r"<svg\b.*?</svg>", body, re.S):
        _drawn(svg)
