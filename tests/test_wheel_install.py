"""The wheel as a user installs it (issue 25): built from the sources, installed with its runtime
dependencies only into a fresh virtual environment outside the checkout, and run from a temporary
folder with no repository file in reach: `bwkb --version`, `bwkb match LOG`, `... | bwkb match -`,
`bwkb doctor --json`, `--entries DIR` for newer records than the wheel's, and `bwkb repro` of a
ptxas entry.

Nothing is downloaded here: the runtime dependencies come from the wheelhouse that the Makefile's
test set-up fills from the hashed lock (`make .venv/.installed-test`), installed with --no-index,
and `bwkb repro` installs its ptxas from the tool wheelhouse filled the same way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from conftest import FIXTURES, ROOT, checked_site

sys.path.insert(0, str(ROOT / "tools"))
import wheel_install  # noqa: E402

SITE_URL = "https://example.org/kb/"
VECTORS = json.loads((ROOT / "tests" / "vectors" / "match.json").read_text(encoding="utf-8"))["vectors"]
VECTOR = next(v for v in VECTORS if v["first"])  # a log whose first cell the vectors name
SITE_EXTRA = {"mkdocs", "mkdocs-material", "jinja2", "pagefind", "pagefind-bin", "nh3", "markdown"}

# Builds the wheel and installs it into fresh venvs (one per test module): tens of seconds.
pytestmark = pytest.mark.slow


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The wheel built from a copy of the sources and installed into a fresh venv; returns the
    venv's bin folder, a clean environment to run it in and the empty folder to run it from."""
    why = wheel_install.missing_wheelhouse()
    assert why is None, why
    base = tmp_path_factory.mktemp("wheel")
    home = base / "home"
    home.mkdir()
    venv = base / "venv"
    bin_dir = wheel_install.install(venv, str(wheel_install.build_wheel(base, home)), home)
    work = base / "work"  # where the user runs it: no checkout here or above it
    work.mkdir()
    run_env = {"PATH": f"{bin_dir}{os.pathsep}{os.defpath}", "HOME": str(home), "LANG": "C.UTF-8",
               "KB_SITE_URL": SITE_URL}
    return {"bin": bin_dir, "env": run_env, "work": work, "venv": venv}


