"""Which GPU architectures a shared library carries: the fatbins in its ELF sections, read in Python,
and which of those images a GPU can run (`loads`).

Shared by kb.doctor and kb.repro (neither may import the other; kb/records is before both): the
fat binary header (`FATBIN_MAGIC`, `container_size`) and the driver's loading rule are written here
once. `kb doctor` predicts "no kernel image is available for execution on the device" before the first
request by reading, for each CUDA extension library of the judged environment, the SASS (cubin)
and PTX images its fatbins hold. It hands on a `Library` per file: one `Unit` per fatbin (one per
compiled translation unit), each a list of `Image`s (kind, architecture, variant, compressed).

Only headers are read, never a payload past its first bytes, with `os.pread` through a `_Budget`
that refuses to read more than `MAX_READ` bytes per file: a 2 GB library (torch's
libtorch_cuda.so is over 1 GB) costs a few megabytes, and a hostile file named like a library
costs at most the cap. Nothing here raises for a bad file: the problem becomes `Library.problem`.

The format, as read here (little-endian throughout; NVIDIA does not publish it):

* The host ELF64 holds fatbins in the section `.nv_fatbin` (`__nv_relfatbin` for relocatable
  device code), one after another, each starting on an 8-byte boundary.
* A fatbin starts with a 16-byte header: u32 magic 0xBA55ED50, u16 version (1), u16 header
  size (16), u64 size of the entries that follow.
* Each entry has its own header, then its payload: u16 kind (1 PTX, 2 ELF cubin), u16 version
  (0x0101), u32 header size (64, 80 or 112 seen), u64 payload size (padded); u32 compressed
  size at 16; u32 architecture at 28 (120 for sm_120); u64 flags at 40; u64 uncompressed size
  at 56. Flag 0x2000 marks an LZ4-compressed payload (CUDA 12), 0x8000 a zstd one (CUDA 13).
  Same layout as `struct fat_text_header` in RWTH-ACS/cricket `cpu/cpu-elf2.c` and
  `FatbinFileHeader` in vosen/ZLUDA `zluda_dump/src/dark_api.rs`.
* Measured here with fatbinary 13.0.88 (`--image3=kind=elf,sm=120a,...`): flag 0x100000 marks an
  arch-specific (`a`) image and 0x200000 a family-specific (`f`) one; the cubin's own e_flags did
  not differ between sm_120 and sm_120a.
* A cubin payload is an ELF with EI_ABIVERSION at byte 8 and e_flags at 48. ABI version 8 and
  later (CUDA 13, Blackwell) keep the SM in bits 8..15 and `a` in bit 3 (0x8); older ones keep
  the SM in the low byte and `a` in bit 11 (0x800). These are LLVM's EF_CUDA_* constants
  (llvm/include/llvm/BinaryFormat/ELF.h). A PTX payload's `.target sm_120a` line gives its variant.

Compressed payloads are not inflated: their architecture and variant come from the entry header,
and the report says so.

Not every fatbin holds kernels. `nvcc -shared` (and CMake's device-symbol resolution) runs nvlink's
device link even without relocatable device code and embeds its output as one more fatbin: SASS
only, for each SASS architecture asked for, and no kernel in it (seen with nvcc 13.0.88 on
2026-12-05: `-gencode arch=compute_80,code=[sm_80,compute_80]` gave a unit of sm_80 alone whose
cubin lists `.nv.info`, `.nv.callgraph`... and no `.text.<kernel>` section, beside the unit with
the kernel's sm_80 and compute_80). The runtime never launches from it, so a GPU that lacks its
architecture loses nothing; `holds_kernels` reads a unit's cubin section tables to tell, and
kb.doctor.predict asks it only for the units that would otherwise fail.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from dataclasses import dataclass, field

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (b".nv_fatbin", b"__nv_relfatbin")
KIND_PTX, KIND_ELF = 1, 2
FLAG_LZ4, FLAG_ZSTD = 0x2000, 0x8000
FLAG_ARCH_SPECIFIC, FLAG_FAMILY_SPECIFIC = 0x100000, 0x200000

# Per file: bytes read at most, fatbins and entries walked at most. libtorch_cuda.so (cu128) has
# tens of thousands of entries; each costs its header and at most PEEK bytes of payload.
MAX_READ = 32 * 2**20
MAX_UNITS = 100_000
MAX_ENTRIES = 400_000
MAX_SECTIONS = 4096  # section headers looked at; real libraries have under 100
MAX_KERNEL_CHECK = 1 << 20  # bytes read per unit to tell whether it holds a kernel (section tables)
PEEK_PTX = 4096  # a PTX file's `.target` line comes after its header comments
SCAN_CHUNK = 64 * 1024  # read when looking for the next fatbin after padding

_NAME = re.compile(r"(?:sm|compute)_([1-9][0-9]?[0-9])([af]?)")
_TARGET = re.compile(rb"^\s*\.target\s+sm_(\d+)([af]?)\b", re.M)


def loads(kind: str, arch: int, variant: str, major: int, minor: int) -> bool:
    """Whether a GPU of compute capability major.minor runs an image of `kind` ("sass" or "ptx") for
    `arch` (120 for sm_120) with `variant` ("", "a" or "f"): the driver's rule (NVIDIA, CUDA C++
    Programming Guide, "Binary Compatibility" and "Feature Availability"). A cubin for X.y runs on X.z
    with z >= y, never on another major; an arch-specific cubin or PTX (`sm_120a`, `compute_90a`)
    only on exactly that capability; a family-specific one (`sm_120f`) on the same major with a minor
    at least its own; plain PTX is JIT-compiled for any GPU of the same or a higher capability."""
    own = divmod(arch, 10)
    if variant == "a":
        return own == (major, minor)
    if kind == "sass" or variant == "f":
        return own[0] == major and own[1] <= minor
    return own <= (major, minor)


def split_name(name: str) -> tuple[int, str]:
    """(120, "a") for "sm_120a" or "compute_120a": the architecture and variant of an image's name as
    cuobjdump and `Image.name` write it."""
    found = _NAME.fullmatch(name)
    if found is None:
        raise ValueError(f"not an architecture name such as sm_120 or compute_90a: {name!r}")
    return int(found.group(1)), found.group(2)


def container_size(head: bytes) -> tuple[int, int] | None:
    """(header size, size of what follows the header) of the fat binary whose first 16 bytes are
    `head`; None when they do not start with FATBIN_MAGIC."""
    magic, _version, header_size, size = struct.unpack_from("<IHHQ", head)
    return (header_size, size) if magic == FATBIN_MAGIC else None


class _Capped(Exception):
    """The file asked for more than MAX_READ bytes."""


class _Bad(Exception):
    """The file is not what its headers claim; the message says where."""


@dataclass(frozen=True)
class Image:
    kind: str  # "sass" or "ptx"
    arch: int  # 120 for sm_120 / compute_120
    variant: str  # "", "a" (arch-specific) or "f" (family-specific)
    compressed: bool
    offset: int = field(default=-1, compare=False)  # where its payload starts in the file; -1: unknown
    size: int = field(default=0, compare=False)  # its payload's size (padded)

    @property
    def name(self) -> str:
        return f"{'sm' if self.kind == 'sass' else 'compute'}_{self.arch}{self.variant}"


@dataclass
class Library:
    path: str
    size: int = 0
    units: list[list[Image]] = field(default_factory=list)  # one list per fatbin
    problem: str | None = None  # why it could not be read (fully); None when it was
    bytes_read: int = 0
    elf: bool = False

    @property
    def images(self) -> list[Image]:
        return [image for unit in self.units for image in unit]

    def names(self, kind: str) -> list[str]:
        """Sorted architecture names of one kind ("sass", "ptx"): sm_90, sm_120a; compute_120."""
        found = {(i.arch, i.variant, i.name) for i in self.images if i.kind == kind}
        return [name for _, _, name in sorted(found)]

    @property
    def compressed(self) -> bool:
        return any(i.compressed for i in self.images)


class _Budget:
    """`os.pread` that counts what it reads and stops at MAX_READ (and at the file's end)."""

    def __init__(self, fd: int, size: int, limit: int):
        self.fd, self.size, self.limit, self.used = fd, size, limit, 0

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise _Bad(f"a header points past the end of the file (offset {offset:,}, {length:,} bytes, "
                       f"file {self.size:,} bytes)")
        if self.used + length > self.limit:
            raise _Capped
        data = os.pread(self.fd, length, offset)
        self.used += len(data)
        if len(data) != length:
            raise _Bad(f"the file ended early at offset {offset + len(data):,} (it shrank while read)")
        return data


def _sections(budget: _Budget, base: int = 0, end: int | None = None) -> list[tuple[bytes, int, int]]:
    """(name, offset, size) of the sections of the ELF64 little-endian file at `base` (a cubin
    inside a fatbin; 0 for the library itself) that ends at `end` (None: the file's end); offsets
    are the file's."""
    end = budget.size if end is None else end

    def within(offset: int, length: int) -> bytes:
        if offset < 0 or base + offset + length > end:
            raise _Bad(f"a section header points past the end of the ELF at offset {base:,} (offset {offset:,}, "
                       f"{length:,} bytes; the ELF ends at {end:,})")
        return budget.read(base + offset, length)

    head = within(0, 64)
    (shoff,) = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    if shnum == 0 or shentsize < 64:
        return []
    if shnum > MAX_SECTIONS:
        raise _Bad(f"the ELF header lists {shnum:,} sections (over {MAX_SECTIONS:,})")
    table = within(shoff, shentsize * shnum)
    rows = []
    for i in range(shnum):
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", table, i * shentsize)
        rows.append((name, _type, offset, size))
    if shstrndx >= shnum:
        raise _Bad(f"the section-name table index {shstrndx} is not below the section count {shnum}")
    _, _, str_off, str_size = rows[shstrndx]
    names = within(str_off, min(str_size, 1 << 20))
    out = []
    for name_off, sh_type, offset, size in rows:
        stop = names.find(b"\0", name_off)
        name = names[name_off:stop] if 0 <= name_off < len(names) and stop != -1 else b""
        if sh_type != 8:  # SHT_NOBITS has no bytes in the file
            out.append((name, base + offset, size))
    return out


def _variant_from_cubin(head: bytes) -> str:
    if len(head) < 52 or head[:4] != b"\x7fELF":
        return ""
    (flags,) = struct.unpack_from("<I", head, 48)
    accelerated = flags & 0x8 if head[8] >= 8 else flags & 0x800
    return "a" if accelerated else ""


def _entries(budget: _Budget, start: int, end: int, counted: list[int]) -> list[Image]:
    images = []
    offset = start
    while offset + 64 <= end:
        counted[0] += 1
        if counted[0] > MAX_ENTRIES:
            raise _Capped
        head = budget.read(offset, 64)
        kind, _version, header_size, payload = struct.unpack_from("<HHIQ", head, 0)
        (arch,) = struct.unpack_from("<I", head, 28)
        (flags,) = struct.unpack_from("<Q", head, 40)
        if header_size < 64 or offset + header_size + payload > end:
            raise _Bad(f"fatbin entry at offset {offset:,} has header size {header_size} and payload "
                       f"{payload:,} bytes, past its fatbin's end at {end:,}")
        compressed = bool(flags & (FLAG_LZ4 | FLAG_ZSTD))
        variant = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
        body = offset + header_size
        if kind == KIND_ELF:
            if not compressed and not variant and payload >= 64:
                variant = _variant_from_cubin(budget.read(body, 64))
            images.append(Image("sass", arch, variant, compressed, body, payload))
        elif kind == KIND_PTX:
            if not compressed and not variant:
                found = _TARGET.search(budget.read(body, min(payload, PEEK_PTX)))
                if found and int(found.group(1)) == arch:
                    variant = found.group(2).decode()
            images.append(Image("ptx", arch, variant, compressed, body, payload))
        offset = body + payload
    return images


def _units(budget: _Budget, start: int, size: int) -> list[list[Image]]:
    units: list[list[Image]] = []
    counted = [0]
    offset, end = start, start + size
    while offset + 16 <= end:
        sizes = container_size(budget.read(offset, 16))
        if sizes is None:
            # padding between fatbins: the next one starts on an 8-byte boundary further on
            chunk = budget.read(offset, min(SCAN_CHUNK, end - offset))
            found = -1
            index = chunk.find(struct.pack("<I", FATBIN_MAGIC), 1)
            while index != -1:
                if (offset + index) % 8 == 0:
                    found = index
                    break
                index = chunk.find(struct.pack("<I", FATBIN_MAGIC), index + 1)
            if found == -1:
                if len(chunk) < SCAN_CHUNK:
                    break
                offset += SCAN_CHUNK
                continue
            offset += found
            continue
        header_size, fat_size = sizes
        if header_size < 16 or offset + header_size + fat_size > end:
            raise _Bad(f"fatbin at offset {offset:,} claims {fat_size:,} bytes, past its section's end at {end:,}")
        if len(units) >= MAX_UNITS:
            raise _Capped
        units.append(_entries(budget, offset + header_size, offset + header_size + fat_size, counted))
        offset += header_size + fat_size
        offset += -offset % 8
    return units


def read(path: str, limit: int = MAX_READ, bare: bool = False) -> Library:
    """The fatbins of the shared library at `path`. Never raises: a file that cannot be read, is
    no ELF64 little-endian file or holds broken headers comes back with `problem` set. `bare`: the
    file is fat binaries laid end to end, no ELF around them (a Windows DLL's, kb.repro.fatbin)."""
    library = Library(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        library.problem = f"cannot open it: {exc.strerror or exc}"
        return library
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            library.problem = "not a regular file"
            return library
        library.size = info.st_size
        budget = _Budget(fd, info.st_size, limit)
        try:
            if bare:
                library.units += _units(budget, 0, info.st_size)
                return library
            magic = budget.read(0, 64) if info.st_size >= 64 else b""
            if magic[:4] != b"\x7fELF":
                library.problem = "not an ELF file"
                return library
            if magic[4] != 2 or magic[5] != 1:
                library.problem = "not a 64-bit little-endian ELF file"
                return library
            library.elf = True
            for name, offset, size in _sections(budget):
                if name in FATBIN_SECTIONS:
                    library.units += _units(budget, offset, size)
        except _Capped:
            library.problem = (f"stopped after reading {budget.used:,} bytes (the cap is {limit:,}); "
                               "the architectures listed are those read before the cap")
        except _Bad as exc:
            library.problem = f"broken headers: {exc}"
        except (OSError, struct.error) as exc:
            library.problem = f"cannot read it: {getattr(exc, 'strerror', None) or exc}"
        finally:
            library.bytes_read = budget.used
    finally:
        os.close(fd)
    return library


def holds_kernels(path: str, unit: list[Image], limit: int = MAX_KERNEL_CHECK) -> bool | None:
    """Whether a unit of the library at `path` holds a kernel (module docstring): True when a cubin
    of it has a `.text.<name>` section; False only when every image of it is an uncompressed cubin
    whose section table was read and lists none; None when that cannot be told (a compressed
    payload, a PTX image, a cubin without a section table, a file that changed or reads badly)."""
    if not unit or any(i.kind != "sass" or i.compressed or i.offset < 0 or i.size < 64 for i in unit):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        budget = _Budget(fd, info.st_size, limit)
        for image in unit:
            if budget.read(image.offset, 4) != b"\x7fELF":
                return None
            names = [name for name, _, _ in _sections(budget, image.offset, image.offset + image.size)]
            if not names:
                return None
            if any(name.startswith(b".text.") for name in names):
                return True
        return False
    except (_Capped, _Bad, OSError, struct.error):
        return None
    finally:
        os.close(fd)
