"""`kb doctor` predictions: the fatbin reader, the compatibility rule, Triton's ptxas, NCCL,
per-block shared memory, `--target` and `--fail-on`, on fixtures made here (tests/fatbin_fixtures.py)."""

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from kb import cli
from kb.doctor import predict, sharedmem
from kb.records import fatbin
from kb.records import lint
from tests import fatbin_fixtures as fx

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "kb" / "entries"


def write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def lib(tmp_path, *entries, name="libx.so") -> fatbin.Library:
    return fatbin.read(write(tmp_path / name, fx.library(fx.fatbin(*entries))))


def target(text):
    return predict.parse_target(text)


# --- the reader ----------------------------------------------------------------------------------

def test_reads_sass_and_ptx_architectures_of_every_unit(tmp_path):
    path = write(tmp_path / "libx.so", fx.library(
        fx.fatbin(fx.entry("sass", 80), fx.entry("sass", 90), fx.entry("ptx", 90)),
        fx.fatbin(fx.entry("sass", 120, variant="a"), fx.entry("ptx", 120, variant="f"))))
    library = fatbin.read(path)
    assert library.problem is None and library.elf
    assert [[i.name for i in unit] for unit in library.units] == [["sm_80", "sm_90", "compute_90"],
                                                                   ["sm_120a", "compute_120f"]]
    assert library.names("sass") == ["sm_80", "sm_90", "sm_120a"]
    assert library.names("ptx") == ["compute_90", "compute_120f"]
    assert not library.compressed


@pytest.mark.parametrize("abi", [7, 8])
def test_arch_specific_cubin_is_read_from_its_e_flags_in_both_layouts(tmp_path, abi):
    library = lib(tmp_path, fx.entry("sass", 90, payload=fx.cubin(90, True, abi), header_flags=False),
                  fx.entry("sass", 120, payload=fx.cubin(120, False, abi), header_flags=False))
    assert library.names("sass") == ["sm_90a", "sm_120"]


def test_arch_specific_ptx_is_read_from_its_target_line(tmp_path):
    library = lib(tmp_path, fx.entry("ptx", 120, variant="a", header_flags=False))
    assert library.names("ptx") == ["compute_120a"]


def test_compressed_entries_give_their_architecture_from_the_header(tmp_path):
    library = lib(tmp_path, fx.entry("sass", 120, variant="a", compressed=True), fx.entry("ptx", 90, compressed=True))
    assert library.names("sass") == ["sm_120a"] and library.names("ptx") == ["compute_90"]
    assert library.compressed


def test_relocatable_device_code_section_is_read(tmp_path):
    path = write(tmp_path / "libr.so", fx.library(fx.fatbin(fx.entry("sass", 100)), section=b"__nv_relfatbin"))
    assert fatbin.read(path).names("sass") == ["sm_100"]


def test_a_library_without_device_code_has_no_units(tmp_path):
    path = write(tmp_path / "libhost.so", fx.elf_with(b".text", b"\x90" * 64))
    library = fatbin.read(path)
    assert library.units == [] and library.problem is None and library.elf


TOOLS = {name: shutil.which(name) or f"/usr/local/cuda/bin/{name}" for name in ("ptxas", "fatbinary")}


@pytest.mark.skipif(not all(os.access(p, os.X_OK) for p in TOOLS.values()),
                    reason="NVIDIA's ptxas and fatbinary are not installed (the byte-level tests above still run)")
