"""The CUDA code of a Windows DLL, for cuobjdump: the fat binaries of its `.nv_fatb` section.

cuobjdump on Linux reads ELF files (x86_64 and aarch64 alike) but takes a Windows PE file (a
`.dll` or `.pyd`) for one without device code ("does not contain device code"), which a scan
would record as "no images". The Windows toolchain keeps the fat binaries in the PE section
`.nv_fatb`, one container after another, each aligned with zero bytes between them; cuobjdump
reads a file of those containers laid end to end (it stops at the padding, so it is left out).
Handed on to kb.repro.scan, which lists the result like any library.

A library built with relocatable device code (`-rdc`) also keeps each object's fat binary, as
handed to the device linker, in `__nv_relfatbin`: `__nv_rel` in a PE file, whose section names
have 8 bytes. cuobjdump lists those only where no executable (device-linked) fat binary exists
("By default will only dump contents of executable fatbin (if exists), else relocatable fatbin",
its --all-fatbin help), and a Linux scan counts what cuobjdump lists; so a DLL gives `.nv_fatb`
when it has one and `__nv_rel` otherwise. Seen in bitsandbytes 0.50.2 (2026-12-06): the
win_amd64 libbitsandbytes_cuda128.dll holds one container in `.nv_fatb` (SASS sm_70..sm_120)
and six in `__nv_rel` (the same SASS plus compute_120 PTX each), and cuobjdump 13.4.92 on the
manylinux .so of that release lists its `.nv_fatbin` alone: one cubin per architecture, no PTX.
"""

from __future__ import annotations

import re
import struct

from kb.records.fatbin import FATBIN_MAGIC, container_size

SECTION = b".nv_fatb"
RELOCATABLE = b"__nv_rel"  # `__nv_relfatbin`, cut to a PE section name's 8 bytes
# Padding runs reach megabytes: found with a regular expression, not a Python loop over bytes.
_NONZERO = re.compile(rb"[^\0]")


class FatbinError(Exception):
    """A PE file whose CUDA section cannot be read; the message says where and what."""


def is_pe(head: bytes) -> bool:
    """Whether a file starting with `head` is a DOS or PE image ('MZ'); `containers` then checks
    the PE signature."""
    return head[:2] == b"MZ"


def _section(data: bytes) -> tuple[bytes, bytes] | None:
    """The name and raw bytes of the section cuobjdump would list (`.nv_fatb`, else `__nv_rel`),
    or None when the file has neither."""
    try:
        return _find(data)
    except struct.error:
        raise FatbinError("its PE headers are cut off") from None


def _find(data: bytes) -> tuple[bytes, bytes] | None:
    if len(data) < 0x40:
        raise FatbinError("shorter than a DOS header")
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    if data[pe:pe + 4] != b"PE\0\0":
        raise FatbinError(f"no PE signature at offset {pe} (a DOS program, not a Windows DLL)")
    count, = struct.unpack_from("<H", data, pe + 6)
    optional, = struct.unpack_from("<H", data, pe + 20)
    table = pe + 24 + optional
    found = {}
    for n in range(count):
        name, virtual, _, raw_size, raw_at = struct.unpack_from("<8sIIII", data, table + 40 * n)
        name = name.rstrip(b"\0")
        if name in (SECTION, RELOCATABLE) and name not in found:
            # The raw size is rounded up to the file alignment; the virtual size is what the section holds.
            size = min(virtual, raw_size) if virtual else raw_size
            if raw_at + size > len(data):
                raise FatbinError(f"section {name.decode()} runs past the end of the file")
            found[name] = data[raw_at:raw_at + size]
    for name in (SECTION, RELOCATABLE):
        if name in found:
            return name, found[name]
    return None


def containers(data: bytes) -> bytes:
    """The fat binaries of a PE file's `.nv_fatb` section (its `__nv_rel` one when it has none)
    laid end to end, without the zero padding between them; empty when the file has neither (no
    CUDA code). Anything between the containers other than zero bytes is an error, never skipped:
    a scan must not miss images."""
    found = _section(data)
    if found is None:
        return b""
    name, section = found
    parts, at = [], 0
    while at < len(section):
        sizes = container_size(section[at:at + 16]) if at + 16 <= len(section) else None
        if sizes is None and section[at:at + 4] == struct.pack("<I", FATBIN_MAGIC):
            raise FatbinError(f"fat binary header at {name.decode()} offset {at} is cut off")
        if sizes is not None:
            header, size = sizes
            end = at + header + size
            if header < 16:
                raise FatbinError(f"fat binary at {name.decode()} offset {at} gives a header size of {header} (16 or more)")
            if end > len(section):
                raise FatbinError(f"fat binary at {name.decode()} offset {at} gives a size past the section's end")
            parts.append(section[at:end])
            at = end
            continue
        if section[at] != 0:
            raise FatbinError(f"byte {section[at]:#04x} at {name.decode()} offset {at} is neither padding nor a fat binary")
        nonzero = _NONZERO.search(section, at)
        at = len(section) if nonzero is None else nonzero.start()
    return b"".join(parts)

