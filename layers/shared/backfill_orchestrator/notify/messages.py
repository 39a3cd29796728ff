"""Slack messages (Block Kit, slack_sdk's model classes) for every stage of a backfill.
Builders only: no I/O, and they never raise (a message that cannot be built becomes a short
text, so formatting can never fail a backfill).

Safety: every user-supplied string (names, owners, S3 keys, error details, step ids) is
escaped the way Slack asks (& < >) wherever Slack parses mrkdwn, the fallback `text`
included, so `<!channel>` or `<https://x|label>` in a config stays text. Plain-text objects
(the header, button labels) are not parsed by Slack and stay as written. Every text is
clipped to its Block Kit limit (counted in UTF-16 units, as Slack counts), a button whose
URL would be longer than Slack allows is left out, and there are never more than 50 blocks."""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast
from urllib.parse import quote, urlsplit

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from backfill_orchestrator.config import BackfillConfig, ConfigIssue
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.contracts.publish import HeldStep
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.notify.slack import SlackMessage
from backfill_orchestrator.preflight.render import estimate_line

log = logging.getLogger(__name__)

MAX_SECTION = SectionBlock.text_max_length  # 3000
MAX_HEADER = HeaderBlock.text_max_length  # 150
MAX_FIELD = 2000
MAX_FIELDS = SectionBlock.fields_max_length  # 10
MAX_BUTTON_TEXT = ButtonElement.text_max_length  # 75
MAX_URL = ButtonElement.url_max_length  # 3000
MAX_TEXT = 3000  # the fallback text; Slack truncates past 40,000 and advises far less
MAX_LISTED_ERRORS = 20
ERROR_LINE = (MAX_SECTION - 100) // MAX_LISTED_ERRORS - 1  # 20 lines and the "…and N more" fit one section
STATE_EMOJI = {
    "RECEIVED": ":inbox_tray:",
    "REJECTED": ":no_entry:",
    "PLANNED": ":clipboard:",
    "AWAITING_APPROVAL": ":raised_hand:",
    "TRIGGERED": ":rocket:",
    "RUNNING": ":hourglass_flowing_sand:",
    "SUCCEEDED": ":white_check_mark:",
    "FAILED": ":x:",
    "AWAITING_PUBLISH": ":mag:",
    "DISCARDED": ":wastebasket:",
    "UNDONE": ":rewind:",
}
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")
PLAN_LINK_BASE_ENV = "PLAN_LINK_BASE"  # an https base that serves the config bucket's keys to signed-in users
DEFAULT_REGION = "us-east-1"


def plan_page_url(plan_uri: str, *, environ: Mapping[str, str] | None = None) -> str | None:
    """The clickable link to a backfill's `plan.html` (stored beside `plan.json`), or None.

    Never a public or a presigned URL: with PLAN_LINK_BASE (https only; e.g. an internal
    CloudFront in front of the bucket, behind the company's sign-in) the link is the base and
    the object's key; otherwise the S3 console's page of the object, which only people signed
    in to the account with s3:GetObject on it can open. A presigned URL would let anyone with
    the Slack message read the plan until it expires, and would expire while the thread is
    still read."""
    environ = os.environ if environ is None else environ
    if not plan_uri.startswith("s3://") or not plan_uri.endswith("/plan.json"):
        return None
    bucket, _, key = plan_uri.removeprefix("s3://").partition("/")
    key = key.removesuffix("plan.json") + "plan.html"
    base = (environ.get(PLAN_LINK_BASE_ENV) or "").strip()
    if base:
        if urlsplit(base).scheme == "https" and urlsplit(base).netloc:
            return f"{base.rstrip('/')}/{quote(key)}"
        log.warning("%s is not an https URL (%r): linking the S3 console instead", PLAN_LINK_BASE_ENV, base)
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
    return (
        f"https://{quote(region)}.console.aws.amazon.com/s3/object/{quote(bucket)}"
        f"?region={quote(region)}&bucketType=general&prefix={quote(key, safe='')}"
    )


