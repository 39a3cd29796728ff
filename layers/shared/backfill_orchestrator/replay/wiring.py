"""Wiring: settings + AWS clients -> a ReplayWorker. Clients, HTTP sessions and the secrets
cache live as long as the Lambda container; the worker (with its Notifier) is built per
invocation so rotated Slack/PagerDuty secrets apply once the cache expires. Slack and
PagerDuty are built exactly as the trigger builds them (`NotifierWiring`)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parameters import SecretsProvider

from backfill_orchestrator.http import retrying_session
from backfill_orchestrator.notify.notifier import MetricsSink
from backfill_orchestrator.notify.wiring import NotifierWiring
from backfill_orchestrator.replay.ledger import TaskLedger
from backfill_orchestrator.replay.progress import ReplayProgress
from backfill_orchestrator.replay.runner import ReplayContext
from backfill_orchestrator.replay.settings import ReplaySettings
from backfill_orchestrator.replay.worker import ReplayWorker
from backfill_orchestrator.secrets import SecretReader
from backfill_orchestrator.settings import DeploymentSettings, SettingsError
from backfill_orchestrator.status import StatusStore


class ReplayWiring:
    def __init__(
        self,
        settings: DeploymentSettings,
        replay: ReplaySettings,
        *,
        s3_client: Any,
        sqs_client: Any,
        dynamodb_client: Any,
        secrets_client: Any,
    ):
        if not settings.replay_tasks_queue_url:
            raise SettingsError(["REPLAY_TASKS_QUEUE_URL: required by the replay function (continuations)"])
        self.settings = settings
        self.replay = replay
        self._s3 = s3_client
        self._sqs = sqs_client
        self._dynamodb = dynamodb_client
        self._notifications = NotifierWiring(
            settings,
            secrets=SecretReader(
                provider=SecretsProvider(boto3_client=secrets_client), max_age=settings.secrets_max_age_seconds
            ),
            slack_session=retrying_session(),
            pagerduty_session=retrying_session(),
        )

    def worker(self, *, metrics: MetricsSink) -> ReplayWorker:
        status = StatusStore(table_name=self.settings.status_table, dynamodb_client=self._dynamodb)
        context = ReplayContext(
            s3=self._s3,
            sqs=self._sqs,
            ledger=TaskLedger(table_name=self.replay.idempotency_table, dynamodb_client=self._dynamodb),
            progress=ReplayProgress(status_store=status, notifier=self._notifications.notifier(status=status, metrics=metrics)),
            archive_bucket=self.replay.archive_bucket,
            layout=self.replay.archive_layout,
            targets=self.settings.replay_targets,
            max_message_bytes=self.replay.max_message_bytes,
            max_concurrency=self.replay.max_concurrency,
        )
        return ReplayWorker(
            context=context,
            tasks_queue_url=self.settings.replay_tasks_queue_url,
            max_receive_count=self.replay.max_receive_count,
            metrics=metrics,
        )
