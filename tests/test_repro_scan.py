"""Scans: cuobjdump's listings read from recorded output (tests/data/cuobjdump/, verbatim), the
boundary a scan proves, the lint that holds a range to its scan (KB093, KB094) and the writer's
`scans:` block. A Windows DLL's fat binaries are read
from a PE image built here. Nothing here downloads a wheel or runs cuobjdump."""

from __future__ import annotations

import re
import struct

import pytest

from kb.records import lint
from kb.records.fatbin import FATBIN_MAGIC, loads, split_name
from kb.records.scan import Found, Library, Scan, Wheel, boundary, code_for, regressed
from kb.repro import fatbin, scan, write
from kb.site import reproduced

from conftest import FIXTURES, ROOT

DATA = ROOT / "tests" / "data" / "cuobjdump"
GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"


def _data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_an_elf_listing_is_counted_per_architecture_in_number_order():
    found = scan.images("ELF", _data("bitsandbytes-0.45.3-cuda128.list-elf.txt"), "", 0)
    assert found == {"sm_70": 1, "sm_75": 1, "sm_80": 1, "sm_86": 1, "sm_89": 1, "sm_90": 1, "sm_100": 1,
                     "sm_120": 1}
    assert list(found) == sorted(found, key=lambda a: int(a[3:]))


def test_a_ptx_listing_counts_every_image():
    text = _data("vllm-0.9.2-C.list-ptx.txt")
    found = scan.images("PTX", text, "", 0)
    assert sum(found.values()) == len(text.splitlines())
    assert set(found) == set(re.findall(r"\.(sm_[0-9]+)\.ptx$", text, re.M))


@pytest.mark.parametrize("name, status", [("no-ptx.exit0.stderr.txt", 0), ("no-device-code.exit255.stderr.txt", 255)])
def test_a_library_without_images_is_an_empty_listing(name, status):
    assert scan.images("PTX", "", _data(name), status) == {}


def test_a_cuobjdump_failure_is_an_error_never_an_empty_listing():
    with pytest.raises(scan.ScanError, match="exit status 1: cuobjdump fatal   : Invalid ELF"):
        scan.images("PTX", "", _data("invalid-elf.exit1.stderr.txt"), 1)


def test_a_line_of_another_kind_or_form_is_an_error():
    with pytest.raises(scan.ScanError, match="not a ELF image"):
        scan.images("ELF", _data("vllm-0.9.2-C.list-ptx.txt"), "", 0)
    with pytest.raises(scan.ScanError, match="not a PTX image: 'PTX: 3 files'"):
        scan.images("PTX", "PTX: 3 files\n", "", 0)


