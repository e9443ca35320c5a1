"""Construct one CuTe DSL (nvidia-cutlass-dsl) MMA op, or compile one small kernel, for a target
architecture on a machine with no GPU, and print what the DSL says.

`kb repro` runs this with the pinned nvidia-cutlass-dsl release and the releases its import needs
(`needs:`) on PYTHONPATH, nothing installed:

    python cute_dsl_op.py --arch=sm_121a --op=tcgen05-f16bf16

The DSL takes the target from CUTE_DSL_ARCH when it is set (else it asks the GPU), and every MMA op
checks it against the architectures it admits when it is constructed, before any kernel is traced.
So constructing the op is enough to raise the refusal a kernel on that GPU meets at trace time.

    python cute_dsl_op.py --arch=sm_120a --kernel=mxf4nvf4-mma

compiles a kernel instead (`cute.compile` lowers it to PTX and assembles it with the PTX compiler
inside the DSL's library; no GPU and no CUDA toolkit is needed), so a failure of the lowering or
of the assembler shows as it does on the GPU. The message of a failed pass pipeline ends with the
failing operation's IR (hundreds of lines): it is left out, and the number of lines said instead.

    python cute_dsl_op.py --arch=sm_120a --construct=FlashAttentionForwardSm100 --kwargs=head_dim:128 \
        --kernel-file=DIR/vllm/vllm_flash_attn/cute/flash_fwd_sm100.py

constructs a class of an upstream file (`--kernel-file`, unpacked from a released wheel by `kb repro`)
with the keyword arguments given (Python literals): a kernel class that checks the DSL's architecture
in its constructor raises there as it does on the GPU. The file imports its package (and torch through
it), which is not installed, so the class and the top-level definitions it names are lifted out of it
(lift.py, which `kb repro` copies beside this driver); its imports of the DSL and the standard library
follow, and annotations are left unevaluated (they name the package's types).

Output: the op when it is admitted, exit 0; otherwise the exception's first line as a traceback ends
with it (the class's module and name, then the message), then the message's own following lines,
exit 1. The DSL colours its messages with terminal escapes; they are removed (a record holds text).
From 4.5 the `nvidia-cutlass-dsl` wheel is empty and the DSL is in `nvidia-cutlass-dsl-libs-base`
(or -libs-cu13), which is then the release `kb repro` installs and `--version` names.
"""

import argparse
import inspect
import os
import re
import site
import sys
import tempfile
from importlib import metadata

# The wheels are unpacked, not installed: their .pth files (the DSL's python_packages folder, the
# cuda-bindings redirector) are read only from a site folder, so each PYTHONPATH entry is made one.
for entry in filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    site.addsitedir(entry)

ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The MLIR diagnostic's note that precedes the failing operation's IR dump.
IR_DUMP = re.compile(r"^\s*note: .*see current operation:")
# Distributions that carry the `cutlass` package: the wheel itself up to 4.4, its libs wheels from 4.5.
DISTRIBUTIONS = ("nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "nvidia-cutlass-dsl-libs-cu13")


def construct(op):
    """The op named `op`, with the operand types and shape a tutorial GEMM uses."""
    import cutlass
    from cutlass.cute.nvgpu import tcgen05

    if op == "tcgen05-f16bf16":
        return tcgen05.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (128, 256, 16), tcgen05.CtaGroup.ONE,
                                    tcgen05.OperandSource.SMEM, tcgen05.OperandMajorMode.K,
                                    tcgen05.OperandMajorMode.K)
    sys.exit(f"cute_dsl_op.py: no op {op!r}; known: tcgen05-f16bf16")


def constructed(path, name, kwargs):
    """An instance of class `name` of the upstream file at `path`, lifted, built with `kwargs`
    ('head_dim:128,is_causal:True')."""
    from lift import DEFINITIONS, lifted, name_and_literal

    arguments = {}
    for item in filter(None, kwargs.split(",")):
        try:
            key, value = name_and_literal(item, "kwargs", "head_dim:128")
        except ValueError as exc:
            sys.exit(f"cute_dsl_op.py: {exc}")
        arguments[key] = value
    # Postponed annotations: a method's annotations name the package's own types, never imported here.
    module = lifted(path, [name], tempfile.mkdtemp(), "from __future__ import annotations", "lifted_op",
                    DEFINITIONS, keep_imports=True)
    return getattr(module, name)(**arguments)


