"""Expensive artefacts the slow integration tests share: one `sam build` of the template and
one built wheel per test run (`make test` keeps their users on one xdist worker)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class SamBuild:
    sam: str
    lambda_prefix: str  # a Python 3.12 install: the Lambda runtime's interpreter
    env: dict[str, str]
    build_dir: Path


@pytest.fixture(scope="session")
def sam_build(tmp_path_factory: pytest.TempPathFactory) -> SamBuild:
    """`sam build` of the whole template (every function and the shared layer), once."""
    from tests.integration.test_sam import REPO, TEMPLATE, _sam_env

    sam, prefix = _sam_env()
    tmp = tmp_path_factory.mktemp("sam")
    env = {**os.environ, "PATH": f"{prefix}/bin{os.pathsep}{os.environ['PATH']}", "SAM_CLI_TELEMETRY": "0",
           "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
    build_dir = tmp / "build"
    build = subprocess.run(
        [sam, "build", "--template", str(TEMPLATE), "--base-dir", str(REPO), "--build-dir", str(build_dir),
         "--cache-dir", str(tmp / "cache"), "--no-cached"],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return SamBuild(sam=sam, lambda_prefix=prefix, env=env, build_dir=build_dir)


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once (see test_wheel_install.build_wheel)."""
    from tests.integration.test_wheel_install import build_wheel

    return build_wheel(tmp_path_factory.mktemp("wheel"))
