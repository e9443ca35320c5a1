"""The browser twins, under node, on every shared vector (tests/vectors/*.json): kb-logfacts,
kb-wrapped, kb-evidence, kb-match (its family answer too), kb-request and kb-verdict.js give what
kb/triage/*.py and kb/records/verdict.py give, on the tables the build exports (made here in-process, no site build).

One node process runs every vector file; node is the one the pinned playwright wheel ships. The
pages themselves are tested once each in Chromium (tests/test_triage_page.py, tests/test_stack.py),
end to end through their forms."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import playwright
import pytest

from conftest import ROOT
from kb.records import verdict
from kb.triage import evidence, familyanswer, logfacts, match, request, rules, run

NODE = Path(playwright.__file__).parent / "driver" / "node"
ASSETS = ROOT / "site_src" / "assets"
# The order the triage page loads them in (templates/theme/main.html); kb-triage.js is the page alone.
SCRIPTS = ["kb-normalise", "kb-verdict", "kb-logfacts", "kb-wrapped", "kb-evidence", "kb-match", "kb-request"]
VECTORS = {name: json.loads((ROOT / "tests" / "vectors" / f"{name}.json").read_text(encoding="utf-8"))
           for name in ("logfacts", "match", "request", "verdict")}
ENTRIES = ROOT / "kb" / "entries"
MATCH_KEYS = ("entry", "lines", "signature", "url", "verdict", "why", "generic_only")


def _python_match(log: str) -> tuple[list[dict], list[dict]]:
    """`kb match --json` in-process: the same pipeline the command runs (kb.triage.run): the
    entries' hits, and the family answer (kb.triage.familyanswer.wanted: alone when no entry
    matched, first when every entry matched only generic lines and nothing decides)."""
    found = run.triage(ENTRIES, io.BytesIO(log.encode("utf-8")), request=False)
    return [hit.as_json() for hit in found.hits], [family.as_json() for family in found.families]


def script_paths() -> list[str]:
    return [str(ASSETS / f"{name}.js") for name in SCRIPTS]


def patterns_data() -> dict:
    """triage/patterns.json as the build writes it for the live entries (the parts the engines read)."""
    rule_list, problems = rules.load_rules(ENTRIES)
    assert problems == []
    return run.patterns(rule_list, evidence.load_rules(ENTRIES), familyanswer.load(ENTRIES))


@pytest.fixture(scope="module")
def twins():
    """Python's answers and node's, on every vector, from one node run."""
    stdin = {"assets": script_paths(),
             "data": {"patterns": patterns_data(), "stack": {"verdict": verdict.export()}}, "vectors": VECTORS}
    done = subprocess.run([str(NODE), str(ROOT / "tests" / "twins" / "run.js")], input=json.dumps(stdin),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"node failed:\n{done.stderr}"
    logs = {v["name"]: "\n".join(v["log"]) for v in VECTORS["match"]["vectors"]}
    python = {name: _python_match(log) for name, log in logs.items()}
    return json.loads(done.stdout), python


def _mismatches(pairs) -> str:
    """Every (name, expected, got) that differ, one block each, for the failure message."""
    shown = [f"{name}:\n  expected {expected!r}\n  got      {got!r}" for name, expected, got in pairs if expected != got]
    return f"{len(shown)} mismatch(es):\n" + "\n".join(shown) if shown else ""


def test_every_vector_file_agrees(twins):
    node, python = twins
    pairs = []
    for vector, got in zip(VECTORS["logfacts"]["vectors"], node["logfacts"], strict=True):
        pairs.append((f"logfacts {vector['name']}", vector["facts"], got))
        pairs.append((f"logfacts {vector['name']} (Python)", vector["facts"], logfacts.read(vector["log"]).as_json()))
    for vector, got, families in zip(VECTORS["match"]["vectors"], node["match"], node["families"], strict=True):
        expected, expected_families = python[vector["name"]]
        # The family answer: Python's and node's alike, and the vector's own (none unless it says).
        pairs.append((f"match {vector['name']} family answer", expected_families, families))
        pairs.append((f"match {vector['name']} families (the vector's own)", vector.get("families", []),
                      [f["family"] for f in families]))
        pairs.append((f"match {vector['name']}", [[h[k] for k in MATCH_KEYS] for h in expected],
                      [[h[k] for k in MATCH_KEYS] for h in got]))
        pairs.append((f"match {vector['name']} scores", [round(h["score"], 6) for h in expected],
                      [round(h["score"], 6) for h in got]))
        found = [h["entry"] for h in got]
        pairs.append((f"match {vector['name']} (the vector's own first, includes, excludes)",
                      [vector["first"], True, True],
                      [found[0] if found else None, set(vector["includes"]) <= set(found),
                       not set(vector["excludes"]) & set(found)]))
    for vector, got in zip(VECTORS["match"]["score"], node["score"], strict=True):
        python_score = match.signature_score(dict(vector["signatures"]),
                                             {text: set(lines) for text, lines in vector["found"].items()})
        pairs.append((f"score {vector['name']}", vector["score"], got))
        pairs.append((f"score {vector['name']} (Python)", vector["score"], python_score))
    for vector, got in zip(VECTORS["request"]["vectors"], node["request"], strict=True):
        made = request.new_failure(vector["log"])
        pairs.append((f"request {vector['name']}", {"title": made.title, "text": made.text},
                      {"title": got["title"], "text": got["text"]}))
        pairs.append((f"request {vector['name']} (the vector's title and lines, the issue link's fields)",
                      [vector["title"], "\n".join(vector["lines"]), ["template", "title", "error-lines", "environment",
                                                                     "what-you-ran"]],
                      [got["fields"]["title"], got["fields"]["error-lines"], list(got["fields"])]))
    data = VECTORS["verdict"]
    for vector, got in zip(data["vectors"], node["verdict"], strict=True):
        pairs.append((f"verdict {vector['name']}", [vector["verdict"], vector["why"]], got))
    pairs.append(("verdict rank order", data["rank"]["order"], node["rank"]))
    for vector, got in zip(data["stack"], node["stack"], strict=True):
        pairs.append((f"stack {vector['name']}", [vector["verdict"], vector["why"]], got))
    # The sentence for a GPU the index does not cover, and the hint to add `pip list` (issue 37 item 6).
    for vector, got in zip(data["scope"], node["scope"], strict=True):
        pairs.append((f"scope {vector['name']}", vector["says"], got))
        pairs.append((f"scope {vector['name']} (Python)", vector["says"], verdict.out_of_scope(vector["gpus"])))
    for vector, got in zip(data["pip"], node["pip"], strict=True):
        pairs.append((f"pip {vector['name']}", vector["says"], got))
        pairs.append((f"pip {vector['name']} (Python)", vector["says"],
                      verdict.undecided_versions(vector["hits"], vector["facts"])))
    if problems := _mismatches(pairs):
        pytest.fail(problems, pytrace=False)
    assert len(pairs) >= sum(len(v.get("vectors", [])) for v in VECTORS.values())
