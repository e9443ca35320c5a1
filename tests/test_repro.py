"""Reproductions (kb.records.reproduction, kb repro): every recorded output shows its entry's
literal and names its pinned release; the writer keeps the files' layout; an unreachable index is
one clear line; an interrupted install leaves nothing in the cache; and one ptxas reproduction
runs end to end from the tool wheelhouse the Makefile fills (.venv/repro-wheelhouse/), offline."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from kb import cli
from kb.records import lint, reproduction
from kb.records.normalise import normalise
from kb.repro import install, write

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import wheel_install  # noqa: E402

ENTRIES = ROOT / "kb" / "entries"
# The entries whose ptxas literal a pip ptxas prints verbatim (../shared/notes/static-repro-2026-12-05.md, §1.2-1.3).
REPRODUCED = {"triton-ptxas-sm120-gpu-name-not-defined", "triton-ptxas-sm121a-gpu-name-not-defined",
              "flashinfer-aot-cvt-e2m1x2-not-supported-sm120", "llama-cpp-mxfp4-mma-block-scale-plain-sm120-target",
              "triton-tma-scatter4-not-supported-sm12x", "triton-tma-gather4-shared-cluster-ptxas-sm12x"}
END_TO_END = "flashinfer-aot-cvt-e2m1x2-not-supported-sm120"
# The entries whose literal Triton itself prints when it compiles for capability 120/121 with no GPU
# (same notes, §2): a kernel of ours, or the released vLLM wheel's MLA decode kernel.
TRITON = {"triton-getmmaversionsafe-compute-capability-not-supported-sm120",
          "triton-llvm-sm120-unrecognized-shfl-sync-cannot-select", "triton-ptxas-sm120-gpu-name-not-defined",
          "triton-ptxas-sm121a-gpu-name-not-defined", "mla-decode-fp8-kv-triton-shared-memory",
          "sglang-fused-moe-default-config-smem-147456-sm12x", "triton-llvm-sm121a-unrecognized-shfl-sync-cannot-select-gb10",
          "sglang-context-attention-fwd-block128-smem-131072-sm12x"}
MLA = "mla-decode-fp8-kv-triton-shared-memory"
MOE = "sglang-fused-moe-default-config-smem-147456-sm12x"
PREFILL = "sglang-context-attention-fwd-block128-smem-131072-sm12x"


@pytest.fixture(scope="module")
def cells():
    return lint.check([ENTRIES]).cells


def _reproductions(cells):
    return [(cell, i, r) for cell in cells for i, r in enumerate(cell.entry.reproductions)]


def test_the_reproduced_entries_carry_a_recorded_run(cells):
    assert {cell.id for cell, _, _ in _reproductions(cells)} >= REPRODUCED
    assert {cell.id for cell, _, r in _reproductions(cells) if r.run.tool == "triton"} >= TRITON
    assert all(r.printed is not None for _, _, r in _reproductions(cells))


def test_every_recorded_output_shows_its_entrys_literal(cells):
    for cell, i, r in _reproductions(cells):
        found = reproduction.shown(cell.entry, r.printed.output)
        if r.fixed:  # a run on a fixed release: the evidence is that no literal is printed
            assert found == [], (cell.id, i)
            continue
        assert found, f"{cell.id} reproductions[{i}] shows none of its signatures"
        # and not by accident: a signature's words are in the output as printed, whatever the case
        text = cell.entry.signatures[found[0]].text.lower()
        assert any(word in r.printed.output.lower() for word in text.split() if len(word) > 8), (cell.id, text)


def test_every_tool_version_is_the_pinned_release_and_in_the_entrys_ranges(cells):
    pins, debs = reproduction.locked(), reproduction.debian_pins()
    for cell, i, r in _reproductions(cells):
        assert (r.install.package, r.install.version) in (debs if r.install.source == "debian" else pins), (cell.id, i)
        version = reproduction.VERSION_LINE[r.run.tool].search(r.printed.tool_version)
        assert version and version.group(1) == r.install.upstream(), (cell.id, i, r.printed.tool_version)
        if r.kernel is not None:
            assert (r.kernel.package, r.kernel.version) in pins, (cell.id, i)
        assert all((n.package, n.version) in pins for n in r.needs), (cell.id, i)
        assert (reproduction.INPUTS / r.run.input).is_file()
        for component in cell.entry.components:
            if component.affected and component.package in reproduction.TOOL_COMPONENTS.get(r.install.package, ()):
                # a run that shows the failure is on an affected release, a `fixed` run on one past the range
                inside = SpecifierSet(component.affected).contains(r.install.upstream(), prereleases=True)
                assert inside != r.fixed, (cell.id, i)
            if component.affected and r.kernel is not None and component.package == r.kernel.package:
                inside = SpecifierSet(component.affected).contains(r.kernel.version, prereleases=True)
                assert inside != r.fixed, (cell.id, i)
    problems = lint.check([ENTRIES]).problems
    assert [p.format() for p in problems if p.code in ("KB090", "KB091")] == []


def test_kb091_names_a_release_the_lock_does_not_pin(tmp_path, cells):
    cell = next(c for c in cells if c.id == END_TO_END)
    text = cell.path.read_text(encoding="utf-8").replace('version: "12.8.93"', 'version: "12.8.61"')
    (tmp_path / cell.path.name).write_text(text, encoding="utf-8")
    found = [p for p in lint.check([tmp_path]).problems if p.code == "KB091"]
    assert [p.loc for p in found] == ["reproductions[0].install", "reproductions[0].printed.tool_version"]
    assert "nvidia-cuda-nvcc-cu12==12.8.61 is not pinned in kb/repro/tools.lock" in found[0].message
    assert "reproductions:" in text.splitlines()[found[0].line - 2] or "install:" in text.splitlines()[found[0].line - 1]


def test_the_writer_gives_back_each_file_byte_for_byte(cells):
    """The block `kb repro --write` writes is the layout the entries hold: rewriting a file with
    its own reproductions changes nothing."""
    for cell in {cell.id: cell for cell, _, _ in _reproductions(cells)}.values():
        raw = cell.path.read_bytes()
        assert write.rewritten(cell.path, raw, list(cell.entry.reproductions)) == raw, cell.id


def test_the_writer_changes_only_the_block_and_refuses_what_would_not_read_back(cells, tmp_path):
    cell = next(c for c in cells if c.id == END_TO_END)
    raw = cell.path.read_bytes()
    changed = [r.model_copy(update={"printed": r.printed.model_copy(update={"exit": 1})})
               for r in cell.entry.reproductions]
    new = write.rewritten(cell.path, raw, changed).decode("utf-8").splitlines()
    old = raw.decode("utf-8").splitlines()
    assert [(a, b) for a, b in zip(old, new) if a != b] == [("      exit: 255", "      exit: 1")]
    # a file whose reproductions block is followed by a key that was indented into it
    broken = raw.decode("utf-8").replace("published: ", "  published: ", 1) + "published: 2026-12-02\n"
    with pytest.raises(write.WriteError):
        write.rewritten(cell.path, broken.encode("utf-8"), list(cell.entry.reproductions))


@pytest.mark.slow
def test_a_wheelhouse_without_the_release_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(install.InstallError) as raised:
        install.install("nvidia-cuda-nvcc-cu12", "12.4.131", wheelhouse=tmp_path / "empty")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"no wheel of nvidia-cuda-nvcc-cu12==12.4.131 for this system in the wheelhouse "
                              f"{tmp_path / 'empty'} (pip: ERROR: No matching distribution found")
    # nothing half-installed is left where a later run would look
    assert install.cached("nvidia-cuda-nvcc-cu12", "12.4.131") is None
    assert [p.name for p in (tmp_path / "cache" / "blackwell-serving-kb" / "repro").iterdir()] == []
    with pytest.raises(install.InstallError, match=r"^--wheelhouse \S+/missing: no such folder; name the folder"):
        install.install("nvidia-cuda-nvcc-cu12", "12.4.131", wheelhouse=tmp_path / "missing")


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released): connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_an_unreachable_index_is_one_clear_line(tmp_path, monkeypatch, capsys):
    """pip pointed at an index that refuses connections (retried once, so that it says why):
    `kb repro` prints one line naming the release and the cause, exits 2, and leaves no folder."""
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no find-links or extra index of this machine's
    monkeypatch.setenv("PIP_INDEX_URL", f"https://127.0.0.1:{_closed_port()}/simple/")
    monkeypatch.setenv("PIP_RETRIES", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    entry = "triton-ptxas-sm120-gpu-name-not-defined"  # ptxas 12.4.131, never in the tool wheelhouse
    assert cli.main(["repro", entry]) == 2
    lines = capsys.readouterr().out.splitlines()
    # one line per reproduction of the entry: its ptxas 12.4 run, its Triton 3.2.0 run, then the fixed
    # runs (Triton 3.3.0, ptxas 12.8.93)
    assert [line.split(":")[0] for line in lines] == [f"error    {entry} reproductions[{n}]" for n in range(4)], lines
    assert lines[1].endswith("cannot reach the package index to get triton==3.2.0 ([Errno 111] Connection refused); "
                             "check the network and pip's index settings (`pip config list`), or pass --wheelhouse "
                             "DIR holding its wheel"), lines[1]
    assert lines[0].startswith(f"error    {entry} reproductions[0]: ptxas ")
    assert lines[0].endswith(": cannot reach the package index to get nvidia-cuda-nvcc-cu12==12.4.131 ([Errno 111] "
                             "Connection refused); check the network and pip's index settings (`pip config list`), "
                             "or pass --wheelhouse DIR holding its wheel"), lines[0]
    assert os.listdir(tmp_path / "cache" / "blackwell-serving-kb" / "repro") == []


def test_sweep_removes_the_partial_folders_of_finished_processes_only(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()  # a process id that has exited
    dead = tmp_path / f".nvidia-cuda-nvcc-cu12-12.8.93.{gone}.k2_x9q0a.partial"
    live = tmp_path / f".nvidia-cuda-nvcc-cu12-12.8.93.{os.getpid()}.0abc_123.partial"
    kept = tmp_path / "nvidia-cuda-nvcc-cu12-12.8.93"  # an installed release
    for path in (dead / "release", live / "release", kept / "nvidia"):
        path.mkdir(parents=True)
    assert install.sweep(tmp_path) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, kept.name])


def test_an_unknown_id_exits_2(capsys):
    assert cli.main(["repro", "no-such-entry"]) == 2
    assert "no valid entry 'no-such-entry'" in capsys.readouterr().err


def _offline_release(tmp_path: Path) -> tuple[object, list[str]]:
    """END_TO_END's cell, and the `kb repro` arguments that install its release from the tool
    wheelhouse (with XDG_CACHE_HOME set to tmp_path / "cache", into a cache of the test's own)."""
    (cell,) = [c for c in lint.check([ENTRIES]).cells if c.id == END_TO_END]
    r = cell.entry.reproductions[0]
    why = wheel_install.missing_repro_wheel(r.install.package, r.install.version)
    assert why is None, why
    return cell, ["--wheelhouse", str(wheel_install.REPRO_WHEELHOUSE)]


@pytest.mark.slow
def test_end_to_end_ok_then_differs_then_written(tmp_path, capsys, monkeypatch):
    cell, extra = _offline_release(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert install.cached("nvidia-cuda-nvcc-cu12", "12.8.93") is None  # installed here, from the wheelhouse
    assert cli.main(["repro", END_TO_END, *extra]) == 0
    assert capsys.readouterr().out.startswith(f"ok       {END_TO_END} reproductions[0]: ptxas -arch=sm_120")

    entries = tmp_path / "entries"
    entries.mkdir()
    copy = entries / cell.path.name
    shutil.copyfile(cell.path, copy)
    recorded = copy.read_text(encoding="utf-8")
    copy.write_text(recorded.replace("line 9; error", "line 8; error"), encoding="utf-8")
    assert cli.main(["repro", END_TO_END, "--entries", str(entries), *extra]) == 1
    out = capsys.readouterr().out
    assert out.startswith("differs  ") and "\n    -ptxas cvt-e2m1x2-sm120.ptx, line 8;" in out
    assert "\n    +ptxas cvt-e2m1x2-sm120.ptx, line 9;" in out
    assert cli.main(["repro", END_TO_END, "--entries", str(entries), "--write", *extra]) == 1
    assert f"wrote {copy}" in capsys.readouterr().err
    # the run is recorded again (its date is today's; everything else as before)
    assert copy.read_text(encoding="utf-8").split("date: ")[0] == recorded.split("date: ")[0]
    assert cli.main(["repro", END_TO_END, "--entries", str(entries), *extra]) == 0


# --- the triton kind ----------------------------------------------------------------------------


def _with_triton_repro(tmp_path, cells, old: str, new: str):
    """The MLA entry copied with one edit of its triton reproduction; the KB091/KB024 problems."""
    cell = next(c for c in cells if c.id == MLA)
    text = cell.path.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / cell.path.name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return [p for p in lint.check([tmp_path]).problems if p.code in ("KB024", "KB090", "KB091")]


def test_a_triton_reproduction_lints_clean(tmp_path, cells):
    assert _with_triton_repro(tmp_path, cells, "exit: 1", "exit: 1") == []


@pytest.mark.parametrize("old, new, loc, says", [
    ('input: "triton_compile.py"', 'input: "empty-sm120.ptx"', "reproductions[0].run.input", "triton reads a .py file"),
    ('version: "0.27.1", path', 'version: "0.27.0", path', "reproductions[0].kernel",
     "vllm==0.27.0 is not pinned in kb/repro/tools.lock"),
    ('"--num-warps=4"', '"-num-warps=4"', "reproductions[0].run.args[4]", "a triton argument must be one driver"),
    ('tool: "triton"', 'tool: "ptxas"', "reproductions[0].kernel", "only a triton, cute-dsl, python or cmake run reads a file of a wheel"),
    ('tool_version: "triton 3.7.0"', 'tool_version: "triton 3.6.0"', "reproductions[0].printed.tool_version",
     "must name the installed release 3.7.0"),
    # the signature itself changed: every recorded run of the entry now shows none of them
    ("Required: 102400, Hardware", "Required: 98304, Hardware", "reproductions[*].printed.output",
     "shows none of this entry's signatures"),
])
def test_a_bad_triton_reproduction_names_its_field(tmp_path, cells, old, new, loc, says):
    found = _with_triton_repro(tmp_path, cells, old, new)
    runs = len(next(c for c in cells if c.id == MLA).entry.reproductions)
    wanted = [loc.replace("*", str(i)) for i in range(runs)] if "*" in loc else [loc]
    assert [p.loc for p in found if says in p.message] == wanted, [p.format() for p in found]


@pytest.mark.parametrize("arg", ["--kernel-file=/etc/passwd", "--args=a b", "--capability", "-o=x"])
def test_a_triton_argument_that_could_name_a_path_or_is_no_option_is_refused(tmp_path, cells, arg):
    found = _with_triton_repro(tmp_path, cells, '"--num-warps=4"', f'"{arg}"')
    assert any(p.loc.startswith("reproductions[0].run.args") for p in found), [p.format() for p in found]


def test_the_triton_command_names_the_wheel_it_reads(cells):
    r = next(c for c in cells if c.id == MLA).entry.reproductions[0]
    assert r.command().startswith("python triton_compile.py --capability=121 --kernel=_fwd_grouped_kernel_stage1 ")
    assert r.command().endswith(" --kernel-file=<vllm 0.27.1 wheel>/vllm/v1/attention/ops/triton_decode_attention.py")


def test_the_drivers_output_is_compared_as_recorded(cells):
    """kb repro's comparison on a recorded Triton run (no download): the same output is ok; another
    shared-memory figure differs line by line and no longer shows the literal."""
    from kb.repro import run

    cell = next(c for c in cells if c.id == MLA)
    recorded = cell.entry.reproductions[0].printed
    assert run.differences(cell.entry, recorded, recorded) == []
    other = recorded.model_copy(update={"output": recorded.output.replace("102400", "98304")})
    found = run.differences(cell.entry, recorded, other)
    assert found[0] == "prints none of the entry's signatures (compared as kb match compares)"
    assert "-triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware " \
           "limit: 101376. Reducing block sizes or `num_stages` may help." in found
    # the whole GB10 table is in the recorded output, each figure compiled from vLLM's kernel
    for figure in ("shared=59392", "shared=63488", "shared=83968", "shared=102400"):
        assert figure in recorded.output


def _start_repro(tmp_path: Path, extra: list[str]) -> subprocess.Popen:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.Popen([sys.executable, "-m", "kb.cli", "repro", END_TO_END, *extra], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _installing(process: subprocess.Popen, repro: Path) -> list[Path]:
    """Wait until the run has made its partial folder and pip has been under way for a moment."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        partial = list(repro.glob(".*.partial")) if repro.is_dir() else []
        if partial:
            time.sleep(0.5)  # pip has started (the 40 MB wheel takes seconds to unpack)
            assert process.poll() is None, "the install finished before the test could stop it"
            return partial
        time.sleep(0.02)
    raise AssertionError(f"no partial folder appeared in {repro}: {process.communicate()}")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_install_leaves_nothing_in_the_cache(tmp_path, signum):
    """Ctrl-C, or a SIGTERM (a cancelled CI job), mid-install: kb repro stops pip, removes its
    partial folder and says so in one line; the cache holds nothing."""
    _, extra = _offline_release(tmp_path)
    repro = tmp_path / "cache" / "blackwell-serving-kb" / "repro"
    process = _start_repro(tmp_path, extra)
    _installing(process, repro)
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    assert err.splitlines()[-1] == (f"kb repro: interrupted; nothing half-installed was left in {repro} (a release "
                                    "is renamed into place only once complete)")
    assert os.listdir(repro) == []


@pytest.mark.slow
def test_a_killed_install_is_cleared_by_the_next_run_which_shows_its_progress(tmp_path):
    """SIGKILL (nothing can clean up) leaves a partial folder that no run uses: the next run
    removes it, installs the release whole and prints a line per step, pip's own included."""
    cell, extra = _offline_release(tmp_path)
    repro = tmp_path / "cache" / "blackwell-serving-kb" / "repro"
    process = _start_repro(tmp_path, extra)
    (left,) = _installing(process, repro)
    os.killpg(process.pid, signal.SIGKILL)  # kb repro and pip both
    process.communicate(timeout=60)
    assert os.listdir(repro) == [left.name]  # the partial folder alone, not the release's

    again = _start_repro(tmp_path, extra)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, (out, err)
    assert out.startswith(f"ok       {END_TO_END} reproductions[0]: {cell.entry.reproductions[0].command()} ")
    assert sorted(os.listdir(repro)) == ["nvidia-cuda-nvcc-cu12-12.8.93"]  # the killed run's folder is gone
    said = err.splitlines()
    assert f"kb repro: installing nvidia-cuda-nvcc-cu12==12.8.93 into {repro / 'nvidia-cuda-nvcc-cu12-12.8.93'}" in said
    (wheel,) = wheel_install.REPRO_WHEELHOUSE.glob("*.whl")
    # pip's own line for the file it installs (downloading, it shows the size and a progress bar)
    assert any(line.startswith("Processing ") and f"/{wheel.name} " in line for line in said), said


def test_the_sglang_moe_runs_compile_the_wheels_kernel_for_both_capabilities(cells):
    """SGLang 0.5.12's fused-MoE kernel with its default fp8 config needs 147,456 bytes on capability
    120 and 121 (the entry's number, compiled, not quoted), and one stage less fits the 101,376 limit."""
    cell = next(c for c in cells if c.id == MOE)
    runs = cell.entry.reproductions
    assert [(r.kernel.package, r.kernel.version) for r in runs] == [("sglang", "0.5.12")] * 2
    for r, capability in zip(runs, (120, 121)):
        assert r.command().startswith(f"python triton_compile.py --capability={capability} --kernel=fused_moe_kernel ")
        lines = r.printed.output.splitlines()
        assert lines[0].endswith(f"capability {capability}, num_warps=8 num_stages=4: shared=147456")
        assert lines[2].endswith("num_stages=3: shared=98304")
        assert reproduction.shown(cell.entry, lines[1]) and not reproduction.shown(cell.entry, lines[2])
    # each run says where its arguments come from, the first in full
    assert "invoke_fused_moe_kernel" in runs[0].note and "capability 120 run above" in runs[1].note


def test_the_sglang_prefill_runs_compile_both_wheels_kernel_in_fp32_and_bf16(cells):
    """SGLang's context_attention_fwd with its capability-12 tile (128x128, head 128) needs 131,072 bytes
    with fp32 inputs, the entry's number, compiled from the 0.5.12 wheel and from the newest read, where
    the file moved; the same call in bf16 needs 65,536 and fits, which is why the entry names fp32."""
    cell = next(c for c in cells if c.id == PREFILL)
    runs = cell.entry.reproductions
    assert [(r.kernel.package, r.kernel.version) for r in runs] == [("sglang", "0.5.12"), ("sglang", "0.5.23")]
    assert runs[0].kernel.path.startswith("sglang/srt/") and runs[1].kernel.path.startswith("sglang/kernels/")
    for r in runs:
        assert r.command().startswith("python triton_compile.py --capability=120 --kernel=_fwd_kernel ")
        lines = r.printed.output.splitlines()
        assert lines[0].endswith("Out:*fp32: shared=131072") and lines[2].endswith("Out:*bf16: shared=65536")
        assert reproduction.shown(cell.entry, lines[1]) and len(lines) == 3
    assert "test_context_attention" in runs[0].note and "0.5.12 run above" in runs[1].note


def _driver(monkeypatch):
    """kb/repro/inputs/triton_compile.py loaded with a stand-in `triton` (the test environment has
    none): only what the module touches when it loads, and MockTensor as Triton's own keeps a dtype."""
    import importlib.util
    import types

    triton = types.ModuleType("triton")
    language = types.ModuleType("triton.language")
    language.constexpr = object
    triton.jit = lambda fn: fn
    triton.language = language
    triton.runtime = types.SimpleNamespace(jit=types.SimpleNamespace(MockTensor=lambda dtype: ("tensor", dtype.name)))
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.language", language)
    monkeypatch.syspath_prepend(str(reproduction.INPUTS))  # lift.py, copied beside the driver by kb repro
    spec = importlib.util.spec_from_file_location("triton_compile_driver", reproduction.INPUTS / "triton_compile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_driver_passes_a_number_as_that_integer(monkeypatch):
    """A stride of 1 must reach Triton as 1: Triton specialises it as a constant, which makes a load
    contiguous and pipelined through shared memory (SGLang's fused-MoE kernel needs 147,456 bytes with
    its strides of 1 and 49,152 with every stride 4096)."""
    driver = _driver(monkeypatch)
    assert [driver.argument(kind) for kind in ("1", "0", "2816", "int", "none")] == [1, 0, 2816, 4096, None]
    assert driver.argument("*fp8e4nv") == ("tensor", "float8_e4m3fn")
    with pytest.raises(KeyError):
        driver.argument("-1")


CUTE = "cute-dsl-tcgen05-mma-arch-operror-sm12x"


def test_the_cute_dsl_runs_raise_the_operror_for_both_targets(cells):
    """nvidia-cutlass-dsl 4.2.0 (cutlass#2802's release), its import's releases beside it, refuses the
    tcgen05 MMA op for sm_121a with the entry's first literal verbatim, and for sm_120a the same way."""
    cell = next(c for c in cells if c.id == CUTE)
    runs = cell.entry.reproductions
    assert [r.command() for r in runs] == [f"python cute_dsl_op.py --arch={a} --op=tcgen05-f16bf16"
                                           for a in ("sm_121a", "sm_120a")]
    assert {n.package for r in runs for n in r.needs} == {"cuda-bindings", "cuda-pathfinder", "numpy"}
    assert runs[0].printed.output.splitlines()[0] == cell.entry.signatures[0].text
    assert runs[1].printed.output.splitlines()[0].endswith("but got sm_120a")
    assert "\x1b" not in runs[0].printed.output  # the DSL's colours are not recorded


@pytest.mark.parametrize("old, new, loc, says", [
    ('{package: "numpy", version: "2.4.6"}', '{package: "numpy", version: "2.4.5"}', "reproductions[0].needs[2]",
     "numpy==2.4.5 is not pinned in kb/repro/tools.lock"),
    ('{package: "numpy", version: "2.4.6"}', '{package: "numpy", version: "2.4.6", source: "debian"}',
     "reproductions[0].needs[2]", "only a PyPI release can be put beside a driven tool"),
    ('"--arch=sm_121a"', '"--arch=/tmp/x"', "reproductions[0].run.args[0]", "a cute-dsl argument must be"),
])
def test_a_bad_cute_dsl_reproduction_names_its_field(tmp_path, cells, old, new, loc, says):
    cell = next(c for c in cells if c.id == CUTE)
    text = cell.path.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / cell.path.name).write_text(text.replace(old, new, 1), encoding="utf-8")
    found = [p for p in lint.check([tmp_path]).problems if p.code == "KB091"]
    assert [p.loc for p in found if says in p.message] == [loc], [p.format() for p in found]


CUTE_MMA = "cutlass-dsl-4-5-0-mma-block-scale-ptxas-sm12x"


def test_the_cute_dsl_4_5_0_compile_prints_the_ptxas_line_for_both_targets(cells):
    """libs-base 4.5.0 (the DSL of nvidia-cutlass-dsl 4.5.0) compiling the driver's one-MMA kernel for
    sm_120a and sm_121a prints cutlass#3227's ptxas line, and 4.4.2 for sm_120a (its scale factors
    given the 4.4 way); it differs from the paste only where kb match normalises (the PTX line number,
    the assembler's three spaces before the colon), and the IR dump ending the DSL's message is left out."""
    cell = next(c for c in cells if c.id == CUTE_MMA)
    runs = [r for r in cell.entry.reproductions if not r.fixed]
    assert [(r.install.version, r.command()) for r in runs] == [
        (v, f"python cute_dsl_op.py --arch={a} --kernel=mxf4nvf4-mma")
        for v, a in (("4.5.0", "sm_120a"), ("4.5.0", "sm_121a"), ("4.4.2", "sm_120a"))]
    assert {r.install.package for r in runs} == {"nvidia-cutlass-dsl-libs-base"}
    literal = cell.entry.signatures[0].text
    for run in runs:
        line = next(x for x in run.printed.output.splitlines() if "ptxas application ptx input" in x)
        assert line.endswith("ptxas application ptx input, line 28; error   : Unexpected instruction types "
                             "specified for '_mma'")
        assert normalise(literal) in normalise(line)
        assert run.printed.output.splitlines()[-1] == "(31 lines of the failing operation's IR left out)"
        assert run.printed.exit == 1


def test_the_cute_dsl_4_5_1_compile_of_the_same_kernel_succeeds_for_both_targets(cells):
    """libs-base 4.5.1, the release whose CHANGELOG lists cutlass#3227 fixed, compiles the same one-MMA
    kernel for both targets: the fixed runs print the driver's success line alone and exit 0."""
    cell = next(c for c in cells if c.id == CUTE_MMA)
    fixed = [r for r in cell.entry.reproductions if r.fixed]
    assert [(r.install.package, r.install.version, r.command()) for r in fixed] == [
        ("nvidia-cutlass-dsl-libs-base", "4.5.1", f"python cute_dsl_op.py --arch={a} --kernel=mxf4nvf4-mma")
        for a in ("sm_120a", "sm_121a")]
    for run in fixed:
        assert (run.printed.output, run.printed.exit) == ("compiled mxf4nvf4-mma\n", 0)
        assert reproduction.shown(cell.entry, run.printed.output) == []


def _cute_driver(monkeypatch):
    """cute_dsl_op.py as a module; the DSL is imported only when an op or kernel is asked for."""
    import importlib.util

    monkeypatch.delenv("PYTHONPATH", raising=False)
    spec = importlib.util.spec_from_file_location("cute_dsl_driver", reproduction.INPUTS / "cute_dsl_op.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cute_dsl_driver_leaves_out_the_ir_dump_and_names_the_libs_wheel(monkeypatch):
    driver = _cute_driver(monkeypatch)

    class DSLRuntimeError(Exception):
        pass

    failed = DSLRuntimeError("\x1b[1mICE\x1b[0m\nerror: ptxas says no   \n note: unknown: see current operation: \n"
                             "  \"gpu.module\"() ({\n  }) : () -> ()")
    assert driver.described(failed) == (f"{__name__}.{DSLRuntimeError.__qualname__}: ICE\nerror: ptxas says no\n"
                                        "(2 lines of the failing operation's IR left out)")
    assert driver.described(ValueError("one\ntwo")) == "ValueError: one\ntwo"  # no dump: all of it

    def version(name):
        if name != "nvidia-cutlass-dsl-libs-base":
            raise driver.metadata.PackageNotFoundError(name)
        return "4.5.0"

    monkeypatch.setattr(driver.metadata, "version", version)
    printed = driver.dsl_version()
    assert printed == "nvidia-cutlass-dsl-libs-base 4.5.0"
    assert reproduction.VERSION_LINE["cute-dsl"].search(printed).group(1) == "4.5.0"
    monkeypatch.setattr(driver.metadata, "version", lambda name: version(""))
    assert driver.dsl_version().startswith("none of nvidia-cutlass-dsl, ")


def test_a_libs_base_release_outside_the_range_is_named(tmp_path, cells):
    """The libs-base wheel counts as nvidia-cutlass-dsl for the entry's range (KB091)."""
    cell = next(c for c in cells if c.id == CUTE_MMA)
    text = cell.path.read_text(encoding="utf-8")
    old = '{package: "nvidia-cutlass-dsl-libs-base", version: "4.5.0"}'
    assert old in text
    (tmp_path / cell.path.name).write_text(text.replace(old, old.replace("4.5.0", "4.5.1"), 1), encoding="utf-8")
    found = [p for p in lint.check([tmp_path]).problems if p.code == "KB091"]
    assert [p.loc for p in found if "outside this entry's range" in p.message] == ["reproductions[0].install.version"]


def test_a_recorded_output_reads_back_and_survives_kb_refresh_rewriting_the_file():
    """kb repro writes a tool's emoji as itself, as ruamel.yaml (kb refresh --write) writes it back, and
    an invisible character (a bidi override, a no-break space) escaped; both read back as printed."""
    import yaml

    from kb.edit.refresh import rewrite
    from kb.repro.write import _q

    for value, shown in (("a\U0001f4a1 b\n", '"a\U0001f4a1 b\\n"'), ("x\u202ey\u00a0z", '"x\\u202ey\\u00a0z"'),
                         ("tag\U000e0001", '"tag\\U000e0001"'), ('caf\u00e9 "q" \\ \t', '"caf\u00e9 \\"q\\" \\\\ \\t"')):
        text = f"output: {_q(value)}\n"
        assert _q(value) == shown and yaml.safe_load(text)["output"] == value
    text = f"output: {_q('a' + chr(0x1F4A1) + ' b')}\n"
    loader = rewrite._yaml(text)
    assert rewrite._dump(loader, loader.load(text)) == text


def test_a_line_in_a_file_of_the_runs_folder_is_recorded_without_its_number(tmp_path):
    """A driver's or lifted kernel's line and column move whenever the driver changes; the recorded
    output keeps the file and says <line>, so a driver edit changes no recorded run. Other paths'
    numbers (the compiler's own sources) and a traceback's `line N` stay as printed."""
    from kb.repro import run

    script = ("import os; d = os.getcwd(); print(f'{d}/triton_compile.py:67:41: error: x'); "
              "print(f'{d}/lifted/k.py:12: note'); print('/project/lib/A.cpp:42: int f()'); "
              "print(f'File \"{d}/lift.py\", line 30, in g')")
    out, code = run._execute(["python", "-c", script], tmp_path, 30)
    assert code == 0
    assert out.splitlines() == ["<tmp>/triton_compile.py:<line>: error: x", "<tmp>/lifted/k.py:<line>: note",
                                "/project/lib/A.cpp:42: int f()", 'File "<tmp>/lift.py", line 30, in g']
