"""CI and supply-chain configuration: every workflow job has a time limit and SHA-pinned actions;
the locks pin every package (the whole dependency tree) with sha256 hashes; the deploy installs
the runtime lock alone and every install is hash-checked.

Each rule is a small generator of problems over the file's text, run on the real file and, to
show it can fail, on a broken sample."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
RUNTIME_LOCK = ROOT / "requirements.lock"
TEST_LOCK = ROOT / "requirements-test.lock"
TEST_TOOLS = {"pytest", "playwright", "hypothesis", "jsonschema"}
REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==(?P<version>[A-Za-z0-9.+!_-]+)"
    r"(?P<hashes>(?:\s+--hash=sha256:[0-9a-f]{64})+)$"
)
SHA_PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


# --- workflows -----------------------------------------------------------------------------------


def workflow_problems(text: str):
    """Every job has a positive timeout-minutes and its own permissions under `permissions: {}`;
    every action is pinned by a 40-hex commit SHA."""
    doc = yaml.safe_load(text)
    if doc.get("permissions") != {}:
        yield f"top-level permissions must be {{}} (got {doc.get('permissions')!r})"
    for name, job in (doc.get("jobs") or {}).items():
        minutes = job.get("timeout-minutes")
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
            yield f"jobs.{name}: timeout-minutes must be a positive integer (got {minutes!r})"
        if "permissions" not in job:
            yield f"jobs.{name}: must declare the permissions it needs"
        uses = [job["uses"]] if "uses" in job else []
        uses += [step["uses"] for step in job.get("steps", []) if "uses" in step]
        for action in uses:
            if not action.startswith(("./", "docker://")) and not SHA_PINNED.match(action):
                yield f"jobs.{name}: action must be pinned by commit SHA (got {action!r})"


def run_lines(text: str) -> list[str]:
    doc = yaml.safe_load(text)
    return [step["run"] for job in doc["jobs"].values() for step in job.get("steps", []) if "run" in step]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_jobs_have_timeouts_and_pinned_actions(path):
    assert list(workflow_problems(path.read_text(encoding="utf-8"))) == []


def test_workflow_rules_catch_a_bad_workflow():
    bad = """
permissions: write-all
jobs:
  build:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - run: make site
