"""Spark tuned for small local runs (the demo, the tests): environment variables that every
Spark JVM of the run inherits, whoever starts it (a PySpark session, an Airflow task's
`spark-submit`, the backfill job run as a file).

- **File writes without a `chmod` process each.** pip's PySpark ships no Hadoop native library,
  so Hadoop's local file system forks `chmod` for every file and directory a write creates:
  about half of a small partitioned write's CPU (the sample warehouse's generate and clean run:
  31 -> 17 CPU-s). `backfill_local.NioLocalFileSystem` (java/, compiled once per Python
  environment with the JDK's `javac`) sets the same bits in-process: on the class path through
  SPARK_DIST_CLASSPATH, named by `spark.hadoop.fs.file.impl` (a `-D` system property, which
  SparkConf reads). Without `javac` Spark runs with Hadoop's own, only slower.
- **The serial collector and the C1 compiler alone**: a JVM that lives seconds to minutes on
  kilobytes of data takes 30-40% less CPU than with the defaults (measured on the same build).
  C1 alone shrinks the JDK's default code cache from 240 to 48 MB, which a session running many
  queries fills with the classes Spark generates for them: the JVM then sweeps its code cache
  over and over and compiles the same methods again. So the cache keeps the default size (the
  address space is reserved, memory is used only as code fills it): the Spark tests' session
  took 14-17% less CPU (593 and 574 -> 493 and 509 CPU-s; the sweeper thread 40 -> 0 s, the
  compiler 57 -> 27 s).
- **Spark's classes from a class data sharing archive** (`-XX:SharedArchiveFile`): a JVM
  maps the classes parsed and verified once instead of loading them from 280 jars, and a small
  job takes about 40% less CPU (10.4 -> 6.4 s). The archive is dumped once per environment by a
  training job (`spark_class_training.py`) and named by a digest of the JDK, PySpark's jars and
  the JVM options; a JVM whose class path does not match it warns on stderr and loads classes
  as usual. The JDK maps nothing from a class path directory that holds files, so
  SPARK_CONF_DIR (always on the class path) is an empty directory and the settings travel in
  SPARK_SUBMIT_OPTS and SPARK_DIST_CLASSPATH instead of a `spark-defaults.conf`.

Production Spark (EMR, EMR Serverless, Databricks) writes to S3 and never reads this.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path

from backfill_local import cache_dir as _cache

logger = logging.getLogger(__name__)

LOCAL_FS_CLASS = "backfill_local.NioLocalFileSystem"
JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
# The JVM's own warnings (an archive it cannot use) to stderr: a job's stdout stays its own.
JVM_LOG_OPTIONS = "-Xlog:disable -Xlog:all=warning:stderr"
# Spark settings of every local JVM, as `-Dspark.*` system properties (SparkConf's defaults; a
# session's own settings win). Above 32 paths (a partitioned table's directories) Spark lists
# them in a job of one task per path; in local mode those tasks run in this same JVM, and each
# deserializes the whole Hadoop configuration (about 1,100 properties) to list one directory.
LOCAL_SPARK_SETTINGS = {"spark.sql.sources.parallelPartitionDiscovery.threshold": str(2**31 - 1)}
JAVA_SOURCES = Path(__file__).with_name("java")
TRAINING_JOB = Path(__file__).with_name("spark_class_training.py")
ARCHIVE_BUILD_TIMEOUT_S = 900  # a training job of ~30 s on an idle machine, minutes on a loaded one


def use_local_spark_defaults(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Set SPARK_CONF_DIR, SPARK_SUBMIT_OPTS and SPARK_DIST_CLASSPATH of this process and its
    children to the local tuning, unless the caller set SPARK_CONF_DIR already (then only the
    JVM options, if it set none); the conf directory, or None if it was set. The caller's own
    JVM options and class path entries come after ours (the JVM takes the last of an option)."""
    if environ.get("SPARK_CONF_DIR"):
        environ.setdefault("SPARK_SUBMIT_OPTS", JVM_OPTIONS)
        return None
    conf_dir = _empty_dir("spark-conf-empty")
    jar = local_fs_jar()
    archive = class_archive({**environ, **_tuning(conf_dir, jar, archive=None, environ=environ)})
    environ.update(_tuning(conf_dir, jar, archive=archive, environ=environ))
    return conf_dir