@pytest.mark.parametrize("compress", [False, True])
def test_reader_agrees_with_what_nvidia_fatbinary_writes(tmp_path, compress):
    """The real tools' output, wrapped in a host ELF, reads as the images they were asked for."""
    images = []
    for arch, variant in ((90, ""), (120, ""), (120, "a")):
        source = tmp_path / f"k{arch}{variant}.ptx"
        source.write_bytes(fx.ptx(arch, variant).rstrip(b"\0"))
        cubin = tmp_path / f"k{arch}{variant}.cubin"
        subprocess.run([TOOLS["ptxas"], f"-arch=sm_{arch}{variant}", str(source), "-o", str(cubin)], check=True,
                       capture_output=True, timeout=60)
        images.append(f"--image3=kind=elf,sm={arch}{variant},file={cubin}")
    images.append(f"--image3=kind=ptx,sm=120,file={tmp_path / 'k120.ptx'}")
    out = tmp_path / "k.fatbin"
    subprocess.run([TOOLS["fatbinary"], f"--create={out}", *images] + (["--compress-all"] if compress else []),
                   check=True, capture_output=True, timeout=60)
    library = fatbin.read(write(tmp_path / "libreal.so", fx.library(out.read_bytes())))
    assert library.problem is None
    assert library.names("sass") == ["sm_90", "sm_120", "sm_120a"]
    assert library.names("ptx") == ["compute_120"]
    assert all(i.compressed for i in library.images if i.kind == "sass") == compress


# --- units that hold no kernel (nvlink's device-link output) --------------------------------------

def dlink(*archs: int, **kw) -> bytes:
    """The fatbin `nvcc -shared` adds: SASS of each architecture, no kernel in it."""
    return fx.fatbin(*(fx.entry("sass", a, kernels=(), **kw) for a in archs))


@pytest.mark.parametrize("code,on,verdict,failing", [
    ([fx.entry("sass", 80, kernels=("_Z1kPf",)), fx.entry("ptx", 80)], "sm_90", "jit", 0),  # the stub lacks sm_90
    ([fx.entry("sass", 80, kernels=("_Z1kPf",))], "sm_90", "fails", 1),  # the kernel's unit still fails
    ([fx.entry("sass", 80, kernels=("_Z1kPf",)), fx.entry("ptx", 80)], "sm_80", "runs", 0),
])
def test_a_unit_without_kernels_is_not_counted_as_failing(tmp_path, code, on, verdict, failing):
    path = write(tmp_path / "libk.so", fx.library(dlink(80), fx.fatbin(*code)))
    library = fatbin.read(path)
    assert fatbin.holds_kernels(path, library.units[0]) is False
    lv = predict.judge_library("bitsandbytes", library, target(on))
    assert (lv.verdict, lv.failing_units, lv.kernel_free_units) == (verdict, failing, 1 if on == "sm_90" else 0)


def test_kernels_that_cannot_be_seen_count_as_code(tmp_path):
    """Only a section table read in full that lists no `.text.` section makes a unit kernel-free:
    a compressed cubin, a header without sections, a PTX image or a broken table keep it counted."""
    table_past_end = bytearray(fx.cubin(80, kernels=()))
    table_past_end[0x28:0x30] = (10**6).to_bytes(8, "little")  # e_shoff far past the payload
    units = {
        "compressed": dlink(80, compressed=True),
        "header-only": fx.fatbin(fx.entry("sass", 80)),
        "ptx": fx.fatbin(fx.entry("sass", 80, kernels=()), fx.entry("ptx", 100)),
        "table-past-end": fx.fatbin(fx.entry("sass", 80, payload=bytes(table_past_end))),
    }
    for name, unit in units.items():
        path = write(tmp_path / f"lib{name}.so", fx.library(unit))
        library = fatbin.read(path)
        assert library.problem is None, name
        assert fatbin.holds_kernels(path, library.units[0]) is None, name
        assert predict.judge_library("x", library, target("sm_90")).verdict == "fails", name
    kernel_free = write(tmp_path / "libstub.so", fx.library(dlink(80, 90)))
    assert predict.judge_library("x", fatbin.read(kernel_free), target("sm_120")).verdict == "no-device-code"


NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.mark.slow
@pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason="NVIDIA's nvcc is not installed")
def test_a_library_nvcc_links_runs_by_its_ptx_on_a_newer_gpu(tmp_path):
    """`nvcc -shared` with sm_80 SASS and compute_80 PTX: its device-link unit has sm_80 alone and
    no kernel, and the kernel's unit runs on sm_90 by its PTX."""
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"
                      'extern "C" void run(float *x) { k<<<1, 32>>>(x); }\n')
    out = tmp_path / "libk.so"
    subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=[sm_80,compute_80]",
                    str(source), "-o", str(out)], check=True, capture_output=True, timeout=300, cwd=tmp_path)
    library = fatbin.read(str(out))
    assert library.problem is None and len(library.units) == 2
    # the stub (sm_80 alone, read: no kernel); the kernel's unit has PTX, which is not looked into
    assert [fatbin.holds_kernels(str(out), unit) for unit in library.units] == [False, None]
    lv = predict.judge_library("bitsandbytes", library, target("sm_90"))
    assert (lv.verdict, lv.kernel_free_units) == ("jit", 1)


# --- files that are not what their names say -----------------------------------------------------

def hostile(tmp_path) -> dict[str, str]:
    good = fx.library(fx.fatbin(fx.entry("sass", 90), fx.entry("sass", 120)))
    bad_entry = bytearray(fx.fatbin(fx.entry("sass", 90)))
    bad_entry[16 + 8:16 + 16] = (2**62).to_bytes(8, "little")  # payload size far past the end
    files = {
        "empty": b"",
        "text": b"this is not a library\n" * 10,
        "random": bytes(range(256)) * 40,
        "elf32": b"\x7fELF\x01\x01\x01" + b"\0" * 200,
        "truncated": good[: len(good) // 2],
        "elf-only-header": good[:64],
        "entry-past-end": fx.library(bytes(bad_entry)),
        "section-past-end": fx.elf_with(b".nv_fatbin", fx.fatbin(fx.entry("sass", 90)), claimed_size=2**40),
        "huge-section-count": good[:0x3C] + (0xFFFF).to_bytes(2, "little") + good[0x3E:],
    }
    return {name: write(tmp_path / f"lib{name}.so", data) for name, data in files.items()}


def test_garbage_and_broken_files_never_raise(tmp_path):
    for name, path in hostile(tmp_path).items():
        library = fatbin.read(path)
        assert library.units == [] or name == "truncated", name
        assert library.problem, name
        assert library.bytes_read <= fatbin.MAX_READ


def test_a_2_gb_sparse_file_named_like_a_library_costs_at_most_the_cap(tmp_path):
    path = tmp_path / "libhuge.so"
    # a real ELF header and section table whose .nv_fatbin claims 2 GB of zeros
    head = fx.elf_with(b".nv_fatbin", b"", claimed_size=2 * 2**30)
    with open(path, "wb") as out:
        out.write(head)
        out.truncate(2 * 2**30 + 4096)
    cap = 1 * 2**20
    library = fatbin.read(str(path), limit=cap)
    assert library.bytes_read <= cap
    assert library.units == [] and "cap" in library.problem
    # the same file full of garbage named like a library: 64 bytes read
    with open(path, "r+b") as out:
        out.write(b"garbage!" * 8)
    assert fatbin.read(str(path)).bytes_read == 64


def test_not_a_regular_file(tmp_path):
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    assert fatbin.read(str(fifo)).problem == "not a regular file"
    assert fatbin.read(str(tmp_path / "libmissing.so")).problem.startswith("cannot open it")


# --- the rule ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,arch,variant,gpu,expected", [
    ("sass", 120, "", "sm_121", True),    # same major, lower minor
    ("sass", 121, "", "sm_120", False),   # higher minor
    ("sass", 120, "a", "sm_121", False),  # arch-specific: that capability only
    ("sass", 120, "a", "sm_120", True),
    ("sass", 120, "f", "sm_121", True),   # family-specific: the family
    ("sass", 100, "", "sm_120", False),   # another major
    ("sass", 90, "", "sm_120", False),
    ("ptx", 90, "", "sm_121", True),      # PTX: JIT for any later GPU
    ("ptx", 120, "a", "sm_121", False),
    ("ptx", 121, "", "sm_120", False),
])
def test_compatibility_rule(kind, arch, variant, gpu, expected):
    assert predict.runs(fatbin.Image(kind, arch, variant, False), target(gpu)) is expected


