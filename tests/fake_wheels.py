"""A small wheel of a named release in a folder of its own, and a lock pinning its hash in place of
kb/repro/tools.lock, for the reproduction kinds that read a file of a released wheel (cmake, python):
nothing from the network, and the cache is the test's own."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from kb.repro import install


def wheelhouse(tmp_path: Path, monkeypatch, package: str, version: str, files: dict[str, str | bytes]) -> Path:
    """A folder holding `package` `version` as a py3-none-any wheel of `files` (path -> content) with its
    dist-info; kb.repro.install reads a lock pinning that wheel and caches under tmp_path."""
    house = tmp_path / "wheels"
    house.mkdir()
    stem = f"{package.replace('-', '_')}-{version}"
    wheel = house / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, content in files.items():
            z.writestr(path, content)
        z.writestr(f"{stem}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        z.writestr(f"{stem}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                              "Tag: py3-none-any\n")
        z.writestr(f"{stem}.dist-info/RECORD", "")
    lock = tmp_path / "tools.lock"
    lock.write_text(f"{package}=={version} \\\n    --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}\n",
                    encoding="utf-8")
    monkeypatch.setattr(install, "LOCK", lock)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return house
