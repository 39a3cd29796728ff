"""The published JSON Schema of config v1.

Pydantic derives the shapes; the rules it cannot express from our validators (patterns,
uniqueness, the mode-dependent keys) are added here so that editors and other languages
see the same contract. The schema cannot know today's date or the 400-day union limit:
the validator (`backfill validate`) stays the authority."""

from __future__ import annotations

from typing import Any

from backfill_orchestrator.config.model import (
    _EMAIL,
    _SLACK_CHANNEL,
    _SLACK_HANDLE,
    FEED_PATTERN,
    NAME_PATTERN,
    TARGET_PATTERN,
    BackfillConfig,
)

SCHEMA_ID = "https://backfill-orchestrator.example/schemas/backfill-config-v1.json"


def _array(schema: dict[str, Any]) -> dict[str, Any]:
    """The array branch of an optional (`anyOf [array, null]`) or required list property."""
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "array":
            return branch
    raise KeyError("no array branch")


def config_json_schema() -> dict[str, Any]:
    schema = BackfillConfig.model_json_schema(mode="validation")
    props = schema["properties"]
    defs = schema["$defs"]
    props["version"] = {"const": 1, "title": "Version", "description": "Only 1 is accepted"}
    props["name"]["pattern"] = NAME_PATTERN
    props["owner"]["pattern"] = f"({_EMAIL.pattern})|({_SLACK_HANDLE.pattern})"
    for key in ("hours", "feeds", "jobs"):
        _array(props[key])["uniqueItems"] = True
    _array(props["feeds"])["items"]["pattern"] = FEED_PATTERN
    defs["Downstream"]["properties"]["exclude"]["uniqueItems"] = True
    defs["Replay"]["properties"]["target"]["pattern"] = TARGET_PATTERN
    defs["Notify"]["properties"]["slack_channel"]["anyOf"][0]["pattern"] = _SLACK_CHANNEL.pattern
    for field in ("namespace", "name"):
        defs["JobRef"]["properties"][field]["pattern"] = r"^\S(.*\S)?$"
    schema["allOf"] = [
        {
            "if": {"properties": {"mode": {"const": "batch"}}, "required": ["mode"]},
            "then": {"required": ["jobs"], "not": {"required": ["replay"]}},
        },
        {
            "if": {"properties": {"mode": {"const": "replay"}}, "required": ["mode"]},
            "then": {
                "required": ["feeds", "replay"],
                "allOf": [{"not": {"required": [key]}} for key in ("jobs", "downstream", "spark")],
            },
        },
    ]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "Backfill config, version 1",
    }
