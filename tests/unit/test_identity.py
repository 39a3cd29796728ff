"""Who uploaded: S3 event principal ids to readable principals, with and without IAM."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from backfill_orchestrator.identity import (
    IamNameResolver,
    Principal,
    caller_principal,
    principal_from_display,
    principal_from_id,
    principal_from_s3_record,
    slack_principal,
)


def test_principal_ids_without_iam_stay_readable() -> None:
    session = principal_from_id("AWS:AROAEXAMPLE:jane.doe@example.com")
    assert (session.name, session.session, session.display) == (
        "AROAEXAMPLE",
        "jane.doe@example.com",
        "AROAEXAMPLE/jane.doe@example.com",
    )
    user = principal_from_id("AWS:AIDAEXAMPLE")
    assert (user.name, user.session, user.display) == ("AIDAEXAMPLE", None, "AIDAEXAMPLE")
    root = principal_from_id("A3NL1KOZZKEXAMPLE")
    assert root.display == "A3NL1KOZZKEXAMPLE" and root.principal_id == "A3NL1KOZZKEXAMPLE"
    assert "AROAEXAMPLE:jane.doe@example.com" in session.match_names


def test_iam_resolves_role_and_user_ids_and_caches_the_listing(mocked_aws: None) -> None:
    iam = boto3.client("iam", region_name="us-east-1")
    role_id = iam.create_role(RoleName="data-eng", AssumeRolePolicyDocument="{}")["Role"]["RoleId"]
    calls: list[str] = []

    class Counting:  # moto's roles; a real-shaped user id (moto's do not start with AIDA)
        def get_paginator(self, name: str) -> Any:
            calls.append(name)
            if name == "list_users":
                return type(
                    "P",
                    (),
                    {"paginate": lambda self: [{"Users": [{"UserId": "AIDAJANE", "UserName": "jane"}]}]},
                )()
            return iam.get_paginator(name)

    now = [0.0]
    resolver = IamNameResolver(iam_client=Counting(), max_age=900, clock=lambda: now[0])
    principal = principal_from_id(f"AWS:{role_id}:jane.doe@example.com", resolver=resolver)
    assert principal.display == "role/data-eng/jane.doe@example.com"
    assert "assumed-role/data-eng/jane.doe@example.com" in principal.match_names
    assert principal_from_id("AWS:AIDAJANE", resolver=resolver).display == "user/jane"
    assert calls == ["list_roles", "list_users"]  # one listing served both
    now[0] = 901
    principal_from_id(f"AWS:{role_id}:x", resolver=resolver)
    assert calls == ["list_roles", "list_users"] * 2  # relisted after max_age


def test_iam_failure_leaves_the_id_unresolved() -> None:
    class Refusing:
        def get_paginator(self, name: str) -> Any:
            raise RuntimeError("AccessDenied")

    principal = principal_from_id("AWS:AROAEXAMPLE:bob", resolver=IamNameResolver(iam_client=Refusing()))
    assert principal.display == "AROAEXAMPLE/bob"


@pytest.mark.parametrize(
    "record",
    [{}, {"userIdentity": {}}, {"userIdentity": {"principalId": "  "}}, "not a record", {"detail": {}}],
)
def test_records_without_an_uploader(record: Any) -> None:
    assert principal_from_s3_record(record) is None


def test_record_and_display_round_trip() -> None:
    record = {"userIdentity": {"principalId": "AWS:AROAEXAMPLE:jane.doe@example.com"}}
    assert principal_from_s3_record(record).display == "AROAEXAMPLE/jane.doe@example.com"
    for principal in (
        Principal(name="role/data-eng", session="jane.doe@example.com"),
        Principal(name="user/jane"),
        Principal(name="AROAEXAMPLE", session="bob"),
        slack_principal("U0BOB"),
    ):
        back = principal_from_display(principal.display)
        assert (back.name, back.session, back.slack_user) == (
            principal.name,
            principal.session,
            principal.slack_user,
        )


def test_eventbridge_events_name_only_the_requesting_account() -> None:
    event = {"detail-type": "Object Created", "source": "aws.s3", "detail": {"requester": "123456789012"}}
    principal = principal_from_s3_record(event)
    assert principal.display == "requester/123456789012" and principal.principal_id == "123456789012"


def test_the_callers_principal_is_the_one_the_trigger_records_for_its_uploads(mocked_aws: None) -> None:
    """`caller_principal` (the CLI and the client, from STS) and `principal_from_id` with IAM's
    names (the trigger, from the S3 event's `AWS:<UserId>`) name one person the same way."""
    iam = boto3.client("iam", region_name="us-east-1")
    role = iam.create_role(RoleName="data-eng", AssumeRolePolicyDocument="{}")["Role"]
    sts = boto3.client("sts", region_name="us-east-1")
    credentials = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="jane.doe@example.com")["Credentials"]
    caller = boto3.client(
        "sts",
        region_name="us-east-1",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    ).get_caller_identity()
    mine = caller_principal(caller["Arn"], caller["UserId"])
    recorded = principal_from_id(f"AWS:{caller['UserId']}", resolver=IamNameResolver(iam_client=iam))
    assert mine.display == recorded.display == "role/data-eng/jane.doe@example.com"
    assert mine.principal_id == recorded.principal_id
    user = caller_principal("arn:aws:iam::123456789012:user/team/jane", "AIDAEXAMPLE")
    assert (user.display, user.principal_id) == ("user/jane", "AWS:AIDAEXAMPLE")
    assert caller_principal("not an arn", "AIDAEXAMPLE").display == "AIDAEXAMPLE"
