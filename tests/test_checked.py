"""How far up a failure was checked (kb.records.checked): derived from the record's scans and
reproductions, never typed, and said in reader words on the Affects line."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from kb.records import checked, lint
from kb.records.reproduction import Printed, Reproduction
from kb.records.scan import Found, Library, Scan, Wheel

GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
# What a reader may see: the versions and the date, no field or record word (ux-review 2026-12-05, S3).
SENTENCE = re.compile(r"every release (?:(?:from|after) [0-9][0-9A-Za-z.+]* )?up to [0-9][0-9A-Za-z.+]* "
                      r"\(checked [0-9]{4}-[0-9]{2}-[0-9]{2}\)")
FIELD_WORDS = {"scan", "scans", "reproduction", "reproductions", "affected", "seen_failing", "fixed_in", "found",
               "printed", "install", "tool_version", "wheel", "wheels", "cuobjdump", "record", "range", "kb"}


@pytest.fixture(scope="module")
def entry():
    result = lint.check([GOOD])
    assert not result.problems
    return result.cells[0].entry


def _with(entry, triton=None, vllm=None, **fields):
    """The fixture entry with its triton and vllm components changed and other fields replaced."""
    components = [c.model_copy(update={"vllm": vllm, "triton": triton}[c.package] or {}) for c in entry.components]
    return entry.model_copy(update={"components": components, **fields})


def _run(entry, version: str, date: str, output: str | None = None) -> Reproduction:
    printed = Printed(output=output if output is not None else entry.signatures[0].text + "\n", exit=1,
                      tool_version=f"triton {version}", date=date, machine="x86_64 test machine")
    return Reproduction(install={"package": "triton", "version": version},
                        run={"tool": "triton", "input": "triton_compile.py", "args": ["--capability=120"]},
                        printed=printed)


def _wheel(version: str, sass: dict[str, int], build: str | None = None) -> Wheel:
    return Wheel(version=version, file=f"vllm-{version}-cp38-abi3-manylinux1_x86_64.whl", sha256="0" * 64,
                 build=build, libraries=[Library(path="vllm/_C.abi3.so", sass=sass, ptx={})])


def _scan(date: str, *wheels: Wheel) -> Scan:
    return Scan(package="vllm", library="vllm/_C.abi3.so", arch="sm_120", platform="manylinux_2_28_x86_64",
                python="3.11", versions=[w.version for w in wheels],
                tool={"package": "nvidia-cuda-cuobjdump", "version": "13.4.92"},
                found=Found(tool_version="V13.4.92", date=date, machine="m", wheels=list(wheels)))


def _reader_words(text: str) -> None:
    assert SENTENCE.fullmatch(text), text
    assert not FIELD_WORDS & set(re.findall(r"[a-z_]+", text)), text


def test_nothing_checked_says_nothing(entry):
    assert checked.phrases(entry) == {}


def test_the_newest_reproduced_release_and_its_day(entry):
    e = _with(entry, reproductions=[_run(entry, "3.7.0", "2026-12-05"), _run(entry, "3.6.0", "2026-11-20")])
    assert checked.checked(e, e.components[1]) == checked.Checked("3.7.0", "2026-12-05")
    assert checked.phrases(e) == {"triton": "every release up to 3.7.0 (checked 2026-12-05)"}
    _reader_words(checked.phrases(e)["triton"])


def test_one_release_that_does_not_fail_or_was_not_run_breaks_every(entry):
    passing = _run(entry, "3.7.0", "2026-12-05", output="compiled: 1 kernel\n")
    assert checked.phrases(_with(entry, reproductions=[_run(entry, "3.6.0", "2026-11-20"), passing])) == {}
    unrun = _run(entry, "3.7.0", "2026-12-05").model_copy(update={"printed": None})
    assert checked.phrases(_with(entry, reproductions=[_run(entry, "3.6.0", "2026-11-20"), unrun])) == {}


@pytest.mark.parametrize("component, said, known", [
    ({"affected": ">=3.2.0"}, "every release from 3.2.0 up to 3.7.0 (checked 2026-12-05)", True),
    ({"affected": ">3.2.0"}, "every release after 3.2.0 up to 3.7.0 (checked 2026-12-05)", True),
    ({"affected": "<3.8"}, None, False),  # the range already ends
    ({"affected": ">=3.2,<=3.7.0"}, None, False),
    ({"affected": "~=3.7"}, None, False),
    ({"affected": "==3.7.*"}, None, False),
    # open, and checked, but not a plain lower bound: the range is shown as it is
    ({"affected": ">=3.2,!=3.5.0"}, None, True),
    ({"affected": ">=3.8"}, None, False),  # the reproduced release is below the range
    ({"seen_failing": "==3.7.0"}, None, False),
    ({"fixed_in": "3.8.0", "fixed_by": "https://github.com/triton-lang/triton/pull/1"}, None, False),
])
def test_only_an_open_range_is_closed_by_a_check(entry, component, said, known):
    e = _with(entry, triton=component, reproductions=[_run(entry, "3.7.0", "2026-12-05")])
    assert (checked.checked(e, e.components[1]) is not None) == known
    assert checked.phrases(e).get("triton") == said
    if said:
        _reader_words(said)


def test_a_scan_whose_newest_wheel_still_lacks_the_code(entry):
    failing = _scan("2026-12-01", _wheel("0.9.1", {"sm_90": 1}), _wheel("0.10.0", {"sm_90": 1, "sm_100": 1}))
    e = _with(entry, scans=[failing])
    assert checked.phrases(e) == {"vllm": "every release up to 0.10.0 (checked 2026-12-01)"}
    _reader_words(checked.phrases(e)["vllm"])
    fixed = _scan("2026-12-01", _wheel("0.9.1", {"sm_90": 1}), _wheel("0.10.0", {"sm_120": 1}))
    assert checked.phrases(_with(entry, scans=[fixed])) == {}  # the scan found the fix: that is the range's end
    # A wheel of a build label that fails at any version says nothing about how far up the versions fail.
    labelled = _scan("2026-12-01", _wheel("0.9.1", {"sm_90": 1}), _wheel("0.10.0", {"sm_90": 1}, build="+cu118"))
    e = _with(entry, vllm={"affected": ">=0.9.0", "builds": ["+cu118"]}, scans=[labelled])
    assert checked.phrases(e) == {"vllm": "every release from 0.9.0 up to 0.9.1 (checked 2026-12-01)"}
