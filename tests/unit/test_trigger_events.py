"""S3 notifications and S3 -> EventBridge events to uploads, and the trigger's S3 layout (moto,
in process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from backfill_orchestrator.contracts import ResultFile
from backfill_orchestrator.trigger import MalformedEventError, Upload, event_records, upload_from_record
from backfill_orchestrator.trigger.storage import ConfigGoneError, ConfigTooLargeError, TriggerStorage


def record(key: str = "incoming/a+b.yaml", **obj: object) -> dict:
    return {
        "eventSource": "aws:s3",
        "eventName": "ObjectCreated:Put",
        "s3": {"bucket": {"name": "configs"}, "object": {"key": key, "size": 10, "sequencer": "0A", **obj}},
    }


def test_a_record_becomes_an_upload_with_a_decoded_key() -> None:
    upload = upload_from_record(record("incoming/team%2Fa/my+config.yaml", versionId="v1", eTag="e"))
    assert upload == Upload("configs", "incoming/team/a/my config.yaml", 10, "v1", "0A", "e")
    assert upload.uri == "s3://configs/incoming/team/a/my config.yaml" and upload.extension == ".yaml"


def test_upload_identity_is_stable_per_event_and_new_per_upload() -> None:
    same = upload_from_record(record(versionId="v1")), upload_from_record(record(versionId="v1"))
    assert same[0].upload_id == same[1].upload_id
    assert upload_from_record(record(versionId="v2")).upload_id != same[0].upload_id
    # Unversioned bucket: the sequencer tells uploads apart.
    assert (
        upload_from_record(record(sequencer="0B")).upload_id
        != upload_from_record(record(sequencer="0C")).upload_id
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"eventSource": "aws:sqs"}, "not an S3 event"),
        ({**record(), "eventName": "ObjectRemoved:Delete"}, "not an ObjectCreated"),
        ({"eventSource": "aws:s3", "eventName": "ObjectCreated:Put", "s3": {}}, "without"),
        ("nope", "not an object"),
    ],
)
def test_malformed_records_are_named(bad: object, message: str) -> None:
    with pytest.raises(MalformedEventError, match=message):
        upload_from_record(bad)


def test_records_come_from_a_notification_or_a_dead_letter_destination_record() -> None:
    event = {"Records": [record()]}
    assert event_records(event) == event["Records"]
    assert event_records({"requestPayload": event, "responsePayload": {}}) == event["Records"]
    with pytest.raises(
        MalformedEventError, match=r"neither an S3 notification \(no Records list\) nor an EventBridge event"
    ):
        event_records({"hello": "world"})
    with pytest.raises(MalformedEventError, match="not an object"):
        event_records(["Records"])
    # S3's test event, sent when a notification is configured, announces nothing.
    assert event_records({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "configs"}) == []


def eventbridge(key: str = "incoming/a+b.yaml", **obj: object) -> dict:
    """An S3 -> EventBridge "Object Created" event (the shape of AWS's documented example)."""
    return {
        "version": "0",
        "id": "17793124-05d4-b198-2fde-7ededc63b103",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "123456789012",
        "time": "2021-06-14T09:30:00Z",
        "region": "us-east-1",
        "resources": ["arn:aws:s3:::configs"],
        "detail": {
            "version": "0",
            "bucket": {"name": "configs"},
            "object": {"key": key, "size": 10, "etag": "e", "sequencer": "0A", **obj},
            "request-id": "N4N7GDK58NMKJ12R",
            "requester": "123456789012",
            "reason": "PutObject",
        },
    }


def test_an_eventbridge_object_created_event_is_one_upload_like_its_notification() -> None:
    event = eventbridge("incoming/team%2Fa/my+config.yaml", **{"version-id": "v1"})
    (only,) = event_records(event)
    upload = upload_from_record(only)
    assert upload == Upload("configs", "incoming/team/a/my config.yaml", 10, "v1", "0A", "e")
    # The same upload announced by either route has the same identity (a switch of route
    # during a deployment does not trigger a backfill twice).
    notified = upload_from_record(record("incoming/team%2Fa/my+config.yaml", versionId="v1", eTag="e"))
    assert upload.upload_id == notified.upload_id
    assert event_records({"requestPayload": event}) == [event]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({**eventbridge(), "detail-type": "Object Deleted"}, "not an S3 'Object Created'"),
        ({**eventbridge(), "source": "aws.ec2"}, "source 'aws.ec2'"),
        ({**eventbridge(), "detail": {"bucket": {"name": "configs"}}}, "without 'object'"),
        (
            {**eventbridge(), "detail": {"bucket": {"name": ""}, "object": {"key": "k"}}},
            "without a bucket name",
        ),
    ],
)
def test_malformed_eventbridge_events_are_named(bad: dict, message: str) -> None:
    (only,) = event_records(bad)
    with pytest.raises(MalformedEventError, match=message):
        upload_from_record(only)


