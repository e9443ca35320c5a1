"""`kb doctor` judges the serving Python environment (issue 36 items 1 and 5): the one --python
names (an interpreter or its folder), else the one discovery finds; its packages are read by its
own interpreter in a child, never by this process; every bad --python is one line and exit 2."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

import serving_venv
from kb import cli
from kb.doctor import diagnose, environment
from kb.doctor.facts import Facts
from kb.records import lint
from kb.records.state import state

ROOT = Path(__file__).resolve().parent.parent
ENTRIES = ROOT / "tests" / "fixtures" / "facts" / "entries"


@pytest.fixture(scope="module")
def serving(tmp_path_factory) -> Path:
    """A serving venv with torch 2.11.0 and vLLM 0.28.1 (dist-info only); returns its folder."""
    folder = tmp_path_factory.mktemp("serving") / "venv"
    serving_venv.make(folder)
    return folder


@pytest.fixture
def no_discovery(monkeypatch, tmp_path):
    """Nothing for discovery to find but what a test adds: no active environment, an empty PATH."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


def doctor(capsys, *args: str):
    code = cli.main(["doctor", "--entries", str(ENTRIES), "--timeout", "30", *args])
    out, err = capsys.readouterr()
    return code, out, err


def judged_json(capsys, *args: str) -> dict:
    code, out, err = doctor(capsys, "--json", *args)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("form", ["interpreter", "folder"])
def test_python_names_the_serving_environment(capsys, serving, no_discovery, form):
    given = serving / "bin" / "python" if form == "interpreter" else serving
    data = judged_json(capsys, "--python", str(given))
    facts = Facts.model_validate(data["facts"])
    assert facts.packages["torch"] == "2.11.0" and facts.packages["vllm"] == "0.28.1"
    assert facts.packages["sglang"] is None  # read, not installed there
    env = facts.python_environment
    assert env.found_by == "given with --python"
    assert Path(env.python) == serving / "bin" / (env.python.rsplit("/", 1)[1])
    assert Path(env.prefix) == serving
    assert facts.python == subprocess.run([str(serving / "bin" / "python"), "-c", "import platform; "
                                           "print(platform.python_version())"], capture_output=True, text=True,
                                          check=True).stdout.strip()
    assert "-torch2.11-vllm0.28-" in data["key"]
    schema = json.loads(doctor(capsys, "--facts-schema")[1])
    jsonschema.validate(data["facts"], schema)
    assert set(schema["$defs"]["PythonEnvironment"]["properties"]) == {"python", "prefix", "found_by", "others"}


def test_the_tool_never_imports_the_serving_packages(capsys, serving, no_discovery):
    """A `.pth` file of the serving venv runs code whenever its interpreter starts with `site`: the
    package read (-I -S) does not run it, and no run of doctor runs it in the tool's own process
    (only the PyTorch probe, in a child of the serving interpreter, starts that interpreter whole)."""
    (site,) = (serving / "lib").glob("python3*/site-packages")
    ran = serving.parent / "ran"
    trap = site / "zz-trap.pth"
    trap.write_text(f"import os; open({str(ran)!r}, 'a').write(str(os.getpid()) + chr(10))\n", encoding="utf-8")
    try:
        version, prefix, packages, sites = environment.read(environment.interpreter(str(serving)),
                                                            {"torch": ["torch"]}, 30)
        assert packages == {"torch": "2.11.0"} and Path(prefix) == serving
        assert [Path(d) for d in sites] == [site]  # where kb.doctor.predict reads the libraries
        assert not ran.exists()
        judged_json(capsys, "--python", str(serving))
        assert str(os.getpid()) not in (ran.read_text(encoding="utf-8").split() if ran.exists() else [])
    finally:
        trap.unlink()
        ran.unlink(missing_ok=True)


def _debian_python() -> str | None:
    """Debian's or Ubuntu's system Python, whose patched site.getsitepackages lists dist-packages
    folders unless sys.prefix names a virtual environment; None where there is none."""
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        return None
    done = subprocess.run([python, "-I", "-S", "-c", "import site; print(site.getsitepackages(['/v']))"],
                          capture_output=True, text=True, timeout=60)
    return python if done.returncode == 0 and "dist-packages" in done.stdout else None


