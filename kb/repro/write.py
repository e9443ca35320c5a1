"""`kb repro --write`: record new runs and scans in the entry files.

Only the `reproductions:` block, or the `scans:` block, changes. Each is a top-level key written
in one fixed layout (this module's `block` and `scans_block`), so recording is a text edit of that
block: the rest of the file keeps its bytes. The new file must read back as the same record with
only that block changed, and valid, before it replaces the old one through a temporary file and one rename
(kb.records.files.write_regular, never through a link): an interrupted write leaves the old file whole.
"""

from __future__ import annotations

import json
import re
import unicodedata

from pydantic import ValidationError

from kb.records import load
from kb.records.files import write_regular
from kb.records.reproduction import Reproduction, as_it_should

_TOP_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\s*:")


def _q(value: str) -> str:
    """A YAML double-quoted scalar: JSON's string form, with a printable character beyond ASCII (a tool's
    emoji) written as itself, as ruamel.yaml writes it back (`kb refresh --write` rewrites a file whole: an
    escape would come back as the character), and an invisible one (a control, format, private-use or
    unassigned character) escaped, \\UXXXXXXXX beyond the BMP since YAML reads no surrogate pair."""
    def one(c: str) -> str:
        if ord(c) < 127 or unicodedata.category(c)[0] not in "CZ":
            return c
        return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
    return "".join(one(c) for c in json.dumps(value, ensure_ascii=False))


def _output(text: str, indent: str) -> str:
    """A literal block when the text survives one unchanged (ends in one newline, no line with
    trailing or leading-blank trouble), else a double-quoted scalar."""
    lines = text.split("\n")[:-1]
    plain = (text.endswith("\n") and not text.endswith("\n\n") and lines and not lines[0].startswith(" ")
             and all(line == line.rstrip() and line and "\r" not in line for line in lines))
    if not plain:
        return " " + _q(text) + "\n"
    return " |\n" + "".join(f"{indent}{line}\n" for line in lines)


def block(reproductions: list[Reproduction]) -> str:
    """The `reproductions:` block of an entry, in the layout `kb repro --write` keeps."""
    out = ["reproductions:\n"]
    for r in reproductions:
        args = ", ".join(_q(a) for a in r.run.args)
        source = f", source: {_q(r.install.source)}" if r.install.source != "pypi" else ""
        out.append(f"  - install: {{package: {_q(r.install.package)}, version: {_q(r.install.version)}{source}}}\n")
        out.append(f"    run: {{tool: {_q(r.run.tool)}, input: {_q(r.run.input)}, args: [{args}]}}\n")
        if r.kernel is not None:
            k = r.kernel
            out.append(f"    kernel: {{package: {_q(k.package)}, version: {_q(k.version)}, path: {_q(k.path)}}}\n")
        if r.fixed:
            out.append("    fixed: true\n")
        if r.needs:
            needs = ", ".join(f"{{package: {_q(n.package)}, version: {_q(n.version)}}}" for n in r.needs)
            out.append(f"    needs: [{needs}]\n")
        if r.note is not None:
            out.append(f"    note: {_q(r.note)}\n")
        if r.printed is not None:
            p = r.printed
            out.append("    printed:\n")
            out.append(f"      tool_version: {_q(p.tool_version)}\n      date: {p.date}\n")
            out.append(f"      machine: {_q(p.machine)}\n      exit: {p.exit}\n")
            out.append("      output:" + _output(p.output, "        "))
    return "".join(out)


def _images(found: dict[str, int]) -> str:
    return "{" + ", ".join(f"{arch}: {count}" for arch, count in found.items()) + "}"


def scans_block(scans) -> str:
    """The `scans:` block of an entry, in the layout `kb repro --write` keeps."""
    out = ["scans:\n"]
    for s in scans:
        out.append(f"  - package: {_q(s.package)}\n    library: {_q(s.library)}\n    arch: {_q(s.arch)}\n")
        out.append(f"    platform: {_q(s.platform)}\n    python: {_q(s.python)}\n")
        out.append(f"    versions: [{', '.join(_q(v) for v in s.versions)}]\n")
        out.append(f"    tool: {{package: {_q(s.tool.package)}, version: {_q(s.tool.version)}}}\n")
        if s.reader is not None:
            out.append(f"    reader: {_q(s.reader)}\n")
        if s.newest is not None:
            out.append(f"    newest: {_q(s.newest)}\n")
        if s.found is None:
            continue
        f = s.found
        out.append(f"    found:\n      tool_version: {_q(f.tool_version)}\n      date: {f.date}\n")
        out.append(f"      machine: {_q(f.machine)}\n      wheels:\n")
        for w in f.wheels:
            out.append(f"        - version: {_q(w.version)}\n          file: {_q(w.file)}\n")
            out.append(f"          sha256: {_q(w.sha256)}\n")
            if w.build is not None:
                out.append(f"          build: {_q(w.build)}\n")
            out.append("          libraries:" + ("\n" if w.libraries else " []\n"))
            for lib in w.libraries:
                out.append(f"            - path: {_q(lib.path)}\n              sass: {_images(lib.sass)}\n")
                out.append(f"              ptx: {_images(lib.ptx)}\n")
    return "".join(out)


