"""Construct one CuTe DSL (nvidia-cutlass-dsl) MMA op for a target architecture on a machine with no GPU,
and print what the DSL says.

`kb repro` runs this with the pinned nvidia-cutlass-dsl release and the releases its import needs
(`needs:`) on PYTHONPATH, nothing installed:

    python cute_dsl_op.py --arch=sm_121a --op=tcgen05-f16bf16

The DSL takes the target from CUTE_DSL_ARCH when it is set (else it asks the GPU), and every MMA op
checks it against the architectures it admits when it is constructed, before any kernel is traced.
So constructing the op is enough to raise the refusal a kernel on that GPU meets at trace time.

Output: the op when it is admitted, exit 0; otherwise the exception's first line as a traceback ends
with it (the class's module and name, then the message), then the message's own following lines,
exit 1. The DSL colours its messages with terminal escapes; they are removed (a record holds text).
"""

import argparse
import os
import re
import site
import sys
from importlib import metadata

# The wheels are unpacked, not installed: their .pth files (the DSL's python_packages folder, the
# cuda-bindings redirector) are read only from a site folder, so each PYTHONPATH entry is made one.
for entry in filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    site.addsitedir(entry)

ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def construct(op):
    """The op named `op`, with the operand types and shape a tutorial GEMM uses."""
    import cutlass
    from cutlass.cute.nvgpu import tcgen05

    if op == "tcgen05-f16bf16":
        return tcgen05.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (128, 256, 16), tcgen05.CtaGroup.ONE,
                                    tcgen05.OperandSource.SMEM, tcgen05.OperandMajorMode.K,
                                    tcgen05.OperandMajorMode.K)
    sys.exit(f"cute_dsl_op.py: no op {op!r}; known: tcgen05-f16bf16")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--arch")
    parser.add_argument("--op")
    options = parser.parse_args()
    if options.version:
        print(f"nvidia-cutlass-dsl {metadata.version('nvidia-cutlass-dsl')}")
        return 0
    os.environ["CUTE_DSL_ARCH"] = options.arch  # read when the DSL is imported, so set first
    try:
        made = construct(options.op)
    except Exception as exc:  # what the DSL raised, as a traceback's last lines show it
        kind = type(exc)
        where = "" if kind.__module__ == "builtins" else kind.__module__ + "."
        text = ESCAPE.sub("", f"{where}{kind.__qualname__}: {exc}")
        print("\n".join(line.rstrip() for line in text.strip("\n").splitlines()), flush=True)
        return 1
    print(f"constructed {made!r}"[:400], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
