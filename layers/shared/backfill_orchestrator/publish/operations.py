"""publish, rollback, discard, undo, recover and sweep: each idempotent, and resumable from the
manifest after a crash at any line.

Nothing about a partition's progress is written per partition: where each one stands is read
from the catalog (its location) or the storage (which of live, staged and backup exist), so a
retry sees exactly what the crash left. The manifest says what was meant (`publishing`,
`undoing`), written before the first change and after the last."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from backfill_orchestrator import documents
from backfill_orchestrator._compat import StrEnum
from backfill_orchestrator.contracts.publish import (
    ChecksVerdict,
    ManifestPartition,
    ManifestState,
    PartitionAction,
    PartitionLedger,
    PartitionRecord,
    PublishManifest,
    StepChecks,
    TableKind,
)
from backfill_orchestrator.errors import ConfigIssue
from backfill_orchestrator.publish.catalogs import PartitionCatalog
from backfill_orchestrator.publish.errors import (
    BackupsExpiredError,
    ChecksFailedError,
    PartitionChangedError,
    PartitionRepublishedError,
    PublishCatalogError,
    PublishStateError,
    UnknownStagedAttemptError,
    issue,
)
from backfill_orchestrator.publish.layout import PublishLayout, partition_day
from backfill_orchestrator.publish.storage import DataStore

DEFAULT_RETENTION = timedelta(days=30)  # template.yaml's BackupRetentionDays default
STALE_STAGING = timedelta(days=1)  # a manifest left `staging` this long: its job died mid-write
MAX_LISTED_ISSUES = 20


class Side(StrEnum):
    """Where one partition stands between its live version before the publish (old) and the
    staged one (new)."""

    OLD = "old"
    HALF = "half"  # path tables only: the old one moved to its backup, the new one not yet in
    NEW = "new"


def same_location(first: str | None, second: str | None) -> bool:
    """Catalogs spell local paths `file:/x`, `file:///x` or `/x`."""
    if first is None or second is None:
        return first is second

    def plain(uri: str) -> str:
        for prefix in ("file://", "file:"):
            if uri.startswith(prefix):
                uri = uri[len(prefix) :]
                break
        return "/" + uri.strip("/") if uri.startswith("/") else uri.rstrip("/")

    return plain(first) == plain(second)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class SweepResult:
    expired: list[str] = field(default_factory=list)  # manifest keys whose backups were removed
    discarded: list[str] = field(default_factory=list)  # stale `staging` manifests cleaned up
    skipped: list[str] = field(default_factory=list)  # `key: why` (a catalog not reachable from here)


@dataclass(frozen=True)
class Publisher:
    """The operations over one publish root, with their clients injected. `catalogs` holds the
    catalog of each catalogued kind this process can reach: Glue from anywhere with boto3,
    Hive only with a SparkSession that has Hive support (spark_jobs.engine.hive.HiveCatalog)."""

    layout: PublishLayout
    store: DataStore
    catalogs: Mapping[TableKind, PartitionCatalog] = field(default_factory=dict)
    s3_client: Any = None
    retention: timedelta = DEFAULT_RETENTION
    clock: Callable[[], datetime] = _now

    # -- documents ---------------------------------------------------------------------------
    def write_manifest(self, manifest: PublishManifest) -> PublishManifest:
        uri = self.layout.manifest_uri(manifest.backfill_id, manifest.attempt, manifest.step_id)
        documents.write_bytes(uri, manifest.to_json().encode(), s3_client=self.s3_client)
        return manifest

    def load_manifest(self, backfill_id: str, attempt: int, step_id: str) -> PublishManifest:
        uri = self.layout.manifest_uri(backfill_id, attempt, step_id)
        try:
            body = documents.read_bytes(uri, max_bytes=PublishManifest.max_bytes, s3_client=self.s3_client)
        except documents.DocumentNotFoundError:
            raise UnknownStagedAttemptError(
                [
                    issue(
                        f"{backfill_id}/a{attempt}/{step_id}",
                        "nothing was staged under this backfill, attempt and step",
                    )
                ],
                source=uri,
            ) from None
        return PublishManifest.from_json(body, source=uri)

    def manifests(self, backfill_id: str) -> list[PublishManifest]:
        """Every manifest of the backfill, by attempt then step; UnknownStagedAttemptError if none."""
        found = self._manifests_under(self.layout.manifests_prefix(backfill_id))
        if not found:
            raise UnknownStagedAttemptError(
                [issue(backfill_id, "no step of this backfill was staged (no publish manifest)")],
                source=self.layout.manifests_prefix(backfill_id),
            )
        return found

    def _manifests_under(self, prefix: str) -> list[PublishManifest]:
        found = []
        for uri in documents.list_uris(prefix, suffix=".json", s3_client=self.s3_client):
            body = documents.read_bytes(uri, max_bytes=PublishManifest.max_bytes, s3_client=self.s3_client)
            found.append(PublishManifest.from_json(body, source=uri))
        return sorted(found, key=lambda m: (m.backfill_id, m.attempt, m.created_at, m.step_id))

    def load_checks(self, manifest: PublishManifest) -> StepChecks | None:
        if manifest.checks_uri is None:
            return None
        body = documents.read_bytes(
            manifest.checks_uri, max_bytes=StepChecks.max_bytes, s3_client=self.s3_client
        )
        return StepChecks.from_json(body, source=manifest.checks_uri)

    def _save(self, manifest: PublishManifest, state: ManifestState, **changes: Any) -> PublishManifest:
        updated = manifest.model_copy(update={"state": state, "updated_at": self.clock(), **changes})
        return self.write_manifest(PublishManifest.model_validate(updated.model_dump()))

    # -- one partition -----------------------------------------------------------------------
    def _catalog(self, manifest: PublishManifest) -> PartitionCatalog:
        catalog = self.catalogs.get(manifest.table_kind)
        if catalog is None:
            needs = (
                "a SparkSession with Hive support"
                if manifest.table_kind is TableKind.HIVE
                else "a Glue client"
            )
            raise PublishCatalogError(
                [
                    issue(
                        f"{manifest.key}",
                        f"{manifest.table_kind} table {manifest.catalog_table}: needs {needs}",
                    )
                ]
            )
        return catalog

    def side(
        self,
        manifest: PublishManifest,
        entry: ManifestPartition,
        *,
        catalogued: Mapping[str, str] | None = None,
    ) -> Side:
        """Where the partition stands; PartitionChangedError when neither old nor new.
        `catalogued`: the catalog's partition -> location for the manifest's days, looked up
        once for many partitions (`current_locations`)."""
        where = f"{manifest.table}/{entry.partition}"
        if manifest.table_kind is TableKind.PATH:
            live = self.store.exists(entry.live_location)
            staged = entry.staged_location is not None and self.store.exists(entry.staged_location)
            backup = entry.backup_location is not None and self.store.exists(entry.backup_location)
            found = {
                PartitionAction.REPLACE: {
                    (True, True, False): Side.OLD,
                    (False, True, True): Side.HALF,
                    (True, False, True): Side.NEW,
                },
                PartitionAction.CREATE: {(False, True, False): Side.OLD, (True, False, False): Side.NEW},
                PartitionAction.DELETE: {(True, False, False): Side.OLD, (False, False, True): Side.NEW},
            }[entry.action].get((live, staged, backup))
            if found is None:
                raise PartitionChangedError(
                    [
                        issue(
                            where,
                            f"changed outside this publish: live {live}, staged {staged}, backup {backup}",
                        )
                    ],
                    source=manifest.key,
                )
            return found
        current = (
            catalogued.get(entry.partition)
            if catalogued is not None
            else self._catalog(manifest).location(manifest.catalog_table or "", entry.partition)
        )
        before = None if entry.action is PartitionAction.CREATE else entry.live_location
        before = None if entry.action is PartitionAction.CREATE else entry.live_location
        after = entry.staged_location  # None for a delete
        if same_location(current, after):
            return Side.NEW
        if same_location(current, before):
            return Side.OLD
        raise PartitionChangedError(
            [
                issue(
                    where,
                    f"the catalog points at {current}, neither {before} (before) nor {after} (published)",
                )
            ],
            source=manifest.key,
        )

    def current_locations(self, manifest: PublishManifest) -> dict[str, str] | None:
        """A catalogued table's partitions of the manifest's days, in one catalog call (None
        for a path table)."""
        if manifest.table_kind is TableKind.PATH:
            return None
        days = sorted({partition_day(entry.partition) for entry in manifest.partitions})
        return self._catalog(manifest).locations(manifest.catalog_table or "", days)

    def _forward(self, manifest: PublishManifest, entry: ManifestPartition, side: Side) -> None:
        if side is Side.NEW:
            return
        if manifest.table_kind is TableKind.PATH:
            if entry.action is not PartitionAction.CREATE and side is Side.OLD:
                self.store.move(entry.live_location, entry.backup_location or "")
            if entry.staged_location is not None:
                self.store.move(entry.staged_location, entry.live_location)
            return
        catalog, table = self._catalog(manifest), manifest.catalog_table or ""
        if entry.action is PartitionAction.REPLACE:
            catalog.set_location(table, entry.partition, entry.staged_location or "")
        elif entry.action is PartitionAction.CREATE:
            catalog.add(table, entry.partition, entry.staged_location or "")
        else:
            catalog.drop(table, entry.partition)

    def _backward(self, manifest: PublishManifest, entry: ManifestPartition, side: Side) -> None:
        if side is Side.OLD:
            return
        if manifest.table_kind is TableKind.PATH:
            if side is Side.NEW and entry.staged_location is not None:
                self.store.move(entry.live_location, entry.staged_location)
            if entry.action is not PartitionAction.CREATE:
                self.store.move(entry.backup_location or "", entry.live_location)
            return
        catalog, table = self._catalog(manifest), manifest.catalog_table or ""
        if entry.action is PartitionAction.REPLACE:
            catalog.set_location(table, entry.partition, entry.live_location)
        elif entry.action is PartitionAction.CREATE:
            catalog.drop(table, entry.partition)
        else:
            catalog.add(table, entry.partition, entry.live_location)

    def _sides(self, manifest: PublishManifest) -> dict[str, Side]:
        """Every partition's side, or one PartitionChangedError listing each that is neither."""
        sides, problems = {}, []
        catalogued = self.current_locations(manifest)
        for entry in manifest.partitions:
            try:
                sides[entry.partition] = self.side(manifest, entry, catalogued=catalogued)
            except PartitionChangedError as error:
                problems += error.issues
        if problems:
            raise PartitionChangedError(problems[:MAX_LISTED_ISSUES], source=manifest.key)
        return sides

    # -- publish, rollback, discard ----------------------------------------------------------
    def publish(
        self, manifest: PublishManifest, *, by: str, stop: threading.Event | None = None
    ) -> PublishManifest:
        """Swap every staged partition in (finishing a publish a crash interrupted). Refused for a
        step whose checks failed, and for a manifest that is not staged or publishing. With
        `stop` set between two partitions it returns the manifest still `publishing`: every
        partition is old or new, and a later publish (or rollback) finishes it."""
        if manifest.state is ManifestState.PUBLISHED:
            return manifest
        sides = self.check_publishable(manifest)  # refuse before the first change
        if manifest.state is ManifestState.STAGED:
            manifest = self._save(manifest, ManifestState.PUBLISHING, published_by=by)
        for entry in manifest.partitions:
            if stop is not None and stop.is_set():
                return manifest
            self._forward(manifest, entry, sides[entry.partition])
        published_at = self.clock()
        self._record(manifest, published_at=published_at, by=manifest.published_by or by)
        manifest = self._save(
            manifest,
            ManifestState.PUBLISHED,
            published_at=published_at,
            backups_expire_at=published_at + self.retention,
        )
        if manifest.table_kind is TableKind.PATH:
            # What the moves left: empty directories and Spark's markers (an undo makes the
            # directories it needs again). A catalogued table's staging is live now: kept.
            self.store.delete(manifest.staging_uri)
        return manifest

    def check_publishable(self, manifest: PublishManifest) -> dict[str, Side]:
        """What `publish` refuses before its first change, without changing anything (a person's
        publish checks every held step before it publishes the first): a manifest not staged or
        publishing (PublishStateError), failed checks (ChecksFailedError), a partition neither
        old nor new (PartitionChangedError). Returns each partition's side."""
        if manifest.state not in (ManifestState.STAGED, ManifestState.PUBLISHING):
            raise PublishStateError(
                [issue(manifest.key, f"is {manifest.state}; only a staged step can be published")],
                source=manifest.key,
            )
        checks = self.load_checks(manifest)
        if checks is not None and checks.verdict is ChecksVerdict.FAILED:
            raise ChecksFailedError(
                [issue(f"{manifest.key}", reason) for reason in checks.reasons]
                or [issue(manifest.key, "checks failed")],
                source=manifest.checks_uri,
            )
        return self._sides(manifest)

    def rollback(self, manifest: PublishManifest) -> PublishManifest:
        """A publish a crash or a cancel interrupted, back to staged: every partition old again."""
        if manifest.state is ManifestState.STAGED:
            return manifest
        if manifest.state is not ManifestState.PUBLISHING:
            raise PublishStateError(
                [issue(manifest.key, f"is {manifest.state}; only a publish under way can be rolled back")],
                source=manifest.key,
            )
        sides = self._sides(manifest)
        for entry in manifest.partitions:
            self._backward(manifest, entry, sides[entry.partition])
        self._unrecord(manifest)
        return self._save(manifest, ManifestState.STAGED, published_by=None)

    def discard(self, manifest: PublishManifest) -> PublishManifest:
        """Remove what the step staged; live untouched (a publish under way is rolled back first)."""
        if manifest.state is ManifestState.DISCARDED:
            return manifest
        if manifest.state is ManifestState.PUBLISHING:
            manifest = self.rollback(manifest)
        if manifest.state not in (ManifestState.STAGING, ManifestState.STAGED):
            raise PublishStateError(
                [issue(manifest.key, f"is {manifest.state}; a published step is undone, not discarded")],
                source=manifest.key,
            )
        self.store.delete(manifest.staging_uri)
        return self._save(manifest, ManifestState.DISCARDED)

    # -- the partition ledger ----------------------------------------------------------------
    def _ledgers(self, manifest: PublishManifest) -> dict[str, PartitionLedger]:
        days = sorted({partition_day(entry.partition) for entry in manifest.partitions})
        found = {}
        for day in days:
            uri = self.layout.ledger_uri(manifest.table, day)
            try:
                body = documents.read_bytes(
                    uri, max_bytes=PartitionLedger.max_bytes, s3_client=self.s3_client
                )
            except documents.DocumentNotFoundError:
                found[day] = PartitionLedger(table=manifest.table, day=day)
                continue
            found[day] = PartitionLedger.from_json(body, source=uri)
        return found

    def _write_ledgers(self, table: str, ledgers: Mapping[str, PartitionLedger]) -> None:
        for day, ledger in ledgers.items():
            documents.write_bytes(
                self.layout.ledger_uri(table, day), ledger.to_json().encode(), s3_client=self.s3_client
            )

    @staticmethod
    def _is(record: PartitionRecord | None, manifest: PublishManifest) -> bool:
        return record is not None and (record.backfill_id, record.attempt, record.step_id) == (
            manifest.backfill_id,
            manifest.attempt,
            manifest.step_id,
        )

    def _record(self, manifest: PublishManifest, *, published_at: datetime, by: str) -> None:
        ledgers = self._ledgers(manifest)
        for entry in manifest.partitions:
            ledger = ledgers[partition_day(entry.partition)]
            if self._is(ledger.latest.get(entry.partition), manifest):
                continue  # recorded before a crash
            if entry.partition in ledger.latest:
                ledger.replaced[entry.partition] = ledger.latest[entry.partition]
            path = manifest.table_kind is TableKind.PATH
            ledger.latest[entry.partition] = PartitionRecord(
                backfill_id=manifest.backfill_id,
                attempt=manifest.attempt,
                step_id=manifest.step_id,
                action=entry.action,
                location=None
                if entry.action is PartitionAction.DELETE
                else (entry.live_location if path else entry.staged_location),
                previous_location=None
                if entry.action is PartitionAction.CREATE
                else (entry.backup_location if path else entry.live_location),
                published_at=published_at,
                published_by=by,
            )
        self._write_ledgers(manifest.table, ledgers)

    def _unrecord(self, manifest: PublishManifest) -> None:
        ledgers = self._ledgers(manifest)
        for entry in manifest.partitions:
            ledger = ledgers[partition_day(entry.partition)]
            if not self._is(ledger.latest.get(entry.partition), manifest):
                continue
            previous = ledger.replaced.pop(entry.partition, None)
            if previous is None:
                del ledger.latest[entry.partition]
            else:
                ledger.latest[entry.partition] = previous
        self._write_ledgers(manifest.table, ledgers)

    def published_by(self, table: str, partition: str) -> PartitionRecord | None:
        """The backfill that last published this partition of `table`, if any did."""
        uri = self.layout.ledger_uri(table, partition_day(partition))
        try:
            body = documents.read_bytes(uri, max_bytes=PartitionLedger.max_bytes, s3_client=self.s3_client)
        except documents.DocumentNotFoundError:
            return None
        return PartitionLedger.from_json(body, source=uri).latest.get(partition)

    # -- undo --------------------------------------------------------------------------------
    def undo(self, backfill_id: str, *, by: str) -> list[PublishManifest]:
        """Every partition the backfill published back to what it was before, the newest publish
        first. Refused, before any change, when a later backfill republished one of them
        (PartitionRepublishedError names it: undo that one first), when the backups expired
        (BackupsExpiredError), or when a partition changed outside backfills."""
        manifests = self.manifests(backfill_id)
        todo = [m for m in manifests if m.state in (ManifestState.PUBLISHED, ManifestState.UNDOING)]
        if not todo:
            expired = [m for m in manifests if m.state is ManifestState.EXPIRED]
            if expired:
                raise BackupsExpiredError(
                    [issue(m.key, f"backups expired at {m.backups_expire_at}") for m in expired],
                    source=backfill_id,
                )
            if all(m.state is ManifestState.UNDONE for m in manifests):
                return manifests
            raise PublishStateError(
                [
                    issue(
                        backfill_id,
                        "published nothing: " + ", ".join(f"{m.key} {m.state}" for m in manifests),
                    )
                ],
                source=backfill_id,
            )
        self._check_undoable(backfill_id, todo)
        done = []
        for manifest in sorted(todo, key=lambda m: m.published_at or m.created_at, reverse=True):
            sides = self._sides(manifest)
            if manifest.state is ManifestState.PUBLISHED:
                manifest = self._save(manifest, ManifestState.UNDOING)
            for entry in manifest.partitions:
                self._backward(manifest, entry, sides[entry.partition])
            self._unrecord(manifest)
            self.store.delete(manifest.staging_uri)  # what the backfill published, now unused
            done.append(self._save(manifest, ManifestState.UNDONE, undone_by=by, undone_at=self.clock()))
        return done

    def _check_undoable(self, backfill_id: str, manifests: Iterable[PublishManifest]) -> None:
        now = self.clock()
        expired: list[ConfigIssue] = []
        republished: list[ConfigIssue] = []
        later: set[str] = set()
        for manifest in manifests:
            if (
                manifest.state is ManifestState.PUBLISHED
                and manifest.backups_expire_at
                and now > manifest.backups_expire_at
            ):
                expired.append(
                    issue(manifest.key, f"backups expired at {manifest.backups_expire_at.isoformat()}")
                )
                continue
            ledgers = self._ledgers(manifest)
            for entry in manifest.partitions:
                record = ledgers[partition_day(entry.partition)].latest.get(entry.partition)
                if record is not None and record.backfill_id != backfill_id:
                    later.add(record.backfill_id)
                    republished.append(
                        issue(
                            f"{manifest.table}/{entry.partition}",
                            f"republished by backfill {record.backfill_id} (step {record.step_id}, "
                            f"attempt {record.attempt}) at {record.published_at.isoformat()}; undo it first",
                        )
                    )
                elif manifest.state is ManifestState.PUBLISHED and entry.action is not PartitionAction.CREATE:
                    backup = (
                        entry.backup_location
                        if manifest.table_kind is TableKind.PATH
                        else entry.live_location
                    )
                    if backup is None or not self.store.exists(backup):
                        expired.append(
                            issue(f"{manifest.table}/{entry.partition}", f"backup {backup} is gone")
                        )
        if republished:
            raise PartitionRepublishedError(republished[:MAX_LISTED_ISSUES], later=later, source=backfill_id)
        if expired:
            raise BackupsExpiredError(expired[:MAX_LISTED_ISSUES], source=backfill_id)
        for manifest in manifests:
            self._sides(manifest)  # PartitionChangedError before any change

    # -- after a crash, and retention ---------------------------------------------------------
    def recover(self, backfill_id: str, *, finish: bool = True, by: str = "recover") -> list[PublishManifest]:
        """What a crash or a cancel left under way, finished (`finish`) or rolled back: publishes
        left `publishing`, undos left `undoing`, staging writes left `staging` (discarded)."""
        try:
            manifests = self.manifests(backfill_id)
        except UnknownStagedAttemptError:
            return []
        out = []
        for manifest in manifests:
            if manifest.state is ManifestState.STAGING:
                out.append(self.discard(manifest))
            elif manifest.state is ManifestState.PUBLISHING:
                out.append(
                    self.publish(manifest, by=manifest.published_by or by)
                    if finish
                    else self.rollback(manifest)
                )
        if any(m.state is ManifestState.UNDOING for m in manifests):
            out += self.undo(backfill_id, by=by)
        return out

    def sweep(self) -> SweepResult:
        """Backups past their retention removed (their manifests become `expired`: undo is then
        refused) and staging writes whose job died discarded. Path tables' backups also expire
        by the storage's lifecycle rule; a catalogued table's replaced partitions stay where
        they were, so only this removes them."""
        result = SweepResult()
        now = self.clock()
        for manifest in self._manifests_under(self.layout.manifests_prefix()):
            try:
                if (
                    manifest.state is ManifestState.PUBLISHED
                    and manifest.backups_expire_at is not None
                    and now > manifest.backups_expire_at
                ):
                    self._remove_backups(manifest)
                    self._save(manifest, ManifestState.EXPIRED)
                    result.expired.append(manifest.key)
                elif manifest.state is ManifestState.STAGING and now - manifest.updated_at > STALE_STAGING:
                    self.discard(manifest)
                    result.discarded.append(manifest.key)
            except PublishCatalogError as error:
                result.skipped.append(f"{manifest.key}: {error.problems[0] if error.problems else error}")
        return result

    def _remove_backups(self, manifest: PublishManifest) -> None:
        catalogued = self.current_locations(manifest) or {}
        for entry in manifest.partitions:
            if entry.action is PartitionAction.CREATE:
                continue
            if manifest.table_kind is TableKind.PATH:
                self.store.delete(entry.backup_location or "")
            elif not same_location(catalogued.get(entry.partition), entry.live_location):
                self.store.delete(entry.live_location)


def by_state(manifests: Iterable[PublishManifest]) -> dict[ManifestState, list[PublishManifest]]:
    grouped: dict[ManifestState, list[PublishManifest]] = defaultdict(list)
    for manifest in manifests:
        grouped[manifest.state].append(manifest)
    return dict(grouped)