def test_the_platforms_reach_back_to_the_old_manylinux_tags():
    tags = scan.platforms("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64"
    assert {"manylinux_2_24_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"} <= set(tags)
    assert "manylinux_2_31_x86_64" not in tags


def test_the_aarch64_platforms_stop_at_manylinux2014():
    tags = scan.platforms("manylinux_2_28_aarch64")
    assert tags[0] == "manylinux_2_28_aarch64"
    assert tags[-2:] == ["manylinux_2_17_aarch64", "manylinux2014_aarch64"]
    assert all(tag.endswith("_aarch64") for tag in tags)
    assert "manylinux_2_16_aarch64" not in tags and "manylinux1_aarch64" not in tags


def _wheel(version: str, sass: dict[str, int]) -> Wheel:
    return Wheel(version=version, file=f"p-{version}-py3-none-any.whl", sha256="0" * 64,
                 libraries=[Library(path="p/lib.so", sass=sass, ptx={"sm_90a": 1})])  # PTX sm_12x never runs


def _scan(arch: str, *wheels: Wheel) -> Scan:
    return Scan(package="p", library="p/lib.so", arch=arch, platform="manylinux_2_28_x86_64", python="3.11",
                versions=[w.version for w in wheels], tool={"package": "nvidia-cuda-cuobjdump", "version": "13.4.92"},
                found=Found(tool_version="V13.4.92", date="2026-12-05", machine="m", wheels=list(wheels)))


def test_the_boundary_is_the_last_version_without_code_and_the_first_with_it():
    s = _scan("sm_120", _wheel("1.10", {"sm_120a": 1}), _wheel("1.2", {"sm_90": 1}), _wheel("1.9", {"sm_90": 2}))
    assert boundary(s) == ("1.9", "1.10")  # in version order, not the order listed
    assert boundary(_scan("sm_120", _wheel("1.0", {"sm_90": 1}), _wheel("1.1", {"sm_100": 1}))) == ("1.1", None)


# The driver's rule (kb.records.fatbin.loads), one sentence a case: (kind, image, GPU, runs).
LOADS = [
    ("sass", "sm_120", "sm_120", True),    # SASS runs on its own architecture.
    ("sass", "sm_120", "sm_121", True),    # sm_120 SASS runs on sm_121: same major, older minor.
    ("sass", "sm_121", "sm_120", False),   # sm_121 SASS does not run on sm_120: its minor is newer.
    ("sass", "sm_90", "sm_120", False),    # SASS of another major never runs.
    ("sass", "sm_120a", "sm_120", True),   # arch-specific SASS runs on exactly its architecture...
    ("sass", "sm_120a", "sm_121", False),  # ...and on no other, not even a newer minor.
    ("sass", "sm_120f", "sm_121", True),   # family SASS runs within its family from its minor up...
    ("sass", "sm_121f", "sm_120", False),  # ...but not on an older minor.
    ("ptx", "compute_90", "sm_120", True),   # portable PTX of an older target is JIT-compiled for sm_120.
    ("ptx", "compute_52", "sm_121", True),   # however old it is.
    ("ptx", "compute_121", "sm_120", False),  # portable PTX newer than the GPU is not.
    ("ptx", "compute_90a", "sm_120", False),  # arch-specific PTX runs only on its own arch (onnxruntime 1.23.0).
    ("ptx", "compute_120a", "sm_120", True),  # its own arch it runs on.
    ("ptx", "compute_120f", "sm_121", True),  # family PTX runs within the family from its minor up.
    ("ptx", "compute_100f", "sm_120", False),  # and not in another family.
]


@pytest.mark.parametrize("kind, image, gpu, expected", LOADS, ids=[f"{k}-{i}-on-{g}" for k, i, g, _ in LOADS])
def test_the_driver_loads_an_image_by_its_rule(kind, image, gpu, expected):
    major, minor = divmod(split_name(gpu)[0], 10)
    assert loads(kind, *split_name(image), major, minor) is expected


def test_an_arch_specific_cubin_loads_only_on_its_own_architecture():
    wheel = _wheel("1.0", {"sm_120a": 1})
    assert code_for(wheel, "sm_120") == ["sm_120a"]
    assert code_for(wheel, "sm_121") == []  # sm_120a is not loaded by a 12.1 device
    assert code_for(_wheel("1.0", {"sm_120": 1}), "sm_121") == ["sm_120"]


def test_portable_ptx_counts_only_where_every_fat_binary_holds_it():
    """vLLM 0.9.1 (compute_90 PTX x16 beside sm_80 SASS x50) fails on sm_120; onnxruntime-gpu 1.22.0
    (compute_90 PTX in each fat binary) runs; 1.23.0's compute_90a PTX runs on sm_90 alone."""
    def one(sass, ptx):
        return Wheel(version="1.0", file="p-1.0-py3-none-any.whl", sha256="0" * 64,
                     libraries=[Library(path="p/lib.so", sass=sass, ptx=ptx)])
    assert code_for(one({"sm_80": 50, "sm_90": 47}, {"sm_52": 1, "sm_90": 16}), "sm_120") == []
    assert code_for(one({"sm_80": 158, "sm_90": 158}, {"sm_90": 158}), "sm_120") == ["compute_90"]
    assert code_for(one({"sm_80": 184, "sm_90a": 184}, {"sm_90a": 184}), "sm_120") == []
    assert code_for(one({}, {"sm_80": 1}), "sm_121") == ["compute_80"]  # PTX alone: each unit has it
    assert code_for(one({"sm_120": 3}, {"sm_90": 3}), "sm_120") == ["sm_120", "compute_90"]


# --- the lint, on the canonical entry with a scan of bitsandbytes 0.45.2 / 0.45.3 -------------------

SCAN = """scans:
  - package: bitsandbytes
    library: bitsandbytes/libbitsandbytes_cuda12[68].so
    arch: sm_120
    platform: manylinux_2_28_x86_64
    python: '3.11'
    versions: ['0.45.2', '0.45.3']
    tool: {package: nvidia-cuda-cuobjdump, version: 13.4.92}
    found:
      tool_version: Cuda compilation tools, release 13.4, V13.4.92
      date: 2026-12-05
      machine: Debian GNU/Linux 12 (bookworm), x86_64
      wheels:
        - version: '0.45.2'
          file: bitsandbytes-0.45.2-py3-none-manylinux_2_24_x86_64.whl
          sha256: ba3a720187f518b172ebce4081049c682ae3fd8284947e22499b256ff99a2bc3
          BUILD
          libraries:
            - {path: bitsandbytes/libbitsandbytes_cuda126.so, sass: {sm_80: 1, sm_90: 1}, ptx: {}}
        - version: '0.45.3'
          file: bitsandbytes-0.45.3-py3-none-manylinux_2_24_x86_64.whl
          sha256: 720d67ffa8a5c61c958fb62517e8abbb2ab0ac1b33b66506ae911cb34c836c70
          libraries:
            - {path: bitsandbytes/libbitsandbytes_cuda128.so, sass: {sm_90: 1, sm_100: 1, sm_120: 1}, ptx: {}}
"""


def _problems(tmp_path, component: str, scan_text: str = SCAN, build: str = "", others: tuple = ()) -> list[str]:
    text = GOOD.read_text(encoding="utf-8")
    text = re.sub(r"^components:\n(?:  .*\n)+", f"components:\n  - {component}\n", text, flags=re.M)
    text = text.replace("scans: []\n", "")  # the canonical record's empty block, replaced by this one
    text += scan_text.replace("          BUILD\n", f"          build: '{build}'\n" if build else "")
    path = tmp_path / GOOD.name
    path.write_text(text, encoding="utf-8")
    found = lint.check([tmp_path]).problems
    assert [p.format() for p in found if p.code not in ("KB093", "KB094", *others)] == []  # otherwise valid
    return [p.format() for p in found if p.code in ("KB093", "KB094")]


def test_a_range_the_scan_proves_passes(tmp_path):
    assert _problems(tmp_path, "{package: bitsandbytes, role: raises, affected: '<0.45.3'}") == []


def test_a_scan_no_release_fixed_yet_passes_an_open_range_and_names_the_versions_read(tmp_path):
    unfixed = SCAN.replace("sass: {sm_90: 1, sm_100: 1, sm_120: 1}", "sass: {sm_90: 1, sm_100: 1}")
    assert _problems(tmp_path, "{package: bitsandbytes, role: raises, affected: '>=0.45.2'}", unfixed) == []
    (cell,) = lint.check([tmp_path]).cells
    assert boundary(cell.entry.scans[0]) == ("0.45.3", None)
    line = reproduced.evidence(cell)
    assert "none of the scanned bitsandbytes releases (0.45.2, 0.45.3) has sm_120 code (wheels read 2026-12-05;" in line
    assert "the last without" not in line
    (wide,) = _problems(tmp_path, "{package: bitsandbytes, role: raises, affected: '<0.45.3'}", unfixed)
    assert "leaves out 0.45.3" in wide and "widen it" in wide


def test_a_range_that_leaves_out_a_version_without_code_names_the_scan_and_the_wheel(tmp_path):
    (found,) = _problems(tmp_path, "{package: bitsandbytes, role: raises, affected: '<0.45.2'}")
    assert "components[0].affected: components[0].affected '<0.45.2' leaves out 0.45.2 but scans[0] " \
           "(bitsandbytes bitsandbytes/libbitsandbytes_cuda12[68].so, 2026-12-05): " \
           "bitsandbytes-0.45.2-py3-none-manylinux_2_24_x86_64.whl (0.45.2) holds " \
           "bitsandbytes/libbitsandbytes_cuda126.so: SASS sm_80 x1 sm_90 x1 | PTX none: no code sm_120 runs (no SASS it loads, no PTX it " \
           "compiles in every fat binary); " \
           "widen it" in found
    assert found.endswith("[KB094]")


def test_a_range_that_covers_a_version_with_code_is_refused(tmp_path):
    (found,) = _problems(tmp_path, "{package: bitsandbytes, role: raises, affected: '<0.46'}")
    assert "includes 0.45.3 but scans[0]" in found and "code for sm_120, which sm_120 runs; narrow it" in found


def test_a_fixed_in_the_scan_refutes_is_refused(tmp_path):
    found = _problems(tmp_path, "{package: bitsandbytes, role: raises, affected: '<0.45.2', fixed_in: '0.45.2',"
                       " fixed_commit: 'abcdef1'}", others=("KB086",))  # the status is not fixed-release
    assert any("components[0].fixed_in '0.45.2' but scans[0]" in f and "the first scanned version with it is 0.45.3"
               in f for f in found)


def test_a_build_label_covers_a_version_outside_the_range(tmp_path):
    component = "{package: bitsandbytes, role: raises, affected: '<0.45.2', builds: ['+cu126']}"
    assert _problems(tmp_path, component, build="+cu126") == []
    assert len(_problems(tmp_path, component, build="+cu124")) == 1


def test_a_scanned_component_without_a_range_is_told_what_to_write(tmp_path):
    (found,) = _problems(tmp_path, "{package: bitsandbytes, role: raises}")
    assert "proves bitsandbytes 0.45.2 lacks sm_120 code and 0.45.3 carries it" in found
    assert "write affected: '<0.45.3'" in found


def test_a_scan_not_recorded_or_recorded_for_other_versions_is_refused(tmp_path):
    component = "{package: bitsandbytes, role: raises, affected: '<0.45.3'}"
    (unrecorded,) = _problems(tmp_path, component, SCAN.split("    found:\n")[0])
    assert "no recorded result: run `kb repro --write mla-decode-fp8-kv-triton-shared-memory`" in unrecorded
    (other,) = _problems(tmp_path, component, SCAN.replace("versions: ['0.45.2', '0.45.3']",
                                                           "versions: ['0.45.1', '0.45.3']"))
    assert "the recorded wheels are versions 0.45.2, 0.45.3 but the scan lists 0.45.1, 0.45.3" in other
    unpinned = _problems(tmp_path, component, SCAN.replace("version: 13.4.92", "version: 13.0.88"))
    assert any("nvidia-cuda-cuobjdump==13.0.88 is not pinned in kb/repro/tools.lock" in p for p in unpinned)
    assert any("the version line must name the pinned release V13.0.88" in p for p in unpinned)


def test_the_scans_block_reads_back_byte_for_byte():
    with_scans = [c for c in lint.check([ROOT / "kb" / "entries"]).cells if c.entry.scans]
    assert len(with_scans) >= 4
    for cell in with_scans:
        raw = cell.path.read_bytes()
        assert write.rewritten(cell.path, raw, list(cell.entry.scans), "scans") == raw, cell.id
        for s in cell.entry.scans:
            # every scan holds a version without the code; one whose newest lacks it too proves no fix yet,
            # one where a release lost it (regressed) names that release
            last, first = boundary(s)
            assert last is not None or regressed(s), cell.id


def test_the_platforms_of_aarch64_and_windows():
    tags = scan.platforms("manylinux_2_28_aarch64")
    assert tags[0] == "manylinux_2_28_aarch64" and "manylinux2014_aarch64" in tags
    assert not any(t.startswith(("manylinux1", "manylinux2010")) or "x86_64" in t for t in tags)
    assert scan.platforms("win_amd64") == ["win_amd64"]


# --- a Windows DLL's fat binaries (kb.repro.fatbin) --------------------------------------------------

def _container(payload: bytes) -> bytes:
    """A fat binary container as fatbinary.h lays it out: magic, version 1, header size 16, payload size."""
    return struct.pack("<I", FATBIN_MAGIC) + struct.pack("<HHQ", 1, 16, len(payload)) + payload


def _pe(sections: dict[bytes, bytes]) -> bytes:
    """A minimal PE image: DOS header pointing at the PE signature, a COFF header without optional
    header, a section table, then each section's raw bytes (its virtual size the true length, its
    raw size rounded up to 512 as a linker's file alignment does)."""
    table_at = 0x40 + 4 + 20
    at = table_at + 40 * len(sections)
    head = b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40) + b"PE\0\0" + struct.pack("<HHIIIHH", 0x8664, len(sections),
                                                                                   0, 0, 0, 0, 0x2022)
    table, body = b"", b""
    for name, raw in sections.items():
        padded = raw + bytes(-len(raw) % 512)
        table += struct.pack("<8sIIIIIIHHI", name, len(raw), 0x1000, len(padded), at + len(body), 0, 0, 0, 0, 0)
        body += padded
    return head + table + body


