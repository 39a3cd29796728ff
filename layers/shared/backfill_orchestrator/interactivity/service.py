"""One Slack interactive request, from the raw HTTP request to a control document.

In order, each step able to refuse (nothing written, logged, counted, and the presser told
why when the request is proven to come from Slack):
1. signature and freshness (`verify.verify_signature`), 2. replay (`verify.ReplayGuard`),
3. the `block_actions` payload, 4. the Slack user in the policy, 5. the backfill's record,
6. `policy.check_action` (permission, four eyes, expiry, state).
Then one control document is written to S3 (the trigger does the work asynchronously), the
thread message is updated through the payload's `response_url`, and Slack gets its 200, all
well within Slack's 3-second limit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.identity import slack_principal
from backfill_orchestrator.interactivity.blocks import ephemeral, pressed_message
from backfill_orchestrator.interactivity.control_writer import ControlDocument
from backfill_orchestrator.interactivity.errors import (
    ActionNotAllowedError,
    ApprovalExpiredError,
    InteractionRefused,
    NotPermittedError,
    SelfApprovalError,
    UnknownBackfillError,
    UnknownSlackUserError,
)
from backfill_orchestrator.interactivity.payload import Interaction, SlackRequest, parse_interaction
from backfill_orchestrator.interactivity.verify import ReplayGuard, verify_signature
from backfill_orchestrator.policy import (
    BackfillFacts,
    Policy,
    check_action,
    grants_of,
    person_of,
    slack_groups_named,
)

logger = logging.getLogger(__name__)

_REFUSAL_BY_RULE: dict[str, type[InteractionRefused]] = {
    "state": ActionNotAllowedError,
    "four_eyes": SelfApprovalError,
    "publish.four_eyes": SelfApprovalError,
}
_PAST_TENSE = {
    "approve": "approved",
    "reject": "rejected",
    "cancel": "cancelled",
    "retry": "retried",
    "publish": "published",
    "discard": "discarded",
    "undo": "undone",
}


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class InteractivityService:
    signing_secret: Callable[[], str]
    replay_guard: ReplayGuard
    policy: Callable[[], Policy | None]
    backfill_facts: Callable[[str], BackfillFacts | None]
    write_control: Callable[[ControlDocument], str]  # returns the document's URI
    respond: Callable[[str, dict[str, Any]], None]  # best effort POST to a response_url
    count: Callable[[str], None]
    clock: Callable[[], datetime] = _utc_now
    # (user id, groups the policy names) -> the ones the user is in; None: groups are not looked up
    slack_groups_of: Callable[[str, frozenset[str]], frozenset[str]] | None = None

    def handle(self, request: SlackRequest) -> dict[str, Any]:
        """The HTTP response for API Gateway: 200 when Slack's request was handled (acted on
        or refused with a reply to the presser), 401/409/400 for requests not from Slack,
        replays or malformed payloads, 503 when a service failed (nothing was written)."""
        now = self.clock()
        interaction: Interaction | None = None
        try:
            signature = verify_signature(
                signing_secret=self.signing_secret(),
                body=request.body,
                headers=request.headers,
                now=now.timestamp(),
            )
            self.replay_guard.first_use(signature)
            interaction = parse_interaction(request.body)
            document = self._decide(interaction, now)
            uri = self.write_control(document)
        except InteractionRefused as refusal:
            return self._refuse(refusal, interaction)
        except ServiceError as error:
            logger.error("Slack request not processed: %s", error)
            self.count("SlackServiceFailures")
            if interaction is not None and interaction.response_url:
                self._respond(
                    interaction.response_url,
                    ephemeral(
                        f"Could not record your request ({type(error).__name__}); nothing changed, please try again."
                    ),
                )  # noqa: E501
            return _http(503, "service unavailable; nothing changed")
        self.count("SlackControlWritten")
        logger.info(
            "control document written",
            extra={
                "backfill_id": document.backfill_id,
                "action": document.action,
                "requested_by": document.requested_by,
                "uri": uri,
            },
        )
        if interaction.response_url:
            note = (
                f"{_PAST_TENSE[interaction.action].capitalize()} by <@{interaction.user_id}> at "
                f"{now.strftime('%Y-%m-%d %H:%M:%S UTC')}; the orchestrator is acting on it."
            )
            self._respond(interaction.response_url, pressed_message(interaction.message_blocks, note=note))
        return _http(200, "")

    def _decide(self, interaction: Interaction, now: datetime) -> ControlDocument:
        policy = self.policy()
        if policy is None:
            raise UnknownSlackUserError(
                "this deployment has no policy, so no Slack user may act on backfills"
            )
        named_groups = slack_groups_named(policy)
        groups = (
            self.slack_groups_of(interaction.user_id, named_groups)
            if named_groups and self.slack_groups_of is not None
            else frozenset()
        )
        principal = slack_principal(interaction.user_id, groups=groups)
        if person_of(policy, principal) is None and not grants_of(policy, principal):
            raise UnknownSlackUserError(f"Slack user {interaction.user_id} is not in the deployment's policy")
        facts = self.backfill_facts(interaction.backfill_id)
        if facts is None:
            raise UnknownBackfillError(f"no backfill {interaction.backfill_id!r} is known")
        decision = check_action(
            policy, principal=principal, action=interaction.action, backfill=facts, now=now
        )
        if decision.refused and decision.rule == ApprovalExpiredError.RULE:
            raise ApprovalExpiredError("; ".join(decision.reasons))
        if decision.refused:
            refusal = _REFUSAL_BY_RULE.get(decision.rule or "", NotPermittedError)
            raise refusal(f"{'; '.join(decision.reasons)} (rule: {decision.rule})")
        who = f"@{interaction.user_name}" if interaction.user_name else interaction.user_id
        return ControlDocument(
            action=interaction.action,
            backfill_id=interaction.backfill_id,
            reason=f"{interaction.action} pressed in Slack by {who} ({interaction.user_id})",
            requested_by=principal.display,
            requested_at=now,
        )

    def _refuse(self, refusal: InteractionRefused, interaction: Interaction | None) -> dict[str, Any]:
        self.count(refusal.metric)
        logger.warning(
            "Slack request refused: %s",
            refusal,
            extra={
                "refusal": type(refusal).__name__,
                "slack_user": interaction.user_id if interaction else None,
                "backfill_id": interaction.backfill_id if interaction else None,
            },
        )
        if refusal.tell_user and interaction is not None and interaction.response_url:
            self._respond(interaction.response_url, ephemeral(f"Refused: {refusal}"))
        return _http(refusal.http_status, str(refusal) if refusal.tell_user else "refused")

    def _respond(self, url: str, body: dict[str, Any]) -> None:
        try:
            self.respond(url, body)
        except Exception as error:  # a reply that fails must not undo or fail the request
            logger.warning("Slack response_url call failed: %s", error)
            self.count("SlackResponseFailures")


def _http(status: int, text: str) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"Content-Type": "text/plain; charset=utf-8"}, "body": text}
