"""The status record of one backfill: its state, what happened, and where to read more.

States and who writes them:
- RECEIVED (trigger: the config arrived and is being processed)
- REJECTED (trigger: invalid config or a refused plan; `errors` holds the located errors)
- PLANNED (trigger: plan stored; a dry run ends here; recorded only where a backfill may stop
  before its trigger: a dry run, a policy, a claims table; otherwise TRIGGERED carries the plan)
- AWAITING_APPROVAL (trigger: the policy wants a second person; `approval_requested_at`,
  `approvers`, `root_jobs`; approve -> TRIGGERED or QUEUED, reject or expiry -> REJECTED)
- TRIGGERED (trigger: the DAG run exists; `dag_run_id`, `dag_run_url`)
- RUNNING, SUCCEEDED, FAILED (generic DAG, replay function; FAILED also from the trigger
  with `reason`, and `retryable` true when redelivering the event may succeed)
- AWAITING_PUBLISH (generic DAG: steps staged and held by the publish policy; `publish` holds
  the held steps, their reasons and a bounded diff; publish -> TRIGGERED or SUCCEEDED,
  discard -> DISCARDED)
- DISCARDED, UNDONE (trigger: the `discard` and `undo` control documents; `publish` says who)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backfill_orchestrator.contracts.states import BackfillState

S = BackfillState
# to-state -> the states it may follow. A FAILED DAG run can be cleared and rerun in
# Airflow, so RUNNING/SUCCEEDED may follow FAILED. RECEIVED is re-entered only through
# `StatusStore.reclaim` (a redelivered event taking over), never through `transition`.
ALLOWED_FROM: dict[BackfillState, frozenset[BackfillState]] = {
    # PLANNED: refused by overlap or policy after planning; AWAITING_APPROVAL: rejected or expired
    S.REJECTED: frozenset({S.RECEIVED, S.PLANNED, S.AWAITING_APPROVAL}),
    S.PLANNED: frozenset({S.RECEIVED}),
    S.AWAITING_APPROVAL: frozenset(
        {S.PLANNED, S.AWAITING_APPROVAL}
    ),  # itself: the approval, before admission
    # RECEIVED: held back by the claims straight after planning (QUEUED carries the plan)
    S.QUEUED: frozenset({S.RECEIVED, S.PLANNED, S.AWAITING_APPROVAL}),
    # RECEIVED: a batch backfill nothing holds back is triggered straight after planning (the
    # plan is at its fixed key, and a retry finds the run by its id); QUEUED: started when the
    # backfill it waited for ended; AWAITING_APPROVAL: approved; FAILED/CANCELLED: a retry
    # attempt (only that: a first trigger never moves a record back, see TRIGGER_FROM)
    # AWAITING_PUBLISH: published, the rest goes on in attempt n+1; DISCARDED, UNDONE: a retry
    S.TRIGGERED: frozenset(
        {
            S.RECEIVED,
            S.PLANNED,
            S.AWAITING_APPROVAL,
            S.QUEUED,
            S.FAILED,
            S.CANCELLED,
            S.AWAITING_PUBLISH,
            S.DISCARDED,
            S.UNDONE,
        }
    ),
    # The DAG's own states, also straight after the trigger's RECEIVED or PLANNED: a run
    # Airflow accepted before the trigger recorded TRIGGERED (an attempt killed in between).
    S.RUNNING: frozenset({S.RECEIVED, S.PLANNED, S.TRIGGERED, S.RUNNING, S.FAILED}),
    # AWAITING_PUBLISH: published, and nothing was left to run
    S.SUCCEEDED: frozenset({S.RECEIVED, S.PLANNED, S.TRIGGERED, S.RUNNING, S.FAILED, S.AWAITING_PUBLISH}),
    # The DAG's `finish` when every step that did not succeed is held for publish (or waits for one)
    S.AWAITING_PUBLISH: frozenset({S.RECEIVED, S.PLANNED, S.TRIGGERED, S.RUNNING, S.FAILED}),
    S.DISCARDED: frozenset({S.AWAITING_PUBLISH}),
    S.UNDONE: frozenset({S.SUCCEEDED}),
    S.FAILED: frozenset({S.RECEIVED, S.PLANNED, S.QUEUED, S.TRIGGERED, S.RUNNING}),
    S.CANCELLED: frozenset({S.RECEIVED, S.PLANNED, S.AWAITING_APPROVAL, S.QUEUED, S.TRIGGERED, S.RUNNING}),
}
# The states a backfill's first DAG run is recorded TRIGGERED from: whatever the trigger left
# before it. A DAG that got ahead (RUNNING, SUCCEEDED, FAILED) is never moved back.
TRIGGER_FROM = frozenset({S.RECEIVED, S.PLANNED, S.AWAITING_APPROVAL, S.QUEUED})
TERMINAL_STATES = frozenset({S.REJECTED, S.SUCCEEDED, S.CANCELLED, S.DISCARDED, S.UNDONE})
# States in which a backfill may still write: its claims hold (claims/registry.py). A backfill
# AWAITING_PUBLISH holds them: what it staged replaces those partitions once published.
LIVE_STATES = frozenset(
    {S.RECEIVED, S.PLANNED, S.AWAITING_APPROVAL, S.QUEUED, S.TRIGGERED, S.RUNNING, S.AWAITING_PUBLISH}
)


@dataclass(frozen=True)
class StatusRecord:
    """One backfill's record, as stored (attribute names are the DynamoDB attribute names)."""

    backfill_id: str
    state: BackfillState
    version: int
    created_at: str
    updated_at: str
    name: str | None = None
    owner: str | None = None  # the config's contact; free text, not an identity
    submitted_by: str | None = None  # who uploaded it (identity.Principal.display), from the S3 event
    mode: str | None = None
    dry_run: bool = False
    source_uri: str | None = None
    uploads: frozenset[str] = frozenset()  # the first upload (further ones: StatusStore.add_upload)
    lease_until: int = 0
    lease_holder: str | None = None  # the Lambda request id of the attempt holding the lease
    attempts: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)  # the first MAX_RECORD_ERRORS
    errors_total: int | None = None  # how many errors there were in all (see the result file)
    reason: str | None = None
    retryable: bool = False
    config_uri: str | None = None
    plan_uri: str | None = None
    plan_summary: dict[str, Any] | None = None
    dag_id: str | None = None
    dag_run_id: str | None = None
    dag_run_url: str | None = None
    slack_channel: str | None = None
    slack_thread_ts: str | None = None
    pagerduty_open: bool = False
    # The latest entries ({state, at, detail, by}); older ones are in chunk items of their own
    # (status/history.py): `history_archived` of them. `StatusStore.get(id, full_history=True)`
    # reads them all.
    history: list[dict[str, Any]] = field(default_factory=list)
    history_archived: int = 0
    # Replay progress (mode replay): set by the trigger, counted by the replay function.
    tasks_total: int | None = None
    tasks_done: int = 0
    tasks_failed: int = 0
    tasks_empty: int = 0  # tasks that found nothing archived under their prefix
    messages_sent: int = 0
    messages_failed: int = 0
    # Batch progress, kept by the DAG: steps/dates done of total, current wave (status/watch.py).
    progress: dict[str, Any] | None = None
    run_attempt: int = 1  # the DAG run attempt: 1, then 2, 3, ... for each retry of failed work
    # Control documents acted on, as records created before control actions had items of their
    # own (status/actions.py) kept them: still answered as duplicates, never added to.
    controls: frozenset[str] = frozenset()
    # The approval gate (trigger/approval.py): when it was asked for, which policy grants may
    # approve (empty: any grant with `approve` over the root jobs), the root jobs, why, and
    # the decision ({outcome: approved|rejected|expired, by, at, reason}).
    approval_requested_at: str | None = None
    approvers: list[str] = field(default_factory=list)
    root_jobs: list[str] = field(default_factory=list)
    approval_reasons: list[str] = field(default_factory=list)
    approval: dict[str, Any] | None = None
    # Safe publish (trigger/publish_actions.py, the DAG's finish): the held steps with their
    # hold reasons and bounded diffs, and the decisions ({publish|discard|undo: {by, at, reason}}).
    publish: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (for the CLI and the outcome files)."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["state"] = str(self.state)
        data["uploads"] = sorted(self.uploads)
        data["controls"] = sorted(self.controls)
        return data