"""
    assert list(workflow_problems(bad)) == [
        "top-level permissions must be {} (got 'write-all')",
        "jobs.build: timeout-minutes must be a positive integer (got None)",
        "jobs.build: must declare the permissions it needs",
        "jobs.build: action must be pinned by commit SHA (got 'actions/checkout@v4')",
    ]


def test_there_are_workflows():
    assert {p.name for p in WORKFLOWS} >= {"checks.yml", "pages.yml"}


def test_deploy_installs_no_test_tools_and_checks_hashes():
    """pages.yml sets up through `make setup` (the runtime lock, hash-checked: see the Makefile
    tests) or a hash-checked pip call, and never touches the test lock or the tests."""
    runs = run_lines((ROOT / ".github" / "workflows" / "pages.yml").read_text(encoding="utf-8"))
    assert any(re.search(r"\bmake setup\b", run) for run in runs)
    for run in runs:
        for forbidden in ("requirements-test", "make test", "pytest", ".ci/run", "[test]"):
            assert forbidden not in run, run
        for line in run.splitlines():
            if "pip install" in line:
                assert "--require-hashes" in line, line


def test_checks_run_the_tests():
    runs = run_lines((ROOT / ".github" / "workflows" / "checks.yml").read_text(encoding="utf-8"))
    assert any(".ci/run" in run or "make test" in run for run in runs)
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


# --- locks ---------------------------------------------------------------------------------------


def logical_lines(text: str):
    """(first line number, text) of each requirement, continuation lines joined, comments dropped."""
    start, parts = None, []
    for number, line in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", line).rstrip()  # pip's rule: '#' at the start or after a space
        if start is None:
            if not line.strip():
                continue
            start = number
        parts.append(line.removesuffix("\\").strip())
        if not line.endswith("\\"):
            yield start, " ".join(p for p in parts if p)
            start, parts = None, []
    if start is not None:
        yield start, " ".join(p for p in parts if p)


def lock_problems(text: str, path: str = "lock"):
    """Every requirement is NAME==VERSION with at least one --hash=sha256:<64 hex>, each name once."""
    seen = {}
    for line, requirement in logical_lines(text):
        m = REQUIREMENT.match(requirement)
        if not m:
            yield f"{path}:{line}: must be NAME==VERSION --hash=sha256:<64 hex>... (got {requirement[:80]!r})"
            continue
        key = canonicalize_name(m["name"])
        if key in seen:
            yield f"{path}:{line}: {m['name']!r} already on line {seen[key]}"
        seen[key] = line


def pins(path: Path) -> dict[str, str]:
    return {
        canonicalize_name(m["name"]): m["version"]
        for _, requirement in logical_lines(path.read_text(encoding="utf-8"))
        if (m := REQUIREMENT.match(requirement))
    }


@pytest.mark.parametrize("path", [RUNTIME_LOCK, TEST_LOCK], ids=lambda p: p.name)
def test_lock_pins_every_requirement_with_hashes(path):
    text = path.read_text(encoding="utf-8")
    assert list(lock_problems(text, path.name)) == []
    assert len(pins(path)) >= 10


def test_lock_rules_catch_a_bad_lock():
    good = "a" * 64
    bad = (
        "# comment\n"
        f"foo==1.0 \\\n    --hash=sha256:{good}\n"
        "bar>=2.0 \\\n    --hash=sha256:" + good + "\n"
        "baz==3.0\n"
        "qux==1.0 --hash=sha256:abc\n"
        f"Foo==1.1 --hash=sha256:{good}\n"
        f"quux==1.0 --hash=md5:{good[:32]}\n"
    )
    assert list(lock_problems(bad)) == [
        f"lock:4: must be NAME==VERSION --hash=sha256:<64 hex>... (got {('bar>=2.0 --hash=sha256:' + good)[:80]!r})",
        "lock:6: must be NAME==VERSION --hash=sha256:<64 hex>... (got 'baz==3.0')",
        "lock:7: must be NAME==VERSION --hash=sha256:<64 hex>... (got 'qux==1.0 --hash=sha256:abc')",
        "lock:8: 'Foo' already on line 2",
        f"lock:9: must be NAME==VERSION --hash=sha256:<64 hex>... (got 'quux==1.0 --hash=md5:{good[:32]}')",
    ]


def test_runtime_lock_has_no_test_tools():
    runtime, test = pins(RUNTIME_LOCK), pins(TEST_LOCK)
    assert TEST_TOOLS & runtime.keys() == set()
    assert TEST_TOOLS <= test.keys()
    assert runtime.keys() & test.keys() == set(), "a name belongs in one lock only"


def pyproject_groups() -> list[str]:
    return sorted(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])


# Each extra with the locks it installs from: the test tools' own lock only for `test`.
GROUPS = [(None, [RUNTIME_LOCK])] + [(g, [RUNTIME_LOCK, TEST_LOCK] if g == "test" else [RUNTIME_LOCK])
                                     for g in pyproject_groups()]


def pyproject_requirements(group: str | None) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = project["dependencies"] if group is None else project["optional-dependencies"][group]
    return [Requirement(r) for r in listed]


@pytest.mark.parametrize("group, locks", GROUPS)
def test_pyproject_dependencies_are_locked_at_their_version(group, locks):
    locked = {k: v for path in locks for k, v in pins(path).items()}
    for requirement in pyproject_requirements(group):
        key = canonicalize_name(requirement.name)
        assert key in locked, f"{requirement.name} is not in {[p.name for p in locks]}"
        assert requirement.specifier.contains(locked[key], prereleases=True), (requirement, locked[key])
        for extra in requirement.extras:
            for dependency in importlib.metadata.requires(requirement.name) or []:
                dep = Requirement(dependency)
                if dep.marker and dep.marker.evaluate({"extra": extra}) and not dep.marker.evaluate({"extra": ""}):
                    assert canonicalize_name(dep.name) in locked, f"{requirement}: {dep.name} is not locked"


def imported_modules(package: Path) -> dict[str, str]:
    """Top-level name -> first file:line that imports it, for every absolute import in `package`'s
    modules, wherever the import sits (most of kb's imports are inside functions)."""
    found: dict[str, str] = {}
    for path in sorted(package.rglob("*.py")):
        if path.parent.parts[-2:] == ("repro", "inputs"):
            continue  # reproduction inputs run under a pinned tool's own Python (triton), never imported by kb
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.partition(".")[0], f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def undeclared_imports(package: Path, declared: set[str]) -> list[str]:
    """file:line of each third-party module `package` imports whose distribution pyproject does
    not declare (an installed `bwkb` would fail there with ModuleNotFoundError)."""
    providers = importlib.metadata.packages_distributions()
    problems = []
    for module, where in sorted(imported_modules(package).items()):
        if module in sys.stdlib_module_names or module == package.name:
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists & declared:
            problems.append(f"{where}: imports {module} ({', '.join(sorted(dists)) or 'no installed distribution'}), "
                            "which pyproject.toml does not declare: add it to [project] dependencies or an extra")
    return problems


def test_every_third_party_module_kb_imports_is_declared():
    declared = {canonicalize_name(r.name) for g in [None, *pyproject_groups()] for r in pyproject_requirements(g)}
    assert undeclared_imports(ROOT / "kb", declared) == []


def test_the_import_rule_catches_an_undeclared_module(tmp_path):
    package = tmp_path / "kb"
    package.mkdir()
    (package / "refresh.py").write_text("import os\n\n\ndef edit():\n    from ruamel.yaml import YAML\n",
                                        encoding="utf-8")
    assert undeclared_imports(package, {"pyyaml"}) == [
        "kb/refresh.py:5: imports ruamel (ruamel-yaml), which pyproject.toml does not declare: add it to "
        "[project] dependencies or an extra"]
    assert undeclared_imports(package, {"ruamel-yaml"}) == []


def closure(roots: list[Requirement]) -> dict[str, str]:
    """name -> who needs it, for every distribution the roots need here (markers evaluated)."""
    needed, todo = {}, [(r, "pyproject.toml") for r in roots]
    while todo:
        requirement, parent = todo.pop()
        key = canonicalize_name(requirement.name)
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        if key in needed and not requirement.extras:
            continue
        needed.setdefault(key, parent)
        for dependency in importlib.metadata.requires(requirement.name) or []:
            dep = Requirement(dependency)
            if not dep.marker or any(dep.marker.evaluate({"extra": e}) for e in ("", *requirement.extras)):
                dep.marker = None
                todo.append((dep, requirement.name))
    return needed


@pytest.mark.parametrize("group, locks", GROUPS)
def test_locks_hold_the_whole_dependency_tree(group, locks):
    """--require-hashes refuses an unpinned dependency: walk the installed metadata from
    pyproject's dependencies and find each one in the locks (runtime alone for the runtime)."""
    locked = {k: v for path in locks for k, v in pins(path).items()}
    roots = pyproject_requirements(None) + (pyproject_requirements(group) if group else [])
    for key, parent in sorted(closure(roots).items()):
        assert key in locked, f"{key} (needed by {parent}) is not in {[p.name for p in locks]}"
        installed = importlib.metadata.version(key)
        assert installed == locked[key], f"{key} {installed} is installed, the lock has {locked[key]}: run `make test`"


def test_locks_match_the_pin_lists():
    """requirements*.lock are generated from requirements*.in: `make lock` after changing a pin."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "lock.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- Makefile ------------------------------------------------------------------------------------


def makefile_rules(text: str) -> dict[str, tuple[list[str], list[str]]]:
    """target -> (prerequisites, recipe lines), with simple `VAR :=` variables expanded."""
    variables = dict(re.findall(r"^([A-Z_]+)\s*[:?]?=\s*(.*?)\s*$", text, re.M))

    def expand(s: str) -> str:
        for _ in range(10):
            s = re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m[1], m[0]), s)
        return s

    rules, current = {}, None
    for line in text.splitlines():
        if line.startswith("\t") and current is not None:
            rules[current][1].append(expand(line.strip()))
        elif m := re.match(r"^([^\s:=#][^:=]*):(?!=)(.*)$", line):
            current = expand(m[1].strip())
            rules[current] = (expand(m[2].split("##", 1)[0]).split(), [])
        elif line.strip() and not line.startswith("#"):
            current = None
    return rules


def pip_install_problems(rules):
    """Every pip install or download from requirement files is hash-checked and binary-only; the
    editable install of kb can fetch nothing (no index, no dependencies, no isolated build
    environment)."""
    for target, (_, recipe) in rules.items():
        for line in recipe:
            verb = re.search(r"pip (install|download)", line)
            if verb is None:
                continue
            if re.search(r"\s(-e|--editable)\s", line):
                for flag in ("--no-index", "--no-deps", "--no-build-isolation"):
                    if flag not in line:
                        yield f"{target}: editable install without {flag}: {line}"
            else:
                for flag in ("--require-hashes", "--only-binary :all:"):
                    if flag not in line:
                        yield f"{target}: pip {verb[1]} without {flag}: {line}"
                for source in re.findall(r"-r\s+(\S+)", line):
                    if not source.endswith(".lock"):
                        yield f"{target}: installs from {source}, not a hashed lock: {line}"


def installs(rules, target: str) -> set[str]:
    """Requirement files the recipes of a target and its prerequisites install (-r FILE)."""
    seen, todo, files = set(), [target], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in rules:
            continue
        seen.add(name)
        prerequisites, recipe = rules[name]
        todo += prerequisites
        files |= {f for line in recipe if "pip install" in line for f in re.findall(r"-r\s+(\S+)", line)}
    return files


MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def test_makefile_installs_check_hashes():
    rules = makefile_rules(MAKEFILE)
    assert any("pip install" in line for _, recipe in rules.values() for line in recipe)
    assert list(pip_install_problems(rules)) == []


def test_makefile_rules_catch_unhashed_installs():
    bad = "BIN := .venv/bin\nsetup:\n\t$(BIN)/pip install -r requirements.lock\n\t$(BIN)/pip install -e .\n"
    assert list(pip_install_problems(makefile_rules(bad))) == [
        "setup: pip install without --require-hashes: .venv/bin/pip install -r requirements.lock",
        "setup: pip install without --only-binary :all:: .venv/bin/pip install -r requirements.lock",
        "setup: editable install without --no-index: .venv/bin/pip install -e .",
        "setup: editable install without --no-deps: .venv/bin/pip install -e .",
        "setup: editable install without --no-build-isolation: .venv/bin/pip install -e .",
    ]
    wheels = "BIN := .venv/bin\nwheels:\n\t$(BIN)/pip download -d w -r requirements.in\n"
    assert list(pip_install_problems(makefile_rules(wheels))) == [
        "wheels: pip download without --require-hashes: .venv/bin/pip download -d w -r requirements.in",
        "wheels: pip download without --only-binary :all:: .venv/bin/pip download -d w -r requirements.in",
        "wheels: installs from requirements.in, not a hashed lock: .venv/bin/pip download -d w -r requirements.in",
    ]


def test_setup_installs_the_runtime_lock_and_test_adds_the_test_lock():
    rules = makefile_rules(MAKEFILE)
    for target in ("setup", "check", "site", "serve"):
        assert installs(rules, target) == {"requirements.lock"}, target
    assert installs(rules, "test") == {"requirements.lock", "requirements-test.lock"}


def test_installs_rerun_when_a_lock_changes():
    """The stamp that installs a lock lists that lock (and pyproject.toml) as prerequisites."""
    rules = makefile_rules(MAKEFILE)
    for target, (prerequisites, recipe) in rules.items():
        for lock in {f for line in recipe if re.search(r"pip (install|download)", line)
                     for f in re.findall(r"-r\s+(\S+)", line)}:
            assert lock in prerequisites or any(lock in rules.get(p, ([], []))[0] for p in prerequisites), (target, lock)
        if any(re.search(r"\s-e\s", line) for line in recipe if "pip install" in line):
            assert "pyproject.toml" in prerequisites, target


# --- make targets the workflows call --------------------------------------------------------------

MAKE_GUARD = re.compile(r'test -n "\$\((\w+)\)"')
MAKE_RULE = re.compile(r"^([A-Za-z0-9_.$()/-]+(?:\s+[A-Za-z0-9_.$()/-]+)*)\s*:(?!=)\s*(.*?)(?:\s+##.*)?$")


def make_requirements(text: str) -> dict[str, set[str]]:
    """Target -> the variables its recipe, or a prerequisite's, refuses to run without
    (`test -n "$(VAR)"`)."""
    own: dict[str, set[str]] = {}
    needs: dict[str, list[str]] = {}
    target = None
    for line in text.splitlines():
        if line.startswith("\t"):
            if target is not None:
                own[target] |= set(MAKE_GUARD.findall(line))
            continue
        rule = MAKE_RULE.match(line)
        target = None
        if rule and not line.startswith((".", "#")) and "=" not in rule.group(1):
            for name in rule.group(1).split():
                own.setdefault(name, set())
                needs.setdefault(name, []).extend(rule.group(2).split())
            target = rule.group(1).split()[-1]
    def required(name: str, seen: frozenset = frozenset()) -> set[str]:
        found = set(own.get(name, ()))
        for prerequisite in needs.get(name, []):
            if prerequisite not in seen:
                found |= required(prerequisite, seen | {name})
        return found
    return {name: required(name) for name in own}


def make_calls(text: str):
    """(targets, variables given) of each `make` call in the shell text of a step."""
    for command in re.split(r"&&|\|\||;|\n|\|", text):
        words = command.split()
        if not words or words[0] != "make":
            continue
        given = {w.split("=", 1)[0] for w in words[1:] if re.match(r"^\w+=", w)}
        targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        yield targets or ["help"], given


def workflow_make_problems(workflow: str, makefile: str, scripts: dict[str, str] | None = None):
    """Every `make` target a workflow step calls (also through a script it runs, such as .ci/run)
    gets each variable the Makefile requires for it, on the command line or in the step's or
    job's env."""
    required = make_requirements(makefile)
    doc = yaml.safe_load(workflow)
    for name, job in (doc.get("jobs") or {}).items():
        for step in job.get("steps", []):
            if "run" not in step:
                continue
            env = set(doc.get("env") or {}) | set(job.get("env") or {}) | set(step.get("env") or {})
            texts = [step["run"]] + [body for script, body in (scripts or {}).items() if script in step["run"]]
            for text in texts:
                for targets, given in make_calls(text):
                    for target in targets:
                        missing = required.get(target, set()) - given - env
                        if missing:
                            yield f"jobs.{name}: make {target} needs {', '.join(sorted(missing))} (the Makefile refuses it without)"


SCRIPTS = {".ci/run": (ROOT / ".ci" / "run").read_text(encoding="utf-8")}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_make_target_a_workflow_calls_gets_its_variables(path):
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert make_requirements(makefile)["site"] == {"SITE_URL"}
    assert list(workflow_make_problems(path.read_text(encoding="utf-8"), makefile, SCRIPTS)) == []


def test_make_variable_rule_catches_a_bare_make_site():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    bad = """
jobs:
  build:
    steps:
      - run: make setup && make site
      - run: make site SITE_URL=https://example.invalid/kb/
      - env: {SITE_URL: "https://example.org/"}
        run: make site
"""
    assert list(workflow_make_problems(bad, makefile)) == [
        "jobs.build: make site needs SITE_URL (the Makefile refuses it without)"]


def test_no_symbolic_link_is_committed():
    """A link in the repository (mode 120000) would make the build read what it points at."""
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-s", "-z"], capture_output=True, check=True)
    links = [entry.split(b"\t", 1)[1].decode() for entry in done.stdout.split(b"\0")
             if entry.startswith(b"120000 ")]
    assert links == []