def test_the_fat_binaries_of_a_dll_are_laid_end_to_end_without_their_padding():
    first, second = _container(b"\x7fELF-one"), _container(b"\x7fELF-two!" * 3)
    image = _pe({b".text": b"\x90" * 40, b".nv_fatb": first + bytes(24) + second + bytes(10)})
    assert fatbin.is_pe(image[:2])
    assert fatbin.containers(image) == first + second


def test_relocatable_fat_binaries_count_only_where_the_dll_has_no_device_linked_one():
    """cuobjdump lists `__nv_relfatbin` only when no executable fat binary exists (bitsandbytes 0.50.2's
    cuda128 DLL has one linked container and six relocatable ones, kb.repro.fatbin)."""
    linked, relocatable = _container(b"L" * 8), _container(b"R" * 16)
    both = {b".nv_fatb": linked + bytes(8), b"__nv_rel": relocatable + bytes(8) + relocatable}
    assert fatbin.containers(_pe(both)) == linked
    assert fatbin.containers(_pe(dict(reversed(both.items())))) == linked
    assert fatbin.containers(_pe({b"__nv_rel": relocatable + bytes(8) + relocatable})) == relocatable * 2
    with pytest.raises(fatbin.FatbinError, match="byte 0x07 at __nv_rel offset 32 is neither padding"):
        fatbin.containers(_pe({b"__nv_rel": relocatable + b"\x07"}))


