"""Safe publish without Spark: publish, rollback, discard, undo, recover and sweep over path
tables on disk, an in-memory catalog and moto's Glue; a crash injected at every storage or
catalog call is finished (or rolled back) by the retry; undo's refusals are typed and located."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from backfill_orchestrator import documents
from backfill_orchestrator.contracts.publish import (
    ChecksVerdict,
    DataDiff,
    ManifestState,
    PublishPolicy,
    RulesCheck,
    SchemaCheck,
    StepChecks,
    TableKind,
)
from backfill_orchestrator.errors import PolicyRefusal, UserError
from backfill_orchestrator.publish import (
    BackupsExpiredError,
    ChecksFailedError,
    FileDataStore,
    GlueCatalog,
    PartitionChangedError,
    PartitionRepublishedError,
    Publisher,
    PublishLayout,
    PublishStateError,
    Side,
    UnknownStagedAttemptError,
)
from tests.support.publish import (
    BACKFILL_A,
    BACKFILL_B,
    CrashAfter,
    InjectedCrash,
    MemoryCatalog,
    read_partitions,
    stage_on_disk,
    write_partition,
)

WEB, APP, PARTNER = "day=2021-05-05/feed=web", "day=2021-05-05/feed=app", "day=2021-05-05/feed=partner"
BEFORE = {APP: "old-app", WEB: "old-web"}
STAGED = {WEB: "new-web", PARTNER: "new-partner"}  # web replaced, partner created, app deleted
AFTER = {PARTNER: "new-partner", WEB: "new-web"}


@pytest.fixture
def table(tmp_path: Path) -> Path:
    directory = tmp_path / "warehouse" / "processed" / "orders"
    for partition, text in BEFORE.items():
        write_partition(directory / partition, text)
    return directory


@pytest.fixture
def layout(tmp_path: Path) -> PublishLayout:
    return PublishLayout(str(tmp_path / "warehouse" / "_backfill"))


def publisher(layout: PublishLayout, *, store=None, catalog=None, clock=None) -> Publisher:
    return Publisher(
        layout=layout,
        store=store or FileDataStore(),
        catalogs={} if catalog is None else {catalog.kind: catalog},
        **({"clock": clock} if clock else {}),
    )


def catalogued(table: Path) -> MemoryCatalog:
    catalog = MemoryCatalog()
    catalog.tables["food_delivery.orders"] = {p: str(table / p) for p in BEFORE}
    return catalog


def test_a_path_table_is_published_and_undone(table: Path, layout: PublishLayout):
    ops = publisher(layout)
    staged = ops.write_manifest(
        stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
    )
    assert read_partitions(ops.store, table) == BEFORE  # staging leaves live alone

    published = ops.publish(staged, by="@jane")
    assert published.state is ManifestState.PUBLISHED and published.published_by == "@jane"
    assert read_partitions(ops.store, table) == AFTER
    assert ops.published_by("orders", WEB).backfill_id == BACKFILL_A
    assert ops.publish(published, by="@jane") == published  # idempotent

    (undone,) = ops.undo(BACKFILL_A, by="@joe")
    assert undone.state is ManifestState.UNDONE and undone.undone_by == "@joe"
    assert read_partitions(ops.store, table) == BEFORE
    assert not Path(staged.staging_uri).exists()
    assert ops.published_by("orders", WEB) is None
    assert ops.undo(BACKFILL_A, by="@joe") == [undone]  # nothing left to undo


def test_a_catalogued_table_swaps_locations_and_keeps_the_old_data_in_place(
    table: Path, layout: PublishLayout
):
    catalog = catalogued(table)
    ops = publisher(layout, catalog=catalog)
    manifest = ops.write_manifest(
        stage_on_disk(
            layout=layout,
            backfill_id=BACKFILL_A,
            table_dir=table,
            staged=STAGED,
            kind=TableKind.HIVE,
            catalog=catalog,
        )
    )
    ops.publish(manifest, by="auto")
    assert read_partitions(ops.store, table, catalog) == AFTER
    assert read_partitions(ops.store, table) == BEFORE  # the replaced directories are the backups
    assert catalog.location("food_delivery.orders", WEB).startswith(str(table / "_backfill" / BACKFILL_A))
    ops.undo(BACKFILL_A, by="auto")
    assert catalog.tables["food_delivery.orders"] == {p: str(table / p) for p in BEFORE}


@pytest.mark.parametrize("kind", [TableKind.PATH, TableKind.HIVE])
def test_a_crash_at_any_call_of_a_publish_is_finished_or_rolled_back_by_the_retry(
    table: Path, layout: PublishLayout, kind: TableKind, tmp_path: Path
):
    import shutil

    pristine = tmp_path / "pristine"
    shutil.copytree(table.parent.parent, pristine)
    crash_at, seen_crash = 1, True
    while seen_crash:
        for finish in (True, False):
            shutil.rmtree(table.parent.parent)
            shutil.copytree(pristine, table.parent.parent)
            catalog = catalogued(table) if kind is TableKind.HIVE else None
            manifest = stage_on_disk(
                layout=layout,
                backfill_id=BACKFILL_A,
                table_dir=table,
                staged=STAGED,
                kind=kind,
                catalog=catalog,
            )
            publisher(layout, catalog=catalog).write_manifest(manifest)
            crashing_store = CrashAfter(FileDataStore(), crash_at)
            crashing_catalog = CrashAfter(catalog, crash_at) if catalog else None
            dying = publisher(layout, store=crashing_store, catalog=crashing_catalog)
            seen_crash = False
            try:
                dying.publish(manifest, by="auto")
            except InjectedCrash:
                seen_crash = True
            retry = publisher(layout, catalog=catalog)
            left = retry.load_manifest(BACKFILL_A, 1, "etl_orders")
            sides = {e.partition: retry.side(left, e) for e in left.partitions}
            allowed = {Side.OLD, Side.NEW} | ({Side.HALF} if kind is TableKind.PATH else set())
            assert set(sides.values()) <= allowed, (crash_at, sides)
            recovered = retry.recover(BACKFILL_A, finish=finish)
            state = retry.load_manifest(BACKFILL_A, 1, "etl_orders").state
            if finish or not seen_crash or left.state is ManifestState.PUBLISHED:  # crashed tidying up
                assert state is ManifestState.PUBLISHED, (crash_at, recovered)
                assert read_partitions(retry.store, table, catalog) == AFTER
            else:
                assert state is ManifestState.STAGED
                assert read_partitions(retry.store, table, catalog) == BEFORE
        crash_at += 1
    assert crash_at > 3  # the publish made several calls, and each was a crash point


def test_a_crash_at_any_call_of_an_undo_is_finished_by_the_retry(table: Path, layout: PublishLayout):
    crash_at, seen_crash = 1, True
    import shutil

    pristine = table.parent.parent.parent / "pristine"
    shutil.copytree(table.parent.parent, pristine)
    while seen_crash:
        shutil.rmtree(table.parent.parent)
        shutil.copytree(pristine, table.parent.parent)
        ops = publisher(layout)
        ops.publish(
            ops.write_manifest(
                stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
            ),
            by="auto",
        )
        seen_crash = False
        try:
            publisher(layout, store=CrashAfter(FileDataStore(), crash_at)).undo(BACKFILL_A, by="@joe")
        except InjectedCrash:
            seen_crash = True
        publisher(layout).recover(BACKFILL_A)
        assert publisher(layout).load_manifest(BACKFILL_A, 1, "etl_orders").state is ManifestState.UNDONE
        assert read_partitions(ops.store, table) == BEFORE, crash_at
        crash_at += 1


def test_undo_refuses_when_a_later_backfill_republished_and_names_it(table: Path, layout: PublishLayout):
    ops = publisher(layout)
    ops.publish(
        ops.write_manifest(
            stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
        ),
        by="@jane",
    )
    ops.publish(
        ops.write_manifest(
            stage_on_disk(
                layout=layout,
                backfill_id=BACKFILL_B,
                table_dir=table,
                staged={WEB: "b-web"},
                live={WEB: str(table / WEB)},
            )
        ),
        by="@joe",
    )
    after_b = read_partitions(ops.store, table)

    with pytest.raises(PartitionRepublishedError) as refused:
        ops.undo(BACKFILL_A, by="@jane")
    assert isinstance(refused.value, PolicyRefusal)
    assert refused.value.later_backfills == [BACKFILL_B]
    assert refused.value.problems == [
        f"orders/{WEB}: republished by backfill {BACKFILL_B} (step etl_orders, attempt 1) at "
        f"{ops.published_by('orders', WEB).published_at.isoformat()}; undo it first"
    ]
    assert read_partitions(ops.store, table) == after_b  # refused before any change

    ops.undo(BACKFILL_B, by="@joe")
    assert read_partitions(ops.store, table) == AFTER
    ops.undo(BACKFILL_A, by="@jane")
    assert read_partitions(ops.store, table) == BEFORE


def test_undo_after_the_retention_is_refused_and_the_sweep_removes_the_backups(
    table: Path, layout: PublishLayout
):
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    ops = publisher(layout, clock=lambda: now[0])
    published = ops.publish(
        ops.write_manifest(
            stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
        ),
        by="auto",
    )
    assert published.backups_expire_at == now[0] + timedelta(days=30)
    now[0] += timedelta(days=31)
    with pytest.raises(
        BackupsExpiredError, match=r"fix-orders-0000000a/a1/etl_orders: backups expired at 2026-01-31"
    ):
        ops.undo(BACKFILL_A, by="@jane")
    result = ops.sweep()
    assert result.expired == [published.key]
    assert not Path(published.partitions[0].backup_location or "").exists()
    assert read_partitions(ops.store, table) == AFTER  # live untouched
    with pytest.raises(BackupsExpiredError):
        ops.undo(BACKFILL_A, by="@jane")


def test_a_missing_backup_refuses_undo(table: Path, layout: PublishLayout):
    ops = publisher(layout)
    published = ops.publish(
        ops.write_manifest(
            stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
        ),
        by="auto",
    )
    backup = next(e.backup_location for e in published.partitions if e.partition == WEB)
    FileDataStore().delete(backup or "")
    with pytest.raises(BackupsExpiredError, match=f"orders/{WEB}: backup .* is gone"):
        ops.undo(BACKFILL_A, by="@jane")


def test_unknown_backfills_and_attempts_are_the_users_mistake(layout: PublishLayout):
    ops = publisher(layout)
    with pytest.raises(
        UnknownStagedAttemptError, match=r"nope-00000000/a2/etl_orders: nothing was staged"
    ) as error:
        ops.load_manifest("nope-00000000", 2, "etl_orders")
    assert isinstance(error.value, UserError)
    with pytest.raises(UnknownStagedAttemptError, match="no step of this backfill was staged"):
        ops.undo("nope-00000000", by="@jane")
    assert ops.recover("nope-00000000") == []


def test_a_step_whose_checks_failed_is_never_published(table: Path, layout: PublishLayout):
    ops = publisher(layout)
    manifest = stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
    checks_uri = layout.checks_uri(BACKFILL_A, 1, "etl_orders")
    checks = StepChecks(
        backfill_id=BACKFILL_A,
        attempt=1,
        step_id="etl_orders",
        table="orders",
        checked_at=datetime(2026, 1, 1, tzinfo=UTC),
        schema_check=SchemaCheck(passed=False, problems=["column quantity: staged int, live bigint"]),
        rules=RulesCheck(ran=False, passed=True),
        diff=DataDiff(partitions=3, rows_before=2, rows_after=2),
        policy=PublishPolicy(),
        verdict=ChecksVerdict.FAILED,
        reasons=["schema: column quantity: staged int, live bigint"],
    )
    documents.write_text(checks_uri, checks.to_json())
    manifest = ops.write_manifest(manifest.model_copy(update={"checks_uri": checks_uri}))
    with pytest.raises(ChecksFailedError, match="schema: column quantity: staged int, live bigint"):
        ops.publish(manifest, by="@jane")
    assert read_partitions(ops.store, table) == BEFORE
    discarded = ops.discard(manifest)
    assert discarded.state is ManifestState.DISCARDED and not Path(manifest.staging_uri).exists()
    with pytest.raises(PublishStateError, match="is discarded; only a staged step can be published"):
        ops.publish(discarded, by="@jane")


def test_a_published_step_is_undone_not_discarded(table: Path, layout: PublishLayout):
    ops = publisher(layout)
    published = ops.publish(
        ops.write_manifest(
            stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
        ),
        by="auto",
    )
    with pytest.raises(PublishStateError, match="a published step is undone, not discarded"):
        ops.discard(published)


def test_a_partition_changed_outside_the_publish_refuses_it_before_any_change(
    table: Path, layout: PublishLayout
):
    ops = publisher(layout)
    manifest = ops.write_manifest(
        stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
    )
    FileDataStore().delete(str(table / APP))  # someone else deleted a partition the step deletes too
    write_partition(table / PARTNER, "someone else's")
    with pytest.raises(PartitionChangedError) as changed:
        ops.publish(manifest, by="auto")
    assert [issue.location for issue in changed.value.issues] == [f"orders/{APP}", f"orders/{PARTNER}"]
    assert read_partitions(ops.store, table) == {PARTNER: "someone else's", WEB: "old-web"}


def test_a_cancel_stops_a_publish_between_two_partitions(table: Path, layout: PublishLayout):
    import threading

    stop = threading.Event()
    stop.set()
    ops = publisher(layout)
    manifest = ops.write_manifest(
        stage_on_disk(layout=layout, backfill_id=BACKFILL_A, table_dir=table, staged=STAGED)
    )
    left = ops.publish(manifest, by="auto", stop=stop)
    assert left.state is ManifestState.PUBLISHING
    assert read_partitions(ops.store, table) == BEFORE
    assert ops.rollback(left).state is ManifestState.STAGED


def test_glue_partitions_are_swapped_through_the_glue_api(mocked_aws, table: Path, layout: PublishLayout):
    glue = boto3.client("glue", region_name="us-east-1")
    glue.create_database(DatabaseInput={"Name": "food_delivery"})
    storage = {"Columns": [{"Name": "order_id", "Type": "string"}], "Location": str(table)}
    glue.create_table(
        DatabaseName="food_delivery",
        TableInput={
            "Name": "orders",
            "StorageDescriptor": storage,
            "PartitionKeys": [{"Name": "day", "Type": "date"}, {"Name": "feed", "Type": "string"}],
        },
    )
    for partition in BEFORE:
        values = [value.split("=", 1)[1] for value in partition.split("/")]
        glue.create_partition(
            DatabaseName="food_delivery",
            TableName="orders",
            PartitionInput={
                "Values": values,
                "StorageDescriptor": {**storage, "Location": str(table / partition)},
            },
        )
    catalog = GlueCatalog(glue_client=glue)
    assert catalog.locations("food_delivery.orders", ["2021-05-05"]) == {
        p: str(table / p) for p in sorted(BEFORE)
    }
    assert catalog.locations("food_delivery.orders", ["2021-05-06"]) == {}
    ops = Publisher(layout=layout, store=FileDataStore(), catalogs={TableKind.GLUE: catalog})
    manifest = stage_on_disk(
        layout=layout,
        backfill_id=BACKFILL_A,
        table_dir=table,
        staged=STAGED,
        kind=TableKind.GLUE,
        live=catalog.locations("food_delivery.orders", None),
    )
    ops.publish(ops.write_manifest(manifest), by="auto")
    after = catalog.locations("food_delivery.orders", None)
    assert sorted(after) == [PARTNER, WEB]
    assert after[WEB] == f"{manifest.staging_uri}/{WEB}"
    ops.undo(BACKFILL_A, by="auto")
    assert catalog.locations("food_delivery.orders", None) == {p: str(table / p) for p in sorted(BEFORE)}
