"""`kb doctor`: which cells apply to this machine, judged from the records alone.

The facts come from `kb.doctor.facts` (probed here, or read from a facts file). Each cell's verdict comes
from its record: `hardware.architectures` and `components[].affected` / `fixed_in`. There is no
code for any one cell; the rules below are the whole of it (site_src/doctor.md says the same):

1. No GPU architecture is known -> unknown. No GPU at all, or no GPU whose architecture the
   cell lists -> not-applicable.
2. Components with a range (`affected`; `fixed_in` alone counts as the range `<fixed_in`) decide,
   all of them together: installed inside the range -> affected; at or above `fixed_in` or above
   the range -> fixed; below the range or not installed -> not-applicable; version unknown ->
   unknown. The cell is affected only when every ranged component is; otherwise the first of
   fixed, not-applicable, unknown found among them decides.
3. No component has a range -> affected when one of the cell's packages is installed, else
   unknown (the record cannot tell versions apart, and doctor sees only this Python environment).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from packaging.version import InvalidVersion, Version
from pydantic import ValidationError

from kb.doctor import environment, facts as facts_mod
from kb.doctor import predict as predict_mod
from kb.doctor.facts import Facts
from kb.records.load import not_regular
from kb.records.verdict import TITLES, VERDICTS, _component, _or, _side, judge, ranged  # noqa: F401 (kb doctor's names)
from kb.records.visible import visible
from kb.records.schema import Cell

KEY_PACKAGES = ("torch", "vllm", "sglang", "flashinfer")

# Environment-variable names in record text. VLLM_/SGLANG_ names are all taken; names with other
# prefixes only where written as NAME=value, in an env-var remedy, or listed in kb.doctor.facts.BASE_ENV
# (CUDA_SUCCESS, TRITON_MLA and FLASHINFER_CHECK are identifiers, not variables).
_ENV_WORD = re.compile(r"\b(?:VLLM|SGLANG|SGL|FLASHINFER|TRITON|TORCH|PYTORCH|CUDA|CUDNN|NCCL|NVIDIA)_[A-Z0-9_]*[A-Z0-9]\b")
_ALWAYS_ENV = ("VLLM_", "SGLANG_")


@dataclass(frozen=True)
class Verdict:
    entry: str
    verdict: str
    why: str
    url: str
    cell: Cell

    def as_json(self) -> dict:
        return {"entry": self.entry, "verdict": self.verdict, "why": self.why, "url": self.url}


# --- what the records name -----------------------------------------------------------------------

def record_packages(cells: list[Cell]) -> set[str]:
    return {c.package for cell in cells for c in cell.entry.components}


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _env_names(cells: list[Cell]) -> tuple[set[str], set[str]]:
    """(the variables the records mention, those whose values they compare: written as NAME=value
    or named by an env-var remedy)."""
    names: set[str] = set()
    compared: set[str] = set()
    for cell in cells:
        remedies = {r.what for r in cell.entry.fixes + cell.entry.workarounds if r.kind == "env-var"}
        for text in _strings(cell.entry.model_dump()):
            for match in _ENV_WORD.finditer(text):
                name = match.group(0)
                assigned = text[match.end():match.end() + 1] == "="
                if assigned or text in remedies:
                    compared.add(name)
                if name.startswith(_ALWAYS_ENV) or assigned or text in remedies or name in facts_mod.BASE_ENV:
                    names.add(name)
    return names, compared


def mentioned_env(cells: list[Cell]) -> set[str]:
    """Environment variables the records mention. Only the tests call it (what `_env_names`
    finds, checked against the live records)."""
    return _env_names(cells)[0]


def compared_env(cells: list[Cell]) -> set[str]:
    """Environment variables whose values the records compare (`VLLM_X=1`, an env-var remedy):
    the only ones whose values `kb doctor` reports (kb.doctor.facts.environment). Only the tests
    call it, as a check of `_env_names`."""
    return _env_names(cells)[1]


# --- verdicts ------------------------------------------------------------------------------------

def applies_sentence(entry, name: Callable[[str], str] = lambda p: p) -> str:
    """The conditions of `judge` in plain words; templates/pages/_applies.html says the same."""
    archs = _or(list(entry.hardware.architectures))
    parts = []
    for c in ranged(entry):
        builds = f" or is a {_or(list(c.builds))} build" if c.builds else ""
        if c.affected:
            parts.append(f"{name(c.package)} is in {c.affected}" + (f" (fixed in {c.fixed_in})" if c.fixed_in else "")
                         + builds)
        elif c.seen_failing:
            parts.append(f"{name(c.package)} is in {c.seen_failing} (the versions seen failing)"
                         + (f" (fixed in {c.fixed_in})" if c.fixed_in else "") + builds)
        else:
            parts.append(f"{name(c.package)} is older than {c.fixed_in}, the version that fixes it" + builds)
    if parts:
        return f"Applies when the GPU is {archs} and " + " and ".join(parts) + "."
    packages = [name(p) for p in dict.fromkeys(c.package for c in entry.components)]
    return (f"Applies when the GPU is {archs} and {_or(packages)} is installed; "
            "no affected version range is known, so any installed version counts.")


def verdicts(cells: list[Cell], facts: Facts, site_url: str = "") -> list[Verdict]:
    from kb.records.catalog import Site

    site = Site(cells)
    out = []
    for cell in site.cells:
        verdict, why = judge(cell.entry, facts)
        out.append(Verdict(cell.id, verdict, why, site_url + site.url(cell), cell))
    return out


# --- the environment key -------------------------------------------------------------------------

def _slug(text: str) -> str:
    text = re.sub(r"^nvidia\s+", "", text.strip(), flags=re.I)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "gpu"


def _major_minor(version: str) -> str:
    try:
        return ".".join(str(n) for n in Version(version).release[:2])
    except InvalidVersion:
        return _slug(version)[:12]


def key_facts(facts: Facts) -> dict:
    """The facts the key stands for: GPUs, driver, CUDA and installed package versions."""
    return {
        "gpus": None if facts.gpus is None else sorted([g.name or "", g.compute_capability or ""] for g in facts.gpus),
        "driver_version": facts.driver_version,
        "cuda_driver_version": facts.cuda_driver_version,
        "cuda_runtime_version": facts.cuda_runtime_version,
        "packages": {p: v for p, v in sorted(facts.packages.items()) if v is not None},
    }


def environment_key(facts: Facts) -> str:
    """`<arch>-<gpu>-<stack>-<hash>`: same facts, same key; the hash covers `key_facts`."""
    if facts.gpus is None:
        head = ["unknown-gpu"]
    elif not facts.gpus:
        head = ["nogpu"]
    else:
        groups: dict[tuple[str, str], int] = {}
        for gpu in facts.gpus:
            group = (gpu.architecture or "sm_unknown", _slug(gpu.name or "gpu"))
            groups[group] = groups.get(group, 0) + 1
        head = ["+".join(f"{arch}-{name}" + (f"x{n}" if n > 1 else "") for (arch, name), n in sorted(groups.items()))]
    stack = [f"{p}{_major_minor(v)}" for p in KEY_PACKAGES if (v := facts.packages.get(p))]
    canonical = json.dumps(key_facts(facts), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:10]
    return "-".join(head + stack + [digest])


# --- facts files ---------------------------------------------------------------------------------

class FactsError(Exception):
    """A facts file that cannot be used; the message names the file and the field."""


# A facts file is a few kilobytes and three levels deep ({"facts": {"gpus": [{...}]}} for a
# saved report). The limits refuse what could only be an attack, before anything is built from it.
MAX_FACTS_BYTES = 1024 * 1024
MAX_FACTS_DEPTH = 8
MAX_INT_DIGITS = 20  # 2**64 has 20 digits; every facts number is far below (kb.doctor.facts)
MAX_ERRORS = 20  # validation errors listed; the rest are counted


class _Refused(Exception):
    """Raised from inside json.loads by the hooks below; parse_facts adds the file name."""


def _int(digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > MAX_INT_DIGITS:
        raise _Refused(f"a number has {count:,} digits ({digits[:12]}...); no fact needs more than {MAX_INT_DIGITS}")
    return int(digits)


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Refused(f"the number {visible(text, 40)} is out of range")
    return value


def _constant(name: str):
    raise _Refused(f"{name} is not a number JSON allows")


def _object(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"key {visible(json.dumps(key), 80)} appears twice in one object")
        out[key] = value
    return out


def _depth(value) -> int:
    """Deepest nesting of objects and arrays in `value`, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return visible(out, 200) or "(file)"


