"""Families (kb/families/, kb.records.families): their lint, the entry field that names one (KB092),
and the family answer of `kb match` (kb.triage.familyanswer): for a log no entry matches, and first
for one whose entries match only generic lines; never for another GPU's log."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from kb.records import families, lint, patterns
from kb.triage import familyanswer, match

from conftest import FIXTURES, ROOT
from family_lines import family_only, orphan_lines

GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"



def test_the_shipped_families_are_clean_and_cover_the_survey_families():
    records, problems = families.load_families(families.HERE)
    assert problems == []
    assert {r.id for r in records} == {"no-code-for-gpu", "toolchain-too-old", "hopper-or-datacenter-kernel",
                                       "shared-memory-limit", "source-build-arch-list", "unsupported-on-sm12x",
                                       "gb10-unified-memory", "driver-platform"}


def test_a_bad_family_file_is_reported_with_file_line_and_field(tmp_path):
    folder = tmp_path / "families"
    folder.mkdir()
    text = (families.HERE / "no-code-for-gpu.yaml").read_text(encoding="utf-8")
    text = text.replace("    match: \"with CUDA capability sm_{int} is not compatible",
                        "    match: \"with CUDA capability sm_{int} is not compatable")
    text = text.replace("  - https://github.com/Comfy-Org/ComfyUI/issues/7677\n", "  - http://example.org/x\n", 1)
    (folder / "no-code-for-gpu.yaml").write_text(text + "colour: red\n", encoding="utf-8")
    (folder / "Bad_Name.yaml").write_text("title: x\n", encoding="utf-8")
    _, problems = families.load_families(folder)
    shown = [f"{p.path}:{p.line}: {p.loc}: {p.message} [{p.code}]" for p in problems]
    lines = text.splitlines()
    sources_line = lines.index("  - http://example.org/x") + 1
    match_line = next(i for i, l in enumerate(lines, 1) if "is not compatable" in l)
    assert shown[0].startswith(f"{folder / 'Bad_Name.yaml'}:1: (file name): ")
    assert any(s.startswith(f"{folder / 'no-code-for-gpu.yaml'}:{sources_line}: sources[0]: must be an https://")
               and s.endswith("[KB033]") for s in shown), shown
    assert any(s.startswith(f"{folder / 'no-code-for-gpu.yaml'}:{match_line}: patterns[1].match: the pattern does "
                            "not match the signature's own literal text") and s.endswith("[KB045]") for s in shown), shown
    assert any(": colour: unknown field" in s for s in shown), shown


def test_an_unknown_family_id_is_an_error_naming_the_known_ones(tmp_path):
    text = GOOD.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    at = next(i for i, l in enumerate(lines) if l.startswith("family:"))
    lines[at] = "family: no-kernel-for-gpu\n"
    path = tmp_path / GOOD.name
    path.write_text("".join(lines), encoding="utf-8")
    problems = lint.check([path]).problems
    assert [(p.path, p.line, p.loc, p.message, p.code, p.got) for p in problems] == [
        (path, at + 1, "family", f"names no family; use one of {', '.join(families.known_ids(families.HERE))}",
         "KB092", "no-kernel-for-gpu")]
    lines[at] = "family: no-code-for-gpu\n"
    path.write_text("".join(lines), encoding="utf-8")
    assert lint.check([path]).problems == []


def _match(tmp_path, text: str, *options: str):
    log = tmp_path / "log.txt"
    log.write_text(text, encoding="utf-8")
    return subprocess.run([str(ROOT / ".venv" / "bin" / "kb"), "match", *options, str(log)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_a_line_only_a_family_knows_gets_the_family_answer_text_and_json(tmp_path):
    line = family_only()
    log = f"Running on NVIDIA GeForce RTX 5090\n{line}\n"
    done = _match(tmp_path, log, "--json")
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout) == [{
        "answer": "family", "entry": None, "family": "no-code-for-gpu", "title": "The binary has no code for your GPU",
        "url": "families/no-code-for-gpu/", "lines": [2], "signature": line,
        "check": "python -c \"import torch; print(torch.cuda.get_arch_list())\"",
        "fix": next(r for r in families.load_families(families.HERE)[0] if r.id == "no-code-for-gpu").family.fix}]
    text = _match(tmp_path, log).stdout
    assert text.startswith("no known failure matches this log\n\nFamily answer (no entry matches;")
    assert "[no-code-for-gpu]\n   families/no-code-for-gpu/\n" in text
    assert f"   line 2: {line}\n" in text


TORCH_LINE = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
TORCH_WARNING = ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
                 "installation.")


def test_a_log_an_entry_matches_by_a_non_generic_line_gets_no_family_answer(tmp_path):
    found = json.loads(_match(tmp_path, f"{TORCH_WARNING}\n{TORCH_LINE}\n", "--json").stdout)
    assert found[0]["entry"] == "torch-sm120-not-compatible-pytorch-install" and not found[0]["generic_only"]
    assert all(hit.get("answer") is None and hit["entry"] for hit in found)


def test_a_version_that_decides_keeps_the_entry_first_without_a_family_answer(tmp_path):
    """vLLM 0.9.0 is within the vLLM entry's affected range (<0.9.2): the version decides."""
    log = f"NVIDIA GeForce RTX 5090\nvLLM API server version 0.9.0\n{TORCH_LINE}\n"
    found = json.loads(_match(tmp_path, log, "--json").stdout)
    assert found[0]["entry"] == "vllm-no-kernel-image-sm120-build" and found[0]["verdict"] == "applies"
    assert all(hit.get("answer") is None for hit in found)


