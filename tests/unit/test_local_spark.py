"""The local Spark tuning (backfill_local.local_spark): built once per environment, never over a
caller's own SPARK_CONF_DIR, and Spark's defaults (not a failure) when no `javac` is there."""

from __future__ import annotations

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
def test_the_conf_dir_names_the_compiled_file_system_and_is_built_once(cache: Path) -> None:
    environ: dict[str, str] = {}
    conf_dir = local_spark.use_local_spark_defaults(environ)
    assert conf_dir is not None and environ["SPARK_CONF_DIR"] == str(conf_dir)
    assert environ["SPARK_SUBMIT_OPTS"] == local_spark.JVM_OPTIONS
    lines = dict(line.split(" ", 1) for line in (conf_dir / "spark-defaults.conf").read_text().splitlines())
    assert lines["spark.hadoop.fs.file.impl"] == "backfill_local.NioLocalFileSystem"
    jar = Path(lines["spark.driver.extraClassPath"])
    assert jar.parent == cache
    with zipfile.ZipFile(jar) as archive:
        assert {
            "backfill_local/NioLocalFileSystem.class",
            "backfill_local/NioRawLocalFileSystem.class",
        } <= set(archive.namelist())
    built = jar.stat().st_mtime_ns
    assert local_spark.use_local_spark_defaults({}) == conf_dir  # the second call finds both
    assert jar.stat().st_mtime_ns == built
    assert sorted(path.name for path in cache.iterdir()) == sorted(
        [jar.name, conf_dir.name]
    )  # no scratch left


def test_without_javac_spark_keeps_its_own_file_system(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_spark.shutil, "which", lambda name: None)
    assert local_spark.local_spark_settings() == {}
    conf_dir = local_spark.spark_conf_dir()
    assert conf_dir is not None and (conf_dir / "spark-defaults.conf").read_text() == ""


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