def _tuning(
    conf_dir: Path, jar: Path | None, *, archive: Path | None, environ: Mapping[str, str]
) -> dict[str, str]:
    options = [
        JVM_OPTIONS,
        JVM_LOG_OPTIONS,
        *(f"-D{key}={value}" for key, value in LOCAL_SPARK_SETTINGS.items()),
    ]
    class_path = [environ.get("SPARK_DIST_CLASSPATH", "")]
    if jar is not None:
        options.append(f"-Dspark.hadoop.fs.file.impl={LOCAL_FS_CLASS}")
        class_path.insert(0, str(jar))  # first: the archive's class path is a prefix of the JVM's
    if archive is not None:
        options.append(f"-XX:SharedArchiveFile={shlex.quote(str(archive))}")
    options.append(environ.get("SPARK_SUBMIT_OPTS", ""))
    tuning = {"SPARK_CONF_DIR": str(conf_dir), "SPARK_SUBMIT_OPTS": " ".join(filter(None, options))}
    if any(class_path):
        tuning["SPARK_DIST_CLASSPATH"] = os.pathsep.join(filter(None, class_path))
    return tuning


def class_archive(environ: Mapping[str, str]) -> Path | None:
    """The class data sharing archive for the Spark JVMs started with `environ`, dumped once by
    a training job when missing; None when there is none to use (no PySpark or `java`, or the
    JVM could not dump one: then the marker beside it says why and no later run tries again)."""
    spark_home, java = _spark_home(), _java(environ)
    if spark_home is None or java is None:
        return None
    digest = hashlib.sha256(TRAINING_JOB.read_bytes())
    modules = java.parents[1] / "lib" / "modules"  # the JDK's class image: new with every JDK build
    for part in (
        str(java),
        *_identity(modules),
        *(environ.get(name, "") for name in ("SPARK_CONF_DIR", "SPARK_DIST_CLASSPATH", "SPARK_SUBMIT_OPTS")),
        *(item for path in sorted((spark_home / "jars").glob("*.jar")) for item in _identity(path)),
    ):
        digest.update(part.encode() + b"\0")
    archive = _cache() / f"spark-classes-{digest.hexdigest()[:16]}.jsa"
    refused = archive.with_suffix(".refused")
    if archive.exists():
        return archive
    if refused.exists():
        return None
    logger.info("dumping the local Spark JVMs' class archive %s (once per environment)", archive.name)
    try:
        with _scratch(beside=archive) as scratch:
            dumped = scratch / archive.name
            training = {
                **environ,
                "SPARK_SUBMIT_OPTS": f"{environ.get('SPARK_SUBMIT_OPTS', '')} "
                f"-XX:ArchiveClassesAtExit={shlex.quote(str(dumped))}",
                "PYSPARK_PYTHON": environ.get("PYSPARK_PYTHON", sys.executable),
            }
            run = subprocess.run(
                [str(spark_home / "bin" / "spark-submit"), str(TRAINING_JOB), str(scratch / "tables")],
                cwd=scratch,
                env=training,
                capture_output=True,
                text=True,
                check=False,
                timeout=ARCHIVE_BUILD_TIMEOUT_S,
            )
            if run.returncode != 0 or not dumped.exists():
                refused.write_text(f"exit {run.returncode}\n{run.stderr[-4000:]}")
                raise OSError(f"the training job exited {run.returncode}: {run.stderr[-500:]}")
            os.replace(dumped, archive)  # atomic: a concurrent reader sees a whole archive or none
    except (OSError, subprocess.SubprocessError) as error:  # a timeout is tried again next time
        logger.warning("no class archive for local Spark (%s): its JVMs load every class", error)
        return None
    return archive


def _identity(path: Path) -> tuple[str, str, str]:
    """What the JVM checks of a file the archive came from: the archive is stale when it moves."""
    try:
        stat = path.stat()
    except OSError:  # a JDK laid out otherwise: named by its path alone
        return str(path), "", ""
    return str(path), str(stat.st_size), str(stat.st_mtime_ns)


def _spark_home() -> Path | None:
    spec = importlib.util.find_spec("pyspark")  # finds the package without importing it
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def _java(environ: Mapping[str, str]) -> Path | None:
    """The `java` Spark's launcher runs (bin/spark-class: JAVA_HOME's, else the one on PATH)."""
    java_home = environ.get("JAVA_HOME")
    found = (
        str(Path(java_home, "bin", "java")) if java_home else shutil.which("java", path=environ.get("PATH"))
    )
    return Path(found).resolve() if found and Path(found).exists() else None


def _empty_dir(name: str) -> Path:
    directory = _cache() / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory


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
    spark_home = _spark_home()
    if spark_home is None:
        return None
    return next(iter(sorted((spark_home / "jars").glob("hadoop-client-api-*.jar"))), None)


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
