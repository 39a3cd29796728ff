"""Safe publish without Spark: the operations on a step's staged partitions (publish, rollback,
discard, undo, recover, sweep), the partition ledger, and where everything lives. Glue and
path-only tables need no Spark; a Hive metastore table needs the Spark job's HiveCatalog.

    publisher = Publisher(layout=PublishLayout(root), store=FileDataStore(), catalogs={TableKind.GLUE: GlueCatalog()})
    publisher.publish(publisher.load_manifest(backfill_id, attempt, step_id), by="@jane")
    publisher.undo(backfill_id, by="@jane")

docs/spark.md, "Safe publish", says what each guarantees."""

from backfill_orchestrator.publish.catalogs import GlueCatalog, PartitionCatalog
from backfill_orchestrator.publish.errors import (
    BackupsExpiredError,
    ChecksFailedError,
    PartitionChangedError,
    PartitionRepublishedError,
    PublishCatalogError,
    PublishError,
    PublishStateError,
    PublishStorageError,
    UnknownStagedAttemptError,
)
from backfill_orchestrator.publish.layout import PublishLayout, default_root
from backfill_orchestrator.publish.operations import DEFAULT_RETENTION, Publisher, Side, SweepResult
from backfill_orchestrator.publish.storage import DataStore, FileDataStore

__all__ = [
    "DEFAULT_RETENTION",
    "BackupsExpiredError",
    "PublishCatalogError",
    "ChecksFailedError",
    "DataStore",
    "FileDataStore",
    "GlueCatalog",
    "PartitionCatalog",
    "PartitionChangedError",
    "PartitionRepublishedError",
    "PublishError",
    "PublishLayout",
    "PublishStateError",
    "Publisher",
    "Side",
    "PublishStorageError",
    "SweepResult",
    "UnknownStagedAttemptError",
    "default_root",
]
