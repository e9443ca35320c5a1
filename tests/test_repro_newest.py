"""`kb repro --newest` (kb.repro.newest): the index's newest release with a wheel for a scan's
platform, read from a JSON API document; the comparison with the scan's newest version and the
line it prints; the JSON API found beside pip's index; `--write` recording it; an index that
cannot be reached or answers something else. The index is a folder here (file://), never the network."""

from __future__ import annotations

import json
import os
import re
import socket

import pytest

from kb import cli
from kb.records import lint
from kb.repro import newest

from conftest import ROOT

ENTRY = "vllm-no-kernel-image-sm120-build"  # scans vllm 0.9.1 and 0.9.2 for manylinux_2_28_x86_64


def _file(name: str, day: str, yanked: bool = False) -> dict:
    return {"filename": name, "upload_time_iso_8601": f"{day}T10:00:00.000000Z", "yanked": yanked}


# A JSON API document as PyPI serves it (the fields read here), for a package "p".
DOCUMENT = {"info": {"name": "p"}, "releases": {
    "0.9.2": [_file("p-0.9.2-cp38-abi3-manylinux1_x86_64.whl", "2025-07-08"), _file("p-0.9.2.tar.gz", "2025-07-07")],
    "0.10.0": [_file("p-0.10.0-cp38-abi3-manylinux_2_28_x86_64.whl", "2025-07-24"),
               _file("p-0.10.0-cp311-cp311-win_amd64.whl", "2025-07-25")],
    "0.10.1": [_file("p-0.10.1-cp38-abi3-manylinux_2_34_x86_64.whl", "2025-08-01")],  # too new a glibc
    "0.10.2": [_file("p-0.10.2-cp38-abi3-manylinux_2_28_x86_64.whl", "2025-08-10", yanked=True)],
    "0.11.0rc1": [_file("p-0.11.0rc1-cp38-abi3-manylinux_2_28_x86_64.whl", "2025-08-20")],
    "0.11.0": [_file("p-0.11.0.tar.gz", "2025-09-01")],  # no wheel at all
    "not a version": [_file("p-x-py3-none-any.whl", "2025-09-02")],
}}


def test_the_newest_final_release_with_a_wheel_for_the_platform_not_yanked():
    assert newest.newest(DOCUMENT, "manylinux_2_28_x86_64") == newest.Newest("0.10.0", "2025-07-24")
    assert newest.newest(DOCUMENT, "manylinux_2_35_x86_64") == newest.Newest("0.10.1", "2025-08-01")
    assert newest.newest(DOCUMENT, "win_amd64") == newest.Newest("0.10.0", "2025-07-25")
    assert newest.newest(DOCUMENT, "manylinux_2_28_aarch64") is None


def test_a_pure_python_wheel_serves_every_platform():
    document = {"releases": {"2.0": [_file("p-2.0-py3-none-any.whl", "2026-01-02")]}}
    assert newest.newest(document, "win_amd64") == newest.Newest("2.0", "2026-01-02")


def test_the_json_api_is_found_beside_the_simple_index():
    assert newest.json_url("https://pypi.org/simple/", "vllm") == "https://pypi.org/pypi/vllm/json"
    assert newest.json_url("file:///srv/index/simple", "p") == "file:///srv/index/pypi/p/json"
    with pytest.raises(newest.IndexUnreadable, match=r"pip's index 'https://example.org/packages' does not end in "
                       r"/simple, so its JSON API cannot be found beside it"):
        newest.json_url("https://example.org/packages", "p")


def _scan():
    (cell,) = [c for c in lint.check([ROOT / "kb" / "entries"]).cells if c.id == ENTRY]
    return cell.entry.scans[0].model_copy(update={"newest": None})  # as if never looked


def test_the_message_says_which_release_is_newer_and_what_to_do():
    scan = _scan()  # vllm 0.9.1 without sm_120 code, 0.9.2 with it; no `newest` recorded
    line, changed = newest.message("e scans[0]", scan, newest.Newest("0.10.0", "2025-07-24"))
    assert changed and line == ("newer    e scans[0]: vllm 0.10.0 is on the index, uploaded 2025-07-24 (not recorded "
                                "yet); the scan proves sm_120 code from 0.9.2: scan 0.10.0 to see that it still has "
                                "it (add it to the scan's versions, then `kb repro --write`)")
    recorded = scan.model_copy(update={"newest": "0.10.0"})
    assert newest.message("e scans[0]", recorded, newest.Newest("0.10.0", ""))[1] is False
    line, changed = newest.message("e scans[0]", recorded, newest.Newest("0.11.0", ""))
    assert changed and "0.11.0 is on the index (new since the last look, which recorded 0.10.0);" in line
    assert newest.message("e scans[0]", scan, newest.Newest("0.9.2", "")) == (
        "ok       e scans[0]: vllm 0.9.2 is the newest release on the index (not recorded yet)", True)
    assert newest.message("e scans[0]", scan, None) == (
        "ok       e scans[0]: the index has no final release of vllm with a manylinux_2_28_x86_64 wheel", False)