def _got(value) -> str:
    """The bad value as JSON (escaped, so it prints as it is written), cut short."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"an array of {len(value)}"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return visible(text, 80)


def _message(error: dict) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown field; see kb doctor --facts-schema"
    if error["type"] == "missing":
        return "required field is missing"
    message = re.sub(r"^Value error, ", "", error["msg"])
    message = re.sub(r"^(Input|String|List|Value|Dictionary|Object) should", "must", message)
    return f"{message} (got {_got(error['input'])})"


def parse_facts(text: str, source: str) -> Facts:
    """Facts from the text of a facts file (or a whole `kb doctor --json` report); FactsError,
    naming `source` and the field, for anything that is not a facts file within the limits."""
    source = visible(source)
    if len(text) > MAX_FACTS_BYTES:
        raise FactsError(f"{source}: the facts file is over {MAX_FACTS_BYTES:,} bytes; a facts file is a few kilobytes")
    too_deep = (f"{source}: (file): objects and arrays are nested more than {MAX_FACTS_DEPTH} deep; "
                "a facts file is flat (see kb doctor --facts-schema)")
    try:
        data = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant,
                          object_pairs_hook=_object)
    except _Refused as exc:
        raise FactsError(f"{source}: not a usable facts file: {exc}") from None
    except RecursionError:  # nested past the interpreter's limit (json.loads recurses)
        raise FactsError(too_deep) from None
    except ValueError as exc:
        line = getattr(exc, "lineno", "?")
        column = getattr(exc, "colno", "?")
        raise FactsError(f"{source}: not valid JSON: {visible(str(getattr(exc, 'msg', exc)), 200)} "
                         f"(line {line}, column {column})") from None
    if _depth(data) > MAX_FACTS_DEPTH:
        raise FactsError(too_deep)
    if isinstance(data, dict) and "facts" in data and "key" in data:
        data = data["facts"]  # a whole `kb doctor --json` report: use its facts
    if not isinstance(data, dict):
        raise FactsError(f"{source}: (file): must be a JSON object of facts; see kb doctor --facts-schema")
    try:
        return Facts.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        lines = [f"{source}: {_loc(e['loc'])}: {_message(e)}" for e in errors[:MAX_ERRORS]]
        if len(errors) > MAX_ERRORS:
            lines.append(f"{source}: ... and {len(errors) - MAX_ERRORS} more problem(s)")
        raise FactsError("\n".join(lines)) from None


def _read_file(path: str, source: str) -> bytes:
    """At most MAX_FACTS_BYTES + 1 bytes of the regular file `path`. Opened without blocking and
    checked on what was opened: a named pipe with no writer, a device or a folder is refused,
    unread, instead of waiting forever (`-` reads standard input, pipes included)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = not_regular(os.fstat(fd).st_mode)
        if kind:
            raise FactsError(f"{visible(source)}: is {kind}, not a regular file; save the facts to a file, or "
                             "pipe them in with --facts -")
        chunks: list[bytes] = []
        left = MAX_FACTS_BYTES + 1
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_facts(path: str, stdin: TextIO) -> Facts:
    """The facts in file `path` (- for `stdin`). Whatever the file holds, the only exception
    that leaves is FactsError: `kb doctor` turns it into exit status 2 and a message."""
    source = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            stream = getattr(stdin, "buffer", stdin)  # bytes where there are: decoding is ours to report
            raw = stream.read(MAX_FACTS_BYTES + 1)
        else:
            raw = _read_file(path, source)
    except OSError as exc:
        raise FactsError(f"{visible(source)}: cannot read the facts file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise FactsError(f"{visible(source)}: the facts file is not UTF-8 text") from None
    if len(raw) > MAX_FACTS_BYTES:
        raise FactsError(f"{visible(source)}: the facts file is over {MAX_FACTS_BYTES:,} bytes; "
                         "a facts file is a few kilobytes")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise FactsError(f"{visible(source)}: the facts file is not UTF-8 text "
                         f"(byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    try:
        return parse_facts(text, source)
    except FactsError:
        raise
    except Exception as exc:  # a case the checks above missed must still not end in a traceback
        raise FactsError(f"{visible(source)}: cannot use the facts file: {type(exc).__name__}: "
                         f"{visible(str(exc), 200)}") from None


# --- the report ----------------------------------------------------------------------------------

def _size(value: int | None, unit: str = "bytes") -> str:
    if value is None:
        return "unknown"
    if unit == "GiB":
        return f"{value / 2**30:.1f} GiB"
    return f"{value:,} bytes"


def _gpu_line(index: int, gpu) -> str:
    cc = f" (compute capability {gpu.compute_capability})" if gpu.compute_capability else ""
    return (f"  GPU {index}: {visible(gpu.name or 'name unknown')}; architecture {gpu.architecture or 'unknown'}{cc}; "
            f"memory {_size(gpu.memory_bytes, 'GiB')}; SMs {gpu.sm_count if gpu.sm_count is not None else 'unknown'}; "
            f"shared memory per SM {_size(gpu.shared_memory_per_sm_bytes)}, "
            f"per block (opt-in) {_size(gpu.shared_memory_per_block_optin_bytes)}")


def summary(facts: Facts, results: list[Verdict], facts_file: str | None = None, command: str = "kb",
            predicted: int | None = None) -> list[str]:
    """The verdict first: how many failures apply and, for each, the Do-now line its card leads with
    (kb.records.state), and how many more the installed libraries predict (`predicted`, None when
    nothing was read; their list follows the details); then which Python environment was judged,
    how it was found, and the others found, each with the command that judges it."""
    from kb.records.state import state

    affected = [r for r in results if r.verdict == "affected"]
    counts = {v: sum(r.verdict == v for r in results) for v in VERDICTS}
    if affected:
        out = [f"{len(affected)} known failure(s) apply to this machine. Do now:"]
        for r in affected:
            out.append(f"  {r.entry}: {visible(state(r.cell.entry).line.text)}")
            out.append(f"    {visible(r.url)}")
    else:
        out = ["No known failure applies to this machine."]
    if predicted:
        out.append(f"{predicted} more failure(s) predicted from the installed libraries and tools: see "
                   "the prediction at the end.")
    out.append(f"  ({len(results)} judged: {counts['affected']} apply, {counts['fixed']} fixed in the installed "
               f"versions, {counts['unknown']} unknown, {counts['not-applicable']} not applicable; details below)")
    env = facts.python_environment
    if env is not None:
        where = f" (environment {visible(env.prefix)})" if env.prefix else ""
        out.append(f"Judged: Python {visible(facts.python or 'of unknown version')} at {visible(env.python)}{where}; "
                   f"how it was found: {visible(env.found_by)}" + (f" (as the facts file {visible(facts_file)} says)"
                                                                    if facts_file else ""))
        if env.others:
            out.append("Also found, not judged:")
            out += [f"  {visible(o.found_by)}: {command} doctor --python {shlex.quote(visible(o.python))}"
                    for o in env.others]
    elif facts_file is not None:
        out.append(f"Judged: the facts in {visible(facts_file)}")
    else:
        out.append(f"Judged: no Python environment (none found): every package is unknown; "
                   f"run {command} doctor --python PATH with the serving environment's interpreter or folder")
    return out


def report(facts: Facts, key: str, results: list[Verdict], packages: set[str], facts_file: str | None = None,
           command: str = "kb", predicted: int | None = None) -> str:
    """The human report: the verdict (`summary`), then the details. Facts strings hold no control
    characters (kb.doctor.facts refuses them in a file and escapes them when probing); they go
    through `visible` all the same, as does all text from the records, since a terminal acts on
    whatever reaches it."""
    out = summary(facts, results, facts_file, command, predicted) + ["", "Details", "",
                                                           "Facts (unknown where a probe could not tell):"]
    if facts.gpus is None:
        out.append("  GPU: unknown")
    elif not facts.gpus:
        out.append("  GPU: none found")
    else:
        out += [_gpu_line(i, gpu) for i, gpu in enumerate(facts.gpus)]
    out.append(f"  NVIDIA driver: {visible(facts.driver_version or 'unknown')}; "
               f"CUDA supported by the driver: {visible(facts.cuda_driver_version or 'unknown')}; "
               f"CUDA of PyTorch: {visible(facts.cuda_runtime_version or 'unknown')}")
    out.append(f"  Python: {visible(facts.python or 'unknown')} on {visible(facts.platform or 'unknown')}")
    out.append("  Packages:")
    for package in sorted(set(facts.packages) | packages):
        if package not in facts.packages:
            shown = "unknown"
        else:
            shown = facts.packages[package] or "not installed"
        out.append(f"    {package}: {visible(shown)}")
    set_vars = {k: v for k, v in facts.env.items() if v is not None}
    unset = sorted(k for k, v in facts.env.items() if v is None)
    out.append("  Environment:" + ("" if set_vars else " none of the variables the cells mention is set"))
    out += [f"    {k} is set (its value is not reported: no cell compares it)" if v == facts_mod.SET else
            f"    {k}={visible(v)}" for k, v in sorted(set_vars.items())]
    if unset:
        out.append(f"    not set: {', '.join(unset)}")
    for note in facts.notes:
        out.append(f"  Note: {visible(note)}")
    out += ["", f"Environment key (paste it into bug reports): {key}", ""]
    if facts.gpus == []:
        out += ["No NVIDIA GPU here, so no cell of this index applies to this machine.", ""]
    for verdict in VERDICTS:
        group = [r for r in results if r.verdict == verdict]
        out.append(f"{TITLES[verdict]} ({len(group)})" + (":" if group else ""))
        for r in group:
            if verdict == "not-applicable":
                out.append(f"  {r.entry}: {visible(r.why)}")
                continue
            out.append(f"  {r.entry}  [{visible(r.url)}]")
            out.append(f"    why: {visible(r.why)}")
            if verdict == "affected":
                entry = r.cell.entry
                for label, remedies in (("fix", entry.fixes), ("workaround", entry.workarounds)):
                    for remedy in remedies:
                        applies = ""
                        if remedy.applies:
                            applies = f" (for {remedy.package} {remedy.applies})" if remedy.package else f" (for {remedy.applies})"
                        out.append(f"    {label}: {visible(remedy.what)}{visible(applies)}; "
                                   f"source {visible(str(remedy.source))}, read {remedy.as_of}")
                if not entry.fixes and not entry.workarounds:
                    out.append("    no fix or workaround is known yet")
        out.append("")
    affected = sum(r.verdict == "affected" for r in results)
    out.append(f"{len(results)} cell(s) judged: {affected} affected. URLs are relative to the site root.")
    return "\n".join(out) + "\n"


def main(entries: Path, facts_path: str | None = None, as_json: bool = False, facts_schema: bool = False,
         timeout: float = facts_mod.DEFAULT_TIMEOUT, site_url: str | None = None, python: str | None = None,
         command: str = "kb", stdout: TextIO | None = None, stderr: TextIO | None = None,
         stdin: TextIO | None = None, target: str | None = None, site_packages: list[str] | None = None,
         fail_on: str | None = None) -> int:
    """`kb doctor`: 0 when the report is printed, 1 when `fail_on` trips (see `_tripped`), 2 when the
    input cannot be used (kb.cli.DOCTOR_EXIT)."""
    from kb.records import lint

    stdout, stderr, stdin = stdout or sys.stdout, stderr or sys.stderr, stdin or sys.stdin
    if facts_schema:
        stdout.write(json.dumps(facts_mod.json_schema(), indent=2, sort_keys=True) + "\n")
        return 0
    if python is not None and facts_path is not None:
        print("kb doctor: --python and --facts exclude each other: --python judges a Python environment of this "
              "machine, --facts judges the facts a file gives; pass one", file=stderr)
        return 2
    try:
        chosen = predict_mod.parse_target(target) if target is not None else None
    except predict_mod.TargetError as exc:
        print(f"kb doctor: {exc}", file=stderr)
        return 2
    if not entries.is_dir():
        print(f"kb doctor: entries folder {entries} does not exist", file=stderr)
        return 2
    result = lint.cached_check([entries])
    if result.problems:
        for problem in result.problems:
            print(problem.format(), file=stderr)
        print("kb doctor: the entries have problems; run `kb check`", file=stderr)
        return 2
    cells = result.cells
    packages = record_packages(cells)
    judged = None
    if facts_path is not None:
        try:
            facts = read_facts(facts_path, stdin)
        except FactsError as exc:
            print(f"kb doctor: bad facts file\n{exc}", file=stderr)
            return 2
    else:
        wanted = facts_mod.distributions(set(facts_mod.BASE_PACKAGES) | packages)
        try:
            judged, notes = environment.judge(python, wanted, timeout)
        except environment.PythonError as exc:
            print(f"kb doctor: --python {exc}", file=stderr)
            return 2
        names, compared = _env_names(cells)
        facts = facts_mod.probe(packages, names, timeout=timeout, env_compared=compared, judged=judged,
                                judged_notes=notes)
    if chosen is not None:
        facts = _on_target(facts, chosen)
    # The CUDA libraries are read where the judged environment keeps its packages (--site-packages
    # overrides); a facts file describes another machine, whose folders are not here.
    sites = site_packages or (judged.sites if facts_path is None and judged is not None else None)
    prediction = _predict(cells, facts, chosen, sites, facts_path is not None and not site_packages)
    key = environment_key(facts)
    base = site_url.rstrip("/") + "/" if site_url else ""
    results = verdicts(cells, facts, base)
    code = 1 if _tripped(fail_on, results, prediction) else 0
    if as_json:
        out = {"facts": facts.model_dump(mode="json"), "key": key, "cells": [r.as_json() for r in results]}
        if prediction is not None:
            out["prediction"] = prediction.as_json()
        # ensure_ascii=False is safe here: json.dumps escapes C0 controls, and the characters it
        # leaves raw (DEL, C1, bidi controls, U+2028/2029) cannot be in facts (kb.doctor.facts refuses
        # them) nor in record text (KB031).
        stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    else:
        shown = None if facts_path is None else ("<stdin>" if facts_path == "-" else facts_path)
        stdout.write(report(facts, key, results, packages, shown, command,
                            predicted=len(prediction.failures) if prediction is not None else None))
        if prediction is not None:
            stdout.write("\n" + "\n".join(predict_mod.report(prediction)) + "\n")
    return code


# --- predictions and --target (kb.doctor.predict) ------------------------------------------------

def _on_target(facts: Facts, target: "predict_mod.Target") -> Facts:
    """The facts with the GPU replaced by `target`: the cells are judged for that GPU."""
    gpu = facts_mod.Gpu(name=visible(target.name, facts_mod.SHORT), compute_capability=target.capability)
    note = f"GPU set by --target {visible(target.name, 80)} (compute capability {target.capability}); not probed"
    return facts.model_copy(update={"gpus": [gpu], "notes": [*facts.notes, note][:facts_mod.MAX_NOTES]})


def _predict(cells, facts: Facts, target, sites: list[str] | None, nothing_here: bool):
    """The prediction for `target`, else for the first GPU of known capability, from the libraries
    under `sites` (none found: no library is read). None when there is nothing of this machine to
    read (a facts file without --site-packages)."""
    if nothing_here:
        return None
    if target is None:
        known = [g for g in facts.gpus or [] if g.compute_capability]
        target = (predict_mod.Target(known[0].name or known[0].architecture,
                                     *(int(p) for p in known[0].compute_capability.split(".")),
                                     smem_per_block=known[0].shared_memory_per_block_optin_bytes)
                  if known else None)
    return predict_mod.predict(cells, [str(Path(d)) for d in sites or []], target)


def _tripped(fail_on: str | None, results: list[Verdict], prediction) -> bool:
    """--fail-on applies: a cell is affected. --fail-on predicted: that, or a predicted failure."""
    if fail_on is None:
        return False
    if any(r.verdict == "affected" for r in results):
        return True
    return fail_on == "predicted" and prediction is not None and bool(prediction.failures)
