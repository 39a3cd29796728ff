"""The demo's own Spark work in one session: the sample data (generate, clean run, break) and
the final comparison of the repaired warehouse with the clean run.

One JVM for all of it (started once, while Airflow boots) instead of one per command: each
start costs several seconds of CPU on a small machine. The backfill's Spark job is not run
here: Airflow runs it, as in a deployment. The JVM's output goes to a log file.

The generated and cleanly run warehouse is kept once per virtualenv (`SampleCache`), named by a
digest of everything its bytes depend on (the generator's settings, the code under
`spark_jobs/`, PySpark's version, the session's settings): the generator is deterministic, so a
later demo copies the same tables instead of computing them again (the demo's largest piece of
CPU). Any change to that code names another copy, and only the newest is kept."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from backfill_local import cache_dir

REPO = Path(__file__).resolve().parents[2]

# Small data, two cores: a few shuffle partitions instead of 200, no web UI, partition
# directories listed by the driver (a listing job of one task per path costs more here).
DEMO_SPARK_SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}


def submit_args() -> str:
    """The same settings for the backfill's Spark job (its Airflow task starts the JVM)."""
    return " ".join(f"--conf {key}={value}" for key, value in DEMO_SPARK_SETTINGS.items()) + " pyspark-shell"


@contextlib.contextmanager
def demo_spark(*, log: Path) -> Iterator[DemoSpark]:
    from spark_jobs.engine.session import spark_session

    with contextlib.ExitStack() as stack:
        with _stderr_to(log):
            spark = stack.enter_context(spark_session("backfill-demo", extra=DEMO_SPARK_SETTINGS))
        spark.sparkContext.setLogLevel("ERROR")
        yield DemoSpark(spark)


