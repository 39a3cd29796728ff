"""Submitting configs to S3 (moto): valid ones land under the prefix, invalid ones never do."""

from __future__ import annotations

import json

import boto3
import pytest
import yaml

from backfill_orchestrator.cli import main
from backfill_orchestrator.client import SubmitError, submit_backfill
from backfill_orchestrator.config import InvalidConfigError, backfill_id, parse_config
from tests.support.configs import EXAMPLES

BUCKET = "backfill-configs-test"


@pytest.fixture
def s3(mocked_aws):
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def keys(s3) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_submit_dict_like_a_notebook(s3, batch_config):
    result = submit_backfill(batch_config, bucket=BUCKET, s3_client=s3)
    assert result.backfill_id == backfill_id(parse_config(batch_config))
    assert result.s3_uri == f"s3://{BUCKET}/incoming/{result.backfill_id}.json"
    body = s3.get_object(Bucket=BUCKET, Key=result.key)["Body"].read()
    assert backfill_id(parse_config(body, fmt="json")) == result.backfill_id


def test_submit_yaml_string_keeps_the_users_text(s3, batch_config):
    text = "# why: upstream outage\n" + yaml.safe_dump(batch_config)
    result = submit_backfill(text, bucket=BUCKET, prefix="incoming/team-a", s3_client=s3)
    assert result.key == f"incoming/team-a/{result.backfill_id}.yaml"
    assert s3.get_object(Bucket=BUCKET, Key=result.key)["Body"].read().decode() == text


def test_submit_path(s3):
    result = submit_backfill(str(EXAMPLES / "orders-outage-june.json"), bucket=BUCKET, s3_client=s3)
    assert result.key.endswith(".json") and keys(s3) == [result.key]


def test_invalid_config_raises_every_error_and_uploads_nothing(s3, batch_config):
    batch_config.update(name="BAD", hours=[25])
    with pytest.raises(InvalidConfigError) as caught:
        submit_backfill(batch_config, bucket=BUCKET, s3_client=s3)
    assert {i.location for i in caught.value.issues} == {"name", "hours[0]"}
    assert keys(s3) == []


def test_missing_bucket_is_a_submit_error(s3, batch_config):
    with pytest.raises(SubmitError, match="could not upload to s3://no-such-bucket/"):
        submit_backfill(batch_config, bucket="no-such-bucket", s3_client=s3)


def test_cli_submit_valid_and_invalid(s3, tmp_path, capsys):
    assert main(["submit", str(EXAMPLES / "minimal-batch.yaml"), "--bucket", BUCKET]) == 0
    out = capsys.readouterr().out
    (uploaded,) = keys(s3)
    assert f"s3://{BUCKET}/{uploaded}" in out and "backfill id: etl-orders-0604-" in out

    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"version": 1, "name": "x", "owner": "@me", "mode": "batch", "dates": ["2021-13-01"]})
    )
    assert main(["submit", str(bad), "--bucket", BUCKET]) == 1
    err = capsys.readouterr().err
    assert "bad.json: dates[0]: not a real calendar date: 2021-13-01" in err
    assert "bad.json: jobs: required for mode batch" in err
    assert keys(s3) == [uploaded]


def test_cli_submit_unreachable_bucket_exits_2(s3, capsys):
    assert main(["submit", str(EXAMPLES / "minimal-batch.yaml"), "--bucket", "no-such-bucket"]) == 2
    assert "could not upload" in capsys.readouterr().err
