"""The rules: every rule has a statement and two examples, the examples do what they say, the
rules page and `kb check --explain` show them; the rules across records (KB047 look-alikes,
KB048 one-way related links, KB049 a status its own links contradict) on small folders."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kb import cli
from kb.records import crosscheck, lint, validate
from kb.records.rules import RULES
from kb.site.pages import Renderer, Site
from kb.site.rulespage import rules_page

from conftest import FIXTURES, ROOT

GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
GOOD_TEXT = GOOD.read_text(encoding="utf-8")
HEADER = re.compile(r"^# kb/entries/(\S+)\s*$", re.M)
KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:", re.M)
NEW_RULES = {"KB046", "KB047", "KB048", "KB049", "KB055", "KB056", "KB057", "KB058", "KB059", "KB060"}

# Rules whose examples are not fragments of an entry (bytes, sizes, a missing key, a second
# folder, a hash collision): each has its own test below.
BESPOKE = {"KB001", "KB029", "KB002", "KB004", "KB009", "KB020", "KB038", "KB041", "KB050", "KB051",
           # the redirects file and the site as a whole: tests/test_redirects.py
           "KB070", "KB071", "KB072", "KB073", "KB074", "KB075",
           "KB076",  # a link among the build's sources: tests/test_sources.py
           "KB077", "KB078", "KB079", "KB083"}  # the id lock: test_id_lock_rule_examples below


def _overlay(fragment: str) -> str:
    """The canonical entry with the top-level keys of `fragment` replaced by the fragment."""
    keys = set(KEY.findall(fragment))
    kept: list[str] = []
    dropping = False
    for line in GOOD_TEXT.splitlines(keepends=True):
        if line[:1] not in (" ", "\n", ""):
            top = KEY.match(line)
            dropping = bool(top) and top.group(1) in keys
        if not dropping:
            kept.append(line)
    return "".join(kept) + fragment.rstrip("\n") + "\n"


def _files(example: str) -> dict[str, str]:
    """File name -> text for an example: one file per `# kb/entries/<name>` header."""
    parts = HEADER.split(example)
    if len(parts) == 1:
        return {GOOD.name: _overlay(example)}
    files = {}
    for name, fragment in zip(parts[1::2], parts[2::2]):
        files[name] = _overlay(fragment)
    return files


def _lint_example(tmp_path: Path, example: str):
    paths = []
    for name, text in _files(example).items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return lint.check(paths).problems


def test_every_rule_has_a_statement_and_two_examples():
    assert NEW_RULES <= set(RULES)
    assert len({rule.name for rule in RULES.values()}) == len(RULES)
    for code, rule in RULES.items():
        assert re.fullmatch(r"KB0\d\d", code) and rule.code == code
        assert rule.statement.endswith(".") and "\n" not in rule.statement, code
        assert rule.good.strip() and rule.bad.strip() and rule.good != rule.bad, code


CODE = re.compile(r"KB0\d\d")


def documented_codes(rules_file: Path) -> list[str]:
    """The code of every RuleDoc(...) written in `rules_file`, repeats kept (RULES, a dict, keeps one)."""
    tree = ast.parse(rules_file.read_text(encoding="utf-8"))
    return [node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "RuleDoc"
            and node.args and isinstance(node.args[0], ast.Constant)]


def raised_codes(package: Path) -> dict[str, str]:
    """code -> first file:line raising it: a whole-string KB0nn constant given to a call (Problem,
    _fail, PydanticCustomError), returned or yielded, alone or in a tuple, anywhere in `package`
    but the registry's own RuleDoc(...) calls. Prose that names a code, and comparisons with one
    (`p.code == "KB046"`), raise nothing."""
    found: dict[str, str] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id == "RuleDoc"):
                values = [*node.args, *(keyword.value for keyword in node.keywords)]
            elif isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
                values = [node.value]
            else:
                continue
            for value in (e for v in values for e in (v.elts if isinstance(v, ast.Tuple) else [v])):
                if isinstance(value, ast.Constant) and isinstance(value.value, str) and CODE.fullmatch(value.value):
                    found.setdefault(value.value, f"{path.relative_to(package.parent)}:{value.lineno}")
    return found


def registry_problems(package: Path, rules: dict) -> list[str]:
    """What breaks the one-registry rule (rust's tidy error-code check): a code raised but not
    documented in kb/records/rules.py, documented twice, raised though retired, or documented,
    not retired and raised nowhere."""
    documented = documented_codes(package / "records" / "rules.py")
    raised = raised_codes(package)
    problems = [f"{where}: {code} is raised but kb/records/rules.py does not document it"
                for code, where in sorted(raised.items()) if code not in documented]
    problems += [f"kb/records/rules.py: {code} is documented {documented.count(code)} times"
                 for code in sorted(set(documented)) if documented.count(code) > 1]
    for code in sorted(set(documented)):
        retired = code in rules and rules[code].retired
        if retired and code in raised:
            problems.append(f"{raised[code]}: {code} is raised but kb/records/rules.py marks it retired")
        elif not retired and code not in raised:
            problems.append(f"kb/records/rules.py: {code} is raised nowhere; mark it retired=True (its code is never reused)")
    return problems


def test_every_code_is_documented_once_and_every_documented_code_is_raised_or_retired():
    assert registry_problems(ROOT / "kb", RULES) == []
    assert sorted(documented_codes(ROOT / "kb" / "records" / "rules.py")) == sorted(RULES)


def test_the_registry_rule_catches_each_way_to_break_it(tmp_path):
    from kb.records.rules import RuleDoc

    package = tmp_path / "kb"
    (package / "records").mkdir(parents=True)
    (package / "records" / "rules.py").write_text(
        'R = [RuleDoc("KB001", "a", "A."), RuleDoc("KB002", "b", "B."), RuleDoc("KB002", "b", "B."),\n'
        '     RuleDoc("KB003", "c", "C.", retired=True), RuleDoc("KB004", "d", "D.", retired=True)]\n', encoding="utf-8")
    (package / "check.py").write_text(
        '"""Names KB001 in prose only."""\n\n\ndef check(code):\n    if code == "KB001":\n        return None\n'
        '    yield ("KB002", "b")\n    _fail("KB004")\n    return "KB099"\n', encoding="utf-8")
    rules = {code: RuleDoc(code, code, ".", retired=code in {"KB003", "KB004"})
             for code in ("KB001", "KB002", "KB003", "KB004")}
    assert registry_problems(package, rules) == [
        "kb/check.py:9: KB099 is raised but kb/records/rules.py does not document it",
        "kb/records/rules.py: KB002 is documented 2 times",
        "kb/records/rules.py: KB001 is raised nowhere; mark it retired=True (its code is never reused)",
        "kb/check.py:8: KB004 is raised but kb/records/rules.py marks it retired"]


@pytest.mark.parametrize("code", sorted(c for c in set(RULES) - BESPOKE if not RULES[c].retired))
def test_good_example_passes_and_bad_example_breaks_its_rule(tmp_path, code):
    rule = RULES[code]
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    assert [p.format() for p in _lint_example(tmp_path / "good", rule.good)] == []
    found = _lint_example(tmp_path / "bad", rule.bad)
    assert code in {p.code for p in found}, [p.format() for p in found]


def test_kb001_latin1_file(tmp_path):
    path = tmp_path / GOOD.name
    path.write_bytes(_overlay(RULES["KB001"].good).encode("latin-1"))
    assert [p.code for p in lint.check([path]).problems] == ["KB001"]
    path.write_bytes(_overlay(RULES["KB001"].good).encode("utf-8"))
    assert lint.check([path]).problems == []


def test_kb002_byte_order_mark(tmp_path):
    path = tmp_path / GOOD.name
    path.write_bytes(b"\xef\xbb\xbf" + GOOD_TEXT.encode("utf-8"))
    assert [p.code for p in lint.check([path]).problems] == ["KB002"]


def test_kb004_list_at_the_top(tmp_path):
    path = tmp_path / GOOD.name
    path.write_text(RULES["KB004"].bad + "\n", encoding="utf-8")
    assert [p.code for p in lint.check([path]).problems] == ["KB004"]


def test_kb009_oversized_file(tmp_path):
    path = tmp_path / GOOD.name
    path.write_text(GOOD_TEXT + "# " + "x" * (300 * 1024) + "\n", encoding="utf-8")
    assert [p.code for p in lint.check([path]).problems] == ["KB009"]


def test_kb020_missing_title(tmp_path):
    path = tmp_path / GOOD.name
    path.write_text(re.sub(r"^title: .*\n", "", GOOD_TEXT, flags=re.M), encoding="utf-8")
    assert [(p.code, p.loc) for p in lint.check([path]).problems] == [("KB020", "title")]


def test_kb029_value_that_fails_its_fields_check(tmp_path):
    # libyaml refuses a lone surrogate while parsing (KB003), so the bad example is checked the
    # way a value reaches the schema from elsewhere: as data, past the YAML reader.
    path = tmp_path / GOOD.name
    path.write_text(_overlay(RULES["KB029"].bad), encoding="utf-8")
    assert [p.code for p in lint.check([path]).problems] == ["KB003"]
    from kb.records.load import load

    loaded = load(GOOD)
    loaded.data["title"] = "MLA decode runs out of \ud800 shared memory"
    _, problems = validate._validate(loaded, GOOD.stem)
    assert [(p.code, p.loc, p.line) for p in problems] == [("KB029", "title", 2)]


def test_kb038_one_id_in_two_folders(tmp_path):
    for folder in ("entries", "drafts"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "plan-index-a.yaml").write_text(GOOD_TEXT, encoding="utf-8")
    codes = [p.code for p in lint.check([tmp_path / "entries", tmp_path / "drafts"]).problems]
    assert codes == ["KB038"]


def test_kb041_example_slugs_are_the_real_ones():
    from kb.records.slug import slug

    for text, url in re.findall(r"'([^']+)' -> e/([a-z0-9-]+)/", RULES["KB041"].good):
        assert slug(text) == url


def test_kb050_link_pipe_and_folder_are_refused_unread(tmp_path):
    import os

    (tmp_path / "plan-index-a.yaml").write_text(GOOD_TEXT, encoding="utf-8")
    secret = tmp_path.parent / f"{tmp_path.name}-secret.yaml"
    secret.write_text("title: SECRET-TOKEN-VALUE\n", encoding="utf-8")
    (tmp_path / "plan-index-b.yaml").symlink_to(secret)
    os.mkfifo(tmp_path / "plan-index-c.yaml")
    (tmp_path / "plan-index-d.yaml").mkdir()
    problems = lint.check([tmp_path]).problems
    assert [(p.path.name, p.code, p.line, p.loc) for p in problems] == [
        ("plan-index-b.yaml", "KB050", 1, "(file)"), ("plan-index-c.yaml", "KB050", 1, "(file)"),
        ("plan-index-d.yaml", "KB050", 1, "(file)")]
    assert [p.message.split(",")[0] for p in problems] == ["is a symbolic link", "is a named pipe (FIFO)", "is a folder"]
    assert not any("SECRET" in p.format() for p in problems)


def test_kb051_other_files_in_the_folder_are_reported_hidden_ones_skipped(tmp_path):
    (tmp_path / "plan-index-a.yaml").write_text(GOOD_TEXT, encoding="utf-8")
    (tmp_path / "plan-index-b.yml").write_text(GOOD_TEXT, encoding="utf-8")
    (tmp_path / "README").write_text("SECRET-TOKEN-VALUE\n", encoding="utf-8")
    (tmp_path / ".gitkeep").write_text("", encoding="utf-8")
    problems = lint.check([tmp_path]).problems
    assert [(p.path.name, p.code, p.loc) for p in problems] == [("README", "KB051", "(file)"),
                                                                ("plan-index-b.yml", "KB051", "(file)")]
    assert not any("SECRET" in p.format() for p in problems)


# --- kb check --explain -------------------------------------------------------------------

def test_explain_prints_code_name_statement_and_examples(capsys):
    assert cli.main(["check", "--explain", "KB047"]) == 0
    out = capsys.readouterr().out
    rule = RULES["KB047"]
    assert out.startswith(f"KB047 {rule.name}\n  {rule.statement}\npasses:\n")
    for line in rule.good.splitlines() + rule.bad.splitlines():
        assert f"    {line}\n" in out
    assert out.index("passes:") < out.index("fails:")


def test_explain_accepts_lower_case(capsys):
    assert cli.main(["check", "--explain", "kb046"]) == 0
    assert capsys.readouterr().out.startswith("KB046 no-todo\n")


@pytest.mark.parametrize("code", ["KB999", "KB012", "nonsense", ""])
def test_explain_unknown_code_exits_2(capsys, code):
    assert cli.main(["check", "--explain", code]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no rule" in captured.err and "KB001" in captured.err


# --- the rules page ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def page():
    cells = lint.check([ROOT / "kb" / "entries"]).cells
    return rules_page(Renderer(Site(cells)))


def test_rules_page_lists_every_rule_with_its_examples(page):
    from markupsafe import escape

    assert (page.url, page.kind, page.src) == ("rules/", "index", "rules.md")
    for code, rule in RULES.items():
        assert f'id="{code.lower()}" data-code="{code}"' in page.body
        assert f"<code>{escape(rule.good)}</code>" in page.body
        assert f"<code>{escape(rule.bad)}</code>" in page.body
    assert page.body.count('class="kb-rule"') == len(RULES)


def test_rules_page_escapes_the_examples(page):
    assert "<b>decode</b>" not in page.body
    assert "&lt;b&gt;decode&lt;/b&gt;" in page.body
    assert "!!python/object/apply" in page.body  # shown as text, never loaded


# --- rules across records, in small folders ----------------------------------------------

PR = "https://github.com/vllm-project/vllm/pull/54013"


def _cell(folder: Path, name: str, fragment: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(_overlay(fragment), encoding="utf-8")
    return path


def _sig(text: str, kind: str = "exception", match: str | None = None) -> str:
    extra = f", match: {match!r}" if match else ""
    return f"signatures: [{{text: {text!r}, kind: {kind}{extra}}}]\n"


def _rel(*ids: str) -> str:
    return "related: [" + ", ".join(f"{{id: {i}, how: look-alike}}" for i in ids) + "]\n"


def _line(path: Path, needle: str) -> int:
    """The number of the last line of `path` that contains `needle` (the fragment comes last)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return max(n for n, line in enumerate(lines, 1) if needle in line)


def _found(folder: Path, code: str | None = None):
    problems = lint.check([folder]).problems
    return [(p.path.name, p.code, p.line, p.loc) for p in problems if code is None or p.code == code]


def test_kb047_pattern_overlap_is_reported_on_both_cells(tmp_path):
    _cell(tmp_path, "a", _sig("RuntimeError: Plan index 3 is invalid") + _rel())
    _cell(tmp_path, "b", _sig("RuntimeError: Plan index 7 is invalid", match="RuntimeError: Plan index {int} is invalid")
          + _rel())
    problems = lint.check([tmp_path]).problems
    assert [(p.path.name, p.code, p.loc) for p in problems] == [
        ("a.yaml", "KB047", "signatures[0].text"), ("b.yaml", "KB047", "signatures[0].text")]
    assert "b signatures[0]" in problems[0].message and "a signatures[0]" in problems[1].message
    text = (tmp_path / "a.yaml").read_text(encoding="utf-8").splitlines()
    assert "Plan index 3" in text[problems[0].line - 1]


def test_kb047_literal_text_inside_a_longer_line(tmp_path):
    _cell(tmp_path, "a", _sig("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") + _rel())
    _cell(tmp_path, "b", _sig("CUDA out of memory", kind="log-line") + _rel())
    assert [c for _, c, _, _ in _found(tmp_path)] == ["KB047", "KB047"]


def test_kb047_later_signature_is_the_one_named(tmp_path):
    _cell(tmp_path, "a", "signatures:\n  - {text: 'Only a prints this', kind: log-line}\n"
          "  - {text: 'cudaErrorMisalignedAddress: misaligned address', kind: exception}\n" + _rel())
    b = _cell(tmp_path, "b", _sig("cudaErrorMisalignedAddress: misaligned address") + _rel())
    assert _found(tmp_path, "KB047") == [("a.yaml", "KB047", _line(tmp_path / "a.yaml", "cudaError"), "signatures[1].text"),
                                         ("b.yaml", "KB047", _line(b, "cudaError"), "signatures[0].text")]


def test_kb047_symptom_matches_whole_words_only(tmp_path):
    _cell(tmp_path, "a", _sig("ValueError: unsupported dtype fp8e4m3", kind="exception") + _rel())
    _cell(tmp_path, "b", _sig("fp8e4", kind="symptom") + _rel())
    assert _found(tmp_path) == []
    _cell(tmp_path, "b", _sig("dtype fp8e4m3", kind="symptom") + _rel())
    assert [c for _, c, _, _ in _found(tmp_path)] == ["KB047", "KB047"]


def test_kb047_related_cells_pass_and_different_lines_pass(tmp_path):
    _cell(tmp_path, "a", _sig("RuntimeError: Plan index 3 is invalid") + _rel("b"))
    _cell(tmp_path, "b", _sig("RuntimeError: Plan index 7 is invalid", match="RuntimeError: Plan index {int} is invalid")
          + _rel("a"))
    _cell(tmp_path, "c", _sig("RuntimeError: Plan count 3 is invalid") + _rel())
    assert _found(tmp_path) == []


def test_one_way_relation_is_kb048_not_kb047(tmp_path):
    _cell(tmp_path, "a", _sig("RuntimeError: Plan index 3 is invalid") + _rel("b"))
    _cell(tmp_path, "b", _sig("RuntimeError: Plan index 7 is invalid", match="RuntimeError: Plan index {int} is invalid")
          + _rel())
    problems = lint.check([tmp_path]).problems
    assert [(p.path.name, p.code, p.loc, p.got) for p in problems] == [("a.yaml", "KB048", "related[0].id", "b")]
    assert "add `- id: a` to the related list of b.yaml" in problems[0].message


def test_kb048_each_one_way_link_once(tmp_path):
    a = _cell(tmp_path, "a", _sig("Only a prints this") + _rel("b", "c"))
    _cell(tmp_path, "b", _sig("Only b prints this") + _rel("a"))
    c = _cell(tmp_path, "c", _sig("Only c prints this") + _rel("b"))
    assert _found(tmp_path) == [("a.yaml", "KB048", _line(a, "related:"), "related[1].id"),
                                ("c.yaml", "KB048", _line(c, "related:"), "related[0].id")]


def test_kb048_leaves_unknown_and_self_links_to_kb036_and_kb037(tmp_path):
    _cell(tmp_path, "a", _sig("Only a prints this") + _rel("nowhere", "a"))
    assert [c for _, c, _, _ in _found(tmp_path)] == ["KB036", "KB037"]


def _status(state: str) -> str:
    return f"status: {{state: {state}, as_of: 2026-10, source: '{PR}'}}\n"


def _links(*kinds_states: tuple[str, str]) -> str:
    urls = {"pr": PR, "issue": "https://github.com/vllm-project/vllm/issues/53748",
            "commit": "https://github.com/vllm-project/vllm/commit/1a2b3c4d",
            "release": "https://github.com/vllm-project/vllm/releases/tag/v0.12.0",
            "doc": "https://docs.vllm.ai/en/latest/"}
    return "upstream:\n" + "".join(f"  - {{kind: {k}, url: '{urls[k]}', state: {s}, as_of: 2026-10}}\n"
                                   for k, s in kinds_states)


COMPONENT_FIXED_IN = "components: [{package: vllm, role: triggers, fixed_in: 0.12.0, fixed_commit: 0037a9c11}]\n"
COMPONENT_FIXED_COMMIT = ("components: [{package: vllm, role: triggers, fixed_commit: 1a2b3c4,\n"
                          "              note: 'No range: the fix is on main only.'}]\n")  # KB096


@pytest.mark.parametrize("fragment, broken", [
    (_status("fixed-release") + _links(("issue", "open"), ("pr", "open")), True),
    (_status("fixed-main") + _links(("issue", "closed"), ("pr", "closed")), True),
    (_status("fixed-main") + _links(("pr", "merged")), False),
    (_status("fixed-release") + _links(("release", "published")), False),
    (_status("fixed-release") + _links(("commit", "merged")), False),
    (_status("fixed-release") + _links(("doc", "published")), False),
    (_status("fixed-release") + _links(("issue", "open")) + COMPONENT_FIXED_IN, False),
    (_status("fixed-main") + _links(("issue", "open")) + COMPONENT_FIXED_COMMIT, False),
    (_status("fix-proposed") + _links(("issue", "open")), True),
    (_status("fix-proposed") + _links(("pr", "merged")), True),
    (_status("fix-proposed") + _links(("pr", "closed"), ("issue", "open")), True),
    (_status("fix-proposed") + _links(("issue", "open"), ("pr", "open")), False),
    (_status("under-investigation") + _links(("issue", "open")), False),
    (_status("workaround-only") + _links(("issue", "closed")), False),
    (_status("device-limit") + _links(("issue", "closed")), False),
])
def test_kb049_status_against_its_links(tmp_path, fragment, broken):
    path = _cell(tmp_path, "a", fragment)
    found = [f for f in _found(tmp_path) if f[1] not in ("KB057", "KB086")]  # KB086: the state against its fixes
    if broken:
        assert found == [("a.yaml", "KB049", _line(path, "status:"), "status.state")]
    else:
        assert found == []


FIX_PR = "https://github.com/flashinfer-ai/flashinfer/pull/4165"


def _fixed(fixed_in: str | None, *, by: str | None = FIX_PR, merged: bool = True, state: str = "fixed-release") -> str:
    component = "{package: flashinfer, role: raises" + (f", fixed_by: '{by}'" if by else "") \
        + (f", fixed_in: '{fixed_in}'" if fixed_in else ", fixed_commit: 3e96dfa35, note: 'No range: on main only.'") + "}"
    return (_status(state) + f"components: [{component}]\n"
            + f"upstream: [{{kind: pr, url: '{FIX_PR}', state: {'merged' if merged else 'open'}, as_of: 2026-10}}]\n")


@pytest.mark.parametrize("fragment, found", [
    (_fixed("0.6.18"), []),
    (_fixed("0.6.18", by=None), [("KB061", "components[0]")]),  # a release, but of which fix?
    (_fixed("0.6.18rc7"), [("KB057", "status.state")]),
    (_fixed("0.6.18.dev20260901"), [("KB057", "status.state")]),
    (_fixed(None), [("KB086", "status.state")]),  # no release named at all, and no reason given
    (_fixed(None, state="fixed-main"), []),
    (_fixed("0.6.18", merged=False), [("KB056", "components[0].fixed_by")]),
    (_fixed("0.6.18", by="https://github.com/flashinfer-ai/flashinfer/pull/9"), [("KB056", "components[0].fixed_by")]),
    (_fixed("0.6.18", by="https://github.com/flashinfer-ai/flashinfer/issues/4165"), [("KB056", "components[0].fixed_by")]),
])
def test_kb056_kb057_fix_and_its_release(tmp_path, fragment, found):
    _cell(tmp_path, "a", fragment)
    assert [(code, loc) for _, code, _, loc in _found(tmp_path) if code != "KB049"] == found


def test_kb056_two_cells_one_fix_two_versions(tmp_path):
    _cell(tmp_path, "a", _sig("RuntimeError: Plan index 3 is invalid") + _fixed("0.6.18"))
    b = _cell(tmp_path, "b", _sig("cuDNN plan index 3 out of range") + _fixed("0.6.18.post1"))
    problems = [p for p in lint.check([tmp_path]).problems if p.code == "KB056"]
    assert [(p.path.name, p.line, p.loc) for p in problems] == [("b.yaml", _line(b, "components:"), "components[0].fixed_in")]
    assert "a says the same fix (https://github.com/flashinfer-ai/flashinfer/pull/4165) first shipped in 0.6.18" \
        in problems[0].message


def test_kb055_seed_claim_cannot_be_confirmed(tmp_path):
    _cell(tmp_path, "a", "claims: [{says: Fixed by PR 54013., source: seed, as_of: 2026-10, confirmed: true}]\n")
    assert [(code, loc) for _, code, _, loc in _found(tmp_path)] == [("KB055", "claims[0].confirmed")]


def test_kb046_todo_is_reported_even_in_an_invalid_entry(tmp_path):
    _cell(tmp_path, "a", 'summary: "TODO: explain"\nsymptoms: crash\n')
    assert sorted((c, loc) for _, c, _, loc in _found(tmp_path)) == [("KB022", "symptoms"), ("KB046", "summary")]


def test_kb046_ignores_literal_signatures_and_lower_case(tmp_path):
    _cell(tmp_path, "a", _sig("NotImplementedError: TODO support sm_120") + 'summary: "A todo list, mastodons."\n')
    assert _found(tmp_path) == []


@pytest.mark.slow
def test_new_rules_hold_on_the_live_entries():
    """KB046-KB049 on kb/entries/ (the full clean check is in test_lint)."""
    problems = lint.check([ROOT / "kb" / "entries"]).problems
    assert [p.format() for p in problems if p.code in NEW_RULES] == []


def _brute_force_pairs(cells):
    """KB047's pairs the slow way: every text of one cell against every pattern of the other."""
    from kb.records import patterns
    from kb.records.normalise import normalise

    def regex(signature):
        source = patterns.compile_signature(signature.text, signature.match).source
        return re.compile(f"(?:^|[^a-z0-9_]){source}(?:$|[^a-z0-9_])" if signature.kind == "symptom" else source)

    def first(a, b):
        for i, s in enumerate(a.entry.signatures):
            for j, t in enumerate(b.entry.signatures):
                if regex(t).search(normalise(s.text)):
                    return i, j
        return None

    out = []
    ordered = sorted(cells, key=lambda c: c.id)
    for n, a in enumerate(ordered):
        for b in ordered[n + 1:]:
            if (hit := first(a, b)) is not None:
                out.append((a.id, hit[0], b.id, hit[1]))
            elif (hit := first(b, a)) is not None:
                out.append((a.id, hit[1], b.id, hit[0]))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("folder", [ROOT / "kb" / "entries", FIXTURES / "site"], ids=["live", "site-fixture"])
def test_kb047_index_finds_what_comparing_every_pair_finds(folder):
    import dataclasses

    cells = [dataclasses.replace(c, entry=c.entry.model_copy(update={"related": []}))
             for c in lint.check([folder]).cells]
    found = [(a.id, i, b.id, j) for a, i, b, j in crosscheck.look_alike_pairs(cells)]
    assert found == _brute_force_pairs(cells)
    assert found  # the live cells and the fixtures do have look-alikes: they are related today


# --- the id lock (kb.records.ids) ----------------------------------------------------------

@pytest.mark.parametrize("code", ["KB077", "KB078", "KB079", "KB083"])
def test_id_lock_rule_examples(tmp_path, code):
    """Each example is the lock's text after '# kb/ids.lock', with the URLs kb/urls.lock lists and the
    lock's published history (the lines after '# kb/ids.lock as published'; none: no history); the
    cells are plan-index-a and plan-index-b."""
    from types import SimpleNamespace

    from kb.records import ids

    cells = [SimpleNamespace(id=name, path=tmp_path / f"{name}.yaml", entry=SimpleNamespace(published="2026-12-02"))
             for name in ("plan-index-a", "plan-index-b")]
    rule = RULES[code]
    for example, broken in ((rule.good, False), (rule.bad, True)):
        published = [u.removeprefix("/") for u in re.findall(r"^# kb/urls.lock lists (\S+)$", example, re.M)]
        history = None
        if "# kb/ids.lock as published\n" in example:
            before, example = example.split("# kb/ids.lock as published\n", 1)[1].split("# kb/ids.lock", 1)
            example = "# kb/ids.lock" + example
            history = ids.History({line.split()[0]: (line.split()[1], "0000000") for line in before.splitlines()})
        lock = tmp_path / "ids.lock"
        lock.write_text(example.split("# kb/ids.lock", 1)[1].split("\n", 1)[1] + "\n", encoding="utf-8")
        codes = {p.code for p in ids.problems(lock, cells, published, history)}
        assert (code in codes) if broken else not codes, (code, example, codes)


# --- KB080: the card's cause line ---------------------------------------------------------

_SUMMARY = "summary: Serving an MLA model with an fp8 KV cache on sm_120 dies on the first generated token.\n"


_NO_CAUSE = "# no cause\n"  # the canonical cause is dropped


@pytest.mark.parametrize("fragment, found", [
    # the canonical entry's cause: plain, short, says why
    ("", []),
    # every entry gives one: a missing cause points at the mechanism the card would fall back to
    (_NO_CAUSE, [("KB080", "cause", "the entry gives no `cause:`")]),
    (_NO_CAUSE + _SUMMARY + "mechanism: The kernel asks for too much shared memory.\n",
     [("KB080", "cause", "at most 25 words that names the mechanism")]),
    # upper-case settings and versions are plain enough; the card shows it
    (_SUMMARY + "cause: The Triton decode kernel lowers num_stages only for BLOCK_DMODEL >= 1024 on sm_120.\n", []),
    (_SUMMARY + "cause: " + " ".join(["word"] * 26) + ".\n", [("KB080", "cause", "26 words long, more than the card's 25")]),
    # no file paths, calls or code identifiers (ux-review 2026-12-05, S2-5)
    (_SUMMARY + "cause: _decode_grouped_att_m_fwd in vllm/v1/attention/ops/triton_decode_attention.py keeps two stages.\n",
     [("KB080", "cause", "names code a reader of the card need not know ('_decode_grouped_att_m_fwd', "
                         "'vllm/v1/attention/ops/triton_decode_attention.py')")]),
    (_SUMMARY + "cause: has_tma_gather() is true from capability 10, so AttentionOp::initialize() picks scatter.\n",
     [("KB080", "cause", "('has_tma_gather()', 'AttentionOp::initialize()')")]),
    (_SUMMARY + "cause: getMMAVersionSafe knows no version for 12.0.\n", [("KB080", "cause", "('getMMAVersionSafe')")]),
    # few words, long line (attack review): a cause is at most 300 characters (the schema's limit, KB024),
    # and words joined by dots are a dotted name, which KB080 refuses
    (_SUMMARY + "cause: PLE offload never starts because the.uniproc.executor.skips.spawning.it at TP 1.\n",
     [("KB080", "cause", "('the.uniproc.executor.skips.spawning.it')")]),
    (_SUMMARY + "cause: An MLA model with an fp8 KV cache on sm_120 dies on the first generated token.\n",
     [("KB080", "cause", "repeats the summary's first sentence (100% of its words")]),
])
def test_kb080_cause_line(tmp_path, fragment, found):
    path = _cell(tmp_path, "a", fragment)
    if fragment.startswith(_NO_CAUSE):
        path.write_text(re.sub(r"^cause: >-\n(?:  .*\n)+", "", path.read_text(encoding="utf-8"), flags=re.M),
                        encoding="utf-8")
        assert "cause:" not in path.read_text(encoding="utf-8")
    problems = lint.check([tmp_path]).problems
    assert [(p.code, p.loc) for p in problems] == [(code, loc) for code, loc, _ in found]
    for problem, (_, loc, words) in zip(problems, found):
        assert words in problem.message, problem.message
        where = "mechanism:" if fragment.startswith(_NO_CAUSE) else f"{loc}:"  # a missing cause: its fallback's line
        assert problem.line == _line(path, where)
        assert f"a.yaml:{problem.line}: {loc}: " in problem.format() and problem.format().endswith("[KB080]")


def test_kb095_every_workaround_says_its_cost(tmp_path):
    """A workaround without `cost:` is refused at its own line, naming the field and what to write."""
    path = _cell(tmp_path, "a", "workarounds:\n  - kind: flag\n    what: --kv-cache-dtype auto\n"
                 "    source: https://github.com/vllm-project/vllm/issues/53748\n    as_of: 2026-09\n"
                 "  - kind: env-var\n    what: X=1\n    cost: The source gives no cost.\n"
                 "    source: https://github.com/vllm-project/vllm/issues/53748\n    as_of: 2026-09\n")
    (problem,) = lint.check([tmp_path]).problems
    assert (f"a.yaml:{_line(path, '  - kind: flag')}: workarounds[0].cost: the workaround does not say what it "
            "costs: add `cost:`") in problem.format()
    assert problem.format().endswith("(got '--kv-cache-dtype auto') [KB095]")


_NO_RANGE_HINT = ("no component gives a version range and none says why, so a reader gets no verdict and no reason: "
                  "add `affected:`/`seen_failing:` to the component whose versions were seen failing")


@pytest.mark.parametrize("components, silent", [
    ("  - {package: vllm, role: triggers}\n  - {package: triton, role: raises}\n", True),
    ("  - {package: vllm, role: triggers, affected: '>=0.25.0,<0.26.0'}\n", False),
    ("  - {package: vllm, role: triggers, seen_failing: '==0.25.1'}\n", False),
    ("  - {package: vllm, role: triggers, fixed_in: 0.26.0, fixed_commit: 1a2b3c4d5e}\n", False),
    ("  - {package: vllm, role: triggers}\n  - {package: triton, role: raises, note: 'No range: not read.'}\n", False),
    ("  - {package: vllm, role: triggers, note: 'Seen on 0.25.1. No affected range: no fix yet.'}\n", False),
    ("  - {package: vllm, role: triggers, note: 'no range, since only a dev build failed'}\n", False),
    # the words must be said: a note about ranges, or one naming no range in look-alike letters, is not it
    ("  - {package: vllm, role: triggers, note: 'No ranges were read.'}\n", True),
    ("  - {package: vllm, role: triggers, note: 'The range is unknown.'}\n", True),
    ("  - {package: vllm, role: triggers, note: 'N\u043e range: not read.'}\n", True),
])
def test_kb096_a_range_or_words_why_none(tmp_path, components, silent):
    """An entry gives a version range on some component, or a component's note says why it gives
    none; otherwise it is refused at the `components:` line, naming the packages and what to write."""
    path = _cell(tmp_path, "a", "components:\n" + components)
    problems = lint.check([tmp_path]).problems
    if not silent:  # a fixed_in alone breaks other rules (the status, the fix it names): only KB096 is asked
        assert [p.format() for p in problems if p.code == "KB096"] == []
        return
    (problem,) = problems
    assert f"a.yaml:{_line(path, 'components:')}: components: {_NO_RANGE_HINT}" in problem.format()
    assert "or a note starting 'No range: <why>'" in problem.message
    assert problem.format().endswith(f"(got {', '.join(re.findall(r'package: ([a-z]+)', components))!r}) [KB096]")


def test_cause_is_plain_text_of_the_mechanisms_first_sentence():
    from kb.records import cause

    assert cause.plain("The `num_stages` fallback of [the kernel](https://github.com/a/b/pull/1) never\n"
                       "*runs*. Then more.") == "The num_stages fallback of the kernel never runs. Then more."
    assert cause.first_sentence("A e.g. B stops. Then C.") == "A e.g. B stops."
    assert cause.overlap("kernel needs shared memory", "The kernel needs shared memory. More.") == 1.0
    assert cause.overlap("kernel needs shared memory", "It dies on start. The kernel needs shared memory.") == 0.0


def test_kb082_names_file_line_field_and_word_and_leaves_literals_alone(tmp_path):
    """KB082 reads the prose a page shows (here a GPU name, a component note, a claim) and
    names the word and what to write; a signature's literal text and a claim's `source: seed`
    are not prose, and a word inside a longer one (`seeded`, `cellular`, `manual_seed`) is not it."""
    fragment = ('signatures:\n  - {text: "CUDA error: cell 3 of the seed table", kind: log-line}\n'
                'hardware: {architectures: [sm_121], gpus: ["GB10 (seed claim only, see claims)"]}\n'
                'components:\n  - {package: vllm, role: raises, seen_failing: "==0.25.1", note: "Only cellular torch.manual_seed runs; that Cell is older."}\n'
                '  - {package: triton, role: raises, note: "Range from wheels, so no fixed_in; see claims[0].as_of."}\n'
                "claims:\n  - {says: \"Seeded on 2026-08-19, the seed document's date.\", source: seed, as_of: 2026-12, confirmed: false}\n")
    path = tmp_path / GOOD.name
    path.write_text(_overlay(fragment), encoding="utf-8")
    found = [p for p in lint.check([path]).problems]
    assert [(p.code, p.loc) for p in found] == [("KB082", "hardware.gpus[0]"), ("KB082", "components[0].note"),
                                                ("KB082", "components[1].note"), ("KB082", "components[1].note"),
                                                ("KB082", "claims[0].says")], [p.format() for p in found]
    lines = path.read_text(encoding="utf-8").splitlines()
    for p, key in zip(found, ["gpus:", "note:", "note:", "note:", "says:"]):
        assert f"{path.name}:{p.line}: {p.loc}: says '" in p.format() and key in lines[p.line - 1], p.format()
    said = {p.loc: p.format() for p in found}
    assert "says 'seed'" in said["claims[0].says"] and "an unpublished report" in said["claims[0].says"]
    assert "says 'Cell'" in said["components[0].note"] and "'entry'" in said["components[0].note"]
    assert "got 'GB10 (seed claim only, see claims)'" in said["hardware.gpus[0]"]
    fields = [p.format() for p in found if p.loc == "components[1].note"]
    assert "says 'fixed_in'" in fields[0] and "says 'claims[0].as_of'" in fields[1]
    assert all("the first fixed release" in f for f in fields)


def test_look_alike_letters_do_not_get_past_kb081_and_kb082(tmp_path):
    """Attack review: `RTX 5О90` with a Cyrillic О made a browse group of its own titled like RTX
    5090, and `This сell` with a Cyrillic с passed the internal-words rule."""
    fragment = ('hardware: {architectures: [sm_120], gpus: ["RTX 5\u041e90"]}\n'
                'components:\n  - {package: vllm, role: raises, seen_failing: "==0.25.1", note: "This \u0441ell covers it."}\n')
    path = tmp_path / GOOD.name
    path.write_text(_overlay(fragment), encoding="utf-8")
    found = lint.check([path]).problems
    assert [(p.code, p.loc) for p in found] == [("KB081", "hardware.gpus[0]"), ("KB082", "components[0].note")], \
        [p.format() for p in found]
    gpu, note = (p.format() for p in found)
    assert "U+041E CYRILLIC CAPITAL LETTER O for 'O' at character 6" in gpu and "type it in ASCII" in gpu
    assert "says 'cell'" in note and "'entry'" in note


def test_kb082_refuses_the_research_trails_words(tmp_path):
    """UX review S2-8: 'snapshot', 'over the fetch limit', 'tag check' and 'the next signature'
    describe how the index read a repository or lists its lines, not the failure; KB082 names each
    (spaced over lines, as folded YAML leaves it, too) with the plain words to write, and leaves 'snapshotting'
    and a signature's literal text alone."""
    fragment = ('signatures:\n  - {text: "torch.cuda.memory._snapshot() failed", kind: log-line, '
                'note: "The printed form is the next signature."}\n'
                'components:\n  - {package: vllm, role: raises, seen_failing: "==0.25.1", note: "Tag check 2026-12-04 in the vLLM snapshot."}\n'
                '  - {package: triton, role: raises, note: "The repository is over the fetch  size limit; snapshotting."}\n')
    path = tmp_path / GOOD.name
    path.write_text(_overlay(fragment), encoding="utf-8")
    found = lint.check([path]).problems
    assert [(p.code, p.loc) for p in found] == [("KB082", "signatures[0].note"), ("KB082", "components[0].note"),
                                                ("KB082", "components[0].note"), ("KB082", "components[1].note")], \
        [p.format() for p in found]
    said = [p.format() for p in found]
    assert "says 'next signature'" in said[0] and "'the line listed next'" in said[0]
    assert "says 'Tag check'" in said[1] and "release tags" in said[1]
    assert "says 'snapshot'" in said[2] and "'the repository'" in said[2]
    assert "'too large to download here'" in said[3]


PTXAS_REFUSAL = ("signatures: [{text: \"ptxas /tmp/x.ptx, line 9; error   : Instruction 'tensormap.replace' not "
                 "supported on .target 'sm_120'\", kind: log-line, decisive: true}]\n")


@pytest.mark.parametrize("components, found", [
    # ptxas refuses the PTX; the project that emitted it decides by its version: not decisive
    ("[{package: cuda, role: raises, note: 'Any ptxas.'}, {package: lmdeploy, role: triggers, affected: '<0.13.0'}]",
     [("KB084", "signatures[0].decisive")]),
    # the toolkit's own range decides (nvcc older than 12.8): decisive
    ("[{package: cuda, role: raises, affected: '<12.8'}, {package: llama.cpp, role: triggers, note: 'Any.'}]", []),
    ("[{package: cuda, role: raises, note: 'Any ptxas.'}]", []),  # no range anywhere: nothing for versions to decide
])
def test_kb084_decisive_only_where_what_prints_it_carries_the_range(tmp_path, components, found):
    _cell(tmp_path, "a", PTXAS_REFUSAL + f"components: {components}\n")
    assert [(code, loc) for _, code, _, loc in _found(tmp_path, "KB084")] == found
