"""Stage 1, load: read one entry file safely and hand on plain data plus line numbers.

Only YAML's plain data types are built (mappings, sequences, strings, numbers, booleans,
null). Anything that would construct an object (`!!python/...` and other tags), aliases and
anchors (the "billion laughs" bomb), duplicate keys, deep nesting, oversized files, byte-order
marks and non-UTF-8 bytes are rejected with a `Problem` naming the line, before any value is
built. Dates stay strings: the schema checks their form.

Entry files come from strangers' pull requests, so the file itself is not trusted either: a
symbolic link (to /dev/zero, to a secret outside the repository), a named pipe, a folder or a
device named `x.yaml` is refused without being read (lstat, then open with O_NOFOLLOW and
O_NONBLOCK, fstat, and a read of at most MAX_FILE_BYTES + 1 bytes). A refusal never quotes the
file, since its bytes were never read.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kb.problems import MISSING, Problem

MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 12
MAX_KEY_CHARS = 80

_PLAIN_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
}

Loc = tuple  # a key path such as ("signatures", 0, "text")


@dataclass
class Loaded:
    """One entry file: its data (None when it could not be read) and where each value sits."""

    path: Path
    data: dict | None
    lines: dict[Loc, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def line_of(self, loc: Loc) -> int:
        """Line of the value at `loc`, or of its nearest parent that exists (a missing key
        points at the mapping that should hold it)."""
        loc = tuple(loc)
        while loc and loc not in self.lines:
            loc = loc[:-1]
        return self.lines.get(loc, 1)


class _Reject(Exception):
    def __init__(self, line: int, loc: str, message: str, code: str):
        super().__init__(message)
        self.problem = (line, loc, message, code)


def _scalar(node: yaml.ScalarNode, constructor: yaml.SafeLoader, loc: Loc):
    if node.tag == "tag:yaml.org,2002:timestamp":
        return node.value  # dates stay strings; the schema checks them
    try:
        return constructor.construct_object(node, deep=True)
    except (ValueError, KeyError, IndexError, TypeError, yaml.YAMLError):
        kind = node.tag.rsplit(":", 1)[-1]
        raise _Reject(node.start_mark.line + 1, _dotted(loc),
                      f"{node.value[:40]!r} cannot be read as YAML {kind}; quote it to write text", "KB022") from None


def _build(node, loc: Loc, lines: dict, constructor, depth: int):
    if depth > MAX_DEPTH:
        raise _Reject(node.start_mark.line + 1, _dotted(loc),
                      f"nesting deeper than {MAX_DEPTH} levels; entries are shallow records", "KB008")
    if node.tag not in _PLAIN_TAGS:
        raise _Reject(node.start_mark.line + 1, _dotted(loc),
                      f"YAML tag {node.tag!r} is not allowed; use plain strings, numbers, lists and mappings", "KB006")
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _PLAIN_TAGS:
                raise _Reject(key_node.start_mark.line + 1, _dotted(loc),
                              "mapping keys must be plain words", "KB006")
            key = key_node.value
            if len(key) > MAX_KEY_CHARS or not key.isprintable():  # a key is printed in every problem's field path
                raise _Reject(key_node.start_mark.line + 1, _dotted(loc),
                              f"mapping keys must be plain words (printable, at most {MAX_KEY_CHARS} characters)",
                              "KB006")
            if key in out:
                raise _Reject(key_node.start_mark.line + 1, _dotted(loc + (key,)),
                              f"duplicate key {key!r} (first on line {lines[loc + (key,)]}); keep one", "KB005")
            out[key] = _build(value_node, loc + (key,), lines, constructor, depth + 1)
            # A mapping or list is reported at its key's line; a scalar where it is written.
            if not isinstance(value_node, yaml.ScalarNode):
                lines[loc + (key,)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, loc + (i,), lines, constructor, depth + 1) for i, item in enumerate(node.value)]
    return _scalar(node, constructor, loc)


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(file)"


dotted = _dotted


def _scan_events(text: str) -> None:
    """Reject aliases, anchors and deep nesting from the event stream, before anything is built."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise _Reject(line, "(file)", f"YAML alias '*{event.anchor}' is not allowed; write the value out", "KB007")
        if getattr(event, "anchor", None):
            raise _Reject(line, "(file)", f"YAML anchor '&{event.anchor}' is not allowed; write the value out", "KB007")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise _Reject(line, "(file)", f"nesting deeper than {MAX_DEPTH} levels; entries are shallow records", "KB008")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _first_bad_byte(raw: bytes, error: UnicodeDecodeError) -> tuple[int, str]:
    line = raw.count(b"\n", 0, error.start) + 1
    return line, f"byte 0x{raw[error.start]:02x} at offset {error.start} is not valid UTF-8; save the file as UTF-8"


