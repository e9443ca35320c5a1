"""Compile one Triton kernel for a CUDA capability on a machine with no GPU, and print what Triton says.

`kb repro` runs this with the pinned Triton release on sys.path (nothing else installed):

    python triton_compile.py --capability=120 --kernel=dot --args=a:*fp16,b:*fp16,c:*fp32
    python triton_compile.py --capability=120 --kernel=_fwd_grouped_kernel_stage1 --constexprs=... \
        --args=... --num-stages=1,2 --max-shared=101376 --kernel-file=DIR/vllm/.../triton_decode_attention.py

Triton's driver is replaced by a stub that reports the capability and device 0; everything else is the
installed Triton (specialisation, TTIR, TTGIR, LLVM, PTX and the ptxas in its wheel), reached through
`JITFunction.warmup`, which compiles without launching. The kernel is one of the few below, or the
function named `--kernel` in an upstream file (`--kernel-file`, unpacked from a released wheel by
`kb repro`). That file's own imports (torch, the serving engine) are not installed, so the function
and the top-level functions it calls are lifted out of it with `ast` into a module of their own
(lift.py, which `kb repro` copies beside this driver).

Output: one line per compiled variant with its shared memory, and the line Triton's OutOfResources
renders when it exceeds --max-shared (the device's opt-in limit, which on a GPU Triton reads when it
loads the kernel; here it is given), exit 1. A compile failure prints the exception as Python's
traceback ends it, with local paths replaced by <site-packages> and <tmp>, exit 1. A failure inside
the compiler's C++ (an assertion, an LLVM error) ends the process as it would end a real run.
"""

import argparse
import itertools
import os
import re
import sys
import tempfile

import triton
import triton.language as tl

from lift import lifted


# --- kernels of our own: a few lines each, the smallest use of the operation an entry is about ---


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)


@triton.jit
def dot(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    acc = tl.dot(tl.load(a + m[:, None] * K + k[None, :]), tl.load(b + k[:, None] * N + n[None, :]))
    tl.store(c + m[:, None] * N + n[None, :], acc)


@triton.jit
def row_max(x, out, N: tl.constexpr):
    # a reduction across a warp: lowered to shfl.sync butterflies
    row = tl.program_id(0)
    tl.store(out + row, tl.max(tl.load(x + row * N + tl.arange(0, N)), axis=0))


@triton.jit
def ws_dot(a, b, c, K, M: tl.constexpr, N: tl.constexpr, BK: tl.constexpr):
    # a K loop of dots marked for warp specialization, its operands loaded through pointers that
    # advance each step (the usual matmul loop, no tensor descriptors)
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BK)
    pa, pb = a + m[:, None] * K + k[None, :], b + k[:, None] * N + n[None, :]
    acc = tl.zeros((M, N), dtype=tl.float32)
    for i in tl.range(0, tl.cdiv(K, BK), warp_specialize=True):
        left = K - i * BK
        acc = tl.dot(tl.load(pa, mask=k[None, :] < left, other=0.0), tl.load(pb, mask=k[:, None] < left, other=0.0), acc)
        pa += BK
        pb += BK * N
    tl.store(c + m[:, None] * N + n[None, :], acc)


