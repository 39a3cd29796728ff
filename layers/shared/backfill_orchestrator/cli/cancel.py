"""`backfill cancel ID --reason R --bucket B [--requested-by WHO]`"""

from __future__ import annotations

import argparse

from backfill_orchestrator.cli.control_commands import register_action


def register(commands: argparse._SubParsersAction) -> None:
    register_action(commands, "cancel")
