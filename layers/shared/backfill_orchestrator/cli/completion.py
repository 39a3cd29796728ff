"""`backfill completion [bash|zsh|fish]`: the shell code that completes `backfill`'s commands
and options (argcomplete). Add `eval "$(backfill completion bash)"` to ~/.bashrc."""

from __future__ import annotations

import argparse
import os
from typing import Any

SHELLS = ("bash", "zsh", "fish", "tcsh", "powershell")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "completion", help="print shell code that completes backfill's commands and options"
    )
    parser.add_argument("shell", nargs="?", choices=SHELLS, default="bash", help="default bash")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import argcomplete

    print(argcomplete.shellcode(["backfill"], shell=args.shell))
    return 0


def autocomplete(parser: argparse.ArgumentParser, **options: Any) -> None:
    """Answer a completion request from the shell (set in the environment by the shell code)
    and exit; otherwise return at once. `options` go to argcomplete (a test's output stream)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(parser, **options)
