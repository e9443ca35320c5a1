"""Invisible and look-alike characters (attack review 2026-12-04, M1).

A signature copied with a zero-width space, a tag character, a Cyrillic `о` or a fullwidth letter
renders like the original, sits next to it in search, and `kb match` never finds it. The schema
refuses every character a reader cannot see (KB031), links are ASCII (KB033), and the linter
compares signatures by their confusable skeleton (kb.records.confusables), so a look-alike copy
of a literal is reported as the literal itself would be (KB032, KB040, KB041, KB047).
"""

from __future__ import annotations

import copy
import ctypes.util
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from pydantic import ValidationError

from kb import cli
from kb.records import confusables, lint, load, schema
from kb.records.rules import code_of_pydantic

from conftest import FIXTURES, ROOT

SPOOF = FIXTURES / "hostile" / "spoof"
GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
GOOD_DATA = load.load(GOOD).data
# A fixed_in needs the change that holds it (KB061): the fields below set fixed_in on components[0].
GOOD_DATA["components"][0].setdefault("fixed_commit", "0037a9c11")
ORIGINAL = "PleOffload: registered 1 PleOffloadLayer(s)"

# Each string field's kind of validator, as in tests/test_hostile_entries.py.
FIELDS = {
    "title": ("title",),
    "summary": ("summary",),
    "mechanism": ("mechanism",),
    "gpu": ("hardware", "gpus", 0),
    "remedy what": ("workarounds", 0, "what"),
    "signature": ("signatures", 0, "text"),
    "status.source (docs)": ("status", "source"),
    "upstream url": ("upstream", 0, "url"),
    "fixed_in": ("components", 0, "fixed_in"),
}
PLAIN = {"status.source (docs)": "https://docs.nvidia.com/cuda/x", "fixed_in": "0.12.0",
         "upstream url": "https://github.com/vllm-project/vllm/issues/53748"}
PROSE = {"title", "summary", "mechanism", "gpu", "remedy what"}

# The characters the review found accepted (M1): format characters, tag characters, fillers,
# variation selectors, private use, unassigned, and spaces other than U+0020.
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u2061", "\u2062", "\u2063",
             "\u2064", "\U000e0001", "\U000e0020", "\U000e0049", "\U000e007f", "\u034f", "\ufe00", "\ufe0f",
             "\U000e0100", "\u3164", "\u115f", "\u1160", "\uffa0", "\u2800", "\ufff9", "\ufffc", "\u17b4", "\u180b",
             "\U0001bca0", "\U0001d173", "\u0600", "\ue000", "\U000f0000", "\u0378", "\u2002", "\u3000", "\u202f"]


def _errors(data) -> dict[tuple, tuple[str, str]]:
    try:
        schema.Entry.model_validate(data)
    except ValidationError as exc:
        return {tuple(e["loc"]): (code_of_pydantic(e["type"]), e["msg"]) for e in exc.errors()}
    return {}


def _with(loc: tuple, value) -> dict:
    data = copy.deepcopy(GOOD_DATA)
    node = data
    for part in loc[:-1]:
        node = node[part]
    node[loc[-1]] = value
    return data


def _inserted(field: str, char: str) -> str:
    plain = PLAIN.get(field, "Plain words")
    mid = len(plain) // 2
    return plain[:mid] + char + plain[mid:]


# --- KB031: nothing a reader cannot see ----------------------------------------------------

@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_invisible_characters_are_refused_in_every_field(field, char):
    errors = _errors(_with(FIELDS[field], _inserted(field, char)))
    assert [code for code, _ in errors.values()] == ["KB031"], (field, errors)
    (message,) = [m for _, m in errors.values()]
    assert f"U+{ord(char):04X}" in message  # names the code point
    assert "delete it" in message or "type a plain space" in message  # and says what to do


