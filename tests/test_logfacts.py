"""Facts from a log (kb.triage.logfacts): the same answers in Python and in the triage page (the
vectors run in kb-logfacts.js under node: tests/test_twins_node.py)."""

from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT
from kb.triage import logfacts

VECTORS = json.loads((ROOT / "tests" / "vectors" / "logfacts.json").read_text(encoding="utf-8"))["vectors"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_logfacts_vectors(vector):
    assert logfacts.read(vector["log"]).as_json() == vector["facts"]


@pytest.mark.parametrize("rule", logfacts.RULES, ids=lambda r: r[0])
def test_each_rule_reads_its_example(rule):
    _, _, pattern, example = rule
    assert re.search(pattern, example, re.I)


def test_facts_convert_to_kb_doctors_facts():
    from kb.doctor.facts import Facts

    facts = Facts(**logfacts.read(VECTORS[2]["log"]).as_facts())
    assert [g.architecture for g in facts.gpus] == ["sm_70"]
    assert facts.packages["torch"] == "2.5.1+cu118"


def test_a_list_of_architectures_names_no_gpu():
    facts = logfacts.read(["The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_80 sm_90."])
    assert facts.gpus is None


def test_reading_bytes_reads_only_keyword_lines_to_the_same_facts():
    """`kb match` reads a log's facts from bytes, only on lines holding a KEYWORDS word: the same
    facts as every line read, on every vector and corpus log (CRLF and a long s too)."""
    texts = [path.read_bytes() for path in sorted((ROOT / "tests" / "corpus" / "logs").iterdir())]
    texts += ["\n".join(v["log"]).encode() for v in VECTORS]
    texts += ["x\r\n| 0  NVIDIA GeForce RTX 5090   On |\r\nvllm 0.11.0\r\n\u017fm_120 here".encode(), b"", b"\n\nsm_90\n"]
    for data in texts:
        lines = [line.removesuffix("\r") for line in data.decode("utf-8", errors="replace").split("\n")]
        assert logfacts.read_bytes(data).as_json() == logfacts.read(lines).as_json(), data[:80]
    assert logfacts.read_bytes(b"INFO step 1\nINFO step 2\nvLLM API server version 0.11.0\n").lines == {"packages.vllm": 3}


def test_a_number_in_the_entrys_own_literal_is_not_the_gpu():
    """`sm75` in FlashInfer's "requires GPUs with sm75 or higher" (the title of vllm#42393, an RTX
    5090) names what the code requires: on a line that signature matched it is no GPU, so the entry
    (sm_120) is not ruled out; the same number elsewhere in the log still is one, and a number of the
    cell's own family (which varies with the GPU that printed it) is never the literal's."""
    import io

    from kb.records import lint
    from kb.triage import match, rules

    rule_list = rules.rules(lint.check([ROOT / "kb" / "entries"]).cells)
    matcher = match.Matcher(rule_list)
    line = "RuntimeError: FlashInfer requires GPUs with sm75 or higher"
    assert logfacts.read([line]).as_json()["gpus"][0]["compute_capability"] == "7.5"  # read alone, it is one

    def verdicts(log: str) -> dict[str, str]:
        data = log.encode()
        hits, _ = match.decide(matcher.scan(io.BytesIO(data)), rules.scopes(rule_list), match.read_facts(io.BytesIO(data)))
        return {hit.entry: hit.verdict for hit in hits}

    entry = "flashinfer-jit-sm12x-arch-dropped-cuda-below-12-9"
    assert verdicts(line)[entry] != "ruled-out"
    assert verdicts(f"building for sm_90\n{line}")[entry] == "ruled-out"  # a number the log shows elsewhere
    assert logfacts.own_capabilities(["requires GPUs with sm75 or higher"]) == ("7.5",)
    assert logfacts.own_capabilities(["Value 'sm_120a' is not defined"], {12: (0, 1)}) == ()
    assert logfacts.own_capabilities(["Value 'sm_120a' is not defined"]) == ("12.0",)


def test_a_frame_names_the_package_as_pip_does():
    line = '  File "/usr/lib/python3/dist-packages/sgl_kernel/elementwise.py", line 41, in rmsnorm'
    assert logfacts.read([line]).lines == {"frames.sgl-kernel": 1}
    assert logfacts.read(["/opt/venv/lib/site-packages.txt/vllm/x.py"]).lines == {}  # not a packages folder
