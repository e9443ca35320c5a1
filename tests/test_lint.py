"""The loader and linter: good input passes, each rule fires with its code, line and field."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from kb.records import crosscheck, lint, load, schema, validate
from kb.records.problems import MISSING

from conftest import FIXTURES, ROOT

GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
BAD = FIXTURES / "bad"
EXPECTED = json.loads((BAD / "expected.json").read_text(encoding="utf-8"))
LIVE = sorted((ROOT / "kb" / "entries").glob("*.yaml"))


def test_good_fixture_is_clean():
    result = lint.check([GOOD])
    assert result.problems == []
    assert [cell.id for cell in result.cells] == [GOOD.stem]


def test_bad_corpus_covers_every_single_file_rule():
    assert len(EXPECTED) >= 40
    assert sorted(EXPECTED) == sorted(p.name for p in BAD.glob("*.yaml"))
    codes = {case["code"] for case in EXPECTED.values()}
    single_file_rules = {"KB001", "KB002", "KB003", "KB004", "KB005", "KB006", "KB007", "KB008", "KB009",
                         "KB011", "KB020", "KB021", "KB022", "KB023", "KB024", "KB025", "KB026", "KB027",
                         "KB028", "KB030", "KB031", "KB032", "KB033", "KB034", "KB035", "KB036", "KB037",
                         "KB039", "KB042", "KB043"}
    assert single_file_rules <= codes


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_entry_is_rejected_with_code_line_and_field(name):
    expected = EXPECTED[name]
    result = lint.check([BAD / name])
    found = [(p.code, p.line, p.loc) for p in result.problems]
    assert (expected["code"], expected["line"], expected["field"]) in found, found
    assert result.problems
    for problem in result.problems:
        text = problem.format()
        assert text.startswith(f"tests/fixtures/bad/{name}:{problem.line}: {problem.loc}: ")
        assert text.endswith(f"[{problem.code}]")
        assert len(text) < 400  # giant values are cut short


def test_everything_wrong_fixture_full_ordered_list():
    result = lint.check([FIXTURES / "wrong"])
    assert [p.format() for p in result.problems] == [
        "tests/fixtures/wrong/everything-wrong.yaml:2: title: must not be empty or only whitespace (got '  ') [KB025]",
        'tests/fixtures/wrong/everything-wrong.yaml:3: summary: raw HTML is not allowed in prose; put code in `backticks` (found \'<a href="https://example.com">\') (got \'See <a href="https://example.com">this</a>.\') [KB042]',
        "tests/fixtures/wrong/everything-wrong.yaml:4: symptoms[1]: must be 'out-of-memory', 'crash', 'hang', 'wrong-output', 'startup-failure' or 'performance' (got 'melted') [KB023]",
        "tests/fixtures/wrong/everything-wrong.yaml:5: severity: unknown field; check its spelling against the schema (kb schema) (got 'high') [KB021]",
        "tests/fixtures/wrong/everything-wrong.yaml:7: status.state: must be 'fixed-release', 'fixed-main', 'fix-proposed', 'workaround-only', 'device-limit' or 'under-investigation' (got 'fixed') [KB023]",
        "tests/fixtures/wrong/everything-wrong.yaml:8: status.as_of: is not a real month (got '2026-13') [KB034]",
        "tests/fixtures/wrong/everything-wrong.yaml:9: status.source: must be an https:// link to a public tracker (got 'http://github.com/vllm-project/vllm/pull/1') [KB033]",
        "tests/fixtures/wrong/everything-wrong.yaml:11: signatures[0].text: literal text must not contain tabs; copy the line with spaces as printed (got 'RuntimeError: CUDA error\\t') [KB030]",
        "tests/fixtures/wrong/everything-wrong.yaml:13: signatures[1].text: literal text must not contain tabs; copy the line with spaces as printed (got 'RuntimeError: CUDA error\\t') [KB030]",
        "tests/fixtures/wrong/everything-wrong.yaml:16: hardware.architectures[0]: must be 'sm_120' or 'sm_121' (got 'sm120') [KB023]",
        'tests/fixtures/wrong/everything-wrong.yaml:17: hardware.gpus: must have at least 1 item after validation, not 0 [KB024]',
        "tests/fixtures/wrong/everything-wrong.yaml:19: components[0].package: must match pattern '^[a-z0-9][a-z0-9._-]*$' (got 'vLLM') [KB024]",
        "tests/fixtures/wrong/everything-wrong.yaml:21: components[0].affected: is not a PEP 440 version specifier such as '>=0.25.1,<0.26' (got '>>0.1') [KB035]",
        "tests/fixtures/wrong/everything-wrong.yaml:22: components[0].fixed_in: is not a PEP 440 version such as '0.6.18.post1' (got 'soon') [KB035]",
        "tests/fixtures/wrong/everything-wrong.yaml:23: mechanism: Markdown links must be https:// URLs (found 'javascript:alert(1)') (got '[x](javascript:alert(1))') [KB043]",
        "tests/fixtures/wrong/everything-wrong.yaml:25: measurements[0]: a measurement has exactly one of 'value' (a single number) or 'series' (rows) [KB027]",
        "tests/fixtures/wrong/everything-wrong.yaml:33: upstream[0].url: is not the URL form of a link of kind 'issue' on a known public tracker (got 'https://github.com/vllm-project/vllm/pull/2') [KB033]",
        "tests/fixtures/wrong/everything-wrong.yaml:34: upstream[0].state: state 'merged' does not fit a link of kind 'issue' (one of closed, open) (got 'merged') [KB028]",
        "tests/fixtures/wrong/everything-wrong.yaml:35: upstream[0].as_of: date is in the future (got '2099-01-01') [KB034]",
        "tests/fixtures/wrong/everything-wrong.yaml:38: related[0].how: must be 'same-root-number', 'look-alike', 'same-component' or 'same-symptom' (got 'twin') [KB023]",
        "tests/fixtures/wrong/everything-wrong.yaml:40: updated: 'updated' (2026-11-01) is before 'published' (2026-12-02) (got '2026-11-01') [KB039]",
    ]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_bad_file_name(tmp_path):
    path = _write(tmp_path, "Bad_Name.yaml", GOOD.read_text(encoding="utf-8"))
    problems = lint.check([path]).problems
    assert [(p.code, p.line, p.loc) for p in problems] == [("KB010", 1, "(file name)")]


def test_two_cells_sharing_a_first_signature(tmp_path):
    text = GOOD.read_text(encoding="utf-8")
    _write(tmp_path, "one.yaml", text)
    _write(tmp_path, "two.yaml", text)
    problems = [p for p in lint.check([tmp_path]).problems if p.code == "KB040"]
    first = next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith("  - text:"))
    assert [(p.path.name, p.code, p.line, p.loc) for p in problems] == [
        ("one.yaml", "KB040", first, "signatures[0].text"),
        ("two.yaml", "KB040", first, "signatures[0].text"),
    ]
    assert "also listed by two" in problems[0].message


def test_a_later_signature_may_be_shared(tmp_path):
    text = GOOD.read_text(encoding="utf-8")
    _write(tmp_path, "one.yaml", text.replace("related: []", "related:\n  - id: two\n    how: look-alike"))
    other = text.replace("triton.runtime.errors.OutOfResources: out of resource", "OutOfResources: out of resource", 1)
    _write(tmp_path, "two.yaml", other.replace("related: []", "related:\n  - id: one\n    how: look-alike"))
    assert lint.check([tmp_path]).problems == []


def test_same_id_in_two_folders(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(GOOD, tmp_path / "a" / "x.yaml")
    shutil.copy(GOOD, tmp_path / "b" / "x.yaml")
    codes = [p.code for p in lint.check([tmp_path / "a", tmp_path / "b"]).problems]
    assert codes == ["KB038"]


def test_related_to_an_invalid_cell_is_not_unknown(tmp_path):
    text = GOOD.read_text(encoding="utf-8")
    _write(tmp_path, "broken.yaml", text.replace("symptoms: [crash]", "symptoms: crash"))
    other = text.replace("triton.runtime", "x.triton.runtime").replace(
        "related: []", "related:\n  - id: broken\n    how: look-alike")
    _write(tmp_path, "other.yaml", other)
    codes = [p.code for p in lint.check([tmp_path]).problems]
    assert codes == ["KB022"]


def test_slug_collision_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(crosscheck, "slug", lambda text: "same")
    path = _write(tmp_path, "one.yaml", GOOD.read_text(encoding="utf-8"))
    problems = lint.check([path]).problems
    assert {(p.code, p.loc) for p in problems} == {("KB041", "signatures[0].text"), ("KB041", "signatures[1].text")}


def _leaves(data, loc=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, loc + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, loc + (i,))
    else:
        yield loc, data


def _set(data, loc, value):
    for part in loc[:-1]:
        data = data[part]
    data[loc[-1]] = value


@pytest.mark.parametrize("path", LIVE + [GOOD], ids=lambda p: p.name)
def test_breaking_any_text_field_names_file_line_and_field(path):
    loaded = load.load(path)
    assert loaded.problems == []
    for loc, value in _leaves(loaded.data):
        if not isinstance(value, str):
            continue
        broken = copy.deepcopy(loaded.data)
        _set(broken, loc, "")
        entry, problems = validate._validate(load.Loaded(path, broken, loaded.lines), path.stem)
        assert entry is None, loc
        assert [(p.line, p.loc) for p in problems] == [(loaded.lines[loc], load.dotted(loc))], loc


def test_live_entries_lint_clean():
    result = lint.check([ROOT / "kb" / "entries"])
    assert [p.format() for p in result.problems] == []
    assert len(result.cells) == len(LIVE) >= 8


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft202012Validator(schema.json_schema())


@pytest.mark.parametrize("path", LIVE + [GOOD], ids=lambda p: p.name)
def test_json_schema_accepts_valid_entries(validator, path):
    validator.validate(load.load(path).data)


# The JSON Schema carries types, choices, lengths, patterns and required fields; rules that need
# code (dates, URLs, whitespace) are the linter's alone.
SCHEMA_RULES = {"KB011", "KB020", "KB021", "KB022", "KB023", "KB024"}


@pytest.mark.parametrize("name", sorted(n for n, c in EXPECTED.items() if c["code"] in SCHEMA_RULES))
def test_json_schema_rejects_bad_entries(validator, name):
    data = load.load(BAD / name).data
    assert data is not None
    assert not validator.is_valid(data)


def test_json_schema_rejects_the_everything_wrong_entry(validator):
    data = load.load(FIXTURES / "wrong" / "everything-wrong.yaml").data
    assert not validator.is_valid(data)


def test_loader_never_constructs_objects():
    loaded = load.load(BAD / "python-object-tag.yaml")
    assert loaded.data is None
    assert loaded.problems[0].got is MISSING


@pytest.mark.slow
def test_checking_on_every_core_gives_the_same_answer_as_one_process(monkeypatch):
    """Past PARALLEL_FROM files the parse and validation run in worker processes: same cells,
    same problems (file, line, field, message), same order."""
    folders = [FIXTURES / "bad", FIXTURES / "good", ROOT / "kb" / "entries"]
    monkeypatch.setattr(lint, "PARALLEL_FROM", 10**9)
    one = lint.check(folders)
    monkeypatch.setattr(lint, "PARALLEL_FROM", 1)
    shared = lint.check(folders)
    assert [p.format() for p in shared.problems] == [p.format() for p in one.problems]
    assert one.problems and len(one.cells) > 30
    assert [(c.id, c.entry, c.lines) for c in shared.cells] == [(c.id, c.entry, c.lines) for c in one.cells]
