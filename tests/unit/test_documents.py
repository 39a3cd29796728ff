"""The one document store: every URI form, size limits, clear errors, atomic writes."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from backfill_orchestrator import documents
from backfill_orchestrator.documents import (
    DocumentAccessError,
    DocumentNotFoundError,
    DocumentTooLargeError,
    InvalidDocumentUriError,
)
from backfill_orchestrator.errors import ServiceError, UserError


def test_local_paths_and_file_uris_round_trip(tmp_path):
    target = tmp_path / "deep" / "report.json"
    documents.write_text(str(target), '{"ok": true}')
    assert documents.read_text(str(target)) == '{"ok": true}'
    assert documents.read_bytes(f"file://{target}") == b'{"ok": true}'
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]  # no temporary left behind
    assert documents.exists(str(target)) and not documents.exists(str(tmp_path / "nope.json"))
    documents.remove(str(target))
    documents.remove(str(target))  # absent: fine
    with pytest.raises(DocumentNotFoundError, match="no such file") as caught:
        documents.read_bytes(str(target))
    assert isinstance(caught.value, UserError)


def test_sibling_keeps_the_scheme_and_folder(tmp_path):
    assert (
        documents.sibling("s3://b/backfills/x/plan.json", "run_report.json")
        == "s3://b/backfills/x/run_report.json"
    )
    assert (
        documents.sibling("dbfs:/tmp/x/plan.json", "rounds/0/plan.json") == "dbfs:/tmp/x/rounds/0/plan.json"
    )
    assert documents.sibling(str(tmp_path / "plan.json"), "r.json") == str(tmp_path / "r.json")


def test_size_limit_reads_at_most_one_byte_more(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(DocumentTooLargeError, match="larger than 100 bytes"):
        documents.read_bytes(str(big), max_bytes=100)
    assert len(documents.read_bytes(str(big), max_bytes=100, over_limit="keep")) == 101


def test_directories_binary_and_unknown_schemes_are_clear(tmp_path):
    with pytest.raises(DocumentAccessError, match="is a directory"):
        documents.read_bytes(str(tmp_path))
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DocumentAccessError, match="not UTF-8"):
        documents.read_text(str(tmp_path / "bin"))
    with pytest.raises(InvalidDocumentUriError, match="unsupported scheme"):
        documents.read_bytes("gs://bucket/key")
    with pytest.raises(InvalidDocumentUriError, match="expected s3://bucket/key"):
        documents.read_bytes("s3://bucket/")


def test_dbfs_paths_go_through_the_mount(tmp_path, monkeypatch):
    monkeypatch.setenv("BACKFILL_DBFS_MOUNT", str(tmp_path))
    documents.write_text("dbfs:/FileStore/configs/a.yaml", "name: a\n")
    assert (tmp_path / "FileStore" / "configs" / "a.yaml").read_text() == "name: a\n"
    assert documents.read_text("dbfs:/FileStore/configs/a.yaml") == "name: a\n"
    assert documents.list_uris("dbfs:/FileStore/configs") == ["dbfs:/FileStore/configs/a.yaml"]
    monkeypatch.setenv("BACKFILL_DBFS_MOUNT", str(tmp_path / "absent"))
    with pytest.raises(InvalidDocumentUriError, match="mount, which this machine does not have"):
        documents.read_text("dbfs:/FileStore/configs/a.yaml")


def test_list_local_folder_recursively_sorted(tmp_path):
    for name in ("b/2.json", "a.json", "b/1.yaml"):
        documents.write_text(str(tmp_path / name), "{}")
    assert documents.list_uris(str(tmp_path)) == [
        f"{tmp_path}/a.json",
        f"{tmp_path}/b/1.yaml",
        f"{tmp_path}/b/2.json",
    ]
    assert documents.list_uris(str(tmp_path), suffix=".json") == [
        f"{tmp_path}/a.json",
        f"{tmp_path}/b/2.json",
    ]
    assert documents.list_uris(str(tmp_path / "missing")) == []


def test_s3_round_trip_list_and_errors(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="plans")
        documents.write_bytes("s3://plans/a/report.json", b'{"ok": true}', s3_client=s3)
        documents.write_bytes("s3://plans/a/empty.json", b"", s3_client=s3)
        assert documents.read_bytes("s3://plans/a/report.json", s3_client=s3) == b'{"ok": true}'
        assert documents.read_bytes("s3a://plans/a/report.json", s3_client=s3) == b'{"ok": true}'
        assert documents.read_bytes("s3://plans/a/empty.json", s3_client=s3) == b""
        assert documents.exists("s3://plans/a/report.json", s3_client=s3)
        assert not documents.exists("s3://plans/a/plan.json", s3_client=s3)
        assert documents.list_uris("s3://plans/a/", s3_client=s3) == [
            "s3://plans/a/empty.json",
            "s3://plans/a/report.json",
        ]
        with pytest.raises(DocumentTooLargeError):
            documents.read_bytes("s3://plans/a/report.json", max_bytes=4, s3_client=s3)
        with pytest.raises(DocumentNotFoundError, match="NoSuchKey"):
            documents.read_bytes("s3://plans/a/plan.json", s3_client=s3)
        with pytest.raises(DocumentAccessError, match="NoSuchBucket") as caught:
            documents.write_bytes("s3://nowhere/a/report.json", b"{}", s3_client=s3)
        assert isinstance(caught.value, ServiceError)
        documents.remove("s3://plans/a/report.json", s3_client=s3)
        assert not documents.exists("s3://plans/a/report.json", s3_client=s3)


def test_an_s3_uri_may_name_one_version_which_is_read_only(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="configs")
        s3.put_bucket_versioning(Bucket="configs", VersioningConfiguration={"Status": "Enabled"})
        key = "incoming/team a/odd?name.yaml"  # a '?' inside the key stays part of it
        first = s3.put_object(Bucket="configs", Key=key, Body=b"first")["VersionId"]
        s3.put_object(Bucket="configs", Key=key, Body=b"second")
        uri = documents.s3_version_uri("configs", key, first)
        assert uri == f"s3://configs/{key}?versionId={first}"
        assert documents.s3_object(uri) == ("configs", key, first)
        assert documents.s3_object(f"s3://configs/{key}") == ("configs", key, None)
        assert documents.read_text(uri, s3_client=s3) == "first"
        assert documents.read_text(f"s3://configs/{key}", s3_client=s3) == "second"
        assert documents.exists(uri, s3_client=s3)
        gone = documents.s3_version_uri("configs", key, "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY")
        assert not documents.exists(gone, s3_client=s3)
        with pytest.raises(DocumentNotFoundError):
            documents.read_bytes(gone, s3_client=s3)
        with pytest.raises(InvalidDocumentUriError, match="can only be read"):
            documents.write_bytes(uri, b"x", s3_client=s3)
        with pytest.raises(InvalidDocumentUriError, match="can only be read"):
            documents.remove(uri, s3_client=s3)
        with pytest.raises(InvalidDocumentUriError, match="not an S3 version id"):
            documents.s3_version_uri("configs", key, "a/b")
