"""The cmake kind of reproduction (kb.records.reproduction, kb repro): a CMake script of ours includes a
CMake module read from a released wheel (`kernel`) and prints what it selected. The torch CMake entry's
two recorded runs (2.14.1 prints the literal, 2.15.0, `fixed`, prints none); KB090/KB091 on a cmake run;
`kb repro` keeping only the wheel's .cmake files in the cache; and a run end to end on a small fake
wheel with the system's cmake, offline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kb.records import lint
from kb.repro import install, run

from conftest import ROOT
from fake_wheels import wheelhouse

ENTRIES = ROOT / "kb" / "entries"
ENTRY = "torch-cmake-autodetect-gb10-compute-20"
MODULE = "torch/share/cmake/Caffe2/Modules_CUDA_fix/upstream/FindCUDA/select_compute_arch.cmake"


@pytest.fixture(scope="module")
def cell():
    (found,) = [c for c in lint.check([ENTRIES]).cells if c.id == ENTRY]
    return found


def test_the_affected_release_prints_the_literal_and_the_fixed_one_none(cell):
    affected, fixed = cell.entry.reproductions
    assert (affected.kernel.version, affected.fixed, fixed.kernel.version, fixed.fixed) == ("2.14.1", False, "2.15.0", True)
    texts = [s.text for s in cell.entry.signatures]
    # verbatim: the detection's status line and the gencode flag nvcc is given, each a signature of the entry
    assert affected.printed.output.splitlines() == ["-- Autodetected CUDA architecture(s):  12.1(2.0)",
                                                    "-- nvcc flags: -gencode arch=compute_20,code=sm_121"]
    assert texts[2] in affected.printed.output and texts[1] in affected.printed.output
    assert "12.0+PTX" in fixed.printed.output and not any(t in fixed.printed.output for t in texts)
    assert affected.command() == (f"cmake -DCUDA_VERSION=13.0 -DWHEEL_FILE=<torch 2.14.1 wheel>/{MODULE} "
                                  "-P gb10-autodetect.cmake")


def _edited(tmp_path, cell, old: str, new: str, count: int = 1):
    text = cell.path.read_text(encoding="utf-8")
    assert text.count(old) >= count, old
    (tmp_path / cell.path.name).write_text(text.replace(old, new, count), encoding="utf-8")
    return [p for p in lint.check([tmp_path]).problems if p.code in ("KB024", "KB090", "KB091")]


def test_the_cmake_reproductions_lint_clean(tmp_path, cell):
    assert _edited(tmp_path, cell, "fixed: true", "fixed: true") == []


@pytest.mark.parametrize("old, new, loc, says", [
    ("    fixed: true\n", "", "reproductions[1].kernel.version", "torch 2.15.0 is outside this entry's range"),
    ("    fixed: true\n", "", "reproductions[1].printed.output", "shows none of this entry's signatures"),
    ('version: "2.15.0", path', 'version: "2.14.1", path', "reproductions[1].kernel.version",
     "torch 2.14.1 is inside this entry's range"),
    ('version: "2.15.0", path', 'version: "2.14.1", path', "reproductions[1].kernel.version",
     "outside fixes[0].applies '>=2.15.0'"),
    ("architecture(s):  12.0+PTX", "architecture(s):  12.1(2.0)", "reproductions[1].printed.output",
     "a run on a fixed release (`fixed: true`) must print none"),
    ('version: "2.14.1", path', 'version: "2.13.0", path', "reproductions[0].kernel",
     "torch==2.13.0 is not pinned in kb/repro/tools.lock"),
    ('select_compute_arch.cmake"}', 'select_compute_arch.py"}', "reproductions[0].kernel.path",
     "a cmake run reads a .cmake file of the wheel"),
    ('input: "gb10-autodetect.cmake"', 'input: "empty-sm120.ptx"', "reproductions[0].run.input",
     "cmake reads a .cmake file"),
    ('tool_version: "cmake version 3.27.9"', 'tool_version: "cmake version 3.25.1"',
     "reproductions[0].printed.tool_version", "must name the installed release 3.27.9"),
])
def test_a_bad_cmake_reproduction_names_its_field(tmp_path, cell, old, new, loc, says):
    found = _edited(tmp_path, cell, old, new)
    assert [p.loc for p in found if says in p.message] == [loc], [p.format() for p in found]


@pytest.mark.parametrize("arg", ["-DWHEEL_FILE=/etc/passwd", "-P", "-DX=a/b", "--trace"])
def test_a_cmake_argument_that_could_name_a_path_or_a_script_is_refused(tmp_path, cell, arg):
    found = _edited(tmp_path, cell, '"-DCUDA_VERSION=13.0"', f'"{arg}"')
    assert any(p.loc.startswith("reproductions[0].run.args") for p in found), [p.format() for p in found]


# --- the wheel's file, unpacked and run (no network: a fake wheel in a wheelhouse) ----------------

# A stand-in for torch's module: the detection's shape (a program run through try_run, its output's
# "2.1" rewritten, the status line), so that the input's try_run is what answers it.
FAKE_MODULE = """\
function(CUDA_SELECT_NVCC_ARCH_FLAGS out_variable)
  try_run(run_result compile_result ${PROJECT_BINARY_DIR} ${PROJECT_BINARY_DIR}/detect.cpp
          RUN_OUTPUT_VARIABLE caps)
  string(REGEX MATCHALL "[0-9]+\\\\.[0-9]+" caps "${caps}")
  string(REPLACE "2.1" "2.1(2.0)" caps "${caps}")
  message(STATUS "Autodetected CUDA architecture(s):  ${caps} (CUDA ${CUDA_VERSION})")
  set(${out_variable} -gencode arch=compute_20,code=sm_121 PARENT_SCOPE)
