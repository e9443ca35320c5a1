"""What `kb doctor` knows about a machine: the facts model and the probes that gather it.

Every fact is optional. A fact that is missing (not probed, probe failed, probe timed out) is
`null` or absent and reads as *unknown*; nothing here raises for a missing GPU, driver or package.
GPU probes run in isolated child processes (`python -I -c ...`, in an empty folder) with a timeout
and a cap on what they print (`Child`), so a wedged driver makes the facts unknown instead of
hanging the command. Package versions are those of the judged serving environment, read from its
distributions' metadata by its own interpreter (kb.doctor.environment); PyTorch's CUDA and cuDNN
are asked of that interpreter too. This process never imports the serving environment's code.

The facts file that `kb doctor --facts FILE` reads is `Facts` as JSON (`kb doctor --facts-schema`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from kb.records.verdict import capability_arch as architecture
from kb.records.visible import escape, first_risky, visible

if TYPE_CHECKING:
    from kb.doctor.environment import Judged

DEFAULT_TIMEOUT = 20.0

# Record package name (components[].package) -> distribution names to look up, first found wins.
# A package not listed here is looked up under its own name.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "triton": ("triton", "pytorch-triton"),
    "vllm": ("vllm",),
    "sglang": ("sglang",),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "cudnn": ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn"),
    # the wheel PyTorch pulls in; without it the H100 run of 2026-12-05 listed "nccl: not installed"
    # beside a prediction that read nvidia-nccl-cu13 2.28.9 (kb.doctor.predict.NCCL_DISTRIBUTIONS)
    "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "nccl"),
    "sgl-kernel": ("sgl-kernel",),
    "tensorrt-llm": ("tensorrt-llm",),
    "cutlass": ("nvidia-cutlass", "nvidia-cutlass-dsl"),
    "cuda-toolkit": ("cuda-toolkit", "nvidia-cuda-nvcc-cu13", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc"),
}
# Always probed, whatever the records name.
BASE_PACKAGES = ("torch", "triton", "vllm", "sglang", "flashinfer", "cudnn")
# Facts that records may name as a package but that are not distributions.
NOT_DISTRIBUTIONS = {"nvidia-driver", "cuda"}

# Environment variables always reported; the records add the ones they mention (kb.doctor.diagnose).
BASE_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "TRITON_PTXAS_PATH",
            "FLASHINFER_CUDA_ARCH_LIST")
ENV_PREFIXES = ("VLLM_",)  # every variable set with these prefixes is reported
# A name that may hold a secret: its value is never reported, whatever the records say.
_SECRET = re.compile(r"PASS|PWD|AUTH|COOKIE|SESSION|PRIVATE|CERT|SIGN|KEY|TOKEN|SECRET|CREDENTIAL", re.I)
# A URL's user part, with or without a password: Git and the Hugging Face hub take a token as the
# user name (https://hf_xxx@huggingface.co/...).
_USERINFO = re.compile(r"://[^/\s@?#]*@")
# A query value that holds a digit and a letter (api_token=abc123, sig=Zz9) may be a token; a name,
# a number or a word alone is kept. Same test as the request's `mixed` secret shapes.
_QUERY_VALUE = re.compile(r"[?&;][^=&#\s]{0,100}=([^&#\s]{1,2000})")
REDACTED = "<redacted>"
SET = "<set>"  # set, its value not reported: no record compares it
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")  # EnvName below


def _plain(text: str) -> str:
    """Facts strings are printed by `kb doctor`: no control, format (bidi), separator or
    non-character code points (`kb.records.visible.risky`), whoever wrote the file."""
    index = first_risky(text)
    if index != -1:
        raise ValueError(f"must not contain control or format characters (found {escape(text[index])} "
                         f"at offset {index})")
    return text


PackageName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=40)]
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=100)]
SHORT, ENV_VALUE, NOTE = 200, 4000, 1000  # longest string of each kind
Short = Annotated[str, Field(max_length=SHORT), AfterValidator(_plain)]
EnvValue = Annotated[str, Field(max_length=ENV_VALUE), AfterValidator(_plain)]
Note = Annotated[str, Field(max_length=NOTE), AfterValidator(_plain)]
# Every number has a ceiling far above any GPU made, so that no file can make the report
# compute with a 4000-digit integer (float conversion overflows, str() hits Python's digit limit).
MAX_MEMORY_BYTES = 2**50  # 1 PiB; GPUs today have under 2**38
MAX_SHARED_MEMORY_BYTES = 2**24  # 16 MiB; today's GPUs have at most 228 KiB per SM
MAX_SM_COUNT = 10_000  # today's largest have under 200
MAX_GPUS, MAX_NOTES, MAX_NAMES = 256, 200, 1000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Gpu(_Model):
    """One GPU. Each field is null when unknown."""

    name: Short | None = Field(None, description="Device name, e.g. 'NVIDIA H200' or 'NVIDIA GB10'")
    compute_capability: Annotated[str, Field(pattern=r"^\d{1,2}\.\d{1,2}$")] | None = Field(
        None, description="'major.minor', e.g. '12.0'; decides the architecture (12.0 -> sm_120)")
    memory_bytes: Annotated[int, Field(ge=0, le=MAX_MEMORY_BYTES)] | None = Field(
        None, description="Total device memory")
    shared_memory_per_sm_bytes: Annotated[int, Field(ge=0, le=MAX_SHARED_MEMORY_BYTES)] | None = Field(
        None, description="Maximum shared memory per multiprocessor (cudaDevAttrMaxSharedMemoryPerMultiprocessor)")
    shared_memory_per_block_optin_bytes: Annotated[int, Field(ge=0, le=MAX_SHARED_MEMORY_BYTES)] | None = Field(
        None, description="Maximum opt-in shared memory per block (cudaDevAttrMaxSharedMemoryPerBlockOptin)")
    sm_count: Annotated[int, Field(ge=0, le=MAX_SM_COUNT)] | None = Field(None, description="Number of multiprocessors")

    @property
    def architecture(self) -> str | None:
        return architecture(self.compute_capability)


PATH_LENGTH = 4096  # PATH_MAX on Linux
PathText = Annotated[str, Field(max_length=PATH_LENGTH), AfterValidator(_plain)]
MAX_FOUND = 100  # other Python environments listed


class FoundPython(_Model):
    """A Python environment that was found but not judged."""

    python: PathText = Field(description="Its interpreter or folder, as found: pass it to --python to judge it")
    found_by: Short = Field(description="How it was found, e.g. 'python3 on PATH'")


class PythonEnvironment(_Model):
    """The Python environment whose packages were read: the one that serves (kb.doctor.environment)."""

    python: PathText = Field(description="Its interpreter, as given with --python or found")
    prefix: PathText | None = Field(None, description="Its sys.prefix: the virtual or conda environment's folder")
    found_by: Short = Field(description="How it was found: 'given with --python', 'the active virtual environment "
                                        "($VIRTUAL_ENV)', 'python3 on PATH', 'the running vLLM server (process N)'...")
    others: Annotated[list[FoundPython], Field(max_length=MAX_FOUND)] = Field(
        [], description="The other environments found, not judged")


class Facts(_Model):
    """The facts about one machine that `kb doctor` judges the cells against."""

    facts_version: Literal[1] = Field(1, description="Format version of this file")
    gpus: Annotated[list[Gpu], Field(max_length=MAX_GPUS)] | None = Field(
        None, description="The GPUs; [] when there is certainly none, null when unknown")
    driver_version: Short | None = Field(None, description="NVIDIA driver version, e.g. '580.95.05'")
    cuda_driver_version: Short | None = Field(
        None, description="Newest CUDA version the driver supports, e.g. '13.0'")
    cuda_runtime_version: Short | None = Field(
        None, description="CUDA version PyTorch was built with (torch.version.cuda)")
    packages: Annotated[dict[PackageName, Short | None], Field(max_length=MAX_NAMES)] = Field(
        {}, description="Record package name -> installed version; null: not installed; absent: unknown")
    env: Annotated[dict[EnvName, EnvValue | None], Field(max_length=MAX_NAMES)] = Field(
        {}, description="Environment variable -> value; null: not set; '<set>': set, value not reported "
                         "(no record compares it); '<redacted>': a value that may be a secret")
    python: Short | None = Field(None, description="Python version of the judged environment (python_environment)")
    python_environment: PythonEnvironment | None = Field(
        None, description="The Python environment whose packages were read; null: none was found, or the facts "
                          "were written by hand")
    platform: Short | None = Field(None, description="Operating system and machine, e.g. 'Linux-x86_64'")
    notes: Annotated[list[Note], Field(max_length=MAX_NOTES)] = Field(
        [], description="What the probes said about facts they could not get")


def json_schema() -> dict:
    schema = Facts.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "kb doctor facts file"
    return schema


# --- probes --------------------------------------------------------------------------------------

# Each child prints one JSON object on stdout. Errors are data, never tracebacks.
NVML_PROBE = r"""
import json
out = {"gpus": []}
try:
    import pynvml
