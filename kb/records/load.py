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

from kb.records.problems import MISSING, Problem

MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 12
MAX_KEY_CHARS = 80
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML was built with it

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


_KEY = object()  # a mapping frame waiting for its next key


class _Frame:
    """A mapping or sequence being built from the event stream."""

    __slots__ = ("value", "loc", "key", "key_line")

    def __init__(self, value, loc: Loc):
        self.value, self.loc, self.key, self.key_line = value, loc, _KEY, 0


def _scalar(event, loader, loc: Loc):
    tag = event.tag if event.tag not in (None, "!") else (
        loader.resolve(yaml.ScalarNode, event.value, event.implicit) if event.tag is None else "tag:yaml.org,2002:str")
    line = event.start_mark.line + 1
    if tag not in _PLAIN_TAGS:
        raise _Reject(line, _dotted(loc),
                      f"YAML tag {tag!r} is not allowed; use plain strings, numbers, lists and mappings", "KB006")
    if tag in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:str"):
        return event.value  # dates stay strings; the schema checks them
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, KeyError, IndexError, TypeError, yaml.YAMLError):
        kind = tag.rsplit(":", 1)[-1]
        raise _Reject(line, _dotted(loc),
                      f"{event.value[:40]!r} cannot be read as YAML {kind}; quote it to write text", "KB022") from None


def _compose(text: str, lines: dict, key_chars: int = MAX_KEY_CHARS):
    """Plain data from one YAML document, built in one pass over libyaml's events (the C parser
    when PyYAML has it): aliases, anchors, tags that construct objects, duplicate or unprintable
    keys and deep nesting are refused as they come, before anything is expanded."""
    loader = _Loader(text)
    stack: list[_Frame] = []
    root = None
    documents = 0
    try:
        while True:
            event = loader.get_event()
            line = event.start_mark.line + 1
            if isinstance(event, yaml.StreamEndEvent):
                break
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise _Reject(line, "(file)", "a second YAML document (---); an entry is one mapping", "KB003")
                continue
            if isinstance(event, (yaml.StreamStartEvent, yaml.DocumentEndEvent)):
                continue
            if isinstance(event, yaml.AliasEvent):
                raise _Reject(line, "(file)", f"YAML alias '*{event.anchor}' is not allowed; write the value out", "KB007")
            if getattr(event, "anchor", None):
                raise _Reject(line, "(file)", f"YAML anchor '&{event.anchor}' is not allowed; write the value out", "KB007")
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                value = stack.pop().value
                if not stack:
                    root = value
                continue
            parent = stack[-1] if stack else None
            if parent is not None and isinstance(parent.value, dict) and parent.key is _KEY:
                _take_key(parent, event, loader, lines, key_chars)
                continue
            loc = parent.loc + ((parent.key if isinstance(parent.value, dict) else len(parent.value)),) if parent else ()
            if isinstance(event, yaml.ScalarEvent):
                value = _scalar(event, loader, loc)
                lines[loc] = line
            else:
                if len(stack) >= MAX_DEPTH:
                    raise _Reject(line, "(file)", f"nesting deeper than {MAX_DEPTH} levels; entries are shallow records",
                                  "KB008")
                kind = yaml.MappingNode if isinstance(event, yaml.MappingStartEvent) else yaml.SequenceNode
                tag = event.tag or loader.resolve(kind, None, event.implicit)
                if tag not in _PLAIN_TAGS:
                    raise _Reject(line, _dotted(loc),
                                  f"YAML tag {tag!r} is not allowed; use plain strings, numbers, lists and mappings", "KB006")
                value = {} if kind is yaml.MappingNode else []
                # A mapping or list is reported at its key's line; a scalar where it is written.
                lines[loc] = parent.key_line if parent is not None and isinstance(parent.value, dict) else line
                stack.append(_Frame(value, loc))
            if parent is None:
                root = value
            elif isinstance(parent.value, dict):
                parent.value[parent.key] = value
                parent.key = _KEY
            else:
                parent.value.append(value)
    finally:
        loader.dispose()
    return root


def _take_key(frame: _Frame, event, loader, lines: dict, key_chars: int = MAX_KEY_CHARS) -> None:
    line = event.start_mark.line + 1
    if not isinstance(event, yaml.ScalarEvent):
        raise _Reject(line, _dotted(frame.loc), "mapping keys must be plain words", "KB006")
    tag = event.tag if event.tag not in (None, "!") else (
        loader.resolve(yaml.ScalarNode, event.value, event.implicit) if event.tag is None else "tag:yaml.org,2002:str")
    if tag not in _PLAIN_TAGS:
        raise _Reject(line, _dotted(frame.loc), "mapping keys must be plain words", "KB006")
    key = event.value
    if len(key) > key_chars or not key.isprintable():  # a key is printed in every problem's field path
        raise _Reject(line, _dotted(frame.loc),
                      f"mapping keys must be plain words (printable, at most {key_chars} characters)", "KB006")
    if key in frame.value:
        raise _Reject(line, _dotted(frame.loc + (key,)),
                      f"duplicate key {key!r} (first on line {lines[frame.loc + (key,)]}); keep one", "KB005")
    frame.key, frame.key_line = key, line


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(file)"


dotted = _dotted


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


def read(path: Path) -> bytes | Loaded:
    """The bytes of the entry at `path`, or a `Loaded` holding why it was refused unread."""
    try:
        return read_entry(path)
    except _Reject as exc:
        return Loaded(path, None, problems=[Problem(path, *exc.problem)])


def load(path: Path) -> Loaded:
    """Read `path` into plain data; every problem found is attached, nothing is raised."""
    raw = read(path)
    return raw if isinstance(raw, Loaded) else parse(path, raw)


def parse(path: Path, raw: bytes, key_chars: int = MAX_KEY_CHARS) -> Loaded:
    """The plain data of an entry's bytes (read from `path`), with every problem attached.
    `key_chars`: the longest key allowed (a mapping whose keys are URLs needs more than a field's)."""
    result = Loaded(path=path, data=None)

    def fail(line: int, loc: str, message: str, code: str, got=MISSING) -> Loaded:
        result.problems.append(Problem(path, line, loc, message, code, got))
        return result

    if raw.startswith(b"\xef\xbb\xbf"):
        return fail(1, "(file)", "file starts with a byte-order mark; save it as UTF-8 without BOM", "KB002")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, message = _first_bad_byte(raw, exc)
        return fail(line, "(file)", message, "KB001")
    try:
        data = _compose(text, result.lines, key_chars)
        if data is None:
            return fail(1, "(file)", "file is empty; an entry is a YAML mapping of fields", "KB004")
        if not isinstance(data, dict):
            return fail(result.lines.get((), 1), "(file)",
                        "top level must be a mapping of fields (key: value), not a list or a scalar", "KB004")
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
