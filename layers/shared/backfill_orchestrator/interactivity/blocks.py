"""Block Kit for the control buttons in a backfill's thread, and the message after a press.
The `action_id`s are what `payload.parse_interaction` accepts; the value is the backfill id."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from backfill_orchestrator.contracts.control_request import PersonAction
from backfill_orchestrator.interactivity.payload import ACTION_PREFIX

_LABELS: dict[str, tuple[str, str | None]] = {
    "approve": ("Approve", "primary"),
    "reject": ("Reject", "danger"),
    "cancel": ("Cancel", "danger"),
    "retry": ("Retry failed", None),
    "publish": ("Publish", "primary"),
    "discard": ("Discard", "danger"),
    "undo": ("Undo", "danger"),
}


def control_buttons(backfill_id: str, actions: Sequence[PersonAction]) -> dict[str, Any]:
    """An `actions` block with one button per action (post it in the backfill's thread)."""
    elements = []
    for action in actions:
        label, style = _LABELS[action]
        button: dict[str, Any] = {
            "type": "button",
            "text": {"type": "plain_text", "text": label},
            "action_id": f"{ACTION_PREFIX}{action}",
            "value": backfill_id,
        }
        if style:
            button["style"] = style
        elements.append(button)
    return {"type": "actions", "block_id": f"control-{backfill_id}"[:255], "elements": elements}


def pressed_message(blocks: Iterable[dict[str, Any]], *, note: str) -> dict[str, Any]:
    """The thread message after a press: our buttons replaced by a note of who did what,
    so nobody presses twice (a response_url body with replace_original)."""
    kept = [
        block
        for block in blocks
        if not (block.get("type") == "actions" and str(block.get("block_id", "")).startswith("control-"))
    ]
    kept.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note[:3000]}]})
    return {"replace_original": True, "text": note[:3000], "blocks": kept}


def ephemeral(text: str) -> dict[str, Any]:
    """A reply only the presser sees (a response_url body)."""
    return {"response_type": "ephemeral", "replace_original": False, "text": text[:3000]}
