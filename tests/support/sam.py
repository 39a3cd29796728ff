"""`sam build` and the Lambda runtime's Python for the slow template tests (SAM_CLI and
LAMBDA_PYTHON_PREFIX, which `make test` sets)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.aws import TEMPLATE

__all__ = ["TEMPLATE", "sam_env"]


def sam_env() -> tuple[str, str]:
    """(the sam executable, the Python 3.12 install); skips without SAM_CLI."""
    sam = os.environ.get("SAM_CLI")
    prefix = os.environ.get("LAMBDA_PYTHON_PREFIX")
    if not sam:
        pytest.skip("SAM_CLI is not set (run through `make test`, which installs aws-sam-cli in .venv-sam)")
    assert prefix, "LAMBDA_PYTHON_PREFIX must name a Python 3.12 install (make test sets it from pyenv)"
    assert Path(sam).exists(), f"SAM_CLI={sam} does not exist"
    assert (Path(prefix) / "bin" / "python3.12").exists(), f"no python3.12 under {prefix}"
    return sam, prefix
