"""`backfill status ID` (the trigger issue fills this in)."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    return None
