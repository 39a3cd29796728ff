"""Safe publish: what a Spark step staged, what its checks found, what the policy allows, and
the record of each partition it published (docs/spark.md, "Safe publish").

| document | model | written by | read by |
| --- | --- | --- | --- |
| publish policy | `PublishPolicy` | the deployment's policy (a config may narrow it) | Spark job |
| step checks | `StepChecks` | Spark job, per staged step | people, status pages, the DAG |
| publish manifest | `PublishManifest` | Spark job (staged), `publish`/`discard`/`undo` | the same operations |
| partition ledger | `PartitionLedger` | `publish` and `undo`, one per table and day | `undo` (who published last) |

A step stages the partitions it rewrites in a new location per (backfill, attempt, step); its
checks compare the staged partitions with the live ones; the manifest lists each partition's
live location before, its staged location and its backup, so `publish`, `discard` and `undo`
(backfill_orchestrator.publish) can be resumed from it after a crash at any point."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, model_validator

from backfill_orchestrator._compat import StrEnum
from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.fields import BackfillId

MAX_TOP_PARTITIONS = 20  # the diff lists the partitions that changed most; totals stay exact
MAX_EXAMPLE_KEYS = 5  # per partition: keys added and removed, as examples
MAX_PROBLEMS = 50  # schema problems, rule mismatches, hold reasons: each list is cut there
MAX_MANIFEST_PARTITIONS = 100_000
Percent = Annotated[float, Field(ge=0, le=100)]


class TableKind(StrEnum):
    """How a table's partitions are found, and so how one is swapped."""

    HIVE = "hive"  # a Hive metastore table (local Spark's, or EMR's with Glue as its metastore): ALTER TABLE
    GLUE = "glue"  # an AWS Glue Data Catalog table, through the Glue API (no Spark needed)
    PATH = "path"  # no catalog: the partition is the directory `<table>/day=.../feed=...`


class PartitionAction(StrEnum):
    REPLACE = "replace"  # live before, rows after
    CREATE = "create"  # no live partition before
    DELETE = "delete"  # live before, no rows after (in scope): the partition goes


class ManifestState(StrEnum):
    """One step's staged partitions, from staging to their end. `publishing` and `undoing` are
    the states a crash can leave; `publish` (or `rollback`) and `undo` finish them."""

    STAGING = "staging"  # being written (a manifest left so: its job died; discard cleans it)
    STAGED = "staged"  # written and checked; live untouched
    PUBLISHING = "publishing"  # swaps under way: each partition is old or new
    PUBLISHED = "published"  # every partition swapped; backups kept until backups_expire_at
    DISCARDED = "discarded"  # staged data removed; live untouched
    UNDOING = "undoing"  # restores under way: each partition is new or old
    UNDONE = "undone"  # every partition is back to what it was before the publish
    EXPIRED = "expired"  # published, and the backups are gone: it can no longer be undone

    @property
    def final(self) -> bool:
        return self in (ManifestState.DISCARDED, ManifestState.UNDONE, ManifestState.EXPIRED)


