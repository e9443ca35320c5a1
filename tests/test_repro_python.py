"""The python reproduction kind: host-side logic lifted out of a released wheel's file and run by
kb repro's own interpreter, with stand-ins for what it would ask of torch or the toolkit."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.records import lint, reproduction
from kb.repro import run

from conftest import ROOT
from fake_wheels import wheelhouse

ENTRIES = ROOT / "kb" / "entries"
MOE = "flashinfer-jit-gb10-moe-utils-major-version-filter"
OLD_NVCC = "flashinfer-jit-sm12x-arch-dropped-cuda-below-12-9"
# A small stand-in for FlashInfer's compilation_context.py: the same checks, and the top-level
# `import torch` that makes importing the real file impossible here.
FAKE = '''import os
import torch
import logging

logger = logging.getLogger(__name__)


class CompilationContext:
    def __init__(self):
        self.archs = set()
        if "FLASHINFER_CUDA_ARCH_LIST" in os.environ:
            major, minor = os.environ["FLASHINFER_CUDA_ARCH_LIST"].split(".")
            self.archs.add((int(major), minor))
        else:
            try:
                major, minor = torch.cuda.get_device_capability(0)
                from flashinfer.jit.cpp_ext import is_cuda_version_at_least
                if major == 12 and not is_cuda_version_at_least("12.9"):
                    raise RuntimeError("SM 12.x requires CUDA >= 12.9")
                self.archs.add((major, str(minor) + "a"))
            except Exception as e:
                logger.warning(f"Failed to get device capability: {e}.")

    def get_nvcc_flags_list(self, supported_major_versions=None):
        found = [a for a in self.archs if a[0] in supported_major_versions]
        if not found:
            raise RuntimeError(f"No supported CUDA architectures found for major versions {supported_major_versions}.")
        return sorted(found)
'''


@pytest.fixture(scope="module")
def cells():
    return {c.id: c for c in lint.check([ENTRIES]).cells if c.id in (MOE, OLD_NVCC)}


def _wheelhouse(tmp_path: Path, monkeypatch, version: str) -> Path:
    """A small flashinfer-python wheel of `version`, FAKE as its compilation_context.py."""
    return wheelhouse(tmp_path, monkeypatch, "flashinfer-python", version, {
        "flashinfer/compilation_context.py": FAKE, "flashinfer/__init__.py": "raise ImportError('never imported')\n"})


@pytest.mark.slow
def test_the_lifted_class_raises_the_literal_with_the_stand_ins_the_record_gives(tmp_path, monkeypatch, cells):
    house = _wheelhouse(tmp_path, monkeypatch, "0.6.7")
    ran = run.run_one(cells[OLD_NVCC], 0, cells[OLD_NVCC].entry.reproductions[0], house, 60, "2026-12-06")
    assert ran.error == ""
    # torch's capability and the toolkit's answer came from the stand-ins; the warning is the log's line
    assert ran.printed.output == (
        "WARNING flashinfer.compilation_context: Failed to get device capability: SM 12.x requires CUDA >= 12.9.\n"
        "RuntimeError: No supported CUDA architectures found for major versions [12].\n")
    assert ran.printed.exit == 1
    assert reproduction.VERSION_LINE["python"].search(ran.printed.tool_version).group(1) == "0.6.7"
    assert ran.printed.tool_version.startswith("python 3.")
    # the fake's output differs from the real wheel's recorded one only where the fake is shorter
    assert "prints none of the entry's signatures (compared as kb match compares)" not in ran.differences


@pytest.mark.slow
def test_the_environment_variable_reaches_the_lifted_code(tmp_path, monkeypatch, cells):
    house = _wheelhouse(tmp_path, monkeypatch, "0.6.7")
    ran = run.run_one(cells[MOE], 0, cells[MOE].entry.reproductions[0], house, 60, "2026-12-06")
    assert (ran.error, ran.printed.output, ran.printed.exit) == (
        "", "RuntimeError: No supported CUDA architectures found for major versions [10].\n", 1)
    assert ran.differences == []


def test_each_entry_has_an_affected_run_and_a_fixed_run_outside_its_range(cells):
    for cell in cells.values():
        affected, fixed = cell.entry.reproductions
        assert (affected.fixed, fixed.fixed) == (False, True)
        assert affected.run.tool == fixed.run.tool == "python"
        assert reproduction.shown(cell.entry, affected.printed.output)
        assert not reproduction.shown(cell.entry, fixed.printed.output) and fixed.printed.exit == 0
        assert reproduction.problems(cell) == []


def test_a_python_run_must_read_the_wheel_it_installs(cells):
    cell = cells[MOE]
    repro = cell.entry.reproductions[0]
    other = repro.kernel.model_copy(update={"version": "0.7.4"})
    changed = repro.model_copy(update={"kernel": other})
    entry = cell.entry.model_copy(update={"reproductions": [changed]})
    found = reproduction.problems(type("Cell", (), {"entry": entry, "path": cell.path, "id": cell.id,
                                                    "line_of": cell.line_of})())
    assert [(p.code, p.got) for p in found if "same package and version" in p.message] == [
        ("KB091", "flashinfer-python==0.7.4")]


def test_the_call_option_admits_only_calls_names_and_literals(tmp_path):
    import subprocess
    import sys

    driver = reproduction.INPUTS / "python_call.py"
    (tmp_path / "x.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(driver), "--module=x", "--call=f()+__import__('os')",
                           f"--kernel-file={tmp_path / 'x.py'}"], capture_output=True, text=True)
    assert done.returncode == 1 and "may hold only calls, names, attributes and literals, not Add, BinOp" in done.stderr
    done = subprocess.run([sys.executable, str(driver), "--module=x", "--call=__import__('os').getcwd()",
                           f"--kernel-file={tmp_path / 'x.py'}"], capture_output=True, text=True)
    assert done.returncode == 1 and "may not name __import__" in done.stderr



@pytest.mark.parametrize("option, says", [
    ("--returns=torch.cuda.device_count=1", "--returns item 'torch.cuda.device_count=1' must be NAME:LITERAL"),
    ("--returns=torch.cuda.device_count:one", "--returns item 'torch.cuda.device_count:one' must be NAME:LITERAL"),
    ("--object=layer.1x:2", "--object item 'layer.1x:2' must be NAME:LITERAL"),
])
def test_a_stand_in_that_is_not_name_and_literal_is_refused_by_name(tmp_path, option, says):
    import subprocess
    import sys

    driver = reproduction.INPUTS / "python_call.py"
    (tmp_path / "x.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(driver), "--module=x", "--call=f()", option,
                           f"--kernel-file={tmp_path / 'x.py'}"], capture_output=True, text=True)
    assert done.returncode == 1 and says in done.stderr and "such as" in done.stderr

# A stand-in for a check in a method of a torch module class: the base (nn.Module) and a sibling
# method whose annotation names torch's types cannot be defined without torch.
LAYER = '''import torch
import torch.nn as nn


class Experts(nn.Module):
    def load(self, w: torch.Tensor) -> torch.Tensor:
        return w

    def check(self) -> None:
        if torch.cuda.get_device_capability(self.weight.device)[0] != 10:
            raise NotImplementedError("needs SM100")
        return self.weight.device
'''


def _call_method(tmp_path, capability):
    import subprocess
    import sys

    (tmp_path / "layer.py").write_text(LAYER, encoding="utf-8")
    return subprocess.run([sys.executable, str(reproduction.INPUTS / "python_call.py"), "--module=pkg.layer",
                           f"--returns=torch.cuda.get_device_capability:{capability}",
                           "--object=layer.weight.device:'cuda:0'", "--method=Experts.check",
                           "--call=Experts.check(layer)", f"--kernel-file={tmp_path / 'layer.py'}"],
                          capture_output=True, text=True)


def test_a_method_is_lifted_alone_and_called_with_the_object_standing_in_for_the_instance(tmp_path):
    done = _call_method(tmp_path, "(12,0)")
    assert (done.returncode, done.stdout, done.stderr) == (1, "NotImplementedError: needs SM100\n", "")
    # the same method passes for capability 10.x and reads the stand-in object's attribute
    done = _call_method(tmp_path, "(10,0)")
    assert (done.returncode, done.stdout) == (0, "'cuda:0'\n")


def test_an_object_option_must_name_an_attribute_path(tmp_path):
    import subprocess
    import sys

    (tmp_path / "x.py").write_text("def f(o):\n    return o\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(reproduction.INPUTS / "python_call.py"), "--module=x",
                           "--object=layer:1", "--call=f(layer)", f"--kernel-file={tmp_path / 'x.py'}"],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "--object='layer' must name an object and an attribute path" in done.stderr


def test_an_object_option_may_not_name_a_dunder(tmp_path):
    import subprocess
    import sys

    (tmp_path / "x.py").write_text("def f(o):\n    return o\n", encoding="utf-8")
    for dotted in ("layer.__class__", "__builtins__.open"):
        done = subprocess.run([sys.executable, str(reproduction.INPUTS / "python_call.py"), "--module=x",
                               f"--object={dotted}:1", "--call=f(layer)", f"--kernel-file={tmp_path / 'x.py'}"],
                              capture_output=True, text=True)
        assert done.returncode == 1 and f"--object={dotted!r} may not name __" in done.stderr, done.stderr
