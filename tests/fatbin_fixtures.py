"""Shared libraries with chosen GPU architectures, written byte by byte for the tests.

The layout is the one kb/records/fatbin.py documents and reads (fatbin header 0xBA55ED50, entry
headers as in RWTH-ACS/cricket cpu/cpu-elf2.c); tests/test_predict.py checks this builder against
NVIDIA's own ptxas and fatbinary where they are installed, so the two cannot drift apart unseen.
No binary file is kept in the repository: every fixture is made in the test that uses it.
"""

from __future__ import annotations

import struct

FLAGS_LINUX_64 = 0x11  # what fatbinary writes on Linux x86_64 (64-bit, Linux host)
FLAG_ZSTD = 0x8000
VARIANT_FLAGS = {"": 0, "a": 0x100000, "f": 0x200000}


def cubin(arch: int, accelerated: bool = False, abi: int = 8, kernels: tuple[str, ...] | None = None) -> bytes:
    """A cubin: its ELF header, with EM_CUDA (190), the SM and the arch-specific bit where ABI
    version `abi` keeps them (LLVM's EF_CUDA_* constants). With `kernels`, a section table follows
    as a real cubin's does: `.nv.info` and `.nv.callgraph`, then `.text.<name>` for each kernel
    (none: nvlink's device-link output, kb/records/fatbin.py); without, the header alone."""
    if abi >= 8:
        flags = (arch << 8) | (0x8 if accelerated else 0) | 0x06000002
    else:
        flags = arch | (0x800 if accelerated else 0) | 0x500
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x41, abi]) + b"\0" * 7
    if kernels is None:
        return ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, 0, flags, 64, 0, 0, 64, 0, 0)
    names = [b".shstrtab", b".nv.info", b".nv.callgraph"] + [f".text.{k}".encode() for k in kernels]
    table = b"\0"
    offsets = []
    for name in names:
        offsets.append(len(table))
        table += name + b"\0"
    table += b"\0" * (-len(table) % 8)
    shoff = 64 + len(table)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, flags, 64, 0, 0, 64, len(names) + 1, 1)
    rows = b"\0" * 64  # the null section
    for i, offset in enumerate(offsets):
        sh_type = 3 if i == 0 else 1  # SHT_STRTAB, else SHT_PROGBITS (empty: only the names are read)
        rows += struct.pack("<IIQQQQIIQQ", offset, sh_type, 0, 0, 64 if i == 0 else shoff, len(table) if i == 0 else 0,
                            0, 0, 1, 0)
    return header + table + rows


def ptx(arch: int, variant: str = "") -> bytes:
    return (f"//\n// Generated for the tests\n//\n\n.version 8.7\n.target sm_{arch}{variant}\n.address_size 64\n\n"
            ".visible .entry k()\n{\n\tret;\n}\n\0").encode()


def entry(kind: str, arch: int, payload: bytes | None = None, variant: str = "", compressed: bool = False,
          header_flags: bool = True, kernels: tuple[str, ...] | None = None) -> bytes:
    """One fatbin entry: a 64-byte header and the payload padded to 8 bytes. `header_flags`
    False leaves the a/f variant out of the header (older fatbinary), so only the payload tells;
    `kernels` goes to `cubin`."""
    if payload is None:
        payload = cubin(arch, variant == "a", kernels=kernels) if kind == "sass" else ptx(arch, variant)
    flags = FLAGS_LINUX_64 | (VARIANT_FLAGS[variant] if header_flags else 0) | (FLAG_ZSTD if compressed else 0)
    if compressed:
        payload = b"\x28\xb5\x2f\xfd" + bytes(len(payload) // 2)  # a zstd frame's magic, then filler
    padded = payload + b"\0" * (-len(payload) % 8)
    head = struct.pack("<HHIQII", 2 if kind == "sass" else 1, 0x0101, 64, len(padded),
                       len(payload) if compressed else 0, 0)
    head += struct.pack("<HHI", 8, 1, arch) + struct.pack("<II", 0, 0) + struct.pack("<QQQ", flags, 0, len(payload))
    assert len(head) == 64
    return head + padded


def fatbin(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def library(*fatbins: bytes, section: bytes = b".nv_fatbin", padding: int = 8) -> bytes:
    """A host ELF64 shared object whose `section` holds the fatbins, each on an 8-byte boundary
    (`padding` zero bytes at least between them, as the linker leaves)."""
    blob = b""
    for fb in fatbins:
        blob += fb
        blob += b"\0" * (-len(blob) % 8 or padding)
    return elf_with(section, blob)


def elf_with(section: bytes, data: bytes, claimed_size: int | None = None) -> bytes:
    """ELF64 header, a section-name table, one section holding `data` (its header may claim
    `claimed_size` bytes instead), then the section headers."""
    names = b"\0.shstrtab\0" + section + b"\0"
    names_off = 64
    data_off = names_off + len(names) + (-(names_off + len(names)) % 8)
    sh_off = data_off + len(data) + (-(data_off + len(data)) % 8)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0, 0]) + b"\0" * 7
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, sh_off, 0, 64, 0, 0, 64, 3, 1)
    out = bytearray(header)
    out += names + b"\0" * (data_off - names_off - len(names))
    out += data + b"\0" * (sh_off - data_off - len(data))
    out += b"\0" * 64  # the null section
    out += struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, names_off, len(names), 0, 0, 1, 0)
    size = len(data) if claimed_size is None else claimed_size
    out += struct.pack("<IIQQQQIIQQ", 11, 1, 2, 0, data_off, size, 0, 0, 8, 0)
    return bytes(out)
