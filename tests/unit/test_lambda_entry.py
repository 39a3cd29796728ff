"""The three Lambda functions have one shape (backfill_orchestrator.lambda_entry): powertools
around a typed handler, a container that builds the wiring once from the environment, a
wiring on the one base (settings, clients, secrets cache), and a seam that swaps it for a
block."""

from __future__ import annotations

import importlib
import io
import json
import logging
from typing import Any

import pytest

from backfill_orchestrator.lambda_entry import Container, FunctionWiring, Powertools
from tests.support.lambda_context import FakeLambdaContext

HANDLERS = {
    "backfill_orchestrator.trigger.handler": ("trigger_wiring", "TriggerWiring"),
    "backfill_orchestrator.replay.handler": ("replay_wiring", "ReplayWiring"),
    "backfill_orchestrator.interactivity.handler": ("interactivity_wiring", "InteractivityWiring"),
}


def test_the_container_builds_once_and_a_swap_lasts_for_its_block() -> None:
    built: list[object] = []

    def build() -> object:
        built.append(object())
        return built[-1]

    container: Container[object] = Container(build)
    first = container.wiring()
    assert container.wiring() is first and len(built) == 1
    fake = object()
    with container.swapped(fake):
        assert container.wiring() is fake
        with container.swapped():  # None: a fresh one, built from the environment on first use
            fresh = container.wiring()
            assert fresh is not first and fresh is not fake
        assert container.wiring() is fake
    assert container.wiring() is first and len(built) == 2


@pytest.mark.parametrize("module_name", sorted(HANDLERS))
def test_each_function_has_the_same_shape(module_name: str) -> None:
    module = importlib.import_module(module_name)
    seam, wiring_class = HANDLERS[module_name]
    assert isinstance(module.powertools, Powertools)
    assert module.logger is module.powertools.logger and module.metrics is module.powertools.metrics
    assert module.tracer is None  # tracing is off outside Lambda (tracing.tracing_enabled)
    assert callable(getattr(module, seam))
    wiring = getattr(importlib.import_module(module_name.rsplit(".", 1)[0] + ".wiring"), wiring_class)
    assert issubclass(wiring, FunctionWiring)  # settings, S3, DynamoDB and the secrets cache
    assert callable(wiring.from_env)  # settings read once, the clients made there


def test_the_running_handler_owns_the_packages_loggers_and_redacts_them() -> None:
    """Whichever function's handler runs, the package's log lines go through its Logger (JSON,
    with Lambda's context); a secret registered with the redaction never reaches them."""
    from backfill_orchestrator import redaction

    secret = "xoxb-planted-0123456789-abcdef"
    redaction.register_secret(secret)
    tools = Powertools.for_function("backfill-test-function")
    stream = io.StringIO()
    previous, tools.logger.registered_handler.stream = tools.logger.registered_handler.stream, stream  # type: ignore[attr-defined]

    @tools.entry
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        logging.getLogger("backfill_orchestrator.notify.example").warning("posting with %s", secret)
        return {"ok": True}

    try:
        other = Powertools.for_function("backfill-other-function")  # imported later, as in the tests' process
        assert other.logger is not tools.logger
        assert handler({}, FakeLambdaContext(function_name="backfill-test-function", request_id="r-1")) == {
            "ok": True
        }
    finally:
        tools.logger.registered_handler.stream = previous  # type: ignore[attr-defined]
    (line,) = [json.loads(text) for text in stream.getvalue().splitlines() if "posting with" in text]
    assert line["function_request_id"] == "r-1" and line["service"] == "backfill-test-function"
    assert secret not in line["message"]


class Sent(Exception):
    """The request got as far as being sent (a `before-send` hook stops it there)."""


def test_the_deployments_dynamodb_client_leaves_validation_to_dynamodb(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its items come from boto3's TypeSerializer; every other client validates as usual."""
    from botocore.exceptions import ParamValidationError

    from backfill_orchestrator.aws import aws_client

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    def stop(**_: Any) -> None:
        raise Sent

    dynamodb, s3 = aws_client("dynamodb"), aws_client("s3")
    for client in (dynamodb, s3):
        client.meta.events.register("before-send", stop)
    with pytest.raises(Sent):  # a malformed item goes out: DynamoDB answers for it
        dynamodb.put_item(TableName="status", Item={"backfill_id": {"N": 5}})
    with pytest.raises(ParamValidationError):
        s3.put_object(Bucket="bucket", Key=5, Body=b"")
    assert dynamodb.meta.config.retries == s3.meta.config.retries  # one retry policy
