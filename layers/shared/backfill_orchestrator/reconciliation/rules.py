"""Reconciliation rules (YAML or JSON, a file or an S3 object, beside the job catalog):
per table, the upstream layer it is recomputed from, the grain it is compared at, the measures
compared and their tolerance.

    version: 1
    tables:
      - table: orders               # a table a registered transform writes
        upstream: [raw_orders]      # the tables its transform reads (checked against the registry)
        grain: [day, hour, feed]    # compared per partition of these columns (day always)
        checks:
          - measure: row_count
          - {measure: distinct_keys, columns: [order_id]}
          - {measure: sum, column: quantity, tolerance: {relative: 0.001}}
          - {measure: checksum, columns: [order_id, placed_on, comment]}

Only the document's shape is checked here (no Spark needed); whether the tables and columns
exist is checked against the transforms' registry by the reconciliation job, with the same
located issues."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, model_validator

from backfill_orchestrator import documents
from backfill_orchestrator.errors import ConfigIssue, LocatedIssuesError, ServiceError, UserError
from backfill_orchestrator.parsing import DocumentKind

MAX_RULES_BYTES = 1024 * 1024
MAX_TABLES = 500
MAX_CHECKS = 20
GRAIN_COLUMNS = ("day", "hour", "feed")
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
Measure = Literal["row_count", "distinct_keys", "sum", "checksum"]


class InvalidRulesError(LocatedIssuesError, UserError, ValueError):
    """Rules that are not valid; carries every located issue (`tables[1].checks[0].column: ...`)."""

    document = "reconciliation rules"


class RulesUnavailableError(ServiceError):
    """The rules document could not be read (no such file or object, no permission)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tolerance(_Strict):
    """A difference is tolerated when |actual - expected| <= max(absolute, relative * |expected|)."""

    absolute: Annotated[StrictInt | StrictFloat, Field(ge=0)] = 0
    relative: Annotated[StrictInt | StrictFloat, Field(ge=0, le=1)] = 0

    def allows(self, *, expected: float, actual: float) -> bool:
        return abs(actual - expected) <= max(self.absolute, self.relative * abs(expected))


class Check(_Strict):
    measure: Measure
    column: Name | None = Field(default=None, description="sum: the measure column")
    columns: Annotated[list[Name], Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="distinct_keys: the key; checksum: the columns hashed"
    )
    tolerance: Tolerance = Field(default_factory=Tolerance)

    @model_validator(mode="after")
    def _arguments_fit_the_measure(self) -> Check:
        if self.measure == "sum" and (self.column is None or self.columns is not None):
            raise ValueError("sum takes `column` (and no `columns`)")
        if self.measure in ("distinct_keys", "checksum") and (
            self.columns is None or self.column is not None
        ):
            raise ValueError(f"{self.measure} takes `columns` (and no `column`)")
        if self.measure == "row_count" and (self.column is not None or self.columns is not None):
            raise ValueError("row_count takes neither `column` nor `columns`")
        return self

    @property
    def label(self) -> str:
        """`row_count`, `sum(quantity)`, `distinct_keys(order_id)`: unique within a table's checks."""
        if self.column:
            return f"{self.measure}({self.column})"
        if self.columns:
            return f"{self.measure}({','.join(self.columns)})"
        return self.measure

    @property
    def referenced_columns(self) -> list[str]:
        return [self.column] if self.column else list(self.columns or ())


class TableRules(_Strict):
    table: Name
    upstream: Annotated[list[Name], Field(min_length=1, max_length=64)]
    grain: Annotated[list[Literal["day", "hour", "feed"]], Field(min_length=1, max_length=3)]
    checks: Annotated[list[Check], Field(min_length=1, max_length=MAX_CHECKS)]

    @model_validator(mode="after")
    def _grain_and_checks(self) -> TableRules:
        if "day" not in self.grain:
            raise ValueError("grain must include day (reconciliation checks a window of days)")
        if len(set(self.grain)) != len(self.grain):
            raise ValueError("grain lists a column twice")
        labels = [check.label for check in self.checks]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"checks repeat {', '.join(duplicates)}")
        return self

    @property
    def grain_columns(self) -> list[str]:
        """The grain in partition order (day, hour, feed), whatever order the file uses."""
        return [column for column in GRAIN_COLUMNS if column in self.grain]


class ReconciliationRules(_Strict):
    version: Literal[1]
    tables: Annotated[list[TableRules], Field(min_length=1, max_length=MAX_TABLES)]

    def for_table(self, name: str) -> TableRules | None:
        return next((rules for rules in self.tables if rules.table == name), None)


def _duplicate_tables(rules: ReconciliationRules) -> list[ConfigIssue]:
    first: dict[str, int] = {}
    issues = []
    for index, table in enumerate(rules.tables):
        if table.table in first:
            issues.append(
                ConfigIssue(
                    f"tables[{index}].table", f"duplicate of tables[{first[table.table]}] ({table.table})"
                )
            )
        first.setdefault(table.table, index)
    return issues


RULES_DOCUMENT = DocumentKind(
    ReconciliationRules, error=InvalidRulesError, max_bytes=MAX_RULES_BYTES, model_checks=_duplicate_tables
)


def parse_rules(data: bytes | str | dict[str, Any], *, source: str | None = None) -> ReconciliationRules:
    """YAML/JSON text or a parsed mapping to rules; raises InvalidRulesError with every issue."""
    return RULES_DOCUMENT.parse(data, source=source)


def load_rules(location: str, *, s3_client: Any = None) -> ReconciliationRules:
    """A path or an `s3://bucket/key` URI. Raises RulesUnavailableError or InvalidRulesError."""
    try:
        data = documents.read_bytes(
            location, max_bytes=MAX_RULES_BYTES, over_limit="keep", s3_client=s3_client
        )
    except documents.DocumentError as error:
        raise RulesUnavailableError(str(error)) from None
    return parse_rules(data, source=location)


SCHEMA_ID = "https://backfill-orchestrator.example/schemas/reconciliation-v1.json"


def rules_json_schema() -> dict[str, Any]:
    """The published JSON Schema of the rules (docs/schemas/reconciliation.schema.json). The
    per-measure arguments and the registry checks stay the validator's: it is the authority."""
    schema = ReconciliationRules.model_json_schema(mode="validation")
    schema["properties"]["version"] = {"const": 1, "title": "Version", "description": "Only 1 is accepted"}
    schema["$defs"]["TableRules"]["properties"]["grain"]["contains"] = {"const": "day"}
    schema["$defs"]["TableRules"]["properties"]["grain"]["uniqueItems"] = True
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
