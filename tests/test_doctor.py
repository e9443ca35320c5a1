"""`kb doctor`: facts, verdicts from the records, the environment key, facts files and the report."""

import html
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from kb import cli
from kb.doctor import diagnose, facts
from kb.doctor.facts import Facts
from kb.records import facets, lint
from kb.site.pages import Renderer, Site

ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "tests" / "fixtures" / "facts"
ENTRIES = FACTS / "entries"
LIVE = ROOT / "kb" / "entries"

GB10 = FACTS / "gb10-flashinfer-0.6.18.json"
RTX_BEFORE = FACTS / "rtx-pro-6000-sglang-0.5.18.json"
RTX_AFTER = FACTS / "rtx-pro-6000-sglang-0.5.19.json"
H200 = FACTS / "h200.json"
NO_GPU = FACTS / "no-gpu.json"
GPU_UNKNOWN = FACTS / "gpu-unknown.json"
H200_SAMPLE = FACTS / "h200-report-sample.json"
BLACKWELL = {"sm_120", "sm_121"}


def run(capsys, *args, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli.main(["doctor", *args])
    out, err = capsys.readouterr()
    return code, out, err


def report_of(capsys, facts_file: Path, entries: Path = ENTRIES) -> dict:
    code, out, err = run(capsys, "--json", "--facts", str(facts_file), "--entries", str(entries))
    assert code == 0, err
    return json.loads(out)


def verdicts_of(capsys, facts_file: Path, entries: Path = ENTRIES) -> dict[str, dict]:
    return {cell["entry"]: cell for cell in report_of(capsys, facts_file, entries)["cells"]}


def load(path: Path) -> Facts:
    return diagnose.parse_facts(path.read_text(encoding="utf-8"), str(path))


def cells(folder: Path = ENTRIES):
    result = lint.check([folder])
    assert not result.problems, [p.format() for p in result.problems]
    return {cell.id: cell for cell in result.cells}


# --- the verdicts, one machine each ---------------------------------------------------------------

def test_gb10_with_the_flashinfer_that_fails_topk(capsys):
    got = verdicts_of(capsys, GB10)
    topk = got["flashinfer-topk-ragged-operation-not-supported-gb10"]
    assert topk["verdict"] == "affected"
    assert "GPU is sm_121" in topk["why"] and "flashinfer 0.6.18" in topk["why"]
    # sm_121 only / sm_120 only cells
    assert got["greedy-nondeterminism-persistent-topk"]["verdict"] == "affected"
    lm_head = got["sglang-fp8-lm-head-weight-scale-repetition"]
    assert (lm_head["verdict"], lm_head["why"]) == ("not-applicable", "GPU is sm_121; cell applies to sm_120")


def test_gb10_topk_on_the_live_records(capsys):
    topk = verdicts_of(capsys, GB10, LIVE)["flashinfer-topk-ragged-operation-not-supported-gb10"]
    assert topk["verdict"] == "affected", topk["why"]


def test_rtx_pro_6000_with_sglang_before_the_lm_head_fix(capsys):
    got = verdicts_of(capsys, RTX_BEFORE)
    lm_head = got["sglang-fp8-lm-head-weight-scale-repetition"]
    assert lm_head["verdict"] == "affected"
    assert lm_head["why"] == "GPU is sm_120 and sglang 0.5.18 is within <0.5.19"
    xid = got["xid13-fp8-cudnn-autotune-sm120"]
    assert (xid["verdict"], xid["why"]) == ("affected", "GPU is sm_120 and flashinfer 0.6.16.post3 is within <0.6.18.post1")
    # a cell on sm_121 only does not apply to sm_120
    greedy = got["greedy-nondeterminism-persistent-topk"]
    assert (greedy["verdict"], greedy["why"]) == ("not-applicable", "GPU is sm_120; cell applies to sm_121")
    # the ranged component is not installed
    b12x = got["b12x-moe-workspace-oom-profile-run"]
    assert (b12x["verdict"], b12x["why"]) == ("not-applicable", "vllm is not installed")


def test_rtx_pro_6000_with_sglang_after_the_lm_head_fix(capsys):
    got = verdicts_of(capsys, RTX_AFTER)
    lm_head = got["sglang-fp8-lm-head-weight-scale-repetition"]
    assert (lm_head["verdict"], lm_head["why"]) == ("fixed", "sglang 0.5.19 is at or above the fix in 0.5.19")
    assert got["xid13-fp8-cudnn-autotune-sm120"]["verdict"] == "fixed"


def test_the_lm_head_cell_on_the_live_record_has_no_range(capsys):
    """The live record gives no sglang range, so any installed SGLang on sm_120 counts."""
    lm_head = verdicts_of(capsys, RTX_AFTER, LIVE)["sglang-fp8-lm-head-weight-scale-repetition"]
    if any(c.affected or c.fixed_in for c in cells(LIVE)["sglang-fp8-lm-head-weight-scale-repetition"].entry.components):
        pytest.skip("the live record now has a range; the fixture tests cover it")
    assert lm_head["verdict"] == "affected" and "no affected version range" in lm_head["why"]


@pytest.mark.parametrize("entries", [ENTRIES, LIVE], ids=["fixture", "live"])
def test_hopper_h200_no_cell_applies(capsys, entries):
    got = verdicts_of(capsys, H200, entries)
    assert got and {c["verdict"] for c in got.values()} == {"not-applicable"}
    for cell in got.values():
        assert cell["why"].startswith("GPU is sm_90; cell applies to sm_12")


@pytest.mark.parametrize("entries", [ENTRIES, LIVE], ids=["fixture", "live"])
def test_no_gpu_no_packages_is_a_clear_report(capsys, entries):
    code, out, err = run(capsys, "--facts", str(NO_GPU), "--entries", str(entries))
    assert code == 0 and not err
    assert "GPU: none found" in out
    assert "No NVIDIA GPU here, so no cell of this index applies to this machine." in out
    assert "Affected (0)" in out and "Not applicable (" in out
    assert "flashinfer: not installed" in out and "NVIDIA driver: unknown" in out
    assert "Environment key (paste it into bug reports): nogpu-" in out
    got = verdicts_of(capsys, NO_GPU, entries)
    assert {c["verdict"] for c in got.values()} == {"not-applicable"}
    assert all(c["why"].startswith("no NVIDIA GPU found") for c in got.values())


def test_unknown_architecture_gives_unknown(capsys):
    got = verdicts_of(capsys, GPU_UNKNOWN)
    assert {c["verdict"] for c in got.values()} == {"unknown"}
    assert all("GPU architecture is unknown" in c["why"] for c in got.values())


def _with(base: Facts, **packages) -> Facts:
    return base.model_copy(update={"packages": {**base.packages, **packages}})


def test_range_sides_and_unknown_versions():
    b12x = cells()["b12x-moe-workspace-oom-profile-run"].entry  # vllm ==0.25.1
    rtx = load(RTX_BEFORE)
    assert diagnose.judge(b12x, _with(rtx, vllm="0.25.1")) == (
        "affected", "GPU is sm_120 and vllm 0.25.1 is within ==0.25.1")
    # Above a range with no release that fixes it: never "fixed" (issue 33 item 2).
    assert diagnose.judge(b12x, _with(rtx, vllm="0.26.0")) == (
        "not-known", "vllm 0.26.0 is not known to be affected: it is above the affected range ==0.25.1, "
                     "and no release is known to fix it")
    assert diagnose.judge(b12x, _with(rtx, vllm="0.24.0")) == (
        "not-applicable", "vllm 0.24.0 is outside the affected range ==0.25.1")
    assert diagnose.judge(b12x, _with(rtx, vllm="not-a-version"))[0] == "unknown"
    no_vllm_fact = rtx.model_copy(update={"packages": {k: v for k, v in rtx.packages.items() if k != "vllm"}})
    assert diagnose.judge(b12x, no_vllm_fact) == ("unknown", "vllm version is unknown")
    # local versions and pre-releases are versions like any other
    xid = cells()["xid13-fp8-cudnn-autotune-sm120"].entry
    assert diagnose.judge(xid, _with(rtx, flashinfer="0.6.18rc1+cu130"))[0] == "affected"
    assert diagnose.judge(xid, _with(rtx, flashinfer="0.6.18.post1+cu130"))[0] == "fixed"


def test_no_range_needs_an_installed_package():
    topk = cells()["flashinfer-topk-ragged-operation-not-supported-gb10"].entry
    gb10 = load(GB10)
    none_installed = gb10.model_copy(update={"packages": {k: None for k in gb10.packages}})
    verdict, why = diagnose.judge(topk, none_installed)
    assert verdict == "unknown" and "none of flashinfer, vllm is installed" in why and "no affected version range" in why
    verdict, why = diagnose.judge(topk, gb10.model_copy(update={"packages": {}}))
    assert verdict == "unknown" and "whether flashinfer or vllm is installed is unknown" in why


def test_several_gpus_any_listed_architecture_counts():
    gb10 = load(GB10)
    h200 = load(H200)
    both = gb10.model_copy(update={"gpus": h200.gpus + gb10.gpus})
    topk = cells()["flashinfer-topk-ragged-operation-not-supported-gb10"].entry
    assert diagnose.judge(topk, both)[0] == "affected"
    assert diagnose.environment_key(both).startswith("sm_121-gb10+sm_90-h200-")


@pytest.mark.parametrize("cc, arch", [("12.0", "sm_120"), ("12.1", "sm_121"), ("9.0", "sm_90"), ("10.0", "sm_100"),
                                      ("8.6", "sm_86"), (None, None)])
def test_compute_capability_to_architecture(cc, arch):
    assert facts.architecture(cc) == arch


# --- JSON, key, facts files ---------------------------------------------------------------------

def test_json_shape(capsys):
    data = report_of(capsys, RTX_BEFORE)
    assert set(data) == {"facts", "key", "cells"}
    Facts.model_validate(data["facts"])
    assert isinstance(data["key"], str) and data["key"]
    site = Site(list(cells().values()))
    assert [c["entry"] for c in data["cells"]] == sorted(cells())
    for cell in data["cells"]:
        assert set(cell) == {"entry", "verdict", "why", "url"}
        assert cell["verdict"] in {"affected", "fixed", "not-known", "not-applicable", "unknown"}
        assert cell["why"]
        assert cell["url"] == site.url(site.by_id[cell["entry"]])
        assert re.fullmatch(r"e/[a-z0-9-]+/", cell["url"])


def test_site_url_prefixes_the_urls(capsys):
    code, out, _ = run(capsys, "--json", "--facts", str(H200), "--entries", str(ENTRIES),
                       "--site-url", "https://example.org/kb")
    assert code == 0
    assert all(c["url"].startswith("https://example.org/kb/e/") for c in json.loads(out)["cells"])


def test_key_is_stable(capsys, tmp_path):
    first = report_of(capsys, RTX_BEFORE)["key"]
    assert first == report_of(capsys, RTX_BEFORE)["key"]
    assert re.fullmatch(r"sm_120-rtx-pro-6000-blackwell-workstation-edition-torch2\.9-sglang0\.5-flashinfer0\.6-[0-9a-f]{10}",
                        first)
    # the same facts written in another order, with other notes and environment: same key
    data = json.loads(RTX_BEFORE.read_text(encoding="utf-8"))
    shuffled = {k: data[k] for k in reversed(list(data))}
    shuffled["packages"] = dict(reversed(list(data["packages"].items())))
    shuffled["env"] = {"VLLM_LOGGING_LEVEL": "DEBUG"}
    shuffled["notes"] = []
    other = tmp_path / "shuffled.json"
    other.write_text(json.dumps(shuffled), encoding="utf-8")
    assert report_of(capsys, other)["key"] == first
    # a different GPU or a different version: a different key
    assert report_of(capsys, GB10)["key"] != first
    h200 = json.loads(H200.read_text(encoding="utf-8"))
    data["gpus"] = h200["gpus"]
    other.write_text(json.dumps(data), encoding="utf-8")
    assert report_of(capsys, other)["key"].startswith("sm_90-h200-")
    assert diagnose.environment_key(_with(load(RTX_BEFORE), sglang="0.5.18.post1")) != first
    assert report_of(capsys, RTX_AFTER)["key"] != first


def test_facts_from_stdin(capsys, monkeypatch):
    code, out, err = run(capsys, "--json", "--facts", "-", "--entries", str(ENTRIES),
                         stdin=GB10.read_text(encoding="utf-8"), monkeypatch=monkeypatch)
    assert code == 0, err
    assert json.loads(out) == report_of(capsys, GB10)


def test_a_json_report_is_accepted_as_facts(capsys, tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps(report_of(capsys, RTX_BEFORE)), encoding="utf-8")
    assert report_of(capsys, report) == report_of(capsys, RTX_BEFORE)


@pytest.mark.parametrize("name, field", [("bad-compute-capability.json", "gpus[0].compute_capability"),
                                         ("bad-unknown-field.json", "gpu_name")])
def test_malformed_facts_file_exits_2_naming_the_field(capsys, name, field):
    code, out, err = run(capsys, "--facts", str(FACTS / name), "--entries", str(ENTRIES))
    assert code == 2 and not out
    assert f"{name}: {field}: " in err


@pytest.mark.parametrize("text, words", [("{not json", "not valid JSON"), ("[1, 2]", "must be a JSON object"),
                                         ('{"packages": {"vllm": 28}}', "packages.vllm: must be a valid string"),
                                         ('{"gpus": [{"sm_count": -1}]}', "gpus[0].sm_count"),
                                         ('{"facts_version": 2}', "facts_version")])
def test_bad_facts_on_stdin_exit_2(capsys, monkeypatch, text, words):
    code, out, err = run(capsys, "--facts", "-", "--entries", str(ENTRIES), stdin=text, monkeypatch=monkeypatch)
    assert code == 2 and not out
    assert words in err and "<stdin>" in err


def test_missing_facts_file_and_entries_folder_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "--facts", str(tmp_path / "nope.json"), "--entries", str(ENTRIES))
    assert code == 2 and "cannot read the facts file" in err
    code, _, err = run(capsys, "--facts", str(H200), "--entries", str(tmp_path / "none"))
    assert code == 2 and "does not exist" in err


