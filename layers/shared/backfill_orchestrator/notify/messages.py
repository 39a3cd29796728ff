"""Slack messages (Block Kit) for every stage of a backfill. Builders only: no I/O.

Block Kit limits respected here: header text <= 150 characters, section text <= 3000,
at most 10 section fields of <= 2000 each, at most 50 blocks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backfill_orchestrator.config import BackfillConfig, ConfigIssue
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.notify.slack import SlackMessage
from backfill_orchestrator.plan import Plan

MAX_SECTION = 3000
MAX_HEADER = 150
MAX_LISTED_ERRORS = 20
STATE_EMOJI = {
    "RECEIVED": ":inbox_tray:",
    "REJECTED": ":no_entry:",
    "PLANNED": ":clipboard:",
    "TRIGGERED": ":rocket:",
    "RUNNING": ":hourglass_flowing_sand:",
    "SUCCEEDED": ":white_check_mark:",
    "FAILED": ":x:",
}


def escape(text: str) -> str:
    """Slack mrkdwn control characters; user text must not become links or mentions."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": _clip(text, MAX_HEADER), "emoji": True}}


def _section(markdown: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(markdown, MAX_SECTION)}}


def _fields(pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {
        "type": "section",
        "fields": [{"type": "mrkdwn", "text": _clip(f"*{label}*\n{value}", 2000)} for label, value in pairs[:10]],
    }


def _context(markdown: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(markdown, MAX_SECTION)}]}


def _link_buttons(links: Sequence[tuple[str, str | None]]) -> dict[str, Any] | None:
    buttons = [
        {"type": "button", "text": {"type": "plain_text", "text": label}, "url": url, "action_id": f"link-{index}"}
        for index, (label, url) in enumerate(links)
        if url
    ]
    return {"type": "actions", "elements": buttons} if buttons else None


def plan_lines(plan: Plan, *, limit: int = MAX_SECTION) -> str:
    """`Wave 1: dag_a, dag_b` per wave, clipped to `limit` characters with a count of the rest."""
    lines: list[str] = []
    for wave in plan.waves:
        steps = ", ".join(f"`{escape(step.id)}`" for step in wave.steps)
        lines.append(f"*Wave {wave.index + 1}:* {steps}")
    text = "\n".join(lines) or "_no steps: nothing downstream to rerun_"
    if len(text) > limit:
        kept: list[str] = []
        for line in lines:
            if len("\n".join([*kept, line])) > limit - 40:
                break
            kept.append(line)
        text = "\n".join(kept) + f"\n…and {len(lines) - len(kept)} more waves"
    return text


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
) -> SlackMessage:
    """The thread's first message: what the backfill is and where to follow it."""
    emoji = STATE_EMOJI.get(state, "")
    dry = " (dry run)" if config.dry_run else ""
    title = f"Backfill {config.name}{dry}: {state}"
    dates = compact_dates(config.days)
    pairs = [
        ("Backfill id", f"`{backfill_id}`"),
        ("Owner", escape(config.owner)),
        ("Mode", config.mode),
        ("Dates", f"{escape(dates)} ({len(config.days)} days)"),
    ]
    if config.hours is not None:
        pairs.append(("Hours", ", ".join(str(h) for h in config.hours)))
    if config.feeds is not None:
        pairs.append(("Feeds", escape(", ".join(config.feeds))))
    if config.jobs:
        pairs.append(("Jobs", escape(", ".join(str(job) for job in config.jobs))[:1900]))
    blocks: list[dict[str, Any]] = [_header(f"{emoji} {title}".strip()), _fields(pairs)]
    if note:
        blocks.append(_section(escape(note)))
    if plan is not None:
        steps = len(plan.steps)
        blocks.append(_section(f"*Plan:* {len(plan.waves)} waves, {steps} steps\n{plan_lines(plan, limit=MAX_SECTION - 60)}"))
        if plan.warnings:
            warnings = "\n".join(f":warning: {escape(w.message)}" for w in plan.warnings[:10])
            blocks.append(_context(warnings))
    if plan_uri:
        blocks.append(_context(f"Plan: `{escape(plan_uri)}`"))
    buttons = _link_buttons([("Airflow run", run_url), ("Lineage (Marquez)", lineage_url)])
    if buttons:
        blocks.append(buttons)
    return SlackMessage(text=f"{title} ({backfill_id}, {dates})", blocks=blocks)


def rejection_message(*, source_uri: str, issues: Sequence[ConfigIssue], name: str | None = None) -> SlackMessage:
    """An invalid config: every located error (the first MAX_LISTED_ERRORS)."""
    shown = [f"• `{escape(issue.location)}`: {escape(issue.message)}" for issue in issues[:MAX_LISTED_ERRORS]]
    if len(issues) > MAX_LISTED_ERRORS:
        shown.append(f"…and {len(issues) - MAX_LISTED_ERRORS} more (see the result file)")
    title = f"Backfill config rejected{f': {name}' if name else ''}"
    blocks = [
        _header(f"{STATE_EMOJI['REJECTED']} {title}"),
        _section(f"`{escape(source_uri)}` has {len(issues)} error{'s' if len(issues) != 1 else ''}:"),
        _section("\n".join(shown)),
        _context("Nothing was triggered. Fix the file and upload it again."),
    ]
    return SlackMessage(text=f"{title}: {source_uri} has {len(issues)} errors", blocks=blocks)


def already_known_message(*, backfill_id: str, state: str, source_uri: str, run_url: str | None) -> SlackMessage:
    text = (
        f"`{escape(source_uri)}` is the same config as backfill `{backfill_id}`, which is already known "
        f"(status *{state}*). Nothing new was triggered; to run it again, change its `name`."
    )
    blocks = [_section(f"{STATE_EMOJI.get(state, '')} {text}".strip())]
    buttons = _link_buttons([("Airflow run", run_url)])
    if buttons:
        blocks.append(buttons)
    return SlackMessage(text=f"Already known: {backfill_id} ({state})", blocks=blocks)


def status_message(*, backfill_id: str, state: str, detail: str | None = None, run_url: str | None = None) -> SlackMessage:
    """A later update in the backfill's thread (DAG progress, success, failure)."""
    line = f"{STATE_EMOJI.get(state, '')} `{backfill_id}` is *{state}*".strip()
    if detail:
        line += f": {escape(detail)}"
    blocks = [_section(line)]
    buttons = _link_buttons([("Airflow run", run_url)])
    if buttons:
        blocks.append(buttons)
    return SlackMessage(text=f"{backfill_id}: {state}{f' ({detail})' if detail else ''}"[:3000], blocks=blocks)
