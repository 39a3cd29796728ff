"""The project's wheel, built once per test run (the `built_wheel` fixture), and running the
tools that install it into clean virtualenvs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.configs import REPO_ROOT as REPO

UV = Path(sys.executable).parent / "uv"


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kwargs)
    assert completed.returncode == 0, f"{argv}:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    return completed


def build_wheel(tmp_path: Path) -> Path:
    """The project's wheel, built from a copy of what it is made of (so the checkout gets no
    build/ or egg-info)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in ("layers/shared",):  # the wheel is the package alone
        shutil.copytree(REPO / folder, source / folder, ignore=ignore)
    run([str(UV), "build", "--wheel", "--out-dir", str(tmp_path / "dist"), str(source)], env=clean_env())
    (wheel,) = (tmp_path / "dist").glob("backfill_orchestrator-*.whl")
    return wheel


def clean_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
