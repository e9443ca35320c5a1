"""Facts from a log: what a pasted log says about its machine (GPUs, architecture, driver, versions).

One table of rules (`RULES`), each a regular expression in the subset Python's `re` and
JavaScript's RegExp read alike (ASCII classes, lookahead only), applied case-insensitively to each
raw line; the triage page runs the same table (`export()`, read by `kbLogFacts` in kb-logfacts.js)
and tests/vectors/logfacts.json holds the vectors both are tested on. What a rule gives:

- `gpu`: a GPU name; its compute capability comes from `MODELS` (NVIDIA's published capabilities,
  https://developer.nvidia.com/cuda-gpus).
- `gpu-bare`: a GPU named in prose without "NVIDIA" ("on an H100", "RTX 4090", "my 5090"), in a
  context that keeps out paths, hex strings and plain numbers; counted once per architecture, and
  not at all where a full name (`gpu`) gives that architecture.
- `capability`: a capability stated as numbers (`compute capability 12.0`, `capability (12, 0)`).
- `arch`: an architecture name (`sm_90`, `SM_100`, `sm_110a`, `compute_120`, Thrust's
  `THRUST_200802_SM_700_NS`); weaker than the two
  above, used only when the log names no GPU or capability, and never from a line that lists
  several architectures, a build's target list or what a kernel requires (`IGNORE`): those say
  what was built or is needed, not what ran.
- `driver`, `cuda-driver`, `cuda-runtime`, `cuda-toolkit`: nvidia-smi, collect_env and nvcc lines.
- `package`: a version as vLLM, SGLang, FlashInfer, torch, Triton and NCCL print it
  (`vLLM is using nccl==2.27.7`, `NCCL version 2.21.5+cuda12.4`), or pip lists it (`pip list`,
  `pip freeze`: `nvidia-nccl-cu12==2.27.7`); torch's also as `print(torch.__version__, ...)` prints
  it (a line that starts `2.7.0+cu128`), with the CUDA version after it when
  `torch.cuda.is_available()` follows.
- `frame`: a package a traceback passes through, named by the folder after `site-packages/` or
  `dist-packages/` (`.../dist-packages/vllm/v1/engine/core.py`): no version, only that the log shows
  it ran. Kept as `lines["frames.<package>"]` (its first line), the package named as pip names it
  (`sgl_kernel` is sgl-kernel); a generic line's tie is broken by it (kb.records.verdict.tie).

The result has the fields `kb.doctor.facts.Facts` has (`as_facts()` gives that shape), so
`kb.records.verdict.judge` decides a cell on it as on a probed machine, and it keeps for each fact
the number of the line it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from kb.records.gpus import MODELS, model_capability  # noqa: F401 (the triage stage's names)
from kb.records.verdict import architecture_table, capability_arch, digits_capability

# What follows a version's numbers: pre-, post- and dev-release parts, then a local label (+cu128).
SUFFIX = r"(?:(?:a|b|rc|\.?post|\.?dev)[0-9]+)*(?:\+[a-z0-9.]+)?"
VERSION = r"([0-9]+\.[0-9]+(?:\.[0-9]+)*" + SUFFIX + r")(?=$|[^0-9a-z])"

# Before and after a GPU named in prose (the `gpu-bare` rules): not a letter, digit or a character of
# a path, a file name, a port or an identifier, and after it no "." that goes on with a word character.
BARE_BEFORE = r"(?:^|[^a-z0-9_./\\:#-])"
BARE_AFTER = r"(?![a-z0-9_/\\-]|\.[a-z0-9_])"
GEFORCE = r"[2-5]0[5-9]0(?: ?ti| super)?"  # RTX 2060 to 5090, as kb.records.gpus.MODELS reads them bare

# (name, fact, pattern, example). Group 1 is the value; a capability has major in 1, minor in 2.
# No two runs that can match the same character may stand side by side (` *:? *` split a run of
# spaces every way before failing: quadratic in the line); tests/test_patterns_linear.py times
# every rule with long runs beside its words.
RULES: list[tuple[str, str, str, str]] = [
    ("gpu name", "gpu", r"\b(?:nvidia|tesla)(?: geforce)? (?:rtx |gtx |jetson (?:agx )?)?[a-z]{0,3}[0-9]{1,4}[a-z0-9-]*(?: ti| super| laptop gpu| [0-9]+gb(?: hbm[0-9a-z]*)?)*(?: blackwell(?: [a-z -]{0,40}edition)?)?",
     "| 0  NVIDIA GeForce RTX 5090   On |"),
    # A GPU named in prose without "NVIDIA" ("on an H100", "my 5090 GPU", "RTX PRO 6000"): group 1 (or
    # the first group that matched) is the name. What may stand before it (BARE_BEFORE) and after it
    # (BARE_AFTER) keeps out a file path (`/h100/`, `h100.yaml`, `run-h100`), a hex string (`0xa100`,
    # a UUID's `-a100-`, a dump's `a100 b200 0000`), a port (`:5090`); a GeForce number alone
    # (`5090`) counts only after my/our/dual/Nx or before GPU, card or a size in GB.
    ("bare datacenter gpu", "gpu-bare", BARE_BEFORE
     + r"((?:g?b[123]00|gb10|h[128]00|h20|a[18]00|[vp]100|l40s?|l4)(?:-(?:sxm[0-9]?|pcie|nvl)|[- ][0-9]{2,3} ?gb){0,3})s?"
     + BARE_AFTER + r"(?! [0-9a-f]{4}\b)", "trying to run it on an H100:"),
    ("bare rtx gpu", "gpu-bare", BARE_BEFORE
     + r"((?:geforce |quadro )?(?:rtx|gtx) ?(?:pro |a)?[0-9]{3,4}(?: ?ti| super| ada)?(?: blackwell(?: [a-z -]{0,40}edition)?)?)"
     + BARE_AFTER, "same error on RTX PRO 6000 and RTX 4090"),
    ("bare gpu number", "gpu-bare", BARE_BEFORE + r"(?:(?:my|our|dual|[2-8]x) ?(" + GEFORCE + ")" + BARE_AFTER
     + "|(" + GEFORCE + r")(?= ?(?:gpus?|cards?|[0-9]{1,3} ?gb)\b))", "works on my 5090"),
    ("jetson thor", "gpu", r"\bnvidia (?:jetson )?(?:agx )?thor\b", "NVIDIA Jetson AGX Thor"),
    ("compute capability", "capability", r"\bcompute capability:? *\(?([0-9]{1,2})[.,] ?([0-9])\b", "compute capability 12.0"),
    ("capability tuple", "capability", r"\bcapability[ =:]*\(([0-9]{1,2}), ?([0-9])\)", "capability (12, 0)"),
    ("architecture name", "arch", r"\b(?:sm|compute)_?([0-9]{2,3})[af]?\b", "sm_120a"),
    # Thrust names its namespace after the one architecture a binary was built for (SM_700: sm_70).
    ("thrust namespace", "arch", r"\bthrust_[0-9]+_sm_([0-9]{3,4})_ns\b",
     "thrust::THRUST_200802_SM_700_NS::system::system_error"),
    ("nvidia-smi driver", "driver", r"\bdriver version *(?:: *)?([0-9]{2,3}\.[0-9]{2,3}(?:\.[0-9]{2,3})?)\b", "Driver Version: 580.95.05"),
    ("nvidia-smi cuda", "cuda-driver", r"\bcuda version *(?:: *)?([0-9]{1,2}\.[0-9]{1,2})\b", "CUDA Version: 13.0"),
    ("torch build cuda", "cuda-runtime", r"\bcuda used to build pytorch *: *([0-9]{1,2}\.[0-9]{1,2})\b", "CUDA used to build PyTorch: 12.8"),
    ("nvcc release", "cuda-toolkit", r"\bcuda compilation tools, release [0-9.]+, v([0-9]+\.[0-9]+\.[0-9]+)\b",
     "Cuda compilation tools, release 12.8, V12.8.93"),
    ("vllm api server", "package:vllm", r"\bvllm api server version " + VERSION, "vLLM API server version 0.11.0"),
    ("vllm engine", "package:vllm", r"\bllm engine \(v" + VERSION, "Initializing a V1 LLM engine (v0.11.0) with config"),
    ("pytorch version", "package:torch", r"\bpytorch version *: *" + VERSION, "PyTorch version: 2.9.0+cu128"),
    # Without the colon (an application's banner) only a whole x.y.z is a version: "PyTorch version
    # 2.7 or later" is a requirement, not the log's torch.
    ("pytorch version bare", "package:torch", r"\bpytorch version +([0-9]+\.[0-9]+\.[0-9]+" + SUFFIX + r")(?=$|[^0-9a-z.])", "PyTorch version 1.10.0+cu113"),
    ("package version", "package", r"(?:^|[^a-z0-9_.-])(vllm|sglang|flashinfer-python|flashinfer|torch|pytorch-triton|triton|sgl[-_]kernel|nvidia-nccl-cu1[0-9]|nccl)(?:==| +version *(?:: *)?| +v?)" + VERSION,
     "torch 2.9.0+cu128"),
    # What `print(torch.__version__, torch.version.cuda, torch.cuda.is_available())` prints: a line
    # that starts with a version carrying a +cuNNN build label (torch's own; torchvision's are 0.x).
    ("torch print", "package:torch", r"^ *([1-9][0-9]*\.[0-9]+\.[0-9]+(?:\.?(?:a|b|rc|dev)[0-9]+)*\+cu[0-9]{2,3})(?= |$)",
     "2.7.0+cu128 12.8 True"),
    # The same line's second value, torch.version.cuda (what collect_env calls "CUDA used to build
    # PyTorch"), where a True or False (torch.cuda.is_available()) follows it.
    ("torch print cuda", "cuda-runtime",
     r"^ *[1-9][0-9]*\.[0-9]+\.[0-9]+(?:\.?(?:a|b|rc|dev)[0-9]+)*\+cu[0-9]{2,3} +([0-9]{1,2}\.[0-9]) +(?:true|false) *$",
     "2.7.0+cu128 12.8 True"),
    ("traceback frame", "frame", r"(?:site|dist)-packages[/\\]([a-z0-9_]+)[/\\]",
     'File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 83, in __init__'),
]
# Lines that name architectures a build targets or a wheel supports, not the one that ran; and
# lines that name what a kernel requires ("only supported on ... (SM100)", `arch >= Arch.sm_100`).
IGNORE = (r"gencode|arch_list|arch list|capabilities|supported arch|--gpu-architecture|cuda_arch"
          r"|\bonly\b.*\bsupport|\bsupport[a-z]* only\b|[<>]=? *(?:arch\.)?sm_?[0-9]")
# The GPU table (model name -> compute capability) lives in kb.records.gpus, so that kb doctor's
# --target reads the same one; MODELS and model_capability are its names here too.
# A line gives a fact only if it holds one of these words (ASCII lower case; each rule's match does,
# or holds a character Python's case-insensitive matching reads as s, k or i): `read_bytes` reads
# only such lines, found at once over a whole log. A speed-up only: the triage page needs none.
KEYWORDS = ("nvidia", "tesla", "thor", "capability", "sm", "compute", "driver version", "cuda version", "cuda used",
            "cuda compilation", "-packages", "vllm", "llm engine", "torch", "triton", "sglang", "flashinfer", "sgl",
            "nccl", "+cu",
            # the gpu-bare rules' names: each holds one of these
            "rtx", "gtx", "l4", "h20", "gb10", "100", "200", "300", "800", "050", "060", "070", "080", "090",
            "\u017f", "\u212a", "\u0130", "\u0131")
PACKAGES = {"flashinfer-python": "flashinfer", "pytorch-triton": "triton", "sgl_kernel": "sgl-kernel",
            **{f"nvidia-nccl-cu1{n}": "nccl" for n in range(10)}}
MAX_LISTED = 2  # a line naming more architectures than this lists them


@dataclass
class LogGpu:
    name: str | None
    compute_capability: str | None
    line: int
    bare: bool = False  # named in prose (a gpu-bare rule): yields to a full name of its architecture

    @property
    def architecture(self) -> str | None:
        return capability_arch(self.compute_capability)


@dataclass
class LogFacts:
    """What the log says; None / absent where it says nothing. `lines`: fact -> line number."""

    gpus: list[LogGpu] | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    cuda_runtime_version: str | None = None
    packages: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def as_facts(self) -> dict:
        """The facts in `kb.doctor.facts.Facts` form (a facts file), line numbers aside."""
        gpus = None if self.gpus is None else [{"name": g.name, "compute_capability": g.compute_capability}
                                               for g in self.gpus]
        return {"facts_version": 1, "gpus": gpus, "driver_version": self.driver_version,
                "cuda_driver_version": self.cuda_driver_version, "cuda_runtime_version": self.cuda_runtime_version,
                "packages": dict(self.packages)}

    def as_json(self) -> dict:
        out = self.as_facts()
        out["gpus"] = None if self.gpus is None else [g | {"line": x.line} for g, x in zip(out["gpus"], self.gpus)]
        del out["facts_version"]
        out["lines"] = dict(sorted(self.lines.items()))
        return out


@lru_cache(maxsize=1)
def _compiled():
    return ([(name, fact, re.compile(pattern, re.I)) for name, fact, pattern, _ in RULES], re.compile(IGNORE, re.I),
            [(re.compile(pattern, re.I), cc) for pattern, cc in MODELS])


def read(lines) -> LogFacts:
    """The facts of a log given as lines (str), numbered from 1."""
    return read_numbered(enumerate(lines, 1))


@lru_cache(maxsize=1)
def _keywords():
    import ahocorasick_rs

    return ahocorasick_rs.BytesAhoCorasick([k.encode() for k in KEYWORDS])


def read_bytes(data: bytes) -> LogFacts:
    """The facts of a log given as bytes (UTF-8, lines split at b"\\n", a CR before it dropped):
    what `read` gives on its lines, reading only the lines that hold a KEYWORDS word."""
    lower = data.lower()
    numbered = []
    number, counted, line_end = 1, 0, -1
    for _, start, _ in _keywords().find_matches_as_indexes(lower):
        if start < line_end:
            continue
        number += lower.count(b"\n", counted, start)
        line_start = lower.rfind(b"\n", 0, start) + 1
        line_end = lower.find(b"\n", start)
        line_end = len(lower) if line_end == -1 else line_end
        counted = line_start
        numbered.append((number, data[line_start:line_end].decode("utf-8", errors="replace").removesuffix("\r")))
    return read_numbered(numbered)


def read_numbered(numbered) -> LogFacts:
    """The facts of the lines given as (number, line) pairs, in order."""
    rules, ignore, _ = _compiled()
    out = LogFacts()
    strong: list[LogGpu] = []
    weak: list[LogGpu] = []
    for number, raw in numbered:
        line = raw[:4096]
        for _, fact, regex in rules:
            if fact == "arch":
                found = regex.findall(line)
                if found and len(set(found)) <= MAX_LISTED and not ignore.search(line):
                    for digits in dict.fromkeys(found):
                        weak.append(LogGpu(None, digits_capability(digits), number))
                continue
            for match in regex.finditer(line):
                if fact in ("gpu", "gpu-bare"):
                    name = re.sub(r"\s+", " ", next((g for g in match.groups() if g), match.group(0))).strip()
                    cc = model_capability(name)
                    if cc:
                        strong.append(LogGpu(name, cc, number, fact == "gpu-bare"))
                elif fact == "capability":
                    strong.append(LogGpu(None, f"{int(match.group(1))}.{match.group(2)}", number))
                elif fact == "frame":
                    out.lines.setdefault(f"frames.{frame_package(match.group(1))}", number)
                elif fact.startswith("package"):
                    package = fact.partition(":")[2] or match.group(1).lower()
                    package = PACKAGES.get(package, package)
                    if package not in out.packages:
                        out.packages[package] = match.groups()[-1]
                        out.lines[f"packages.{package}"] = number
                else:
                    key = {"driver": "driver_version", "cuda-driver": "cuda_driver_version",
                           "cuda-runtime": "cuda_runtime_version", "cuda-toolkit": "packages.cuda-toolkit"}[fact]
                    if key not in out.lines:
                        out.lines[key] = number
                        if key.startswith("packages."):
                            out.packages["cuda-toolkit"] = match.group(1)
                        else:
                            setattr(out, key, match.group(1))
                            if key == "cuda_runtime_version":
                                out.packages.setdefault("cuda", match.group(1))
    gpus = strong or weak
    if gpus:
        seen: dict[tuple, LogGpu] = {}
        for gpu in gpus:
            # one GPU named in prose per architecture: "H100" and "H100 80GB" are one GPU
            seen.setdefault((None if gpu.bare else gpu.name, gpu.architecture, gpu.bare), gpu)
        named = {g.architecture for g in seen.values() if g.name}
        full = {g.architecture for g in seen.values() if g.name and not g.bare}
        out.gpus = [g for g in seen.values()
                    if (g.name and not (g.bare and g.architecture in full)) or g.architecture not in named]
        for i, gpu in enumerate(out.gpus):
            out.lines[f"gpus.{i}"] = gpu.line
    return out


def frame_package(folder: str) -> str:
    """The package a traceback frame's folder names, as pip names it (the `frame` rule)."""
    folder = folder.lower()
    return PACKAGES.get(folder, folder).replace("_", "-")


