"""Redaction of registered secrets and well-known secret shapes, on any library's log records."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from aws_lambda_powertools import Logger

from backfill_orchestrator import redaction
from backfill_orchestrator.redaction import REDACTED, redact, register_basic_credentials, register_secret


@pytest.fixture(autouse=True)
def no_registered_secrets() -> Iterator[None]:
    redaction.forget_secrets()
    yield
    redaction.forget_secrets()


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            "posting to https://hooks.slack.com/services/T01ABC/B02DEF/abcDEF123xyz failed",
            "T01ABC/B02DEF/abcDEF123xyz",
        ),
        (
            "Retrying (Retry(total=1)) after connection broken by 'x': /services/T01ABC/B02DEF/abcDEF123xyz",
            "abcDEF123xyz",
        ),
        ("token xoxb-1234-5678-abcdefABCDEF in use", "1234-5678-abcdefABCDEF"),
        ("app token xapp-1-A0-123-abcdef", "1-A0-123-abcdef"),
        ("headers: {'Authorization': 'Bearer eyJhbGciOi.JIUzI1NiJ9.sig'}", "eyJhbGciOi"),
        ("Authorization: Basic YWRtaW46c2VjcmV0", "YWRtaW46c2VjcmV0"),
        ("connecting to postgresql://airflow:s3cr3t-pw@db:5432/airflow", "s3cr3t-pw"),
        ('{"username": "admin", "password": "hunter2-longer"}', "hunter2-longer"),
        ("api_key=abcdef0123456789&x=1", "abcdef0123456789"),
        ("routing_key: R0UT1NGKEYR0UT1NGKEY", "R0UT1NGKEY"),
        # botocore's DEBUG line for a GetSecretValue answer, before the reader registered it
        (
            "Response body:\n"
            + repr(json.dumps({"Name": "n", "SecretString": json.dumps({"k": "v'al\"UE-9"})}).encode()),
            "UE-9",
        ),
        ('{"SecretString": "bare-K3Y-value", "VersionId": "v1"}', "bare-K3Y"),
    ],
)
def test_well_known_shapes_are_redacted_without_registration(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted, redacted
    assert REDACTED in redacted


def test_ordinary_text_is_left_alone() -> None:
    text = "secret 'arn:aws:secretsmanager:us-east-1:1:secret:backfill/slack' is unavailable; http://127.0.0.1:8080/api"
    assert redact(text) == text


def test_registered_values_and_their_url_json_and_header_forms_are_redacted() -> None:
    register_secret("https://example.test/hook/P4TH-S3CRET?sig=QU3RY-S3CRET")
    register_secret('pa"ss/wo rd')
    register_basic_credentials("admin", "adm1n-pass")
    import base64

    basic = base64.b64encode(b"admin:adm1n-pass").decode()
    for text in (
        "POST /hook/P4TH-S3CRET?sig=QU3RY-S3CRET",  # the path as urllib3 logs it
        "P4TH-S3CRET",
        "sig=QU3RY-S3CRET",
        json.dumps({"value": 'pa"ss/wo rd'}),  # JSON-escaped
        "pa%22ss%2Fwo%20rd",  # URL-encoded
        f"header {basic}",
        "login adm1n-pass",
    ):
        redacted = redact(text)
        for secret in ("P4TH-S3CRET", "QU3RY-S3CRET", 'pa\\"ss/wo rd', "pa%22ss", basic, "adm1n-pass"):
            assert secret not in redacted, (text, redacted)
    register_secret("abc")  # too short to redact without blanking ordinary words
    assert redact("abc") == "abc"


def test_a_library_logger_through_a_root_handler_is_redacted_args_and_exception_included() -> None:
    register_secret("S3CRET-VALUE-1")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    library = logging.getLogger("some.library.connectionpool")
    previous = library.level
    library.setLevel(logging.DEBUG)
    try:
        redaction.install()
        redaction.install()  # idempotent
        assert handler.filters.count(redaction._FILTER) == 1
        library.warning("Retrying after %s: %s", "error", "/path/S3CRET-VALUE-1")
        try:
            raise RuntimeError("failed with S3CRET-VALUE-1")
        except RuntimeError:
            library.exception("boom %s", "S3CRET-VALUE-1")
        library.debug("stack", stack_info=True, extra={"note": "S3CRET-VALUE-1"})
    finally:
        root.removeHandler(handler)
        library.setLevel(previous)
        handler.filters.clear()
    output = stream.getvalue()
    assert "S3CRET-VALUE-1" not in output
    assert output.count(REDACTED) >= 3 and "RuntimeError: failed with ***" in output


def test_a_powertools_logger_keeps_its_structure_and_its_keys() -> None:
    register_secret("S3CRET-VALUE-2")
    stream = io.StringIO()
    logger = Logger(service="redaction-test", stream=stream)
    redaction.install(logger)
    logger.append_keys(backfill_id="b-1", note="S3CRET-VALUE-2")  # formatter still reachable
    logger.info({"structured": "S3CRET-VALUE-2", "ok": 1})
    try:
        raise ValueError("S3CRET-VALUE-2 in an exception")
    except ValueError:
        logger.exception("failed")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert "S3CRET-VALUE-2" not in stream.getvalue()
    assert lines[0]["message"] == {"structured": REDACTED, "ok": 1} and lines[0]["backfill_id"] == "b-1"
    assert lines[1]["exception_name"] == "ValueError" and "*** in an exception" in lines[1]["exception"]


def test_every_value_the_secret_reader_hands_out_is_registered(mocked_aws: None) -> None:
    import boto3
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

    from backfill_orchestrator.secrets import SecretReader

    client = boto3.client("secretsmanager", region_name="us-east-1")
    values = {
        "webhook": '{"webhook_url": "https://example.test/hooks/Wh00kPathS3cret"}',
        "bot": "xoxb-bare-token-S3cret",
        "pd": '{"routing_key": "R0utingKeyS3cret"}',
        "airflow": '{"username": "bot", "password": "Airfl0wPassS3cret"}',
        "marquez": "M4rquezApiKeyS3cret",
    }
    for name, value in values.items():
        client.create_secret(Name=name, SecretString=value)
    reader = SecretReader(provider=SecretsProvider(boto3_client=client))
    assert redact("Wh00kPathS3cret R0utingKeyS3cret Airfl0wPassS3cret M4rquezApiKeyS3cret") == " ".join(
        ["Wh00kPathS3cret", "R0utingKeyS3cret", "Airfl0wPassS3cret", "M4rquezApiKeyS3cret"]
    )  # nothing registered before they are read
    reader.slack("webhook"), reader.slack("bot"), reader.pagerduty_routing_key("pd")
    reader.basic_credentials("airflow"), reader.marquez_api_key("marquez")
    text = "GET /hooks/Wh00kPathS3cret xoxb-bare-token-S3cret R0utingKeyS3cret Airfl0wPassS3cret M4rquezApiKeyS3cret"
    assert redact(text) == "GET *** *** *** *** ***"