_KINDS = [(stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")]
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


def not_regular(mode: int) -> str | None:
    """What a file of this `st_mode` is, when it is not a regular file (None when it is)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(kind: str) -> _Reject:
    """KB050: what the path is, never what it holds or points at (it was not read)."""
    if kind == "a symbolic link":
        why = "commit the entry (or the entries folder) itself, not a link to it (the link was not followed)"
    elif kind == "a folder":
        why = "entries sit directly in the entries folder as <id>.yaml files"
    else:
        why = "an entry is a plain text file (this one was not read)"
    return _Reject(1, "(file)", f"is {kind}, not a regular file; {why}", "KB050")


def read_entry(path: Path) -> bytes:
    """The bytes of the regular file at `path`, or `_Reject`: a link is never followed, a pipe or
    device never opened for a blocking read, and no more than MAX_FILE_BYTES + 1 bytes are read."""
    try:
        kind = not_regular(os.lstat(path).st_mode)
        if kind:
            raise _refuse(kind)
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise _Reject(1, "(file)", "no such file", "KB001") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # swapped for a link after the lstat (EMLINK: BSDs)
            raise _refuse("a symbolic link") from None
        raise _Reject(1, "(file)", f"cannot read the file: {exc.strerror}", "KB001") from None
    try:
        # Checked again on what was opened: the path may have been swapped since the lstat.
        info = os.fstat(fd)
        kind = not_regular(info.st_mode)
        if kind:
            raise _refuse(kind)
        if info.st_size > MAX_FILE_BYTES:
            raise _Reject(1, "(file)", f"file is {info.st_size} bytes, over the {MAX_FILE_BYTES}-byte limit for "
                                       "one entry", "KB009")
        chunks: list[bytes] = []
        left = MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise _Reject(1, "(file)", f"cannot read the file: {exc.strerror}", "KB001") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if len(raw) > MAX_FILE_BYTES:  # grew after the fstat
        raise _Reject(1, "(file)", f"file is over the {MAX_FILE_BYTES}-byte limit for one entry", "KB009")
    return raw


def load(path: Path) -> Loaded:
    """Read `path` into plain data; every problem found is attached, nothing is raised."""
    result = Loaded(path=path, data=None)

    def fail(line: int, loc: str, message: str, code: str, got=MISSING) -> Loaded:
        result.problems.append(Problem(path, line, loc, message, code, got))
        return result

    try:
        raw = read_entry(path)
    except _Reject as exc:
        return fail(*exc.problem)
    if raw.startswith(b"\xef\xbb\xbf"):
        return fail(1, "(file)", "file starts with a byte-order mark; save it as UTF-8 without BOM", "KB002")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, message = _first_bad_byte(raw, exc)
        return fail(line, "(file)", message, "KB001")
    try:
        _scan_events(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            return fail(1, "(file)", "file is empty; an entry is a YAML mapping of fields", "KB004")
        if not isinstance(node, yaml.MappingNode):
            return fail(node.start_mark.line + 1, "(file)",
                        "top level must be a mapping of fields (key: value), not a list or a scalar", "KB004")
        data = _build(node, (), result.lines, yaml.SafeLoader(""), 0)
    except _Reject as exc:
        return fail(*exc.problem)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        return fail(line, "(file)", f"YAML syntax error: {exc.problem or exc.context}", "KB003")
    except yaml.YAMLError as exc:
        return fail(1, "(file)", f"YAML error: {exc}", "KB003")
    result.data = data
    return result
