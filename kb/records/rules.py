"""The linter's rules: a stable code, a short name, the statement a contributor reads, and an
example of input that passes (`good`) and input that breaks the rule (`bad`).

This is the one registry of the codes: codes never change meaning once published; a retired rule
keeps its number and says `retired=True`.

Examples are short fragments of an entry: the top-level keys shown replace those of the
canonical entry (tests/fixtures/good/mla-decode-fp8-kv-triton-shared-memory.yaml). A line
`# kb/entries/<id>.yaml` starts a file of that name, for rules about file names and rules across
records. The other comments describe what the fragment cannot show (bytes, sizes).
`tests/test_rules.py` checks that every good example passes and every bad one breaks its rule.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleDoc:
    """The documentation of one lint rule, as `kb check --explain` and the rules page show it."""

    code: str
    name: str
    statement: str
    good: str = ""
    bad: str = ""
    # No check raises it any more; the code stays documented so that it is never given to another
    # rule (tests/test_rules.py checks that every code the checks raise is here once, and every
    # code here is raised or retired).
    retired: bool = False


_A = "# kb/entries/plan-index-a.yaml\n"
_B = "# kb/entries/plan-index-b.yaml\n"
_SIG_A = 'signatures: [{text: "RuntimeError: Plan index 3 is invalid", kind: exception}]\n'
_SIG_B = 'signatures: [{text: "cuDNN plan index 3 out of range", kind: log-line}]\n'
_REL_A = "related: [{id: plan-index-b, how: look-alike}]\n"
_REL_B = "related: [{id: plan-index-a, how: look-alike}]\n"
_PR = "https://github.com/vllm-project/vllm/pull/54013"
_FIX_PR = "https://github.com/flashinfer-ai/flashinfer/pull/4165"
_FIX_A = (f"status: {{state: fixed-release, as_of: 2026-10, source: '{_FIX_PR}'}}\n"
          f"components: [{{package: flashinfer, role: raises, fixed_by: '{_FIX_PR}', fixed_in: 0.6.18}}]\n"
          f"upstream: [{{kind: pr, url: '{_FIX_PR}', state: merged, as_of: 2026-10}}]\n")

_CVT_SIG = "signatures: [{text: \"Instruction 'cvt with .e2m1x2' not supported on .target 'sm_120'\", kind: log-line}]\n"
_CVT_OUT = "ptxas cvt-e2m1x2-sm120.ptx, line 9; error   : Instruction 'cvt with .e2m1x2' not supported on .target 'sm_120'"


def _cvt_repro(first_line: str) -> str:
    """A reproduction of the cvt e2m1x2 refusal (kb/repro/inputs/cvt-e2m1x2-sm120.ptx) that printed `first_line`."""
    return ("reproductions:\n"
            "  - install: {package: nvidia-cuda-nvcc-cu12, version: 12.8.93}\n"
            "    run: {tool: ptxas, input: cvt-e2m1x2-sm120.ptx, args: [-arch=sm_120]}\n"
            "    printed:\n"
            "      tool_version: Cuda compilation tools, release 12.8, V12.8.93\n"
            "      date: 2026-12-05\n"
            "      machine: Debian GNU/Linux 12 (bookworm), x86_64\n"
            "      exit: 255\n"
            "      output: |\n"
            f"        {first_line}\n"
            "        ptxas fatal   : Ptx assembly aborted due to errors")


_BNB_SHA = ("ba3a720187f518b172ebce4081049c682ae3fd8284947e22499b256ff99a2bc3",
            "720d67ffa8a5c61c958fb62517e8abbb2ab0ac1b33b66506ae911cb34c836c70")


def _bnb_scan(found: bool = True) -> str:
    """A scan of bitsandbytes 0.45.2 and 0.45.3's CUDA 12.8 library as `kb repro --write` records it
    (0.45.2 has no such file: no library matches)."""
    text = ("scans:\n"
            "  - package: bitsandbytes\n"
            "    library: bitsandbytes/libbitsandbytes_cuda128.so\n"
            "    arch: sm_120\n    platform: manylinux_2_28_x86_64\n    python: '3.11'\n"
            "    versions: ['0.45.2', '0.45.3']\n"
            "    tool: {package: nvidia-cuda-cuobjdump, version: 13.4.92}\n")
    if not found:
        return text
    return text + ("    found:\n"
                   "      tool_version: Cuda compilation tools, release 13.4, V13.4.92\n"
                   "      date: 2026-12-05\n      machine: Debian GNU/Linux 12 (bookworm), x86_64\n"
                   "      wheels:\n"
                   "        - {version: '0.45.2', file: bitsandbytes-0.45.2-py3-none-manylinux_2_24_x86_64.whl,\n"
                   f"           sha256: {_BNB_SHA[0]}, libraries: []}}\n"
                   "        - version: '0.45.3'\n"
                   "          file: bitsandbytes-0.45.3-py3-none-manylinux_2_24_x86_64.whl\n"
                   f"          sha256: {_BNB_SHA[1]}\n"
                   "          libraries:\n"
                   "            - path: bitsandbytes/libbitsandbytes_cuda128.so\n"
                   "              sass: {sm_70: 1, sm_75: 1, sm_80: 1, sm_86: 1, sm_89: 1, sm_90: 1, sm_100: 1, sm_120: 1}\n"
                   "              ptx: {}\n")


def _bnb(affected: str) -> str:
    return f"components: [{{package: bitsandbytes, role: raises, affected: '{affected}'}}]\n"


RULES = {rule.code: rule for rule in [
    RuleDoc("KB001", "utf8", "An entry file is readable UTF-8 text.",
            good="# the file saved as UTF-8\ntitle: Décodage MLA fails on GB10",
            bad="# the same file saved as Latin-1: é is the single byte 0xe9\ntitle: Décodage MLA fails on GB10"),
    RuleDoc("KB002", "no-bom", "An entry file does not start with a byte-order mark.",
            good="# the file starts with its first key\ntitle: MLA decode runs out of shared memory",
            bad="# the file starts with the bytes EF BB BF (a byte-order mark), then\ntitle: MLA decode runs out of shared memory"),
    RuleDoc("KB003", "yaml-syntax", "An entry file is well-formed YAML.",
            good='title: "Plan index 1 is invalid: cuDNN on GB10"',
            bad="title: Plan index 1 is invalid: cuDNN on GB10"),
    RuleDoc("KB004", "top-mapping", "The top level of an entry is a mapping of fields.",
            good="title: MLA decode runs out of shared memory\nsymptoms: [crash]",
            bad="- title: MLA decode runs out of shared memory\n- symptoms: [crash]"),
    RuleDoc("KB005", "duplicate-key", "A key appears at most once in a mapping.",
            good="title: MLA decode runs out of shared memory\nsummary: Dies on the first decoded token.",
            bad="title: MLA decode runs out of shared memory\ntitle: MLA decode needs 102,400 bytes"),
    RuleDoc("KB006", "plain-yaml", "Only plain YAML types are used: no tags that construct objects.",
            good="summary: Dies on the first decoded token.",
            bad="summary: !!python/object/apply:os.system [id]"),
    RuleDoc("KB007", "no-aliases", "No YAML anchors or aliases: every value is written out.",
            good="title: MLA decode runs out of shared memory\nsummary: MLA decode runs out of shared memory on GB10.",
            bad="title: &t MLA decode runs out of shared memory\nsummary: *t"),
    RuleDoc("KB008", "shallow", "Nesting stays within 12 levels.",
            good="symptoms: [crash]",
            bad="symptoms: [[[[[[[[[[[[crash]]]]]]]]]]]]"),
    RuleDoc("KB009", "file-size", "One entry file is at most 256 KiB.",
            good="# one cell: a few KiB of YAML; long logs stay upstream, linked\nmechanism: The kernel asks for 102,400 bytes.",
            bad="# a 300 KiB file: a whole log pasted into the mechanism\nmechanism: |\n  INFO 12-01 10:00:00 ... (20,000 more lines)"),
    RuleDoc("KB010", "id-form", "The file name (the cell id) is lowercase words, digits and hyphens, ending in .yaml.",
            good="# kb/entries/mla-decode-fp8-kv-shared-memory.yaml\n",
            bad="# kb/entries/MLA_decode_fp8.yaml\n"),
    RuleDoc("KB011", "id-not-repeated", "The id is the file name and is not written inside the file.",
            good="# kb/entries/mla-decode-fp8-kv-shared-memory.yaml\ntitle: MLA decode runs out of shared memory",
            bad="# kb/entries/mla-decode-fp8-kv-shared-memory.yaml\nid: mla-decode-fp8-kv-shared-memory\n"
                "title: MLA decode runs out of shared memory"),
    RuleDoc("KB020", "required", "Every required field is present.",
            good="title: MLA decode runs out of shared memory\nsummary: Dies on the first decoded token.",
            bad="# no title: line at all\nsummary: Dies on the first decoded token."),
    RuleDoc("KB021", "known-field", "Only fields of the schema are used (see `kb schema`).",
            good="symptoms: [crash]",
            bad="symptoms: [crash]\nseverity: high"),
    RuleDoc("KB022", "type", "Each field has the type the schema gives it (text, number, list, mapping).",
            good="symptoms: [crash]",
            bad="symptoms: crash"),
    RuleDoc("KB023", "choice", "Fields with a fixed set of values use one of them.",
            good="symptoms: [crash, hang]",
            bad="symptoms: [crash, melted]"),
    RuleDoc("KB024", "length", "Text and lists stay within their length limits and patterns.",
            good="hardware: {architectures: [sm_121], gpus: [GB10]}",
            bad="hardware: {architectures: [sm_121], gpus: []}"),
    RuleDoc("KB025", "not-blank", "Text fields are not empty or only whitespace.",
            good="title: MLA decode runs out of shared memory",
            bad='title: "   "'),
    RuleDoc("KB026", "trimmed", "Plain text does not start or end with whitespace.",
            good='title: "MLA decode runs out of shared memory"',
            bad='title: "MLA decode runs out of shared memory "'),
    RuleDoc("KB027", "value-or-series", "A measurement has exactly one of a single value or a series of rows.",
            good="measurements:\n  - {quantity: Shared memory needed, unit: bytes, value: 102400,\n"
                 f"     conditions: {{hardware: GB10}}, source: {_PR}, as_of: 2026-09}}",
            bad="measurements:\n  - {quantity: Shared memory needed, unit: bytes,\n"
                f"     conditions: {{hardware: GB10}}, source: {_PR}, as_of: 2026-09}}"),
    RuleDoc("KB028", "link-state", "An upstream link's state fits its kind (a PR can be merged, an issue cannot).",
            good=f"upstream: [{{kind: pr, url: '{_PR}', state: open, as_of: 2026-09}}]",
            bad="upstream: [{kind: issue, url: 'https://github.com/vllm-project/vllm/issues/53748', state: merged, "
                "as_of: 2026-09}]"),
    RuleDoc("KB029", "valid-value", "A value passes its field's check.",
            good='title: "MLA decode runs out of shared memory"',
            bad='title: "MLA decode runs out of \\ud800 shared memory"  # a lone surrogate is not text'),
    RuleDoc("KB030", "literal-exact", "A literal signature is one line with no tabs and no leading or trailing spaces.",
            good='signatures: [{text: "OutOfResources: out of resource: shared memory", kind: exception}]',
            bad='signatures: [{text: "OutOfResources: out of resource: shared memory ", kind: exception}]'),
    RuleDoc("KB031", "no-controls", "Text, links and versions hold nothing a reader cannot see: no control characters, bidirectional overrides, line separators, Unicode non-characters (U+FFFE, U+FDD0), format characters (zero-width space and joiners, U+FEFF, soft hyphen, tag characters), private-use or unassigned code points, fillers and variation selectors, or spaces other than U+0020 (prose may keep the no-break space U+00A0).",
            good='title: "MLA decode runs out of shared memory"',
            bad='title: "MLA decode runs out of \\u202eshared memory"\n'
                'signatures: [{text: "OutOfResources: out of re\\u200bsource", kind: exception}]'),
    RuleDoc("KB032", "unique-signature", "A cell lists each signature text once.",
            good="signatures:\n  - {text: 'OutOfResources: out of resource', kind: exception}\n"
                 "  - {text: _decode_grouped_att_m_fwd shared memory, kind: symptom}",
            bad="signatures:\n  - {text: 'OutOfResources: out of resource', kind: exception}\n"
                "  - {text: 'OutOfResources: out of resource', kind: log-line}"),
    RuleDoc("KB033", "public-link", "Links are https URLs of a known public tracker form (GitHub issue, PR, commit, release, docs), the whole value and nothing after it, in ASCII (RFC 3986: any other character percent-encoded; a host in ASCII).",
            good=f"status: {{state: fix-proposed, as_of: 2026-09, source: '{_PR}'}}",
            bad="status: {state: fix-proposed, as_of: 2026-09, source: 'http://example.com/my-notes'}"),
    RuleDoc("KB034", "date", "Dates are real, written YYYY-MM-DD (or YYYY-MM for an as-of month), not before 2000-01-01 and not in the future.",
            good="published: 2026-02-28\nupdated: 2026-12-02",
            bad="published: 2026-02-30\nupdated: 2026-12-02"),
    RuleDoc("KB035", "version", "Version ranges are PEP 440 specifiers and versions are PEP 440 versions.",
            good="components: [{package: flashinfer, role: raises, affected: '>=0.6.0,<0.6.18'}]",
            bad="components: [{package: flashinfer, role: raises, affected: '0.6.x', fixed_in: soon}]"),
    RuleDoc("KB036", "related-exists", "A related id names an existing cell.",
            good=_A + _SIG_A + _REL_A + _B + _SIG_B + _REL_B,
            bad=_A + _SIG_A + "related: [{id: plan-index-c, how: look-alike}]  # no kb/entries/plan-index-c.yaml\n"),
    RuleDoc("KB037", "related-not-self", "A cell is not related to itself.",
            good=_A + _SIG_A + _REL_A + _B + _SIG_B + _REL_B,
            bad=_A + _SIG_A + "related: [{id: plan-index-a, how: look-alike}]\n"),
    RuleDoc("KB038", "unique-id", "Two entry files do not share one id.",
            good="# checked together: kb/entries/plan-index-a.yaml and kb/entries/plan-index-b.yaml\n",
            bad="# checked together: kb/entries/plan-index-a.yaml and drafts/plan-index-a.yaml\n"),
    RuleDoc("KB039", "dates-ordered", "A cell's 'updated' date is not before its 'published' date.",
            good="published: 2026-12-01\nupdated: 2026-12-02",
            bad="published: 2026-12-02\nupdated: 2026-12-01"),
    RuleDoc("KB040", "own-primary", "A cell's first signature is its own: no other cell lists the same text.",
            good=_A + 'signatures: [{text: "RuntimeError: Plan index 3 is invalid", kind: exception},\n'
                      '             {text: "cuDNN plan failed", kind: log-line}]\n' + _REL_A
                 + _B + 'signatures: [{text: "cuDNN plan index 3 out of range", kind: log-line},\n'
                        '             {text: "cuDNN plan failed", kind: log-line}]  # shared, not first\n' + _REL_B,
            bad=_A + _SIG_A + _REL_A + _B + _SIG_B.replace("]", ",\n             "
                                                          '{text: "RuntimeError: Plan index 3 is invalid", '
                                                          'kind: exception}]', 1) + _REL_B),
    RuleDoc("KB041", "unique-url", "Two different signature texts never share one URL slug, and never look the same: no text is another written with look-alike characters (a Cyrillic o, U+043E, for a Latin o; fullwidth or mathematical letters), which would give two pages and URLs that look the same.",
            good="# 'CUDA error: misaligned address' -> e/cuda-error-misaligned-address-f06d32ead0/\n"
                 "# 'CUDA Error: misaligned address' -> e/cuda-error-misaligned-address-88d8767a41/",
            bad="# two different texts given one slug (only if the hash in the slug were cut too short)\n"
                "# 'CUDA error: misaligned address' -> e/cuda-error-misaligned-address/\n"
                "# 'CUDA Error: misaligned address' -> e/cuda-error-misaligned-address/\n"
                "# 'CUDA error: misaligned \\u0430ddress' (a Cyrillic a): a page that looks like the first"),
    RuleDoc("KB042", "no-raw-html", "Markdown prose has no raw HTML; code goes in backticks; the page would show raw HTML as text, and this rule tells you early.",
            good="mechanism: The `<stdin>` frame is where `_decode_grouped_att_m_fwd` is called.",
            bad="mechanism: The <b>decode</b> kernel asks for too much shared memory."),
    RuleDoc("KB043", "https-links", "Links inside Markdown prose, inline or reference-style, are https URLs, and prose embeds no image (no host may serve one; charts come from the measurements).",
            good=f"mechanism: See [the fix]({_PR}).",
            bad="mechanism: See [the fix](http://github.com/vllm-project/vllm/pull/54013)."),
    RuleDoc("KB054", "no-headings", "Markdown prose has no headings: the page gives each section its own, and a heading in prose would sit above them.",
            good="mechanism: \"Issue #4165 shows the same failure on GB10.\"",
            bad="mechanism: \"# Why\\n\\nThe decode kernel asks for 1,024 bytes too many.\""),
    RuleDoc("KB044", "placeholder-grammar", "A signature's match pattern uses only the placeholders {int} {num} {hex} {size} {path} {pid} {id} {rest}, {rest} last, and is unambiguous: two placeholders never touch, the text after a placeholder never starts with a character it can take (a digit after {int}, ':' after {path}) and the text before one never ends with such a character, so matching stays linear in the line.",
            good='signatures: [{text: "at /w/fmhaRunner.cuh:30: Unsupported architecture", kind: exception,\n'
                 '              match: "at {path} Unsupported architecture"}]',
            bad='signatures: [{text: "at /w/fmhaRunner.cuh:30: Unsupported architecture", kind: exception,\n'
                '              match: "at {path}: Unsupported architecture"}]'),
    RuleDoc("KB045", "pattern-fits-text", "A signature's match pattern matches the signature's own literal text.",
            good='signatures: [{text: "Plan index 3 is invalid", kind: exception, match: "Plan index {int} is invalid"}]',
            bad='signatures: [{text: "Plan index 3 is invalid", kind: exception, match: "Plan {int} is invalid"}]'),
    RuleDoc("KB046", "no-todo", "No TODO marker is left: every placeholder `kb new` wrote is filled in or deleted.",
            good="summary: Serving an MLA model with an fp8 KV cache dies on the first decoded token.",
            bad='summary: "TODO: who hits this, when, and what happens"'),
    RuleDoc("KB047", "look-alikes-related", "Two cells whose signatures match one same log line list each other in `related`.",
            good=_A + _SIG_A + _REL_A + _B
                 + 'signatures: [{text: "RuntimeError: Plan index 7 is invalid", kind: exception,\n'
                   '              match: "RuntimeError: Plan index {int} is invalid"}]\n' + _REL_B,
            bad=_A + _SIG_A + "related: []\n" + _B
                + 'signatures: [{text: "RuntimeError: Plan index 7 is invalid", kind: exception,\n'
                  '              match: "RuntimeError: Plan index {int} is invalid"}]\n' + "related: []\n"),
    RuleDoc("KB048", "related-mutual", "A related link goes both ways: if A lists B, B lists A.",
            good=_A + _SIG_A + _REL_A + _B + _SIG_B + _REL_B,
            bad=_A + _SIG_A + _REL_A + _B + _SIG_B + "related: []\n"),
    RuleDoc("KB049", "status-fits-links", "A status agrees with its own links: fixed-release or fixed-main needs a merged or published upstream link or a component's fixed_in or fixed_commit; fix-proposed needs an open pull request.",
            good=f"status: {{state: fixed-main, as_of: 2026-10, source: '{_PR}'}}\n"
                 f"upstream: [{{kind: pr, url: '{_PR}', state: merged, as_of: 2026-10}}]",
            bad=f"status: {{state: fixed-main, as_of: 2026-10, source: '{_PR}'}}\n"
                f"upstream: [{{kind: pr, url: '{_PR}', state: open, as_of: 2026-10}}]"),
    RuleDoc("KB050", "regular-file", "An entry is a regular file, not a symbolic link, named pipe, device or folder; such a path is refused without being read.",
            good="# ls -l kb/entries/\n# -rw-r--r--  plan-index-a.yaml",
            bad="# ls -l kb/entries/\n# lrwxrwxrwx  plan-index-a.yaml -> /dev/zero"),
    RuleDoc("KB051", "only-entries", "An entries folder holds only <id>.yaml files: a .yml, .json or README file there is an error, not skipped (hidden files such as .gitkeep are ignored).",
            good="# ls kb/entries/\n# plan-index-a.yaml  plan-index-b.yaml  .gitkeep",
            bad="# ls kb/entries/\n# plan-index-a.yaml  plan-index-b.yml  README.md"),
    RuleDoc("KB055", "seed-unconfirmed", "A claim whose only source is the seed document is not confirmed: the seed is where a lead came from, not evidence; confirming it takes the public thread or source file that shows it.",
            good="claims:\n  - {says: Fixed by PR 54013., source: seed, as_of: 2026-12-02, confirmed: false}\n"
                 f"  - {{says: PR 54013 lowers num_stages to 1 for fp8 KV., source: '{_PR}', as_of: 2026-12-02,\n"
                 "     confirmed: true}",
            bad="claims:\n  - {says: Fixed by PR 54013., source: seed, as_of: 2026-12-02, confirmed: true}"),
    RuleDoc("KB056", "one-fix-one-version", "A component's fixed_by names the pull request that fixes it; that pull request is merged among the cell's own upstream links, the component says where the fix is (fixed_in or fixed_commit), and every cell naming the same pull request gives it the same first release.",
            good=_A + _SIG_A + _FIX_A + _B + _SIG_B + _FIX_A,
            bad=_A + _SIG_A + _FIX_A + _B + _SIG_B + _FIX_A.replace("fixed_in: 0.6.18}", "fixed_in: 0.6.18.post1}")),
    RuleDoc("KB057", "fixed-release-version", "Status fixed-release names a final release: where its components give fixed_in, one of them is the first final release (not an rc or dev build) that contains the fix (one that gives none at all is KB086's).",
            good=f"status: {{state: fixed-release, as_of: 2026-10, source: '{_PR}'}}\n"
                 "components: [{package: vllm, role: raises, fixed_in: 0.11.1, fixed_commit: 3e96dfa35}]",
            bad=f"status: {{state: fixed-release, as_of: 2026-10, source: '{_PR}'}}\n"
                "components: [{package: vllm, role: raises, fixed_in: 0.11.1rc2, fixed_commit: 3e96dfa35}]"),
    RuleDoc("KB086", "state-fits-fix", "The status badge and the Do-now row tell one story (kb.records.state): fixed-release names its release (a component's fixed_in) and leads with a released fix; a fixed_in, or a Do-now row that is a released fix, comes with fixed-release; workaround-only, device-limit, under-investigation and fix-proposed never lead with an upgrade, nor workaround-only and device-limit with a setting called a fix; fixed-main never leads with an upgrade a thread says a release carries. Where the record knows why they differ (the release was not checked against a tag, no merged pull request is named), status.reason says it in one line, shown below the badge.",
            good=f"status: {{state: fixed-release, as_of: 2026-10, source: '{_PR}',\n"
                 "         reason: 'vLLM 0.11.1 is named by the thread; no merged pull request is, so no tag was checked'}\n"
                 f"fixes: [{{kind: version-upgrade, what: vLLM 0.11.1 or newer, package: vllm, applies: '>=0.11.1',\n"
                 f"         source: '{_PR}', as_of: 2026-10}}]\n"
                 f"upstream: [{{kind: pr, url: '{_PR}', state: merged, as_of: 2026-10}}]",
            bad=f"status: {{state: workaround-only, as_of: 2026-10, source: '{_PR}'}}\n"
                f"fixes: [{{kind: version-upgrade, what: vLLM 0.11.1 or newer, package: vllm, applies: '>=0.11.1',\n"
                f"         source: '{_PR}', as_of: 2026-10}}]\n"
                f"upstream: [{{kind: pr, url: '{_PR}', state: merged, as_of: 2026-10}}]"),
    RuleDoc("KB058", "evidence-terms", "An evidence item names 2 to 6 distinct terms, each one code identifier of 6 to 80 characters (A-Z a-z 0-9 _ . / : = -) that looks like code: an '_', '.', '/', a digit or a CamelCase hump, never a plain word; its window is 2 to 200 lines.",
            good="evidence:\n  - {terms: [_decode_grouped_att_m_fwd, triton.runtime.errors.OutOfResources], window: 20}",
            bad="evidence:\n  - {terms: [_decode_grouped_att_m_fwd, Hardware], window: 20}"),
    RuleDoc("KB059", "evidence-numbers", "An evidence number is a pattern in the signature placeholder grammar holding a digit or a number placeholder (int, num, size, hex), such as `101376` or `{num} MiB`.",
            good='evidence:\n  - {terms: [_decode_grouped_att_m_fwd, triton.runtime.errors.OutOfResources], numbers: ["101376"]}',
            bad='evidence:\n  - {terms: [_decode_grouped_att_m_fwd, triton.runtime.errors.OutOfResources], numbers: ["limit {rest} bytes"]}'),
    RuleDoc("KB060", "evidence-in-record", "Evidence is taken from the record, never invented: each term, and each digit run of a number, is written elsewhere in the same record, next to the source that shows it.",
            good='evidence:\n  - {terms: [_decode_grouped_att_m_fwd, triton.runtime.errors.OutOfResources], numbers: ["102400"]}',
            bad='evidence:\n  - {terms: [_decode_grouped_att_m_fwd, fused_moe_kernel], numbers: ["102400"]}'),
    RuleDoc("KB061", "fixed-in-names-its-fix", "A component's fixed_in is the first release that contains a named fix: the same component gives fixed_by (the merged pull request) or fixed_commit (its merge commit), the commit whose tags were checked (`git tag --contains`, and the final release before it does not contain it). A release read from a thread's words alone is a claim with confirmed: false, not fixed_in.",
            good=f"status: {{state: fixed-release, as_of: 2026-10, source: '{_PR}'}}\n"
                 "components: [{package: flashinfer, role: raises, fixed_in: 0.6.15, fixed_commit: c22b65b9f}]",
            bad="components: [{package: flashinfer, role: raises, fixed_in: 0.6.14}]"),
    RuleDoc("KB062", "few-signatures-one-word-set", "At most 8 signatures in the whole index hold the same set of three or more words in other orders, and no signature text holds words that more than 64 signatures are filed under (each pattern is filed under its word fewest texts hold): matching and the look-alike check try each such text against every pattern filed under its words, so many signatures made of one word set, or of a few common words in many sets (8 of a pool of 12), make kb check, kb match and the triage page quadratic. Give each signature a word of its own (an identifier, a number) and write the other forms as one match: pattern.",
            good='signatures:\n  - {text: "launch failed kernel sm_120", kind: log-line}\n  - {text: "failed launch kernel sm_120", kind: log-line}\n  - {text: "kernel launch failed sm_120", kind: log-line}\n  - {text: "sm_120 launch failed kernel", kind: log-line}\n  - {text: "launch kernel failed sm_120", kind: log-line}\n  - {text: "launch sm_120 kernel failed", kind: log-line}\n  - {text: "failed kernel launch sm_120", kind: log-line}\n  - {text: "failed sm_120 launch kernel", kind: log-line}\n',
            bad='signatures:\n  - {text: "launch failed kernel sm_120", kind: log-line}\n  - {text: "failed launch kernel sm_120", kind: log-line}\n  - {text: "kernel launch failed sm_120", kind: log-line}\n  - {text: "sm_120 launch failed kernel", kind: log-line}\n  - {text: "launch kernel failed sm_120", kind: log-line}\n  - {text: "launch sm_120 kernel failed", kind: log-line}\n  - {text: "failed kernel launch sm_120", kind: log-line}\n  - {text: "failed sm_120 launch kernel", kind: log-line}\n  - {text: "kernel failed launch sm_120", kind: log-line}\n'),
    RuleDoc("KB063", "headline-is-the-failure", "A cell's first signature, its page's heading, is how the failure shows, never a line a healthy run prints too: a first signature of kind log-line may not read as INFO or WARNING level, that is name a level (INFO, DEBUG, WARNING, a glog I or W prefix) or report progress (registered, loaded, using, ...) without a word of failure (error, failed, fatal, assert, invalid, not supported, exceeds, ...). Put the exception, the error line or a symptom first and keep the line after it.",
            good='signatures:\n  - {text: "VLLM_PLE_CPU_OFFLOAD=1 hangs at warmup with no PleOffloadWorker process", kind: symptom}\n  - {text: "PleOffload: registered 1 PleOffloadLayer(s)", kind: log-line, note: Last log line before the hang.}\n',
            bad='signatures:\n  - {text: "PleOffload: registered 1 PleOffloadLayer(s)", kind: log-line, note: Last log line before the hang.}\n  - {text: "VLLM_PLE_CPU_OFFLOAD=1 hangs at warmup with no PleOffloadWorker process", kind: symptom}\n'),
    RuleDoc("KB080", "cause-says-why", "Every entry gives `cause:`, the answer card's Cause line: why the failure happens, in one plain sentence that names the mechanism, at most 25 words and 300 characters (`a.b.c` is one word), with no file path (`vllm/x.py`, `setup.py`) or function or identifier name (`has_tma_gather()`, `Class::method`, `_decode_fwd`, `getMMAVersion`, `torch.cuda.is_available`; upper-case settings such as BLOCK_DMODEL pass), and not a repeat of the summary's first sentence, the symptom: less than 70% of its distinct words may be words of that sentence.",
            good="summary: Serving an MLA model with an fp8 KV cache on sm_120 dies on the first generated token.\n"
                 "cause: The Triton decode kernel lowers num_stages only when BLOCK_DMODEL >= 1024, and MLA fixes it at 512.",
            bad="summary: Serving an MLA model with an fp8 KV cache on sm_120 dies on the first generated token.\n"
                "cause: Serving an MLA model with an fp8 KV cache on sm_120 dies on the first token."),
    RuleDoc("KB081", "one-spelling", "A GPU name, and a package, is written one way across the index: two spellings that differ only in letter case, spaces or punctuation (any sm_120 build target, any SM120 build target) would be two groups on the browse pages and in the search menus; write the spelling most cells use (for a package, the one the index lists). A name holding a look-alike of an ASCII letter or digit (a Cyrillic О in RTX 5О90) is refused: it would be a group of its own that reads like another.",
            good=_A + _SIG_A + _REL_A + "hardware: {architectures: [sm_120], gpus: [RTX 5090 D]}\n"
                 + _B + _SIG_B + _REL_B + "hardware: {architectures: [sm_120], gpus: [RTX 5090 D, RTX 5090]}\n",
            bad=_A + _SIG_A + _REL_A + "hardware: {architectures: [sm_120], gpus: [RTX 5090 D]}\n"
                + _B + _SIG_B + _REL_B + "hardware: {architectures: [sm_120], gpus: [RTX 5090D]}\n"),
    # The redirects file and the site as a whole (kb.records.redirects, kb.site.urls): checked
    # by `kb check` on the repository's entries and by `kb build` before the engine runs.
    RuleDoc("KB070", "redirect-url", "Each line of kb/redirects.yaml maps a site URL to a site URL, both in the form the site's own URLs take: relative to the site root (no leading '/'), segments of letters, digits and - . _ ~ only (no '..', '.', '//', '\\', '%', space or invisible character), a page in directory form 'x/' or a .json export.",
            good="# kb/redirects.yaml\n'e/plan-index-is-invalid-0123456789/': 'triage/'\n'api/v1/cells/plan-index-old.json': 'api/v1/index.json'",
            bad="# kb/redirects.yaml\n'/home/alice/.ssh/authorized_keys': 'triage/'"),
    RuleDoc("KB071", "redirect-was-published", "Only a URL the site published can move: the old URL of a redirect is in kb/urls.lock.",
            good="# kb/urls.lock lists /e/plan-index-is-invalid-0123456789/\n'e/plan-index-is-invalid-0123456789/': 'triage/'",
            bad="# kb/urls.lock does not list /e/never-published-0123456789/\n'e/never-published-0123456789/': 'triage/'"),
    RuleDoc("KB072", "redirect-target-published", "A redirect's new URL is a page or export the site publishes now.",
            good="# kb/redirects.yaml\n'e/plan-index-is-invalid-0123456789/': 'triage/'",
            bad="# kb/redirects.yaml\n'e/plan-index-is-invalid-0123456789/': 'e/no-such-page-0123456789/'"),
    RuleDoc("KB073", "redirect-old-gone", "A redirect's old URL is no longer published: a page the site still has is not replaced by a redirect.",
            good="# kb/redirects.yaml\n'e/plan-index-is-invalid-0123456789/': 'triage/'",
            bad="# kb/redirects.yaml\n'about/': 'triage/'"),
    RuleDoc("KB074", "redirect-not-build-file", "A redirect never writes where the build writes a file of its own: not in the theme's assets/, the search index (search/, pagefind/), an export, the feed, the sitemap or a hand-written page's file, nor below one of those files.",
            good="# kb/redirects.yaml\n'e/plan-index-is-invalid-0123456789/': 'triage/'",
            bad="# kb/redirects.yaml (the key also added to kb/urls.lock)\n'search/literals/0.json': 'triage/'"),
    RuleDoc("KB075", "url-segment-length", "Every URL the site would publish has segments of at most 100 bytes (what every file system can hold as a folder or file name): a GPU name, an upstream repository or a cell id too long for one is shortened.",
            good="hardware: {architectures: [sm_120], gpus: [RTX PRO 6000 Blackwell]}",
            bad="# kb/entries/<an id of 120 characters>.yaml\n# its exports api/v1/cells/<id>.json and osv/<id>.json have a 125-byte segment"),
    RuleDoc("KB076", "regular-source-file", "What the build reads besides the entries (site_src/, templates/, hooks/, kb/, mkdocs.yml) holds regular files and folders only: a symbolic link, named pipe, device or socket is refused unread, since the engine would copy what a link points at into the site.",
            good="# site_src/assets/kb.css: a regular file",
            bad="# site_src/assets/leak.txt: a symbolic link to ../../../home/alice/.ssh/id_ed25519"),
    # The id lock (kb.records.ids): checked by `kb check` on the repository's entries.
    RuleDoc("KB077", "id-lock-lines", "Each line of kb/ids.lock is '<id> <cell>', the id BWKB-<year>-<number>; line N holds number N (no gap, no number twice), and no id or cell appears twice: an id names one cell and is never reused.",
            good="# kb/ids.lock\nBWKB-2026-0001 plan-index-a\nBWKB-2026-0002 plan-index-b",
            bad="# kb/ids.lock (the line of BWKB-2026-0002 was removed)\nBWKB-2026-0001 plan-index-a\nBWKB-2026-0003 plan-index-b"),
    RuleDoc("KB078", "cell-has-id", "Every cell has a citable id in kb/ids.lock: `kb lock` gives each new cell the next number, in publication order (published date, then file name).",
            good="# kb/entries/: plan-index-a.yaml plan-index-b.yaml\n# kb/ids.lock\nBWKB-2026-0001 plan-index-a\nBWKB-2026-0002 plan-index-b",
            bad="# kb/entries/: plan-index-a.yaml plan-index-b.yaml\n# kb/ids.lock (plan-index-b has no line; run kb lock)\nBWKB-2026-0001 plan-index-a"),
    RuleDoc("KB079", "id-never-removed", "An id the site published stays in kb/ids.lock: its URL id/<id>/ is in kb/urls.lock, and removing its line would give the number to another cell.",
            good="# kb/urls.lock lists /id/BWKB-2026-0002/\n# kb/ids.lock\nBWKB-2026-0001 plan-index-a\nBWKB-2026-0002 plan-index-b",
            bad="# kb/urls.lock lists /id/BWKB-2026-0002/\n# kb/ids.lock (the last line was removed)\nBWKB-2026-0001 plan-index-a"),
    RuleDoc("KB083", "id-permanent", "An id once published belongs to its entry for good: kb/ids.lock is compared with every version of it committed in git, and an id that now names another entry (two lines swapped, a published number given to a new entry) or left the lock is refused. A renamed entry keeps its id: change the name on its line and add 'renamed <old name> <new name>' (the old name is then no entry). A shallow clone cannot be checked (`git fetch --unshallow`).",
         good="# kb/ids.lock as published\nBWKB-2026-0001 plan-index-a\nBWKB-2026-0002 plan-index-old\n# kb/ids.lock\nBWKB-2026-0001 plan-index-a\nBWKB-2026-0002 plan-index-b\nrenamed plan-index-old plan-index-b",
         bad="# kb/ids.lock as published\nBWKB-2026-0001 plan-index-a\nBWKB-2026-0002 plan-index-b\n# kb/ids.lock (two lines swapped)\nBWKB-2026-0001 plan-index-b\nBWKB-2026-0002 plan-index-a"),
    RuleDoc("KB082", "no-internal-words", "The prose a page shows (title, summary, mechanism, notes, remedies, claims, GPU names, measurement labels) never says 'cell' or 'seed' or names a record field, in whatever letters (a Cyrillic с in 'сell' reads as c), (`fixed_in`, `as_of`, `claims[3].as_of`), the index's own words: a reader sees an entry about a failure (on the matrix a cell is a square of the grid), a claim from `source: seed` is shown as an unpublished report, and a field is said in words (the first fixed release, the day it was read). Signature texts, evidence terms and link titles are literal upstream strings and are not read.",
            good="summary: Serving an MLA model with an fp8 KV cache dies on the first decoded token; the linked entry is the cuDNN failure an unpublished report describes.",
            bad="summary: Serving an MLA model with an fp8 KV cache dies on the first decoded token; the linked cell is the cuDNN failure the seed describes."),
    RuleDoc("KB052", "number-range", "A measured number is 0 or between 1e-9 and 1e15 in size (what a chart can draw), written in a unit that keeps it there.",
            good="measurements:\n  - {quantity: Gap between kernel launches, unit: ns, value: 0.25,\n"
                 f"     conditions: {{hardware: GB10}}, source: {_PR}, as_of: 2026-09}}",
            bad="measurements:\n  - {quantity: Gap between kernel launches, unit: s, value: 2.5e-10,\n"
                f"     conditions: {{hardware: GB10}}, source: {_PR}, as_of: 2026-09}}"),
    # Reproductions (kb.records.reproduction): what `kb repro` re-runs.
    RuleDoc("KB084", "decisive-names-the-arch", "A signature marked decisive proves the failure by itself, so a log showing it applies whatever versions it lacks: it is a line the failing program prints (not a symptom, not generic) that names the GPU architecture (sm_120, compute_120a, SM 12.0, capability 120, CC 12.0, 'compute capability in your current machine is 120') or says the build lacks it (torch's 'is not compatible with the current PyTorch installation', ptxas's 'is not defined for option 'gpu-name'', nvcc's 'Unsupported gpu architecture'); and it is printed by what carries the entry's range: where the component that raises gives no range and one that triggers gives one (ptxas refusing a project's PTX), the line is not decisive.",
            good='signatures:\n  - {text: "ptxas fatal   : Value \'sm_120\' is not defined for option \'gpu-name\'", kind: log-line, decisive: true}\n',
            bad='signatures:\n  - {text: "triton.runtime.errors.OutOfResources: out of resource: shared memory", kind: exception, decisive: true}\n'),
    RuleDoc("KB085", "known-bad-or-range", "A component gives either affected, a range whose bounds were checked (the first bad release, the fix), or seen_failing, only the versions seen failing (any other version is then not known to be affected), never both; builds (local version labels such as '+cu126' whose builds fail at any version) comes with one of them, the range for the other builds.",
            good="components: [{package: vllm, role: triggers, seen_failing: '==0.25.1'}]",
            bad="components: [{package: vllm, role: triggers, seen_failing: '==0.25.1', affected: '>=0.25.0'}]"),
    RuleDoc("KB090", "reproduction-shows-literal", "A reproduction records what its run printed (`kb repro --write ID` records it), and that output shows one of the entry's signatures, each line compared as kb match compares it (normalised, the match pattern applied); a run on a release the entry names as fixed (`fixed: true`) shows none of them.",
         good=_CVT_SIG + _cvt_repro(_CVT_OUT),
         bad=_CVT_SIG + _cvt_repro("ptxas cvt-e2m1x2-sm120.ptx, line 9; error   : Feature 'cvt.e2m1x2.f32' not supported on .target 'sm_120'")),
    RuleDoc("KB091", "reproduction-pinned", "A reproduction can be re-run as recorded: its release is pinned in kb/repro/tools.lock, its input is a file in kb/repro/inputs/, the version line it recorded names that release, the release lies in the affected range of the entry's component the tool belongs to (cuda, cuda-toolkit for ptxas; triton for triton), where one is given, and so does the release of the wheel whose file the run reads (`kernel`: torch for a cmake run on torch's CMake module), a `fixed` run's outside it and inside the fix's applies; a triton run reads a .py driver with driver options only, a cmake run a .cmake script with -D variables only, and the wheel whose file it reads (a .py kernel for triton, a .cmake module for cmake) is pinned too.",
         good=_CVT_SIG + "components: [{package: cuda-toolkit, role: raises, affected: '>=12.8,<13.1'}]\n" + _cvt_repro(_CVT_OUT),
         bad=_CVT_SIG + "components: [{package: cuda-toolkit, role: raises, affected: '<12.8'}]\n" + _cvt_repro(_CVT_OUT)),
    RuleDoc("KB092", "known-family", "An entry's family names a family record, a file kb/families/<id>.yaml (the recurring mechanism the failure is one case of: its page lists the entry); leave the field out where no family fits.",
            good="family: no-code-for-gpu", bad="family: no-kernel-for-gpu"),
    RuleDoc("KB093", "scan-recorded", "A scan can be re-run as recorded: its cuobjdump (nvidia-cuda-cuobjdump) is pinned in kb/repro/tools.lock, its architecture is one of the entry's, and it holds what `kb repro --write ID` found: a wheel for each version it lists, in that order, with the version line of the pinned cuobjdump.",
            good=_bnb("<0.45.3") + _bnb_scan(),
            bad=_bnb("<0.45.3") + _bnb_scan(found=False)),
    RuleDoc("KB094", "scan-proves-range", "A component's range agrees with the scan of its released wheels: a scanned version without code the scan's architecture runs (SASS it loads, or PTX it compiles in every fat binary of the library: kb.records.fatbin.loads) lies in affected (or its build label in builds), a version with it lies outside both and outside seen_failing, no version from fixed_in on lacks it, and a scanned component gives a range at all. The message names the scan, the wheel file and the images it holds.",
            good=_bnb("<0.45.3") + _bnb_scan(),
            bad=_bnb("<0.45.2") + _bnb_scan()),
    RuleDoc("KB095", "workaround-cost", "Every workaround says what it costs the reader in `cost:` (the memory, speed or feature it gives up), as its source says it, or says in words that the source gives no cost and what the workaround turns off; never a guessed number. The card shows it under Do now.",
            good="workarounds:\n  - kind: flag\n    what: --kv-cache-dtype auto\n"
                 "    cost: Keeps the KV cache in bf16, two bytes a value instead of fp8's one, so it holds half the tokens.\n"
                 "    source: https://github.com/vllm-project/vllm/issues/53748\n    as_of: 2026-09\n",
            bad="workarounds:\n  - kind: flag\n    what: --kv-cache-dtype auto\n"
                "    source: https://github.com/vllm-project/vllm/issues/53748\n    as_of: 2026-09\n"),    RuleDoc("KB096", "range-or-reason", "An entry answers 'am I affected?': some component gives a version range (affected, fixed_in or seen_failing), or a component's note says in words why none is given ('No range: <why>', or 'no affected range'), so a reader who gets no verdict learns whether nobody knows or nobody checked. Reported at `components:`; add the range to the component whose versions were seen failing.",
            good="components:\n  - {package: vllm, role: triggers}\n"
                 "  - {package: triton, role: raises, note: 'No range: the triton releases it fails on were not read.'}\n",
            bad="components:\n  - {package: vllm, role: triggers}\n  - {package: triton, role: raises}\n"),
]}


def code_of_pydantic(error_type: str) -> str:
    """The rule a built-in pydantic error breaks."""
    if error_type.startswith("KB"):
        return error_type
    if error_type == "missing":
        return "KB020"
    if error_type == "extra_forbidden":
        return "KB021"
    if error_type in {"literal_error", "enum"}:
        return "KB023"
    if error_type in {"string_too_long", "string_too_short", "too_long", "too_short", "string_pattern_mismatch"}:
        return "KB024"
    if error_type.endswith("_type") or error_type in {"model_attributes_type", "is_instance_of", "dict_type"}:
        return "KB022"
    return "KB029"
