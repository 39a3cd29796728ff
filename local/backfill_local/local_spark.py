"""Spark tuned for small local runs (the demo, the tests): one `spark-defaults.conf` that every
JVM of the run reads through SPARK_CONF_DIR, whoever starts it (a PySpark session, an Airflow
task's `spark-submit`, the backfill job run as a file), and JVM options in SPARK_SUBMIT_OPTS.

- **File writes without a `chmod` process each.** pip's PySpark ships no Hadoop native library,
  so Hadoop's local file system forks `chmod` for every file and directory a write creates:
  about half of a small partitioned write's CPU (the sample warehouse's generate and clean run:
  31 -> 17 CPU-s). `backfill_local.NioLocalFileSystem` (java/, compiled once per Python
  environment with the JDK's `javac`) sets the same bits in-process. Without `javac` the
  settings leave it out and Spark runs as before, only slower.
- **The serial collector and the C1 compiler alone**: a JVM that lives seconds to minutes on
  kilobytes of data takes 30-40% less CPU than with the defaults (measured on the same build).

Production Spark (EMR, EMR Serverless, Databricks) writes to S3 and never reads this.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator, MutableMapping
from pathlib import Path

from backfill_local import cache_dir as _cache

logger = logging.getLogger(__name__)

LOCAL_FS_CLASS = "backfill_local.NioLocalFileSystem"
JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
JAVA_SOURCES = Path(__file__).with_name("java")


def use_local_spark_defaults(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Point SPARK_CONF_DIR (and SPARK_SUBMIT_OPTS) of this process and its children at the local
    tuning, unless the caller set them already; the conf directory, or None if it was set."""
    environ.setdefault("SPARK_SUBMIT_OPTS", JVM_OPTIONS)
    if environ.get("SPARK_CONF_DIR"):
        return None
    conf_dir = spark_conf_dir()
    if conf_dir is not None:
        environ["SPARK_CONF_DIR"] = str(conf_dir)
    return conf_dir


def spark_conf_dir() -> Path | None:
    """A directory with the `spark-defaults.conf` of `local_spark_settings()`, made once per
    Python environment and content; None when none can be written."""
    settings = local_spark_settings()
    text = "".join(f"{key} {value}\n" for key, value in sorted(settings.items()))
    directory = _cache() / f"spark-conf-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if (directory / "spark-defaults.conf").exists():
        return directory
    try:
        with _scratch(beside=directory) as scratch:
            (scratch / "conf").mkdir()
            (scratch / "conf" / "spark-defaults.conf").write_text(text)
            with contextlib.suppress(OSError):  # a concurrent builder renamed first: its copy is the same
                (scratch / "conf").rename(directory)
    except OSError as error:
        logger.warning("no local spark-defaults.conf (%s): Spark runs with its defaults", error)
        return None
    return directory


def local_spark_settings() -> dict[str, str]:
    jar = local_fs_jar()
    if jar is None:
        return {}
    return {"spark.driver.extraClassPath": str(jar), "spark.hadoop.fs.file.impl": LOCAL_FS_CLASS}


def local_fs_jar() -> Path | None:
    """The compiled `backfill_local.NioLocalFileSystem`, or None (no `javac`, no PySpark)."""
    hadoop_api = _hadoop_client_api()
    javac = shutil.which("javac")
    if hadoop_api is None or javac is None:
        logger.warning("javac or PySpark's hadoop-client-api jar not found: Hadoop forks chmod per file")
        return None
    sources = sorted(JAVA_SOURCES.rglob("*.java"))
    digest = hashlib.sha256(hadoop_api.name.encode())
    for source in sources:
        digest.update(source.read_bytes())
    jar = _cache() / f"local-fs-{digest.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    try:
        with _scratch(beside=jar) as scratch:
            classes = scratch / "classes"
            compiled = subprocess.run(
                [
                    javac,
                    "--release",
                    "17",
                    "-nowarn",
                    "-d",
                    str(classes),
                    "-cp",
                    str(hadoop_api),
                    *map(str, sources),
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )
            if compiled.returncode != 0:
                raise OSError(f"javac exit {compiled.returncode}: {compiled.stderr[-1000:]}")
            with zipfile.ZipFile(scratch / jar.name, "w") as archive:  # a jar is a zip; no manifest needed
                for path in sorted(classes.rglob("*.class")):
                    archive.write(path, path.relative_to(classes).as_posix())
            os.replace(scratch / jar.name, jar)  # atomic: a concurrent reader sees a whole jar or none
    except (OSError, subprocess.SubprocessError) as error:
        logger.warning("could not build %s (%s): Hadoop forks chmod per file", jar.name, error)
        return jar if jar.exists() else None
    return jar


def _hadoop_client_api() -> Path | None:
    spec = importlib.util.find_spec("pyspark")  # finds the package without importing it
    if spec is None or spec.origin is None:
        return None
    return next(iter(sorted((Path(spec.origin).parent / "jars").glob("hadoop-client-api-*.jar"))), None)


@contextlib.contextmanager
def _scratch(*, beside: Path) -> Iterator[Path]:
    """A private directory beside `beside` (same file system: renames out of it are atomic),
    removed afterwards. Concurrent builders (pytest-xdist workers) each build in their own."""
    beside.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{beside.name}.", dir=beside.parent))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