BLOCKS = {"reproductions": block, "scans": scans_block}


def replaced(text: str, new_block: str, key: str = "reproductions") -> str:
    """`text` with its top-level `key:` block (to the next top-level key or the end) replaced by
    `new_block`, or `new_block` appended when it has none."""
    lines = text.splitlines(keepends=True)
    start = next((n for n, line in enumerate(lines) if line.startswith(f"{key}:")), None)
    if start is None:
        return text + ("" if text.endswith("\n") else "\n") + new_block
    end = next((n for n in range(start + 1, len(lines)) if _TOP_KEY.match(lines[n])), len(lines))
    return "".join(lines[:start]) + new_block + "".join(lines[end:])


class WriteError(Exception):
    pass


def rewritten(path, raw: bytes, value: list, key: str = "reproductions") -> bytes:
    """The file's new bytes, checked: it reads back as the same record but for the `key` block,
    which reads back as `value`."""
    from kb.records.schema import Entry

    old = load.parse(path, raw)
    text = replaced(raw.decode("utf-8"), BLOCKS[key](value), key)
    new = load.parse(path, text.encode("utf-8"))
    if new.problems:
        raise WriteError(f"the rewritten file would not read back ({new.problems[0].message})")
    if {k: v for k, v in new.data.items() if k != key} != {k: v for k, v in old.data.items() if k != key}:
        raise WriteError(f"the edit would change more than the {key} block; edit the file by hand")
    try:
        entry = Entry.model_validate(new.data)
    except ValidationError as exc:
        raise WriteError(f"the rewritten entry would not be valid ({exc.error_count()} problem(s))") from None
    if getattr(entry, key) != value:
        raise WriteError(f"the rewritten {key} do not read back as written")
    return text.encode("utf-8")


def record(runs) -> list[str]:
    """Write each entry's runs that differ (one file at a time, each whole or not at all); the
    messages to show."""
    messages = []
    by_cell: dict[str, list] = {}
    for ran in runs:
        by_cell.setdefault(ran.cell.id, []).append(ran)
    for cell_id, done in by_cell.items():
        cell = done[0].cell
        new = list(cell.entry.reproductions)
        changed = []
        for ran in done:
            if ran.error or not ran.differences:
                continue
            if not as_it_should(cell.entry, ran.repro.fixed, ran.printed.output):
                messages.append(f"kb repro: not written: {cell_id} reproductions[{ran.index}] " + (
                    "is a run on a fixed release and printed one of the entry's signatures; check the release and "
                    "the fix" if ran.repro.fixed else "printed none of the entry's signatures; change its input or "
                    "options"))
                continue
            new[ran.index] = ran.repro.model_copy(update={"printed": ran.printed})
            changed.append(ran.index)
        if changed:
            messages.append(_write(cell, new, "reproductions", changed))
    return messages


def _write(cell, value: list, key: str, changed: list[int]) -> str:
    """Replace the cell's file by one whose `key` block is `value`; the message to show."""
    try:
        data = rewritten(cell.path, cell.path.read_bytes(), value, key)
    except (OSError, UnicodeDecodeError, WriteError) as exc:
        return f"kb repro: {cell.path}: not written: {exc}"
    write_regular(cell.path, data, cell.path.stat().st_mode & 0o777)
    return f"kb repro: wrote {cell.path} ({key} {', '.join(map(str, changed))})"


def record_scans(scanned) -> list[str]:
    """Write each entry's scans whose result differs (each file whole or not at all); the messages.
    `scanned` holds (cell, index, found, differences) for the scans that ran."""
    return _update_scans([(cell, index, {"found": found}) for cell, index, found, differs in scanned if differs])


def record_newest(changed) -> list[str]:
    """Set each scan's `newest` to the index's newest release (each file whole or not at all); the
    messages. `changed` holds (cell, index, version) for the scans whose recorded one differs."""
    return _update_scans([(cell, index, {"newest": version}) for cell, index, version in changed])


def _update_scans(updates) -> list[str]:
    """Apply (cell, index, fields) to the cells' scans and write each cell once; the messages."""
    by_cell: dict[str, list] = {}
    for item in updates:
        by_cell.setdefault(item[0].id, []).append(item)
    messages = []
    for done in by_cell.values():
        cell = done[0][0]
        new = list(cell.entry.scans)
        for _, index, fields in done:
            new[index] = new[index].model_copy(update=fields)
        messages.append(_write(cell, new, "scans", [index for _, index, _ in done]))
    return messages
