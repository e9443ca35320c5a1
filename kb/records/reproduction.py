"""Stage 2-3, validate and lint: an entry's reproductions, evidence anyone can re-run on a CPU machine.

A reproduction is data: what to install (one release of a tool package, hash-pinned in
`kb/repro/tools.lock`), what to run (a small input kept in `kb/repro/inputs/` and the tool's
options) and what it printed (verbatim, with the tool's version line, the date and the machine).
`kb repro` (kb.repro.run) runs them; this module holds the model the entry schema embeds and
the two lint rules on it (KB090, KB091), handed to `kb.records.lint`.

The model does not import `kb.records.schema` at load time: the schema imports this module for its
`reproductions` field, so the shared validators are fetched when a value is checked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from kb.records import patterns
from kb.records.load import dotted
from kb.records.normalise import normalise
from kb.records.problems import MISSING, Problem

REPRO = Path(__file__).resolve().parent.parent / "repro"  # the lock and the inputs, in the checkout or the wheel
LOCK = REPRO / "tools.lock"
# The Debian packages a reproduction may install (kb.repro.debian): one line each,
# "SUITE COMPONENT PACKAGE=VERSION ARCHITECTURE SHA256", the hash as the suite's Packages index lists it.
DEBIAN_LOCK = REPRO / "debian.lock"
INPUTS = REPRO / "inputs"

# The tools a reproduction can run, and the file that shows the release pip installed holds it: ptxas
# is an executable (a cu12 wheel keeps it under nvidia/cuda_nvcc/bin/, a 13.x one under nvidia/cu13/bin/);
# triton is a package, run as `python DRIVER.py` with the release on sys.path; nvcc is the driver
# binary in Debian's nvidia-cuda-toolkit (its /usr/bin/nvcc is a script calling that absolute path);
# cmake is the binary of the PyPI `cmake` wheel, which finds its modules beside it (cmake/data/share/).
TOOLS = {"ptxas": "nvidia/*/bin/ptxas", "triton": "triton/__init__.py", "nvcc": "usr/lib/nvidia-cuda-toolkit/bin/nvcc",
         "cute-dsl": "nvidia_cutlass_dsl/python_packages/cutlass/__init__.py", "cmake": "cmake/data/bin/cmake",
         # python: host-side logic of a released wheel, run by kb repro's own interpreter; the wheel is
         # installed (--no-deps, so nothing of it runs) for its version, and its file (`kernel`) is lifted
         "python": "*.dist-info/METADATA"}
# The tools run as `python DRIVER.py` with their release (and its `needs`) on PYTHONPATH.
DRIVEN = ("triton", "cute-dsl", "python")
# What kb repro copies beside a driven tool's driver: the lifting the drivers share.
DRIVER_MODULES = ("lift.py",)
# The input each tool reads: a PTX file for ptxas, a Python driver for triton, a CUDA file for nvcc, a
# CMake script for cmake (run with -P).
INPUT_SUFFIX = {"ptxas": ".ptx", "triton": ".py", "nvcc": ".cu", "cute-dsl": ".py", "cmake": ".cmake", "python": ".py"}
# The tools that read a file of a released wheel (`kernel`), and the kind of file: a triton driver
# compiles an upstream kernel (.py); a cute-dsl driver constructs an upstream kernel class (.py); a
# cmake script includes an upstream CMake module (.cmake).
WHEEL_FILE_SUFFIX = {"triton": ".py", "cute-dsl": ".py", "cmake": ".cmake", "python": ".py"}
# The entry components a tool package is a release of: a reproduction's version is checked against
# their `affected` range (KB091).
TOOL_COMPONENTS = {"nvidia-cuda-nvcc-cu12": ("cuda", "cuda-toolkit"), "nvidia-cuda-nvcc": ("cuda", "cuda-toolkit"),
                   "triton": ("triton",), "nvidia-cuda-toolkit": ("cuda", "cuda-toolkit"),
                   "nvidia-cutlass-dsl": ("nvidia-cutlass-dsl",),
                   # from 4.5 the DSL is in this wheel, released with nvidia-cutlass-dsl at the same version
                   "nvidia-cutlass-dsl-libs-base": ("nvidia-cutlass-dsl",),
                   "flashinfer-python": ("flashinfer",)}
# The version line each tool prints: `ptxas --version` on its last-but-one line "Cuda compilation tools,
# release 12.8, V12.8.93"; the triton driver's `--version` "triton 3.7.0".
TOOL_VERSION = re.compile(r"\bV([0-9]+(?:\.[0-9]+)+)\b")
VERSION_LINE = {"ptxas": TOOL_VERSION, "triton": re.compile(r"^triton ([0-9]+(?:\.[0-9]+)+)$"), "nvcc": TOOL_VERSION,
                "cute-dsl": re.compile(r"^nvidia-cutlass-dsl(?:-libs-base|-libs-cu13)? ([0-9]+(?:\.[0-9]+)+)$"),
                "cmake": re.compile(r"^cmake version ([0-9]+(?:\.[0-9]+)+)$"),
                # python_call.py's `--version`: the interpreter's version, then the installed wheel's
                # ("python 3.11.7, flashinfer-python 0.6.7"), the wheel's being the one KB091 reads
                "python": re.compile(r"^python [0-9]+(?:\.[0-9]+)+, [A-Za-z0-9._-]+ ([0-9]+(?:\.[0-9]+)+\S*)$")}


def _schema():
    from kb.records import schema  # late: kb.records.schema imports this module (see the module docstring)

    return schema


def _fail(code: str, message: str, **ctx):
    raise PydanticCustomError(code, message, ctx)


def _line(value: str) -> str:
    return _schema()._literal(value)


def _prose(value: str) -> str:
    return _schema()._text(value)


def _version(value: str) -> str:
    return _schema()._version(value)


def _date(value: str) -> str:
    return _schema()._full_date(value)


def _output(value: str) -> str:
    """Verbatim output: lines of visible text, nothing a terminal would act on (an escape sequence)."""
    if not value.strip():
        _fail("KB025", "must not be empty or only whitespace")
    return _schema()._no_controls(value, allow_newlines=True)


def _input_name(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*\.(ptx|py|cu|cmake)", value):
        _fail("KB024", "must be the name of a file in kb/repro/inputs/, lowercase words, digits, '.', '-' and '_', "
              "ending in .ptx (ptxas), .py (a triton driver), .cu (nvcc) or .cmake (a cmake script), no folder")
    return value


# Options only: the input is the one file a run reads, and is added last by `kb repro`, so no
# argument can name another path (an output file, a file outside the temporary folder). A triton
# driver's values also list names and types ('--args=q:*bf16,n:int'), never a path: the driver
# writes nothing but its own temporary files.
OPTION = {"ptxas": re.compile(r"--?[A-Za-z][A-Za-z0-9-]*(=[A-Za-z0-9_.,-]+)?"),
          # --kernel-file is kb repro's to add (the unpacked wheel's file), never the record's
          "triton": re.compile(r"--(?!kernel-file=)[a-z][a-z0-9-]*=[A-Za-z0-9_.,:*/-]+"),
          # nvcc's -gencode values hold '=' and brackets (arch=compute_120a,code=[compute_120a,sm_120a]), never '/'
          "nvcc": re.compile(r"--?[A-Za-z][A-Za-z0-9-]*(=[A-Za-z0-9_.,=\[\]-]+)?"),
          # --kwargs=head_dim:128,is_causal:True; --kernel-file= is kb repro's to add
          "cute-dsl": re.compile(r"--(?!kernel-file=)[a-z][a-z0-9-]*=[A-Za-z0-9_.,:-]+"),
          # a variable the script reads; -DWHEEL_FILE= is kb repro's to add (the unpacked wheel's file)
          # and -P, then the input, come last
          "cmake": re.compile(r"-D(?!WHEEL_FILE=)[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.+;-]+"),
          # a python driver's call and stand-ins hold Python literals: brackets, parentheses, quotes
          "python": re.compile(r"--(?!kernel-file=)[a-z][a-z0-9-]*=[A-Za-z0-9_.,:=()\[\]'-]+")}
OPTION_FORM = {"ptxas": "one option such as '-arch=sm_120' (a dash, a name, optionally '=value' of letters, digits "
                        "and . , _ -)",
               "triton": "one driver option such as '--capability=120' or '--args=x:*fp32,n:int' (two dashes, a "
                         "name, '=value' of letters, digits and . , _ : * / -)",
               "nvcc": "one option such as '-gencode=arch=compute_120a,code=sm_120a' (a dash, a name, optionally "
                       "'=value' of letters, digits and . , _ = [ ] -)",
               "cute-dsl": "one driver option such as '--arch=sm_121a' (two dashes, a name other than kernel-file, "
                           "'=value' of letters, digits and . , : _ -)",
               "python": "one driver option such as '--env=FLASHINFER_CUDA_ARCH_LIST:12.1a' (two dashes, a name, "
                         "'=value' of letters, digits and . , _ : = ( ) [ ] ' -)",
               "cmake": "one variable such as '-DCUDA_VERSION=13.0' (-D, a name other than WHEEL_FILE, '=value' of "
                        "letters, digits and . _ + ; -)"}


def _option(value: str) -> str:
    if not any(pattern.fullmatch(value) for pattern in OPTION.values()):
        _fail("KB024", f"must be {OPTION_FORM['ptxas']}, {OPTION_FORM['triton']}, {OPTION_FORM['nvcc']} or "
              f"{OPTION_FORM['cmake']}; the input file is added by kb repro")
    return value


def _wheel_path(value: str) -> str:
    # Letters of either case: CMake's own folders are named so (torch/share/cmake/Caffe2/Modules_CUDA_fix).
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*\.(py|cmake)", value) \
            or ".." in value.split("/"):
        _fail("KB024", "must be the path of a .py or .cmake file inside the wheel, such as "
              "'vllm/v1/attention/ops/triton_decode_attention.py' ('/' between folders, no '..')")
    return value


Line = Annotated[str, Field(min_length=1, max_length=400), AfterValidator(_line)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _release(value: str) -> str:
    """A PyPI release's PEP 440 version or a Debian package's version ('11.8.89~11.8.0-5~deb12u1');
    which one the source asks for, KB091 checks."""
    if not re.fullmatch(r"(?:[0-9]+:)?[0-9][A-Za-z0-9.+~-]*", value):
        _fail("KB035", "is not a release version such as '12.8.93' (PyPI) or '11.8.89~11.8.0-5~deb12u1' (Debian)")
    return value


class Install(_Model):
    package: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._+-]*$", max_length=60)]
    version: Annotated[str, Field(max_length=60), AfterValidator(_release)]
    # pypi: a release pinned in tools.lock, installed by pip; debian: a package pinned in debian.lock,
    # fetched by apt-get download and unpacked (kb.repro.debian)
    source: Literal["pypi", "debian"] = "pypi"

    def upstream(self) -> str:
        """The tool's own version: a Debian version's upstream part ('11.8.89' of
        '11.8.89~11.8.0-5~deb12u1', no epoch, no Debian revision), else the PyPI version."""
        if self.source == "pypi":
            return self.version
        return re.split(r"[~-]", self.version.split(":", 1)[-1])[0]

    def pinned_as(self) -> str:
        return f"{self.package}={self.version}" if self.source == "debian" else f"{self.package}=={self.version}"


class Run(_Model):
    tool: Literal[tuple(TOOLS)]
    input: Annotated[str, Field(max_length=80), AfterValidator(_input_name)]
    # 800: a triton driver's --args lists every runtime argument of an upstream kernel with its type or
    # value (SGLang's fused_moe_kernel has 31, about 480 characters).
    args: list[Annotated[str, Field(max_length=800), AfterValidator(_option)]] = Field(min_length=1, max_length=8)


class Kernel(_Model):
    """The released wheel whose file a run reads (the kernel a triton driver compiles, the CMake module
    a cmake script includes): pinned in tools.lock like a tool, downloaded and unpacked by `kb repro`
    (only the files of that kind kept), never installed (its own dependencies stay out)."""

    package: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=60)]
    version: Annotated[str, Field(max_length=60), AfterValidator(_version)]
    path: Annotated[str, Field(max_length=160), AfterValidator(_wheel_path)]


class Printed(_Model):
    output: Annotated[str, Field(max_length=8000), AfterValidator(_output)]
    exit: Annotated[int, Field(ge=-255, le=255)]
    tool_version: Line
    date: Annotated[str, Field(max_length=10), AfterValidator(_date)]
    machine: Line


class Reproduction(_Model):
    install: Install
    run: Run
    # Only for a run that reads a file of a released wheel (WHEEL_FILE_SUFFIX; KB091 checks the pairing
    # and the pin).
    kernel: Kernel | None = None
    # A run on a release the entry names as fixed: it must print none of the entry's signatures (KB090),
    # and its release lies outside the affected range and inside the fix's `applies` (KB091).
    fixed: bool = False
    # Releases a driven tool's import needs (nvidia-cutlass-dsl: numpy, cuda-bindings), each pinned in
    # tools.lock and installed into its own cache folder like the tool, then put beside it on PYTHONPATH.
    needs: list[Install] = Field(default_factory=list, max_length=8)
    # Where options the input does not explain come from (an upstream kernel's arguments read in the
    # wheel's caller, a shape taken from a study), so a reader can check them; the page shows it.
    note: Annotated[str, Field(min_length=1, max_length=1200), AfterValidator(_prose)] | None = None
    # None until `kb repro --write ID` records a run (KB090 asks for it).
    printed: Printed | None = None

    def command(self) -> str:
        """What `kb repro` runs, as a reader would type it in the input's folder."""
        if self.run.tool in DRIVEN:
            kernel = [f"--kernel-file=<{self.kernel.package} {self.kernel.version} wheel>/{self.kernel.path}"] \
                if self.kernel else []
            return " ".join(["python", self.run.input, *self.run.args, *kernel])
        if self.run.tool == "cmake":
            wheel = [f"-DWHEEL_FILE=<{self.kernel.package} {self.kernel.version} wheel>/{self.kernel.path}"] \
                if self.kernel else []
            return " ".join(["cmake", *self.run.args, *wheel, "-P", self.run.input])
        return " ".join([self.run.tool, *self.run.args, self.run.input])


