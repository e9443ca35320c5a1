"""cute_dsl_op.py --construct: a kernel class lifted out of a released wheel's file and constructed for
an architecture, as kb repro runs it (the driver and lift.py in a folder of their own). The upstream
file here is a small stand-in with the same shape as FA4's flash_fwd_sm100.py: a top-level import of
its own package (not installed), annotations naming that package's types, and an architecture check
in the constructor. The DSL itself is not needed: the check reads CUTE_DSL_ARCH, as the DSL does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kb.records import lint, reproduction

from conftest import ROOT

ENTRIES = ROOT / "kb" / "entries"
FA4 = "vllm-vit-fa4-sm100-kernel-asserts-on-sm120"
FAKE = '''import math
import os
from typing import Optional

from upstream_pkg.cute.block_sparsity import BlockSparseTensors

LIMITS = ("sm_100a", "sm_103a", "sm_110f")


class KernelSm100:

    def __init__(self, head_dim: int, head_dim_v: Optional[int] = None, is_causal: bool = False):
        self.head_dim_padded = int(math.ceil(head_dim / 16) * 16)
        self.arch = os.environ["CUTE_DSL_ARCH"]
        assert self.arch in LIMITS, "Only SM 10.x and 11.x are supported"

    def __call__(self, sparse: BlockSparseTensors | None = None) -> None:
        raise NotImplementedError
'''


def _driver(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The driver run as kb repro runs it: from a folder holding it and lift.py, the upstream file given."""
    for name in ("cute_dsl_op.py", *reproduction.DRIVER_MODULES):
        shutil.copyfile(reproduction.INPUTS / name, tmp_path / name)
    upstream = tmp_path / "flash_fwd_sm100.py"
    upstream.write_text(FAKE, encoding="utf-8")
    return subprocess.run([sys.executable, "cute_dsl_op.py", *args, f"--kernel-file={upstream}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


def test_a_constructor_that_refuses_the_arch_prints_the_assertion(tmp_path):
    done = _driver(tmp_path, "--arch=sm_120a", "--construct=KernelSm100", "--kwargs=head_dim:128")
    assert (done.stdout, done.returncode) == ("AssertionError: Only SM 10.x and 11.x are supported\n", 1), done.stderr


def test_an_admitted_arch_constructs_the_class(tmp_path):
    # the method's annotation names a type of the package, never imported: annotations stay unevaluated
    done = _driver(tmp_path, "--arch=sm_100a", "--construct=KernelSm100", "--kwargs=head_dim:96,is_causal:True")
    assert (done.stdout, done.returncode) == ("constructed KernelSm100\n", 0), done.stderr


@pytest.mark.parametrize("kwargs, says", [("head_dim=128", "'head_dim=128' must be NAME:LITERAL"),
                                          ("head_dim:sixteen", "'head_dim:sixteen' must be NAME:LITERAL"),
                                          ("1x:2", "'1x:2' must be NAME:LITERAL")])
def test_a_keyword_argument_that_is_no_literal_is_refused(tmp_path, kwargs, says):
    done = _driver(tmp_path, "--arch=sm_120a", "--construct=KernelSm100", f"--kwargs={kwargs}")
    assert done.returncode == 1 and says in done.stderr, done.stderr


def test_a_class_the_file_lacks_is_named(tmp_path):
    done = _driver(tmp_path, "--arch=sm_120a", "--construct=KernelSm90", "--kwargs=head_dim:128")
    assert done.returncode == 1 and "no top-level 'KernelSm90' in flash_fwd_sm100.py" in done.stderr, done.stderr


def test_construct_needs_the_wheels_file(tmp_path):
    shutil.copyfile(reproduction.INPUTS / "cute_dsl_op.py", tmp_path / "cute_dsl_op.py")
    done = subprocess.run([sys.executable, "cute_dsl_op.py", "--arch=sm_120a", "--construct=KernelSm100"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--construct names a class of --kernel-file" in done.stderr, done.stderr


def _with_fa4_repro(tmp_path, old: str, new: str):
    """The FA4 entry copied with one edit of its cute-dsl reproduction; its KB090/KB091 problems."""
    path = ENTRIES / f"{FA4}.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / path.name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return [p for p in lint.check([tmp_path]).problems if p.code in ("KB024", "KB090", "KB091")]


def test_the_fa4_reproduction_lints_clean(tmp_path):
    assert _with_fa4_repro(tmp_path, "exit: 1", "exit: 1") == []


@pytest.mark.parametrize("old, new, loc, says", [
    ('"--kwargs=head_dim:128"', '"--kernel-file=/etc/passwd"', "reproductions[0].run.args[2]",
     "the input file is added by kb repro"),
    ('path: "vllm/vllm_flash_attn/cute/flash_fwd_sm100.py"', 'path: "vllm/vllm_flash_attn/cute/flash_fwd_sm100.so"',
     "reproductions[0].kernel.path", "must be the path of a .py or .cmake file"),
    ('version: "0.20.0", path', 'version: "0.19.0", path', "reproductions[0].kernel",
     "vllm==0.19.0 is not pinned in kb/repro/tools.lock"),
])
def test_a_bad_construct_reproduction_names_its_field(tmp_path, old, new, loc, says):
    found = _with_fa4_repro(tmp_path, old, new)
    assert [p.loc for p in found if says in p.message] == [loc], [p.format() for p in found]


def test_the_construct_command_names_the_wheel_it_reads():
    cell = next(c for c in lint.check([ENTRIES]).cells if c.id == FA4)
    assert cell.entry.reproductions[0].command() == (
        "python cute_dsl_op.py --arch=sm_120a --construct=FlashAttentionForwardSm100 --kwargs=head_dim:128 "
        "--kernel-file=<vllm 0.20.0 wheel>/vllm/vllm_flash_attn/cute/flash_fwd_sm100.py")
