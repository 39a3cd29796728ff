"""`backfill local up` and the README's "Try it in a minute", run as a newcomer would: each
command of the README's console block runs as a process against the stand-ins, and every line
the README quotes is a line the command printed (its exit code: 1 for a refusal, else 0). The
same principal is named by the CLI, the status history and Slack."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.configs import REPO_ROOT

pytestmark = pytest.mark.slow  # a process of stand-ins, and a process per command
BACKFILL = [sys.executable, "-m", "backfill_orchestrator"]
SETTLE_SECONDS = 90  # the trigger acting on an upload, on a loaded machine


def readme_session() -> list[tuple[str, list[str]]]:
    """(command, the lines the README quotes after it) of the "Try it in a minute" block."""
    readme = (REPO_ROOT / "README.md").read_text()
    block = readme.split("## Try it in a minute", 1)[1].split("```console\n", 1)[1].split("\n```", 1)[0]
    session: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            session.append((line[2:], []))
        else:
            session[-1][1].append(line)
    return session


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    directory = tmp_path_factory.mktemp("local") / "stack"
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.pop("STATUS_TABLE", None)
    up = subprocess.run(
        [*BACKFILL, "local", "up", "--dir", str(directory)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=600,
        check=False,
    )
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        assert up.stdout.startswith("unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN\n")
        exported = json.loads((directory / "env.json").read_text())
        assert {"AWS_ENDPOINT_URL", "AWS_PROFILE", "CONFIG_BUCKET", "STATUS_TABLE", "MARQUEZ_URL"} <= set(
            exported
        )
        yield directory, {**env, **exported}
    finally:
        down = subprocess.run(
            [*BACKFILL, "local", "down", "--dir", str(directory)], capture_output=True, text=True, timeout=120
        )
        assert down.returncode == 0, down.stderr


def run(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command)
    extra = {}
    while "=" in words[0]:  # `AWS_PROFILE=ana backfill ...`
        name, _, value = words.pop(0).partition("=")
        extra[name] = value
    assert words[0] == "backfill", command
    return subprocess.run(
        [*BACKFILL, *words[1:]],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**env, **extra},
        timeout=300,
        check=False,
    )


def test_the_readme_session_against_the_local_stand_ins(stack):
    directory, env = stack
    session = readme_session()
    assert sum(command.startswith(("backfill", "AWS_PROFILE")) for command, _ in session) >= 8
    for command, quoted in session:
        if command.startswith(("make setup", "eval ")) or command == "backfill local down":
            continue  # done by the fixture, as `backfill local up` / `down`
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            done = run(command, env)
            printed = done.stdout.splitlines()
            if all(line in printed for line in quoted) or time.monotonic() > deadline:
                break
            time.sleep(1)  # the trigger has not acted on the upload yet (`status` right after `submit`)
        missing = [line for line in quoted if line not in printed]
        assert not missing, f"{command}:\n{done.stdout}\n{done.stderr}"
        refused = any(": refused: " in line for line in quoted)
        assert done.returncode == (1 if refused else 0), f"{command}: {done.returncode}\n{done.stderr}"

    # One principal everywhere: the CLI's `requested by`, the status history's `by`, Slack's reply.
    history = json.loads(run("backfill status etl-orders-0604-c67a7315 --json", env).stdout)["history"]
    by_state = [(entry["state"], entry.get("by")) for entry in history]
    assert ("AWAITING_APPROVAL", "role/data-eng/jane") in by_state and (
        "CANCELLED",
        "role/data-eng/jane",
    ) in by_state
    assert any(
        entry.get("by") == "role/data-eng/ana"
        and "approved by role/data-eng/ana" in (entry.get("detail") or "")
        for entry in history
    ), history
    cancel = run("backfill cancel etl-orders-0604-c67a7315 --reason again --json", env)
    assert json.loads(cancel.stdout)["requested_by"] == "role/data-eng/jane"
    slack = (directory / "slack.log").read_text()
    assert "cancel by role/data-eng/jane" in slack and "approve by role/data-eng/ana" in slack


def test_a_second_up_finds_it_running_and_down_stops_it(stack):
    directory, env = stack
    again = run(f"backfill local up --dir {directory} --json", env)
    assert again.returncode == 0 and json.loads(again.stdout)["AWS_ENDPOINT_URL"] == env["AWS_ENDPOINT_URL"]
