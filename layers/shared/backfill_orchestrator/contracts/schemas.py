"""JSON Schemas of the contracts, generated from the models (never edited by hand).

    python -m backfill_orchestrator.contracts.schemas --write docs/schemas   # (re)generate
    python -m backfill_orchestrator.contracts.schemas --check docs/schemas   # exit 1 if stale

Each file is `<name>.schema.json`. A version key with a default is still listed as required:
readers refuse a document without it (except the DAG run conf, whose version may be left out)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from backfill_orchestrator.contracts import CONTRACTS
from backfill_orchestrator.contracts.base import Contract

SCHEMA_BASE = "https://backfill-orchestrator.example/schemas/"


def contract_schema(name: str, model: type[Contract]) -> dict[str, Any]:
    schema = model.model_json_schema(mode="validation")
    key = model.version_field
    if key and model.version_required and key not in schema.get("required", []):
        schema["required"] = [key, *schema.get("required", [])]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE}{name}-v{model.version}.json",
        **schema,
    }


def rendered() -> dict[str, str]:
    """file name -> its text, for every contract."""
    return {
        f"{name}.schema.json": json.dumps(contract_schema(name, model), indent=2, sort_keys=True) + "\n"
        for name, model in CONTRACTS.items()
    }


def stale(directory: Path) -> list[str]:
    """The schema files in `directory` that are missing or differ from the models."""
    out = []
    for file_name, text in rendered().items():
        path = directory / file_name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            out.append(file_name)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m backfill_orchestrator.contracts.schemas")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", metavar="DIR", type=Path, help="write every schema into DIR")
    action.add_argument(
        "--check", metavar="DIR", type=Path, help="exit 1 if a schema in DIR is missing or stale"
    )
    args = parser.parse_args(argv)
    if args.write:
        args.write.mkdir(parents=True, exist_ok=True)
        for file_name, text in rendered().items():
            (args.write / file_name).write_text(text, encoding="utf-8")
            print(args.write / file_name)
        return 0
    outdated = stale(args.check)
    for file_name in outdated:
        print(f"{args.check / file_name}: stale; run --write {args.check}", file=sys.stderr)
    return 1 if outdated else 0


if __name__ == "__main__":
    raise SystemExit(main())