def run(installed, *args: str, stdin: bytes | None = None, shell: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(args[0] if shell else list(args), input=stdin, capture_output=True, cwd=installed["work"],
                          env=installed["env"], timeout=300, shell=shell)


def test_the_wheel_installs_the_runtime_only_and_runs_from_the_venv(installed):
    python = str(installed["bin"] / "python")
    probe = ("import importlib.metadata as m, importlib.util as u, json, kb; print(json.dumps("
             "{'dists': sorted(d.metadata['Name'] for d in m.distributions()), 'kb': kb.__file__, "
             "'mkdocs': u.find_spec('mkdocs') is not None, 'jinja2': u.find_spec('jinja2') is not None}))")
    done = run(installed, python, "-I", "-c", probe)
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    assert Path(got["kb"]).is_relative_to(installed["venv"]), got["kb"]  # not the checkout's kb
    assert not got["mkdocs"] and not got["jinja2"]
    dists = {_normal(d) for d in got["dists"]}
    assert not dists & SITE_EXTRA, dists & SITE_EXTRA
    # Everything installed is the package, pip and setuptools of the venv, or what its runtime
    # requirements pull in (pinned in the lock).
    from importlib.metadata import requires

    runtime = {_normal(Requirement(r).name) for r in requires("blackwell-serving-kb") if "extra ==" not in r}
    assert runtime <= dists
    assert "blackwell-serving-kb" in dists and "mkdocs" not in dists


def test_version_names_the_installed_index(installed):
    done = run(installed, "bwkb", "--version")
    assert done.returncode == 0, done.stderr.decode()
    head, index = done.stdout.decode().splitlines()
    from importlib.metadata import version

    assert head == f"blackwell-serving-kb {version('blackwell-serving-kb')}"
    cells = len(list((ROOT / "kb" / "entries").glob("*.yaml")))
    assert index.startswith(f"index: {cells} entries, checked up to 20"), index
    assert Path(index.rsplit(" from ", 1)[1]).is_relative_to(installed["venv"]), index


def _expected_url() -> str:
    site = checked_site(ROOT / "kb" / "entries")
    (cell,) = [c for c in site.cells if c.id == VECTOR["first"]]
    return SITE_URL + site.url(cell)


def test_match_a_log_file_and_standard_input(installed):
    log = installed["work"] / "engine.log"
    log.write_text("\n".join(VECTOR["log"]) + "\n", encoding="utf-8")
    try:
        from_file = run(installed, "bwkb", "match", "engine.log")
        piped = run(installed, "cat engine.log | bwkb match -", shell=True)
    finally:
        log.unlink()
    assert from_file.returncode == 0, from_file.stderr.decode()
    lines = from_file.stdout.decode().splitlines()
    assert lines[0].startswith("1. ") and lines[0].rsplit(" [", 1)[1].startswith(VECTOR["first"] + "] ")
    assert ", score " in lines[0]  # after the verdict: applies, unknown, fixed or ruled out
    assert lines[1] == "   " + _expected_url()
    assert b"no published site URL" not in from_file.stderr  # KB_SITE_URL is set
    assert piped.returncode == 0 and piped.stdout == from_file.stdout, piped.stderr.decode()
    assert os.listdir(installed["work"]) == []  # the tool wrote nothing where it ran


def test_doctor_json_probes_this_machine_and_judges_a_facts_file(installed):
    cells = len(list((ROOT / "kb" / "entries").glob("*.yaml")))
    probed = run(installed, "bwkb", "doctor", "--json", "--timeout", "60")
    assert probed.returncode == 0, probed.stderr.decode()
    report = json.loads(probed.stdout)
    assert len(report["cells"]) == cells
    assert all(c["url"].startswith(SITE_URL) for c in report["cells"])
    # A GB10 with the FlashInfer that fails TopK (the fixture tests/test_doctor.py judges too).
    facts = installed["work"].parent / "gb10.json"
    shutil.copy2(FIXTURES / "facts" / "gb10-flashinfer-0.6.18.json", facts)
    judged = run(installed, "bwkb", "doctor", "--json", "--facts", str(facts))
    assert judged.returncode == 0, judged.stderr.decode()
    verdicts = {c["entry"]: c for c in json.loads(judged.stdout)["cells"]}
    topk = verdicts["flashinfer-topk-ragged-operation-not-supported-gb10"]
    assert topk["verdict"] == "affected" and "GPU is sm_121" in topk["why"]
    assert topk["url"].startswith(SITE_URL + "e/")
    assert os.listdir(installed["work"]) == []


def test_entries_dir_reads_records_newer_than_the_wheel(installed):
    """A cell the wheel does not carry is found once --entries names a folder that has it."""
    newer = installed["work"].parent / "newer-entries"
    shutil.copytree(FIXTURES / "site", newer, dirs_exist_ok=True)
    log = installed["work"].parent / "new.log"
    log.write_text("ValueError: look-alike cell own first line\n", encoding="utf-8")
    bundled = run(installed, "bwkb", "match", str(log))
    assert bundled.returncode == 1 and b"no known failure matches this log" in bundled.stdout
    done = run(installed, "bwkb", "match", "--entries", str(newer), str(log))
    assert done.returncode == 0, done.stderr.decode()
    assert "[look-alike-cell]" in done.stdout.decode().splitlines()[0]
    facts = installed["work"].parent / "no-gpu.json"
    shutil.copy2(FIXTURES / "facts" / "no-gpu.json", facts)
    doctor = run(installed, "bwkb", "doctor", "--json", "--entries", str(newer), "--facts", str(facts))
    assert doctor.returncode == 0, doctor.stderr.decode()
    assert {c["entry"] for c in json.loads(doctor.stdout)["cells"]} == {p.stem for p in newer.glob("*.yaml")}


LURE_TITLE = "title: Official fix for this failure, pip install vllm-sm120-hotfix (see the workaround below)\n"


@pytest.mark.slow
@pytest.mark.parametrize("claims_to_be_a_checkout", [False, True])
def test_a_kb_entries_folder_where_it_runs_does_not_replace_the_installed_index(installed, claims_to_be_a_checkout):
    """Attack review N5: run from a folder holding its own kb/entries/ (a cloned repository, an
    unpacked archive; even one whose pyproject.toml names this project), the installed tool still
    reads the index it came with, and --version says which one that is."""
    lure = installed["work"].parent / f"lure-{claims_to_be_a_checkout}"
    shutil.copytree(ROOT / "kb" / "entries", lure / "kb" / "entries")
    if claims_to_be_a_checkout:
        shutil.copy2(ROOT / "pyproject.toml", lure / "pyproject.toml")
    first = lure / "kb" / "entries" / f"{VECTOR['first']}.yaml"
    text = first.read_text(encoding="utf-8")
    first.write_text(LURE_TITLE + text.split("\n", 1)[1], encoding="utf-8")
    (lure / "engine.log").write_text("\n".join(VECTOR["log"]) + "\n", encoding="utf-8")

    def here(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), capture_output=True, cwd=lure, env=installed["env"], timeout=300)

    matched = here("bwkb", "match", "engine.log")
    assert matched.returncode == 0, matched.stderr.decode()
    assert b"vllm-sm120-hotfix" not in matched.stdout, matched.stdout.decode()
    assert matched.stdout.decode().splitlines()[0].rsplit(" [", 1)[1].startswith(VECTOR["first"] + "] ")
    version = here("bwkb", "--version")
    index = version.stdout.decode().splitlines()[1]
    assert Path(index.rsplit(" from ", 1)[1]).is_relative_to(installed["venv"]), index