def test_each_message_names_the_character_and_the_fix():
    cases = {
        "\u200b": "must not contain invisible format character U+200B ZERO WIDTH SPACE: it shows as nothing, so a "
                  "text holding it looks like one without it; delete it (retype the characters around it)",
        "\u3164": "must not contain U+3164 HANGUL FILLER, which shows as nothing or as a blank; delete it, or type "
                  "a plain space (U+0020) if a space is meant",
        "\ue000": "must not contain private-use character U+E000: no two fonts show it alike; delete it or write "
                  "the character it stands for",
        "\u00a0": "must not contain space character U+00A0 NO-BREAK SPACE; type a plain space (U+0020), as the "
                  "program prints it",
    }
    for char, message in cases.items():
        errors = _errors(_with(FIELDS["signature"], f"Plan index{char}3 is invalid"))
        assert list(errors.values()) == [("KB031", message)], char


@pytest.mark.parametrize("field", sorted(PROSE))
def test_prose_may_keep_a_no_break_space(field):
    assert _errors(_with(FIELDS[field], "MLA decode\u00a0: 102,400 bytes")) == {}


@pytest.mark.parametrize("field", sorted(set(FIELDS) - PROSE))
def test_literals_links_and_versions_refuse_a_no_break_space(field):
    errors = _errors(_with(FIELDS[field], _inserted(field, "\u00a0")))
    assert [code for code, _ in errors.values()] == ["KB031"], errors


def test_ordinary_text_of_other_languages_still_passes():
    for text in ("Décodage MLA : mémoire partagée épuisée", "共有メモリ不足", "Ошибка: нехватка памяти"):
        assert _errors(_with(FIELDS["title"], text)) == {}
        assert _errors(_with(FIELDS["signature"], text)) == {}


# --- KB033: links are ASCII, the host above all ----------------------------------------------

def test_a_look_alike_host_is_refused():
    url = "https://github.com/vllm-project/vllm/issues/53748".replace("github", "g\u0456thub")
    errors = _errors(_with(FIELDS["upstream url"], url))
    assert list(errors.values()) == [("KB033", "the host of a link must be ASCII: U+0456 CYRILLIC SMALL LETTER "
                                      "BYELORUSSIAN-UKRAINIAN I at character 10 makes it another host that looks "
                                      "the same; type the host name in ASCII")]


def test_non_ascii_in_a_path_must_be_percent_encoded():
    errors = _errors(_with(FIELDS["status.source (docs)"], "https://docs.nvidia.com/cuda/m\u00e9moire"))
    assert list(errors.values()) == [("KB033", "a link must be ASCII only (RFC 3986): U+00E9 LATIN SMALL LETTER E "
                                      "WITH ACUTE at character 31 is written percent-encoded, as %C3%A9")]
    assert _errors(_with(FIELDS["status.source (docs)"], "https://docs.nvidia.com/cuda/m%C3%A9moire")) == {}


# --- the skeleton --------------------------------------------------------------------------

def test_look_alike_copies_share_the_originals_skeleton():
    copies = ["PleOffl\u043ead: registered 1 PleOffloadLayer(s)",         # Cyrillic о
              "\uff30\uff4ceOffload: registered 1 PleOffloadLayer(s)",    # fullwidth
              "\U0001d5af\u217ceOffload: registered 1 PleOffloadLayer(s)",  # mathematical P, Roman numeral l
              "PleOff\u217c\u03bfad: registered 1 PleOffloadLayer(s)",    # Greek ο
              "PleOffload: r\u0435gistered 1 PleOffloadLayer(s)"]         # Cyrillic е
    for text in copies:
        assert confusables.skeleton(text) == confusables.skeleton(ORIGINAL) == ORIGINAL.lower(), text
        assert confusables.fold(text) == ORIGINAL, text
    assert confusables.skeleton("Plan index 3 is invalid") != confusables.skeleton("Plan index 3 is lnvalid")


def test_ascii_folds_to_itself_so_placeholders_survive():
    for text in ("Plan index {int} is invalid", "at {path} Unsupported architecture", "I l 1 0 O rn m |"):
        assert confusables.fold(text) == text
    assert confusables.describe("Ошибка") == "U+041E CYRILLIC CAPITAL LETTER O for 'O' at character 1"


