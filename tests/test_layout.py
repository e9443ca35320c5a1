"""The stages import in one direction: triage and doctor never load the page renderer."""

from __future__ import annotations

import subprocess
import sys

import pytest

RENDERING = ("kb.pages", "jinja2", "markdown_it", "nh3", "kb.charts", "mkdocs")


@pytest.mark.parametrize("module", ["kb.match", "kb.evidence", "kb.doctor", "kb.catalog", "kb.lint"])
def test_module_does_not_import_the_renderer(module):
    code = f"import sys, {module}; print(' '.join(m for m in {RENDERING!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_render_modules_import_without_a_cycle():
    for module in ("kb.matrix", "kb.freshness", "kb.rulespage", "kb.pages"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_the_navigation_lists_exactly_the_facets():
    """mkdocs.yml cannot import kb.facets: this keeps its Browse menu in step with it."""
    import yaml

    from conftest import ROOT
    from kb import facets

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    browse = next(item["Browse"] for item in config["nav"] if isinstance(item, dict) and "Browse" in item)
    listed = {list(item.values())[0]: list(item)[0] for item in browse}
    wanted = {f"by/{facet}.md": title for facet, title in facets.FACETS.items()}
    assert {path: title for path, title in listed.items() if path.startswith("by/") and path != "by.md"} == wanted
