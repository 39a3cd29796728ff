"""The replay function's wiring: its settings, read once from the environment, and what lives
as long as the Lambda container (AWS clients, the secrets cache). The worker (with its
Notifier) is built per invocation, so rotated Slack/PagerDuty secrets apply once the cache
expires. Slack and PagerDuty come from `notify.build_notifier`, as for the trigger and the DAG."""

from __future__ import annotations

from typing import TYPE_CHECKING

from backfill_orchestrator.aws import aws_client
from backfill_orchestrator.lambda_entry import FunctionClients, FunctionWiring, deployment_clients
from backfill_orchestrator.notify import build_notifier
from backfill_orchestrator.notify.notifier import MetricsSink
from backfill_orchestrator.replay.progress import ReplayProgress
from backfill_orchestrator.replay.runner import ReplayContext
from backfill_orchestrator.replay.settings import ReplaySettings
from backfill_orchestrator.replay.task_leases import TaskLedger
from backfill_orchestrator.replay.worker import ReplayWorker
from backfill_orchestrator.status import StatusStore

if TYPE_CHECKING:
    from typing import Unpack

    from mypy_boto3_sqs.client import SQSClient


class ReplayWiring(FunctionWiring[ReplaySettings]):
    def __init__(
        self, settings: ReplaySettings, *, sqs_client: SQSClient, **clients: Unpack[FunctionClients]
    ) -> None:
        super().__init__(settings, **clients)
        self._sqs = sqs_client

    @classmethod
    def from_env(cls) -> ReplayWiring:
        """The deployment's: settings from the environment (SettingsError names every problem)
        and its clients (`lambda_entry.deployment_clients`)."""
        return cls(ReplaySettings.from_env(), sqs_client=aws_client("sqs"), **deployment_clients())

    def worker(self, *, metrics: MetricsSink) -> ReplayWorker:
        settings = self.settings
        status = StatusStore(table_name=settings.status_table, dynamodb_client=self._dynamodb)
        notifier = build_notifier(
            settings=settings.notify,
            secrets=self._secrets,
            metrics=metrics,
            status_store=status,
            source="backfill-replay",
        )
        context = ReplayContext(
            s3=self._s3,
            sqs=self._sqs,
            ledger=TaskLedger(table_name=settings.idempotency_table, dynamodb_client=self._dynamodb),
            progress=ReplayProgress(status_store=status, notifier=notifier),
            archive_bucket=settings.archive_bucket,
            layout=settings.archive_layout,
            targets=settings.replay_targets,
            max_message_bytes=settings.max_message_bytes,
            max_concurrency=settings.max_concurrency,
        )
        return ReplayWorker(
            context=context,
            tasks_queue_url=settings.replay_tasks_queue_url,
            max_receive_count=settings.max_receive_count,
            metrics=metrics,
        )
