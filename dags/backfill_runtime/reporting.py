"""Status record and notifications for a backfill's DAG run, through the shared package's
`StatusStore` and `Notifier` (Slack thread + PagerDuty, dedup key = backfill id).

Where they are comes from `[backfill]` options (env `AIRFLOW__BACKFILL__<NAME>`; MWAA
configuration options `backfill.<name>`): status_table, slack_secret_id, slack_api_url,
slack_channel, pagerduty_secret_id, pagerduty_events_url, airflow_ui_url, plan_link_base,
secrets_max_age_seconds. Each is optional: without a status table nothing is recorded,
without a secret nothing is posted (and the task log says so). The Notifier is built by
`notify.build_notifier`, as in the trigger and replay functions.

Notifications never fail the run (the Notifier logs delivery and secret problems). A status
store that cannot be reached does raise, so the task retries: the record is how people and
the CLI follow a backfill."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from backfill_orchestrator.config import BackfillConfig
from backfill_orchestrator.contracts import BackfillReport, HeldStep, Plan, RunReport, StepStatus
from backfill_orchestrator.contracts.control_request import PersonAction
from backfill_orchestrator.contracts.publish import MAX_HELD_STEPS
from backfill_orchestrator.interactivity.blocks import control_buttons
from backfill_orchestrator.notify import Notifier, build_notifier, status_message
from backfill_orchestrator.notify.messages import backfill_message, publish_request_message
from backfill_orchestrator.redaction import install as install_redaction
from backfill_orchestrator.secrets import SecretReader
from backfill_orchestrator.settings import DEFAULT_PAGERDUTY_EVENTS_URL, DEFAULT_SLACK_API_URL, NotifySettings
from backfill_orchestrator.status import (
    BackfillState,
    RecordNotFoundError,
    StatusStore,
    TransitionRejectedError,
)
from backfill_runtime.results import follow_result

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger as PowertoolsLogger

log = logging.getLogger(__name__)
PUBLISH_BUTTONS: tuple[PersonAction, ...] = ("publish", "discard")  # a backfill AWAITING_PUBLISH
MAX_LISTED_PROBLEMS = 50  # steps listed on the record and in the result file (both are size-bounded)


def _option(key: str, default: str = "") -> str:
    from backfill_runtime.options import _get

    return _get(key, default)


def write_plan_picture(plan: Plan, plan_uri: str) -> str | None:
    """Write `plan.html` beside `plan.json` (the trigger leaves it to the run, one round trip
    fewer for it; a queued or approved backfill's picture is rewritten the same) and return
    its link for Slack (`[backfill] plan_link_base`, else the S3 console). Best effort: a
    picture that cannot be written is logged and not linked; it never fails the run."""
    import os

    from backfill_orchestrator.documents import sibling, write_text
    from backfill_orchestrator.notify.messages import PLAN_LINK_BASE_ENV, plan_page_url
    from backfill_orchestrator.preflight.render import render_html

    if not plan_uri.endswith("/plan.json"):
        return None
    try:
        write_text(sibling(plan_uri, "plan.html"), render_html(plan), content_type="text/html; charset=utf-8")
    except Exception as error:  # noqa: BLE001 - a picture is not worth a backfill
        log.warning("plan picture not written beside %s: %s", plan_uri, error)
        return None
    environ = {
        **os.environ,
        PLAN_LINK_BASE_ENV: _option("plan_link_base") or os.environ.get(PLAN_LINK_BASE_ENV, ""),
    }
    return plan_page_url(plan_uri, environ=environ)


@dataclass
class Reporting:
    store: StatusStore | None
    notifier: Notifier
    airflow_ui_url: str | None

    @classmethod
    def from_options(cls) -> Reporting:
        import boto3
        from aws_lambda_powertools.utilities.parameters import SecretsProvider

        install_redaction()  # the secrets read below never reach the task log (nor a library's lines)

        store = None
        if table := _option("status_table"):
            store = StatusStore(table_name=table, dynamodb_client=boto3.client("dynamodb"))
        settings = NotifySettings(
            slack_channel=_option("slack_channel") or None,
            slack_secret_id=_option("slack_secret_id") or None,
            slack_api_url=_option("slack_api_url", DEFAULT_SLACK_API_URL),
            pagerduty_secret_id=_option("pagerduty_secret_id") or None,
            pagerduty_events_url=_option("pagerduty_events_url", DEFAULT_PAGERDUTY_EVENTS_URL),
        )
        secrets = SecretReader(
            provider=SecretsProvider(boto3_client=boto3.client("secretsmanager")),
            max_age=int(_option("secrets_max_age_seconds", "300")),
        )
        notifier = build_notifier(
            settings=settings, secrets=secrets, metrics=None, status_store=store, source="backfill-dag"
        )
        return cls(store=store, notifier=notifier, airflow_ui_url=_option("airflow_ui_url") or None)

    def run_url(self, dag_id: str, run_id: str) -> str | None:
        if not self.airflow_ui_url:
            return None
        return (
            f"{self.airflow_ui_url.rstrip('/')}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
        )

    # -- the three moments ---------------------------------------------------------------
    def refused(
        self,
        *,
        backfill_id: str | None,
        problems: list[str],
        run_url: str | None,
        result_uri: str | None = None,
    ) -> None:
        """The run cannot start (bad conf, unreadable plan): record FAILED, tell Slack."""
        detail = "the DAG run was refused: " + "; ".join(problems)
        if backfill_id:
            self._transition(
                backfill_id, BackfillState.FAILED, detail=detail[:1000], attributes={"reason": detail[:1000]}
            )
        self.notifier.slack(
            backfill_id,
            status_message(
                backfill_id=backfill_id or "unknown backfill", state="FAILED", detail=detail, run_url=run_url
            ),
        )
        follow_result(
            result_uri, outcome="accepted", state=BackfillState.FAILED, reason=detail[:2000], retrying=None
        )

    def started(
        self,
        *,
        backfill_id: str,
        config: BackfillConfig,
        plan: Plan,
        rounds: int,
        run_url: str | None,
        result_uri: str | None = None,
        spark_profile: str | None = None,
        plan_uri: str | None = None,
    ) -> None:
        detail = f"{len(plan.steps)} steps in {rounds} round{'s' if rounds != 1 else ''}"
        if spark_profile:
            detail += f"; Spark {spark_profile}"
        self._transition(backfill_id, BackfillState.RUNNING, detail=detail)
        plan_page = write_plan_picture(plan, plan_uri) if plan_uri else None
        if self._thread_exists(backfill_id):
            message = status_message(
                backfill_id=backfill_id, state="RUNNING", detail=detail, run_url=run_url, plan_page=plan_page
            )
        else:  # started outside the trigger function, or its message was lost: open the thread with the full picture
            message = backfill_message(
                config=config,
                backfill_id=backfill_id,
                plan=plan,
                state="RUNNING",
                run_url=run_url,
                plan_uri=plan_uri if plan_page else None,
                plan_page=plan_page,
            )
        self.notifier.slack(backfill_id, message, channel=config.notify.slack_channel)
        changes: dict[str, Any] = {"dag_run_url": run_url} if run_url else {}
        follow_result(
            result_uri, outcome="accepted", state=BackfillState.RUNNING, reason=None, retrying=None, **changes
        )

    def release_claims(self, backfill_id: str) -> list[str]:
        """Drop the backfill's claims (`[backfill] claims_table`) and drop a `start` document
        under `[backfill] control_uri` (s3://<config bucket>/control/) for each queued backfill
        that can run now. Without the options (or a status table) there are no claims."""
        table, control_uri = _option("claims_table"), _option("control_uri")
        if not (table and control_uri and self.store is not None):
            return []
        import boto3

        from backfill_orchestrator.claims import registry_for, release_and_start_queued

        registry = registry_for(
            dynamodb_client=boto3.client("dynamodb"), table_name=table, status_store=self.store
        )
        started = release_and_start_queued(
            registry, backfill_id, control_uri=control_uri, now=datetime.now(UTC)
        )
        if started:
            log.info("released the claims of %s; starting %s", backfill_id, ", ".join(started))
        return started

    def finished(
        self,
        *,
        config: BackfillConfig | None,
        report: BackfillReport,
        report_uri: str,
        run_url: str | None,
        result_uri: str | None = None,
        publish_location: dict[str, str] | None = None,
    ) -> None:
        """`publish_location`: the publish root and warehouse the Spark job used, recorded (the
        record's `publish`) for the trigger's publish, discard and undo."""
        backfill_id = report.backfill_id
        figures = report.figures
        summary = figures.text(total_steps=len(report.steps))
        paging = config.notify.pagerduty if config is not None else True
        channel = config.notify.slack_channel if config is not None else None
        publish = self._publish_attribute(backfill_id, publish_location)
        if report.awaiting_publish:
            self._awaiting_publish(
                report,
                report_uri=report_uri,
                run_url=run_url,
                result_uri=result_uri,
                channel=channel,
                publish=publish or {},
            )
            return
        if report.succeeded:
            detail = f"{summary}; report {report_uri}"
            self._transition(
                backfill_id,
                BackfillState.SUCCEEDED,
                detail=detail[:1000],
                attributes={"publish": publish} if publish else None,
            )
            self.notifier.slack(
                backfill_id,
                status_message(backfill_id=backfill_id, state="SUCCEEDED", detail=detail, run_url=run_url),
                channel=channel,
            )
            self.notifier.resolve(backfill_id, enabled=paging)
            follow_result(
                result_uri,
                state=BackfillState.SUCCEEDED,
                report_uri=report_uri,
                figures=figures,
                failed_steps=None,
                reason=None,
            )
            return
        problems = report.problems
        failed = [p.step for p in problems if p.status is StepStatus.FAILED]
        blocked = [p.step for p in problems if p.status is StepStatus.BLOCKED]
        errors = [problem.model_dump(mode="json") for problem in problems[:MAX_LISTED_PROBLEMS]]
        reason = f"{len(failed)} step(s) failed: {', '.join(failed)}" + (
            f"; {len(blocked)} not run" if blocked else ""
        )
        self._transition(
            backfill_id,
            BackfillState.FAILED,
            detail=reason[:1000],
            attributes={"reason": reason[:1000], "errors": errors},
        )
        lines = [f"{reason}. {summary}."]
        lines += [f"{p.step}: {p.message}" for p in problems[:10]]
        self.notifier.slack(
            backfill_id,
            status_message(backfill_id=backfill_id, state="FAILED", detail="\n".join(lines), run_url=run_url),
            channel=channel,
        )
        self.notifier.page(
            backfill_id,
            summary=f"Backfill {backfill_id} failed: {reason}"[:1000],
            enabled=paging,
            component="backfill-dag",
            details={
                "failed_steps": failed,
                "blocked_steps": blocked,
                **figures.model_dump(),
                "report": report_uri,
            },
            links=[{"href": run_url, "text": "Airflow run"}] if run_url else None,
        )
        follow_result(
            result_uri,
            state=BackfillState.FAILED,
            report_uri=report_uri,
            figures=figures,
            failed_steps=problems[:MAX_LISTED_PROBLEMS],
            reason=reason[:2000],
        )

    def _awaiting_publish(
        self,
        report: BackfillReport,
        *,
        report_uri: str,
        run_url: str | None,
        result_uri: str | None,
        channel: str | None,
        publish: dict[str, Any],
    ) -> None:
        """AWAITING_PUBLISH: the held steps with their reasons and the top of their diffs on the
        record, in the result file and in the thread, with Publish / Discard buttons. No page:
        nothing failed; the claims stay."""
        backfill_id = report.backfill_id
        held = held_steps(report)
        waiting = [p.step for p in report.problems if p.status is StepStatus.BLOCKED]
        names = [step.step for step in held] or [
            p.step for p in report.problems if p.status is StepStatus.AWAITING_PUBLISH
        ]
        reason = (
            f"awaiting publish: {', '.join(names)} staged and held by the publish policy"
            + (f"; {len(waiting)} steps wait for it" if waiting else "")
            + "; publish or discard it"
        )
        attributes = {
            "reason": reason[:1000],
            "publish": {
                **publish,
                "held": [step.model_dump(mode="json") for step in held[:MAX_HELD_STEPS]],
                "held_total": len(names),
            },
        }
        self._transition(
            backfill_id, BackfillState.AWAITING_PUBLISH, detail=reason[:1000], attributes=attributes
        )
        self.notifier.slack(
            backfill_id,
            publish_request_message(
                backfill_id=backfill_id,
                reason=reason,
                held=held,
                run_url=run_url,
                buttons=control_buttons(backfill_id, PUBLISH_BUTTONS),
            ),
            channel=channel,
        )
        follow_result(
            result_uri,
            outcome="awaiting_publish",
            state=BackfillState.AWAITING_PUBLISH,
            report_uri=report_uri,
            figures=report.figures,
            failed_steps=None,
            held_steps=held[:MAX_HELD_STEPS],
            reason=reason[:2000],
        )

    def _publish_attribute(self, backfill_id: str, location: dict[str, str] | None) -> dict[str, Any] | None:
        """The record's `publish` with where this run published (earlier decisions kept)."""
        if not location or self.store is None:
            return None
        record = self.store.get(backfill_id)
        current = dict(record.publish or {}) if record is not None else {}
        current.pop("held", None)
        current.pop("held_total", None)
        return {**current, **location}

    def unreported_failure(
        self,
        *,
        backfill_id: str,
        dag_run_id: str,
        reason: str,
        run_url: str | None,
        result_uri: str | None = None,
    ) -> bool:
        """The DAG run failed and no task recorded the backfill's end: `finish` did not run or
        could not report (Airflow's API server unreachable, the run's tasks lost). Pages,
        records FAILED and posts as `finish` would, and releases the claims. A record that has
        ended (finish reported, a cancel came first), or that follows another run (a
        continuation, a later attempt), is left alone. True when it reported.

        The page goes first: this runs once (the dag-processor's callback is never retried), so
        a crash after it leaves the record live for the trigger's sweep, which records FAILED
        and does not page again (`pagerduty_open`); recording first would let a crash lose
        the page, since nothing pages for a record that has already ended."""
        if self.store is None:
            return False
        record = self.store.get(backfill_id)
        if record is None or record.state not in (BackfillState.TRIGGERED, BackfillState.RUNNING):
            return False
        if record.dag_run_id and record.dag_run_id != dag_run_id:
            return False
        detail = (
            f"the DAG run {dag_run_id} failed before it could report the backfill's end ({reason});"
            " `backfill retry` reruns what did not succeed"
        )
        self.notifier.page(
            backfill_id,
            summary=f"Backfill {backfill_id} failed: {detail}"[:1000],
            enabled=True,
            component="backfill-dag",
            details={"dag_run_id": dag_run_id, "reason": reason[:500]},
            links=[{"href": run_url, "text": "Airflow run"}] if run_url else None,
        )
        self._transition(
            backfill_id, BackfillState.FAILED, detail=detail[:1000], attributes={"reason": detail[:1000]}
        )
        self.notifier.slack(
            backfill_id,
            status_message(backfill_id=backfill_id, state="FAILED", detail=detail, run_url=run_url),
        )
        follow_result(
            result_uri, outcome="accepted", state=BackfillState.FAILED, reason=detail[:2000], retrying=None
        )
        self.release_claims(backfill_id)
        return True

    # -- internals -----------------------------------------------------------------------
    def _transition(
        self, backfill_id: str, state: BackfillState, *, detail: str, attributes: dict[str, Any] | None = None
    ) -> None:
        if self.store is None:
            return
        try:
            self.store.transition(backfill_id, state, detail=detail, attributes=attributes)
        except (TransitionRejectedError, RecordNotFoundError) as error:
            # A run started by hand (no record) or a record moved on meanwhile: say so, go on.
            log.warning("status of %s not set to %s: %s", backfill_id, state, error)

    def _thread_exists(self, backfill_id: str) -> bool:
        if self.store is None:
            return False
        record = self.store.get(backfill_id)
        return bool(record and record.slack_thread_ts)


def readable_run_reports(
    report: BackfillReport, *, logger: logging.Logger | PowertoolsLogger, unread: str
) -> Iterator[RunReport]:
    """The run's Spark run reports, each read from its document. One that cannot be read is
    logged (`unread`: what goes missing, `%s` the report's URI) and left out: informing and
    observing must not fail the run."""
    from backfill_orchestrator.contracts import InvalidDocumentError
    from backfill_orchestrator.documents import DocumentError, read_text

    for uri in report.spark_reports:
        try:
            run_report = RunReport.from_json(read_text(uri), source=uri)
        except (DocumentError, InvalidDocumentError) as error:
            logger.warning(f"{unread}: %s", uri, str(error)[:300])
            continue
        yield run_report


def held_steps(report: BackfillReport) -> list[HeldStep]:
    """The steps the run held for publish, each with its hold reasons and the top of its diff
    (from the round's run report and the step's checks document). A document that cannot be
    read leaves its step out (the record still names it): informing must not fail the run."""
    from backfill_orchestrator.contracts import InvalidDocumentError, StepChecks
    from backfill_orchestrator.documents import DocumentError, read_text

    held: list[HeldStep] = []
    for run_report in readable_run_reports(report, logger=log, unread="held steps of %s not listed"):
        for step in run_report.steps:
            if step.status is not StepStatus.AWAITING_PUBLISH or step.checks_uri is None:
                continue
            if (
                report.steps.get(step.id) is None
                or report.steps[step.id].status is not StepStatus.AWAITING_PUBLISH
            ):
                continue
            try:
                checks = StepChecks.from_json(read_text(step.checks_uri), source=step.checks_uri)
            except (DocumentError, InvalidDocumentError) as error:
                log.warning("the diff of held step %s not listed: %s", step.id, str(error)[:300])
                continue
            held.append(HeldStep.of(checks, checks_uri=step.checks_uri))
    return held


def progress_of(ledger: Any, *, plan: Any = None, round_index: int, rounds: int) -> dict[str, int]:
    """Steps done of total, (step, date) pairs done of total (with the plan) and the round, as
    `backfill watch` shows them. A step's dates are done when the step succeeded; a DAG step
    still under way counts the dates whose rerun succeeded."""
    from backfill_orchestrator.contracts import StepStatus

    counts = ledger.counts()
    progress = {
        "steps_total": len(ledger.entries),
        "steps_done": counts[StepStatus.SUCCEEDED],
        "steps_failed": counts[StepStatus.FAILED] + counts[StepStatus.BLOCKED],
        "wave": round_index + 1,  # the DAG's round (a Spark submission and its DAG reruns)
        "waves": rounds,
    }
    if plan is not None:
        dates_total = dates_done = 0
        for step in plan.steps:
            dates_total += len(step.dates)
            outcome = ledger.entries.get(step.id)
            if outcome is None:
                continue
            if outcome.status is StepStatus.SUCCEEDED:
                dates_done += len(step.dates)
            elif outcome.dates:
                dates_done += sum(1 for state in outcome.dates.values() if state == "success")
        progress |= {"dates_total": dates_total, "dates_done": dates_done}
    return progress


def record_progress(
    backfill_id: str, ledger: Any, *, plan: Any = None, round_index: int, rounds: int
) -> None:
    """`progress_of` on the status record, for `backfill watch`. Informational: a record that
    cannot be updated is logged, never fails the round."""
    table = _option("status_table")
    if not table:
        return
    import boto3

    progress = progress_of(ledger, plan=plan, round_index=round_index, rounds=rounds)
    try:
        StatusStore(table_name=table, dynamodb_client=boto3.client("dynamodb")).annotate(
            backfill_id, {"progress": progress}
        )
    except Exception as error:  # progress is for people watching; the backfill goes on
        log.warning("progress of %s not recorded: %s", backfill_id, str(error)[:300])
