"""Reading the archive: listing (paginated), plain and gzip JSON lines, positions, problems
reported rather than dropped, and resuming from a checkpoint. S3 is moto in-process."""

from __future__ import annotations

import gzip
import io
import json

import boto3
import pytest

from backfill_orchestrator.replay.archive import (
    ArchiveReadError,
    Position,
    _raw_lines,
    list_archive_keys,
    read_archive,
)

BUCKET = "archive"


@pytest.fixture
def s3(mocked_aws):
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def read_all(s3, prefix, **kwargs):
    keys = list_archive_keys(s3, bucket=BUCKET, prefix=prefix)
    return list(
        read_archive(
            s3, bucket=BUCKET, keys=keys, max_line_bytes=kwargs.pop("max_line_bytes", 1024), **kwargs
        )
    )


def test_plain_and_gzip_objects_in_key_order(s3):
    s3.put_object(Bucket=BUCKET, Key="orders/h/b.jsonl.gz", Body=gzip.compress(b'{"n": 3}\n{"n": 4}\n'))
    s3.put_object(
        Bucket=BUCKET, Key="orders/h/a.jsonl", Body=b'{"n": 1}\r\n\n  \n{"n": 2}'
    )  # CRLF, blanks, no final newline
    s3.put_object(Bucket=BUCKET, Key="orders/h/c.json", Body=gzip.compress(b'{"n": 5}\n'))  # gzip without .gz
    s3.put_object(Bucket=BUCKET, Key="orders/h/", Body=b"")  # a folder marker
    s3.put_object(Bucket=BUCKET, Key="orders/other/x.jsonl", Body=b'{"n": 99}\n')
    messages = read_all(s3, "orders/h/")
    assert [json.loads(m.body)["n"] for m in messages] == [1, 2, 3, 4, 5]
    assert [m.position for m in messages][:2] == [
        Position("orders/h/a.jsonl", 1),
        Position("orders/h/a.jsonl", 4),
    ]
    assert messages[0].body == '{"n": 1}'  # sent as archived, without the line ending


def test_unsendable_lines_are_reported_with_their_position(s3):
    long_line = json.dumps({"pad": "x" * 5000}).encode()
    body = b"\n".join(
        [b'{"ok": 1}', b"not json", b'{"bad": "\xff"}', long_line, b'"\xef\xbf\xbe"', b'{"ok": 2}']
    )
    s3.put_object(Bucket=BUCKET, Key="f/1.jsonl", Body=body)
    messages = read_all(s3, "f/", max_line_bytes=1024)
    problems = {m.position.line: m.problem.split(":")[0] for m in messages if m.problem}
    assert problems == {2: "invalid_json", 3: "invalid_utf8", 4: "too_big", 5: "invalid_characters"}
    assert [m.body for m in messages if m.body] == ['{"ok": 1}', '{"ok": 2}']


def test_resume_skips_what_the_checkpoint_resolved(s3):
    for name in ("a", "b", "c"):
        s3.put_object(Bucket=BUCKET, Key=f"f/{name}", Body=b"".join(b'{"i": %d}\n' % i for i in range(1, 4)))
    resumed = read_all(s3, "f/", resume_from=Position("f/b", 3))
    assert [(m.position.key, m.position.line) for m in resumed] == [
        ("f/b", 3),
        ("f/c", 1),
        ("f/c", 2),
        ("f/c", 3),
    ]


def test_listing_follows_every_page(s3):
    calls = []
    s3.meta.events.register("after-call.s3.ListObjectsV2", lambda **kw: calls.append(1))
    for index in reversed(range(25)):
        s3.put_object(Bucket=BUCKET, Key=f"big/{index:05d}.jsonl", Body=b"{}\n")
    keys = list_archive_keys(s3, bucket=BUCKET, prefix="big/", page_size=10)
    assert keys == [f"big/{index:05d}.jsonl" for index in range(25)]
    assert len(calls) == 3


def test_empty_prefix_and_missing_bucket(s3):
    assert list_archive_keys(s3, bucket=BUCKET, prefix="nothing/here/") == []
    with pytest.raises(ArchiveReadError, match="listing s3://no-such-bucket/x/"):
        list_archive_keys(s3, bucket="no-such-bucket", prefix="x/")


def test_corrupt_gzip_is_a_read_error(s3):
    whole = gzip.compress(b"".join(b'{"n": %d}\n' % (i * 7919 % 10007) for i in range(2000)))
    s3.put_object(Bucket=BUCKET, Key="f/broken.gz", Body=whole[: len(whole) // 2])
    with pytest.raises(ArchiveReadError, match="f/broken.gz"):
        read_all(s3, "f/")


def test_raw_lines_bound_memory_for_overlong_lines(monkeypatch):
    monkeypatch.setattr("backfill_orchestrator.replay.archive.CHUNK_BYTES", 7)
    stream = io.BytesIO(b"short\n" + b"y" * 100 + b"\nafter\n" + b"z" * 50)
    assert list(_raw_lines(stream, max_line_bytes=10)) == [b"short", None, b"after", None]