# --- lint ---------------------------------------------------------------------------------------


def as_it_should(entry, fixed: bool, output: str) -> bool:
    """Whether a run's output is what its kind of run must print: one of the entry's signatures, or
    none of them for a run on a fixed release (`fixed`). KB090, `kb repro` and its --write ask this."""
    return bool(shown(entry, output)) != fixed


def shown(entry, output: str) -> list[int]:
    """The indices of the entry's signatures that a line of `output` shows, compared as `kb match`
    compares a log line: the normalised line searched with each signature's pattern."""
    lines = [normalise(line) for line in output.splitlines() if line.strip()]
    found = []
    for i, signature in enumerate(entry.signatures):
        compiled = patterns.compile_signature(signature.text, signature.match, entry.hardware.architectures)
        expression = patterns.regex(patterns.search_source(compiled, signature.kind))
        if any(expression.search(line) for line in lines):
            found.append(i)
    return found


class DebianPin(BaseModel):
    suite: str
    component: str
    architecture: str
    sha256: str


def debian_pins(path: Path | None = None) -> dict[tuple[str, str], DebianPin]:
    """(package, version) -> where and what kb/repro/debian.lock pins; a malformed line is skipped
    here and named by KB091 when a reproduction asks for it."""
    path = DEBIAN_LOCK if path is None else path
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    out = {}
    for found in re.finditer(r"^([a-z-]+) ([a-z-]+) ([a-z0-9][a-z0-9.+-]*)=(\S+) ([a-z0-9]+) ([0-9a-f]{64})$", text, re.M):
        suite, component, package, version, architecture, digest = found.groups()
        out[(package, version)] = DebianPin(suite=suite, component=component, architecture=architecture,
                                            sha256=digest)
    return out