@pytest.mark.parametrize("text,capability", [("sm_120", "12.0"), ("sm_121", "12.1"), ("sm_120a", "12.0"),
                                             ("12.1", "12.1"), ("GB10", "12.1"), ("DGX Spark", "12.1"),
                                             ("RTX 5090", "12.0"), ("NVIDIA H100 80GB HBM3", "9.0")])
def test_targets_from_architectures_and_the_gpu_table(text, capability):
    assert target(text).capability == capability


@pytest.mark.parametrize("text", ["sm_", "GeForce 256", "", "sm_1200000", "12"])
def test_unknown_target_is_refused(text):
    with pytest.raises(predict.TargetError, match="not an architecture"):
        target(text)


# --- predictions on a fake site-packages ---------------------------------------------------------

def fake_site(tmp_path, ptxas_version="12.8.93", nccl="2.25.1") -> Path:
    site = tmp_path / "site-packages"
    write(site / "torch" / "lib" / "libtorch_cuda.so",
          fx.library(fx.fatbin(fx.entry("sass", 80), fx.entry("sass", 90), fx.entry("ptx", 90, variant="a"))))
    write(site / "torch" / "lib" / "libc10.so", fx.elf_with(b".text", b"\x90" * 16))
    write(site / "vllm" / "_C.abi3.so", fx.library(fx.fatbin(fx.entry("sass", 120), fx.entry("sass", 90))))
    write(site / "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so",
          fx.library(fx.fatbin(fx.entry("sass", 80)), fx.fatbin(fx.entry("sass", 120, compressed=True))))
    write(site / "unrelated" / "libfoo.so", fx.library(fx.fatbin(fx.entry("sass", 50))))
    bin_dir = site / "triton" / "backends" / "nvidia" / "bin"
    script = f"#!/bin/sh\necho 'Cuda compilation tools, release {ptxas_version[:4]}, V{ptxas_version}'\n"
    for name in ("ptxas", "ptxas-blackwell"):
        write(bin_dir / name, script.encode())
        (bin_dir / name).chmod(0o755)
    (site / f"nvidia_nccl_cu12-{nccl}.dist-info").mkdir()
    return site


def cells():
    return lint.cached_check([LIVE]).cells


def test_prediction_on_a_fake_site_packages(tmp_path):
    site = fake_site(tmp_path)
    result = predict.predict(cells(), [str(site)], target("sm_120"), env={})
    by_path = {Path(lv.library.path).name: lv for lv in result.libraries}
    assert set(by_path) == {"libtorch_cuda.so", "libc10.so", "_C.abi3.so",
                            "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"}  # not `unrelated`
    assert by_path["libtorch_cuda.so"].verdict == "fails"
    assert "torch-sm120-not-compatible-pytorch-install" in by_path["libtorch_cuda.so"].entries
    assert by_path["libc10.so"].verdict == "no-device-code"
    assert by_path["_C.abi3.so"].verdict == "runs"
    flash = by_path["flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"]
    assert (flash.package, flash.verdict, flash.failing_units) == ("flash-attn", "partly", 1)
    assert result.ptxas.knows is True and result.ptxas.path.endswith("ptxas-blackwell")
    assert [c for c, v, _ in result.nccl_cells if v == "affected"] == ["nccl-2-25-shared-memory-exceeds-sm120-limit"]


def test_ptxas_that_predates_the_target_names_the_entry(tmp_path):
    site = fake_site(tmp_path, ptxas_version="12.8.93")
    result = predict.predict(cells(), [str(site)], target("GB10"), env={})
    assert (result.ptxas.version, result.ptxas.knows) == ("12.8.93", False)
    assert result.ptxas.entry == "triton-ptxas-sm121a-gpu-name-not-defined"
    assert any(line.startswith("triton: its ptxas 12.8.93") for line in result.failures)


