"""The stages import in one direction: triage and doctor never load the page renderer."""

from __future__ import annotations

import subprocess
import sys

import pytest

RENDERING = ("kb.site.pages", "jinja2", "markdown_it", "nh3", "kb.site.charts", "mkdocs")


@pytest.mark.parametrize("module", ["kb.triage.match", "kb.triage.evidence", "kb.doctor.diagnose", "kb.records.catalog",
                                    "kb.records.lint"])
def test_module_does_not_import_the_renderer(module):
    code = f"import sys, {module}; print(' '.join(m for m in {RENDERING!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_the_navigation_lists_exactly_the_facets():
    """mkdocs.yml cannot import kb.records.facets: this keeps its Browse menu in step with it."""
    import yaml

    from conftest import ROOT
    from kb.records import facets

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    browse = next(item["Browse"] for item in config["nav"] if isinstance(item, dict) and "Browse" in item)
    listed = {list(item.values())[0]: list(item)[0] for item in browse}
    wanted = {f"by/{facet}.md": title for facet, title in facets.FACETS.items()}
    assert {path: title for path, title in listed.items() if path.startswith("by/") and path != "by.md"} == wanted


# The folders of kb/ are the stages; each may import only the stages before it (lazy imports
# inside functions included): records <- site, triage, doctor, edit, repro <- cli.
ALLOWED = {
    "records": {"kb", "kb.cache", "kb.records"},
    "edit": {"kb", "kb.cache", "kb.records", "kb.edit"},
    "site": {"kb", "kb.cache", "kb.records", "kb.site", "kb.triage", "kb.doctor"},
    "triage": {"kb", "kb.cache", "kb.records", "kb.triage"},
    "doctor": {"kb", "kb.cache", "kb.records", "kb.doctor"},
    "repro": {"kb", "kb.cache", "kb.records", "kb.repro"},
}


def _stage_modules(stage: str) -> list[str]:
    """Every module of a stage, dotted, its subpackages' included (kb.edit.refresh.client)."""
    from conftest import ROOT

    names = []
    for path in (ROOT / "kb" / stage).rglob("*.py"):
        if path.parent == ROOT / "kb" / "repro" / "inputs":
            continue  # reproduction inputs: scripts `kb repro` runs with a pinned tool's Python, not kb modules
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def _kb_imports(path) -> set[str]:
    """The kb packages a module imports from: kb.records for `from kb.records.lint import x`,
    kb.cache for `from kb import cache`, kb for `from kb import ENTRIES`."""
    import ast

    from conftest import ROOT

    def module(name: str) -> bool:
        return (ROOT / "kb" / name).is_dir() or (ROOT / "kb" / f"{name}.py").is_file()

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [f"kb.{a.name}" if node.module == "kb" and module(a.name) else node.module for a in node.names] \
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
        for name in names:
            parts = name.split(".")
            if parts[0] == "kb":
                found.add(".".join(parts[:2]))
    return found


@pytest.mark.parametrize("stage", sorted(ALLOWED))
def test_each_stage_imports_only_the_stages_before_it(stage):
    """Read from the source, so a lazy import inside a function counts as much as one at the top."""
    from conftest import ROOT

    for path in sorted((ROOT / "kb" / stage).rglob("*.py")):
        wrong = _kb_imports(path) - ALLOWED[stage]
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"
    # Nothing sits beside the stages but the package's entry points and the cache they share.
    assert {p.name for p in (ROOT / "kb").glob("*.py")} == {"__init__.py", "cache.py", "cli.py"}
    assert _kb_imports(ROOT / "kb" / "cache.py") <= {"kb"}  # the package's own facts: a checkout or installed


# Each module imported alone, in a fresh interpreter (kb's modules dropped between two), the way a
# command or a test imports it first: an import cycle fails here whatever order the others load in,
# and what it loads is its stage and the stages before it, nothing later.
_LOADED = """
import json, sys
report = {}
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "kb" or m.startswith("kb.")]:
        del sys.modules[loaded]
    __import__(name)
    report[name] = sorted({".".join(m.split(".")[:2]) for m in sys.modules if m.startswith("kb.")})
print(json.dumps(report))
"""


@pytest.mark.parametrize("stage", sorted(ALLOWED))
def test_each_module_imports_alone_and_loads_only_earlier_stages(stage):
    import json

    modules = _stage_modules(stage)
    done = subprocess.run([sys.executable, "-c", _LOADED, *modules], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert sorted(loaded) == modules
    for module, packages in loaded.items():
        assert f"kb.{stage}" in packages, module
        assert set(packages) <= ALLOWED[stage] - {"kb"}, f"{module} loads {sorted(set(packages) - ALLOWED[stage])}"


def test_only_kb_refresh_reaches_the_network():
    """The network client (kb.edit.refresh.client) is the one module of kb and its hook that opens
    a connection to GitHub, and only the refresh command reaches it: `kb check`, the build, `kb match`
    and `kb doctor` never send a request. The other, kb.repro.newest, reads the package index's JSON
    API for `kb repro --newest` alone (kb repro reaches the index through pip already)."""
    import ast

    from conftest import ROOT

    network = {"socket", "http.client", "urllib.request"}
    connects, reaches, newest = set(), set(), set()
    for path in sorted([*(ROOT / "kb").rglob("*.py"), *(ROOT / "hooks").glob("*.py")]):
        name = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module, *(f"{node.module}.{a.name}" for a in node.names)] \
                if isinstance(node, ast.ImportFrom) and node.module else []
            if network & set(modules):
                connects.add(name)
            if any(m.startswith("kb.edit.refresh") for m in modules) and not name.startswith("kb/edit/refresh/"):
                reaches.add(name)
            if "kb.repro.newest" in modules or (node.__class__ is ast.ImportFrom and node.module == "kb.repro"
                                                 and "newest" in [a.name for a in node.names]):
                newest.add(name)
    assert connects == {"kb/edit/refresh/client.py", "kb/repro/newest.py"}
    assert newest == {"kb/repro/run.py"}
    run = (ROOT / "kb" / "repro" / "run.py").read_text(encoding="utf-8")
    assert 'if getattr(args, "newest", False):\n        from kb.repro import newest\n' in run
    assert reaches == {"kb/cli.py"}
    cli = (ROOT / "kb" / "cli.py").read_text(encoding="utf-8")
    assert "from kb.edit.refresh import command\n" in cli and cli.count("kb.edit.refresh") == 1
