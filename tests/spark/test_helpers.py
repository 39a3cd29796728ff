"""The job's small pure parts: scopes, argument types, document locations."""

from __future__ import annotations

import argparse
from datetime import date

import boto3
import pytest
from moto import mock_aws

from spark_jobs.engine import cli_args
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.storage import DocumentError, S3Location, read_document, sibling, write_document

pytestmark = pytest.mark.slow  # lives with the Spark tests; needs no Spark


def test_scope_looks_back_and_restricts_to_a_tables_axes():
    scope = Scope(days=(date(2021, 5, 10), date(2021, 5, 20)), hours=(3,), feeds=("web",))
    back = scope.looking_back(2)
    assert back.days == (date(2021, 5, 8), date(2021, 5, 9), date(2021, 5, 10),
                         date(2021, 5, 18), date(2021, 5, 19), date(2021, 5, 20))
    daily = scope.restricted_to(("day", "feed"))
    assert daily.hours is None and daily.feeds == ("web",)
    assert Scope().predicate() is None
    assert daily.contains({"day": date(2021, 5, 10), "feed": "web"})
    assert not daily.contains({"day": date(2021, 5, 11), "feed": "web"})


def test_day_lists_accept_ranges_and_refuse_nonsense():
    assert cli_args.day_list("2021-06-04, 2021-06-10..2021-06-12") == (
        date(2021, 6, 4), date(2021, 6, 10), date(2021, 6, 11), date(2021, 6, 12))
    for bad in ("2021-06-12..2021-06-10", "2021-02-30", ",", "yesterday"):
        with pytest.raises(argparse.ArgumentTypeError):
            cli_args.day_list(bad)
    assert cli_args.hour_list("23,0,0") == (0, 23)
    with pytest.raises(argparse.ArgumentTypeError, match="hours are 0 to 23"):
        cli_args.hour_list("24")
    with pytest.raises(argparse.ArgumentTypeError, match="feeds are"):
        cli_args.feed_list("Web")


def test_documents_on_disk_and_in_s3(tmp_path, monkeypatch):
    assert sibling("s3://bucket/backfills/x/plan.json", "run_report.json") == "s3://bucket/backfills/x/run_report.json"
    assert sibling(str(tmp_path / "plan.json"), "run_report.json") == str(tmp_path / "run_report.json")
    with pytest.raises(DocumentError, match="expected s3://bucket/key"):
        S3Location.parse("s3://bucket/")
    with pytest.raises(DocumentError, match="no such file"):
        read_document(str(tmp_path / "missing.json"))
    write_document(str(tmp_path / "deep" / "report.json"), b"{}")
    assert read_document(str(tmp_path / "deep" / "report.json")) == b"{}"
    assert [p.name for p in (tmp_path / "deep").iterdir()] == ["report.json"]  # no temporary left behind

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="plans")
        write_document("s3://plans/a/report.json", b'{"ok": true}', s3_client=s3)
        assert read_document("s3://plans/a/report.json", s3_client=s3) == b'{"ok": true}'
        with pytest.raises(DocumentError, match="NoSuchKey"):
            read_document("s3://plans/a/plan.json", s3_client=s3)
        with pytest.raises(DocumentError, match="NoSuchBucket"):
            write_document("s3://nowhere/a/report.json", b"{}", s3_client=s3)