def escape(text: str) -> str:
    """Slack's escaping for mrkdwn and `text`: user text must not become links or mentions."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _clip(text: str, limit: int) -> str:
    """At most `limit` UTF-16 units, ending in … when cut, never inside an &amp; entity."""
    if len(text) <= limit // 2 or _utf16_length(text) <= limit:
        return text
    cut = text[: limit - 1]
    while _utf16_length(cut) > limit - 1:
        cut = cut[: -max(1, (_utf16_length(cut) - limit + 2) // 2)]
    return _PARTIAL_ENTITY.sub("", cut) + "…"


def _header(text: str) -> HeaderBlock:
    return HeaderBlock(text=PlainTextObject(text=_clip(text, MAX_HEADER), emoji=True))


def _section(markdown: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=_clip(markdown, MAX_SECTION)))


def _fields(pairs: Sequence[tuple[str, str]]) -> SectionBlock:
    return SectionBlock(
        fields=[
            MarkdownTextObject(text=_clip(f"*{label}*\n{value}", MAX_FIELD))
            for label, value in pairs[:MAX_FIELDS]
        ]
    )


def _context(markdown: str) -> ContextBlock:
    return ContextBlock(elements=[MarkdownTextObject(text=_clip(markdown, MAX_SECTION))])


def _link_buttons(links: Sequence[tuple[str, str | None]]) -> ActionsBlock | None:
    """Buttons for the links that Slack can take; a longer URL cannot be clipped, so it is left out."""
    buttons = []
    for index, (label, url) in enumerate(links):
        if not url:
            continue
        if len(url) > MAX_URL:
            log.warning(
                "%s link left out of the Slack message: %d characters, Slack allows %d",
                label,
                len(url),
                MAX_URL,
            )
            continue
        buttons.append(ButtonElement(text=_clip(label, MAX_BUTTON_TEXT), url=url, action_id=f"link-{index}"))
    return ActionsBlock(elements=buttons) if buttons else None


def _message(text: str, blocks: Sequence[Block | None]) -> SlackMessage:
    """`text` is already escaped; at most 50 blocks, as Slack allows."""
    return SlackMessage(
        text=_clip(text, MAX_TEXT), blocks=tuple(block for block in blocks if block is not None)[:50]
    )


def _never_raises(builder: Callable[..., SlackMessage]) -> Callable[..., SlackMessage]:
    @functools.wraps(builder)
    def build(**kwargs: object) -> SlackMessage:
        try:
            return builder(**kwargs)
        except Exception as error:  # a message is never worth failing a backfill over
            log.exception("could not build the %s Slack message", builder.__name__)
            subject = kwargs.get("backfill_id") or kwargs.get("source_uri") or "a backfill"
            state = kwargs.get("state") or (
                "REJECTED" if builder.__name__ == "rejection_message" else "update"
            )
            summary = f"{subject}: {state} (details could not be formatted: {type(error).__name__})"
            return SlackMessage(text=_clip(escape(summary), MAX_TEXT))

    return build


def plan_lines(plan: Plan, *, limit: int = MAX_SECTION) -> str:
    """`Wave 1: dag_a, dag_b` per wave, clipped to `limit` characters with a count of the rest."""
    lines: list[str] = []
    for wave in plan.waves:
        steps = ", ".join(f"`{escape(step.id)}`" for step in wave.steps)
        lines.append(_clip(f"*Wave {wave.index + 1}:* {steps}", limit - 40))
    text = "\n".join(lines) or "_no steps: nothing downstream to rerun_"
    if _utf16_length(text) > limit:
        kept: list[str] = []
        for line in lines:
            if _utf16_length("\n".join([*kept, line])) > limit - 40:
                break
            kept.append(line)
        text = "\n".join(kept) + f"\n…and {len(lines) - len(kept)} more waves"
    return text


@_never_raises
def backfill_message(
    *,
    config: BackfillConfig,
    backfill_id: str,
    plan: Plan | None,
    state: str,
    run_url: str | None = None,
    lineage_url: str | None = None,
    plan_uri: str | None = None,
    note: str | None = None,
    submitted_by: str | None = None,
    picture_pending: bool = False,
    plan_page: str | None = None,
) -> SlackMessage:
    """The thread's first message: what the backfill is and where to follow it. `submitted_by`:
    who uploaded it (the S3 event's principal); `owner` is the config's contact.
    `picture_pending`: `plan.html` is not written yet (the DAG run writes it when it starts and
    links it in its RUNNING reply), so the message names it without a button to a missing page.
    `plan_page`: the picture's link when the caller made it (the DAG: its own link base)."""
    emoji = STATE_EMOJI.get(state, "")
    dry = " (dry run)" if config.dry_run else ""
    title = f"Backfill {config.name}{dry}: {state}"
    dates = compact_dates(config.days)
    pairs = [
        ("Backfill id", f"`{escape(backfill_id)}`"),
        ("Owner", escape(config.owner)),
        *([("Submitted by", f"`{escape(submitted_by)}`")] if submitted_by else []),
        ("Mode", escape(config.mode)),
        ("Dates", f"{escape(dates)} ({len(config.days)} days)"),
    ]
    if config.hours is not None:
        pairs.append(("Hours", ", ".join(str(h) for h in config.hours)))
    if config.feeds is not None:
        pairs.append(("Feeds", escape(", ".join(config.feeds))))
    if config.jobs:
        pairs.append(("Jobs", escape(", ".join(str(job) for job in config.jobs))))
    blocks: list[Block | None] = [_header(f"{emoji} {title}".strip()), _fields(pairs)]
    if note:
        blocks.append(_section(escape(note)))
    if plan is not None:
        summary = f"*Plan:* {len(plan.waves)} waves, {len(plan.steps)} steps\n"
        if plan.estimate:
            summary += f"*Estimate:* {escape(estimate_line(plan.estimate))}\n"
        blocks.append(_section(summary + plan_lines(plan, limit=MAX_SECTION - len(summary))))
        if plan.warnings:
            blocks.append(_context("\n".join(f":warning: {escape(w.message)}" for w in plan.warnings[:10])))
    if plan_uri:
        picture = (
            plan_uri.removesuffix("plan.json") + "plan.html" if plan_uri.endswith("/plan.json") else None
        )
        when = ", written when the run starts" if picture_pending else ""
        blocks.append(
            _context(
                f"Plan: `{escape(plan_uri)}`" + (f" (picture: `{escape(picture)}`{when})" if picture else "")
            )
        )
    if plan_page is None:
        plan_page = plan_page_url(plan_uri) if plan_uri and not picture_pending else None
    blocks.append(
        _link_buttons(
            [("Airflow run", run_url), ("Lineage (Marquez)", lineage_url), ("Plan picture", plan_page)]
        )
    )
    return _message(escape(f"{title} ({backfill_id}, {dates})"), blocks)


@_never_raises
def rejection_message(
    *, source_uri: str, issues: Sequence[ConfigIssue], name: str | None = None
) -> SlackMessage:
    """An invalid config: every located error (the first MAX_LISTED_ERRORS)."""
    shown = [
        _clip(f"• `{escape(issue.location)}`: {escape(issue.message)}", ERROR_LINE)
        for issue in issues[:MAX_LISTED_ERRORS]
    ]
    if len(issues) > MAX_LISTED_ERRORS:
        shown.append(f"…and {len(issues) - MAX_LISTED_ERRORS} more (see the result file)")
    title = f"Backfill config rejected{f': {name}' if name else ''}"
    count = f"{len(issues)} error{'s' if len(issues) != 1 else ''}"
    blocks = [
        _header(f"{STATE_EMOJI['REJECTED']} {title}"),
        _section(f"`{escape(source_uri)}` has {count}:"),
        _section("\n".join(shown) or "_no details_"),
        _context("Nothing was triggered. Fix the file and upload it again."),
    ]
    return _message(escape(f"{title}: {source_uri} has {count}"), blocks)


@_never_raises
def already_known_message(
    *, backfill_id: str, state: str, source_uri: str, run_url: str | None
) -> SlackMessage:
    text = (
        f"`{escape(source_uri)}` is the same config as backfill `{escape(backfill_id)}`, which is already known "
        f"(status *{escape(state)}*). Nothing new was triggered; to run it again, change its `name`."
    )
    blocks = [
        _section(f"{STATE_EMOJI.get(state, '')} {text}".strip()),
        _link_buttons([("Airflow run", run_url)]),
    ]
    return _message(escape(f"Already known: {backfill_id} ({state})"), blocks)


@_never_raises
def status_message(
    *,
    backfill_id: str,
    state: str,
    detail: str | None = None,
    run_url: str | None = None,
    plan_page: str | None = None,
) -> SlackMessage:
    """A later update in the backfill's thread (DAG progress, success, failure). `plan_page`:
    the plan picture's link (`plan_page_url`), for the RUNNING reply of the run that wrote it."""
    line = f"{STATE_EMOJI.get(state, '')} `{escape(backfill_id)}` is *{escape(state)}*".strip()
    if detail:
        line += f": {escape(detail)}"
    blocks = [_section(line), _link_buttons([("Airflow run", run_url), ("Plan picture", plan_page)])]
    return _message(escape(f"{backfill_id}: {state}{f' ({detail})' if detail else ''}"), blocks)


@_never_raises
def publish_request_message(
    *,
    backfill_id: str,
    reason: str,
    held: Sequence[HeldStep],
    run_url: str | None = None,
    buttons: dict[str, Any] | None = None,
) -> SlackMessage:
    """A backfill AWAITING_PUBLISH, in its thread: why it waits, and per held step what would
    change (rows before and after, keys removed, the partitions that change most); `buttons`:
    the Publish / Discard block (interactivity.blocks.control_buttons)."""
    state = "AWAITING_PUBLISH"
    line = f"{STATE_EMOJI[state]} `{escape(backfill_id)}` is *{state}*: {escape(reason)}"
    blocks: list[Block | None] = [_section(line)]
    for step in held[:10]:
        blocks.append(_section(f"```{escape(step.text())}```"))
    blocks.append(_link_buttons([("Airflow run", run_url)]))
    if buttons is not None:
        blocks.append(cast(Block, Block.parse(buttons)))
    return _message(escape(f"{backfill_id}: {state} ({reason})"), blocks)
