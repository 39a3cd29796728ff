"""Before a write, the job removes the `.spark-staging-*` directories of killed writes and keeps
a live writer's (spark_jobs/engine/staging.py), on a real directory tree; no JVM."""

from __future__ import annotations

import os
import shutil
import time
from datetime import date
from pathlib import Path

import pytest

from spark_jobs.engine.staging import STALE_AFTER_SECONDS, StagingSweep, staging_days

OURS = (date(2021, 6, 2), date(2021, 6, 3))


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class LocalFilesystem:
    """The calls the cleanup makes of HadoopFs, on the local disk (HadoopFs needs a JVM)."""

    def glob_directories(self, pattern: str) -> list[str]:
        parent, _, name = pattern.rpartition("/")
        return sorted(str(p) for p in Path(parent).glob(name) if p.is_dir())

    def children(self, uri: str) -> list[str]:
        return [str(p) for p in Path(uri).iterdir()]

    def files(self, uri: str) -> list[tuple[str, int]]:
        return [(str(p), p.stat().st_mtime_ns // 1_000_000) for p in Path(uri).rglob("*") if p.is_file()]

    def directories(self, uri: str) -> list[str]:
        return [str(p) for p in Path(uri).rglob("*") if p.is_dir()]

    def modified_ms(self, uri: str) -> int:
        return Path(uri).stat().st_mtime_ns // 1_000_000

    def delete(self, uri: str) -> None:
        shutil.rmtree(uri)


def staged(table: Path, name: str, *days: str, age_seconds: float = 0) -> Path:
    """A staging directory as a write killed while its tasks wrote leaves it."""
    directory = table / f".spark-staging-{name}"
    attempt = directory / "_temporary" / "0" / "_temporary" / "attempt_202106040000_0001_m_000000_0"
    attempt.mkdir(parents=True)
    for day in days:
        (attempt / f"day={day}" / "hour=1").mkdir(parents=True)
        (attempt / f"day={day}" / "hour=1" / "part-00000.snappy.parquet").write_bytes(b"PAR1")
    age(directory, age_seconds)
    return directory


def age(directory: Path, seconds: float) -> None:
    then = time.time() - seconds
    for path in [directory, *directory.rglob("*")]:
        os.utime(path, (then, then))


@pytest.fixture
def table(tmp_path: Path) -> Path:
    table = tmp_path / "processed" / "orders"
    for day in ("2021-06-01", "2021-06-02", "2021-06-03"):
        (table / f"day={day}" / "hour=1").mkdir(parents=True)
        (table / f"day={day}" / "hour=1" / "part-00000.snappy.parquet").write_bytes(f"rows of {day}".encode())
    (table / "_SUCCESS").write_bytes(b"")
    return table


def tree(table: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(table)): p.read_bytes()
        for p in table.rglob("*")
        if p.is_file() and not p.relative_to(table).parts[0].startswith(".spark-staging-")
    }


def test_dead_writes_staging_is_removed_a_live_writers_kept_and_the_partitions_untouched(table: Path) -> None:
    before = tree(table)
    empty = table / ".spark-staging-empty"  # what a job killed by Airflow leaves: Spark emptied it, then died
    empty.mkdir()
    ours = staged(table, "our-days", "2021-06-02", "2021-06-03")  # a killed attempt of our own days
    stale = staged(table, "stale", "2021-06-20", age_seconds=STALE_AFTER_SECONDS + 60)
    live = staged(table, "live", "2021-06-20", age_seconds=60)  # a concurrent backfill of other days
    mixed = staged(
        table, "mixed", "2021-06-03", "2021-06-20"
    )  # ours and someone else's days: not ours to judge
    starting = table / ".spark-staging-starting"  # set up, no task output yet
    (starting / "_temporary" / "0").mkdir(parents=True)

    removed = StagingSweep(filesystem=LocalFilesystem(), days=OURS, now_ms=now_ms()).remove_dead(str(table))

    assert removed == {
        str(empty): "empty",
        str(ours): "output only for days this write replaces (2021-06-02, 2021-06-03)",
        str(stale): "unchanged for 6.0 h",
    }
    assert not empty.exists() and not ours.exists() and not stale.exists()
    assert live.is_dir() and mixed.is_dir() and starting.is_dir()
    assert tree(table) == before  # partitions and markers as they were


def test_a_write_of_every_day_takes_any_staged_output_but_not_a_setup_without_output(table: Path) -> None:
    other = staged(table, "other", "2021-06-20")
    starting = table / ".spark-staging-starting"
    (starting / "_temporary" / "0").mkdir(parents=True)

    removed = StagingSweep(filesystem=LocalFilesystem(), days=None, now_ms=now_ms()).remove_dead(str(table))

    assert list(removed) == [str(other)] and starting.is_dir()


def test_a_staging_dir_becomes_stale_only_after_its_last_change(table: Path) -> None:
    old = staged(table, "old", "2021-06-20", age_seconds=STALE_AFTER_SECONDS + 60)
    fresh_file = (
        old / "_temporary" / "0" / "_temporary" / "attempt_202106040000_0001_m_000001_0" / "day=2021-06-20"
    )
    fresh_file.mkdir(parents=True)
    (fresh_file / "part-00001.snappy.parquet").write_bytes(b"PAR1")  # a task still writing

    assert (
        StagingSweep(filesystem=LocalFilesystem(), days=OURS, now_ms=now_ms()).remove_dead(str(table)) == {}
    )
    assert old.is_dir()


def test_a_table_with_no_directory_yet_has_nothing_to_remove(tmp_path: Path) -> None:
    missing = tmp_path / "processed" / "new_table"
    assert (
        StagingSweep(filesystem=LocalFilesystem(), days=OURS, now_ms=now_ms()).remove_dead(str(missing)) == {}
    )


@pytest.mark.parametrize(
    ("files", "days"),
    [
        (["s3a://lake/t/.spark-staging-x/day=2021-06-04/hour=3/part-0.parquet"], {date(2021, 6, 4)}),
        (
            [
                "file:/w/t/.spark-staging-x/_temporary/0/task_1/day=2021-06-04/part-0.parquet",
                "file:/w/t/.spark-staging-x/_temporary/0/task_2/day=2021-06-05/feed=web/part-0.parquet",
            ],
            {date(2021, 6, 4), date(2021, 6, 5)},
        ),
        (
            ["file:/w/day=2021-01-01/t/.spark-staging-x/_temporary/0/part-0.parquet"],
            None,
        ),  # a day above it is not its
        (["file:/w/t/.spark-staging-x/day=someday/part-0.parquet"], None),
        ([], set()),
    ],
)
def test_staging_days_reads_the_day_segments_below_the_staging_directory(
    files: list[str], days: set[date] | None
) -> None:
    assert staging_days(files) == days


def test_a_write_killed_before_its_first_file_is_removed_by_a_write_of_its_days_only(table: Path) -> None:
    """Seen on the lifecycle test under load: the task made `day=.../hour=...` and died before
    writing a file. Its day directories say whose it is."""

    def set_up_only(name: str, day: str) -> Path:
        directory = table / f".spark-staging-{name}"
        (directory / "_temporary" / "0" / "_temporary" / "attempt_1" / f"day={day}" / "hour=0").mkdir(
            parents=True
        )
        return directory

    mine, other = set_up_only("mine", "2021-06-02"), set_up_only("other", "2021-06-20")

    sweep = StagingSweep(filesystem=LocalFilesystem(), days=[date(2021, 6, 2)], now_ms=now_ms())
    removed = sweep.remove_dead(str(table))

    assert list(removed) == [str(mine)] and "no output yet" in removed[str(mine)] and other.is_dir()
