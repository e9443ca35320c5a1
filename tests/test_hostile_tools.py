"""The command-line tools against input written by an attacker: logs, facts files, entry files.

Cases, each a file under tests/fixtures/hostile/ unless said otherwise:

kb doctor runs no code from the folder it is started in (files made in a temp folder):
  pynvml.py, json.py, torch.py, ctypes.py  write a marker when imported; none may be imported
  nvcc                                     an executable in the folder, with `.` and an empty entry
                                           on PATH; never run

kb doctor --facts FILE: exit 2 and one clear message, never a traceback (facts/):
  deep-nesting.json          2,000 nested arrays (past the interpreter's recursion limit)
  deep-but-small.json        20 levels: parses, but no facts file is that deep
  int-4000-digits.json       memory_bytes with 4,000 digits (was an OverflowError in the report)
  int-5000-digits.json       past Python's int-max-str-digits (was a ValueError from json)
  int-out-of-range.json      20-digit memory, 8-digit SM count: above the facts' ceilings
  nan.json, infinity.json    NaN and -Infinity, which JSON does not allow
  float-1e400.json           a float that overflows to infinity
  float-for-int.json         48.0 where an integer belongs
  not-utf8.json, bom.json    bytes that are not UTF-8; a byte-order mark
  nul-byte.json, empty.json  a NUL after the object; nothing at all
  duplicate-key.json         "gpus" twice (JSON would silently keep the second)
  wrong-types.json           a string, a list, a number, an object, each where another type belongs
  not-an-object.json         a bare string
  long-string.json           a 10,000-character GPU name
  many-errors.json           500 bad values: the message lists 20 and counts the rest
  escape-in-gpu-name.json    ESC [2K, CR, a fake `ok:` and U+202E in the GPU name
  escape-in-key.json         ESC and CR in a package name and in an unknown top-level key (OSC title)
  bidi-in-version.json       U+202E in a package version
  c1-in-note.json            C1 CSI (U+009B) in a note
  del-in-env.json            DEL in an environment value
  line-separator-in-platform.json  U+2028 in the platform
  lone-surrogate.json        \\ud800 in the GPU name (cannot even be printed)
  noncharacter.json          U+FDD0 and U+FFFF in the driver version
  (made in the test)         100,000 nested arrays; a 50 MB file; the same bytes on standard
                             input; seeded random mutations of a good facts file

kb match shows log lines with controls escaped (logs/):
  escapes.log  the good fixture's error line wrapped in colour codes, then CR, ESC [2K, a fake
               `ok:`, U+202E, U+2028, U+2066; an OSC title sequence with BEL; a 5,000-character
               line led by C1 CSI

kb check shows key names, values and file names with controls escaped (entries-escape/):
  escape-in-key.yaml    a key "\\e[2K\\rok: 24 entries checked"
  escape-in-title.yaml  the same in the title, with U+202E
  (made in the test)    an entry whose file name holds ESC, CR and a fake `ok:`
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kb import cli
from kb.doctor import diagnose, facts
from kb.doctor.facts import Facts, Gpu
from kb.records import lint
from kb.records.problems import Problem
from kb.records.visible import risky, visible

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "fixtures" / "hostile"
HOSTILE_FACTS = sorted((HOSTILE / "facts").glob("*.json"))
ENTRIES = ROOT / "tests" / "fixtures" / "facts" / "entries"
GOOD_FACTS = ROOT / "tests" / "fixtures" / "facts" / "rtx-pro-6000-sglang-0.5.18.json"
GOOD_ENTRIES = ROOT / "tests" / "fixtures" / "good"  # the escapes.log error line is its signature
KB = Path(sys.executable).parent / "kb"  # the installed console script, as a user runs it

# What must never reach a terminal raw: one of each kind `kb.records.visible` escapes.
RAW = ["\x1b", "\r", "\x07", "\x00", "\x7f", "\x9b", "\u202a", "\u202e", "\u2066", "\u2069", "\u200e", "\u200f",
       "\u061c", "\u2028", "\u2029", "\ufeff", "\u200b"]


def clean(text: str) -> bool:
    """Nothing risky but line breaks, and no line that starts with a fake `ok`."""
    return (not any(risky(c) for c in text.replace("\n", ""))
            and not any(line.startswith("ok") for line in text.splitlines()))


# --- kb.records.visible ------------------------------------------------------------------------------------

@pytest.mark.parametrize("char", RAW + [chr(c) for c in range(32)] + [chr(c) for c in range(0x80, 0xA0)]
                         + ["\u202b", "\u202c", "\u202d", "\u2067", "\u2068", "\ufdd0", "\uffff", "\U000e0001",
                            "\ud800"])
def test_every_risky_character_is_escaped(char):
    shown = visible(f"a{char}b")
    assert shown.startswith("a\\") and shown.endswith("b") and shown.isascii() and shown.isprintable()


def test_ordinary_text_is_unchanged():
    for text in ("tests/fixtures/bad/x.yaml", "signatures[0].text", "Grüße, 你好, Привет, 🙂, a\u00a0b, C:\\cuda\\bin",
                 "RuntimeError: CUDA error: no kernel image is available for execution on the device"):
        assert visible(text) == text
    assert visible("\x1b[2K\rok\u202e") == "\\x1b[2K\\rok\\u202e"
    assert visible("\t\n") == "\\t\\n"


def test_long_text_is_cut_with_its_length_and_never_inside_an_escape():
    shown = visible("x" * 10_000, 100)
    assert len(shown) <= 100 and shown.endswith("... (10,000 characters)") and shown.startswith("x" * 70)
    shown = visible("\x1b" * 100, 60)
    head = shown[: shown.index("...")]
    assert len(shown) <= 60 and head and head == "\\x1b" * (len(head) // 4)
    assert visible("\x1b" * 10, 200) == "\\x1b" * 10  # short enough once escaped: not cut
    assert visible("a" * 10**7, 200).endswith("(10,000,000 characters)")


# --- A. kb doctor runs nothing from its working directory -------------------------------------------

PLANTED = ("pynvml", "json", "torch", "ctypes")


def _plant(folder: Path) -> Path:
    markers = folder / "markers"
    markers.mkdir()
    for name in PLANTED:
        (folder / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').write('imported')\n",
                                           encoding="utf-8")
    nvcc = folder / "nvcc"
    nvcc.write_text(f"#!/bin/sh\necho ran > {markers / 'nvcc'}\n"
                    "echo 'Cuda compilation tools, release 99.9, V99.9.9'\n", encoding="utf-8")
    nvcc.chmod(0o755)
    return markers


def test_doctor_imports_and_runs_nothing_from_the_working_directory(tmp_path):
    assert KB.exists(), f"{KB}: the kb console script is not installed in this environment"
    markers = _plant(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = os.pathsep.join(["", ".", env.get("PATH", os.defpath)])  # both spellings of "here"
    done = subprocess.run([str(KB), "doctor", "--json", "--entries", str(ENTRIES)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert sorted(p.name for p in markers.iterdir()) == []
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    probed = Facts.model_validate(data["facts"])
    assert data["key"] == diagnose.environment_key(probed)
    # This machine has no GPU: the probes say so as they do anywhere else, after finding their
    # packages in the interpreter's site-packages (which -I keeps).
    notes = " ".join(probed.notes)
    if importlib.util.find_spec("pynvml") is not None:
        assert "pynvml (nvidia-ml-py) is not importable" not in notes, notes
    if probed.gpus == []:
        assert "no NVIDIA driver found" in notes
    human = subprocess.run([str(KB), "doctor", "--entries", str(ENTRIES)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert human.returncode == 0, human.stderr
    assert "Environment key (paste it into bug reports): " in human.stdout
    assert sorted(p.name for p in markers.iterdir()) == []


def test_nvcc_is_never_looked_up_in_the_working_directory(tmp_path, monkeypatch):
    markers = _plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", "bin-relative", os.environ.get("PATH", os.defpath)]))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    version, _ = facts.nvcc_version(10)
    assert version != "99.9.9" and not (markers / "nvcc").exists()
    monkeypatch.setenv("CUDA_HOME", ".")  # a relative CUDA_HOME is not used either
    (tmp_path / "bin").mkdir()
    (tmp_path / "nvcc").rename(tmp_path / "bin" / "nvcc")
    version, _ = facts.nvcc_version(10)
    assert version != "99.9.9" and not (markers / "nvcc").exists()


def test_probe_children_are_isolated_in_an_empty_folder(tmp_path, monkeypatch):
    _plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    code = ("import json, os, sys; print(json.dumps({'cwd': os.getcwd(), 'files': os.listdir('.'), "
            "'isolated': sys.flags.isolated, 'path': sys.path, 'json': json.__file__}))")
    got = facts.run_children({"where": code}, timeout=30)["where"]
    assert "error" not in got, got
    assert got["isolated"] == 1 and got["files"] == []
    assert Path(got["cwd"]).resolve() != tmp_path.resolve()
    assert "" not in got["path"] and str(tmp_path) not in got["path"]
    assert not got["json"].startswith(str(tmp_path))


def test_probed_strings_are_escaped_and_bad_numbers_dropped():
    code = ("import json; print(json.dumps({'gpus': [{'name': '\\x1b[2K\\rok: NVIDIA\\u202e', "
            "'compute_capability': '12.0', 'memory_bytes': 10**30, 'sm_count': 188}], "
            "'driver_version': '580\\x07.1'}))")
    got = facts.probe(probes={"nvml": code}, timeout=30)
    assert got.gpus == [Gpu(name="\\x1b[2K\\rok: NVIDIA\\u202e", compute_capability="12.0", sm_count=188)]
    assert got.driver_version == "580\\x07.1"
    assert any("memory_bytes" in note and "treated as unknown" in note for note in got.notes)
    key = diagnose.environment_key(got)
    text = diagnose.report(got, key, diagnose.verdicts(_cells(), got), set())
    assert clean(text) and "GPU 0: \\x1b[2K\\rok: NVIDIA\\u202e; architecture sm_120" in text


def test_environment_values_are_escaped_and_odd_names_left_out(monkeypatch):
    monkeypatch.setenv("VLLM_HOSTILE", "\x1b[2K\rok" + "x" * 5000)
    monkeypatch.setenv("VLLM_NOT-A-NAME", "1")
    env = facts.environment(set(), {"VLLM_HOSTILE"})  # a value a record compares is reported, escaped
    assert "VLLM_NOT-A-NAME" not in env
    assert env["VLLM_HOSTILE"].startswith("\\x1b[2K\\rokxxx") and len(env["VLLM_HOSTILE"]) <= facts.ENV_VALUE
    Facts(env=env)  # what the probe builds is always a valid Facts


# --- B. facts files: exit 2 and a message, whatever they hold ----------------------------------------

def _doctor(capsys, *args, stdin: bytes | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = cli.main(["doctor", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _refused(code: int, out: str, err: str, source: str) -> None:
    assert code == 2 and not out
    lines = err.splitlines()
    assert lines[0] == "kb doctor: bad facts file" and len(lines) >= 2, err
    assert all(line.startswith(f"{source}: ") for line in lines[1:]), err
    assert "Traceback" not in err and len(err) < 5000
    assert clean(err), err


@pytest.mark.parametrize("path", HOSTILE_FACTS, ids=lambda p: p.name)
def test_hostile_facts_file_exits_2_with_a_message(capsys, monkeypatch, path):
    shown = os.path.relpath(path)
    _refused(*_doctor(capsys, "--facts", shown, "--entries", str(ENTRIES)), shown)
    _refused(*_doctor(capsys, "--json", "--facts", "-", "--entries", str(ENTRIES), stdin=path.read_bytes(),
                      monkeypatch=monkeypatch), "<stdin>")


@pytest.mark.parametrize("name, words", [
    ("deep-nesting.json", "nested more than 8 deep"),
    ("int-4000-digits.json", "a number has 4,000 digits"),
    ("int-5000-digits.json", "a number has 5,000 digits"),
    ("int-out-of-range.json", "gpus[0].memory_bytes: must be less than or equal to 1125899906842624"),
    ("nan.json", "NaN is not a number JSON allows"),
    ("float-1e400.json", "the number 1e400 is out of range"),
    ("not-utf8.json", "not UTF-8 text (byte 0xff at offset 27)"),
    ("duplicate-key.json", 'key "gpus" appears twice'),
    ("many-errors.json", "... and 480 more problem(s)"),
    ("escape-in-gpu-name.json", 'gpus[0].name: must not contain control or format characters (found \\x1b at offset 0) '
                                '(got "\\u001b[2K\\rok: NVIDIA H200\\u202e")'),
    ("escape-in-key.json", "packages.\\x1b[2K\\rok: vllm"),
    ("bidi-in-version.json", "packages.vllm: must not contain control or format characters (found \\u202e"),
    ("noncharacter.json", "(found \\ufdd0 at offset 3)"),
])
def test_hostile_facts_messages_say_what_is_wrong(capsys, name, words):
    code, _, err = _doctor(capsys, "--facts", str(HOSTILE / "facts" / name), "--entries", str(ENTRIES))
    assert code == 2 and words in err, err


def test_facts_past_every_limit_made_here(capsys, monkeypatch, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"gpus": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    big = tmp_path / "big.json"
    with big.open("wb") as file:  # valid JSON, 50 MB of it
        file.write(b'{"notes": ["' + b"x" * (50 * 1024 * 1024) + b'"]}')
    for path, words in ((deep, "nested more than 8 deep"), (big, "over 1,048,576 bytes")):
        code, out, err = _doctor(capsys, "--facts", str(path), "--entries", str(ENTRIES))
        _refused(code, out, err, str(path))
        assert words in err
    code, out, err = _doctor(capsys, "--facts", "-", "--entries", str(ENTRIES), stdin=deep.read_bytes(),
                             monkeypatch=monkeypatch)
    _refused(code, out, err, "<stdin>")
    code, out, err = _doctor(capsys, "--facts", str(tmp_path), "--entries", str(ENTRIES))
    _refused(code, out, err, str(tmp_path))


def test_every_number_has_a_ceiling_and_the_ceiling_itself_reports(capsys, tmp_path):
    data = json.loads(GOOD_FACTS.read_text(encoding="utf-8"))
    data["gpus"][0].update(memory_bytes=facts.MAX_MEMORY_BYTES, sm_count=facts.MAX_SM_COUNT,
                           shared_memory_per_sm_bytes=facts.MAX_SHARED_MEMORY_BYTES,
                           shared_memory_per_block_optin_bytes=facts.MAX_SHARED_MEMORY_BYTES)
    path = tmp_path / "ceiling.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = _doctor(capsys, "--facts", str(path), "--entries", str(ENTRIES))
    assert code == 0, err
    assert "memory 1048576.0 GiB; SMs 10000" in out
    for field in ("memory_bytes", "sm_count", "shared_memory_per_sm_bytes", "shared_memory_per_block_optin_bytes"):
        over = json.loads(path.read_text(encoding="utf-8"))
        over["gpus"][0][field] += 1
        path.write_text(json.dumps(over), encoding="utf-8")
        code, _, err = _doctor(capsys, "--facts", str(path), "--entries", str(ENTRIES))
        assert code == 2 and f"gpus[0].{field}: must be less than or equal to" in err, err
        path.write_text(json.dumps(data), encoding="utf-8")


NASTY = [b"\x00", b"\xff", b"\x1b[2K\r", b"\\u202e", b"\\ud800", b"NaN", b"-Infinity", b"1e400", b"9" * 30,
         b"[" * 50, b"]", b"{", b"}", b'"', b",", b":", b"null", b"true", b"-0", b"1.5", b'"gpus"', b'"facts"',
         b'"key"', b"\xef\xbb\xbf", b"\\", b'"\\u0000"', "\u2028".encode(), b"[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]"]


def test_random_mutations_of_a_good_facts_file_never_raise():
    """Seeded fuzz: a good file with bytes flipped, cut out or nasty tokens put in. Each is either
    refused (FactsError) or accepted, and then both reports are made and are clean."""
    good = GOOD_FACTS.read_bytes()
    cells = _cells()
    rng = random.Random(20261203)
    accepted = refused = 0
    for _ in range(600):
        raw = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(raw))
            action = rng.random()
            if action < 0.3:
                raw[at] = rng.randrange(256)
            elif action < 0.5:
                del raw[at: at + rng.randint(1, 20)]
            else:
                raw[at:at] = rng.choice(NASTY)
        stdin = io.TextIOWrapper(io.BytesIO(bytes(raw)), encoding="utf-8")
        try:
            got = diagnose.read_facts("-", stdin)
        except diagnose.FactsError as exc:
            refused += 1
            assert clean(str(exc)) and str(exc).startswith("<stdin>: "), str(exc)
            continue
        accepted += 1
        key = diagnose.environment_key(got)
        results = diagnose.verdicts(cells, got)
        assert clean(diagnose.report(got, key, results, diagnose.record_packages(cells)))
        assert clean(json.dumps({"facts": got.model_dump(mode="json"), "key": key,
                                 "cells": [r.as_json() for r in results]}, ensure_ascii=False))
    assert accepted > 20 and refused > 300, (accepted, refused)


def _cells():
    return lint.check([ENTRIES]).cells


def test_report_escapes_facts_strings_that_skipped_validation():
    """The report does not rely on validation alone (a Facts built in code skips it)."""
    hostile = "\x1b[2K\rok: fine\u202e"
    got = Facts.model_construct(
        facts_version=1, gpus=[Gpu.model_construct(name=hostile, compute_capability="12.0", memory_bytes=None,
                                                   shared_memory_per_sm_bytes=None,
                                                   shared_memory_per_block_optin_bytes=None, sm_count=None)],
        driver_version=hostile, cuda_driver_version=hostile, cuda_runtime_version=hostile,
        packages={"vllm": hostile}, env={"VLLM_X": hostile}, python=hostile, platform=hostile, notes=[hostile])
    cells = _cells()
    text = diagnose.report(got, "k", diagnose.verdicts(cells, got), {"vllm"})
    assert clean(text) and "\\x1b[2K\\rok: fine\\u202e" in text


# --- C. kb match and kb check show untrusted text escaped -------------------------------------------

def test_match_shows_log_lines_with_controls_escaped(capsys):
    log = HOSTILE / "logs" / "escapes.log"
    code = cli.main(["match", "--entries", str(GOOD_ENTRIES), str(log)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "[mla-decode-fp8-kv-triton-shared-memory]" in out
    assert clean(out) and not any(char in out for char in RAW)
    assert ("   line 2: \\x1b[31mtriton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
            "102400, Hardware limit: 101376\\x1b[0m\\r\\x1b[2Kok: all good \\u202etxt.exe\\u2028\\u2066\n") in out
    line4 = next(line for line in out.splitlines() if line.startswith("   line 4: "))
    assert line4.startswith("   line 4: \\x9b2Ktriton.runtime") and line4.endswith("... (5,114 characters)")
    assert len(line4) <= len("   line 4: ") + 200
    code = cli.main(["match", "--json", "--entries", str(GOOD_ENTRIES), str(log)])
    out, _ = capsys.readouterr()
    assert code == 0 and clean(out)
    assert [hit["lines"] for hit in json.loads(out)] == [[2, 4]]


def test_match_output_bytes_hold_no_escape_sequences():
    """The bytes a terminal would get, from the installed command reading standard input."""
    done = subprocess.run([str(KB), "match", "--entries", str(GOOD_ENTRIES), "-"],
                          input=(HOSTILE / "logs" / "escapes.log").read_bytes(), capture_output=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("utf-8")
    assert "mla-decode-fp8-kv-triton-shared-memory" in text and "\\x1b[31m" in text
    assert clean(text) and b"\x1b" not in done.stdout and b"\r" not in done.stdout


def test_check_shows_hostile_keys_and_values_escaped(capsys):
    code = cli.main(["check", str(HOSTILE / "entries-escape")])
    out, err = capsys.readouterr()
    assert code == 1
    assert clean(out) and clean(err) and "\x1b" not in out + err
    assert "escape-in-title.yaml:1: title: " in out and "(got '\\x1b[2K\\rok: 24 entries checked \\u202eMLA')" in out
    # the loader may refuse the key itself (KB006) or the schema may call it unknown (KB021): either
    # way its line is reported, and where the key is named it is named escaped
    assert "escape-in-key.yaml:79: " in out
    assert "2 problem(s) in 2 of 2 file(s)" in err


def test_check_shows_a_hostile_file_name_escaped(capsys, tmp_path):
    good = (ROOT / "tests" / "fixtures" / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml").read_text(
        encoding="utf-8")
    path = tmp_path / "x\x1b[2K\rok: 1 entry checked\u202e.yaml"
    path.write_text(good, encoding="utf-8")
    code = cli.main(["check", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and out
    assert clean(out) and clean(err)
    assert all("x\\x1b[2K\\rok: 1 entry checked\\u202e.yaml:" in line for line in out.splitlines())


def test_problem_format_escapes_every_untrusted_part_and_keeps_the_plain_format():
    plain = Problem(Path("tests/fixtures/bad/x.yaml"), 12, "signatures[0].text", "must not be empty", "KB025", "")
    assert plain.format() == "tests/fixtures/bad/x.yaml:12: signatures[0].text: must not be empty (got '') [KB025]"
    hostile = Problem(Path("a\x1b[2K.yaml"), 3, "key\x1b[2K\rok: 24 entries checked", "id is also used by b\r.yaml",
                      "KB021", "v\x1b\u202e")
    assert hostile.format() == ("a\\x1b[2K.yaml:3: key\\x1b[2K\\rok: 24 entries checked: id is also used by b\\r.yaml "
                                "(got 'v\\x1b\\u202e') [KB021]")
    long = Problem(Path("x.yaml"), 1, "k" * 5000, "unknown field", "KB021").format()
    assert len(long) < 300 and "... (5,000 characters)" in long


# --- no write or message through a link (attack review 2026-12-05, N2) ---------------------------

VICTIM = "# my shell setup\nexport PATH=$HOME/bin:$PATH\nalias ll=SECRET-LINE-1\n"


def _linked_locks(tmp_path):
    """Both locks as a pull request can commit them: relative links to a file outside."""
    victim = tmp_path / "victim" / ".bashrc"
    victim.parent.mkdir()
    victim.write_text(VICTIM, encoding="utf-8")
    (tmp_path / "kb").mkdir()
    url_lock, id_lock = tmp_path / "kb" / "urls.lock", tmp_path / "kb" / "ids.lock"
    for link in (url_lock, id_lock):
        link.symlink_to(Path("..") / "victim" / ".bashrc")
    return victim, url_lock, id_lock


def test_the_locks_are_never_written_through_a_link(tmp_path):
    from kb.records import ids
    from kb.site import sources, urls

    victim, url_lock, id_lock = _linked_locks(tmp_path)
    with pytest.raises(sources.SourceError, match="symbolic link"):
        urls.write_lock(url_lock, [], ["about/"])
    with pytest.raises(ValueError, match=r"KB076"):
        ids.write(id_lock, [])
    assert victim.read_text(encoding="utf-8") == VICTIM and url_lock.is_symlink() and id_lock.is_symlink()


def test_kb_lock_refuses_linked_locks_and_writes_nothing(tmp_path, capsys):
    victim, url_lock, id_lock = _linked_locks(tmp_path)
    assert cli.main(["lock", "--lock", str(url_lock), "--ids", str(id_lock)]) == 1
    err = capsys.readouterr().err
    assert "KB076" in err and "nothing written" in err and "SECRET-LINE" not in err
    assert victim.read_text(encoding="utf-8") == VICTIM


def test_a_linked_lock_is_kb076_and_its_target_is_never_shown(tmp_path):
    from kb.records import ids
    from kb.site import urls

    victim, url_lock, id_lock = _linked_locks(tmp_path)
    locked, problems = ids.read(id_lock)
    assert locked == [] and [p.code for p in problems] == ["KB076"]
    cells = lint.check([ENTRIES]).cells
    found = urls.site_problems(cells, url_lock, None, id_lock=id_lock)
    assert sorted(p.code for p in found) == ["KB076", "KB076"]
    shown = "\n".join(p.format() for p in found)
    assert "SECRET-LINE" not in shown and "PATH" not in shown and "KB077" not in shown


# --- an endless standard input (attack review 2026-12-05, N9) ------------------------------------

class _Endless:
    """`< /dev/zero`, counting what was read; reading far past the bound fails the test (main copied
    standard input without a limit)."""

    def __init__(self, stop: int):
        self.read_bytes, self.stop = 0, stop

    def read(self, size: int = -1) -> bytes:
        size = 1 << 16 if size is None or size < 0 else size
        self.read_bytes += size
        assert self.read_bytes <= self.stop, f"read {self.read_bytes} bytes of an endless standard input"
        return b"\0" * size


def test_kb_match_stdin_keeps_at_most_the_bound_then_refuses(monkeypatch, capsys):
    from kb.triage import stdin

    monkeypatch.setattr(stdin, "LIMIT", 4 << 20)
    endless = _Endless(stop=16 << 20)
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=endless))
    assert cli.main(["match", "--entries", str(GOOD_ENTRIES), "-"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and endless.read_bytes <= (4 << 20) + 1
    assert err == ("kb match: standard input holds more than 4 MiB, more than `kb match -` keeps; save the log to a "
                   "file and run `kb match FILE` (a file is read where it lies, not copied)\n")


def test_kb_match_stdin_under_the_bound_is_matched_whole(monkeypatch, capsys):
    from kb.triage import stdin

    monkeypatch.setattr(stdin, "LIMIT", 4 << 20)
    log = b"INFO padding\n" * 100_000 + b"RuntimeError: nothing known\n"  # 1.3 MB, beyond one read
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log)))
    assert cli.main(["match", "--entries", str(GOOD_ENTRIES), "-"]) == 1
    assert "RuntimeError: nothing known" in capsys.readouterr().out
