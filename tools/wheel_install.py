"""Build this checkout's wheel and install it into a fresh virtual environment without the network,
as tests/test_wheel_install.py and bench/install_size.py do: the dependencies come from the
wheelhouse that `make .venv/.installed-test` fills from the hashed lock (`.venv/wheelhouse/`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = ROOT / ".venv" / "wheelhouse"
# One pinned tool release's wheel (the Makefile's REPRO_WHEEL), for `kb repro --wheelhouse` offline.
REPRO_WHEELHOUSE = ROOT / ".venv" / "repro-wheelhouse"
QUIET_PIP = ["--disable-pip-version-check", "--no-input", "-q"]


def pip_env(home: Path) -> dict[str, str]:
    """No user or site pip configuration (an extra index or find-links there would be another
    source than the wheelhouse), and no index: nothing is downloaded."""
    return {"PATH": os.defpath, "HOME": str(home), "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1",
            "LANG": "C.UTF-8"}


def missing_wheelhouse() -> str | None:
    """What is wrong with the wheelhouse, or None when it is filled."""
    if (WHEELHOUSE / ".filled").is_file():
        return None
    return (f"{WHEELHOUSE} is not filled: `make .venv/.installed-test` downloads the locked wheels into it "
            "(hash-checked), so that the wheel installs without the network")


def missing_repro_wheel(package: str, version: str) -> str | None:
    """What is wrong with the tool wheelhouse for that release, or None when its wheel is there."""
    if list(REPRO_WHEELHOUSE.glob(f"{package.replace('-', '_')}-{version}-*.whl")):
        return None
    return (f"{REPRO_WHEELHOUSE} holds no {package}=={version} wheel: `make .venv/.installed-test` downloads "
            "the Makefile's REPRO_WHEEL into it (hash-checked against kb/repro/tools.lock); if the test's entry "
            "now uses another release, change REPRO_WHEEL to it")


def build_wheel(base: Path, home: Path) -> Path:
    """The wheel, built from a copy of what it packages (pyproject.toml, LICENSE, kb/), so that
    setuptools' build/ and *.egg-info land under `base`, not in the checkout."""
    src = base / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "kb", src / "kb", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", *QUIET_PIP, "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(base / "dist"), str(src)], check=True, env=pip_env(home), timeout=300)
    (wheel,) = (base / "dist").glob("blackwell_serving_kb-*.whl")
    return wheel


def install(venv: Path, requirement: str, home: Path) -> Path:
    """A fresh venv (no system site-packages) with `requirement` (the wheel's path, with an extra
    in brackets if wanted) installed from the wheelhouse alone; returns its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=pip_env(home), timeout=300)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", *QUIET_PIP, "--no-index",
                    "--find-links", str(WHEELHOUSE), requirement], check=True, env=pip_env(home), timeout=600)
    return venv / "bin"
