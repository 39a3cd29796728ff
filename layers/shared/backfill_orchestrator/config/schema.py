"""The published JSON Schema of config v1."""

from __future__ import annotations

from typing import Any

from backfill_orchestrator.config.model import BackfillConfig

SCHEMA_ID = "https://backfill-orchestrator.example/schemas/backfill-config-v1.json"


def config_json_schema() -> dict[str, Any]:
    schema = BackfillConfig.model_json_schema(mode="validation")
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
    schema["title"] = "Backfill config, version 1"
    return schema
