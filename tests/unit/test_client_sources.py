"""Config sources as notebooks give them: dicts, text, and paths of every kind a notebook uses
(local, `~`, `/Volumes/...`, `dbfs:/`, `s3://`). A path that names nothing is "no such file",
never a YAML error about the path's own text."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
import yaml

from backfill_orchestrator import documents
from backfill_orchestrator.client import (
    ConfigFileNotFoundError,
    looks_like_path,
    prepare_config,
    validate_backfill,
)
from backfill_orchestrator.config import InvalidConfigError, backfill_id, parse_config
from backfill_orchestrator.errors import UserError
from tests.support.configs import EXAMPLES, VALID_BATCH

EXPECTED_ID = backfill_id(parse_config(VALID_BATCH))


@pytest.fixture
def dbfs(tmp_path, monkeypatch) -> Path:
    mount = tmp_path / "dbfs"
    (mount / "FileStore" / "backfills").mkdir(parents=True)
    monkeypatch.setenv("BACKFILL_DBFS_MOUNT", str(mount))
    return mount


@pytest.mark.parametrize(
    "text, expected",
    [
        ("/Volumes/main/ops/configs/orders.yaml", True),
        ("dbfs:/FileStore/backfills/orders.yaml", True),
        ("s3://acme-configs/orders.json", True),
        ("./orders.yml", True),
        ("~/orders.yaml", True),
        ("file:///tmp/orders.yaml", True),
        ("orders.JSON", True),
        ("https://example.com/orders", True),
        ("version: 1\nname: x\n", False),
        ('{"version": 1}', False),
        ("", False),
    ],
)
def test_what_looks_like_a_path(text, expected):
    assert looks_like_path(text) is expected


@pytest.mark.parametrize(
    "location",
    [
        "orders-outage-jun.yaml",
        "./configs/orders.yml",
        "/Volumes/main/ops/configs/no-such-config.yaml",
        "~/no-such-dir/x.json",
    ],
)
def test_a_mistyped_path_is_no_such_file_not_a_yaml_error(location, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigFileNotFoundError) as caught:
        validate_backfill(location)
    message = str(caught.value)
    assert message.startswith("no such file: ") and location.lstrip("~./")[:10] in message
    assert isinstance(caught.value, UserError) and isinstance(caught.value, documents.DocumentNotFoundError)


def test_an_unsupported_scheme_is_said_so():
    with pytest.raises(documents.InvalidDocumentUriError, match="unsupported scheme"):
        validate_backfill("https://example.com/orders")


def test_a_missing_path_object_is_no_such_file(tmp_path):
    with pytest.raises(ConfigFileNotFoundError, match=f"^no such file: {tmp_path}/gone.yaml$"):
        validate_backfill(tmp_path / "gone.yaml")


def test_local_path_string_and_path_object_and_home(tmp_path, monkeypatch):
    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump(VALID_BATCH))
    assert prepare_config(str(path)).backfill_id == EXPECTED_ID
    assert prepare_config(path).extension == ".yaml"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert prepare_config("~/orders.yaml").backfill_id == EXPECTED_ID


def test_a_volume_style_path_is_read_as_a_local_file(tmp_path):
    # On Databricks /Volumes/<catalog>/<schema>/<volume>/ is a local path; same code path here.
    volume = tmp_path / "Volumes" / "main" / "ops" / "configs"
    volume.mkdir(parents=True)
    (volume / "orders.json").write_text(json.dumps(VALID_BATCH))
    prepared = prepare_config(str(volume / "orders.json"))
    assert prepared.extension == ".json" and prepared.backfill_id == EXPECTED_ID


def test_dbfs_path_through_the_mount(dbfs):
    (dbfs / "FileStore" / "backfills" / "orders.yaml").write_text(yaml.safe_dump(VALID_BATCH))
    assert validate_backfill("dbfs:/FileStore/backfills/orders.yaml").name == VALID_BATCH["name"]
    with pytest.raises(
        ConfigFileNotFoundError, match="^no such file: dbfs:/FileStore/backfills/orderz.yaml$"
    ):
        validate_backfill("dbfs:/FileStore/backfills/orderz.yaml")


def test_dbfs_path_without_the_mount_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("BACKFILL_DBFS_MOUNT", str(tmp_path / "not-mounted"))
    with pytest.raises(documents.InvalidDocumentUriError, match="dbfs:/ paths are read through"):
        validate_backfill("dbfs:/FileStore/orders.yaml")


def test_s3_path(mocked_aws):
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="configs")
    s3.put_object(Bucket="configs", Key="team/orders.yaml", Body=yaml.safe_dump(VALID_BATCH).encode())
    assert prepare_config("s3://configs/team/orders.yaml", s3_client=s3).backfill_id == EXPECTED_ID
    session = boto3.Session(region_name="us-east-1")
    assert prepare_config("s3://configs/team/orders.yaml", session=session).backfill_id == EXPECTED_ID
    with pytest.raises(ConfigFileNotFoundError, match="^no such file: s3://configs/team/orderz.yaml$"):
        validate_backfill("s3://configs/team/orderz.yaml", s3_client=s3)


def test_an_invalid_file_is_located_under_its_path(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**VALID_BATCH, "hours": [25]}))
    with pytest.raises(InvalidConfigError) as caught:
        validate_backfill(str(path))
    assert caught.value.source == str(path) and [i.location for i in caught.value.issues] == ["hours[0]"]


def test_text_and_dict_sources_still_work():
    assert prepare_config(VALID_BATCH).extension == ".json"
    assert prepare_config(yaml.safe_dump(VALID_BATCH)).backfill_id == EXPECTED_ID
    assert prepare_config(json.dumps(VALID_BATCH)).extension == ".json"
    assert prepare_config((EXAMPLES / "minimal-batch.yaml").read_bytes()).extension == ".yaml"
