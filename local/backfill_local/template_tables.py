"""The template's DynamoDB tables (keys, attributes, indexes) created against a local endpoint,
so the demo's (and the tests', through tests/aws_resources.py) tables are the deployment's: `backfill list` queries the status table's
indexes, the overlap protection uses the claims table."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation's short-form tags (!Ref, !Sub, ...) as plain values."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return {suffix: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {suffix: loader.construct_sequence(node, deep=True)}
    return {suffix: loader.construct_mapping(node, deep=True)}


_CfnLoader.add_multi_constructor("!", _tag)


@cache
def template() -> dict[str, Any]:
    return yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)  # noqa: S506 - a SafeLoader subclass


def create_table(dynamodb_client: Any, logical_id: str, *, table_name: str) -> str:
    """Create the template's DynamoDB table `logical_id` (keys, attributes, indexes) as `table_name`."""
    dynamodb_client.create_table(**table_definition(logical_id, table_name=table_name))
    return table_name


def table_definition(logical_id: str, *, table_name: str) -> dict[str, Any]:
    """`create_table` arguments for the template's table `logical_id` (on-demand billing)."""
    properties = template()["Resources"][logical_id]["Properties"]
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "AttributeDefinitions": properties["AttributeDefinitions"],
        "KeySchema": properties["KeySchema"],
        "BillingMode": "PAY_PER_REQUEST",
    }
    if properties.get("GlobalSecondaryIndexes"):
        kwargs["GlobalSecondaryIndexes"] = properties["GlobalSecondaryIndexes"]
    return kwargs