DEBIAN_PYTHON = _debian_python()


@pytest.mark.parametrize("base", ["this", pytest.param("debian", marks=pytest.mark.skipif(
    DEBIAN_PYTHON is None, reason="no Debian or Ubuntu system Python at /usr/bin/python3"))])
@pytest.mark.parametrize("system_site", [False, True])
def test_the_read_sees_what_the_interpreter_sees(tmp_path, system_site, base):
    """Without `site` running (-S), the read finds the same site-packages as the interpreter started
    normally: its venv's, and the base Python's too where pyvenv.cfg includes them; also a venv of
    Debian's or Ubuntu's Python (the H100 run of 2026-12-05 read nothing in /opt/torch/.venv)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable if base == "this" else DEBIAN_PYTHON, "-m", "venv", "--without-pip",
                    *(["--system-site-packages"] * system_site), str(venv)], check=True, timeout=120)
    (own,) = (venv / "lib").glob("python3*/site-packages")
    info = own / "torch-2.11.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n", encoding="utf-8")
    _, prefix, packages, sites = environment.read(str(venv / "bin" / "python"), {"torch": ["torch"]}, 30)
    assert (Path(prefix), packages, Path(sites[0])) == (venv, {"torch": "2.11.0"}, own)
    names = ["pydantic", "packaging", "jinja2", "pip", "setuptools", "no-such-dist"]
    code = ("import importlib.metadata as m, json, sys\nout = {}\nfor n in sys.argv[1:]:\n    try:\n"
            "        out[n] = m.version(n)\n    except m.PackageNotFoundError:\n        out[n] = None\n"
            "print(json.dumps(out))")
    for python in (str(venv / "bin" / "python"), sys.executable):
        seen = json.loads(subprocess.run([python, "-I", "-c", code, *names], capture_output=True, text=True,
                                         check=True, timeout=60).stdout)
        _, _, read, _ = environment.read(python, {n: [n] for n in names}, 30)
        assert read == seen, python
def test_nccl_is_read_from_the_nvidia_wheel(tmp_path, capsys, no_discovery):
    """PyTorch installs NCCL as nvidia-nccl-cu13 (cu12 before): that is the `nccl` the cells name."""
    folder = tmp_path / "venv"
    serving_venv.make(folder, {"torch": "2.11.0", "nvidia-nccl-cu13": "2.28.9"})
    code = cli.main(["doctor", "--entries", str(ROOT / "kb" / "entries"), "--timeout", "30", "--json",
                     "--python", str(folder)])  # the live records: their NCCL cells name `nccl`
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["facts"]["packages"]["nccl"] == "2.28.9"


def test_discovery_prefers_the_active_virtual_environment(capsys, serving, no_discovery, monkeypatch):
    monkeypatch.setenv("VIRTUAL_ENV", str(serving))
    data = judged_json(capsys)
    env = data["facts"]["python_environment"]
    assert env["found_by"] == "the active virtual environment ($VIRTUAL_ENV)"
    assert data["facts"]["packages"]["torch"] == "2.11.0"
    assert data["key"] == judged_json(capsys, "--python", str(serving))["key"]


def test_discovery_finds_python3_first_on_path_and_lists_the_others(capsys, serving, no_discovery, monkeypatch,
                                                                    tmp_path):
    other = tmp_path / "conda-env"
    serving_venv.make(other, {"torch": "2.9.0"})
    monkeypatch.setenv("PATH", f"{serving / 'bin'}{os.pathsep}{no_discovery}")
    monkeypatch.setenv("CONDA_PREFIX", str(other))
    data = judged_json(capsys)
    env = data["facts"]["python_environment"]
    # the active conda environment comes before python3 on PATH
    assert env["found_by"] == "the active conda environment ($CONDA_PREFIX)"
    assert data["facts"]["packages"]["torch"] == "2.9.0"
    assert env["others"] == [{"python": str(serving / "bin" / "python3"), "found_by": "python3 on PATH"}]
    code, out, _ = doctor(capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "No known failure applies to this machine."
    assert lines[2].startswith(f"Judged: Python {data['facts']['python']} at {other / 'bin' / 'python3'} "
                               f"(environment {other}); how it was found: the active conda environment")
    assert lines[3:5] == ["Also found, not judged:",
                          f"  python3 on PATH: kb doctor --python {serving / 'bin' / 'python3'}"]
    monkeypatch.delenv("CONDA_PREFIX")
    data = judged_json(capsys)
    assert data["facts"]["python_environment"]["found_by"] == "python3 on PATH"
    assert data["facts"]["packages"]["torch"] == "2.11.0"


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="process discovery reads Linux /proc")
def test_discovery_finds_a_running_vllm_server(capsys, serving, no_discovery):
    """`vllm serve` as its console script runs it: /proc/<pid>/exe is the base interpreter, argv[0]
    the venv's, which is the one judged."""
    script = serving / "bin" / "vllm"
    script.write_text("import time\ntime.sleep(120)\n", encoding="utf-8")
    server = subprocess.Popen([str(serving / "bin" / "python"), str(script), "serve", "some/model"])
    try:
        found = [c for c in environment.discover() if c.found_by == f"the running vLLM server (process {server.pid})"]
        assert found == [environment.Candidate(str(serving / "bin" / "python"), found[0].found_by)]
        data = judged_json(capsys)
        assert data["facts"]["python_environment"]["found_by"].startswith("the running vLLM server (process ")
        assert data["facts"]["packages"]["vllm"] == "0.28.1"
    finally:
        server.kill()
        server.wait()
        script.unlink()


