"""A fake serving environment for `kb doctor` tests: a real virtual environment (`python -m venv
--without-pip`) whose site-packages hold only dist-info folders, so that its interpreter reports
the versions a test chose while no package code exists to import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# A serving stack as the 2026-12-05 H100 run saw it (torch) with a vLLM beside it.
STACK = {"torch": "2.11.0", "vllm": "0.28.1"}


def make(folder: Path, packages: dict[str, str] = STACK) -> Path:
    """Create the environment in `folder`; returns its interpreter (bin/python)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    (site,) = (folder / "lib").glob("python3*/site-packages")
    for name, version in packages.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    return folder / "bin" / "python"
