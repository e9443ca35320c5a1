"""Values `kb check` accepts build (attack review 2026-12-04, M5): a GPU name or an upstream
repository of any length the schema allows makes a short URL segment (facet keys are cut and
hashed, as slugs are), a URL that would still have a segment over 100 bytes is refused by the
check (KB075, e.g. a long cell id), and an OSError in the build is a message naming the file,
never a traceback."""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kb import cli
from kb.records import facets, lint, schema
from kb.records.catalog import Site
from kb.site import export, urls
from kb.site.pages import Renderer

from conftest import FIXTURES

LONG = FIXTURES / "hostile" / "long-names"
GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
GOOD_DATA = yaml.safe_load(GOOD.read_text(encoding="utf-8"))


def _segments_short(site_dir: Path) -> None:
    for path in site_dir.rglob("*"):
        for part in path.relative_to(site_dir).parts:
            assert len(part.encode("utf-8")) <= 100, path


@pytest.mark.build
@pytest.mark.parametrize("name", ["long-gpu-name.yaml", "long-upstream-repo.yaml"])
def test_a_long_gpu_name_or_repository_passes_the_check_and_builds(tmp_path, capsys, name):
    folder = tmp_path / "entries"
    folder.mkdir()
    shutil.copy(LONG / name, folder / name)
    assert cli.main(["check", str(folder)]) == 0
    site = tmp_path / "site"
    assert cli.main(["build", "--preview", "-d", str(site), "--entries", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and out.strip().splitlines()[-1].startswith("built ")
    _segments_short(site)
    facet = "gpu" if "gpu" in name else "upstream"
    keys = [p.name for p in (site / "by" / facet).iterdir() if p.is_dir()]
    assert any(len(k) == facets.MAX_KEY_CHARS + 9 for k in keys), keys


def test_a_long_key_is_cut_with_a_hash_and_short_keys_keep_their_urls():
    assert facets.key("RTX PRO 6000 Blackwell") == "rtx-pro-6000-blackwell"
    assert facets.key("vllm-project/vllm") == "vllm-project-vllm"
    a, b = facets.key("RTX " + "x" * 252), facets.key("RTX " + "x" * 251)
    assert a != b and len(a) == len(b) == facets.MAX_KEY_CHARS + 9 and a[:60] == b[:60]
    assert facets.key("RTX " + "x" * 252) == facets.key("rtx " + "X" * 252)  # one listing, as short keys


def test_a_url_segment_over_100_bytes_is_refused_by_check_and_build(tmp_path, capsys):
    folder = tmp_path / "entries"
    folder.mkdir()
    cell_id = "a-cell-id-" + "x" * 110
    shutil.copy(GOOD, folder / f"{cell_id}.yaml")
    assert cli.main(["check", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(line.endswith("[KB075]") for line in out), out
    assert out[0].startswith(f"{os.path.relpath(folder / cell_id)}.yaml:1: (file name): this makes the URL 'api/v1/cells/")
    site = tmp_path / "site"
    assert cli.main(["build", "--preview", "-d", str(site), "--entries", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert [line for line in out.splitlines() if line.endswith("[KB075]")] and "Traceback" not in out + err
    assert not site.exists()


@pytest.mark.build
def test_an_os_error_in_the_build_is_a_message_naming_the_file(tmp_path, capsys, monkeypatch):
    """With the old unbounded facet key (and the KB075 check switched off), the engine meets a name
    too long for the file system: one line naming it, exit 1, the site left as it was."""
    import re

    folder = tmp_path / "entries"
    folder.mkdir()
    shutil.copy(LONG / "long-gpu-name.yaml", folder / "long-gpu-name.yaml")
    monkeypatch.setattr(facets, "key", lambda v: re.sub(r"[^a-z0-9]+", "-", v.lower()).strip("-") or "other")
    monkeypatch.setattr(urls, "segment_problems", lambda *args: [])
    site = tmp_path / "site"
    assert cli.main(["build", "--preview", "-d", str(site), "--entries", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    (line,) = [line for line in err.splitlines() if line.startswith("build failed")]
    assert line.startswith("build failed: cannot write '") and "/by/gpu/rtx-xxxx" in line
    assert line.endswith(f": File name too long; {site} was left as it was")
    assert not site.exists()


# --- every record the check accepts builds, long values included ------------------------------

LONG_TEXT = st.text(alphabet=st.characters(codec="ascii", categories=["L", "N", "P", "Zs"]), min_size=1,
                    max_size=300).map(str.strip).filter(lambda t: t and "  " not in t)
NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=200).filter(
    lambda t: t[0].isalnum() and t[-1].isalnum())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LONG_TEXT, min_size=1, max_size=3), NAME, NAME, st.integers(1, 130))
@example(["RTX " + "x" * 252], "o" * 200, "r" * 70, 40)
def test_every_record_the_check_accepts_publishes_short_segments(gpus, owner, repo, id_length):
    data = copy.deepcopy(GOOD_DATA)
    data["hardware"]["gpus"] = list(dict.fromkeys(gpus))
    url = f"https://github.com/{owner}/{repo}/issues/1"
    data["upstream"] = data["upstream"] + [{"kind": "issue", "url": url, "state": "open", "as_of": "2026-09"}]
    try:
        entry = schema.Entry.model_validate(data)
    except ValueError:
        return  # the schema refused it (a URL over 300 characters, say): nothing to build
    cell_id = ("c" * id_length)
    cell = lint.Cell(cell_id, GOOD.with_name(f"{cell_id}.yaml"), entry, {})
    problems = urls.site_problems([cell], None, None)
    site = Site([cell])
    paths = [f"{p.url}index.html" for p in Renderer(site).all_pages()]
    paths += list(export.files(site, "https://example.org/kb/", None, None))
    long = [p for p in paths if any(len(s.encode()) > 100 for s in p.split("/"))]
    if problems:
        assert {p.code for p in problems} == {"KB075"} and long
    else:
        assert long == [] and max(len(s) for p in paths for s in p.split("/")) <= 100