endfunction()
"""


def _wheelhouse(tmp_path: Path, monkeypatch) -> Path:
    """A small torch 2.14.1 wheel (the module, another .cmake file, a .py file, a library)."""
    return wheelhouse(tmp_path, monkeypatch, "torch", "2.14.1", {
        MODULE: FAKE_MODULE, "torch/share/cmake/Torch/TorchConfig.cmake": "# another module\n",
        "torch/__init__.py": "raise ImportError('never imported')\n", "torch/lib/libtorch_cuda.so": b"\x7fELF"})


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
def test_the_cache_keeps_only_the_wheels_files_of_the_kind_the_run_reads(tmp_path, monkeypatch):
    house = _wheelhouse(tmp_path, monkeypatch)
    cmake = install.unpacked("torch", "2.14.1", house, suffix=".cmake")
    assert cmake.name == "torch-2.14.1.src.cmake"
    assert _files(cmake) == [MODULE, "torch/share/cmake/Torch/TorchConfig.cmake"]
    # a triton run's .py files go to a folder of their own, so neither kind's folder lacks its files
    python = install.unpacked("torch", "2.14.1", house)
    assert (python.name, _files(python)) == ("torch-2.14.1.src", ["torch/__init__.py"])
    assert install.unpacked("torch", "2.14.1", house, suffix=".cmake") == cmake  # from the cache
    assert sorted(p.name for p in cmake.parent.iterdir()) == ["torch-2.14.1.src", "torch-2.14.1.src.cmake"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake on this system to stand in for the pinned one")
def test_a_cmake_run_includes_the_wheels_module_and_a_fixed_run_differs_when_it_prints_the_literal(
        tmp_path, monkeypatch, cell):
    house = _wheelhouse(tmp_path, monkeypatch)
    # The system's cmake in place of the pinned release (installing that needs the index).
    root = tmp_path / "cmake-release"
    (root / "cmake" / "data" / "bin").mkdir(parents=True)
    (root / "cmake" / "data" / "bin" / "cmake").symlink_to(shutil.which("cmake"))
    monkeypatch.setattr(install, "install", lambda package, version, wheelhouse=None: root)
    affected, fixed = cell.entry.reproductions
    ran = run.run_one(cell, 0, affected, house, 60, "2026-12-06")
    assert ran.error == ""
    # The input's try_run answered with 12.1, the wheel's module rewrote it, CUDA_VERSION came from the args.
    assert ran.printed.output == ("-- Autodetected CUDA architecture(s):  12.1(2.0) (CUDA 13.0)\n"
                                  "-- nvcc flags: -gencode arch=compute_20,code=sm_121\n")
    assert ran.printed.exit == 0 and ran.printed.tool_version.startswith("cmake version ")
    assert "prints none of the entry's signatures (compared as kb match compares)" not in ran.differences
    # the same output recorded for a run marked fixed: the literal it prints is the difference
    as_fixed = run.differences(cell.entry, ran.printed, ran.printed, fixed=True)
    assert as_fixed == ["a fixed release prints one of the entry's signatures (compared as kb match compares)"]
    assert run.differences(cell.entry, fixed.printed, fixed.printed, fixed=True) == []