def test_facts_schema_is_exported_and_fits_the_fixtures(capsys):
    code, out, _ = run(capsys, "--facts-schema")
    assert code == 0
    schema = json.loads(out)
    assert schema["additionalProperties"] is False
    assert {"gpus", "packages", "env", "driver_version"} <= set(schema["properties"])
    for path in sorted(FACTS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if path.name == H200_SAMPLE.name:
            data = data["facts"]
        if path.name.startswith("bad-"):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(data, schema)
        else:
            jsonschema.validate(data, schema)


# --- what is probed -------------------------------------------------------------------------------

def test_packages_and_env_names_come_from_the_records():
    live = list(cells(LIVE).values())
    assert {"flashinfer", "vllm", "sglang", "cudnn"} <= diagnose.record_packages(live)
    names = diagnose.mentioned_env(live)
    assert {"VLLM_DISABLED_KERNELS", "TRITON_PTXAS_PATH", "FLASHINFER_CUDA_ARCH_LIST"} <= names
    assert not names & {"CUDA_SUCCESS", "TRITON_MLA", "TRITON_ATTN", "FLASHINFER_CHECK"}


def test_environment_redacts_secrets(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", "sk-secret")
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    env = facts.environment({"TRITON_PTXAS_PATH"}, {"VLLM_LOGGING_LEVEL"})
    assert env["VLLM_API_KEY"] == facts.REDACTED and env["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert env["TRITON_PTXAS_PATH"] is None


# --- values by allow-list (attack review 2026-12-04, L5) ----------------------------------------

HOSTILE_ENV = {"VLLM_DB_PASS": "hunter2-7f3a", "VLLM_S3_URL": "https://user:p4ss-7f3a@s3.internal",
               "VLLM_AUTH_HEADER": "auth-7f3a", "VLLM_SESSION_ID": "session-7f3a", "VLLM_COOKIE": "cookie-7f3a",
               "VLLM_PRIVATE_BLOB": "private-7f3a", "VLLM_CERT_FILE": "/k/cert-7f3a.pem",
               "VLLM_SIGNING_SALT": "salt-7f3a", "NVIDIA_NGC_PASSPHRASE": "phrase-7f3a", "VLLM_PWD": "pwd-7f3a",
               "VLLM_HOST_NOTES": "alice's laptop 7f3a"}


def test_environment_reports_values_only_for_names_the_records_compare(monkeypatch):
    for name, value in HOSTILE_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("VLLM_USE_V1", "0")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    # Every name compared, as a hostile record could make them: secrets are redacted all the same.
    env = facts.environment({"NVIDIA_NGC_PASSPHRASE", "VLLM_USE_V1"}, set(HOSTILE_ENV) - {"VLLM_HOST_NOTES"} | {"VLLM_USE_V1"})
    assert {name: env[name] for name in HOSTILE_ENV} == {
        **{name: facts.REDACTED for name in HOSTILE_ENV}, "VLLM_HOST_NOTES": facts.SET}
    assert env["VLLM_USE_V1"] == "0" and env["CUDA_VISIBLE_DEVICES"] == "0,1"
    printed = json.dumps(env)
    assert not [value for value in HOSTILE_ENV.values() if value in printed]


def test_a_url_with_a_password_is_redacted_whatever_its_name(monkeypatch):
    monkeypatch.setenv("VLLM_MODEL_URL", "https://bob:s3cr3t@models.internal/x")
    assert facts.environment(set(), {"VLLM_MODEL_URL"})["VLLM_MODEL_URL"] == facts.REDACTED
    monkeypatch.setenv("VLLM_MODEL_URL", "https://models.internal/x")
    assert facts.environment(set(), {"VLLM_MODEL_URL"})["VLLM_MODEL_URL"] == "https://models.internal/x"


def test_a_token_in_a_urls_user_part_or_query_is_redacted(monkeypatch):
    """N7 of the 2026-12-05 review: a token as a URL's user name, or as a query value."""
    hostile = {"VLLM_MODEL_URL": "https://hf_AbCdEf0123456789xyzTOKEN@huggingface.co/org/model",
               "VLLM_OTLP_ENDPOINT": "https://otel.example/v1?api_token=abc123&sig=Zz9",
               "VLLM_SIGNED_URL": "https://s3.example/b/o?X-Amz-Date=20261205&X-Amz-Signature=9f8e7d6c",
               "VLLM_EXTRA_ARGS": "--api-key mysecret123"}
    kept = {"VLLM_PLAIN_URL": "https://models.internal/x?revision=main&trust=true", "VLLM_LIST": "a,b"}
    for name, value in {**hostile, **kept}.items():
        monkeypatch.setenv(name, value)
    env = facts.environment(set(), set(hostile) | set(kept))
    assert {name: env[name] for name in hostile} == dict.fromkeys(hostile, facts.REDACTED)
    assert {name: env[name] for name in kept} == kept


def test_compared_names_are_those_written_with_a_value():
    live = list(cells(LIVE).values())
    compared = diagnose.compared_env(live)
    assert "VLLM_PLE_CPU_OFFLOAD" in compared  # VLLM_PLE_CPU_OFFLOAD=1 in a record
    assert compared <= diagnose.mentioned_env(live)


def test_kb_doctor_prints_no_value_of_an_unlisted_or_secret_variable(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("VLLM_", "NVIDIA_"))}
    env.update(HOSTILE_ENV)
    done = subprocess.run([sys.executable, "-m", "kb.cli", "doctor", "--json", "--timeout", "20"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    reported = json.loads(done.stdout)["facts"]["env"]
    assert reported["VLLM_HOST_NOTES"] == facts.SET and reported["VLLM_DB_PASS"] == facts.REDACTED
    assert not [value for value in HOSTILE_ENV.values() if value in done.stdout]
    human = subprocess.run([sys.executable, "-m", "kb.cli", "doctor", "--timeout", "20"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120, env=env)
    assert "    VLLM_HOST_NOTES is set (its value is not reported: no cell compares it)" in human.stdout.splitlines()
    assert not [value for value in HOSTILE_ENV.values() if value in human.stdout]


# --- facts files that are no files (L10) ---------------------------------------------------------

def test_a_named_pipe_as_facts_is_refused_without_waiting(tmp_path):
    pipe = tmp_path / "facts.json"
    __import__("os").mkfifo(pipe)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kb.cli", "doctor", "--facts", str(pipe)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and time.monotonic() - started < 30
    assert done.stderr.splitlines()[-1] == (f"{pipe}: is a named pipe (FIFO), not a regular file; save the facts to a "
                                            "file, or pipe them in with --facts -")


@pytest.mark.parametrize("path, kind", [("/dev/null", "a character device"), (".", "a folder")])
def test_a_device_or_folder_as_facts_is_refused(capsys, path, kind):
    code, _, err = run(capsys, "--entries", str(ENTRIES), "--facts", path)
    assert code == 2 and f"{path}: is {kind}, not a regular file" in err


def test_cudnn_version_numbers():
    assert facts.cudnn_version(91002) == "9.10.2"
    assert facts.cudnn_version(8902) == "8.9.2"
    assert facts.cudnn_version(None) is None


@pytest.mark.slow
def test_a_wedged_or_crashing_probe_is_unknown_not_a_hang():
    started = time.monotonic()
    got = facts.probe(probes={"nvml": "import time; time.sleep(60)", "cuda": "raise SystemExit(3)"}, timeout=1)
    assert time.monotonic() - started < 15
    assert got.gpus is None
    assert any("nvml probe: timed out after 1 s" in note for note in got.notes)
    assert any(note.startswith("cuda probe: probe failed") for note in got.notes)


FAKE_PYNVML = """
def nvmlInit(): pass
def nvmlSystemGetDriverVersion(): return "999.01"
def nvmlSystemGetCudaDriverVersion_v2(): return 13000
def nvmlDeviceGetCount(): return 0
def nvmlShutdown(): pass
"""


@pytest.mark.slow
def test_the_nvml_probe_imports_the_tools_own_pynvml_under_an_interpreter_without_it(tmp_path):
    """Installed with `pip install --target DIR` and run with PYTHONPATH=DIR, the tool's pynvml is
    in DIR alone, and the isolated child (-I drops PYTHONPATH) found none where the interpreter has
    none of its own: no driver version, another matrix key. The probe appends the folder this
    process found it in."""
    bare = tmp_path / "bare"  # an interpreter whose own site-packages hold no pynvml
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    python = str(bare / "bin" / "python")
    tool = tmp_path / "tool-site"
    tool.mkdir()
    (tool / "pynvml.py").write_text(FAKE_PYNVML, encoding="utf-8")
    before = facts.run_children({"nvml": facts.NVML_PROBE}, 30, {"nvml": python})["nvml"]
    assert before["error"].startswith("pynvml (nvidia-ml-py) is not importable")
    after = facts.run_children({"nvml": facts.nvml_probe(str(tool))}, 30, {"nvml": python})["nvml"]
    assert (after.get("driver_version"), after.get("cuda_driver_version")) == ("999.01", "13.0"), after
    found = facts.nvml_probe()  # this process's own pynvml, wherever the test venv keeps it
    import pynvml

    assert f"sys.path.append({os.path.dirname(pynvml.__file__)!r})" in found


@pytest.mark.slow
def test_probing_this_machine_never_crashes_and_finishes_in_time():
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kb.cli", "doctor", "--json", "--timeout", "20"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 120
    data = json.loads(done.stdout)
    probed = Facts.model_validate(data["facts"])
    assert data["key"] == diagnose.environment_key(probed)
    assert {"torch", "vllm", "flashinfer", "sglang", "triton"} <= set(probed.packages)
    assert len(data["cells"]) == len(cells(LIVE))
    human = subprocess.run([sys.executable, "-m", "kb.cli", "doctor"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert human.returncode == 0, human.stderr
    assert "Environment key (paste it into bug reports): " in human.stdout


# --- the site sentence ----------------------------------------------------------------------------

@pytest.mark.parametrize("folder", [ENTRIES, LIVE], ids=["fixture", "live"])
def test_applies_snippet_says_what_the_verdict_rules_say(folder):
    found = list(cells(folder).values())
    template = Renderer(Site(found)).env.get_template("_applies.html")
    for cell in found:
        rendered = template.render(e=cell.entry)
        assert rendered.startswith('<p class="kb-applies">') and rendered.count("<p") == 1, rendered
        text = html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()
        assert text == diagnose.applies_sentence(cell.entry, facets.package_name), cell.id


def test_applies_sentences_in_plain_words():
    found = cells()
    assert diagnose.applies_sentence(found["sglang-fp8-lm-head-weight-scale-repetition"].entry) == (
        "Applies when the GPU is sm_120 and sglang is in <0.5.19 (fixed in 0.5.19).")
    assert diagnose.applies_sentence(found["xid13-fp8-cudnn-autotune-sm120"].entry) == (
        "Applies when the GPU is sm_120 and flashinfer is older than 0.6.18.post1, the version that fixes it.")
    assert diagnose.applies_sentence(found["flashinfer-topk-ragged-operation-not-supported-gb10"].entry) == (
        "Applies when the GPU is sm_121 or sm_120 and flashinfer or vllm is installed; "
        "no affected version range is known, so any installed version counts.")
    rendered = Renderer(Site(list(found.values()))).env.get_template("_applies.html").render(
        e=found["sglang-fp8-lm-head-weight-scale-repetition"].entry)
    assert "<code>&lt;0.5.19</code>" in rendered


# --- the report for affected cells ----------------------------------------------------------------

def test_human_report_lists_facts_key_and_remedies(capsys):
    code, out, err = run(capsys, "--facts", str(RTX_BEFORE), "--entries", str(ENTRIES))
    assert code == 0 and not err
    assert "GPU 0: NVIDIA RTX PRO 6000 Blackwell Workstation Edition; architecture sm_120" in out
    assert "shared memory per SM 102,400 bytes, per block (opt-in) 101,376 bytes" in out
    assert "vllm: not installed" in out and "sglang: 0.5.18" in out
    assert out.index("Affected (3):") < out.index("Fixed (0)") < out.index("Unknown (0)") < out.index("Not applicable (2):")
    assert ("fix: Load compressed-tensors quantized lm_head through the linear scheme (SGLang PR 35228); "
            "source https://github.com/sgl-project/sglang/pull/35228, read 2026-12-02") in out
    assert "workaround: VLLM_DISABLED_KERNELS=FlashInferFP8ScaledMMLinearKernel; source" in out
    code, out, _ = run(capsys, "--facts", str(GB10), "--entries", str(ENTRIES))
    assert "memory unknown" in out


# --- a saved report from a real GPU ---------------------------------------------------------------

def check_real_gpu_fixture(data: dict) -> None:
    """A `kb doctor --json` report saved on a non-Blackwell GPU machine (e.g. tests/data/doctor-h200.json):
    the GPU facts are all there, and no Blackwell cell is affected, then or against today's records."""
    assert set(data) == {"facts", "key", "cells"}, "not a kb doctor --json report"
    saved = Facts.model_validate(data["facts"])
    assert saved.gpus, f"no GPU facts in the report (notes: {saved.notes})"
    for gpu in saved.gpus:
        missing = [k for k, v in gpu.model_dump().items() if v is None]
        assert not missing, f"GPU {gpu.name!r} lacks {missing} (notes: {saved.notes})"
        assert gpu.architecture not in BLACKWELL, f"{gpu.name} is Blackwell ({gpu.architecture}); expected another GPU"
    assert saved.driver_version and saved.cuda_driver_version
    assert data["key"] == diagnose.environment_key(saved)
    assert data["cells"], "the report judged no cells"
    affected = [c["entry"] for c in data["cells"] if c["verdict"] == "affected"]
    assert not affected, f"Blackwell cells reported affected on {saved.gpus[0].name}: {affected}"
    live = list(cells(LIVE).values())
    now = [v.entry for v in diagnose.verdicts(live, saved) if v.verdict == "affected"]
    assert not now, f"today's records find these cells affected: {now}"


def test_real_gpu_fixture_check_on_a_hand_made_sample():
    check_real_gpu_fixture(json.loads(H200_SAMPLE.read_text(encoding="utf-8")))


def test_real_gpu_fixture_check_refuses_a_blackwell_or_partial_report(capsys):
    blackwell = report_of(capsys, RTX_BEFORE, LIVE)
    with pytest.raises(AssertionError):
        check_real_gpu_fixture(blackwell)
    partial = json.loads(H200_SAMPLE.read_text(encoding="utf-8"))
    partial["facts"]["gpus"][0]["shared_memory_per_sm_bytes"] = None
    with pytest.raises(AssertionError, match="shared_memory_per_sm_bytes"):
        check_real_gpu_fixture(partial)


def test_real_h200_run_is_in_and_no_blackwell_cell_applies():
    """tests/data/doctor-h200.json: `kb doctor --json` run on an NVIDIA H200 lent by the device tool."""
    path = Path(__file__).parent / "data" / "doctor-h200.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `kb doctor --json` on a GPU machine and save it there")
    data = json.loads(path.read_text(encoding="utf-8"))
    check_real_gpu_fixture(data)
    assert data["facts"]["gpus"][0]["name"] == "NVIDIA H200"
    assert data["key"].startswith("sm_90-h200-")
