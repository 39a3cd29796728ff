"""The local Spark tuning (backfill_local.local_spark): built once per environment, never over a
caller's own SPARK_CONF_DIR, and Spark's defaults (not a failure) when no `javac` is there."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest

from backfill_local import local_spark


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(local_spark, "_cache", lambda: tmp_path / "cache")
    return tmp_path / "cache"


def test_a_callers_own_spark_conf_dir_and_jvm_options_are_kept(cache: Path) -> None:
    environ = {"SPARK_CONF_DIR": "/etc/spark/conf", "SPARK_SUBMIT_OPTS": "-Xmx2g"}
    assert local_spark.use_local_spark_defaults(environ) is None
    assert environ == {"SPARK_CONF_DIR": "/etc/spark/conf", "SPARK_SUBMIT_OPTS": "-Xmx2g"}
    assert not cache.exists()


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK's javac")
def test_the_environment_names_the_compiled_file_system_and_the_class_archive(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = cache / "spark-classes-test.jsa"
    seen: list[dict[str, str]] = []
    monkeypatch.setattr(local_spark, "class_archive", lambda environ: seen.append(dict(environ)) or archive)
    environ = {"SPARK_SUBMIT_OPTS": "-Xmx2g", "SPARK_DIST_CLASSPATH": "/opt/extra.jar"}
    conf_dir = local_spark.use_local_spark_defaults(environ)

    assert conf_dir is not None and environ["SPARK_CONF_DIR"] == str(conf_dir)
    assert list(conf_dir.iterdir()) == []  # the JVM maps no class from a class path directory with files
    jar = Path(environ["SPARK_DIST_CLASSPATH"].split(":")[0])
    assert environ["SPARK_DIST_CLASSPATH"] == f"{jar}:/opt/extra.jar"  # ours first: the archive's prefix
    assert jar.parent == cache
    with zipfile.ZipFile(jar) as jar_file:
        assert {
            "backfill_local/NioLocalFileSystem.class",
            "backfill_local/NioRawLocalFileSystem.class",
        } <= set(jar_file.namelist())
    ours = [
        local_spark.JVM_OPTIONS,
        local_spark.JVM_LOG_OPTIONS,
        "-Dspark.sql.sources.parallelPartitionDiscovery.threshold=2147483647",
        "-Dspark.hadoop.fs.file.impl=backfill_local.NioLocalFileSystem",
    ]
    # the caller's options last (the JVM takes the last of an option); the archive is dumped
    # for the JVMs of exactly this environment, less the option that names it
    assert environ["SPARK_SUBMIT_OPTS"] == " ".join([*ours, f"-XX:SharedArchiveFile={archive}", "-Xmx2g"])
    assert seen == [{**environ, "SPARK_SUBMIT_OPTS": " ".join([*ours, "-Xmx2g"])}]

    built = jar.stat().st_mtime_ns
    again = dict(environ)
    assert local_spark.use_local_spark_defaults(again) is None  # a child process sees it set: kept
    assert again == environ
    assert local_spark.use_local_spark_defaults({}) == conf_dir
    assert jar.stat().st_mtime_ns == built
    assert sorted(path.name for path in cache.iterdir()) == sorted(
        [jar.name, conf_dir.name]
    )  # no scratch left


def test_without_javac_spark_keeps_its_own_file_system(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_spark.shutil, "which", lambda name, path=None: None)
    monkeypatch.setattr(local_spark, "class_archive", lambda environ: None)
    environ: dict[str, str] = {}
    conf_dir = local_spark.use_local_spark_defaults(environ)
    assert conf_dir is not None and list(conf_dir.iterdir()) == []
    assert environ == {
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_SUBMIT_OPTS": f"{local_spark.JVM_OPTIONS} {local_spark.JVM_LOG_OPTIONS}"
        " -Dspark.sql.sources.parallelPartitionDiscovery.threshold=2147483647",
    }


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK's javac")
def test_a_source_that_does_not_compile_leaves_no_jar(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "java"
    broken.mkdir()
    (broken / "Broken.java").write_text("class Broken { not java }")
    monkeypatch.setattr(local_spark, "JAVA_SOURCES", broken)
    assert local_spark.local_fs_jar() is None
    assert list(cache.iterdir()) == []  # the scratch directory is gone too


# A stand-in for PySpark's `bin/spark-submit`: dumps "classes" where -XX:ArchiveClassesAtExit
# says, as the JVM does at its exit, or exits FAKE_EXIT / sleeps FAKE_SLEEP; counts its runs.
FAKE_SPARK_SUBMIT = """#!/bin/sh
echo run >> "$(dirname "$0")/../runs"
for option in $SPARK_SUBMIT_OPTS; do
  case "$option" in -XX:ArchiveClassesAtExit=*) target="${option#-XX:ArchiveClassesAtExit=}";; esac