def test_a_malformed_event_is_a_deployment_fault_that_is_not_retried_as_such() -> None:
    from backfill_orchestrator.errors import ServiceError, category_of

    error = MalformedEventError("x")
    assert isinstance(error, ServiceError) and category_of(error) == "service"
    assert error.pages and not error.retryable


@pytest.fixture
def storage(monkeypatch: pytest.MonkeyPatch) -> Iterator[TriggerStorage]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="configs")
        s3.put_bucket_versioning(Bucket="configs", VersioningConfiguration={"Status": "Enabled"})
        yield TriggerStorage(
            s3_client=s3,
            bucket="configs",
            incoming_prefix="incoming/",
            results_prefix="results/",
            backfills_prefix="backfills/",
        )


def put(storage: TriggerStorage, key: str, body: bytes) -> Upload:
    response = storage.s3_client.put_object(Bucket="configs", Key=key, Body=body)
    return Upload("configs", key, len(body), response["VersionId"])


def test_reads_the_announced_version(storage: TriggerStorage) -> None:
    first = put(storage, "incoming/x.yaml", b"first")
    put(storage, "incoming/x.yaml", b"second")
    assert storage.read_upload(first, max_bytes=100) == b"first"


def test_an_oversized_object_is_refused_from_the_event_size_without_a_read(storage: TriggerStorage) -> None:
    upload = Upload("configs", "incoming/never-written.yaml", size=10_000)
    with pytest.raises(ConfigTooLargeError, match="10000 bytes; the limit is 100 bytes"):
        storage.read_upload(upload, max_bytes=100)


def test_an_event_understating_the_size_still_reads_at_most_the_limit(storage: TriggerStorage) -> None:
    upload = put(storage, "incoming/big.yaml", b"x" * 5000)
    with pytest.raises(ConfigTooLargeError, match="5000 bytes"):
        storage.read_upload(
            Upload(upload.bucket, upload.key, size=10, version_id=upload.version_id), max_bytes=100
        )


def test_deleted_object_and_empty_object(storage: TriggerStorage) -> None:
    with pytest.raises(ConfigGoneError):
        storage.read_upload(Upload("configs", "incoming/gone.yaml"), max_bytes=100)
    assert storage.read_upload(put(storage, "incoming/empty.yaml", b""), max_bytes=100) == b""


def test_only_configs_under_the_incoming_prefix_count(storage: TriggerStorage) -> None:
    assert storage.is_incoming_config(Upload("configs", "incoming/a/b.JSON"))
    for key in ("incoming/a.txt", "results/a.yaml", "incoming/dir.yaml/"):
        assert not storage.is_incoming_config(Upload("configs", key))
    assert not storage.is_incoming_config(Upload("other-bucket", "incoming/a.yaml"))


def test_results_mirror_the_incoming_path(storage: TriggerStorage) -> None:
    upload = Upload("configs", "incoming/team-a/x.yaml")
    result = ResultFile(
        source=upload.uri,
        outcome="rejected",
        backfill_id=None,
        state="REJECTED",
        status_id="rejected-0123",
        errors=[{"location": "dates[1].end", "message": "must not be before start"}],
        status_command="backfill status rejected-0123",
        written_at=datetime(2021, 6, 14, tzinfo=UTC),
    )
    uri = storage.write_result(upload, result)
    assert uri == storage.result_uri(upload) == "s3://configs/results/team-a/x.yaml.result.json"
    body = storage.s3_client.get_object(Bucket="configs", Key="results/team-a/x.yaml.result.json")[
        "Body"
    ].read()
    assert json.loads(body)["backfill_id"] is None  # shown, not left out: an invalid config has no id
    assert ResultFile.from_json(body, source=uri) == result
