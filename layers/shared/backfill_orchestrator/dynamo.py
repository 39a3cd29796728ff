"""Plain Python <-> DynamoDB attribute values, for the low-level client (status, replay ledger).

boto3's serializers refuse floats and return Decimals and sets; these wrappers make both
directions plain so records round-trip as ordinary dicts."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, TypeGuard

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _to_dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _to_dynamo(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_dynamo(v) for v in value]
    return value


def plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal and sets as set: make them plain."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, set):
        return frozenset(plain(v) for v in value)
    return value


def attribute(value: Any) -> dict[str, Any]:
    """One plain value as a DynamoDB attribute value (`{"S": ...}`, `{"N": ...}`, ...)."""
    return dict(_serializer.serialize(_to_dynamo(value)))


def item_from_plain(data: dict[str, Any]) -> dict[str, Any]:
    """A plain dict as a DynamoDB item; None values are left out."""
    return {key: attribute(value) for key, value in data.items() if value is not None}


def plain_from_item(item: dict[str, Any]) -> dict[str, Any]:
    return {key: plain(_deserializer.deserialize(value)) for key, value in item.items()}


def condition_failed(error: BaseException) -> TypeGuard[ClientError]:
    """The write's ConditionExpression was false: someone else's write came first."""
    return (
        isinstance(error, ClientError)
        and error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
    )
