"""Field types several contracts share, each with a message that says what was expected."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from backfill_orchestrator.config.model import NAME_PATTERN

# `<config name>-<8 hex>`, as backfill_orchestrator.config.identity makes it.
BACKFILL_ID_PATTERN = NAME_PATTERN[:-1] + r"-[0-9a-f]{8}$"
_BACKFILL_ID = re.compile(BACKFILL_ID_PATTERN)
URI_SCHEMES = ("s3://", "file://", "/")


def _backfill_id(value: str) -> str:
    if not _BACKFILL_ID.fullmatch(value):
        raise ValueError(f"expected <name>-<8 hex digits>, got {value!r}")
    return value


def _document_uri(value: str) -> str:
    if not value.strip():
        raise ValueError("expected a non-empty URI")
    if not value.startswith(URI_SCHEMES):
        raise ValueError(f"expected an s3://, file:// or absolute path URI, got {value!r}")
    return value


def is_backfill_id(value: object) -> bool:
    return isinstance(value, str) and _BACKFILL_ID.fullmatch(value) is not None


BackfillId = Annotated[
    str, AfterValidator(_backfill_id), Field(json_schema_extra={"pattern": BACKFILL_ID_PATTERN})
]
DocumentUri = Annotated[
    str,
    AfterValidator(_document_uri),
    Field(json_schema_extra={"pattern": r"^(s3://|file://|/)"}, max_length=2048),
]
