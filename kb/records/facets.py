"""The vocabularies of a record and how cells are grouped for browsing: the facets, their display
names and URL keys.

Data only, and the one source of every closed list: `kb.records.schema` builds its choices from the keys
below, `kb new` and the CLI offer them, `kb.site.pages` turns them into index pages and `kb.site.search`
into search filters.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import urlparse

STATUS_NAMES = {
    "fixed-release": "Fixed in a release",
    "fixed-main": "Fixed on main only",
    "fix-proposed": "Fix proposed (open PR)",
    "workaround-only": "Workaround only",
    "device-limit": "Device limit (no fix possible)",
    "under-investigation": "Under investigation",
}

# The statuses in the order a failure lives through them (what browse pages and menus list).
LIFECYCLE = ["under-investigation", "fix-proposed", "fixed-main", "fixed-release", "workaround-only", "device-limit"]
assert sorted(LIFECYCLE) == sorted(STATUS_NAMES)


def order(facet: str, value: str, name: str) -> tuple:
    """Where a value of `facet` sits on browse pages: statuses in lifecycle order, every other
    facet by its display name as a reader reads it (case folded), then its key."""
    if facet == "status":
        return (LIFECYCLE.index(value), "", value)
    return (0, name.casefold(), value)


SYMPTOM_NAMES = {
    "out-of-memory": "Out of memory",
    "crash": "Crash / Xid",
    "hang": "Hang",
    "wrong-output": "Wrong or nondeterministic output",
    "startup-failure": "Startup failure",
    "performance": "Performance",
}

PACKAGE_NAMES = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "flashinfer": "FlashInfer",
    "cutlass": "CUTLASS",
    "triton": "Triton",
    "cudnn": "cuDNN",
    "torch": "PyTorch",
    "tensorrt-llm": "TensorRT-LLM",
    "sgl-kernel": "sgl-kernel",
    "cuda": "CUDA",
    "nvidia-driver": "NVIDIA driver",
    "llama.cpp": "llama.cpp",
    "deepgemm": "DeepGEMM",
    "cuda-toolkit": "CUDA Toolkit",
    "flash-attn": "FlashAttention",
    "nccl": "NCCL",
    "xformers": "xFormers",
    # Each project as it writes its own name, so a page never shows `cublas` beside `cuDNN` or
    # `flash-attn-4` beside FlashAttention (UX review S3-15); names a project writes in lower case
    # (bitsandbytes, torchao, causal-conv1d, llama-box) stay as they are, so they are not listed.
    "cublas": "cuBLAS",
    "flash-attn-4": "FlashAttention 4",
    "nvidia-cutlass-dsl": "CUTLASS DSL",
    "lmdeploy": "LMDeploy",
    "ktransformers": "KTransformers",
    "sageattention": "SageAttention",
    "gpustack": "GPUStack",
    "mineru": "MinerU",
    "mamba-ssm": "Mamba",
    "freetoken": "FreeToken",
    "triton-windows": "Triton for Windows",
    "vllm-recipes": "vLLM Recipes",
}

ARCH_NAMES = {"sm_120": "sm_120 (RTX PRO 6000 / 5000, RTX 50xx)", "sm_121": "sm_121 (GB10, DGX Spark)"}

# How a page labels a signature's kind: the reader's words, never the record's (`log-line:`).
KIND_NAMES = {"exception": "Error line", "log-line": "Log line", "kernel-message": "Kernel message",
              "symptom": "Search words"}

ROLES = ("raises", "triggers", "involved", "unaffected")
REMEDY_KINDS = ("version-upgrade", "flag", "env-var", "config", "patch")
RELATED_HOW = ("same-root-number", "look-alike", "same-component", "same-symptom")


MAX_KEY_CHARS = 60  # the words of a facet key; a longer key is cut and given a hash, as slugs are


def key(value: str) -> str:
    """URL key of a facet value: lowercase words joined by hyphens. Values with the same words
    share a key (one listing); a key longer than MAX_KEY_CHARS is cut there and ends in a hash of
    the whole key, so a GPU name or repository of any length makes a folder name any file system
    holds (69 characters at most) and two long keys that share their start stay apart."""
    words = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-") or "other"
    if len(words) <= MAX_KEY_CHARS:
        return words
    digest = hashlib.sha256(words.encode("ascii")).hexdigest()[:8]
    return f"{words[:MAX_KEY_CHARS].rstrip('-')}-{digest}"


def package_name(package: str) -> str:
    return PACKAGE_NAMES.get(package, package)


# Packages a reader looks for as one component on browse pages and in the search menu: the CUDA
# toolkit's nvcc and ptxas are CUDA. Cell pages keep each package's own name.
COMPONENT_GROUPS = {"cuda-toolkit": "cuda"}


def component(package: str) -> str:
    """The component a package is browsed under (its group, else itself)."""
    return COMPONENT_GROUPS.get(package, package)


def component_name(package: str) -> str:
    """The display name of the component a package is browsed under."""
    return package_name(component(package))


def spelling(name: str) -> str:
    """What is left of a name when spelling is set aside: letter case, spaces, hyphens and other
    punctuation ("any SM120 build target" and "any sm_120 build target" are one name). Two values
    with the same spelling are one group on browse pages (kb.records.catalog), and the linter
    (KB081) asks records to write them one way."""
    return re.sub(r"[^0-9a-z]+", "", name.casefold())


_FAMILY = re.compile(r"(RTX PRO [0-9]{4}|RTX [0-9]{4}(?: Ti)?|GB[0-9]+)(?![0-9A-Za-z])|(RTX [0-9]{4})", re.I)
OTHER_GPUS = "Build targets and cards not named"


def gpu_family(name: str) -> str:
    """The model family a GPU name belongs to, for the By GPU page's headings: 'RTX PRO 6000' for
    each RTX PRO 6000 Blackwell edition, 'RTX 5090' for the 5090 and 5090 D, 'GB10'; names that
    hold no model number (build targets, unnamed cards) go under OTHER_GPUS. Families are told
    apart by `spelling`."""
    found = _FAMILY.match(name)
    return (found.group(1) or found.group(2)) if found else OTHER_GPUS


_NOTE = re.compile(r"\s*\([^()]*\)$")  # a trailing note: "GB10 (unconfirmed report, see claims)"
_UNNAMED = re.compile(r"\bsm[ _]?(1[0-9]{2})\b", re.I)


def gpu_label(name: str) -> str:
    """The name of the By GPU group a record's GPU string is listed under: the GPU, never the
    record's note about it (UX review S3-15). A trailing note in parentheses is dropped (the entry
    page still shows it), "Laptop GPU" is "Laptop", and a card whose model no report names
    ("SM120 GPU", "Blackwell SM120 card") is "sm_120 card, model not named". Build targets keep
    their words."""
    label = _NOTE.sub("", name).strip() or name
    label = re.sub(r"\bLaptop GPU$", "Laptop", label)
    arch = _UNNAMED.search(label)
    if arch and gpu_family(label) == OTHER_GPUS and "build" not in label.casefold():
        return f"sm_{arch.group(1)} card, model not named"
    return label


def family_order(family: str) -> tuple:
    """GB10 first, then RTX PRO and RTX cards from the largest model number down, OTHER_GPUS last."""
    if family == OTHER_GPUS:
        return (3, 0, family)
    number = int(re.search(r"[0-9]+", family).group())
    return (0 if family.startswith("GB") else 1 if family.startswith("RTX PRO") else 2, -number, family)


def repository(url: str) -> str:
    """'owner/repo' of a GitHub link, else the host."""
    parsed = urlparse(url)
    parts = [p for p in parsed.path.split("/") if p]
    if parsed.hostname == "github.com" and len(parts) >= 2:
        return f"{parts[0]}/{parts[1]}"
    return parsed.hostname or url


# facet -> (title of its overview page, function cell -> [(value key, display name)])
def values(facet: str, entry) -> list[tuple[str, str]]:
    if facet == "gpu":
        return [(key(gpu_label(g)), gpu_label(g)) for g in entry.hardware.gpus]
    if facet == "architecture":
        return [(a.replace("_", "-"), ARCH_NAMES[a]) for a in entry.hardware.architectures]
    if facet == "component":
        return [(key(component(c.package)), component_name(c.package)) for c in entry.components]
    if facet == "symptom":
        return [(s, SYMPTOM_NAMES[s]) for s in entry.symptoms]
    if facet == "status":
        from kb.records.state import state  # here, not above: kb.records.state reads this module's names

        shown = state(entry)
        return [(shown.key, shown.words)]
    if facet == "upstream":
        repos = {repository(link.url) for link in entry.upstream}
        return [(key(r), r) for r in sorted(repos)]
    raise KeyError(facet)


FACETS = {
    "gpu": "By GPU",
    "architecture": "By architecture",
    "component": "By component",
    "symptom": "By symptom",
    "status": "By status",
    "upstream": "By upstream repository",
}
