"""Why a Slack request was refused. Each refusal changes nothing, is logged and is counted
under its `metric`."""

from __future__ import annotations

from backfill_orchestrator.errors import PolicyRefusal


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


class ApprovalExpiredError(InteractionRefused):
    metric = "SlackApprovalExpired"


class ActionNotAllowedError(InteractionRefused):
    """The action does not apply in the backfill's current state."""

    metric = "SlackActionNotAllowed"
