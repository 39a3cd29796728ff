"""`backfill schema [--contract NAME]`"""

from __future__ import annotations

import argparse
import json

from backfill_orchestrator.config import config_json_schema


def register(commands: argparse._SubParsersAction) -> None:
    from backfill_orchestrator.contracts import CONTRACTS

    parser = commands.add_parser("schema", help="print the JSON Schema of config v1 (or of another contract)")
    parser.add_argument(
        "--contract",
        choices=sorted(CONTRACTS),
        help="a document that crosses a process instead of the config (the files in docs/schemas/)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.contract:
        from backfill_orchestrator.contracts import CONTRACTS
        from backfill_orchestrator.contracts.schemas import contract_schema

        print(json.dumps(contract_schema(args.contract, CONTRACTS[args.contract]), indent=2))
        return 0
    print(json.dumps(config_json_schema(), indent=2))
    return 0
