"""The GPU table: a GPU model's name -> its compute capability (NVIDIA's published capabilities,
https://developer.nvidia.com/cuda-gpus). The log reader (kb.triage.logfacts) finds GPUs in logs
with it, the My stack page (kb.site.stack) groups the records' GPU names by it, and kb doctor's
`--target RTX 5090` (kb.doctor.predict) turns a name into the capability it judges for.

`SCOPE` is what the index covers: a GPU of another architecture (an RTX 4090, an H100) gets a
sentence saying so (kb.records.verdict.out_of_scope) on My stack, the triage page, the search box
and `kb match`, rather than a page of "environment unknown" or "no known failure"."""

from __future__ import annotations

import re
from functools import lru_cache

# GPU model (in the matched name) -> compute capability; first that matches wins.
MODELS: list[tuple[str, str]] = [
    (r"\bgb10\b|dgx spark", "12.1"),
    # GeForce numbers (x050-x090) alone too: a log's "my 5090 GPU" (kb.triage.logfacts reads a bare
    # number only beside a GPU word); the workstation RTX 2000-6000 Ada are not among them. RTX PRO
    # without "Blackwell": the PRO line is Blackwell only.
    (r"\b(?:rtx ?)?50[5-9]0(?=\b|ti\b)|\brtx pro [0-9]{4}\b", "12.0"),
    (r"\bthor\b", "11.0"),
    (r"\bg?b300\b", "10.3"),
    (r"\bg?b[12]00\b", "10.0"),
    (r"\bg?h(?:100|200|800|20)\b", "9.0"),
    (r"\b(?:rtx ?)?40[5-9]0(?=\b|ti\b)|\bl40s?\b|\bl4\b|\brtx [2-6]000 ada\b", "8.9"),
    (r"\b(?:rtx ?)?30[5-9]0(?=\b|ti\b)|\ba(?:10|40|2|16)\b|\brtx a[0-9]000\b", "8.6"),
    (r"\ba(?:100|800|30)\b", "8.0"),
    (r"\bt4\b|\b(?:rtx ?)?20[5-9]0(?=\b|ti\b)", "7.5"),
    (r"\bv100", "7.0"),
    (r"\bp100\b", "6.0"),
    (r"\bgtx 9[0-9]0\b|\btesla m(?:4|40|60)\b", "5.2"),
]


# The architectures the records cover (tests/test_stack.py checks every entry's against it).
SCOPE = ("sm_120", "sm_121")
# GPUs outside SCOPE that My stack offers by name, so that their owners learn the index is not for
# them from the menu itself; each is a MODELS name.
OTHER_GPUS = ("RTX 4090", "RTX 3090", "L40S", "A100", "H100", "H200", "B200", "B300")


@lru_cache(maxsize=1)
def _compiled() -> list[tuple[re.Pattern, str]]:
    return [(re.compile(pattern, re.I), cc) for pattern, cc in MODELS]


def model_capability(name: str) -> str | None:
    """The capability of the first model whose pattern the name matches; None for none."""
    for pattern, cc in _compiled():
        if pattern.search(name):
            return cc
    return None