def own_capabilities(literals: list[str], family: dict[int, tuple[int, ...]] | None = None) -> tuple[str, ...]:
    """The capabilities the `arch` rule would read in a signature's own literal text (`sm75` in
    "FlashInfer requires GPUs with sm75 or higher") that the literal fixes, whatever GPU printed it:
    on a line that signature matched they name what the code requires, not the GPU (`without_own`).
    A number of the cell's family (kb.records.patterns.widen) is not fixed: it varies with the GPU."""
    regex = re.compile(dict((name, pattern) for name, _, pattern, _ in RULES)["architecture name"], re.I)
    found = []
    for text in literals:
        for digits in regex.findall(text):
            capability = digits_capability(digits)
            if capability is None:
                continue
            major, _, minor = capability.partition(".")
            if family and int(minor) in family.get(int(major), ()):
                continue
            found.append(capability)
    return tuple(sorted(set(found)))


def without_own(facts: dict, own: set[tuple[int, str]]) -> dict:
    """`facts` (as_json) less each GPU known only by a number (no name) that a line shows inside the
    literal of a signature it matched: `own` holds (line, capability) pairs (own_capabilities)."""
    if not facts.get("gpus") or not own:
        return facts
    kept = [g for g in facts["gpus"] if g["name"] is not None or (g["line"], g["compute_capability"]) not in own]
    if len(kept) == len(facts["gpus"]):
        return facts
    lines = {k: v for k, v in facts["lines"].items() if not k.startswith("gpus.")}
    lines |= {f"gpus.{i}": g["line"] for i, g in enumerate(kept)}
    return facts | {"gpus": kept or None, "lines": dict(sorted(lines.items()))}


def read_text(text: str) -> LogFacts:
    return read(text.split("\n"))


def export() -> dict:
    """The rules for the triage page (kbLogFacts in kb-logfacts.js)."""
    return {"rules": [{"name": n, "fact": f, "pattern": p} for n, f, p, _ in RULES], "ignore": IGNORE,
            "models": [{"pattern": p, "capability": c} for p, c in MODELS], "packages": PACKAGES,
            "max_listed": MAX_LISTED, "line_limit": 4096, "architecture": architecture_table()}
