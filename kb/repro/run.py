"""`kb repro [ID...]`: run each reproduction and compare what it prints with the record.

For each reproduction of the chosen entries: install its tool release (kb.repro.install), copy
its input into a temporary folder, run the tool there with a time limit, and compare. A run is
`ok` when it prints the recorded output exactly, with the recorded exit status, and that output
shows one of the entry's signatures as `kb match` would find it; otherwise it `differs`, and the
difference is printed below its line. Exit 0 when all are ok, 1 when any differs, 2 on an error
(an unknown id, a tool that could not be installed). `--write` records the runs that differ.
An entry's scans (kb.repro.scan) run too: each lists the CUDA images of released wheels, prints
the last version without code for its architecture and the first with it, and is recorded with
`--write` when what it found differs.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kb.records.reproduction import (DRIVEN, DRIVER_MODULES, INPUTS, TOOLS, VERSION_LINE, WHEEL_FILE_SUFFIX, Printed, Reproduction,
                                     as_it_should)
from kb.repro import debian, install

TIMEOUT_S = 60.0
_TMP_LINE = re.compile(r"(<tmp>/[A-Za-z0-9_./-]+\.py):[0-9]+(?::[0-9]+)?")


@dataclass
class Ran:
    """One reproduction run: what it printed, and how that differs from the record."""

    cell: object
    index: int
    repro: Reproduction
    printed: Printed | None = None
    differences: list[str] = field(default_factory=list)
    error: str = ""


def machine() -> str:
    """The system a run happened on, as the record states it: 'Debian GNU/Linux 12 (bookworm), x86_64'."""
    try:
        name = platform.freedesktop_os_release().get("PRETTY_NAME", "")
    except OSError:
        name = ""
    return f"{name or platform.system()}, {platform.machine()}"


def _execute(command: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> tuple[str, int]:
    # A plain environment: the tool's messages in English, nothing of the caller's (CUDA paths, locale);
    # HOME is the run's folder, so a compiler's cache (Triton's ~/.triton) starts empty and goes with it.
    plain = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(cwd), "TMPDIR": str(cwd)}
    # A Python driver runs as `python`, whatever the interpreter's file is called: a C assertion
    # inside the compiler prints the program's name, and the record must not depend on it.
    executable = sys.executable if command[0] == "python" else None
    done = subprocess.run(command, cwd=cwd, env=plain | (env or {}), executable=executable, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout, text=True, errors="replace")
    # The run's own folder (a random temporary name) as the recorded output writes it, and a line and
    # column in a file of that folder (a driver, a lifted kernel) as <line>: they move whenever the
    # driver or the lifting changes, which says nothing about the tool's behaviour.
    return _TMP_LINE.sub(r"\1:<line>", done.stdout.replace(str(cwd), "<tmp>")), done.returncode


def _program(repro: Reproduction, root: Path, wheelhouse: Path | None) -> tuple[list[str], list[str], dict[str, str]]:
    """The command line before the arguments, the arguments after them, and the environment of a
    run; install.InstallError when a release cannot be had, LookupError when the tool is not in it."""
    if repro.run.tool in DRIVEN:
        if not any(path.is_file() for path in root.glob(TOOLS[repro.run.tool])):
            raise LookupError(f"{repro.install.package}=={repro.install.version} holds no {repro.run.tool} package")
        beside = [install.install(n.package, n.version, wheelhouse) for n in repro.needs]
        wheel_file = _wheel_file(repro, wheelhouse)
        after = [f"--kernel-file={wheel_file}"] if wheel_file else []
        env = {"PYTHONPATH": os.pathsep.join(map(str, [root, *beside])), "PYTHONUNBUFFERED": "1",
               "PYTHONNOUSERSITE": "1"}
        if repro.run.tool == "triton":
            # FP fusion on is the default of every release pinned (3.2.0 to 3.9.0 read); 3.9 warns when the
            # variable is unset, naming the local install path, which would make recorded output
            # machine-specific. 3.9's warning says 3.10 turns the default off: a 3.10 pin must revisit this.
            env["TRITON_DEFAULT_FP_FUSION"] = "1"
        return ["python", repro.run.input], after, env
    program = install.tool(root, repro.run.tool)
    if program is None:
        raise LookupError(f"{repro.install.package}=={repro.install.version} holds no {repro.run.tool}")
    if repro.run.tool == "cmake":
        # A script run (-P) comes after the variables it reads; the wheel's module is one of them.
        wheel_file = _wheel_file(repro, wheelhouse)
        return [str(program)], [*([f"-DWHEEL_FILE={wheel_file}"] if wheel_file else []), "-P", repro.run.input], {}
    return [str(program)], [repro.run.input], {}


def _wheel_file(repro: Reproduction, wheelhouse: Path | None) -> Path | None:
    """The file of a released wheel the run reads (`kernel`), from the wheel's files of that kind
    unpacked in the cache; None when the run reads none."""
    if repro.kernel is None:
        return None
    source = install.unpacked(repro.kernel.package, repro.kernel.version, wheelhouse,
                              suffix=WHEEL_FILE_SUFFIX[repro.run.tool])
    if not (source / repro.kernel.path).is_file():
        raise LookupError(f"the {repro.kernel.package} {repro.kernel.version} wheel holds no {repro.kernel.path}")
    return source / repro.kernel.path


def run_one(cell, index: int, repro: Reproduction, wheelhouse: Path | None, timeout: float,
            today: str) -> Ran:
    ran = Ran(cell, index, repro)
    try:
        fetch = debian.install if repro.install.source == "debian" else install.install
        root = fetch(repro.install.package, repro.install.version, wheelhouse)
    except install.InstallError as exc:
        ran.error = str(exc)
        return ran
    source = INPUTS / repro.run.input
    if not source.is_file():
        ran.error = f"no input {source}: add it to kb/repro/inputs/"
        return ran
    try:
        program, after, env = _program(repro, root, wheelhouse)
    except (install.InstallError, LookupError) as exc:
        ran.error = str(exc)
        return ran
    with tempfile.TemporaryDirectory(prefix="kb-repro-") as folder:
        here = Path(folder)
        shutil.copyfile(source, here / repro.run.input)
        for shared in DRIVER_MODULES if repro.run.tool in DRIVEN else ():
            shutil.copyfile(INPUTS / shared, here / shared)
        try:
            version_text, _ = _execute([*program, "--version"], here, timeout, env)
            output, status = _execute([*program, *repro.run.args, *after], here, timeout, env)
        except subprocess.TimeoutExpired:
            ran.error = f"{repro.command()} ran past {timeout:.0f} s and was stopped"
            return ran
    pattern = VERSION_LINE[repro.run.tool]
    version_line = next((line.strip() for line in version_text.splitlines() if pattern.search(line.strip())),
                        version_text.strip().splitlines()[-1] if version_text.strip() else "(no version printed)")
    ran.printed = Printed(output=output or "(no output)\n", exit=status, tool_version=version_line,
                          date=today, machine=machine())
    ran.differences = differences(cell.entry, repro.printed, ran.printed, repro.fixed)
    return ran


def differences(entry, recorded: Printed | None, new: Printed, fixed: bool = False) -> list[str]:
    """What a new run changes against the record, one line each (a unified diff for the output).
    A run on a fixed release differs as soon as it shows one of the entry's signatures."""
    out: list[str] = []
    if not as_it_should(entry, fixed, new.output):
        out.append(("a fixed release prints one of the entry's signatures" if fixed else
                    "prints none of the entry's signatures") + " (compared as kb match compares)")
    if recorded is None:
        return out + ["no output recorded yet (kb repro --write records it)"]
    if new.output != recorded.output:
        out += [line.rstrip("\n") for line in difflib.unified_diff(
            recorded.output.splitlines(keepends=True), new.output.splitlines(keepends=True),
            "recorded", "printed now", lineterm="\n")]
    if new.exit != recorded.exit:
        out.append(f"exit status {new.exit}, recorded {recorded.exit}")
    if new.tool_version != recorded.tool_version:
        out.append(f"tool version {new.tool_version!r}, recorded {recorded.tool_version!r}")
    return out


