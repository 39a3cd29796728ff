"""Why a Slack request was refused. Each refusal changes nothing, is logged and is counted
under its `metric`."""

from __future__ import annotations

from backfill_orchestrator.errors import PolicyRefusal
from backfill_orchestrator.policy.errors import ApprovalRefusedError


class InteractionRefused(PolicyRefusal):
    """A Slack request that is not acted on. `metric` is the counter it is counted under;
    `tell_user` is False for requests not proven to come from Slack (nobody to answer)."""

    metric = "SlackRefused"
    http_status = 200
    tell_user = True


class BadSignatureError(InteractionRefused):
    metric, http_status, tell_user = "SlackBadSignature", 401, False


class StaleRequestError(InteractionRefused):
    metric, http_status, tell_user = "SlackStaleRequest", 401, False


class ReplayedRequestError(InteractionRefused):
    metric, http_status, tell_user = "SlackReplayedRequest", 409, False


class MalformedInteractionError(InteractionRefused):
    metric, http_status = "SlackMalformedInteraction", 400


class UnknownSlackUserError(InteractionRefused):
    metric = "SlackUnknownUser"


class UnknownBackfillError(InteractionRefused):
    metric = "SlackUnknownBackfill"


class NotPermittedError(InteractionRefused):
    metric = "SlackNotPermitted"


class SelfApprovalError(InteractionRefused):
    metric = "SlackSelfApproval"


class ApprovalExpiredError(InteractionRefused, ApprovalRefusedError):
    """An approval that came after its request expired (the policy's `approval.expires_after_hours`):
    nobody can approve that backfill any more. One class for both doors: the Slack function
    refuses the press, the trigger refuses the control document (after moving the backfill
    to REJECTED)."""

    metric = "SlackApprovalExpired"
    RULE = "approval.expires_after_hours"

    def __init__(self, message: str):
        super().__init__(message, rule=self.RULE)


class ActionNotAllowedError(InteractionRefused):
    """The action does not apply in the backfill's current state."""

    metric = "SlackActionNotAllowed"