def locked() -> set[tuple[str, str]]:
    """(package, version) of every release kb/repro/tools.lock pins."""
    if not LOCK.is_file():
        return set()
    text = LOCK.read_text(encoding="utf-8")
    return {(m[1].lower(), m[2]) for m in re.finditer(r"^([A-Za-z0-9._-]+)==(\S+)", text, re.M)}


def _printed_version(tool: str, printed: Printed) -> str | None:
    found = VERSION_LINE[tool].search(printed.tool_version)
    return found.group(1) if found else None


def _pep440(value: str) -> bool:
    try:
        Version(value)
    except InvalidVersion:
        return False
    return True


def _same(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def problems(cell, pins: set[tuple[str, str]] | None = None) -> list[Problem]:
    """KB090 and KB091 on one cell's reproductions."""
    pins = locked() if pins is None else pins
    out: list[Problem] = []

    def report(loc: tuple, message: str, code: str, got) -> None:
        out.append(Problem(cell.path, cell.line_of(loc), dotted(loc), message, code, got))

    for i, repro in enumerate(cell.entry.reproductions):
        at = ("reproductions", i)
        install = repro.install
        if install.source == "debian" and (install.package, install.version) not in debian_pins():
            report(at + ("install",), f"{install.pinned_as()} is not pinned in kb/repro/debian.lock: add its line "
                   "(suite, component, package=version, architecture, the sha256 of the suite's Packages index)",
                   "KB091", install.pinned_as())
        elif install.source == "pypi" and not _pep440(install.version):
            report(at + ("install", "version"), "a PyPI release's version must be PEP 440, such as '12.8.93'", "KB091",
                   install.version)
        elif install.source == "pypi" and (install.package, install.version) not in pins:
            report(at + ("install",), f"{install.package}=={install.version} is not pinned in kb/repro/tools.lock: add "
                   "the line to kb/repro/tools.in and run `make lock`", "KB091", f"{install.package}=={install.version}")
        if not (INPUTS / repro.run.input).is_file():
            report(at + ("run", "input"), "no such file in kb/repro/inputs/: add the input there (a few lines)",
                   "KB091", repro.run.input)
        elif not repro.run.input.endswith(INPUT_SUFFIX[repro.run.tool]):
            report(at + ("run", "input"), f"{repro.run.tool} reads a {INPUT_SUFFIX[repro.run.tool]} file: name one",
                   "KB091", repro.run.input)
        for k, arg in enumerate(repro.run.args):
            if not OPTION[repro.run.tool].fullmatch(arg):
                report(at + ("run", "args", k), f"a {repro.run.tool} argument must be {OPTION_FORM[repro.run.tool]}",
                       "KB091", arg)
        kernel = repro.kernel
        reads = WHEEL_FILE_SUFFIX.get(repro.run.tool)
        if kernel is not None and reads is None:
            report(at + ("kernel",), "only a triton, cute-dsl, python or cmake run reads a file of a wheel: remove `kernel`", "KB091",
                   kernel.package)
        elif kernel is not None and not kernel.path.endswith(reads):
            report(at + ("kernel", "path"), f"a {repro.run.tool} run reads a {reads} file of the wheel: name one",
                   "KB091", kernel.path)
        if repro.run.tool == "python" and (kernel is None or (kernel.package, kernel.version) !=
                                           (install.package, install.version)):
            report(at + ("kernel",), "a python run lifts code out of the wheel it installs: give `kernel` with the "
                   f"same package and version as `install` ({install.package} {install.version}) and the file's path",
                   "KB091", f"{kernel.package}=={kernel.version}" if kernel else MISSING)
        for k, need in enumerate(repro.needs):
            if repro.run.tool not in DRIVEN or need.source != "pypi":
                report(at + ("needs", k), f"only a PyPI release can be put beside a driven tool ({', '.join(DRIVEN)}): "
                       "remove it, or make the tool one of those", "KB091", need.package)
            elif (need.package, need.version) not in pins:
                report(at + ("needs", k), f"{need.package}=={need.version} is not pinned in kb/repro/tools.lock: add "
                       "the line to kb/repro/tools.in and run `make lock`", "KB091", f"{need.package}=={need.version}")
        if kernel is not None and (kernel.package, kernel.version) not in pins and reads is not None:
            report(at + ("kernel",), f"{kernel.package}=={kernel.version} is not pinned in kb/repro/tools.lock: add "
                   "the line to kb/repro/tools.in and run `make lock`", "KB091", f"{kernel.package}=={kernel.version}")
        for loc, names, version in _ranged(repro):
            for problem in _range_problems(cell.entry, repro.fixed, names, version):
                report(at + loc, problem, "KB091", version)
        if repro.printed is None:
            report(at, f"no recorded output: run `kb repro --write {cell.id}` to run it and record what it prints",
                   "KB090", MISSING)
            continue
        printed_version = _printed_version(repro.run.tool, repro.printed)
        if printed_version is None or not _same(printed_version, install.upstream()):
            report(at + ("printed", "tool_version"), f"the tool's version line must name the installed release "
                   f"{install.upstream()} (what `{repro.run.tool} --version` prints); record the run again with "
                   f"`kb repro --write {cell.id}`", "KB091", repro.printed.tool_version)
        if not as_it_should(cell.entry, repro.fixed, repro.printed.output):
            report(at + ("printed", "output"), "a run on a fixed release (`fixed: true`) must print none of this "
                   "entry's signatures, and this output shows one (compared as kb match compares): the release "
                   "is not fixed, or the run is not `fixed`" if repro.fixed else "the recorded output shows none "
                   "of this entry's signatures (each line compared as kb match compares it, after normalising): a "
                   "reproduction must print the entry's literal; change the input or options, or the signature",
                   "KB090", repro.printed.output.strip().splitlines()[0])
    return out


def _ranged(repro: Reproduction) -> list[tuple[tuple, tuple[str, ...], str]]:
    """The releases of a run that an entry's ranges name: (where in the record, the component names
    it is a release of, its version). The tool (ptxas is a cuda release) and the wheel whose file
    the run reads (torch, for a cmake run on torch's CMake module)."""
    out = []
    if _pep440(repro.install.upstream()):
        out.append((("install", "version"), TOOL_COMPONENTS.get(repro.install.package, ()), repro.install.upstream()))
    if repro.kernel is not None and _pep440(repro.kernel.version):
        out.append((("kernel", "version"), (repro.kernel.package,), repro.kernel.version))
    return out


def _range_problems(entry, fixed: bool, names: tuple[str, ...], version: str) -> list[str]:
    """What is wrong with a run's release of one of `names` against the entry's ranges: a run that
    shows the failure is on a release an `affected` range covers; a `fixed` run is on one no
    `affected` range covers, and inside the `applies` of a fix of that package where one is given."""
    out = []
    for j, component in enumerate(entry.components):
        if not component.affected or component.package not in names:
            continue
        inside = SpecifierSet(component.affected).contains(version, prereleases=True)
        if inside and fixed:
            out.append(f"{component.package} {version} is inside this entry's range components[{j}].affected "
                       f"{component.affected!r}: a `fixed` run is on a release the fix covers; fix the range or "
                       "the version")
        elif not inside and not fixed:
            out.append(f"{component.package} {version} is outside this entry's range components[{j}].affected "
                       f"{component.affected!r}: a reproduction shows the failure, so its tool is a release the "
                       "range covers; fix the range or the version")
    if fixed:
        for j, fix in enumerate(entry.fixes):
            if fix.package in names and fix.applies and \
                    not SpecifierSet(fix.applies).contains(version, prereleases=True):
                out.append(f"{fix.package} {version} is outside fixes[{j}].applies {fix.applies!r}: a `fixed` run "
                           "is on a release that fix names; fix the version or the fix's range")
    return out
