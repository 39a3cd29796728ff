"""Class 7 of "nothing lost": Slack payload safety. Every message is built for adversarial
input (10k-character unicode names, astral emoji, `<!channel>`, `<https://evil|bank>`,
pre-escaped entities, hundreds of errors); each must

- validate with slack_sdk's Block Kit model classes and pass the local receiver, which
  checks what Slack checks (and is then really posted to it);
- stay within every Block Kit limit, counted in UTF-16 units;
- carry no live mention or link: in mrkdwn and in the fallback `text` no `<` or `>`
  survives and every `&` starts an entity, while the user's text is still shown."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote

import pytest
from pydantic import SecretStr

from backfill_local.receivers import SlackReceiver, check_blocks
from backfill_orchestrator.config import ConfigIssue, JobRef, parse_config
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.notify import (
    SlackMessage,
    SlackWebApi,
    already_known_message,
    backfill_message,
    rejection_message,
    status_message,
)
from backfill_orchestrator.notify.slack import retry_handlers

MENTION = "<!channel>"
LINK = "<https://evil.example/login|bank>"
USER = "<@U0123ABC> <!here> <#C0123|general>"
ENTITY = "&lt;!channel&gt; & co"  # already looks escaped: must still show literally
HOSTILE = f"{MENTION} {LINK} {USER} {ENTITY}"
LONG = "ü" * 10_000
ASTRAL = "😀" * 5_000  # 10,000 UTF-16 units
LIMITS = {
    "header": 150,
    "section": 3000,
    "field": 2000,
    "context": 3000,
    "button": 75,
    "url": 3000,
    "text": 3000,
}
BASE = parse_config(
    {
        "version": 1,
        "name": "orders-fix",
        "owner": "co@example.com",
        "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
        "dates": ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-12"}],
        "feeds": ["orders"],
        "hours": [0, 23],
    },
    source="t.yaml",
)
# Past validation on purpose: the builders must hold even for what a config could never say.
EVIL_CONFIG = BASE.model_copy(
    update={
        "name": f"{HOSTILE}{LONG}",
        "owner": f"{LINK}{ASTRAL}",
        "jobs": [JobRef.model_construct(namespace=HOSTILE, name=f"{LONG}{MENTION}") for _ in range(30)],
        "feeds": [MENTION, LINK],
    }
)
EVIL_ID = f"{MENTION}-{LONG}"[:64]


def evil_plan(waves: int = 300, steps_per_wave: int = 6) -> Plan:
    job = {"namespace": HOSTILE, "name": LONG[:1024]}
    return Plan.model_validate(
        {
            "backfill_id": EVIL_ID,
            "name": HOSTILE,
            "owner": LINK,
            "created_at": datetime(2021, 6, 14, tzinfo=UTC),
            "roots": [job],
            "dates": [date(2021, 6, 4)],
            "waves": [
                {
                    "index": w,
                    "steps": [
                        {
                            "id": f"{MENTION}{LINK}{w}-{s}{ASTRAL[:50]}",
                            "job": job,
                            "dag_id": f"dag_{w}_{s}",
                            "kind": "airflow_dag",
                            "dates": [date(2021, 6, 4)],
                            "reason": "root" if w == 0 else "downstream",
                        }
                        for s in range(steps_per_wave)
                    ],
                }
                for w in range(waves)
            ],
            "warnings": [{"code": "x", "message": f"{HOSTILE} {LONG}"} for _ in range(40)],
        }
    )


def lineage_url(job: JobRef) -> str:
    """As the trigger builds it (TriggerService._lineage_url)."""
    return f"http://marquez:3000/lineage/job/{quote(job.namespace, safe='')}/{quote(job.name, safe='')}"


RUN_URL = f"http://airflow:8080/dags/backfill/runs/{quote(EVIL_ID, safe='')}"
ISSUES = [ConfigIssue(f"jobs[{i}].{MENTION}", f"{LINK} {ASTRAL}") for i in range(500)]


def adversarial_messages() -> Iterator[tuple[str, SlackMessage]]:
    for state in ("TRIGGERED", "PLANNED", "FAILED", "<!everyone>"):
        yield (
            f"backfill {state}",
            backfill_message(
                config=EVIL_CONFIG,
                backfill_id=EVIL_ID,
                plan=evil_plan(),
                state=state,
                run_url=RUN_URL,
                lineage_url=lineage_url(EVIL_CONFIG.jobs[0]),
                plan_uri=f"s3://bucket/backfills/{HOSTILE}/plan.json",
                note=f"{HOSTILE} {LONG}",
            ),
        )
    yield (
        "backfill, no plan",
        backfill_message(config=EVIL_CONFIG, backfill_id=EVIL_ID, plan=None, state="FAILED", note=HOSTILE),
    )
    yield (
        "rejection",
        rejection_message(
            source_uri=f"s3://bucket/incoming/{HOSTILE}{LONG}.yaml", issues=ISSUES, name=HOSTILE + LONG
        ),
    )
    yield "rejection, one error", rejection_message(source_uri=f"s3://b/{MENTION}", issues=ISSUES[:1])
    yield (
        "already known",
        already_known_message(
            backfill_id=EVIL_ID,
            state=f"{MENTION}",
            source_uri=f"s3://bucket/incoming/{HOSTILE}{ASTRAL}",
            run_url=RUN_URL,
        ),
    )
    yield (
        "status",
        status_message(
            backfill_id=EVIL_ID, state="FAILED", detail=f"{HOSTILE}\n{LONG}{ASTRAL}", run_url=RUN_URL
        ),
    )
    yield "status, no detail", status_message(backfill_id=EVIL_ID, state=MENTION)


MESSAGES = dict(adversarial_messages())


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def text_objects(blocks: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(limit name, text object) for every text object in the blocks."""
    for block in blocks:
        if block["type"] == "header":
            yield "header", block["text"]
        elif block["type"] == "section":
            if "text" in block:
                yield "section", block["text"]
            for item in block.get("fields", []):
                yield "field", item
        elif block["type"] == "context":
            for element in block["elements"]:
                yield "context", element
        elif block["type"] == "actions":
            for element in block["elements"]:
                yield "button", element["text"]