def test_a_scan_without_a_good_version_asks_whether_the_new_release_has_the_code():
    scan = _scan()
    unfixed = scan.model_copy(update={"found": scan.found.model_copy(update={"wheels": scan.found.wheels[:1]}),
                                      "versions": ["0.9.0", "0.9.1"]})
    line, _ = newest.message("e scans[0]", unfixed, newest.Newest("0.9.2", ""))
    assert line.endswith("; the scan's newest, 0.9.1, has no sm_120 code: scan 0.9.2 to see whether it does (add it "
                         "to the scan's versions, then `kb repro --write`)")


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A file:// index holding `pypi/vllm/json`, made pip's index; no setting of this machine's pip."""
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    (tmp_path / "index" / "simple").mkdir(parents=True)
    document = json.loads(json.dumps(DOCUMENT).replace("p-", "vllm-"))
    (tmp_path / "index" / "pypi" / "vllm").mkdir(parents=True)
    (tmp_path / "index" / "pypi" / "vllm" / "json").write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "index" / "simple").as_uri())
    entries = tmp_path / "entries"
    entries.mkdir()
    # the live entry without the `newest` its scan records, as if the index was never asked
    live = (ROOT / "kb" / "entries" / f"{ENTRY}.yaml").read_text(encoding="utf-8")
    (entries / f"{ENTRY}.yaml").write_text(re.sub(r"(?m)^    newest: .*\n", "", live), encoding="utf-8")
    return entries


def test_newest_reports_then_records_a_newer_release(index, capsys):
    copy = index / f"{ENTRY}.yaml"
    before = copy.read_text(encoding="utf-8")
    assert cli.main(["repro", "--newest", ENTRY, "--entries", str(index)]) == 1
    line = (f"newer    {ENTRY} scans[0]: vllm 0.10.0 is on the index, uploaded 2025-07-24{{}}; the scan proves sm_120 "
            "code from 0.9.2: scan 0.10.0 to see that it still has it (add it to the scan's versions, then `kb repro "
            "--write`)\n")
    assert capsys.readouterr().out == line.format(" (not recorded yet)")
    assert copy.read_text(encoding="utf-8") == before  # nothing written without --write
    assert cli.main(["repro", "--newest", "--write", ENTRY, "--entries", str(index)]) == 1
    assert f"wrote {copy} (scans 0)" in capsys.readouterr().err
    after = copy.read_text(encoding="utf-8")
    # one line added below the scan's tool, the rest of the file byte for byte
    assert after.replace('    newest: "0.10.0"\n', "", 1) == before
    assert after.index('newest: "0.10.0"') > after.index('tool: {package: "nvidia-cuda-cuobjdump"')
    # recorded: the release is still newer than the scan's, but nothing changed since the last look
    assert cli.main(["repro", "--newest", "--write", ENTRY, "--entries", str(index)]) == 0
    out, err = capsys.readouterr()
    assert out == line.format("") and "wrote" not in err and copy.read_text(encoding="utf-8") == after


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_index_is_one_clear_line(index, monkeypatch, capsys):
    url = f"https://127.0.0.1:{_closed_port()}/simple/"
    monkeypatch.setenv("PIP_INDEX_URL", url)
    assert cli.main(["repro", "--newest", ENTRY, "--entries", str(index)]) == 2
    assert capsys.readouterr().out == (
        f"error    {ENTRY} scans[0]: cannot reach the package index at {url.removesuffix('/simple/')}/pypi/vllm/json "
        "([Errno 111] Connection refused); check the network and pip's index settings (`pip config list`, "
        "PIP_INDEX_URL)\n")


def test_an_index_without_the_package_or_without_a_json_api_is_an_error(index, tmp_path, capsys):
    (tmp_path / "index" / "pypi" / "vllm" / "json").write_text("<html>simple page</html>", encoding="utf-8")
    assert cli.main(["repro", "--newest", ENTRY, "--entries", str(index)]) == 2
    assert capsys.readouterr().out.endswith("/pypi/vllm/json is not a JSON API document (no 'releases' mapping)\n")
    (tmp_path / "index" / "pypi" / "vllm" / "json").unlink()
    assert cli.main(["repro", "--newest", ENTRY, "--entries", str(index)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"error    {ENTRY} scans[0]: cannot reach the package index at file://") and \
        "No such file or directory" in out, out
