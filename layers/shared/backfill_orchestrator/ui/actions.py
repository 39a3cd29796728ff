"""A press on the page: checked like a Slack button, then one control document, written by
the same code as `backfill cancel` (client.control_requests), which the trigger acts on.

In order, each step able to refuse with nothing written: the action is one the page offers,
the backfill exists, the deployment's policy knows the Airflow user (a person whose `airflow`
globs match the user name, or a grant naming `airflow:<user>`), and `policy.check_action`
allows it now (the lifecycle's state rule, the grants, four eyes, expiry). The document's
`requested_by` is `airflow:<user name>`; the trigger accepts it for that user because the
Airflow environment's role is one of its `CONTROL_DELEGATES`, and checks the grants again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.client.control_requests import request_control
from backfill_orchestrator.contracts.control_request import is_person_action
from backfill_orchestrator.identity import airflow_principal
from backfill_orchestrator.interactivity.facts import facts_from_plain
from backfill_orchestrator.policy import Policy, check_action, grants_of, person_of
from backfill_orchestrator.status import StatusRecord
from backfill_orchestrator.ui.states import ACTIONS

MAX_REASON = 400


@dataclass(frozen=True)
class Press:
    """What became of a press: `requested` (a control document was written: `control` names it,
    the trigger's answer follows) or `refused` (nothing written; `rule` and `reason` say why)."""

    outcome: str
    reason: str
    rule: str | None = None
    control: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "reason": self.reason, "rule": self.rule, "control": self.control}


def refused(reason: str, rule: str) -> Press:
    return Press("refused", reason, rule=rule)


@dataclass
class ActionDesk:
    bucket: str
    s3_client: Any
    policy: Callable[[], Policy | None]
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    def press(self, *, action: str, record: StatusRecord, user_name: str, reason: str | None) -> Press:
        if not is_person_action(action) or action not in ACTIONS:
            return refused(f"{action[:40]!r} is not an action of this page", "page")
        principal = airflow_principal(user_name)
        policy = self.policy()
        if policy is not None and person_of(policy, principal) is None and not grants_of(policy, principal):
            return refused(
                f"Airflow user {user_name} is not in the deployment's policy (people.<name>.airflow)",
                "grants",
            )
        now = self.clock()
        decision = check_action(
            policy,
            principal=principal,
            action=action,
            backfill=facts_from_plain(record.as_dict()),
            now=now,
        )
        if decision.refused:
            return refused("; ".join(decision.reasons), decision.rule or "policy")
        why = (reason or "").strip()[:MAX_REASON] or "pressed"
        receipt = request_control(
            action,
            record.backfill_id,
            reason=f"{why} ({ACTIONS[action].label} in the Airflow UI by {user_name})",
            bucket=self.bucket,
            requested_by=principal.display,
            now=now,
            s3_client=self.s3_client,
            wait=False,  # the page polls the trigger's answer itself
        )
        if receipt.key is None:  # refused before anything was written
            return refused(receipt.reason, "state")
        name = receipt.key.rsplit("/", 1)[-1]
        return Press("requested", f"{ACTIONS[action].label}: the orchestrator is acting on it", control=name)