class PublishPolicy(
    Contract, document_name="publish policy", version_field="policy_version", max_bytes=64 * 1024
):
    """When a step is published in the same application right after its checks, and when it
    waits (the step's status is then `awaiting_publish`, its dependants do not run).

    The defaults publish every step whose schema and rules pass, whatever its diff; a policy
    document sets the thresholds a deployment wants."""

    policy_version: Literal[1] = 1
    auto_publish: bool = Field(default=True, description="false: every step waits for a publish")
    require_rules: bool = Field(
        default=True, description="A step whose table's reconciliation rules fail waits"
    )
    max_rows_removed_percent: Percent | None = Field(
        default=None,
        description="Per partition that existed: rows lost as % of rows before; more waits (null: any)",
    )
    max_rows_changed_percent: Percent | None = Field(
        default=None,
        description="Over the step: |rows after - rows before| as % of rows before; more waits (null: any)",
    )
    allow_emptied_partitions: bool = Field(
        default=True, description="false: a step that would delete a live partition waits"
    )
    allow_new_partitions: bool = Field(
        default=True, description="false: a step that would create a partition waits"
    )

    def within(self, other: PublishPolicy) -> list[str]:
        """What in `self` (a config's override) is looser than `other` (the deployment's policy);
        empty when `self` only narrows it."""
        looser = []
        if self.auto_publish and not other.auto_publish:
            looser.append("auto_publish")
        if other.require_rules and not self.require_rules:
            looser.append("require_rules")
        for name in ("max_rows_removed_percent", "max_rows_changed_percent"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None and (mine is None or mine > theirs):
                looser.append(name)
        for name in ("allow_emptied_partitions", "allow_new_partitions"):
            if getattr(self, name) and not getattr(other, name):
                looser.append(name)
        return looser


# -- checks ------------------------------------------------------------------------------------
class SchemaCheck(Contract):
    passed: bool
    problems: list[str] = Field(
        default_factory=list, max_length=MAX_PROBLEMS, description="`column quantity: int, live has bigint`"
    )


class RuleOutcome(Contract):
    check: str = Field(description="The rule's label: `row_count`, `sum(quantity)`, ...")
    partitions_compared: int = Field(ge=0)
    mismatched: int = Field(ge=0)
    examples: list[str] = Field(
        default_factory=list, max_length=MAX_EXAMPLE_KEYS, description="`day=...: expected 10, staged 9`"
    )


class RulesCheck(Contract):
    """The table's reconciliation rules, the staged partitions against their upstream: the
    measures of what the transform computed from the inputs against those of the staged files."""

    ran: bool = Field(description="false: the table has no rules (passed is then true)")
    passed: bool
    grain: list[str] = Field(default_factory=list)
    outcomes: list[RuleOutcome] = Field(default_factory=list, max_length=64)


class ColumnChange(Contract):
    column: str
    sum_before: float | None = Field(default=None, description="Numeric columns only")
    sum_after: float | None = None
    nulls_before: int = Field(default=0, ge=0)
    nulls_after: int = Field(default=0, ge=0)


class PartitionChange(StrEnum):
    NEW = "new"  # appears for the first time
    EMPTIED = "emptied"  # has rows now, none after
    CHANGED = "changed"
    SAME = "same"  # same rows, keys, sums and null counts


class PartitionDiff(Contract):
    partition: str = Field(description="`day=2021-06-04/hour=3/feed=web`")
    change: PartitionChange
    rows_before: int = Field(ge=0)
    rows_after: int = Field(ge=0)
    keys_added: int | None = Field(default=None, ge=0, description="null: the table declares no key")
    keys_removed: int | None = Field(default=None, ge=0)
    examples_added: list[str] = Field(default_factory=list, max_length=MAX_EXAMPLE_KEYS)
    examples_removed: list[str] = Field(default_factory=list, max_length=MAX_EXAMPLE_KEYS)
    columns: list[ColumnChange] = Field(
        default_factory=list, description="Only the columns whose sum or null count changed"
    )


class DataDiff(Contract):
    """Staged partitions against the live ones, bounded: totals over every partition, and the
    `MAX_TOP_PARTITIONS` partitions whose row count changed most."""

    key_columns: list[str] = Field(default_factory=list)
    partitions: int = Field(ge=0, description="Partitions in the step's scope, live or staged")
    partitions_new: int = Field(default=0, ge=0)
    partitions_emptied: int = Field(default=0, ge=0)
    partitions_changed: int = Field(default=0, ge=0)
    partitions_same: int = Field(default=0, ge=0)
    rows_before: int = Field(ge=0)
    rows_after: int = Field(ge=0)
    keys_added: int | None = Field(default=None, ge=0)
    keys_removed: int | None = Field(default=None, ge=0)
    columns: list[ColumnChange] = Field(
        default_factory=list, description="Totals over the scope, only the columns that changed"
    )
    top: list[PartitionDiff] = Field(default_factory=list, max_length=MAX_TOP_PARTITIONS)

    @property
    def rows_changed_percent(self) -> float:
        if self.rows_before == 0:
            return 0.0 if self.rows_after == 0 else 100.0
        return abs(self.rows_after - self.rows_before) * 100.0 / self.rows_before


class ChecksVerdict(StrEnum):
    PUBLISH = "publish"  # every check passed and the diff is inside the policy: published at once
    HOLD = "hold"  # a threshold or a policy says wait: a person publishes or discards
    FAILED = "failed"  # the schema or the rules failed: never published as is


class StepChecks(
    Contract, document_name="step checks", version_field="checks_version", max_bytes=1024 * 1024
):
    checks_version: Literal[1] = 1
    backfill_id: BackfillId
    attempt: int = Field(ge=1)
    step_id: str
    table: str
    checked_at: datetime
    schema_check: SchemaCheck
    rules: RulesCheck
    diff: DataDiff
    policy: PublishPolicy
    verdict: ChecksVerdict
    reasons: list[str] = Field(
        default_factory=list,
        max_length=MAX_PROBLEMS,
        description="Why it is held or failed, each naming where: `day=2021-06-04/feed=web: 100% of rows removed`",
    )

    @property
    def passed(self) -> bool:
        return self.verdict is ChecksVerdict.PUBLISH


# -- a held step, as people see it ----------------------------------------------------------------
MAX_HELD_TOP = 5  # partitions shown per held step: the top of the diff
MAX_HELD_STEPS = 10  # held steps listed on the record, the result file and in Slack (the rest counted)


class HeldPartition(Contract):
    partition: str
    change: PartitionChange
    rows_before: int = Field(ge=0)
    rows_after: int = Field(ge=0)
    keys_removed: int | None = Field(default=None, ge=0)


class HeldStep(Contract):
    """A step staged and held by the publish policy: why, and a bounded summary of its diff
    (the status record's `publish.held`, the result file's `held_steps`, the Slack message)."""

    step: str
    attempt: int = Field(ge=1)
    table: str
    reasons: list[str] = Field(default_factory=list, max_length=MAX_HELD_TOP)
    partitions: int = Field(ge=0)
    partitions_emptied: int = Field(default=0, ge=0)
    partitions_new: int = Field(default=0, ge=0)
    rows_before: int = Field(ge=0)
    rows_after: int = Field(ge=0)
    keys_removed: int | None = Field(default=None, ge=0)
    top: list[HeldPartition] = Field(default_factory=list, max_length=MAX_HELD_TOP)
    checks_uri: str | None = None

    @classmethod
    def of(cls, checks: StepChecks, *, checks_uri: str | None = None) -> HeldStep:
        return cls.taken_from(
            checks.diff,
            step=checks.step_id,
            attempt=checks.attempt,
            table=checks.table,
            reasons=[reason[:500] for reason in checks.reasons[:MAX_HELD_TOP]],
            top=[HeldPartition.taken_from(entry) for entry in checks.diff.top[:MAX_HELD_TOP]],
            checks_uri=checks_uri,
        )

    def text(self) -> str:
        """Two or more lines for people: what changes, why it waits, the top partitions."""
        keys = f", {self.keys_removed} keys removed" if self.keys_removed else ""
        lines = [
            f"{self.step} ({self.table}): rows {self.rows_before} before, {self.rows_after} after{keys}, over "
            f"{self.partitions} partitions ({self.partitions_emptied} emptied, {self.partitions_new} new)",
            *(f"  held: {reason}" for reason in self.reasons),
            *(
                f"  {p.partition}: {p.change}, rows {p.rows_before} before, {p.rows_after} after"
                + (f", {p.keys_removed} keys removed" if p.keys_removed else "")
                for p in self.top
            ),
        ]
        return "\n".join(lines)


# -- the manifest --------------------------------------------------------------------------------
class ManifestPartition(Contract):
    partition: str = Field(description="`day=2021-06-04/hour=3/feed=web`")
    action: PartitionAction
    live_location: str = Field(description="Where readers find it now (before the publish)")
    staged_location: str | None = Field(default=None, description="delete: none")
    backup_location: str | None = Field(
        default=None,
        description="Where the replaced partition is kept: path tables move it there; "
        "catalogued ones keep it where it was (the live location before)",
    )
    rows: int = Field(default=0, ge=0, description="Staged rows")


class PublishManifest(
    Contract, document_name="publish manifest", version_field="manifest_version", max_bytes=64 * 1024 * 1024
):
    """One step's staged partitions (one backfill, attempt and step) and how far their publish,
    discard or undo went."""

    manifest_version: Literal[1] = 1
    backfill_id: BackfillId
    attempt: int = Field(ge=1)
    step_id: str
    table: str = Field(description="The table's name in the pipeline (`orders`)")
    table_kind: TableKind
    catalog_table: str | None = Field(
        default=None, description="`database.table` in the catalog (hive, glue); null for path tables"
    )
    table_uri: str
    partition_columns: list[str]
    staging_uri: str = Field(description="Everything this step staged lies under it")
    checks_uri: str | None = None
    state: ManifestState
    created_at: datetime
    published_at: datetime | None = None
    published_by: str | None = Field(default=None, description="Who published: `auto` or a person's identity")
    backups_expire_at: datetime | None = Field(
        default=None, description="Set at publish: undo is refused after it"
    )
    undone_at: datetime | None = None
    undone_by: str | None = None
    updated_at: datetime
    partitions: list[ManifestPartition] = Field(max_length=MAX_MANIFEST_PARTITIONS)

    @model_validator(mode="after")
    def _consistent(self) -> PublishManifest:
        if self.table_kind is TableKind.PATH and self.catalog_table is not None:
            raise ValueError("a path table has no catalog_table")
        if self.table_kind is not TableKind.PATH and not self.catalog_table:
            raise ValueError(f"a {self.table_kind} table names its catalog_table (`database.table`)")
        seen: set[str] = set()
        for entry in self.partitions:
            if entry.partition in seen:
                raise ValueError(f"partition {entry.partition} is listed twice")
            seen.add(entry.partition)
            if (entry.action is PartitionAction.DELETE) != (entry.staged_location is None):
                raise ValueError(f"partition {entry.partition}: only a delete has no staged_location")
        if self.state in (ManifestState.PUBLISHED, ManifestState.UNDOING, ManifestState.UNDONE) and (
            self.published_at is None or self.backups_expire_at is None
        ):
            raise ValueError(f"a {self.state} manifest has published_at and backups_expire_at")
        return self

    @property
    def key(self) -> str:
        return f"{self.backfill_id}/a{self.attempt}/{self.step_id}"


# -- who published each partition --------------------------------------------------------------
class PartitionRecord(Contract):
    backfill_id: BackfillId
    attempt: int = Field(ge=1)
    step_id: str
    action: PartitionAction
    location: str | None = Field(description="Where it lives after the publish; null: deleted")
    previous_location: str | None = Field(description="Where it lived before; null: it was created")
    published_at: datetime
    published_by: str


class PartitionLedger(
    Contract, document_name="partition ledger", version_field="ledger_version", max_bytes=16 * 1024 * 1024
):
    """Per table and day: the backfill that last published each partition, and the record it
    replaced (one level: enough for undo to put the earlier publisher back)."""

    ledger_version: Literal[1] = 1
    table: str
    day: str
    latest: dict[str, PartitionRecord] = Field(default_factory=dict, description="partition -> last publish")
    replaced: dict[str, PartitionRecord] = Field(
        default_factory=dict, description="partition -> the publish `latest` replaced"
    )