def compile_kernel(name):
    """Compile kernel `name` for one warp; each kernel is the least that reaches one instruction."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import warp
    from cutlass.cute.runtime import make_fake_compact_tensor

    if name != "mxf4nvf4-mma":
        sys.exit(f"cute_dsl_op.py: no kernel {name!r}; known: mxf4nvf4-mma")

    # 4.5 takes the scale factors as operands after A and B (its mma_atom_call's `a` may be a list);
    # 4.4 takes them as fields of the atom, pointers to the registers. Outside the kernel, so that
    # the DSL traces this choice as Python rather than as a branch of the kernel.
    variadic = "List" in str(inspect.signature(cute.mma_atom_call).parameters["a"].annotation)

    def block_scaled_mma(atom, acc, a, b, scale_a, scale_b):
        if variadic:
            cute.mma_atom_call(atom, acc, [a, scale_a], [b, scale_b], acc)
            return
        atom.set(warp.Field.SFA, scale_a.iterator)
        atom.set(warp.Field.SFB, scale_b.iterator)
        cute.mma_atom_call(atom, acc, a, b, acc)

    @cute.kernel
    def mxf4nvf4_mma(out: cute.Tensor):
        # One SM120 block-scaled MMA (m16n8k64, E2M1 operands, UE4M3 scales, one scale per 16 values)
        # on one thread's register fragments: 32 and 16 FP4 values, a 32-bit scale register each,
        # four FP32 accumulators. The operands are left unset, as only the compile is wanted; the
        # result is stored so that the MMA is not removed as dead code.
        atom = cute.make_mma_atom(warp.MmaMXF4NVF4Op(cutlass.Float4E2M1FN, cutlass.Float32, cutlass.Float8E4M3FN))
        a = cute.make_rmem_tensor((32,), cutlass.Float4E2M1FN)
        b = cute.make_rmem_tensor((16,), cutlass.Float4E2M1FN)
        scale_a = cute.make_rmem_tensor((4,), cutlass.Float8E4M3FN)
        scale_b = cute.make_rmem_tensor((4,), cutlass.Float8E4M3FN)
        acc = cute.make_rmem_tensor((4,), cutlass.Float32)
        acc.fill(0.0)
        block_scaled_mma(atom, acc, a, b, scale_a, scale_b)
        out[0] = acc[0]

    @cute.jit
    def launch(out: cute.Tensor):
        mxf4nvf4_mma(out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    cute.compile(launch, make_fake_compact_tensor(cutlass.Float32, (4,)))
    return f"compiled {name}"


def described(exc):
    """The exception as a traceback's last lines show it, without escapes or the IR dump."""
    from lift import exception_line

    lines = [line.rstrip() for line in ESCAPE.sub("", exception_line(exc)).strip("\n").splitlines()]
    cut = next((i for i, line in enumerate(lines) if IR_DUMP.match(line)), None)
    if cut is not None:
        lines = lines[:cut] + [f"({len(lines) - cut - 1} lines of the failing operation's IR left out)"]
    return "\n".join(lines)


def dsl_version():
    """'<distribution> <version>' of the distribution that carries the DSL."""
    for name in DISTRIBUTIONS:
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return f"none of {', '.join(DISTRIBUTIONS)} is installed"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--arch")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--op")
    what.add_argument("--kernel")
    what.add_argument("--construct")
    parser.add_argument("--kwargs", default="")
    parser.add_argument("--kernel-file")
    options = parser.parse_args()
    if options.version:
        print(dsl_version())
        return 0
    if not (options.op or options.kernel or options.construct):
        parser.error("name an --op to construct, a --kernel to compile or a class to --construct")
    if bool(options.construct) != bool(options.kernel_file):
        parser.error("--construct names a class of --kernel-file: give both (kb repro adds --kernel-file)")
    os.environ["CUTE_DSL_ARCH"] = options.arch  # read when the DSL is imported, so set first
    try:
        if options.construct:
            done = f"constructed {type(constructed(options.kernel_file, options.construct, options.kwargs)).__name__}"
        else:
            done = compile_kernel(options.kernel) if options.kernel else f"constructed {construct(options.op)!r}"
    except Exception as exc:  # what the DSL raised, as a traceback's last lines show it
        print(described(exc), flush=True)
        return 1
    print(done[:400], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
