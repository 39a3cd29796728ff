"""`backfill schema`"""

from __future__ import annotations

import argparse
import json

from backfill_orchestrator.config import config_json_schema


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("schema", help="print the JSON Schema of config v1")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print(json.dumps(config_json_schema(), indent=2))
    return 0