except Exception as exc:
    print(json.dumps({"error": "pynvml (nvidia-ml-py) is not importable: " + str(exc)[:200]}))
    raise SystemExit(0)
def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)
def call(fn, *args):
    try:
        return fn(*args)
    except Exception:
        return None
try:
    pynvml.nvmlInit()
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__ + ": " + str(exc)[:200],
                      "no_driver": type(exc).__name__ in ("NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded")}))
    raise SystemExit(0)
v = call(pynvml.nvmlSystemGetDriverVersion)
out["driver_version"] = text(v) if v is not None else None
v = call(pynvml.nvmlSystemGetCudaDriverVersion_v2) or call(pynvml.nvmlSystemGetCudaDriverVersion)
out["cuda_driver_version"] = "%d.%d" % (v // 1000, v % 1000 // 10) if v else None
count = call(pynvml.nvmlDeviceGetCount)
if count is None:
    out = {"error": "nvmlDeviceGetCount failed"}
for i in range(count or 0):
    h = call(pynvml.nvmlDeviceGetHandleByIndex, i)
    g = {}
    if h is not None:
        v = call(pynvml.nvmlDeviceGetName, h)
        g["name"] = text(v) if v is not None else None
        cc = call(pynvml.nvmlDeviceGetCudaComputeCapability, h)
        g["compute_capability"] = "%d.%d" % tuple(cc) if cc else None
        mem = call(pynvml.nvmlDeviceGetMemoryInfo, h)
        g["memory_bytes"] = int(mem.total) if mem is not None else None
        pci = call(pynvml.nvmlDeviceGetPciInfo, h)
        g["pci"] = text(pci.busId) if pci is not None else None
    out["gpus"].append(g)
call(pynvml.nvmlShutdown)
print(json.dumps(out))
"""

def nvml_probe(folder: str | None = None) -> str:
    """NVML_PROBE, able to import this tool's own pynvml from `folder` (default: where this process
    finds it). The probe runs isolated (-I), which drops PYTHONPATH: a tool installed with
    `pip install --target DIR` and run with PYTHONPATH=DIR (a container's way) found no pynvml in
    the child when the interpreter has none of its own, lost the driver version and so changed the
    matrix key (seen in a rehearsal of issue 36's H100 check; the H100's torch venv has its own
    pynvml). The folder is appended to sys.path, so the interpreter's own modules still come first."""
    if folder is None:
        try:
            spec = importlib.util.find_spec("pynvml")  # locates the module; imports nothing
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            # pynvml.py, or pynvml/__init__.py for a package: the folder on sys.path holds either
            folder = os.path.dirname(spec.origin)
            if spec.submodule_search_locations is not None:
                folder = os.path.dirname(folder)
    if not folder:
        return NVML_PROBE
    return f"import sys\nsys.path.append({folder!r})\n" + NVML_PROBE


CUDA_PROBE = r"""
import ctypes, json, sys
out = {}
names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so", "libcuda.dylib"]
lib = None
for n in names:
    try:
        lib = ctypes.CDLL(n)
        break
    except OSError:
        pass
def err(rc):
    s = ctypes.c_char_p()
    try:
        lib.cuGetErrorName(rc, ctypes.byref(s))
        return (s.value or b"").decode() or str(rc)
    except Exception:
        return str(rc)
if lib is None:
    out = {"error": "the CUDA driver library (libcuda) is not installed", "no_driver": True}
else:
    rc = lib.cuInit(0)
    if rc == 100:
        out = {"gpus": [], "note": "cuInit: CUDA_ERROR_NO_DEVICE"}
    elif rc != 0:
        out = {"error": "cuInit failed: " + err(rc), "no_driver": rc in (34, 35)}
    else:
        v = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
            out["cuda_driver_version"] = "%d.%d" % (v.value // 1000, v.value % 1000 // 10)
        n = ctypes.c_int()
        lib.cuDeviceGetCount(ctypes.byref(n))
        out["gpus"] = []
        attrs = {"sm_count": 16, "shared_memory_per_sm_bytes": 81, "shared_memory_per_block_optin_bytes": 97,
                 "cc_major": 75, "cc_minor": 76}
        for i in range(n.value):
            d = ctypes.c_int()
            g = {}
            if lib.cuDeviceGet(ctypes.byref(d), i) != 0:
                out["gpus"].append(g)
                continue
            buf = ctypes.create_string_buffer(256)
            if lib.cuDeviceGetName(buf, 256, d) == 0:
                g["name"] = buf.value.decode(errors="replace")
            for key, attr in attrs.items():
                a = ctypes.c_int()
                if lib.cuDeviceGetAttribute(ctypes.byref(a), attr, d) == 0:
                    g[key] = a.value
            if "cc_major" in g and "cc_minor" in g:
                g["compute_capability"] = "%d.%d" % (g.pop("cc_major"), g.pop("cc_minor"))
            mem = ctypes.c_size_t()
            fn = getattr(lib, "cuDeviceTotalMem_v2", None) or lib.cuDeviceTotalMem
            if fn(ctypes.byref(mem), d) == 0:
                g["memory_bytes"] = mem.value
            bus = ctypes.create_string_buffer(64)
            if lib.cuDeviceGetPCIBusId(bus, 64, d) == 0:
                g["pci"] = bus.value.decode()
            out["gpus"].append(g)
for n in (["cudnn64_9.dll", "cudnn64_8.dll"] if sys.platform == "win32" else ["libcudnn.so.9", "libcudnn.so.8"]):
    try:
        c = ctypes.CDLL(n)
        c.cudnnGetVersion.restype = ctypes.c_size_t
        out["cudnn"] = int(c.cudnnGetVersion())
        break
    except (OSError, AttributeError):
        pass
print(json.dumps(out))
"""

TORCH_PROBE = r"""
import json
out = {}
import torch
out["cuda_runtime_version"] = torch.version.cuda
try:
    v = torch.backends.cudnn.version()
    out["cudnn"] = int(v) if v else None
except Exception:
    pass
if torch.cuda.is_available():
    out["gpus"] = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        g = {"name": p.name, "compute_capability": "%d.%d" % (p.major, p.minor),
             "memory_bytes": int(p.total_memory), "sm_count": int(p.multi_processor_count)}
        for key, attr in (("shared_memory_per_sm_bytes", "shared_memory_per_multiprocessor"),
                          ("shared_memory_per_block_optin_bytes", "shared_memory_per_block_optin")):
            if hasattr(p, attr):
                g[key] = int(getattr(p, attr))
        if hasattr(p, "pci_bus_id"):
            g["pci"] = "%04x:%02x:%02x.0" % (p.pci_domain_id, p.pci_bus_id, p.pci_device_id)
        out["gpus"].append(g)
print(json.dumps(out))
"""


MAX_OUTPUT = 1024 * 1024  # bytes a child may print; a probe prints a few hundred


@dataclass
class Finished:
    """What one child did: `stdout` and `stderr` (each at most MAX_OUTPUT bytes), its exit status
    (None when it was killed), and whether it was killed for its time or for printing too much."""

    stdout: bytes
    stderr: bytes
    returncode: int | None
    timed_out: bool = False
    too_much: bool = False


class Child:
    """A started child whose output is read as it comes, at most MAX_OUTPUT bytes of each stream:
    `communicate` would keep all of it, and an interpreter that prints without end (the one a user
    names with --python may be anything) would fill the memory. Past the cap the child is killed."""

    def __init__(self, argv: list[str], cwd: str, cap: int = MAX_OUTPUT):
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.cap = cap
        self.too_much = threading.Event()
        self.streams = (bytearray(), bytearray())
        self.readers = [threading.Thread(target=self._read, args=(pipe, sink), daemon=True)
                        for pipe, sink in zip((self.proc.stdout, self.proc.stderr), self.streams)]
        for reader in self.readers:
            reader.start()

    def _read(self, pipe, sink: bytearray) -> None:
        while chunk := pipe.read1(65536):
            room = self.cap - len(sink)
            sink += chunk[:room]
            if len(chunk) > room:
                self.too_much.set()
                _kill(self.proc)
                return

    def finish(self, deadline: float) -> Finished:
        """Wait until `deadline` (time.monotonic()), at least a moment, so that a child that
        finished meanwhile is still read; kill it past the deadline."""
        timed_out = False
        try:
            self.proc.wait(timeout=max(0.5, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = not self.too_much.is_set()
            _kill(self.proc)
        for reader, pipe in zip(self.readers, (self.proc.stdout, self.proc.stderr)):
            reader.join(timeout=1)  # a grandchild holding the pipe open must not keep us here
            if not reader.is_alive():  # a pipe still being read is left to its daemon thread
                pipe.close()
        too_much = self.too_much.is_set()
        return Finished(bytes(self.streams[0]), bytes(self.streams[1]),
                        None if timed_out or too_much else self.proc.returncode, timed_out, too_much)


def run_children(probes: dict[str, str], timeout: float, pythons: dict[str, str] | None = None) -> dict[str, dict]:
    """Run each `python -I -c CODE` at once; name -> its JSON, or {"error": ...} (timeout, crash).
    `pythons` names the interpreter of a probe (the judged serving environment's, for the PyTorch
    probe); the others run with this tool's own.

    `python -c` puts the working directory first on sys.path, so a `json.py` or `pynvml.py`
    left in the folder `kb doctor` runs in would be imported and run. The children run isolated
    (`-I`: no working directory or script folder on sys.path, no PYTHON* variables, no user
    site-packages; the interpreter's own site-packages, where pynvml and torch are, stay) and
    in a fresh empty folder, so that nothing they open by a relative name is someone else's."""
    with tempfile.TemporaryDirectory(prefix="kb-doctor-", ignore_cleanup_errors=True) as empty:
        return _run_children(probes, timeout, empty, pythons or {})


def _run_children(probes: dict[str, str], timeout: float, cwd: str, pythons: dict[str, str]) -> dict[str, dict]:
    started: dict[str, Child] = {}
    results: dict[str, dict] = {}
    for name, code in probes.items():
        try:
            started[name] = Child([pythons.get(name, sys.executable), "-I", "-c", code], cwd)
        except OSError as exc:
            results[name] = {"error": f"could not start the probe: {exc}"}
    deadline = time.monotonic() + timeout
    for name, child in started.items():
        done = child.finish(deadline)
        if done.timed_out:
            results[name] = {"error": f"timed out after {timeout:g} s (treated as unknown)", "timeout": True}
            continue
        if done.too_much:
            results[name] = {"error": f"printed more than {MAX_OUTPUT:,} bytes (treated as unknown)"}
            continue
        stdout = done.stdout.decode("utf-8", errors="replace")
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        if done.returncode == 0 and lines:
            try:
                result = json.loads(lines[-1])
            except (ValueError, RecursionError):
                result = None
            if isinstance(result, dict):
                results[name] = result
                continue
        stderr = done.stderr.decode("utf-8", errors="replace")
        tail = (stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        results[name] = {"error": f"probe failed: {tail[:300]}"}
    return results


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        try:
            proc.kill()
        except OSError:  # already gone
            pass
    try:  # a process stuck in the driver may not die; do not wait for it
        proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass


def _pci_key(bus_id: str | None):
    match = re.search(r"([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.", bus_id or "")
    return tuple(int(part, 16) for part in match.groups()) if match else None


_GPU_FIELDS = tuple(Gpu.model_fields)


def _merge_gpus(lists: list[list[dict] | None]) -> list[dict] | None:
    """Merge per-GPU data of several probes: the first list that exists is the base; later ones
    fill its unknown fields, matched by PCI bus id (or by position when the counts agree)."""
    base: list[dict] | None = None
    for gpus in lists:
        if gpus is None:
            continue
        if base is None:
            base = [dict(g) for g in gpus]
            continue
        by_pci = {_pci_key(g.get("pci")): g for g in base if _pci_key(g.get("pci"))}
        for i, gpu in enumerate(gpus):
            target = by_pci.get(_pci_key(gpu.get("pci")))
            if target is None and len(gpus) == len(base):
                target = base[i]
            if target is None:
                continue
            for key, value in gpu.items():
                if target.get(key) is None and value is not None:
                    target[key] = value
    if base is None:
        return None
    return [{key: g.get(key) for key in _GPU_FIELDS} for g in base]


def cudnn_version(number: int | None) -> str | None:
    """cudnnGetVersion() -> 'major.minor.patch' (91002 -> 9.10.2, 8902 -> 8.9.2)."""
    if not number or not isinstance(number, int):
        return None
    if number >= 90000:
        return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"
    return f"{number // 1000}.{number % 1000 // 100}.{number % 100}"


def distributions(packages: set[str]) -> dict[str, list[str]]:
    """Record package name -> the distribution names to look up, for each of `packages` that is
    a distribution (the script kb.doctor.environment runs in the judged interpreter reads them)."""
    return {p: list(DISTRIBUTIONS.get(p, (p,))) for p in sorted(set(packages) - NOT_DISTRIBUTIONS)}


def nvcc_version(timeout: float) -> tuple[str | None, str | None]:
    """(version, note) of the nvcc that JIT builds would find: CUDA_HOME, CUDA_PATH, PATH, /usr/local/cuda.
    Only absolute paths count: a relative one (PATH holding `.` or an empty entry) would run an
    `nvcc` from whatever folder `kb doctor` was started in."""
    candidates = [os.path.join(os.environ[v], "bin", "nvcc") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    path_dirs = [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(d)]
    candidates += [shutil.which("nvcc", path=os.pathsep.join(path_dirs)) or "", "/usr/local/cuda/bin/nvcc"]
    for path in candidates:
        if not path or not os.path.isabs(path) or not os.path.exists(path):
            continue
        try:
            done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL, cwd=os.path.dirname(path), errors="replace")
        except subprocess.TimeoutExpired:
            return None, f"nvcc: {path} --version timed out after {timeout:g} s"
        except OSError as exc:
            return None, f"nvcc: {path}: {exc}"
        match = re.search(r"release \d+\.\d+, V(\d+\.\d+\.\d+)", done.stdout) or re.search(
            r"release (\d+\.\d+)", done.stdout)
        if match:
            return match.group(1), None
        return None, f"nvcc: could not read a version from {path} --version"
    return None, None


def environment(names: set[str], compared: set[str] = frozenset()) -> dict[str, str | None]:
    """Each of `names`, BASE_ENV and every set variable with a reported prefix: None when it is not
    set, its value only for names whose values the records compare (`compared`, and BASE_ENV), SET
    for the others, REDACTED for a name that may hold a secret or a value that may hold one (`_secret_value`).
    The report goes into public issues: a value is reported by allow-list, never by default. A name
    that is no shell identifier (the environment allows any) is left out: `Facts` would refuse it."""
    wanted = set(names) | set(BASE_ENV) | {k for k in os.environ if k.startswith(ENV_PREFIXES)}
    wanted = {name for name in wanted if _ENV_NAME.fullmatch(name)}
    shown = set(compared) | set(BASE_ENV)
    out: dict[str, str | None] = {}
    for name in sorted(wanted)[:MAX_NAMES]:
        value = os.environ.get(name)
        if value is not None:
            if _SECRET.search(name) or _secret_value(value):
                value = REDACTED
            elif name not in shown:
                value = SET
        out[name] = _text(value, ENV_VALUE)
    return out


def _secret_value(value: str) -> bool:
    """Whether `value` holds a URL's user part, a query value that looks like a token, or any
    secret shape of the new-failure request (kb.records.secrets, the list the triage page uses too)."""
    from kb.records.secrets import mixed_run, redact

    return (bool(_USERINFO.search(value)) or any(mixed_run(m.group(1)) for m in _QUERY_VALUE.finditer(value))
            or redact(value) != value)


def _text(value, limit: int = SHORT) -> str | None:
    """A string a probe or the environment gave, made fit to be a fact: risky characters
    escaped (`kb.records.visible`), cut to `limit` characters. Facts files get no such help: a
    string there that needs it is refused."""
    if value is None:
        return None
    return visible(value if isinstance(value, str) else repr(value), limit)


def _gpu(fields: dict, notes: list[str]) -> Gpu:
    """A Gpu from what the probes said; a value that does not fit its field becomes unknown."""
    kept = {}
    for key, value in fields.items():
        if key == "name":
            value = _text(value)
        try:
            Gpu(**{key: value})
        except ValidationError:
            notes.append(f"a probe gave {key} = {_text(value, 80)}, which does not fit that fact; treated as unknown")
            continue
        kept[key] = value
    return Gpu(**kept)


def probe(packages: set[str] | None = None, env_names: set[str] | None = None,
          timeout: float = DEFAULT_TIMEOUT, probes: dict[str, str] | None = None,
          env_compared: set[str] | None = None, judged: Judged | None = None,
          judged_notes: list[str] | None = None) -> Facts:
    """Gather the facts of this machine, the packages from the `judged` Python environment
    (kb.doctor.environment.judge, which gives `judged_notes` too; None: none was found, the packages
    are unknown). Never raises for a missing GPU, driver or package."""
    notes: list[str] = list(judged_notes or ())
    if probes is None:
        probes = {"nvml": nvml_probe(), "cuda": CUDA_PROBE}
        if judged is not None and judged.packages.get("torch"):
            probes["torch"] = TORCH_PROBE  # PyTorch's CUDA and cuDNN, asked of the serving interpreter
    results = run_children(probes, timeout, {"torch": judged.python} if judged else None)
    nvml, cuda, torch = (results.get(k, {}) for k in ("nvml", "cuda", "torch"))
    for name, result in results.items():
        if "error" in result:
            notes.append(f"{name} probe: {result['error']}")
        if result.get("note"):
            notes.append(f"{name} probe: {result['note']}")

    gpus = _merge_gpus([r.get("gpus") if "error" not in r else None for r in (nvml, cuda, torch)])
    if gpus is None and cuda.get("no_driver") and "error" in nvml:
        gpus = []  # no NVIDIA driver at all: nothing can run on a GPU here
        notes.append("no NVIDIA driver found: treating this machine as having no GPU")

    wanted = set(BASE_PACKAGES) | set(packages or ())
    versions: dict[str, str | None] = {}
    if judged is not None:  # else every package is unknown: absent from the facts
        for package in sorted(wanted - NOT_DISTRIBUTIONS):
            versions[package] = _text(judged.packages.get(package))
    if versions.get("cudnn") is None:
        from_lib = cudnn_version(torch.get("cudnn")) or cudnn_version(cuda.get("cudnn"))
        if from_lib:
            versions["cudnn"] = from_lib
        elif "torch" in probes and "error" in torch:
            versions.pop("cudnn", None)  # torch could have told us; it did not answer
    if "cuda-toolkit" in wanted:
        nvcc, note = nvcc_version(min(timeout, 10.0))
        if note:
            notes.append(note)
        if nvcc:
            versions["cuda-toolkit"] = nvcc
        elif note:
            versions.pop("cuda-toolkit", None)
    driver = _text(nvml.get("driver_version"))
    if "nvidia-driver" in wanted and (driver or gpus == []):
        versions["nvidia-driver"] = driver
    runtime = _text(torch.get("cuda_runtime_version"))
    if "cuda" in wanted and (runtime or ("torch" in versions and versions["torch"] is None)):
        versions["cuda"] = runtime

    gpu_facts = [_gpu(g, notes) for g in gpus[:MAX_GPUS]] if gpus is not None else None
    return Facts(
        gpus=gpu_facts,
        driver_version=driver,
        cuda_driver_version=_text(nvml.get("cuda_driver_version") or cuda.get("cuda_driver_version")),
        cuda_runtime_version=runtime,
        packages=versions,
        env=environment(env_names or set(), env_compared or set()),
        python=_text(judged.version) if judged else None,
        python_environment=judged.facts if judged else None,
        platform=_text(f"{platform.system()}-{platform.machine()}"),
        notes=[_text(note, NOTE) for note in notes[:MAX_NOTES]],
    )
