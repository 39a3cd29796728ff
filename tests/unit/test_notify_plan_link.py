"""The first Slack message links to the stored plan picture: never public, never presigned."""

from __future__ import annotations

import pytest

from backfill_local.receivers import check_blocks
from backfill_orchestrator.notify import backfill_message
from backfill_orchestrator.notify.messages import plan_page_url
from tests.support.configs import NOTIFIED_CONFIG as CONFIG

PLAN_URI = "s3://backfill-configs/backfills/orders fix+1/plan.json"


def buttons(message) -> dict[str, str]:
    blocks = [block.to_dict() for block in message.blocks]
    check_blocks(blocks)
    return {el["text"]["text"]: el["url"] for b in blocks if b["type"] == "actions" for el in b["elements"]}


def test_the_default_link_is_the_s3_console_page_of_the_object(monkeypatch):
    monkeypatch.delenv("PLAN_LINK_BASE", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    message = backfill_message(
        config=CONFIG, backfill_id="b1", plan=None, state="TRIGGERED", plan_uri=PLAN_URI
    )
    assert buttons(message)["Plan picture"] == (
        "https://eu-west-1.console.aws.amazon.com/s3/object/backfill-configs?region=eu-west-1&bucketType=general"
        "&prefix=backfills%2Forders%20fix%2B1%2Fplan.html"
    )


def test_a_deployment_link_base_serves_the_key(monkeypatch):
    monkeypatch.setenv("PLAN_LINK_BASE", "https://backfills.internal.example.com/")
    message = backfill_message(
        config=CONFIG, backfill_id="b1", plan=None, state="TRIGGERED", plan_uri=PLAN_URI
    )
    assert (
        buttons(message)["Plan picture"]
        == "https://backfills.internal.example.com/backfills/orders%20fix%2B1/plan.html"
    )


@pytest.mark.parametrize("base", ["http://backfills.example.com", "javascript:alert(1)", "https://"])
def test_a_base_that_is_not_https_falls_back_to_the_console(base):
    url = plan_page_url(PLAN_URI, environ={"PLAN_LINK_BASE": base, "AWS_REGION": "us-east-2"})
    assert url is not None and url.startswith(
        "https://us-east-2.console.aws.amazon.com/s3/object/backfill-configs?"
    )


def test_no_link_without_a_stored_plan():
    assert plan_page_url("s3://bucket/somewhere/else.json", environ={}) is None
    message = backfill_message(config=CONFIG, backfill_id="b1", plan=None, state="TRIGGERED")
    assert not any(block.type == "actions" for block in message.blocks)