def main(args) -> int:
    from kb.records import lint
    from kb.repro import write

    entries = Path(args.entries)
    result = lint.cached_check([entries])
    cells = {cell.id: cell for cell in result.cells}
    unknown = [i for i in args.ids if i not in cells]
    if unknown:
        bad = [p for p in result.problems if p.path.stem in unknown]
        why = f"; {len(bad)} problem(s) in its file, run `kb check`" if bad else ""
        print(f"kb repro: no valid entry {', '.join(map(repr, unknown))} in {entries}{why}", file=sys.stderr)
        return 2
    chosen = [cells[i] for i in args.ids] if args.ids else sorted(cells.values(), key=lambda c: c.id)
    if getattr(args, "newest", False):
        from kb.repro import newest

        return newest.main(chosen, args.write)
    wheelhouse = Path(args.wheelhouse) if args.wheelhouse else None
    today = dt.date.today().isoformat()
    runs = [run_one(cell, i, repro, wheelhouse, args.timeout, today)
            for cell in chosen for i, repro in enumerate(cell.entry.reproductions)]
    scanned, scan_errors = _scans(chosen, wheelhouse, today)
    if not runs and not scanned and not scan_errors:
        print("kb repro: none of these entries has a reproduction or a scan", file=sys.stderr)
        return 0
    for ran in runs:
        where = f"{ran.cell.id} reproductions[{ran.index}]: {ran.repro.command()}"
        if ran.error:
            print(f"error    {where}: {ran.error}")
            continue
        tool = ran.printed.tool_version.rsplit(", ", 1)[-1].removeprefix(f"{ran.repro.install.package} ")
        print(f"{'differs' if ran.differences else 'ok':<8} {where} ({ran.repro.install.package} {tool})")
        for line in ran.differences:
            print(f"    {line}")
    if args.write:
        for line in write.record(runs) + write.record_scans(scanned):
            print(line, file=sys.stderr)
    if scan_errors or any(ran.error for ran in runs):
        return 2
    return 1 if any(ran.differences for ran in runs) or any(item[3] for item in scanned) else 0


def _scans(chosen, wheelhouse: Path | None, today: str) -> tuple[list[tuple], list[str]]:
    """Run every scan of the chosen cells, printing one line each (and its differences):
    (cell, index, found, differences) of those that ran, and the errors."""
    from kb.repro import scan

    done, errors = [], []
    for cell in chosen:
        for i, recorded in enumerate(cell.entry.scans):
            where = f"{cell.id} scans[{i}]: {recorded.command()}"
            try:
                found = scan.run_scan(recorded, wheelhouse, today, machine())
            except (scan.ScanError, install.InstallError, OSError, subprocess.TimeoutExpired) as exc:
                errors.append(where)
                print(f"error    {where}: {exc}")
                continue
            differs = scan.differences(recorded, found)
            print(f"{'differs' if differs else 'ok':<8} {where} ({scan.summary(recorded, found)})")
            for line in differs:
                print(f"    {line}")
            done.append((cell, i, found, differs))
    return done, errors