def test_the_installed_cache_is_per_user_never_in_site_packages(installed):
    """Attack review N5: `pip uninstall` removes what RECORD lists, so a cache under site-packages
    would stay behind; the installed tool keeps it in $XDG_CACHE_HOME (default ~/.cache)."""
    log = installed["work"].parent / "cached.log"
    log.write_text("\n".join(VECTOR["log"]) + "\n", encoding="utf-8")
    done = run(installed, "bwkb", "match", str(log))
    assert done.returncode == 0, done.stderr.decode()
    assert not [p for p in installed["venv"].rglob(".cache")], "a cache folder inside the virtual environment"
    cached = Path(installed["env"]["HOME"]) / ".cache" / "blackwell-serving-kb"
    assert sorted(p.suffix for p in cached.iterdir()) and all(p.suffix == ".pickle" for p in cached.iterdir())
    elsewhere = installed["work"].parent / "xdg-cache"
    moved = subprocess.run(["bwkb", "match", str(log)], capture_output=True, cwd=installed["work"], timeout=300,
                           env={**installed["env"], "XDG_CACHE_HOME": str(elsewhere)})
    assert moved.returncode == 0 and moved.stdout == done.stdout, moved.stderr.decode()
    assert any(p.suffix == ".pickle" for p in (elsewhere / "blackwell-serving-kb").iterdir())


