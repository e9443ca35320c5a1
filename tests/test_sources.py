"""Symbolic links and special files among what the build reads (attack review 2026-12-04, M2):
refused before the engine runs (KB076), never followed into the site. Links cannot usefully be
committed as fixtures (and tests/test_ci_config.py holds that none is): each test makes them in a
temporary copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from kb import cli
from kb.site import build, incremental, sources

from conftest import FIXTURES, ROOT

SECRET = "PRIVATE-KEY-FROM-OUTSIDE-THE-REPOSITORY"


@pytest.fixture
def project(tmp_path) -> tuple[Path, Path]:
    """A config like mkdocs.yml whose pages folder is a copy of site_src/ with a link to a secret
    file and one to a secret folder, as a pull request would commit them (relative links)."""
    secret = tmp_path / "secretdir"
    secret.mkdir()
    (secret / "id_ed25519").write_text(SECRET + "\n", encoding="utf-8")
    pages = tmp_path / "repo" / "site_src"
    shutil.copytree(ROOT / "site_src", pages)
    (pages / "assets" / "leak.txt").symlink_to(os.path.relpath(secret / "id_ed25519", pages / "assets"))
    (pages / "assets" / "leakdir").symlink_to(secret)
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config.update(docs_dir=str(pages), hooks=[str(ROOT / "hooks" / "kb_pages.py")],
                  watch=[str(ROOT / "kb"), str(ROOT / "templates")])
    config["theme"]["custom_dir"] = str(ROOT / "templates" / "theme")
    config["extra"].update(kb_url_lock="", kb_redirects="")
    config_file = tmp_path / "repo" / "mkdocs.yml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return config_file, pages


def test_the_build_refuses_a_link_among_the_pages_and_copies_nothing(project, tmp_path, capsys):
    config_file, pages = project
    site = tmp_path / "site"
    code = build.build(site, FIXTURES / "good", config_file=config_file)
    out, err = capsys.readouterr()
    assert code == 1, out + err
    refused = [line for line in out.splitlines() if line.endswith("[KB076]")]
    assert [line.split(":")[0] for line in refused] == [os.path.relpath(pages / "assets" / "leak.txt"),
                                                         os.path.relpath(pages / "assets" / "leakdir")]
    assert all(": (file): is a symbolic link, not a regular file;" in line for line in refused)
    assert "nothing was built" in err and "Traceback" not in out + err
    assert SECRET not in out + err
    assert not site.exists()
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink() and p.parent.name != "secretdir"
              and SECRET.encode() in p.read_bytes()]
    assert leaked == []


def test_special_files_and_linked_folders_are_found_unread(tmp_path):
    pages = tmp_path / "pages"
    (pages / "sub").mkdir(parents=True)
    (pages / "index.md").write_text("# ok\n", encoding="utf-8")
    os.mkfifo(pages / "sub" / "pipe.css")
    (pages / "sub" / "broken.js").symlink_to(tmp_path / "nowhere")
    (pages / "sub" / "loop").symlink_to(pages / "sub" / "loop")
    (pages / "linked").symlink_to(tmp_path)
    found = [(p.path.relative_to(pages).as_posix(), p.code, p.message.split(",")[0])
             for p in sources.problems(pages, skip=None) if p.path.is_relative_to(pages)]
    assert found == [("linked", "KB076", "is a symbolic link"), ("sub/broken.js", "KB076", "is a symbolic link"),
                     ("sub/loop", "KB076", "is a symbolic link"), ("sub/pipe.css", "KB076", "is a named pipe (FIFO)")]


def test_the_repository_has_none():
    assert sources.problems(config_file=ROOT / "mkdocs.yml") == []


def test_kb_check_reports_a_link_among_the_sources(monkeypatch, tmp_path, capsys):
    """kb check on the repository's entries walks the same folders (here, a copy of site_src/)."""
    pages = tmp_path / "site_src"
    shutil.copytree(ROOT / "site_src", pages)
    (pages / "leak.txt").symlink_to("/etc/hostname")
    real = sources.folders
    monkeypatch.setattr(sources, "folders", lambda docs_dir=None: real(pages))
    assert cli.main(["check"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{os.path.relpath(pages / 'leak.txt')}:1: (file): is a symbolic link, not a regular file; the "
                   "build reads this folder and would follow it: commit the file itself, not a link (it was not "
                   "read) [KB076]"]


def test_the_fingerprint_never_reads_through_a_link(tmp_path):
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "page.html").write_text("x", encoding="utf-8")
    assert incremental._folder_parts(folder) == ["page.html", b"x"]
    (folder / "leak.html").symlink_to(tmp_path / "secret")
    (tmp_path / "secret").write_text(SECRET, encoding="utf-8")
    with pytest.raises(sources.SourceError):
        incremental._folder_parts(folder)
