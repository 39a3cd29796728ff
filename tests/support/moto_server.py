"""A `moto_server` process on 127.0.0.1: the AWS stand-in for tests where several trigger
containers run at once (in-process moto would serialise them under the test's GIL)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.support.trigger import free_port


@contextmanager
def moto_server() -> Iterator[str]:
    """Start the server, yield its endpoint URL, stop it (SIGTERM, then SIGKILL)."""
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                requests.get(f"{endpoint}/moto-api/", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"moto_server did not answer on {endpoint}")
        yield endpoint
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def reset(endpoint: str) -> None:
    """Forget every resource (between tests sharing one server)."""
    requests.post(f"{endpoint}/moto-api/reset", timeout=10).raise_for_status()
