"""The CLI's conventions: --version, --json on every command that prints a result, no traceback
when its reader goes away (`| head`), shell completion, every command in the README's table."""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys

import pytest

from backfill_orchestrator import __version__
from backfill_orchestrator.cli import build_parser, main
from backfill_orchestrator.cli.common import Progress
from backfill_orchestrator.cli.completion import autocomplete
from tests.support.configs import EXAMPLES, REPO_ROOT


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"backfill {__version__}\n"


def test_every_command_that_prints_a_result_takes_json():
    without = {"schema", "completion"}  # JSON already / shell code
    for name, parser in subcommands().items():
        options = {option for action in parser._actions for option in action.option_strings}
        assert ("--json" in options) != (name in without), name


def test_controls_and_local_are_commands():
    assert {"approve", "reject", "cancel", "retry", "local", "completion"} <= set(subcommands())


def test_no_traceback_when_the_reader_goes_away(tmp_path):
    """`backfill validate ... | head -1`: the reader leaves after one line while the command has
    far more than a pipe holds to print; it stops quietly (exit 141, as a shell reports SIGPIPE)."""
    files = ["examples/minimal-batch.yaml"] * 2000  # ~170 KB of output, over a pipe's 64 KB
    with open(tmp_path / "stderr", "w") as stderr:
        command = subprocess.Popen(
            [sys.executable, "-m", "backfill_orchestrator", "validate", *files],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=REPO_ROOT,
        )
        assert command.stdout is not None
        first = command.stdout.readline()
        command.stdout.close()  # the reader goes away, as `head -1` does
        code = command.wait(timeout=600)
    printed = (tmp_path / "stderr").read_text()
    assert first == "examples/minimal-batch.yaml: ok: etl-orders-0604 (batch), 1 day, all hours, all feeds\n"
    assert code == 141
    assert "Traceback" not in printed and "BrokenPipe" not in printed, printed[-2000:]


def test_shell_completion_completes_commands_and_options(monkeypatch):
    script = subprocess.run(
        [sys.executable, "-m", "backfill_orchestrator", "completion", "bash"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "complete" in script and "backfill" in script
    # What that shell code asks `backfill` when Tab is pressed (argcomplete's protocol).
    for name, value in {"_ARGCOMPLETE": "1", "COMP_LINE": "backfill appr", "COMP_POINT": "13"}.items():
        monkeypatch.setenv(name, value)
    answer = io.StringIO()
    with pytest.raises(SystemExit):
        autocomplete(build_parser(), output_stream=answer, exit_method=sys.exit)
    assert answer.getvalue().split() == ["approve"]


def test_progress_is_silent_off_a_terminal(tmp_path):
    with open(tmp_path / "log", "w") as stream:
        progress = Progress(stream)
        progress.show("waiting 3 s")
        progress.clear()
    assert not progress.enabled and (tmp_path / "log").read_text() == ""


def test_the_readme_lists_every_command_with_an_example():
    readme = (REPO_ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| `backfill (\w+)", readme, flags=re.MULTILINE))
    assert listed == set(subcommands()), listed ^ set(subcommands())


@pytest.mark.parametrize("command", ["validate", "submit"])
def test_json_is_json(command, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("MARQUEZ_URL", raising=False)
    if command == "validate":
        assert main(["validate", str(EXAMPLES / "minimal-batch.yaml"), "--json"]) == 0
    else:
        assert main(["submit", str(tmp_path / "absent.yaml"), "--bucket", "b", "--json"]) == 2
        capsys.readouterr()
        return
    import json

    assert json.loads(capsys.readouterr().out)[0]["ok"] is True
