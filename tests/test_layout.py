"""The stages import in one direction: triage and doctor never load the page renderer."""

from __future__ import annotations

import subprocess
import sys

import pytest

RENDERING = ("kb.pages", "jinja2", "markdown_it", "nh3", "kb.charts", "mkdocs")


@pytest.mark.parametrize("module", ["kb.match", "kb.doctor", "kb.catalog", "kb.lint"])
def test_module_does_not_import_the_renderer(module):
    code = f"import sys, {module}; print(' '.join(m for m in {RENDERING!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_render_modules_import_without_a_cycle():
    for module in ("kb.matrix", "kb.freshness", "kb.rulespage", "kb.pages"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
