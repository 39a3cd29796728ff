"""Safe publish fakes: an in-memory partition catalog, a crash injected at the n-th storage or
catalog call, and small path tables on disk with a staged step (no Spark)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from backfill_orchestrator.contracts.publish import (
    ChecksVerdict,
    ColumnChange,
    DataDiff,
    ManifestPartition,
    ManifestState,
    PartitionAction,
    PartitionChange,
    PartitionDiff,
    PartitionLedger,
    PartitionRecord,
    PublishManifest,
    PublishPolicy,
    RuleOutcome,
    RulesCheck,
    SchemaCheck,
    StepChecks,
    TableKind,
)
from backfill_orchestrator.publish import DataStore, PublishLayout
from backfill_orchestrator.publish.layout import manifest_partitions, partition_values

BACKFILL_A = "fix-orders-0000000a"
BACKFILL_B = "fix-orders-0000000b"


class InjectedCrash(BaseException):
    """A process dying at this line: not an Exception, so nothing on the way catches it."""


class CrashAfter:
    """Counts calls to the wrapped store or catalog and dies on call number `at` (1-based)."""

    def __init__(self, inner: Any, at: int | None) -> None:
        self._inner = inner
        self.at = at
        self.calls = 0
        self.kind = getattr(inner, "kind", None)

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if name not in ("move", "delete", "set_location", "add", "drop"):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.at is not None and self.calls == self.at:
                raise InjectedCrash(f"{name} #{self.calls}")
            return target(*args, **kwargs)

        return call


class MemoryCatalog:
    """backfill_orchestrator.publish.PartitionCatalog in a dict: table -> partition -> location."""

    def __init__(self, kind: TableKind = TableKind.HIVE) -> None:
        self.kind = kind
        self.tables: dict[str, dict[str, str]] = {}

    def location(self, table: str, partition: str) -> str | None:
        return self.tables.get(table, {}).get(partition)

    def locations(self, table: str, days: Sequence[str] | None) -> dict[str, str]:
        return {
            p: loc
            for p, loc in self.tables.get(table, {}).items()
            if days is None or dict(partition_values(p)).get("day") in days
        }

    def set_location(self, table: str, partition: str, location: str) -> None:
        if partition not in self.tables.get(table, {}):
            raise KeyError(partition)
        self.tables[table][partition] = location

    def add(self, table: str, partition: str, location: str) -> None:
        self.tables.setdefault(table, {})[partition] = location

    def drop(self, table: str, partition: str) -> None:
        self.tables.get(table, {}).pop(partition, None)


def write_partition(directory: Path, text: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "part-00000.txt").write_text(text)
    return str(directory)


def stage_on_disk(
    *,
    layout: PublishLayout,
    backfill_id: str,
    table_dir: Path,
    staged: dict[str, str],
    live: dict[str, str] | None = None,
    kind: TableKind = TableKind.PATH,
    step_id: str = "etl_orders",
    attempt: int = 1,
    catalog: MemoryCatalog | None = None,
) -> PublishManifest:
    """What stage_step leaves for a step: the staged partitions written (partition -> text), the
    live ones as they are (partition -> location; default: the path table's directories), and
    a `staged` manifest."""
    table_uri = str(table_dir)
    staging_uri = (
        layout.staging_uri(backfill_id, attempt, step_id)
        if kind is TableKind.PATH
        else layout.catalog_staging_uri(table_uri, backfill_id, attempt)
    )
    for partition, text in staged.items():
        write_partition(Path(staging_uri) / partition, text)
    if live is None:
        live = {
            "/".join(p.relative_to(table_dir).parts): str(p)
            for p in sorted(table_dir.glob("day=*/feed=*"))
            if p.is_dir()
        }
    if catalog is not None:
        live = catalog.locations("food_delivery.orders", None)
    now = datetime.now(UTC)
    manifest = PublishManifest(
        backfill_id=backfill_id,
        attempt=attempt,
        step_id=step_id,
        table="orders",
        table_kind=kind,
        catalog_table=None if kind is TableKind.PATH else "food_delivery.orders",
        table_uri=table_uri,
        partition_columns=["day", "feed"],
        staging_uri=staging_uri,
        state=ManifestState.STAGED,
        created_at=now,
        updated_at=now,
        partitions=[],
    )
    partitions = manifest_partitions(manifest, layout=layout, staged=dict.fromkeys(staged, 1), live=live)
    return manifest.model_copy(update={"partitions": partitions})


def read_partitions(
    store: DataStore, table_dir: Path, catalog: MemoryCatalog | None = None
) -> dict[str, str]:
    """What readers see: partition -> its file's text (through the catalog when given)."""
    if catalog is not None:
        return {
            p: (Path(loc) / "part-00000.txt").read_text()
            for p, loc in sorted(catalog.locations("food_delivery.orders", None).items())
        }
    return {
        "/".join(p.parent.relative_to(table_dir).parts): p.read_text()
        for p in sorted(table_dir.glob("day=*/feed=*/part-00000.txt"))
    }


# -- one document of each safe publish contract (tests/unit/test_contracts.py) -------------------
SAMPLE_TIME = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def sample_policy() -> PublishPolicy:
    return PublishPolicy(max_rows_removed_percent=10, allow_emptied_partitions=False)


def sample_step_checks() -> StepChecks:
    return StepChecks(
        backfill_id=BACKFILL_A,
        attempt=1,
        step_id="etl_orders",
        table="orders",
        checked_at=SAMPLE_TIME,
        schema_check=SchemaCheck(passed=True),
        rules=RulesCheck(
            ran=True,
            passed=True,
            grain=["day", "hour", "feed"],
            outcomes=[RuleOutcome(check="row_count", partitions_compared=72, mismatched=0)],
        ),
        diff=DataDiff(
            key_columns=["order_id"],
            partitions=72,
            partitions_changed=1,
            partitions_same=71,
            rows_before=140,
            rows_after=139,
            keys_added=0,
            keys_removed=1,
            columns=[ColumnChange(column="quantity", sum_before=300, sum_after=298)],
            top=[
                PartitionDiff(
                    partition="day=2021-05-05/hour=3/feed=web",
                    change=PartitionChange.CHANGED,
                    rows_before=2,
                    rows_after=1,
                    keys_added=0,
                    keys_removed=1,
                    examples_removed=["web-20210505-03-00001"],
                )
            ],
        ),
        policy=sample_policy(),
        verdict=ChecksVerdict.HOLD,
        reasons=["day=2021-05-05/hour=3/feed=web: 50.0% of rows removed (2 -> 1; policy max 10%)"],
    )


def sample_manifest() -> PublishManifest:
    return PublishManifest(
        backfill_id=BACKFILL_A,
        attempt=1,
        step_id="etl_orders",
        table="orders",
        table_kind=TableKind.GLUE,
        catalog_table="food_delivery.orders",
        table_uri="s3://lake/processed/orders",
        partition_columns=["day", "hour", "feed"],
        staging_uri=f"s3://lake/processed/orders/_backfill/{BACKFILL_A}/a1",
        checks_uri=f"s3://lake/_backfill/checks/{BACKFILL_A}/a1/etl_orders.json",
        state=ManifestState.PUBLISHED,
        created_at=SAMPLE_TIME,
        published_at=SAMPLE_TIME,
        published_by="auto",
        backups_expire_at=SAMPLE_TIME + timedelta(days=30),
        updated_at=SAMPLE_TIME,
        partitions=[
            ManifestPartition(
                partition="day=2021-05-05/hour=3/feed=web",
                action=PartitionAction.REPLACE,
                live_location="s3://lake/processed/orders/day=2021-05-05/hour=3/feed=web",
                staged_location=f"s3://lake/processed/orders/_backfill/{BACKFILL_A}/a1/day=2021-05-05/hour=3/feed=web",
                backup_location="s3://lake/processed/orders/day=2021-05-05/hour=3/feed=web",
                rows=2,
            )
        ],
    )


def sample_ledger() -> PartitionLedger:
    record = PartitionRecord(
        backfill_id=BACKFILL_B,
        attempt=1,
        step_id="etl_orders",
        action=PartitionAction.REPLACE,
        location="/w/processed/orders/day=2021-05-05/hour=3/feed=web",
        previous_location=f"/w/_backfill/backups/{BACKFILL_B}/a1/etl_orders/day=2021-05-05/hour=3/feed=web",
        published_at=SAMPLE_TIME,
        published_by="@jane",
    )
    return PartitionLedger(
        table="orders",
        day="2021-05-05",
        latest={"day=2021-05-05/hour=3/feed=web": record},
        replaced={"day=2021-05-05/hour=3/feed=web": record.model_copy(update={"backfill_id": BACKFILL_A})},
    )


def register_glue_tables(
    glue: Any, *, warehouse: str, tables: Sequence[Any], database: str = "food_delivery"
) -> None:
    """The pipeline's tables in (moto's) Glue, each partition at its directory, as a crawler
    or the pipeline's own registration would leave them."""
    from pyspark.sql.types import DateType, IntegerType, LongType

    glue_types = {DateType: "date", IntegerType: "int", LongType: "bigint"}
    glue.create_database(DatabaseInput={"Name": database})
    for table in tables:
        data = [f for f in table.schema.fields if f.name not in table.partition_columns]
        keys = [f for f in table.schema.fields if f.name in table.partition_columns]
        storage = {
            "Columns": [{"Name": f.name, "Type": glue_types.get(type(f.dataType), "string")} for f in data],
            "Location": table.uri(warehouse),
        }
        glue.create_table(
            DatabaseName=database,
            TableInput={
                "Name": table.name,
                "StorageDescriptor": storage,
                "PartitionKeys": [
                    {"Name": f.name, "Type": glue_types.get(type(f.dataType), "string")} for f in keys
                ],
            },
        )
        root = Path(table.uri(warehouse))
        pattern = "/".join(f"{column}=*" for column in table.partition_columns)
        inputs = [
            {
                "Values": [segment.split("=", 1)[1] for segment in p.relative_to(root).parts],
                "StorageDescriptor": {**storage, "Location": str(p)},
            }
            for p in sorted(root.glob(pattern))
        ]
        for start in range(0, len(inputs), 100):
            glue.batch_create_partition(
                DatabaseName=database, TableName=table.name, PartitionInputList=inputs[start : start + 100]
            )


# -- a backfill whose Spark step the DAG held for publish (tests/integration/test_publish_lifecycle.py)
LIVE_ROWS = {"day=2021-06-04/feed=app": "app live\n", "day=2021-06-04/feed=web": "web live\n"}
STAGED_ROWS = {"day=2021-06-04/feed=app": "app fixed\n", "day=2021-06-04/feed=web": "web fixed\n"}


def hold_on_disk(
    *,
    backfill_id: str,
    attempt: int,
    plan: Any,
    plan_uri: str,
    warehouse: Path,
    store: Any,
    notifier: Any,
    result_uri: str | None,
    step_id: str = "etl_orders",
) -> Path:
    """What one attempt of the DAG leaves when the publish policy holds `step_id`: the path table
    `processed/orders` live, the step staged under the warehouse's publish root with its
    manifest and checks, the round's run report and the backfill report (the step held, its
    dependants blocked), and the DAG's own `finish` reporting (Reporting.finished): the record
    AWAITING_PUBLISH, the Slack message, the result file. Returns the table's directory."""
    from backfill_runtime.reporting import Reporting

    from backfill_orchestrator import documents
    from backfill_orchestrator.contracts import BackfillReport, RunReport, StepOutcome, StepResult, StepStatus
    from backfill_orchestrator.publish import FileDataStore, Publisher, default_root

    root = default_root(str(warehouse))
    layout = PublishLayout(root)
    table_dir = warehouse / "processed" / "orders"
    if not table_dir.exists():
        for partition, text in LIVE_ROWS.items():
            write_partition(table_dir / partition, text)
    manifest = stage_on_disk(
        layout=layout,
        backfill_id=backfill_id,
        table_dir=table_dir,
        staged=STAGED_ROWS,
        step_id=step_id,
        attempt=attempt,
    )
    checks_uri = layout.checks_uri(backfill_id, attempt, step_id)
    checks = sample_step_checks().model_copy(
        update={"backfill_id": backfill_id, "attempt": attempt, "step_id": step_id}
    )
    documents.write_bytes(checks_uri, checks.to_json().encode())
    Publisher(layout=layout, store=FileDataStore()).write_manifest(
        manifest.model_copy(update={"checks_uri": checks_uri})
    )
    run_report_uri = documents.sibling(plan_uri, "rounds/0/run_report.json")
    now = datetime.now(UTC)
    held = StepResult(
        id=step_id,
        transform=step_id,
        wave=0,
        status=StepStatus.AWAITING_PUBLISH,
        seconds=1.0,
        checks_uri=checks_uri,
        manifest_uri=layout.manifest_uri(backfill_id, attempt, step_id),
        hold_reasons=checks.reasons,
    )
    run_report = RunReport(
        backfill_id=backfill_id,
        plan=plan_uri,
        warehouse=str(warehouse),
        application_id="local-1",
        started_at=now,
        finished_at=now,
        seconds=1.0,
        steps=[held],
    )
    documents.write_bytes(run_report_uri, run_report.to_json().encode())
    steps = {
        step.id: StepOutcome(
            status=StepStatus.AWAITING_PUBLISH if step.id == step_id else StepStatus.BLOCKED,
            kind=step.kind,
            round=0,
            dag_id=step.dag_id,
            detail=None if step.id == step_id else f"waits for the publish of {step_id}",
        )
        for step in plan.steps
    }
    report = BackfillReport.build(
        backfill_id=backfill_id,
        dag_run_id=backfill_id,
        steps=steps,
        spark_reports=[run_report_uri],
        written_at=now,
    )
    report_uri = documents.sibling(plan_uri, "backfill_report.json")
    documents.write_bytes(report_uri, report.to_json().encode())
    Reporting(store=store, notifier=notifier, airflow_ui_url=None).finished(
        config=None,
        report=report,
        report_uri=report_uri,
        run_url=None,
        result_uri=result_uri,
        publish_location={"root": root, "warehouse": str(warehouse)},
    )
    return table_dir
