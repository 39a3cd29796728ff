"""The local Spark tuning (backfill_local.local_spark) in the tests' own JVM: writes go through
backfill_local.NioLocalFileSystem (the same permission bits as Hadoop's own local file system,
set in-process instead of by `chmod`), Spark's classes come from the class archive, and a
table's partition directories are listed without a Spark job."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def test_a_partitioned_write_goes_through_it_with_hadoops_default_permissions(
    spark: SparkSession, tmp_path: Path
) -> None:
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    table = tmp_path / "table"
    fs = jvm.org.apache.hadoop.fs.Path(f"file://{table}").getFileSystem(conf)
    assert fs.getClass().getName() == "backfill_local.NioLocalFileSystem"
    assert fs.getRawFileSystem().getClass().getName() == "backfill_local.NioRawLocalFileSystem"

    spark.range(6).withColumn("day", F.col("id") % 3).repartition("day").write.partitionBy("day").parquet(
        str(table)
    )

    umask = jvm.org.apache.hadoop.fs.permission.FsPermission.getUMask(conf).toShort()
    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask  # Hadoop's defaults under its umask
    files = [path for path in table.rglob("*") if path.is_file()]
    assert len([path for path in files if path.suffix == ".parquet"]) == 3
    assert {stat.S_IMODE(os.stat(path).st_mode) for path in files} == {file_mode}
    assert {stat.S_IMODE(os.stat(path).st_mode) for path in [table, *table.glob("day=*")]} == {dir_mode}


def test_set_permission_sets_exactly_the_bits_asked_for(spark: SparkSession, tmp_path: Path) -> None:
    jvm = spark.sparkContext._jvm
    target = tmp_path / "file"
    target.write_text("x")
    path = jvm.org.apache.hadoop.fs.Path(f"file://{target}")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    for mode in ("640", "755", "400", "007"):
        fs.setPermission(path, jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
        assert stat.S_IMODE(os.stat(target).st_mode) == int(mode, 8), mode
        assert (
            fs.getFileStatus(path).getPermission().toString()
            == jvm.org.apache.hadoop.fs.permission.FsPermission(mode).toString()
        )


def test_the_jvm_maps_sparks_classes_from_the_archive(spark: SparkSession) -> None:
    named = re.search(r"-XX:SharedArchiveFile=(\S+)", os.environ["SPARK_SUBMIT_OPTS"])
    assert named is not None, os.environ["SPARK_SUBMIT_OPTS"]
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    mapped = {
        line.split()[-1]
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
        if line.endswith(".jsa")
    }
    assert named.group(1) in mapped  # a JVM that cannot use the archive unmaps it and warns


def test_a_table_of_many_partitions_is_listed_without_a_spark_job(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark lists more than 32 paths in a job of one task per path unless told otherwise; in
    the tests' and the local runs' JVM each task deserializes the whole Hadoop configuration."""
    table = tmp_path / "table"
    spark.range(40).withColumn("hour", F.col("id")).write.partitionBy("hour").parquet(str(table))
    paths = sorted(str(path) for path in table.glob("hour=*"))
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("listing", "reading 40 partition paths")
    try:
        reader = spark.read.schema("id LONG, hour INT").option("basePath", str(table))  # no footer job
        files = reader.parquet(*paths).inputFiles()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert len(paths) == 40 and len(files) == 40
    assert list(tracker.getJobIdsForGroup("listing")) == []