@triton.jit
def scaled_bmm(a, b, sa, sb, c, T: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # a batched (rank-3) mxfp8 dot: e4m3 operands, one e8m0 scale per 32 elements along K
    t, m, n, k, s = tl.arange(0, T), tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, K // 32)
    t3 = t[:, None, None]
    x = tl.load(a + t3 * M * K + m[None, :, None] * K + k[None, None, :])
    y = tl.load(b + t3 * K * N + k[None, :, None] * N + n[None, None, :])
    xs = tl.load(sa + t3 * M * (K // 32) + m[None, :, None] * (K // 32) + s[None, None, :])
    ys = tl.load(sb + t3 * N * (K // 32) + n[None, :, None] * (K // 32) + s[None, None, :])
    tl.store(c + t3 * M * N + m[None, :, None] * N + n[None, None, :], tl.dot_scaled(x, xs, "e4m3", y, ys, "e4m3"))


@triton.jit
def scaled_mixed(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # a mixed-precision scaled dot: an fp16 left operand times an mxfp4 right one (e2m1 packed two to
    # a byte along K), each side with e8m0 scales of one (127) per 32 elements along K
    m, n, k, kp = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, K // 2)
    x = tl.load(a + m[:, None] * K + k[None, :])
    y = tl.load(b + kp[:, None] * N + n[None, :])
    xs, ys = tl.full((M, K // 32), 127, tl.uint8), tl.full((N, K // 32), 127, tl.uint8)
    tl.store(c + m[:, None] * N + n[None, :], tl.dot_scaled(x, xs, "fp16", y, ys, "e2m1"))


@triton.jit
def scaled_dot(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # a two-dimensional mxfp8 dot: e4m3 operands, e8m0 scales of one (127) per 32 elements along K
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    x = tl.load(a + m[:, None] * K + k[None, :])
    y = tl.load(b + k[:, None] * N + n[None, :])
    xs, ys = tl.full((M, K // 32), 127, tl.uint8), tl.full((N, K // 32), 127, tl.uint8)
    tl.store(c + m[:, None] * N + n[None, :], tl.dot_scaled(x, xs, "e4m3", y, ys, "e4m3"))


@triton.jit
def scaled_nvfp4(a, b, sa, sb, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # a two-dimensional nvfp4 dot: e2m1 operands packed two to a byte along K, one e4m3 scale per 16
    # elements along K (nvfp4's scale, where mxfp4 has e8m0 per 32), the scales loaded from memory
    m, n, kp, s = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K // 2), tl.arange(0, K // 16)
    x = tl.load(a + m[:, None] * (K // 2) + kp[None, :])
    y = tl.load(b + kp[:, None] * N + n[None, :])
    xs = tl.load(sa + m[:, None] * (K // 16) + s[None, :])
    ys = tl.load(sb + n[:, None] * (K // 16) + s[None, :])
    tl.store(c + m[:, None] * N + n[None, :], tl.dot_scaled(x, xs, "e2m1", y, ys, "e2m1"))


OWN = {"add": add, "dot": dot, "max": row_max, "ws_dot": ws_dot, "scaled_bmm": scaled_bmm,
       "scaled_mixed": scaled_mixed, "scaled_dot": scaled_dot,
       "scaled_nvfp4": scaled_nvfp4}


# --- the stub driver ---------------------------------------------------------------------------


class dtype:
    """What Triton's MockTensor takes for a torch dtype: a class named `dtype` of module `torch`."""

    __module__ = "torch"

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"

    __repr__ = __str__


# Triton's type names to torch's; one object per name (its specialiser caches by object).
TORCH = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp8e4nv": "float8_e4m3fn",
         "fp8e5": "float8_e5m2", "i32": "int32", "i64": "int64", "i8": "int8", "u8": "uint8"}
DTYPES = {name: dtype(torch_name) for name, torch_name in TORCH.items()}


class StubDriver:
    """The calls `JITFunction.run(..., warmup=True)` makes of the active driver."""

    def __init__(self, capability):
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", capability, 32)

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        return "cuda:0"


# --- arguments ---------------------------------------------------------------------------------


def pairs(text):
    """'a:1,b:2' -> [('a', '1'), ('b', '2')]."""
    out = []
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition(":")
        if not sep:
            sys.exit(f"triton_compile.py: {item!r} must be NAME:VALUE")
        out.append((name, value))
    return out


def constexpr(value):
    if value in ("True", "False"):
        return value == "True"
    if value in TORCH or value in ("float32", "float16", "bfloat16"):
        return getattr(tl, TORCH.get(value, value))
    try:
        return int(value)
    except ValueError:
        return float(value)


def argument(kind):
    """A stand-in for one runtime argument: '*bf16' a tensor of that type, 'int' an integer Triton
    specialises as divisible by 16, a number that integer (a stride of 1 is specialised as the
    constant 1, which decides whether a load is contiguous and so how Triton pipelines it), 'float'
    a float, 'none' None."""
    if kind.startswith("*"):
        return triton.runtime.jit.MockTensor(DTYPES[kind[1:]])
    if kind.isdigit():
        return int(kind)
    return {"int": 4096, "float": 0.5, "none": None}[kind]


def scrubbed(text):
    """Local paths out of a message: the installed Triton and the temporary files it made."""
    site = os.path.dirname(os.path.dirname(triton.__file__))
    text = text.replace(site, "<site-packages>")
    return re.sub(re.escape(tempfile.gettempdir()) + r"/[^\s'\"]+?((?:\.[a-z]+)*)(?=[\s'\"]|$)", r"<tmp>\1", text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--capability", type=int)
    parser.add_argument("--kernel")
    parser.add_argument("--kernel-file")
    parser.add_argument("--args", default="")
    parser.add_argument("--constexprs", default="")
    parser.add_argument("--num-warps", type=int, default=4)
    parser.add_argument("--num-stages", default="3")
    parser.add_argument("--grid", default="1")
    parser.add_argument("--max-shared", type=int)
    options = parser.parse_args()
    if options.version:
        print(f"triton {triton.__version__}")
        return 0
    triton.runtime.driver.set_active(StubDriver(options.capability))
    folder = tempfile.mkdtemp()
    if options.kernel_file:
        header = "import triton\nimport triton.language as tl"
        fn = getattr(lifted(options.kernel_file, [options.kernel], folder, header), options.kernel)
    else:
        fn = OWN[options.kernel]
    # A runtime argument may list alternatives ('*bf16/*fp8e4nv'): variant i takes the i-th of each
    # argument that lists them (K and V of one cache change type together), at every --num-stages.
    names = [name for name, _ in pairs(options.args)]
    choices = [kind.split("/") for _, kind in pairs(options.args)]
    count = max([len(c) for c in choices] or [1])
    if any(len(c) not in (1, count) for c in choices):
        sys.exit(f"triton_compile.py: every argument with alternatives must list {count} of them")
    variants = [tuple(c[i] if len(c) > 1 else c[0] for c in choices) for i in range(count)]
    constexprs = {name: constexpr(value) for name, value in pairs(options.constexprs)}
    grid = tuple(int(g) for g in options.grid.split(","))
    status = 0
    for kinds, stages in itertools.product(variants, options.num_stages.split(",")):
        call = {name: argument(kind) for name, kind in zip(names, kinds)}
        variant = " ".join(f"{n}:{k}" for n, k, alts in zip(names, kinds, choices) if len(alts) > 1)
        head = (f"triton {triton.__version__}: {fn.__name__} for cuda capability {options.capability}, "
                f"num_warps={options.num_warps} num_stages={stages}{' ' + variant if variant else ''}")
        try:
            kernel = fn.warmup(**call, **constexprs, grid=grid, num_warps=options.num_warps,
                               num_stages=int(stages))
        except Exception as exc:  # what the compiler raised, as a traceback's last line shows it
            kind = type(exc)
            where = "" if kind.__module__ == "builtins" else kind.__module__ + "."
            print(f"{head}: compile failed", flush=True)
            print(scrubbed(f"{where}{kind.__qualname__}: {exc}"), flush=True)
            status = 1
            continue
        shared = kernel.metadata.shared
        print(f"{head}: shared={shared}", flush=True)
        if options.max_shared is not None and shared > options.max_shared:
            # The check CompiledKernel._init_handles makes against the device's opt-in limit.
            error = triton.runtime.errors.OutOfResources(shared, options.max_shared, "shared memory")
            print(f"{type(error).__module__}.{type(error).__qualname__}: {error}", flush=True)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
