"""spark_start benchmark: a small Spark job through `spark-submit` with Spark's classes from the
local tuning's class data sharing archive, beside the same job loading them from the jars.

Both run with the rest of the local tuning alike (backfill_local.local_spark: the in-process
local file system, the serial collector, C1 only); the baseline's `SPARK_SUBMIT_OPTS` lacks
only `-XX:SharedArchiveFile`. The job is not the archive's training job: it generates 20,000
rows, writes them partitioned by day as Parquet, reads two days back and aggregates, as a
backfill step does on the demo's sample. The two alternate, ROUNDS each, so both see the
machine alike. CPU is the job's whole process tree (the JVM, its Python driver, Spark's
launcher), from the children's rusage; the figures are medians. The archive itself is dumped
before the first round when this environment has none (about 30 s, once).

    .venv/bin/python benchmarks/spark_start.py

The last line:

    BENCH spark_start cpu_s=... baseline_cpu_s=... cpu_saved=... wall_s=... baseline_wall_s=...
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from backfill_local.local_spark import use_local_spark_defaults

ROUNDS = 5
JOB = """
import sys
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.master("local[2]").appName("spark-start-bench").config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate()
rows = spark.range(20000).withColumn("day", F.date_format(F.date_add(F.lit("2026-06-01").cast("date"), (F.col("id") % 5).cast("int")), "yyyy-MM-dd")).withColumn("amount", F.col("id") * 2)
rows.write.mode("overwrite").partitionBy("day").parquet(sys.argv[1])
read = spark.read.parquet(sys.argv[1]).where(F.col("day").isin("2026-06-02", "2026-06-04"))
total = read.groupBy("day").agg(F.sum("amount").alias("amount"), F.count(F.lit(1)).alias("rows")).orderBy("day").collect()
assert [row.rows for row in total] == [4000, 4000], total
spark.stop()
"""


def run(environ: dict[str, str], job: Path, table: Path) -> tuple[float, float]:
    """One job: its wall seconds and its process tree's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [str(Path(sys.prefix) / "bin" / "spark-submit"), str(job), str(table)],
        env=environ,
        check=True,
        capture_output=True,
        timeout=600,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ours = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    for name in ("SPARK_CONF_DIR", "SPARK_SUBMIT_OPTS", "SPARK_DIST_CLASSPATH"):
        ours.pop(name, None)
    use_local_spark_defaults(ours)
    archive = re.search(r" -XX:SharedArchiveFile=\S+", ours["SPARK_SUBMIT_OPTS"])
    if archive is None:
        raise SystemExit(f"no class archive in this environment: {ours['SPARK_SUBMIT_OPTS']}")
    baseline = {**ours, "SPARK_SUBMIT_OPTS": ours["SPARK_SUBMIT_OPTS"].replace(archive.group(0), "")}
    print(f"archive: {archive.group(0).split('=', 1)[1]}")
    with tempfile.TemporaryDirectory(prefix="spark-start-bench-") as scratch:
        job = Path(scratch) / "job.py"
        job.write_text(JOB)
        timings: dict[str, list[tuple[float, float]]] = {"archive": [], "baseline": []}
        for index in range(ROUNDS):
            for label, environ in (("archive", ours), ("baseline", baseline)):
                wall, cpu = run(environ, job, Path(scratch) / f"{label}-{index}")
                timings[label].append((wall, cpu))
                print(
                    f"round {index + 1} {label:8s} wall {wall:5.1f} s  cpu {cpu:5.1f} s  load {os.getloadavg()[0]:.1f}"
                )
    wall_s, cpu_s = (statistics.median(values) for values in zip(*timings["archive"], strict=True))
    base_wall_s, base_cpu_s = (statistics.median(values) for values in zip(*timings["baseline"], strict=True))
    print(
        f"BENCH spark_start cpu_s={cpu_s:.1f} baseline_cpu_s={base_cpu_s:.1f} "
        f"cpu_saved={1 - cpu_s / base_cpu_s:.2f} wall_s={wall_s:.1f} baseline_wall_s={base_wall_s:.1f}"
    )


if __name__ == "__main__":
    main()