done
if [ -n "$FAKE_SLEEP" ]; then exec sleep "$FAKE_SLEEP"; fi
if [ -n "$FAKE_EXIT" ]; then echo "the JVM refused: $FAKE_EXIT" >&2; exit "$FAKE_EXIT"; fi
echo classes > "$target"
"""


@pytest.fixture
def spark_home(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "pyspark"
    (home / "bin").mkdir(parents=True)
    (home / "jars").mkdir()
    (home / "jars" / "spark-core.jar").write_bytes(b"jar")
    (home / "bin" / "spark-submit").write_text(FAKE_SPARK_SUBMIT)
    (home / "bin" / "spark-submit").chmod(0o755)
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "lib").mkdir()
    (jdk / "bin" / "java").write_text("")
    (jdk / "lib" / "modules").write_bytes(b"modules")
    monkeypatch.setattr(local_spark, "_spark_home", lambda: home)
    return home


def _environ(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "JAVA_HOME": str(tmp_path / "jdk"),
        "SPARK_SUBMIT_OPTS": "-Xmx1g",
        **extra,
    }


def _runs(spark_home: Path) -> int:
    runs = spark_home / "runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def test_the_class_archive_is_dumped_once_and_again_when_a_jar_changes(
    spark_home: Path, cache: Path, tmp_path: Path
) -> None:
    archive = local_spark.class_archive(_environ(tmp_path))
    assert archive is not None and archive.parent == cache and archive.read_text() == "classes\n"
    assert local_spark.class_archive(_environ(tmp_path)) == archive
    assert _runs(spark_home) == 1
    assert local_spark.class_archive(_environ(tmp_path, SPARK_SUBMIT_OPTS="-Xmx2g")) != archive

    (spark_home / "jars" / "spark-core.jar").write_bytes(b"another build")  # what the JVM would refuse
    renewed = local_spark.class_archive(_environ(tmp_path))
    assert renewed is not None and renewed != archive and _runs(spark_home) == 3
    assert {path.suffix for path in cache.iterdir()} == {".jsa"}  # no scratch left


def test_a_jvm_that_cannot_dump_is_not_asked_again(spark_home: Path, cache: Path, tmp_path: Path) -> None:
    assert local_spark.class_archive(_environ(tmp_path, FAKE_EXIT="3")) is None
    (refused,) = cache.glob("*.refused")
    assert refused.read_text().startswith("exit 3\n") and "the JVM refused: 3" in refused.read_text()
    assert local_spark.class_archive(_environ(tmp_path, FAKE_EXIT="3")) is None
    assert _runs(spark_home) == 1


def test_a_training_job_past_its_time_is_tried_again_next_time(
    spark_home: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_spark, "ARCHIVE_BUILD_TIMEOUT_S", 0.5)
    assert local_spark.class_archive(_environ(tmp_path, FAKE_SLEEP="30")) is None
    assert list(cache.iterdir()) == []
    assert local_spark.class_archive(_environ(tmp_path)) is not None
    assert _runs(spark_home) == 2


def test_a_jdk_without_a_class_image_where_expected_still_gets_an_archive(
    spark_home: Path, cache: Path, tmp_path: Path
) -> None:
    (tmp_path / "jdk" / "lib" / "modules").unlink()
    assert local_spark.class_archive(_environ(tmp_path)) is not None