def test_entries_that_match_only_a_generic_line_come_below_the_family_answer(tmp_path):
    """Issue 35 item 2: every entry a log matches rests on the generic "no kernel image" line and
    nothing decides, so the family answer comes first, marked, and the entries follow as ones
    that also print the line; the text output says both."""
    log = f"NVIDIA GeForce RTX 5090\n{TORCH_LINE}\n"
    done = _match(tmp_path, log, "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [(h.get("answer"), h["entry"] or h["family"]) for h in found][0] == ("family", "no-code-for-gpu")
    assert found[0]["lines"] == [2] and len(found) > 2
    entries = found[1:]
    assert {h["entry"] for h in entries} >= {"torch-sm120-not-compatible-pytorch-install", "vllm-no-kernel-image-sm120-build"}
    assert all(h["answer"] == familyanswer.ALSO and h["generic_only"] for h in entries)
    text = _match(tmp_path, log).stdout
    assert text.startswith("Family answer (every known failure that matches rests only on a generic line")
    also = text.index("\nAlso prints this line (")
    assert text.index("[no-code-for-gpu]") < also < text.index("[torch-sm120-not-compatible-pytorch-install]")


def test_no_family_answer_for_a_log_of_another_gpu(tmp_path):
    """The families are about sm_120 and sm_121: a log whose GPU is an H100 gets none (issue 35 item 2)."""
    done = _match(tmp_path, f"GPU 0: NVIDIA H100 80GB HBM3\n{family_only()}\n", "--json")
    assert done.returncode == 1 and json.loads(done.stdout) == []


def test_a_capability_placeholder_of_a_family_pattern_stands_for_sm_120_and_sm_121_only():
    """`sm_{int}` in a family pattern compiles to 120 or 121 (the whole number), so torch's warning
    for an H100 (sm_90) or a B200 (sm_100) is no family line, as in the triage page, which runs the
    same expression (tests/vectors/match.json: family-none-for-the-sm90-warning)."""
    records, _ = families.load_families(families.HERE)
    rule_list = familyanswer.rules(records)
    warning = "NVIDIA {} with CUDA capability sm_{} is not compatible with the current PyTorch installation."
    shown = {(gpu, sm): [r.entry for r in match.Matcher(rule_list).match_line(warning.format(gpu, sm))]
             for gpu, sm in (("GeForce RTX 5090", 120), ("GB10", 121), ("H100 PCIe", 90), ("B200", 100),
                             ("GeForce RTX 5090", 1200), ("GB10", 12))}
    assert shown == {("GeForce RTX 5090", 120): ["no-code-for-gpu"], ("GB10", 121): ["no-code-for-gpu"],
                     ("H100 PCIe", 90): [], ("B200", 100): [], ("GeForce RTX 5090", 1200): [], ("GB10", 12): []}
    capability = "No compiled cutlass_scaled_mm for CUDA device capability: {}"
    assert [[r.entry for r in match.Matcher(rule_list).match_line(capability.format(n))] for n in (120, 121, 90, 100)] \
        == [["source-build-arch-list"], ["source-build-arch-list"], [], []]
    # An entry's placeholder is not restricted: `only` is the families' alone.
    assert patterns.matches(patterns.compile_signature("x", "with CUDA capability sm_{int} is not compatible"),
                            warning.format("H100", 90))


def test_the_driver_and_runtime_names_of_no_kernel_image_are_family_lines():
    """CuPy's driver-API name (xsuite#684) and the runtime-API name torch points to (Protenix#205)."""
    records, _ = families.load_families(families.HERE)
    matcher = match.Matcher(familyanswer.rules(records))
    for line in ("`CUDADriverError: CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for execution on the "
                 "device.`",
                 "Search for `cudaErrorNoKernelImageForDevice' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
                 "group__CUDART__TYPES.html for more information."):
        assert [r.entry for r in matcher.match_line(line)] == ["no-code-for-gpu"], line


def test_a_warm_family_answer_comes_from_the_cache_without_the_records_model(tmp_path):
    """The family answer of a log no entry matches costs a warm `kb match` no import of pydantic or
    of the family records' model (kb.triage.familyanswer.load, cached like the entries' rules),
    and gives the same answer as the first run, which compiled the family files."""
    log = tmp_path / "log.txt"
    log.write_text(f"Running on NVIDIA GeForce RTX 5090\n{family_only()}\n", encoding="utf-8")
    code = ("import sys, json; from pathlib import Path; from kb.triage import run; "
            f"found = run.triage(Path({str(ROOT / 'kb' / 'entries')!r}), open({str(log)!r}, 'rb'), request=False); "
            "print(json.dumps([[h.as_json() for h in found.families], len(found.hits), 'pydantic' in sys.modules, "
            "'kb.records.families' in sys.modules]))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
            for _ in range(2)]
    first, second = (json.loads(done.stdout) for done in runs)
    assert first[:2] == second[:2] and [h["family"] for h in first[0]] == ["no-code-for-gpu"] and first[1] == 0
    assert second[2:] == [False, False]


ORPHANS = list(orphan_lines())


def test_some_family_lines_have_no_entry():
    """The families exist for failures the index has no entry for; if every pattern's line were an
    entry's, the answer below would go untested."""
    assert ORPHANS, "every family pattern is some entry's line: give a family a line no entry prints"


@pytest.mark.parametrize("family, line", ORPHANS, ids=[f"{f}:{l[:40]}" for f, l in ORPHANS])
def test_a_line_only_its_family_knows_gets_the_family_answer_alone(family, line):
    from kb.triage import run

    gpu = "NVIDIA GB10" if family == "gb10-unified-memory" or "121" in line else "NVIDIA GeForce RTX 5090"
    found = run.triage(ROOT / "kb" / "entries", io.BytesIO(f"GPU 0: {gpu}\n{line}\n".encode("utf-8")), request=False)
    assert found.hits == [] and [h.family for h in found.families][:1] == [family], (line, found.families)
