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


def test_render_modules_import_without_a_cycle():
    for module in ("kb.site.matrix", "kb.site.freshness", "kb.site.rulespage", "kb.site.pages"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


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
# inside functions included): records <- site, triage, doctor <- cli.
ALLOWED = {
    "records": {"kb", "kb.cache", "kb.schema", "kb.records"},
    "site": {"kb", "kb.cache", "kb.schema", "kb.records", "kb.site", "kb.triage", "kb.doctor"},
    "triage": {"kb", "kb.cache", "kb.schema", "kb.records", "kb.triage"},
    "doctor": {"kb", "kb.cache", "kb.schema", "kb.records", "kb.doctor"},
}


def _kb_imports(path) -> set[str]:
    """The kb packages a module imports from: kb.records for `from kb.records.lint import x`."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
        for name in names:
            parts = name.split(".")
            if parts[0] == "kb":
                found.add(".".join(parts[:2]))
    return found


@pytest.mark.parametrize("stage", sorted(ALLOWED))
def test_each_stage_imports_only_the_stages_before_it(stage):
    from conftest import ROOT

    for path in sorted((ROOT / "kb" / stage).glob("*.py")):
        wrong = _kb_imports(path) - ALLOWED[stage]
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"
    assert {p.name for p in (ROOT / "kb").glob("*.py")} == {"__init__.py", "cache.py", "cli.py", "schema.py"}
    assert _kb_imports(ROOT / "kb" / "schema.py") <= {"kb", "kb.records"}