def test_a_dll_without_the_section_has_no_code_and_a_damaged_one_is_an_error():
    assert fatbin.containers(_pe({b".text": b"\x90" * 40})) == b""
    with pytest.raises(fatbin.FatbinError, match="byte 0x07 at .nv_fatb offset 24 is neither padding nor a fat binary"):
        fatbin.containers(_pe({b".nv_fatb": _container(b"x" * 8) + b"\x07"}))
    with pytest.raises(fatbin.FatbinError, match="gives a size past the section's end"):
        fatbin.containers(_pe({b".nv_fatb": _container(b"x" * 8)[:-2]}))
    with pytest.raises(fatbin.FatbinError, match="no PE signature at offset 64"):
        fatbin.containers(b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40) + b"NE\0\0" + bytes(64))
    assert not fatbin.is_pe(b"\x7fELF")


def test_the_evidence_line_names_a_platform_other_than_linux_x86_64():
    from kb.site.reproduced import evidence

    (cell,) = [c for c in lint.check([ROOT / "kb" / "entries"]).cells
               if c.id == "lmdeploy-turbomind-windows-wheel-no-sm120-before-0-13"]
    assert [s.platform for s in cell.entry.scans] == ["win_amd64", "manylinux_2_28_x86_64"]
    windows, linux = evidence(cell).split("; lmdeploy ")
    assert "lmdeploy 0.13.0 is the first scanned release with sm_120 code in the Windows wheels, 0.12.3" in windows
    assert linux.startswith("0.13.0 is the first scanned release with sm_120 code, 0.12.3 the last without")


