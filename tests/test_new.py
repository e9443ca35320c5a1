"""`kb new`: the skeleton it writes is valid as written, its only problems are the TODO markers
(KB046, with file, line and field), and once they are filled it lints clean."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kb import cli
from kb.edit import new
from kb.records import lint, load, schema

from conftest import FIXTURES, ROOT

GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
LIVE = ROOT / "kb" / "entries"
TEXT = "RuntimeError: moe_align_block_size: unsupported number of experts 257 on this device"
SHOWN_COMMENTED = ("family",)
BASIC = ["--text", TEXT, "--gpu", "RTX PRO 6000 Blackwell", "--component", "vllm:triggers",
         "--component", "flashinfer:raises", "--link", "https://github.com/vllm-project/vllm/issues/12345"]


def _new(entries: Path, *options: str) -> int:
    return cli.main(["new", "-y", "--entries", str(entries), *options])


def _written(entries: Path) -> Path:
    (path,) = sorted(entries.glob("*.yaml"))
    return path


def _fill(text: str) -> str:
    """What a contributor does: every TODO marker replaced with real words."""
    return text.replace("TODO", "Filled")


# --- the id -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    (TEXT, "runtimeerror-moe-align-block-size-unsupported-number-of"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered",
     "runtimeerror-cuda-error-an-illegal-memory-access-was"),
    ("torch.OutOfMemoryError: CUDA out of memory.", "torch-outofmemoryerror-cuda-out-of-memory"),
    ("Xid 13: Graphics SM Warp Exception", "xid-13-graphics-sm-warp-exception"),
    ("Décodage échoué — ptxas fatal", "decodage-echoue-ptxas-fatal"),
    ("a" * 90, "a" * 60),
])
def test_id_is_lowercase_words_and_hyphens_within_60(text, expected):
    derived = new.base_id(text)
    assert derived == expected
    assert re.fullmatch(schema.ID_PATTERN, derived) and len(derived) <= new.MAX_ID_CHARS


def test_taken_id_gets_a_suffix(tmp_path, capsys):
    for _ in range(3):
        assert _new(tmp_path, *BASIC) == 0
    stems = sorted(p.stem for p in tmp_path.glob("*.yaml"))
    base = new.base_id(TEXT)
    assert stems == [base, f"{base}-2", f"{base}-3"]
    assert f"id {base!r} is taken, using '{base}-3'" in capsys.readouterr().err


def test_given_id_that_is_taken_is_refused_and_nothing_is_overwritten(tmp_path, capsys):
    assert _new(tmp_path, *BASIC, "--id", "illegal-access-moe-align") == 0
    before = (tmp_path / "illegal-access-moe-align.yaml").read_bytes()
    capsys.readouterr()
    assert _new(tmp_path, *BASIC, "--id", "illegal-access-moe-align", "--title", "Another") == 1
    err = capsys.readouterr().err
    assert "already has a cell 'illegal-access-moe-align'" in err
    assert (tmp_path / "illegal-access-moe-align.yaml").read_bytes() == before
    assert len(list(tmp_path.glob("*.yaml"))) == 1


def test_existing_file_is_never_overwritten(tmp_path, monkeypatch, capsys):
    # A file that appears between the id check and the write (another contributor, a race).
    monkeypatch.setattr(new, "taken_ids", lambda entries: set())
    (tmp_path / "x-y.yaml").write_text("precious\n", encoding="utf-8")
    assert _new(tmp_path, *BASIC, "--id", "x-y") == 1
    assert "never overwrites" in capsys.readouterr().err
    assert (tmp_path / "x-y.yaml").read_text(encoding="utf-8") == "precious\n"


def test_string_without_letters_needs_an_id(tmp_path, capsys):
    options = ["--text", "!!! ??? ...", "--gpu", "GB10", "--component", "vllm:triggers"]
    assert _new(tmp_path, *options) == 2
    assert "give one with --id" in capsys.readouterr().err
    assert _new(tmp_path, *options, "--id", "punctuation-only") == 0


@pytest.mark.parametrize("bad_id", ["Bad_Id", "-x", "x--y", "a" * 81])
def test_malformed_id_is_refused(tmp_path, capsys, bad_id):
    assert _new(tmp_path, *BASIC, f"--id={bad_id}") == 2
    assert "is not an id" in capsys.readouterr().err


# --- the skeleton -------------------------------------------------------------------------

def test_skeleton_is_valid_and_its_only_problems_are_todo_markers(tmp_path, capsys):
    assert _new(tmp_path, *BASIC) == 0
    path = _written(tmp_path)
    assert path.name == new.base_id(TEXT) + ".yaml"
    loaded = load.load(path)
    assert loaded.problems == []
    entry = schema.Entry.model_validate(loaded.data)  # pydantic: valid as written
    assert entry.signatures[0].text == TEXT
    assert entry.hardware.gpus == ["RTX PRO 6000 Blackwell"] and entry.hardware.architectures == ["sm_120"]
    assert [(c.package, c.role) for c in entry.components] == [("vllm", "triggers"), ("flashinfer", "raises")]
    assert (entry.upstream[0].kind, entry.upstream[0].state) == ("issue", "open")
    assert entry.status.source == "https://github.com/vllm-project/vllm/issues/12345"

    problems = lint.check([path]).problems
    assert problems and {p.code for p in problems} == {"KB046"}
    lines = path.read_text(encoding="utf-8").splitlines()
    fields = set()
    for problem in problems:
        shown = problem.format()
        assert re.match(rf".*{re.escape(path.name)}:{problem.line}: {re.escape(problem.loc)}: .*\[KB046\]$", shown)
        # A block scalar (the mechanism) is reported at its key, the TODO on the line below.
        at = lines[problem.line - 1]
        assert "TODO" in (lines[problem.line] if at.endswith(": |") else at), (problem.line, at)
        fields.add(problem.loc)
    assert {"title", "summary", "mechanism", "measurements[0].quantity", "fixes[0].what", "workarounds[0].what",
            "claims[0].says", "upstream[0].title"} <= fields
    assert "signatures[0].text" not in fields
    # Every TODO in the file (outside comments) is reported.
    marked = [n - 1 if lines[n - 2].endswith(": |") else n
              for n, line in enumerate(lines, 1) if "TODO" in line.split("#")[0]]
    assert sorted(p.line for p in problems) == marked
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / path.name}" in out
    assert f"fill in the {len(problems)} TODO marker(s)" in out


def test_skeleton_has_every_field_in_the_canonical_order(tmp_path):
    assert _new(tmp_path, *BASIC) == 0
    data = load.load(_written(tmp_path)).data
    canonical = list(load.load(GOOD).data)
    assert canonical == list(schema.Entry.model_fields)
    # A top-level field with no value to guess is shown in a comment, in its place.
    assert list(data) == [name for name in canonical if name not in SHOWN_COMMENTED]
    for block in ("measurements", "fixes", "workarounds", "claims", "upstream"):
        assert data[block], block
    text = _written(tmp_path).read_text(encoding="utf-8")
    for optional in ("match:", "affected:", "fixed_in:", "fixed_commit:", "series:", "applies:", *(
            f"{name}:" for name in SHOWN_COMMENTED)):
        assert re.search(rf"^\s*#.*{optional}", text, re.M), optional  # shown in a comment
    assert "note:" in text and "title:" in text


def test_filled_skeleton_lints_clean(tmp_path):
    assert _new(tmp_path, *BASIC) == 0
    path = _written(tmp_path)
    path.write_text(_fill(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert [p.format() for p in lint.check([path]).problems] == []


def test_filled_skeleton_without_link_lints_clean(tmp_path):
    assert _new(tmp_path, "--text", "Xid 13: Graphics SM Warp Exception", "--gpu", "GB10",
                "--component", "vllm:involved") == 0
    path = _written(tmp_path)
    entry = schema.Entry.model_validate(load.load(path).data)
    assert entry.hardware.architectures == ["sm_121"]
    assert entry.signatures[0].kind == "kernel-message"
    assert entry.upstream[0].url == new.TODO_ISSUE
    problems = lint.check([path]).problems
    assert {p.code for p in problems} == {"KB046"}
    assert {"status.source", "upstream[0].url"} <= {p.loc for p in problems}
    path.write_text(_fill(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert lint.check([path]).problems == []


@pytest.mark.slow
def test_skeleton_in_the_live_entries_lints_like_the_rest(tmp_path):
    entries = tmp_path / "entries"
    shutil.copytree(LIVE, entries)
    assert _new(entries, *BASIC) == 0
    path = entries / (new.base_id(TEXT) + ".yaml")
    problems = lint.check([entries]).problems
    assert problems and all(p.code == "KB046" and p.path == path for p in problems)
    path.write_text(_fill(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert lint.check([entries]).problems == []


@pytest.mark.parametrize("url, kind, state", [
    ("https://github.com/vllm-project/vllm/pull/54013", "pr", "open"),
    ("https://github.com/flashinfer-ai/flashinfer/commit/1a2b3c4d5e", "commit", "merged"),
    ("https://github.com/vllm-project/vllm/releases/tag/v0.12.0", "release", "published"),
    ("https://docs.vllm.ai/en/latest/", "doc", "published"),
])
def test_link_kind_and_state_come_from_the_url(tmp_path, url, kind, state):
    assert _new(tmp_path, *BASIC[:-2], "--link", url) == 0
    entry = schema.Entry.model_validate(load.load(_written(tmp_path)).data)
    assert (entry.upstream[0].kind, entry.upstream[0].url, entry.upstream[0].state) == (kind, url, state)


def test_options_are_used_as_given(tmp_path):
    assert _new(tmp_path, *BASIC, "--kind", "log-line", "--arch", "sm_120", "--arch", "sm_121",
                "--gpu", "GB10", "--title", "Illegal memory access in MoE align on Blackwell") == 0
    path = _written(tmp_path)
    entry = schema.Entry.model_validate(load.load(path).data)
    assert entry.signatures[0].kind == "log-line"
    assert entry.hardware.architectures == ["sm_120", "sm_121"]
    assert entry.hardware.gpus == ["RTX PRO 6000 Blackwell", "GB10"]
    assert entry.title == "Illegal memory access in MoE align on Blackwell"
    assert "title" not in {p.loc for p in lint.check([path]).problems}


@pytest.mark.parametrize("text", [
    'ValueError: a "quoted" \\ back\\slash: {x} [y] #z &a *b !c %d @e `f`',
    "Décodage — “smart quotes” ünïcödé 日本語",
    "key: value: another: colon",
    "- starts like a list item",
    "# starts like a comment",
    "yes",
    "0x1f",
])
def test_awkward_strings_are_written_exactly(tmp_path, text):
    assert _new(tmp_path, "--text", text, "--gpu", "GB10", "--component", "vllm:triggers", "--id", "awkward") == 0
    entry = schema.Entry.model_validate(load.load(tmp_path / "awkward.yaml").data)
    assert entry.signatures[0].text == text


@pytest.mark.slow
def test_look_alike_cells_are_pre_filled_as_related(tmp_path, capsys):
    entries = tmp_path / "entries"
    shutil.copytree(LIVE, entries)
    assert _new(entries, "--text", "RuntimeError: Plan index 9 is invalid", "--gpu", "GB10",
                "--component", "flashinfer:raises", "--id", "plan-index-nine") == 0
    out = capsys.readouterr().out
    path = entries / "plan-index-nine.yaml"
    entry = schema.Entry.model_validate(load.load(path).data)
    assert [(r.id, r.how) for r in entry.related] == [("flashinfer-bmm-fp8-cudnn-plan-index-invalid-gb10", "look-alike")]
    assert "add `- id: plan-index-nine`" in out
    problems = lint.check([entries]).problems
    assert {p.code for p in problems} == {"KB046", "KB048"}  # no KB047: this side is related already
    (kb048,) = [p for p in problems if p.code == "KB048"]
    assert kb048.path == path


# --- refusing bad input -------------------------------------------------------------------

@pytest.mark.parametrize("options, message", [
    (["--gpu", "GB10", "--component", "vllm:triggers"], "--text is required"),
    (["--text", TEXT, "--component", "vllm:triggers"], "--gpu is required"),
    (["--text", TEXT, "--gpu", "GB10"], "--component is required"),
    (["--text", "line one\nline two", "--gpu", "GB10", "--component", "vllm:triggers"], "must be one line"),
    (["--text", "a\ttab", "--gpu", "GB10", "--component", "vllm:triggers"], "tabs"),
    (["--text", "   ", "--gpu", "GB10", "--component", "vllm:triggers"], "empty"),
    (["--text", TEXT, "--gpu", "GB10", "--component", "vllm"], "write PACKAGE:ROLE"),
    (["--text", TEXT, "--gpu", "GB10", "--component", "vllm:breaks"], "role 'breaks'"),
    (["--text", TEXT, "--gpu", "GB10", "--component", "v llm:raises"], "is not a package name"),
    (["--text", TEXT, "--gpu", "<b>GB10</b>", "--component", "vllm:raises"], "GPU names"),
    (["--text", TEXT, "--gpu", "GB10", "--component", "vllm:raises", "--link", "https://example.com/x"],
     "is not a GitHub issue"),
    (["--text", TEXT, "--gpu", "GB10", "--component", "vllm:raises", "--title", "<script>x</script>"], "title"),
])
def test_bad_input_is_refused_with_a_reason(tmp_path, capsys, options, message):
    assert _new(tmp_path, *options) == 2
    err = capsys.readouterr().err
    assert err.startswith("kb new: ") and message in err, err
    assert list(tmp_path.glob("*.yaml")) == []


def test_entries_must_be_a_folder(tmp_path, capsys):
    file = tmp_path / "file"
    file.write_text("x", encoding="utf-8")
    assert _new(file, *BASIC) == 2
    assert "is not a folder" in capsys.readouterr().err


# --- asking -------------------------------------------------------------------------------

def _answers(monkeypatch, answers: list[str]) -> list[str]:
    prompts: list[str] = []
    queue = list(answers)

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        if not queue:
            raise EOFError
        return queue.pop(0)

    monkeypatch.setattr("builtins.input", ask)
    return prompts


def test_interactive_asks_for_what_is_missing_and_re_asks_bad_answers(tmp_path, monkeypatch, capsys):
    prompts = _answers(monkeypatch, [
        TEXT,  # error string
        "",  # kind: keep the guess
        "RTX 5090, RTX PRO 6000 Blackwell",  # GPUs
        "",  # architectures: keep the guess
        "vllm",  # component without role: asked again
        "vllm:triggers, flashinfer:raises",
        "not a url",  # asked again
        "https://github.com/vllm-project/vllm/pull/54013",
        "",  # title: later
    ])
    assert cli.main(["new", "--entries", str(tmp_path)]) == 0
    assert len(prompts) == 9
    assert "write PACKAGE:ROLE" in capsys.readouterr().err
    entry = schema.Entry.model_validate(load.load(_written(tmp_path)).data)
    assert entry.signatures[0].kind == "exception"
    assert entry.hardware.gpus == ["RTX 5090", "RTX PRO 6000 Blackwell"]
    assert entry.hardware.architectures == ["sm_120"]
    assert [c.package for c in entry.components] == ["vllm", "flashinfer"]
    assert entry.upstream[0].kind == "pr"


def test_interactive_does_not_ask_for_what_was_given(tmp_path, monkeypatch):
    prompts = _answers(monkeypatch, ["", ""])  # kind, architectures
    assert cli.main(["new", "--entries", str(tmp_path), *BASIC, "--title", "Illegal access in MoE align"]) == 0
    assert len(prompts) == 2 and prompts[0].startswith("Kind") and prompts[1].startswith("Architecture")


def test_interactive_end_of_input_is_refused(tmp_path, monkeypatch, capsys):
    _answers(monkeypatch, [TEXT])
    assert cli.main(["new", "--entries", str(tmp_path)]) == 2
    assert "no answer given" in capsys.readouterr().err
    assert list(tmp_path.glob("*.yaml")) == []


# --- YAML quoting ---------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_quote_loads_back_exactly(value):
    assert yaml.safe_load("k: " + new.quote(value) + "\n") == {"k": value}


# --- the contributor's tooling around `kb new` ----------------------------------------------

def test_pre_commit_hook_runs_kb_check_on_changed_entries():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    (repo,) = config["repos"]
    (hook,) = repo["hooks"]
    assert repo["repo"] == "local"
    assert hook["entry"] == ".venv/bin/kb check" and hook["language"] == "system"
    assert hook["pass_filenames"] is True
    pattern = re.compile(hook["files"])
    assert pattern.search("kb/entries/mla-decode-fp8-kv-triton-shared-memory.yaml")
    assert not pattern.search("tests/fixtures/good/mla-decode-fp8-kv-triton-shared-memory.yaml")
    assert not pattern.search("kb/entries/notes.txt")


def _form(name: str) -> dict:
    form = yaml.safe_load((ROOT / ".github" / "ISSUE_TEMPLATE" / name).read_text(encoding="utf-8"))
    assert {"name", "description", "body"} <= set(form)
    ids = [item["id"] for item in form["body"] if "id" in item]
    assert len(ids) == len(set(ids))
    for item in form["body"]:
        assert item["type"] in {"markdown", "textarea", "input", "dropdown", "checkboxes"}
        assert item["attributes"]["label" if item["type"] != "markdown" else "value"]
    return form


def test_new_cell_form_has_the_fields_the_triage_page_fills_in():
    form = _form("new-cell.yml")
    labels = [item["attributes"]["label"] for item in form["body"] if item["type"] in ("textarea", "input")]
    from kb.triage.request import new_failure_text  # the text kb match prints and the triage page shows (test_match)

    headings = re.findall(r"^### (.+)$", new_failure_text("RuntimeError: x"), re.M)
    assert headings == ["Literal error lines", "Environment found in the log", "What you were running"]
    assert labels[:3] == headings  # GitHub shows each answer under "### <label>"


def test_correction_form_asks_for_the_cell_the_fix_and_a_source():
    form = _form("correction.yml")
    required = {item["id"] for item in form["body"] if item.get("validations", {}).get("required")}
    assert {"cell", "correction", "source"} <= required


def test_pull_request_template_has_the_checklist():
    text = (ROOT / ".github" / "PULL_REQUEST_TEMPLATE.md").read_text(encoding="utf-8")
    boxes = re.findall(r"^- \[ \] (.+)$", text, re.M)
    assert len(boxes) >= 6
    for needle in ("kb check", "exactly as printed", "as_of", "measured", "related"):
        assert any(needle in box for box in boxes), needle


@pytest.mark.parametrize("path", ["CONTRIBUTING.md", "site_src/contributing.md"])
def test_contributing_guides_walk_from_kb_new_to_a_pull_request(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    for needle in ("kb new", "TODO", "KB046", "kb check", "--explain", "make serve", "pull request",
                   "hardware", "versions", "command", "raw numbers", "source"):
        assert needle in text, needle
    assert text.index("kb new") < text.index("kb check") < text.index("pull request", text.index("make serve"))
