"""Wiring: settings + AWS clients -> a ReplayWorker. Clients and the secrets cache live as
long as the Lambda container; the worker (with its Notifier) is built per invocation so
rotated Slack/PagerDuty secrets apply once the cache expires. Slack and PagerDuty come from
`notify.build_notifier`, as for the trigger and the DAG."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parameters import SecretsProvider

from backfill_orchestrator.notify import build_notifier
from backfill_orchestrator.notify.notifier import MetricsSink
from backfill_orchestrator.replay.progress import ReplayProgress
from backfill_orchestrator.replay.runner import ReplayContext
from backfill_orchestrator.replay.settings import ReplaySettings
from backfill_orchestrator.replay.task_leases import TaskLedger
from backfill_orchestrator.replay.worker import ReplayWorker
from backfill_orchestrator.secrets import SecretReader
from backfill_orchestrator.settings import CommonSettings, SettingsError
from backfill_orchestrator.status import StatusStore


class ReplayWiring:
    def __init__(
        self,
        settings: CommonSettings,
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
        self._secrets = SecretReader(
            provider=SecretsProvider(boto3_client=secrets_client), max_age=settings.secrets_max_age_seconds
        )

    def worker(self, *, metrics: MetricsSink) -> ReplayWorker:
        status = StatusStore(table_name=self.settings.status_table, dynamodb_client=self._dynamodb)
        notifier = build_notifier(
            settings=self.settings.notify, secrets=self._secrets, metrics=metrics, status_store=status, source="backfill-replay"
        )
        context = ReplayContext(
            s3=self._s3,
            sqs=self._sqs,
            ledger=TaskLedger(table_name=self.replay.idempotency_table, dynamodb_client=self._dynamodb),
            progress=ReplayProgress(status_store=status, notifier=notifier),
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