@pytest.mark.parametrize("argv, kind", [
    (["/srv/v/bin/python3", "/srv/v/bin/vllm", "serve", "Qwen/Qwen3-8B"], "vLLM"),
    (["python", "-u", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], "vLLM"),
    (["python3", "-X", "faulthandler", "-m", "sglang.launch_server"], "SGLang"),
    (["/usr/bin/python3", "/opt/bin/trtllm-serve", "m"], "TensorRT-LLM"),
    (["python", "-m", "llama_cpp.server", "--model", "m.gguf"], "llama-cpp-python"),
    (["python", "train.py", "vllm"], None),  # an argument named like a server is no server
    (["python", "-c", "import vllm"], None),
    (["python", "-m", "http.server"], None),
    (["python", "-m"], None),
])
def test_server_kind_from_a_command_line(argv, kind):
    assert environment.server_kind(argv) == kind


def test_nothing_found_leaves_the_packages_unknown(capsys, no_discovery, monkeypatch):
    monkeypatch.setattr(environment, "servers", lambda proc="/proc": [])
    data = judged_json(capsys)
    assert data["facts"]["python_environment"] is None and data["facts"]["packages"].get("torch", "absent") == "absent"
    assert any(n.startswith("no Python environment found to judge") for n in data["facts"]["notes"])
    code, out, _ = doctor(capsys)
    assert "Judged: no Python environment (none found): every package is unknown; run kb doctor --python PATH" in out


def test_a_discovered_environment_that_does_not_answer_is_skipped_with_a_note(capsys, serving, no_discovery,
                                                                             monkeypatch, tmp_path):
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "deleted-venv"))
    monkeypatch.setenv("CONDA_PREFIX", str(serving))
    data = judged_json(capsys)
    assert data["facts"]["python_environment"]["found_by"] == "the active conda environment ($CONDA_PREFIX)"
    assert f"skipped the active virtual environment ($VIRTUAL_ENV): {tmp_path / 'deleted-venv'}: does not exist; " \
           "pass the serving environment's interpreter (e.g. /srv/venv/bin/python) or its folder" in data["facts"]["notes"]


