"""Which Python environment serves, and what is installed in it: `kb doctor --python` and discovery.

The tool is installed the way the README says, in an environment of its own (pipx, uvx), so its
own interpreter holds none of the serving stack; reading its own packages judged an empty stack
on every machine (issue 36, an H100 run on 2026-12-05). The environment judged is, in this order:

1. the one `--python PATH` names: an interpreter, or a virtual or conda environment's folder;
2. else the first found of: the active virtual environment ($VIRTUAL_ENV), the active conda
   environment ($CONDA_PREFIX), `python3` on PATH, the interpreters of running vLLM, SGLang,
   TensorRT-LLM and llama-cpp-python servers of this user (/proc/<pid>/cmdline and exe; what
   cannot be read is skipped). The others found are listed, each with the `--python` to judge it.

The packages are read by that interpreter in a child process: `python -I -S -c SCRIPT NAMES`, a
fixed script that reads distribution metadata (imports no package, runs no `.pth` file), in an empty folder, with a
time limit and a cap on what it may print (kb.doctor.facts.Child), its answer one JSON line.
Nothing of the serving environment is imported into this process. Hands on a `Judged` to
kb.doctor.facts.probe; any PATH that cannot be judged is a one-line `PythonError`.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field

from kb.doctor import facts as facts_mod
from kb.doctor.facts import FoundPython, PythonEnvironment
from kb.records.visible import visible

# Where a folder keeps its interpreter: a venv or conda env on Linux and macOS, a venv on Windows,
# a conda env on Windows.
IN_FOLDER = ("bin/python3", "bin/python", "Scripts/python.exe", "python.exe")
MARK = "KB-DOCTOR-PACKAGES "  # the answer's line starts with it: anything else the interpreter prints is not it
EXAMPLE = "pass the serving environment's interpreter (e.g. /srv/venv/bin/python) or its folder"
MAX_CMDLINE = 64 * 1024  # a process's argument list read, at most

# Runs in the judged interpreter, any Python 3.8 or newer, started with -I -S: reads metadata and
# imports no package. -S keeps the `.pth` files of the serving environment from running (they may
# import anything), and with them `site`'s venv step, which is where a virtual environment's
# sys.prefix is set; so the script finds pyvenv.cfg as `site.venv` does (beside the interpreter or
# one folder up), sets sys.prefix to it as `site.venv` does, and names the site-packages folders
# itself (`site.getsitepackages`, computed without running anything). Setting sys.prefix matters on
# Debian and Ubuntu, whose patched getsitepackages otherwise lists dist-packages folders alone: the
# H100 run of 2026-12-05 (/opt/torch/.venv from Ubuntu's Python 3.12.3) read no package and no
# library there. Given {record package: [distribution names]}, prints
# MARK + {"version", "prefix", "packages", "sites"}; `sites` (the site-packages folders that exist)
# is where kb.doctor.predict reads the CUDA libraries.
SCRIPT = r"""
import json, os, platform, re, site, sys
try:
    import importlib.metadata as m
except ImportError:
    print("@MARK@" + json.dumps({"error": "Python %s has no importlib.metadata (3.8 or newer needed)"
                                % platform.python_version()}))
    raise SystemExit(0)
def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()
prefix, prefixes = sys.prefix, [sys.prefix]
here = os.path.dirname(os.path.abspath(sys.executable))
for folder in (here, os.path.dirname(here)):
    if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
        with open(os.path.join(folder, "pyvenv.cfg"), encoding="utf-8", errors="replace") as cfg:
            system = re.search(r"^\s*include-system-site-packages\s*=\s*true\s*$", cfg.read(), re.M | re.I)
        prefix = os.path.dirname(here)
        prefixes = [prefix] + ([sys.prefix] if system else [])
        # as site.venv() does: Debian's and Ubuntu's site.getsitepackages name a prefix's
        # site-packages only when sys.prefix differs from sys.base_prefix, else dist-packages alone
        sys.prefix = sys.exec_prefix = prefix
        break
sites = site.getsitepackages(prefixes)
installed = {}
for dist in m.distributions(path=sites):
    try:
        name, version = dist.metadata["Name"], dist.version
    except Exception:
        continue
    if isinstance(name, str) and isinstance(version, str):
        installed.setdefault(norm(name), version)
found = {}
for name, dists in json.loads(sys.argv[1]).items():
    found[name] = next((installed[norm(d)] for d in dists if norm(d) in installed), None)
print("@MARK@" + json.dumps({"version": platform.python_version(), "prefix": prefix, "packages": found,
                            "sites": [d for d in sites if os.path.isdir(d)]}))