def test_the_key_is_the_serving_stacks_whichever_way_the_tool_is_installed(installed):
    """Issue 36: installed as the README says (its own venv, as pipx and uvx make), doctor read its
    own empty interpreter and printed another key than inside the serving environment. Now the
    wheel in a bare venv and the checkout judge the same serving venv, through --python and through
    $VIRTUAL_ENV, and print one key, naming its stack."""
    import serving_venv

    serving = installed["work"].parent / "serving-venv"
    serving_venv.make(serving)
    checkout = [sys.executable, "-m", "kb.cli"]  # the checkout's kb, run from its root
    runs = {}
    for name, argv, cwd in (("wheel", ["bwkb"], installed["work"]), ("checkout", checkout, ROOT)):
        for how, extra, env in (("--python", ["--python", str(serving)], {}),
                                ("VIRTUAL_ENV", [], {"VIRTUAL_ENV": str(serving)})):
            done = subprocess.run([*argv, "doctor", "--json", "--timeout", "60", *extra], capture_output=True,
                                  cwd=cwd, env={**installed["env"], **env}, timeout=300)
            assert done.returncode == 0, done.stderr.decode()
            runs[name, how] = json.loads(done.stdout)
    keys = {run_key: report["key"] for run_key, report in runs.items()}
    assert len(set(keys.values())) == 1, keys
    assert "-torch2.11-vllm0.28-" in keys["wheel", "--python"]
    for report in runs.values():
        assert report["facts"]["packages"]["torch"] == "2.11.0" and report["facts"]["packages"]["vllm"] == "0.28.1"
        assert Path(report["facts"]["python_environment"]["prefix"]) == serving
    assert os.listdir(installed["work"]) == []


REPRO_ENTRY = "flashinfer-aot-cvt-e2m1x2-not-supported-sm120"  # ptxas 12.8.93 from a cu12 wheel


def test_the_wheel_carries_what_repro_installs_and_runs(installed):
    """kb/repro/tools.lock, debian.lock and every input travel in the wheel, byte for byte."""
    python = str(installed["bin"] / "python")
    done = run(installed, python, "-I", "-c", "import kb.repro, pathlib; print(pathlib.Path(kb.repro.__file__).parent)")
    assert done.returncode == 0, done.stderr.decode()
    shipped = Path(done.stdout.decode().strip())
    assert shipped.is_relative_to(installed["venv"]), shipped
    source = ROOT / "kb" / "repro"
    # pip compiles the driver script it installs (__pycache__), and an import here may have too
    inputs = sorted(p.name for p in (source / "inputs").iterdir() if p.name != "__pycache__")
    assert inputs and sorted(p.name for p in (shipped / "inputs").iterdir() if p.name != "__pycache__") == inputs
    for name in ["tools.lock", "debian.lock", *(f"inputs/{n}" for n in inputs)]:
        assert (shipped / name).read_bytes() == (source / name).read_bytes(), name


def test_repro_runs_a_ptxas_reproduction_from_the_installed_index(installed):
    """Issue 34's "done when": outside any checkout, `bwkb repro ID` finds the entry in the
    installed index, installs its ptxas from a local wheel folder (--no-index, hash-checked) into
    the per-user cache, runs it and prints ok: the output recorded in the entry, verbatim."""
    from kb.records import lint

    (cell,) = [c for c in lint.check([ROOT / "kb" / "entries"]).cells if c.id == REPRO_ENTRY]
    r = cell.entry.reproductions[0]
    why = wheel_install.missing_repro_wheel(r.install.package, r.install.version)
    assert why is None, why
    cache = installed["work"].parent / "repro-cache"
    done = subprocess.run(["bwkb", "repro", REPRO_ENTRY, "--wheelhouse", str(wheel_install.REPRO_WHEELHOUSE)],
                          capture_output=True, cwd=installed["work"], timeout=300,
                          env={**installed["env"], "XDG_CACHE_HOME": str(cache)})
    assert done.returncode == 0, done.stderr.decode()
    tool = r.printed.tool_version.rsplit(", ", 1)[-1]
    assert done.stdout.decode().splitlines() == [
        f"ok       {REPRO_ENTRY} reproductions[0]: {r.command()} ({r.install.package} {tool})"]
    assert b"reading the index of the checkout" not in done.stderr
    release = cache / "blackwell-serving-kb" / "repro" / f"{r.install.package}-{r.install.version}"
    assert os.listdir(release.parent) == [release.name]
    assert (release / "nvidia" / "cuda_nvcc" / "bin" / "ptxas").is_file()
    assert os.listdir(installed["work"]) == []  # it ran in a temporary folder
