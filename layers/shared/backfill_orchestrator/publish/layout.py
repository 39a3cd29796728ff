"""Where safe publish keeps things, under one publish root (by default `<warehouse>/_backfill`):

    <root>/staging/<backfill>/a<attempt>/<step>/<partition>/   path tables: the staged partitions
    <root>/backups/<backfill>/a<attempt>/<step>/<partition>/   path tables: the partitions they replaced
    <root>/manifests/<backfill>/a<attempt>/<step>.json          PublishManifest
    <root>/checks/<backfill>/a<attempt>/<step>.json             StepChecks
    <root>/ledger/<table>/<day>.json                            PartitionLedger
    <table>/_backfill/<backfill>/a<attempt>/<partition>/        catalogued tables: the staged
                                                                 partitions, live once swapped in

Catalogued tables stage beside their own data because a swapped-in partition stays where it
was staged; the staging and backups prefixes hold nothing live, so storage lifecycle rules can
expire them (template.yaml's PublishBucket)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from backfill_orchestrator.contracts.publish import (
    ManifestPartition,
    PartitionAction,
    PublishManifest,
    TableKind,
)

CATALOG_VERSIONS = "_backfill"  # hidden from path readers: Spark and Hive skip `_` directories


def partition_values(partition: str) -> list[tuple[str, str]]:
    """`day=2021-06-04/hour=3/feed=web` -> [("day", "2021-06-04"), ("hour", "3"), ("feed", "web")]."""
    return [tuple(segment.split("=", 1)) for segment in partition.split("/")]  # type: ignore[misc]


def partition_day(partition: str) -> str:
    for column, value in partition_values(partition):
        if column == "day":
            return value
    return "all"


@dataclass(frozen=True)
class PublishLayout:
    root: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", self.root.rstrip("/"))

    def staging_uri(self, backfill_id: str, attempt: int, step_id: str) -> str:
        return f"{self.root}/staging/{backfill_id}/a{attempt}/{step_id}"

    def backup_uri(self, backfill_id: str, attempt: int, step_id: str, partition: str) -> str:
        return f"{self.root}/backups/{backfill_id}/a{attempt}/{step_id}/{partition}"

    def manifests_prefix(self, backfill_id: str | None = None) -> str:
        return f"{self.root}/manifests/" + (f"{backfill_id}/" if backfill_id else "")

    def manifest_uri(self, backfill_id: str, attempt: int, step_id: str) -> str:
        return f"{self.manifests_prefix(backfill_id)}a{attempt}/{step_id}.json"

    def checks_uri(self, backfill_id: str, attempt: int, step_id: str) -> str:
        return f"{self.root}/checks/{backfill_id}/a{attempt}/{step_id}.json"

    def ledger_uri(self, table: str, day: str | date) -> str:
        return f"{self.root}/ledger/{table}/{day}.json"

    @staticmethod
    def catalog_staging_uri(table_uri: str, backfill_id: str, attempt: int) -> str:
        return f"{table_uri.rstrip('/')}/{CATALOG_VERSIONS}/{backfill_id}/a{attempt}"


def default_root(warehouse: str) -> str:
    return f"{warehouse.rstrip('/')}/_backfill"


def manifest_partitions(
    manifest: PublishManifest,
    *,
    layout: PublishLayout,
    staged: Mapping[str, int],
    live: Mapping[str, str],
) -> list[ManifestPartition]:
    """Each partition of `manifest`'s step scope, staged (partition -> rows) or live
    (partition -> location), with its action and its three locations: a path table's replaced
    partition is moved to its backup; a catalogued table's stays where it is, its backup being
    itself."""
    backfill_id, attempt, step_id = manifest.backfill_id, manifest.attempt, manifest.step_id
    kind, table_uri, staging_uri = manifest.table_kind, manifest.table_uri, manifest.staging_uri
    entries = []
    for partition in sorted(set(staged) | set(live)):
        if partition not in live:
            action = PartitionAction.CREATE
        elif partition in staged:
            action = PartitionAction.REPLACE
        else:
            action = PartitionAction.DELETE
        backup = None
        if action is not PartitionAction.CREATE:
            backup = (
                layout.backup_uri(backfill_id, attempt, step_id, partition)
                if kind is TableKind.PATH
                else live[partition]
            )
        entries.append(
            ManifestPartition(
                partition=partition,
                action=action,
                live_location=live.get(partition, f"{table_uri.rstrip('/')}/{partition}"),
                staged_location=None if action is PartitionAction.DELETE else f"{staging_uri}/{partition}",
                backup_location=backup,
                rows=staged.get(partition, 0),
            )
        )
    return entries
