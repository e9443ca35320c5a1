"""Regenerate tests/fixtures/bad/ from the canonical good entry.

Each case breaks one thing. The expected line is found from a marker in the written file (not
from running the linter), so the corpus pins behaviour instead of recording it.
Run: .venv/bin/python tests/make_bad_corpus.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
GOOD = (HERE / "fixtures/good/mla-decode-fp8-kv-triton-shared-memory.yaml").read_text(encoding="utf-8")
OUT = HERE / "fixtures/bad"
SIG = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376"


TAB_SIG = SIG.replace(", Hardware", ",\\tHardware")


def sub(old: str, new: str, count: int = 1):
    def apply(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, count)
    return apply


def append(extra: str):
    return lambda text: text + extra


# name: (transform, code, field, marker for the line; None marker -> line 1)
CASES = {
    "yaml-syntax": (sub("symptoms: [crash]", "symptoms: [crash"), "KB003", "(file)", "status:"),
    "top-level-list": (lambda t: "- title: a\n- title: b\n", "KB004", "(file)", None),
    "empty-file": (lambda t: "", "KB004", "(file)", None),
    "not-utf8": (sub("title: MLA decode", "title: MLA \udcff decode"), "KB001", "(file)", "title:"),
    "bom": (lambda t: "\ufeff" + t, "KB002", "(file)", None),
    "duplicate-key": (sub("symptoms: [crash]", "symptoms: [crash]\ntitle: Again"), "KB005", "title", "title: Again"),
    "python-object-tag": (sub("symptoms: [crash]", "symptoms: !!python/object/apply:os.system [\"true\"]"),
                          "KB006", "symptoms", "symptoms:"),
    "custom-tag": (sub("state: fix-proposed", "state: !state fix-proposed"), "KB006", "status.state", "state:"),
    "billion-laughs": (append("lol1: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
                              "lol2: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                              "lol3: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"), "KB007", "(file)", "lol1:"),
    "deep-nesting": (append("deep: " + "[" * 40 + "]" * 40 + "\n"), "KB008", "(file)", "deep:"),
    "giant-file": (append("padding: \"" + "x" * (1024 * 1024) + "\"\n"), "KB009", "(file)", None),
    "giant-title": (sub("title: MLA decode", "title: " + "very " * 100 + "MLA decode"), "KB024", "title", "title:"),
    "id-inside": (sub("title: MLA", "id: mla-decode\ntitle: MLA"), "KB011", "id", "id:"),
    "missing-title": (sub("title: MLA decode with an fp8 KV cache needs 102,400 bytes of shared memory on a "
                          "101,376-byte card\n", ""), "KB020", "title", "summary:"),
    "missing-status-source": (sub("  source: https://github.com/vllm-project/vllm/pull/54013\nsignatures:",
                                  "signatures:"), "KB020", "status.source", "status:"),
    "unknown-field": (sub("symptoms: [crash]", "symptoms: [crash]\nseverity: high"), "KB021", "severity", "severity:"),
    "unknown-nested-field": (sub("    kind: exception", "    kind: exception\n    regex: '.*'"),
                             "KB021", "signatures[0].regex", "regex:"),
    "symptoms-not-list": (sub("symptoms: [crash]", "symptoms: crash"), "KB022", "symptoms", "symptoms:"),
    "value-as-string": (sub("    value: 102400", "    value: '102400'"), "KB022", "measurements[0].value", "value: '102400'"),
    "published-as-number": (sub("published: 2026-12-02", "published: 20261202"), "KB022", "published", "published:"),
    "status-not-a-choice": (sub("state: fix-proposed", "state: fixed"), "KB023", "status.state", "state: fixed"),
    "signature-kind": (sub("    kind: exception", "    kind: error"), "KB023", "signatures[0].kind", "kind: error"),
    "arch-spelling": (sub("architectures: [sm_120, sm_121]", "architectures: [sm120, sm_121]"),
                      "KB023", "hardware.architectures[0]", "architectures:"),
    "blank-title": (sub("title: MLA decode with an fp8 KV cache needs 102,400 bytes of shared memory on a "
                        "101,376-byte card", "title: '   '"), "KB025", "title", "title:"),
    "blank-signature": (sub(f'  - text: "{SIG}"', '  - text: " "'), "KB025", "signatures[0].text", "- text:"),
    "value-and-series": (sub("    value: 102400\n", "    value: 102400\n    series:\n      x: n\n      rows:\n"
                             "        - {x: 1, value: 1}\n        - {x: 2, value: 2}\n"),
                         "KB027", "measurements[0]", "- quantity: Shared memory needed by the decode kernel, fp8"),
    "issue-merged": (sub("    state: open\n    as_of: 2026-09\n  - kind: pr", "    state: merged\n    as_of: 2026-09\n  - kind: pr"),
                     "KB028", "upstream[0].state", "state: merged"),
    "signature-tab": (sub(f'  - text: "{SIG}"', f'  - text: "{TAB_SIG}"'),
                      "KB030", "signatures[0].text", "- text:"),
    "signature-trailing-space": (sub(f'  - text: "{SIG}"', f'  - text: "{SIG} "'), "KB030", "signatures[0].text", "- text:"),
    "signature-two-lines": (sub(f'  - text: "{SIG}"', f'  - text: "{SIG}\\nTraceback"'), "KB030",
                            "signatures[0].text", "- text:"),
    "signature-control-char": (sub(f'  - text: "{SIG}"', f'  - text: "{SIG}\\a"'), "KB031", "signatures[0].text", "- text:"),
    "signature-bidi": (sub(f'  - text: "{SIG}"', f'  - text: "{SIG[:20]}\\u202e{SIG[20:]}"'), "KB031",
                       "signatures[0].text", "- text:"),
    "duplicate-signature": (sub("  - text: _decode_grouped_att_m_fwd shared memory", f'  - text: "{SIG}"'),
                            "KB032", "signatures[1].text", '  - text: "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376"\n    kind: symptom'),
    "http-link": (sub("    url: https://github.com/vllm-project/vllm/issues/53748",
                      "    url: http://github.com/vllm-project/vllm/issues/53748"), "KB033", "upstream[0].url", "url: http://"),
    "javascript-link": (sub("  source: https://github.com/vllm-project/vllm/pull/54013\nsignatures:",
                            "  source: javascript:alert(1)\nsignatures:"), "KB033", "status.source", "javascript:"),
    "unknown-host-link": (sub("    source: https://github.com/vllm-project/vllm/issues/53748",
                              "    source: https://example.com/vllm/issues/53748"), "KB033",
                          "workarounds[0].source", "example.com"),
    "issue-kind-with-pr-url": (sub("    url: https://github.com/vllm-project/vllm/issues/53748",
                                   "    url: https://github.com/vllm-project/vllm/pull/53748"), "KB033",
                               "upstream[0].url", "pull/53748"),
    "future-date": (sub("updated: 2026-12-02", "updated: 2099-01-01"), "KB034", "updated", "updated:"),
    "impossible-date": (sub("published: 2026-12-02", "published: 2026-02-30"), "KB034", "published", "published:"),
    "bad-specifier": (sub("    role: raises\n", "    role: raises\n    affected: '~~3.6'\n"), "KB035",
                      "components[1].affected", "affected:"),
    "bad-version": (sub("    role: raises\n", "    role: raises\n    fixed_in: latest\n"), "KB035",
                    "components[1].fixed_in", "fixed_in:"),
    "related-unknown": (sub("related: []", "related:\n  - id: no-such-cell\n    how: look-alike"), "KB036",
                        "related[0].id", "- id: no-such-cell"),
    "related-self": (sub("related: []", "related:\n  - id: related-self\n    how: look-alike"), "KB037",
                     "related[0].id", "- id: related-self"),
    "html-in-mechanism": (sub("mechanism: |\n", "mechanism: |\n  <script>alert(1)</script>\n"), "KB042",
                          "mechanism", "mechanism:"),
    "html-in-title": (sub("title: MLA decode", "title: MLA <img src=x onerror=alert(1)> decode"), "KB042",
                      "title", "title:"),
    "html-in-note": (sub("    note: Keep the KV cache in bf16; the bf16 tile fits.",
                         "    note: Keep <b>bf16</b>."), "KB042", "workarounds[0].note", "<b>bf16"),
    "markdown-javascript-link": (sub("mechanism: |\n", "mechanism: |\n  See [the fix](javascript:alert(1)).\n"),
                                 "KB043", "mechanism", "mechanism:"),
    "markdown-link-in-summary": (sub("summary: >-\n", "summary: >-\n  [click](http://evil.example)\n"),
                                 "KB043", "summary", "summary:"),
    "malformed-placeholder": (sub("    kind: exception\n", "    kind: exception\n    match: 'Required: {number}, Hardware limit: 101376'\n"),
                              "KB044", "signatures[0].match", "match:"),
    "pattern-not-fitting-text": (sub("    kind: exception\n", "    kind: exception\n    match: 'Required: {int}, Hardware limit: 65536'\n"),
                                 "KB045", "signatures[0].match", "match:"),
}


def compose(*fns):
    def apply(text):
        for fn in fns:
            text = fn(text)
        return text
    return apply


# Cases that need two edits.
CASES["title-trailing-space"] = (compose(sub("title: MLA", "title: \"MLA"), sub("101,376-byte card\n", "101,376-byte card \"\n")),
                                 "KB026", "title", "title:")
CASES["title-null-byte"] = (compose(sub("title: MLA decode", "title: \"MLA\\0 decode"), sub("101,376-byte card\n", "101,376-byte card\"\n")),
                            "KB031", "title", "title:")
CASES["updated-before-published"] = (compose(sub("published: 2026-12-02", "published: 2026-12-01"),
                                             sub("updated: 2026-12-02", "updated: 2026-11-30")),
                                     "KB039", "updated", "updated:")


def main() -> None:
    for old in OUT.glob("*.yaml"):
        old.unlink()
    expected = {}
    for name, (transform, code, field, marker) in CASES.items():
        text = transform(GOOD)
        data = text.encode("utf-8", "surrogateescape")
        (OUT / f"{name}.yaml").write_bytes(data)
        line = 1
        if marker is not None:
            index = text.index(marker)
            line = text.count("\n", 0, index) + 1
        expected[f"{name}.yaml"] = {"code": code, "line": line, "field": field}
    (OUT / "expected.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(expected)} bad entries")


if __name__ == "__main__":
    main()