def assert_inert(text: str, where: str) -> None:
    """No mention, channel link or disguised link can survive: Slack only parses `<...>`."""
    assert "<" not in text and ">" not in text, f"{where}: live markup in {text[:200]!r}"
    assert not re.search(r"&(?!amp;|lt;|gt;)", text), f"{where}: a bare & in {text[:200]!r}"


@pytest.mark.parametrize("name", list(MESSAGES))
def test_every_block_validates_and_stays_within_block_kit_limits(name: str) -> None:
    message = MESSAGES[name]
    blocks = message.block_dicts()  # slack_sdk's model validation raises on any broken limit
    check_blocks(blocks)  # and the receiver's, which checks what Slack checks
    assert 1 <= len(blocks) <= 50
    for kind, text in text_objects(blocks):
        assert utf16(text["text"]) <= LIMITS[kind], (kind, utf16(text["text"]))
        if kind in ("header", "button"):
            assert text["type"] == "plain_text"  # Slack does not parse plain text for mentions or links
    for block in blocks:
        for element in block.get("elements", []):
            if element.get("type") == "button":
                assert len(element["url"]) <= LIMITS["url"]
    assert 0 < utf16(message.text) <= LIMITS["text"]


@pytest.mark.parametrize("name", list(MESSAGES))
def test_no_live_mention_or_link_survives_anywhere(name: str) -> None:
    message = MESSAGES[name]
    assert_inert(message.text, "text")
    for kind, text in text_objects(message.block_dicts()):
        if text["type"] == "mrkdwn":
            assert_inert(text["text"], kind)


def test_the_users_text_is_shown_escaped_not_dropped() -> None:
    message = MESSAGES["backfill TRIGGERED"]
    shown = message.text + "".join(str(block) for block in message.block_dicts())
    assert "&lt;!channel&gt;" in shown and "&lt;https://evil.example/login|bank&gt;" in shown
    assert "&amp;lt;!channel&amp;gt; &amp; co" in shown  # the pre-escaped text shows as typed
    rejection = MESSAGES["rejection"]
    assert "jobs[19].&lt;!channel&gt;" in str(rejection.block_dicts()) and "480 more" in str(
        rejection.block_dicts()
    )


def test_a_link_too_long_for_a_button_is_left_out_and_the_rest_kept() -> None:
    """A 1024-character unicode job name (the longest a config allows) percent-encodes far
    past Slack's 3000-character URL limit: that button goes, the message still posts."""
    job = JobRef(namespace="food_delivery", name="€" * 1024)
    config = BASE.model_copy(update={"jobs": [job]})
    assert len(lineage_url(job)) > 3000
    message = backfill_message(
        config=config,
        backfill_id="orders-fix-1a2b3c4d",
        plan=None,
        state="TRIGGERED",
        run_url="http://airflow/dags/backfill/runs/orders-fix-1a2b3c4d",
        lineage_url=lineage_url(job),
    )
    (actions,) = [block for block in message.block_dicts() if block["type"] == "actions"]
    assert [button["text"]["text"] for button in actions["elements"]] == ["Airflow run"]


def test_slack_accepts_every_adversarial_message() -> None:
    """Posted for real to the receiver, which answers like Slack (`invalid_blocks`, ...)."""
    with SlackReceiver(token="xoxb-t") as slack:
        api = SlackWebApi(
            token=SecretStr("xoxb-t"), api_url=slack.api_url, handlers=retry_handlers(max_retries=0)
        )
        for message in MESSAGES.values():
            api.post(message, channel="#backfills")
        assert slack.rejections == []
        assert len(slack.messages) == len(MESSAGES)
        assert all(received["blocks"] for received in slack.messages)


def test_a_message_that_cannot_be_built_becomes_a_safe_text() -> None:
    """Builders never raise: a backfill is never failed over its Slack message."""
    message = backfill_message(config=BASE, backfill_id=f"b-{MENTION}", plan=object(), state="TRIGGERED")  # type: ignore[arg-type]
    assert message.blocks == ()
    assert "AttributeError" in message.text
    assert_inert(message.text, "text")


def test_blocks_that_break_a_limit_are_sent_as_text_only() -> None:
    from slack_sdk.models.blocks import HeaderBlock

    message = SlackMessage(text="still here", blocks=(HeaderBlock(text="x" * 151),))
    assert message.sendable_blocks() is None
    with SlackReceiver(token="xoxb-t") as slack:
        SlackWebApi(token=SecretStr("xoxb-t"), api_url=slack.api_url).post(message, channel="#c")
        (received,) = slack.messages
        assert (received["text"], received["blocks"]) == ("still here", None)


@pytest.mark.parametrize("limit", range(2, 40))
def test_clipping_never_leaves_half_an_entity(limit: int) -> None:
    from backfill_orchestrator.notify.messages import _clip, escape

    clipped = _clip(escape("a<&>" * 50), limit)
    assert utf16(clipped) <= limit and clipped.endswith("…")
    assert_inert(clipped, f"clipped to {limit}")