@contextlib.contextmanager
def _stderr_to(log: Path) -> Iterator[None]:
    """The JVM (and its Python workers) inherit file descriptor 2 when the session starts:
    point it at the log only for that moment."""
    log.parent.mkdir(parents=True, exist_ok=True)
    saved = os.dup(2)
    try:
        with log.open("ab") as out:
            os.dup2(out.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@dataclass(frozen=True)
class SampleShape:
    """What the demo's sample is generated from: its days and the hours of each day with orders."""

    start: str  # YYYY-MM-DD
    days: int
    hours_per_day: int = 24


@dataclass(frozen=True)
class CleanSample:
    """The sample warehouse, generated and cleanly run: what the demo breaks and compares with."""

    raw_rows: int  # raw orders generated
    written: dict[str, int]  # rows per processed table of the clean run
    cached: bool  # copied from the virtualenv's cache rather than computed


class SampleCache:
    """One clean sample warehouse per content digest, under the virtualenv's cache directory
    (`backfill_local.cache_dir()`, beside the local Spark jar); the newest only."""

    PREFIX = "sample-warehouse-"

    def __init__(self, shape: SampleShape, *, root: Path | None = None):
        self.root = root if root is not None else cache_dir()
        self.entry = self.root / f"{self.PREFIX}{sample_digest(shape)}"

    def load(self, warehouse: Path, *, linked: bool = False) -> CleanSample | None:
        """The cached warehouse copied to `warehouse`, or None. `linked`: hard links to the
        cached files instead of copies, for a tree that is only ever read (the demo's
        reference): a write into a linked file would change the cache."""
        try:
            counts = json.loads((self.entry / "counts.json").read_text())
        except (OSError, ValueError):
            return None
        copy = link_or_copy if linked else shutil.copy2
        shutil.copytree(self.entry / "warehouse", warehouse, dirs_exist_ok=True, copy_function=copy)
        return CleanSample(raw_rows=counts["raw_rows"], written=counts["written"], cached=True)

    def store(self, warehouse: Path, sample: CleanSample) -> None:
        """Keep a copy of `warehouse`; best effort (a full disk only costs the next demo time).
        Built beside the entry and renamed in at once, so a reader sees a whole copy or none;
        older entries go."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(prefix=f".{self.entry.name}.", dir=self.root))
            try:
                shutil.copytree(warehouse, scratch / "warehouse")
                counts = {"raw_rows": sample.raw_rows, "written": sample.written}
                (scratch / "counts.json").write_text(json.dumps(counts))
                with contextlib.suppress(OSError):  # a concurrent demo stored the same copy first
                    scratch.rename(self.entry)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            for stale in self.root.glob(f"{self.PREFIX}*"):
                if stale != self.entry:
                    shutil.rmtree(stale, ignore_errors=True)
        except OSError as error:
            print(f"   sample data not cached ({error})")


def load_sample(*, warehouse: Path, reference: Path, shape: SampleShape) -> CleanSample | None:
    """The cached sample (no Spark needed) copied to `warehouse` and, as hard links to the
    cache's files where it can be, to `reference`; None when this virtualenv has none."""
    cache = SampleCache(shape)
    sample = cache.load(warehouse)
    if sample is not None and cache.load(reference, linked=True) is None:  # evicted meanwhile
        shutil.copytree(warehouse, reference)
    return sample


def link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or one without hard links
        shutil.copy2(source, target)


def sample_digest(shape: SampleShape) -> str:
    """What the clean sample's bytes depend on: the generator's arguments, every module of
    `spark_jobs` (generator, tables, transforms, the engine's writes), PySpark, the settings."""
    arguments = [shape.start, shape.days, shape.hours_per_day, version("pyspark"), DEMO_SPARK_SETTINGS]
    digest = hashlib.sha256(json.dumps(arguments).encode())
    for source in sorted((REPO / "spark_jobs").rglob("*.py")):
        digest.update(source.relative_to(REPO).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


class DemoSpark:
    def __init__(self, spark: Any):
        self.spark = spark
        # (reference warehouse, table name) -> its distinct rows and their counts (`keep_reference`)
        self._kept: dict[tuple[str, str], Any] = {}

    def clean_sample(self, *, warehouse: Path, reference: Path, shape: SampleShape) -> CleanSample:
        """The sample of `shape` generated and run clean into `warehouse`
        and `reference` (both empty or absent; the reference is only ever read): copied from
        the cache when this very sample was made before in this virtualenv (`load_sample`),
        else computed and cached."""
        sample = load_sample(warehouse=warehouse, reference=reference, shape=shape)
        if sample is not None:
            return sample
        cache = SampleCache(shape)
        rows = self.generate(warehouse=warehouse, shape=shape)
        sample = CleanSample(raw_rows=rows, written=self.run_clean(warehouse=warehouse), cached=False)
        cache.store(warehouse, sample)
        if cache.load(reference, linked=True) is None:  # not cached (the store failed)
            shutil.copytree(warehouse, reference)
        return sample

    def generate(self, *, warehouse: Path, shape: SampleShape) -> int:
        from datetime import date

        from spark_jobs.sample.data import GeneratorSettings, generate

        warehouse.mkdir(parents=True, exist_ok=True)
        settings = GeneratorSettings(
            start=date.fromisoformat(shape.start), days=shape.days, hours_per_day=shape.hours_per_day
        )
        return generate(spark=self.spark, warehouse=str(warehouse), settings=settings)

    def run_clean(self, *, warehouse: Path) -> dict[str, int]:
        from spark_jobs.engine.runner import run_everything
        from spark_jobs.sample.transforms import FOOD_DELIVERY

        return run_everything(spark=self.spark, warehouse=str(warehouse), registry=FOOD_DELIVERY)

    def break_orders(self, *, warehouse: Path, days: str) -> list[str]:
        from spark_jobs.engine import cli_args
        from spark_jobs.engine.scope import Scope
        from spark_jobs.sample.data import break_partitions
        from spark_jobs.sample.tables import ORDERS

        scope = Scope(days=cli_args.day_list(days))
        return break_partitions(
            spark=self.spark, warehouse=str(warehouse), table=ORDERS, scope=scope, mode="drop"
        )

    def keep_reference(self, reference: Path) -> None:
        """Read the clean run's processed tables once and keep each as its distinct rows with
        their counts, in memory (the reference is only ever read): every later `differences`
        with this reference reads only the repaired side."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        from spark_jobs.engine.table_io import read_table
        from spark_jobs.sample.tables import PROCESSED_TABLES

        for table in PROCESSED_TABLES:
            want = read_table(spark=self.spark, warehouse=str(reference), table=table)
            counted = want.groupBy(*want.columns).agg(F.count(F.lit(1)).alias("_count"))
            counted = counted.persist(StorageLevel.MEMORY_AND_DISK)
            counted.count()  # computed now, not by the first comparison
            self._kept[(str(reference), table.name)] = counted

    def differences(self, *, repaired: Path, reference: Path, report: Any = print) -> list[str]:
        """Differences between the processed layers (empty: equal), row by row as multisets:
        one aggregation per table counts each distinct row on both sides (what `exceptAll`
        both ways tells, in one pass instead of three). The four tables are compared side by
        side (one thread each: while one table's files are listed and its plan is built in the
        driver, another's tasks use the cores); the lines are reported in table order."""
        from spark_jobs.sample.tables import PROCESSED_TABLES

        with ThreadPoolExecutor(max_workers=len(PROCESSED_TABLES), thread_name_prefix="demo-check") as pool:
            counts = list(
                pool.map(
                    lambda table: self._compare(table, repaired=repaired, reference=reference),
                    PROCESSED_TABLES,
                )
            )
        found = []
        for table, (missing, extra, rows) in zip(PROCESSED_TABLES, counts, strict=True):
            report(f"   {table.name}: {rows} rows in the clean run; missing {missing}, unexpected {extra}")
            if missing or extra or rows == 0:
                found.append(f"{table.name}: missing {missing}, unexpected {extra}, clean rows {rows}")
        return found

    def _compare(self, table: Any, *, repaired: Path, reference: Path) -> tuple[int, int, int]:
        """(rows missing from `repaired`, rows it has in surplus, rows of the reference)."""
        from pyspark.sql import functions as F

        from spark_jobs.engine.table_io import read_table

        got = read_table(spark=self.spark, warehouse=str(repaired), table=table)
        want = self._kept.get((str(reference), table.name))
        if want is None:
            raw = read_table(spark=self.spark, warehouse=str(reference), table=table)
            want = raw.select(*raw.columns, F.lit(1).alias("_count"))
        columns = [column for column in want.columns if column != "_count"]
        both = got.select(*columns, F.lit(1).alias("_got"), F.lit(0).alias("_clean")).unionByName(
            want.select(*columns, (-F.col("_count")).alias("_got"), F.col("_count").alias("_clean"))
        )
        per_row = both.groupBy(*columns).agg(F.sum("_got").alias("surplus"), F.sum("_clean").alias("clean"))
        totals = per_row.agg(
            F.sum(F.greatest(-F.col("surplus"), F.lit(0))).alias("missing"),
            F.sum(F.greatest(F.col("surplus"), F.lit(0))).alias("extra"),
            F.sum("clean").alias("rows"),
        ).first()
        missing, extra, rows = (int(totals[name] or 0) for name in ("missing", "extra", "rows"))
        return missing, extra, rows