def test_verdict_first_with_the_do_now_line(capsys, serving, tmp_path):
    facts = tmp_path / "rtx.json"
    facts.write_text((ROOT / "tests" / "fixtures" / "facts" / "rtx-pro-6000-sglang-0.5.18.json").read_text(
        encoding="utf-8"), encoding="utf-8")
    code, out, err = doctor(capsys, "--facts", str(facts))
    assert code == 0, err
    cells = {c.id: c for c in lint.check([ENTRIES]).cells}
    affected = [r for r in diagnose.verdicts(list(cells.values()), diagnose.read_facts(str(facts), sys.stdin))
                if r.verdict == "affected"]
    head = out.split("\nDetails\n")[0].splitlines()
    want = ["3 known failure(s) apply to this machine. Do now:"]
    for r in affected:  # each with the Do-now line its card leads with, and its page
        want += [f"  {r.entry}: {state(r.cell.entry).line.text}", f"    {r.url}"]
    want += ["  (5 judged: 3 apply, 0 fixed in the installed versions, 0 unknown, 2 not applicable; details below)",
             f"Judged: the facts in {facts}"]
    assert head == want
    assert "Released fix: " in out  # a Do-now line, not a bare id
    assert out.index("Details") < out.index("Affected (3):")


def test_python_and_facts_exclude_each_other(capsys, serving):
    code, out, err = doctor(capsys, "--python", str(serving), "--facts", "-")
    assert code == 2 and not out and "--python and --facts exclude each other" in err


# --- bad --python: one line, the path, what to do, exit 2 --------------------------------------------

def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "no-python").mkdir()
    text = tmp_path / "python-not-executable"
    text.write_text("print(1)\n", encoding="utf-8")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    return {
        "missing": (tmp_path / "nowhere" / "python", "does not exist; pass the serving environment's interpreter"),
        "dangling link": (_link(tmp_path / "dangling", tmp_path / "gone"), "does not exist;"),
        "folder without Python": (tmp_path / "no-python", "is a folder with no Python interpreter in it (looked for "
                                  "bin/python3, bin/python, Scripts/python.exe, python.exe); pass the interpreter"),
        "not executable": (text, "is not executable (no execute permission); pass the serving environment's"),
        "symlink loop": (tmp_path / "loop-a", "is a loop of symbolic links;"),
        "hangs": (_script(tmp_path / "hangs", "sleep 60"), "gave no answer within 2 s; check that `"),
        "garbage": (_script(tmp_path / "garbage", "echo 'Segmentation fault (core dumped)'"),
                    "printed no package list (its last line: Segmentation fault (core dumped)); is it a Python 3.8"),
        "100 MB": (_script(tmp_path / "flood", "head -c 104857600 /dev/zero | tr '\\0' x"),
                   "printed more than 1,048,576 bytes instead of its package list;"),
        "fails": (_script(tmp_path / "fails", "echo 'No module named encodings' >&2; exit 1"),
                  "exited with status 1 (its last line: No module named encodings); is it a Python 3.8"),
    }


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


@pytest.mark.parametrize("case", ["missing", "dangling link", "folder without Python", "not executable",
                                  "symlink loop", "hangs", "garbage", "100 MB", "fails"])
def test_a_bad_python_is_one_line_and_exit_2(tmp_path, case):
    path, words = _bad_inputs(tmp_path)[case]
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kb.cli", "doctor", "--entries", str(ENTRIES), "--timeout", "2",
                           "--python", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert time.monotonic() - started < 60
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"kb doctor: --python {path}: {words}"), done.stderr


def test_predictions_read_the_libraries_of_the_judged_environment(tmp_path, capsys, no_discovery):
    """Without --site-packages the CUDA libraries read are the judged environment's (its
    interpreter names its site-packages folders), never the tool's own."""
    import fatbin_fixtures as fx

    folder = tmp_path / "venv"
    serving_venv.make(folder)
    (site,) = (folder / "lib").glob("python3*/site-packages")
    lib = site / "torch" / "lib" / "libtorch_cuda.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(fx.library(fx.fatbin(fx.entry("sass", 80), fx.entry("sass", 90))))
    code, out, err = doctor(capsys, "--python", str(folder), "--target", "sm_120")
    assert code == 0, err
    assert f"Predicted for sm_120 (compute capability 12.0), from {site}:" in out
    assert re.search(r"torch: .*libtorch_cuda\.so: FAILS", out)
    assert "1 more failure(s) predicted from the installed libraries and tools" in out
    code, out, _ = doctor(capsys, "--python", str(folder), "--target", "sm_120", "--fail-on", "predicted")
    assert code == 1