def test_the_table_maps_non_ascii_to_ascii_and_folding_is_stable():
    table = confusables._table()
    assert len(table) > 500
    for char, target in table.items():
        assert not char.isascii() and target.isascii() and target.isprintable(), (char, target)
        assert unicodedata.category(char) not in ("Cf", "Cn", "Co", "Zs"), char
    for char in list(table)[::7]:
        assert confusables.fold(confusables.fold(char)) == confusables.fold(char)


@pytest.mark.skipif(not ctypes.util.find_library("icui18n"), reason="ICU not installed (apt-get install libicu-dev)")
def test_the_vendored_table_is_what_icu_says():
    done = subprocess.run([sys.executable, "tools/confusables.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# --- the spoof cells of the review ----------------------------------------------------------

def _lines(folder: Path, capsys) -> list[str]:
    code = cli.main(["check", str(folder)])
    out, _ = capsys.readouterr()
    assert code == 1
    return out.splitlines()


def _where(line: str) -> tuple[str, str, str, str]:
    """(file, line, field, code) of one `kb check` line."""
    found = re.match(r"^(\S+?):(\d+): (\S+): .* \[(KB0\d\d)\]$", line)
    assert found, line
    return found.groups()


def _signature_line(path: Path, index: int) -> str:
    """The line of signatures[index]'s text in a fixture, as `kb check` should name it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index("signatures:")
    texts = [n for n, line in enumerate(lines[start:], start + 1) if line.startswith("  - text:")]
    return str(texts[index])


def test_kb_check_reports_every_spoof_with_file_line_field_and_code(capsys):
    found = {_where(line) for line in _lines(SPOOF, capsys)}
    rel = os.path.relpath(SPOOF)

    def at(name: str, index: int, code: str) -> tuple[str, str, str, str]:
        return f"{rel}/{name}", _signature_line(SPOOF / name, index), f"signatures[{index}].text", code

    expected = {
        at("spoof-zwsp.yaml", 0, "KB031"),
        at("spoof-tag.yaml", 0, "KB031"),
        # A look-alike copy is reported as an exact copy would be: the first signature twice
        # (KB040), a line both cells fit (KB047), and the copy itself (KB041).
        *(at(name, 0, code) for name in ("spoof-cyrillic.yaml", "spoof-fullwidth.yaml")
          for code in ("KB040", "KB041", "KB047", "KB063")),
        # the original's PleOffload line is its second signature (its first is the hang, KB063)
        at("ple-offload-hang-tp1.yaml", 1, "KB047"),
    }
    assert found == expected


@pytest.fixture(scope="module")
def spoof_check() -> list[str]:
    """The lines the installed `kb check` prints for the spoof folder (run once: the same for every file)."""
    return subprocess.run([str(Path(sys.executable).parent / "kb"), "check", str(SPOOF)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60).stdout.splitlines()


def test_each_spoof_file_names_its_rules_in_its_header(spoof_check):
    cases = sorted(SPOOF.glob("spoof-*.yaml"))
    assert cases
    for case in cases:
        header = case.read_text(encoding="utf-8").splitlines()[1]
        codes = set(re.findall(r"KB0\d\d", header))
        assert codes == {_where(line)[3] for line in spoof_check if f"/{case.name}:" in line} - {"KB047"}, case.name


def test_the_copy_message_names_the_look_alike_and_the_original(capsys):
    lines = [line for line in _lines(SPOOF, capsys) if "spoof-cyrillic.yaml" in line and "[KB041]" in line]
    assert lines == [
        f"{os.path.relpath(SPOOF)}/spoof-cyrillic.yaml:{_signature_line(SPOOF / 'spoof-cyrillic.yaml', 0)}: "
        "signatures[0].text: looks the same as "
        "ple-offload-hang-tp1 signatures[1] but is written with look-alike characters (U+043E CYRILLIC SMALL "
        "LETTER O for 'o' at character 8): type the literal as the program prints it; two texts that look the "
        "same get pages that look the same (got 'PleOffl\u043ead: registered 1 PleOffloadLayer(s)') [KB041]"]


def _cell(tmp_path: Path, name: str, signatures: list[str], related: list[str] = ()) -> Path:
    data = copy.deepcopy(GOOD_DATA)
    data["signatures"] = [{"text": text, "kind": "log-line"} for text in signatures]
    data["related"] = [{"id": other, "how": "look-alike"} for other in related]
    data.pop("evidence", None)
    import yaml

    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_a_look_alike_copy_in_the_same_cell_is_a_duplicate(tmp_path):
    path = _cell(tmp_path, "plan-index-a", ["RuntimeError: Plan index 3 is invalid",
                                            "RuntimeError: Plan index 3 is \u0456nvalid"])
    problems = [p for p in lint.check([path]).problems if p.code == "KB032"]
    assert [(p.loc, p.message) for p in problems] == [
        ("signatures[1].text", "same text as signatures[0] (written with look-alike characters: U+0456 CYRILLIC "
                               "SMALL LETTER BYELORUSSIAN-UKRAINIAN I for 'i' at character 31); list it once")]


def test_related_cells_still_may_not_hold_a_look_alike_copy(tmp_path):
    """Listing each other in `related` answers KB047 (two real strings one line fits), not a copy."""
    a = _cell(tmp_path, "plan-index-a", ["RuntimeError: Plan index 3 is invalid"], ["plan-index-b"])
    b = _cell(tmp_path, "plan-index-b", ["cuDNN plan index 3 out of range",
                                         "RuntimeError: Plan \u0456ndex 3 is invalid"], ["plan-index-a"])
    problems = lint.check([a, b]).problems
    assert [(p.path.name, p.loc, p.code) for p in problems] == [("plan-index-a.yaml", "signatures[0].text", "KB040"),
                                                                ("plan-index-b.yaml", "signatures[1].text", "KB041")]


@pytest.mark.parametrize("copied", ["RuntimeError: Plan index 3 is invalid", "RuntimeError: Plan index 3 is inv\u0430lid"])
def test_a_look_alike_copy_at_a_later_signature_is_reported_as_the_copy_is(tmp_path, copied):
    a = _cell(tmp_path, "plan-index-a", ["RuntimeError: Plan index 3 is invalid"])
    b = _cell(tmp_path, "plan-index-b", ["cuDNN plan index 3 out of range", copied])
    codes = sorted((p.path.name, p.code) for p in lint.check([a, b]).problems)
    # The exact copy: a's first signature is not its own (KB040), and one line fits both (KB047);
    # the look-alike copy the same, and the copy itself (KB041).
    extra = [("plan-index-b.yaml", "KB041")] if not copied.isascii() else []
    assert codes == sorted([("plan-index-a.yaml", "KB040"), ("plan-index-a.yaml", "KB047"),
                            ("plan-index-b.yaml", "KB047")] + extra)


def test_letter_case_alone_is_not_a_look_alike_copy(tmp_path):
    a = _cell(tmp_path, "plan-index-a", ["CUDA error: misaligned address"], ["plan-index-b"])
    b = _cell(tmp_path, "plan-index-b", ["cuDNN plan index 3 out of range", "CUDA Error: misaligned address"],
              ["plan-index-a"])
    problems = lint.check([a, b]).problems
    # kb match compares lower case, so a's first signature is not its own; but it is no copy (no KB041).
    assert [(p.path.name, p.code, p.message) for p in problems] == [
        ("plan-index-a.yaml", "KB040", "the first signature is also listed by plan-index-b (in other letter case: "
                                       "kb match compares lower case); put a signature only this cell has first")]


def test_the_live_entries_pass():
    assert lint.check([ROOT / "kb" / "entries"]).problems == []