""".replace("@MARK@", MARK)


class PythonError(Exception):
    """A Python environment that cannot be judged; the message is one line naming the path and
    what to do."""


@dataclass(frozen=True)
class Candidate:
    path: str  # an interpreter or a folder, as found
    found_by: str


@dataclass
class Judged:
    """The environment whose packages kb.doctor.facts puts in the facts."""

    python: str  # the interpreter that was run
    found_by: str
    version: str | None
    prefix: str | None
    packages: dict[str, str | None]
    others: list[Candidate] = field(default_factory=list)
    sites: list[str] = field(default_factory=list)  # its site-packages folders

    @property
    def facts(self) -> PythonEnvironment:
        """As the facts report it: paths and words escaped (`visible`), since a path may hold anything."""
        return PythonEnvironment(python=_path(self.python), prefix=_path(self.prefix) if self.prefix else None,
                                 found_by=visible(self.found_by, facts_mod.SHORT),
                                 others=[FoundPython(python=_path(c.path), found_by=visible(c.found_by, facts_mod.SHORT))
                                         for c in self.others[:facts_mod.MAX_FOUND]])


def _path(path: str) -> str:
    return visible(path, facts_mod.PATH_LENGTH)


# --- an interpreter from a path ----------------------------------------------------------------------

def interpreter(path: str) -> str:
    """The interpreter `path` names: itself, or the one inside a folder (IN_FOLDER), as an absolute
    path (the child runs in an empty folder, where a relative one names nothing). PythonError, one
    line, for a path that does not exist, loops, is no interpreter or cannot be run."""
    shown = visible(path, 300)
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PythonError(f"{shown}: is a loop of symbolic links; {EXAMPLE}") from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise PythonError(f"{shown}: does not exist; {EXAMPLE}") from None
        raise PythonError(f"{shown}: cannot be read ({exc.strerror or exc}); {EXAMPLE}") from None
    except ValueError:  # a NUL in the path
        raise PythonError(f"{shown}: is not a valid path; {EXAMPLE}") from None
    if stat.S_ISDIR(info.st_mode):
        for inside in IN_FOLDER:
            candidate = os.path.join(path, *inside.split("/"))
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return os.path.abspath(candidate)
        raise PythonError(f"{shown}: is a folder with no Python interpreter in it (looked for "
                          f"{', '.join(IN_FOLDER)}); pass the interpreter itself, e.g. /srv/venv/bin/python")
    if not stat.S_ISREG(info.st_mode):
        raise PythonError(f"{shown}: is not a file; {EXAMPLE}")
    if not os.access(path, os.X_OK):
        raise PythonError(f"{shown}: is not executable (no execute permission); {EXAMPLE}")
    return os.path.abspath(path)


# --- reading the packages -----------------------------------------------------------------------------

def read(python: str, wanted: dict[str, list[str]], timeout: float
         ) -> tuple[str | None, str | None, dict, list[str]]:
    """(Python version, sys.prefix, {record package: version or None}, site-packages folders) as
    `python` reports them.
    PythonError, naming `python` and what to do, for anything else it does."""
    shown = visible(python, 300)
    with tempfile.TemporaryDirectory(prefix="kb-doctor-", ignore_cleanup_errors=True) as empty:
        try:
            child = facts_mod.Child([python, "-I", "-S", "-c", SCRIPT, json.dumps(wanted)], empty)
        except OSError as exc:
            raise PythonError(f"{shown}: cannot be run ({exc.strerror or exc}); {EXAMPLE}") from None
        done = child.finish(time.monotonic() + timeout)
    if done.timed_out:
        raise PythonError(f"{shown}: gave no answer within {timeout:g} s; check that `{shown} -c pass` returns, "
                          "or allow more time with --timeout")
    if done.too_much:
        raise PythonError(f"{shown}: printed more than {facts_mod.MAX_OUTPUT:,} bytes instead of its package "
                          f"list; is it a Python interpreter? {EXAMPLE}")
    out = done.stdout.decode("utf-8", errors="replace")
    answer = next((line[len(MARK):] for line in reversed(out.splitlines()) if line.startswith(MARK)), None)
    if done.returncode != 0 or answer is None:
        said = (done.stderr.decode("utf-8", errors="replace").strip() or out.strip()).splitlines()
        last = visible(said[-1], 160) if said else "nothing"
        status = f"exited with status {done.returncode}" if done.returncode else "printed no package list"
        raise PythonError(f"{shown}: {status} (its last line: {last}); is it a Python 3.8 or newer interpreter? "
                          f"{EXAMPLE}")
    try:
        data = json.loads(answer)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        raise PythonError(f"{shown}: {visible(data['error'], 200)}")
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, dict):
        raise PythonError(f"{shown}: printed a package list that is not one; is it a Python 3.8 or newer "
                          f"interpreter? {EXAMPLE}")
    versions = {name: value if isinstance(value, str) else None for name, value in packages.items()
                if name in wanted}
    version, prefix, sites = data.get("version"), data.get("prefix"), data.get("sites")
    sites = [d for d in sites if isinstance(d, str) and os.path.isabs(d)][:16] if isinstance(sites, list) else []
    return (version if isinstance(version, str) else None, prefix if isinstance(prefix, str) else None, versions,
            sites)


# --- discovery ---------------------------------------------------------------------------------------

# A server process: the interpreter runs a console script of this name, or `-m` a module under this one.
SCRIPTS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm-serve": "TensorRT-LLM", "trtllm-llmapi-launch": "TensorRT-LLM"}
MODULES = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt_llm": "TensorRT-LLM", "llama_cpp": "llama-cpp-python"}
_PYTHON_NAME = re.compile(r"python[0-9.]*(\.exe)?")


def server_kind(argv: list[str]) -> str | None:
    """The server `argv` (an interpreter's command line) runs, a SCRIPTS or MODULES value, or None:
    the first argument that is not an interpreter option decides."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return MODULES.get(argv[i + 1].split(".")[0]) if i + 1 < len(argv) else None
        if arg == "-c":  # code on the command line: no server script
            return None
        if arg in ("-X", "-W", "-Q"):  # an option with its value in the next argument
            i += 2
            continue
        if not arg.startswith("-"):
            return SCRIPTS.get(os.path.basename(arg))
        i += 1
    return None


def servers(proc: str = "/proc") -> list[Candidate]:
    """The interpreters of this user's running server processes (Linux /proc; elsewhere none).
    A process that cannot be read (another user's, gone meanwhile) is skipped."""
    try:
        pids = sorted((int(name) for name in os.listdir(proc) if name.isdigit()))
    except OSError:
        return []
    found = []
    for pid in pids:
        if pid == os.getpid():
            continue
        base = os.path.join(proc, str(pid))
        try:
            if os.stat(base).st_uid != os.getuid():
                continue
            exe = os.readlink(os.path.join(base, "exe"))
            with open(os.path.join(base, "cmdline"), "rb") as handle:
                raw = handle.read(MAX_CMDLINE)
            cwd = os.readlink(os.path.join(base, "cwd"))
        except OSError:
            continue
        argv = [os.fsdecode(part) for part in raw.split(b"\0") if part]
        if not argv or not _PYTHON_NAME.fullmatch(os.path.basename(exe)):
            continue
        kind = server_kind(argv)
        if kind:
            found.append(Candidate(_interpreter_of(argv, exe, cwd), f"the running {kind} server (process {pid})"))
    return found


def _interpreter_of(argv: list[str], exe: str, cwd: str) -> str:
    """The interpreter a process was started with. /proc/<pid>/exe is the resolved binary, which for
    a virtual environment is the base Python, not the venv; the path it was started by (argv[0],
    what a console script's shebang names) keeps the venv, so it goes first."""
    first = argv[0]
    if os.sep in first:
        path = first if os.path.isabs(first) else os.path.join(cwd, first)
        if os.path.isfile(path):
            return path
    return exe


def _absolute_path_dirs(environ) -> str:
    """PATH without its relative entries: `.` or an empty entry would find a `python3` in whatever
    folder kb doctor runs from (as kb.doctor.facts.nvcc_version)."""
    return os.pathsep.join(d for d in environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(d))


def discover(environ=None, proc: str = "/proc") -> list[Candidate]:
    """Every environment found, in the order they are preferred, one per environment folder."""
    environ = os.environ if environ is None else environ
    found = [Candidate(environ[var], f"the active {what} environment (${var})")
             for var, what in (("VIRTUAL_ENV", "virtual"), ("CONDA_PREFIX", "conda")) if environ.get(var)]
    python3 = shutil.which("python3", path=_absolute_path_dirs(environ))
    if python3:
        found.append(Candidate(python3, "python3 on PATH"))
    found += servers(proc)
    seen, unique = set(), []
    for candidate in found:
        key = _folder(candidate.path)
        if key not in seen:
            seen.add(key)
            unique.append(candidate)
    return unique


def _folder(path: str) -> str:
    """The environment folder of an interpreter or folder path (`/v/bin/python3` -> `/v`), links
    resolved: two names of one environment count once."""
    parent = os.path.dirname(path)
    if os.path.basename(parent) in ("bin", "Scripts"):
        path = os.path.dirname(parent)
    elif not os.path.isdir(path):
        path = parent
    return os.path.realpath(path)


def judge(asked: str | None, wanted: dict[str, list[str]], timeout: float, environ=None,
          proc: str = "/proc") -> tuple[Judged | None, list[str]]:
    """(the environment to judge, notes): `asked` (PythonError when it cannot be), else the first
    discovered that answers, those that do not noted; None, with a note, when none does."""
    if asked is not None:
        python = interpreter(asked)
        version, prefix, packages, sites = read(python, wanted, timeout)
        return Judged(python, "given with --python", version, prefix, packages, sites=sites), []
    found = discover(environ, proc)
    notes = []
    for i, candidate in enumerate(found):
        try:
            python = interpreter(candidate.path)
            version, prefix, packages, sites = read(python, wanted, timeout)
        except PythonError as exc:
            notes.append(f"skipped {candidate.found_by}: {exc}")
            continue
        return Judged(python, candidate.found_by, version, prefix, packages, found[i + 1:], sites), notes
    notes.append("no Python environment found to judge (no active virtual or conda environment, no python3 on "
                 "PATH, no running vLLM, SGLang, TensorRT-LLM or llama-cpp-python server of this user): every "
                 "package is unknown; pass the serving environment with --python PATH")
    return None, notes
