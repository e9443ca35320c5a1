"""Reproductions whose tool is a Debian package (kb.repro.debian): the nvcc entry's runs with Debian's
nvcc 11.8 and 12.4 are pinned in kb/repro/debian.lock and lint clean; a pin the lock lacks, or a tool
version outside the entry's range, is named by KB091; the system's Debian mirror is read from both
apt source formats; and an unpacked release reaches the cache only when its .deb has the pinned
sha256 (offline, from a folder, with a .deb built here)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess

import pytest

from kb.records import lint, reproduction
from kb.repro import debian, install

from conftest import ROOT

ENTRIES = ROOT / "kb" / "entries"
NVCC = "nvcc-unsupported-gpu-architecture-compute-120a"


@pytest.fixture(scope="module")
def cell():
    return next(c for c in lint.check([ENTRIES]).cells if c.id == NVCC)


def test_the_nvcc_entry_is_reproduced_with_debians_nvcc_11_8_and_12_4(cell):
    runs = cell.entry.reproductions
    assert {(r.install.source, r.install.package, r.install.upstream()) for r in runs} == {
        ("debian", "nvidia-cuda-toolkit", "11.8.89"), ("debian", "nvidia-cuda-toolkit", "12.4.131")}
    printed = {r.run.args[0]: r.printed.output for r in runs if r.install.upstream() == "11.8.89"}
    assert printed["-gencode=arch=compute_120a,code=sm_120a"] == "nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n"
    assert printed["-arch=compute_120a"] == \
        "nvcc fatal   : Value 'compute_120a' is not defined for option 'gpu-architecture'\n"
    # every literal of the entry but the symptom words is printed by one of the runs
    shown = {i for r in runs for i in reproduction.shown(cell.entry, r.printed.output)}
    assert shown == {i for i, s in enumerate(cell.entry.signatures) if s.kind == "log-line"}
    assert all((r.install.package, r.install.version) in reproduction.debian_pins() for r in runs)


@pytest.mark.parametrize("old, new, locs, says", [
    ('version: "11.8.89~11.8.0-5~deb12u1"', 'version: "11.8.89~11.8.0-4"', ["reproductions[0].install"],
     "nvidia-cuda-toolkit=11.8.89~11.8.0-4 is not pinned in kb/repro/debian.lock"),
    ('"12.4.131~12.4.1-2", source: "debian"', '"12.4.131~12.4.1-2", source: "pypi"',
     ["reproductions[4].install.version"], "a PyPI release's version must be PEP 440"),
    # the range is compared with the tool's own version (11.8.89), not the Debian one
    ('affected: "<12.8"', 'affected: ">=12.0,<12.8"', [f"reproductions[{i}].install.version" for i in range(4)],
     "cuda 11.8.89 is outside this entry's range"),
    ('release 11.8, V11.8.89', 'release 12.4, V12.4.131', ["reproductions[0].printed.tool_version"],
     "must name the installed release 11.8.89"),
])
def test_a_bad_debian_reproduction_names_its_field(tmp_path, cell, old, new, locs, says):
    text = cell.path.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / cell.path.name).write_text(text.replace(old, new, 1), encoding="utf-8")
    found = [p for p in lint.check([tmp_path]).problems if p.code == "KB091"]
    assert [p.loc for p in found if says in p.message] == locs, [p.format() for p in found]


def test_the_systems_debian_mirror_is_read_from_either_source_format(tmp_path):
    release = tmp_path / "os-release"
    release.write_text('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_CODENAME=bookworm\n', encoding="utf-8")
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list.d" / "other.sources").write_text(
        "Types: deb\nURIs: https://example.invalid/other\nSuites: nodistro\nComponents: main\n", encoding="utf-8")
    (apt / "sources.list").write_text(
        "# a comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.invalid/debian bookworm main\n", encoding="utf-8")
    assert debian.system_source(apt, release) == ("http://mirror.invalid/debian", "/k.gpg")
    (apt / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb822.invalid/debian\nSuites: bookworm bookworm-updates\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        "Types: deb\nURIs: http://deb822.invalid/debian-security\nSuites: bookworm-security\n", encoding="utf-8")
    assert debian.system_source(apt, release) == ("http://deb822.invalid/debian",
                                                  "/usr/share/keyrings/debian-archive-keyring.gpg")


def test_without_a_debian_source_debians_redirector_is_used_with_the_archive_keyring(tmp_path):
    """Ubuntu (a CI runner) has no Debian source: the redirector, checked with debian-archive-keyring's
    keyring, which Ubuntu ships too; without that keyring, one line that says what to install."""
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list").write_text("deb http://archive.ubuntu.invalid/ubuntu noble main\n", encoding="utf-8")
    keyring = tmp_path / "debian-archive-keyring.gpg"
    keyring.write_bytes(b"stand-in")
    for os_release in ("PRETTY_NAME=Ubuntu\nID=ubuntu\nVERSION_CODENAME=noble\n", "NAME=Other\n"):
        release = tmp_path / "os-release"
        release.write_text(os_release, encoding="utf-8")
        assert debian.system_source(apt, release, keyring) == (debian.DEBIAN_MIRROR, str(keyring))
    keyring.unlink()
    with pytest.raises(install.InstallError, match="no Debian source in .* install the debian-archive-keyring package"):
        debian.system_source(apt, release, keyring)


def _deb(tmp_path, version: str):
    """A .deb holding a stand-in nvcc at the toolkit's path, named as apt names the download."""
    root = tmp_path / "pkg"
    tool = root / "usr" / "lib" / "nvidia-cuda-toolkit" / "bin" / "nvcc"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 11.8, V11.8.89'\n", encoding="utf-8")
    tool.chmod(0o755)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        f"Package: nvidia-cuda-toolkit\nVersion: {version}\nArchitecture: amd64\nMaintainer: t <t@t.invalid>\n"
        "Description: stand-in\n", encoding="utf-8")
    house = tmp_path / "house"
    house.mkdir()
    deb = house / debian.deb_name("nvidia-cuda-toolkit", version, "amd64")
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    return house, deb


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb (Debian)")
def test_a_deb_is_unpacked_into_the_cache_only_with_the_pinned_hash(tmp_path, monkeypatch):
    version = "11.8.89~11.8.0-5~deb12u1"
    house, deb = _deb(tmp_path, version)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lock = tmp_path / "debian.lock"
    monkeypatch.setattr(debian, "debian_pins", lambda: reproduction.debian_pins(lock))
    lock.write_text(f"bookworm non-free nvidia-cuda-toolkit={version} amd64 {'0' * 64}\n", encoding="utf-8")
    with pytest.raises(install.InstallError, match=f"has sha256 {hashlib.sha256(deb.read_bytes()).hexdigest()}, "
                                                   f".* pins {'0' * 64}: not unpacked"):
        debian.install("nvidia-cuda-toolkit", version, house)
    assert list(install.cache_root().iterdir()) == []  # neither the release nor a partial folder
    lock.write_text(f"bookworm non-free nvidia-cuda-toolkit={version} amd64 "
                    f"{hashlib.sha256(deb.read_bytes()).hexdigest()}\n", encoding="utf-8")
    root = debian.install("nvidia-cuda-toolkit", version, house)
    assert root == install.folder("nvidia-cuda-toolkit", version)
    assert install.tool(root, "nvcc") == root / reproduction.TOOLS["nvcc"]
    with pytest.raises(install.InstallError, match="nvidia-cuda-toolkit=12.4.131~12.4.1-2 is not pinned in"):
        debian.install("nvidia-cuda-toolkit", "12.4.131~12.4.1-2", house)
    with pytest.raises(install.InstallError, match="no nvidia-cuda-toolkit_11.8.0_amd64.deb there"):
        lock.write_text(f"bookworm non-free nvidia-cuda-toolkit=11.8.0 amd64 {'0' * 64}\n", encoding="utf-8")
        debian.install("nvidia-cuda-toolkit", "11.8.0", house)