def test_triton_ptxas_path_wins_over_the_bundled_one(tmp_path):
    site = fake_site(tmp_path, ptxas_version="12.8.93")
    newer = tmp_path / "cuda13" / "ptxas"
    write(newer, b"#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    newer.chmod(0o755)
    result = predict.triton_ptxas([str(site)], target("sm_121"), {"TRITON_PTXAS_PATH": str(newer)})
    assert (result.how, result.version, result.knows) == ("TRITON_PTXAS_PATH", "13.0.88", True)


def test_a_ptxas_that_hangs_or_is_not_a_program_is_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(predict, "PTXAS_TIMEOUT", 0.5)
    slow = write(tmp_path / "slow", b"#!/bin/sh\nsleep 30\necho done\n")
    os.chmod(slow, 0o755)
    assert "took over 0.5 s" in predict.ptxas_version(slow)[1]
    garbage = write(tmp_path / "garbage", b"\0\1\2")
    os.chmod(garbage, 0o755)
    assert predict.ptxas_version(garbage)[1].startswith("cannot run")
    assert "not an absolute path" in predict.ptxas_version("ptxas")[1]


def test_first_ptxas_releases_agree_with_the_entries():
    """PTXAS_KNOWS names live entries, and every recorded ptxas run that refused a target ran a
    release older than the one the table says first knows it."""
    by_id = {cell.id: cell for cell in cells()}
    for arch, (first, entry) in predict.PTXAS_KNOWS.items():
        assert f"sm_{arch}" in by_id[entry].entry.hardware.architectures
    checked = 0
    for cell in by_id.values():
        for run in cell.entry.reproductions or []:
            arch = next((re.fullmatch(r"-arch=sm_(\d+)a?", a) for a in run.run.args if a.startswith("-arch=")), None)
            if run.run.tool != "ptxas" or arch is None or int(arch.group(1)) not in predict.PTXAS_KNOWS:
                continue
            refused = "is not defined for option 'gpu-name'" in run.printed.output
            first = predict.PTXAS_KNOWS[int(arch.group(1))][0]
            older = tuple(map(int, run.install.version.split(".")[:2])) < tuple(map(int, first.split(".")))
            assert refused == older, (cell.id, run.install.version)
            checked += 1
    assert checked >= 2


# --- per-block shared memory (kb.doctor.sharedmem) ------------------------------------------------

MLA = "mla-decode-fp8-kv-triton-shared-memory"  # fp8 num_stages=2 needs 102,400 bytes per block


def dists(tmp_path, *names) -> Path:
    """A site-packages holding only the dist-info folders `names` ('vllm-0.27.1')."""
    site = tmp_path / "dists"
    for name in names:
        (site / f"{name}.dist-info").mkdir(parents=True)
    return site


def test_needs_are_the_measurements_of_a_kernel_per_block():
    """A need in bytes, per block: device budgets and a need per SM are not needs per block."""
    by_id = {cell.id: cell.entry for cell in cells()}
    assert sharedmem.needs(by_id[MLA]) == [(59392, "bf16 num_stages=1"), (63488, "bf16 num_stages=2"),
                                           (83968, "fp8 num_stages=1"), (102400, "fp8 num_stages=2")]
    assert sharedmem.needs(by_id["flashinfer-topk-ragged-operation-not-supported-gb10"]) == []  # per SM, a budget
    assert sharedmem.needs(by_id["cutlass-fp4-gemm-per-call-workspace"]) == []  # MiB of global memory


def test_a_kernel_over_the_table_limit_is_predicted_when_its_package_is_installed(tmp_path):
    site = dists(tmp_path, "vllm-0.27.1", "triton-3.7.1")
    for arch in ("sm_120", "sm_121"):
        result = predict.predict(cells(), [str(site)], target(arch), env={})
        sm = result.shared_memory
        assert (sm.limit, sm.source) == (101376, sharedmem.LIMIT_SOURCE)
        assert [(n.entry, n.needs, n.what, n.packages) for n in sm.needs] == [
            (MLA, 102400, "fp8 num_stages=2", ("vllm 0.27.1",))]
        assert (f"vllm 0.27.1: {MLA} needs 102,400 bytes of shared memory per block (fp8 num_stages=2), "
                "the GPU allows 101,376") in result.failures
        assert result.as_json()["shared_memory"]["over_limit"] == [
            {"entry": MLA, "needs_bytes": 102400, "configuration": "fp8 num_stages=2", "installed": ["vllm 0.27.1"]}]


def test_no_prediction_without_the_triggering_package(tmp_path):
    """Triton raises the error, but only vLLM's code asks for the kernel: Triton alone predicts nothing."""
    result = predict.predict(cells(), [str(dists(tmp_path, "triton-3.7.1"))], target("sm_120"), env={})
    assert result.shared_memory.limit == 101376 and result.shared_memory.needs == []


def test_a_probed_limit_wins_and_a_larger_one_predicts_nothing(tmp_path):
    site = [str(dists(tmp_path, "vllm-0.27.1"))]
    h100 = predict.Target("NVIDIA H100 80GB HBM3", 9, 0, smem_per_block=232448)
    sm = predict.predict(cells(), site, h100, env={}).shared_memory
    assert (sm.limit, sm.source, sm.needs) == (232448, sharedmem.PROBED, [])
    # the same architecture as the record, with the limit at the need: nothing is over it
    sm = predict.predict(cells(), site, predict.Target("sm_120", 12, 0, smem_per_block=102400), env={}).shared_memory
    assert (sm.limit, sm.needs) == (102400, [])
    sm = predict.predict(cells(), site, predict.Target("sm_120", 12, 0, smem_per_block=102399), env={}).shared_memory
    assert [n.entry for n in sm.needs] == [MLA]


def test_an_unknown_limit_is_said_not_checked(tmp_path):
    result = predict.predict(cells(), [str(dists(tmp_path, "vllm-0.27.1"))], target("sm_90"), env={})
    assert (result.shared_memory.limit, result.shared_memory.needs) == (None, [])
    assert any(line.startswith("  Per-block shared memory: not checked (the GPU's opt-in limit was not probed")
               and "sm_120, sm_121" in line for line in predict.report(result))


def test_installed_reads_dist_info_names_and_skips_odd_ones(tmp_path):
    first = dists(tmp_path / "a", "flashinfer_python-0.6.9", "vllm-0.27.1+cu130", "torch-2.11.0" + "9" * 80)
    (first / "sglang-\u202e0.5.12.dist-info").mkdir()  # a bidi override is no version
    second = dists(tmp_path / "b", "vllm-0.1.0", "sglang-0.5.12")
    found = sharedmem.installed([str(first), str(second), str(tmp_path / "missing")])
    assert found == {"flashinfer-python": "0.6.9", "vllm": "0.27.1+cu130", "sglang": "0.5.12"}  # the first folder wins
    assert sharedmem.record_versions({"flashinfer", "torch"}, found) == {"flashinfer": "0.6.9", "torch": None}


# --- the command ---------------------------------------------------------------------------------

def doctor(capsys, *args):
    code = cli.main(["doctor", "--entries", str(LIVE), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_target_sm_121_on_a_machine_without_a_gpu_predicts_the_failure(tmp_path, capsys):
    site = fake_site(tmp_path)
    code, out, err = doctor(capsys, "--target", "sm_121", "--site-packages", str(site), "--timeout", "5")
    assert code == 0, err
    assert "GPU 0: sm_121; architecture sm_121 (compute capability 12.1)" in out
    assert "Predicted for sm_121 (compute capability 12.1)" in out
    assert re.search(r"torch: .*libtorch_cuda\.so: FAILS: no SASS or PTX it can run", out)
    assert "family no-code-for-gpu: families/no-code-for-gpu/" in out  # a package no entry names
    code, out, _ = doctor(capsys, "--target", "sm_121", "--site-packages", str(site), "--fail-on", "predicted",
                          "--json", "--timeout", "5")
    assert code == 1
    report = json.loads(out)
    assert report["facts"]["gpus"][0]["compute_capability"] == "12.1"
    assert report["prediction"]["target"]["architecture"] == "sm_121"
    assert any("libtorch_cuda.so has no code for sm_121" in f for f in report["prediction"]["failures"])


def test_shared_memory_prediction_in_the_report_and_json(tmp_path, capsys):
    site = dists(tmp_path, "vllm-0.27.1")
    code, out, err = doctor(capsys, "--target", "sm_121", "--site-packages", str(site), "--timeout", "5")
    assert code == 0, err
    assert ("  Per-block shared memory: the GPU allows 101,376 bytes (CUTLASS include/cutlass/arch/arch.h "
            "sm120_smem_capacity_bytes); 1 recorded kernel(s) need more") in out
    assert f"    {MLA}: needs 102,400 bytes (fp8 num_stages=2); installed: vllm 0.27.1" in out
    assert "1 more failure(s) predicted" in out and "not checked" not in out
    code, out, _ = doctor(capsys, "--target", "sm_121", "--site-packages", str(site), "--json", "--fail-on",
                          "predicted", "--timeout", "5")
    assert code == 1  # the shared-memory prediction alone trips it: no library, no ptxas, no NCCL here
    prediction = json.loads(out)["prediction"]
    assert prediction["shared_memory"]["limit_bytes"] == 101376
    assert [n["entry"] for n in prediction["shared_memory"]["over_limit"]] == [MLA]
    assert len(prediction["failures"]) == 1


def test_fail_on_applies_ignores_predictions(tmp_path, capsys):
    site = fake_site(tmp_path, nccl="2.27.3")
    code, _, _ = doctor(capsys, "--target", "sm_121", "--site-packages", str(site), "--fail-on", "applies",
                        "--timeout", "5")
    assert code == 0  # libtorch_cuda fails, but no cell applies to this Python's (empty) stack


def test_a_bad_target_is_exit_2_with_a_message(capsys):
    code, out, err = doctor(capsys, "--target", "GeForce 256")
    assert code == 2 and out == ""
    assert "--target 'GeForce 256': not an architecture" in err


def test_facts_file_reads_no_local_libraries_unless_asked(tmp_path, capsys):
    facts = ROOT / "tests" / "fixtures" / "facts" / "no-gpu.json"
    code, out, _ = doctor(capsys, "--facts", str(facts), "--json")
    assert code == 0 and "prediction" not in json.loads(out)
    site = fake_site(tmp_path)
    code, out, _ = doctor(capsys, "--facts", str(facts), "--json", "--site-packages", str(site), "--target", "sm_120")
    assert json.loads(out)["prediction"]["libraries"]


def test_hostile_libraries_in_site_packages_are_reported_not_raised(tmp_path, capsys):
    site = tmp_path / "site-packages"
    for name, path in hostile(tmp_path).items():
        write(site / "vllm" / Path(path).name, Path(path).read_bytes())
    (site / "vllm" / "liblink.so").symlink_to("/dev/zero")
    code, out, err = doctor(capsys, "--target", "sm_120", "--site-packages", str(site), "--timeout", "5")
    assert code == 0, err
    assert "Traceback" not in out + err
    assert "not an ELF file" in out and "broken headers" in out
    assert "liblink.so" not in out  # links are not followed
    assert stat.S_ISREG(os.stat(site / "vllm" / "libtext.so").st_mode)


def test_the_family_a_failing_library_names_exists():
    """A library of a package no entry names is sent to the family page: that family is a record."""
    from kb.records import families

    records, problems = families.load_families(families.HERE)
    assert problems == [] and predict.NO_CODE_FAMILY in {r.id for r in records}