# --- a `reader: fatbin-headers` scan (onnxruntime-gpu: cuobjdump stops with "Invalid ELF") ------------

def test_the_header_reader_counts_images_per_architecture_with_their_variant(tmp_path):
    from tests import fatbin_fixtures as fx

    unit = fx.fatbin(fx.entry("sass", 86), fx.entry("sass", 90, variant="a"),
                     fx.entry("ptx", 90, variant="a", compressed=True))
    path = tmp_path / "lib.so"
    path.write_bytes(fx.library(unit, unit))
    found = scan.header_images(path, bare=False)
    assert found == {"ELF": {"sm_86": 2, "sm_90a": 2}, "PTX": {"sm_90a": 2}}
    bare = tmp_path / "containers.bin"  # a DLL's fat binaries laid end to end (kb.repro.fatbin.containers)
    bare.write_bytes(unit + unit)
    assert scan.header_images(bare, bare=True) == found
    bare.write_bytes(unit[:-8])
    with pytest.raises(scan.ScanError, match="the fat binary headers cannot be read: broken headers"):
        scan.header_images(bare, bare=True)


def test_cuobjdump_s_partial_listing_must_agree_with_the_headers():
    headers = {"sm_60": 158, "sm_90": 158}
    scan.cross_check("ELF", "ELF file    1: lib.1.sm_60.cubin\nELF file    2: lib.2.sm_90.cubin\n", headers)
    with pytest.raises(scan.ScanError, match=r"do not hold \(sm_90a x1\): kb.records.fatbin misreads"):
        scan.cross_check("ELF", "ELF file    1: lib.1.sm_90a.cubin\n", headers)
    with pytest.raises(scan.ScanError, match="not a PTX image"):
        scan.cross_check("PTX", "ELF file    1: lib.1.sm_60.cubin\n", headers)


def test_a_release_that_lost_the_code_is_named_not_given_a_boundary(tmp_path):
    """onnxruntime-gpu: 1.22.0 and 1.23.2 carry compute_90 PTX in every fat binary, 1.23.0 compute_90a."""
    (cell,) = [c for c in lint.check([ROOT / "kb" / "entries"]).cells
               if c.id == "onnxruntime-gpu-1-23-0-compute-90a-ptx-no-kernel-image-sm120"]
    assert [(s.platform, s.reader) for s in cell.entry.scans] == [("manylinux_2_28_x86_64", "fatbin-headers"),
                                                                   ("win_amd64", "fatbin-headers")]
    for s in cell.entry.scans:
        assert regressed(s) == (["1.22.0", "1.23.2"], ["1.23.0"])
    line = reproduced.evidence(cell)
    assert line.startswith("Read in the released wheels with their fat binary headers: onnxruntime-gpu 1.22.0, "
                           "1.23.2 carry code sm_120 runs, 1.23.0 none")
    assert regressed(_scan("sm_120", _wheel("1.0", {"sm_90": 1}), _wheel("1.1", {"sm_120": 1}))) is None
