"""The policy document's JSON Schema, generated from the model (docs/schemas/policy.schema.json).

    python -m backfill_orchestrator.policy.schema > docs/schemas/policy.schema.json

A test fails when the committed file is stale. The validator stays the authority (the schema
cannot check that grants name known people)."""

from __future__ import annotations

import json
from typing import Any

from backfill_orchestrator.policy.model import (
    JOB_GLOB_PATTERN,
    NAME_PATTERN,
    SLACK_GROUP_PATTERN,
    SLACK_USER_PATTERN,
    Policy,
)

SCHEMA_ID = "https://backfill-orchestrator.example/schemas/policy-v1.json"


def policy_json_schema() -> dict[str, Any]:
    schema = Policy.model_json_schema(mode="validation")
    defs = schema["$defs"]
    schema["properties"]["people"]["propertyNames"] = {"pattern": NAME_PATTERN}
    defs["Person"]["properties"]["slack_user"]["anyOf"][0]["pattern"] = SLACK_USER_PATTERN
    grant = defs["Grant"]["properties"]
    grant["name"]["pattern"] = NAME_PATTERN
    grant["members"]["items"]["pattern"] = NAME_PATTERN
    grant["slack_users"]["items"]["pattern"] = SLACK_USER_PATTERN
    grant["slack_groups"]["items"]["pattern"] = SLACK_GROUP_PATTERN
    grant["jobs"]["items"]["pattern"] = JOB_GLOB_PATTERN
    grant["permissions"]["uniqueItems"] = True
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "Backfill deployment policy, version 1",
    }


def render() -> str:
    return json.dumps(policy_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(render(), end="")
