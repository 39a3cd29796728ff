"""The trigger's wiring: its settings, read once from the environment, and what lives as long
as the Lambda container (AWS clients, HTTP sessions, the Airflow client with its JWT, the
secrets cache, the config bucket's storage, the job catalog, the policy's cache, the run
durations kept for the preflight).
The service is built per invocation, so rotated secrets apply once the cache expires."""

from __future__ import annotations

import contextvars
import hashlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from backfill_orchestrator.airflow_api import AirflowClient, MwaaAirflowClient, RestAirflowClient
from backfill_orchestrator.aws import aws_client
from backfill_orchestrator.claims import ClaimRegistry, registry_for, sweep_queued
from backfill_orchestrator.config import BackfillConfig
from backfill_orchestrator.contracts.publish import TableKind
from backfill_orchestrator.deadline import Deadline
from backfill_orchestrator.http import HttpSession, retrying_session
from backfill_orchestrator.identity import IamNameResolver
from backfill_orchestrator.lambda_entry import FunctionClients, FunctionWiring, deployment_clients
from backfill_orchestrator.lineage import LineageAhead, LineageWithHistory, MarquezClient
from backfill_orchestrator.lineage_events import LineageEmitter
from backfill_orchestrator.notify import Notifier, build_notifier
from backfill_orchestrator.notify.notifier import MetricsSink
from backfill_orchestrator.planner import JobCatalog
from backfill_orchestrator.planner.build import first_lineage_query
from backfill_orchestrator.policy import PolicySource
from backfill_orchestrator.preflight.duration_cache import RecentDurations
from backfill_orchestrator.publish import (
    FileDataStore,
    GlueCatalog,
    PartitionCatalog,
    Publisher,
    PublishLayout,
)
from backfill_orchestrator.settings import DeploymentSettings
from backfill_orchestrator.status import StatusStore
from backfill_orchestrator.trigger.approval_gate import ApprovalGate
from backfill_orchestrator.trigger.read_ahead import ReadAhead
from backfill_orchestrator.trigger.runs import ModeServices
from backfill_orchestrator.trigger.service import TriggerService
from backfill_orchestrator.trigger.storage import TriggerStorage

if TYPE_CHECKING:
    from typing import Unpack

    from mypy_boto3_iam.client import IAMClient
    from mypy_boto3_mwaa.client import MWAAClient
    from mypy_boto3_sqs.client import SQSClient
    from mypy_boto3_ssm.client import SSMClient

    from backfill_orchestrator.trigger.reconcile import Swept

CATALOG_MAX_AGE_SECONDS = 60
READ_AHEAD_THREADS = 6  # secrets, the catalog, Airflow's sign-in, the first lineage query


class TriggerWiring(FunctionWiring[DeploymentSettings]):
    def __init__(
        self,
        settings: DeploymentSettings,
        *,
        mwaa_client_factory: Callable[[], MWAAClient] | None = None,
        sqs_client_factory: Callable[[], SQSClient] | None = None,
        session_factory: Callable[[], HttpSession] = retrying_session,
        ssm_client_factory: Callable[[], SSMClient] | None = None,
        iam_client_factory: Callable[[], IAMClient] | None = None,
        **clients: Unpack[FunctionClients],
    ) -> None:
        """`session_factory` makes the HTTP sessions (tests pass one with short backoff); the
        MWAA and SQS clients are made on first use, the SSM and IAM ones only when a policy is
        configured (POLICY_URI)."""
        super().__init__(settings, **clients)
        self._mwaa_factory = mwaa_client_factory
        self._sqs_factory = sqs_client_factory
        self._sqs: SQSClient | None = None
        # One session per service so retry/backoff state and connections are reused.
        self._sessions = {name: session_factory() for name in ("airflow", "marquez", "pagerduty")}
        self._airflow: tuple[str, AirflowClient] | None = None
        self._catalog: tuple[float, JobCatalog] | None = None
        # Reads started ahead (`read_ahead`), for the container's life: a use waits for its read.
        self._ahead_pool: ThreadPoolExecutor | None = None
        self._catalog_reading: Future[JobCatalog] | None = None
        self._signing_in: Future[None] | None = None
        # The config bucket's layout over the container's S3 client (it holds nothing else).
        self.storage = TriggerStorage(
            s3_client=self._s3,
            bucket=settings.config_bucket,
            incoming_prefix=settings.incoming_prefix,
            results_prefix=settings.results_prefix,
            backfills_prefix=settings.backfills_prefix,
        )
        self.approval = self._approval_gate(ssm_client_factory, iam_client_factory)
        # The preflight's measured run durations, kept for HISTORY_CACHE_SECONDS (0: read every time).
        ttl = settings.preflight.history_cache_seconds
        self.durations = RecentDurations(ttl_seconds=ttl) if ttl > 0 else None

    @classmethod
    def from_env(cls) -> TriggerWiring:
        """The deployment's: settings from the environment (SettingsError names every problem)
        and its clients (`lambda_entry.deployment_clients`; the others made when needed)."""
        client = aws_client
        return cls(
            DeploymentSettings.from_env(),
            mwaa_client_factory=lambda: client("mwaa"),
            sqs_client_factory=lambda: client("sqs"),
            ssm_client_factory=lambda: client("ssm"),
            iam_client_factory=lambda: client("iam"),
            **deployment_clients(),
        )

    def service(self, *, metrics: MetricsSink, logger: Logger | logging.Logger) -> TriggerService:
        services, notifier = self.mode_services(metrics=metrics, logger=logger)
        return TriggerService(
            services=services, notifier=notifier, metrics=metrics, logger=logger, read_ahead=self.read_ahead
        )

    def read_ahead(self, config: BackfillConfig) -> ReadAhead:
        """Start, side by side on the container's threads, what a valid `config` will wait for
        and the container does not hold yet: Slack's secret; for a batch config Marquez's key,
        the job catalog and the plan's first lineage query (sent beside the claim: a duplicate
        wastes that one read); for one that triggers a run, Airflow's secret and token. Each
        use waits for its read instead of sending another. Runs in the caller's context (its
        deadline applies)."""
        settings = self.settings
        if self._ahead_pool is None:
            self._ahead_pool = ThreadPoolExecutor(
                max_workers=READ_AHEAD_THREADS, thread_name_prefix="trigger-read-ahead"
            )
        pool = self._ahead_pool

        def submit(call: Callable[[], Any]) -> Future[Any]:
            return pool.submit(contextvars.copy_context().run, call)

        first = first_lineage_query(config)  # None: not a batch config, nothing to plan
        triggers = first is not None and not config.dry_run and not settings.mwaa_environment
        secret_ids = [settings.notify.slack_secret_id]
        if first is not None:
            secret_ids.append(settings.marquez_api_key_secret_id)
        if triggers:
            secret_ids.append(settings.airflow_secret_id)
        reads: list[Future[Any]] = list(self._secrets.read_ahead(filter(None, secret_ids), submit))
        if first is None:
            return ReadAhead(reads)
        if settings.job_catalog_uri and self._catalog_stale() and not _running(self._catalog_reading):
            self._catalog_reading = submit(self._load_catalog)
        if triggers and self._airflow is None and not _running(self._signing_in):
            # A warm container's client holds its token (rotated credentials: signed in on use).
            self._signing_in = submit(lambda: self._airflow_client().sign_in())
        reads += [read for read in (self._catalog_reading, self._signing_in) if read is not None]
        job, depth = first
        answer = submit(lambda: self.lineage().lineage(job, depth=depth))
        return ReadAhead([*reads, answer], LineageAhead(self.lineage, first_query=first, first=answer))

    def mode_services(
        self, *, metrics: MetricsSink | None, logger: Logger | logging.Logger
    ) -> tuple[ModeServices, Notifier]:
        """What the service (and the sweep) act through, for one invocation, and its notifier."""
        settings = self.settings
        status = StatusStore(table_name=settings.status_table, dynamodb_client=self._dynamodb)
        notifier = self.notifier(status=status, metrics=metrics)
        services = ModeServices(
            settings=settings,
            storage=self.storage,
            status=status,
            airflow=self.airflow,
            lineage=self.lineage,
            catalog=self.catalog,
            sqs=self.sqs if self._sqs_factory is not None else None,
            claims=(lambda: self.claims(status)) if settings.claims_table else None,
            lineage_events=LineageEmitter.from_settings(
                settings.lineage_events, metrics=metrics, logger=logger
            ),
            approval=self.approval,
            durations=self.durations,
            publisher=self.publisher,
        )
        return services, notifier

    def publisher(self, root: str) -> Publisher:
        """Safe publish's operations over `root`, on the tables' storage through this container's
        S3 client, and on Glue when PUBLISH_CATALOG says the tables are catalogued there."""
        catalogs: dict[TableKind, PartitionCatalog] = {}
        if self.settings.publish_catalog == "glue":
            catalogs[TableKind.GLUE] = GlueCatalog()
        return Publisher(
            layout=PublishLayout(root),
            store=FileDataStore(s3_client=self._s3),
            catalogs=catalogs,
            s3_client=self._s3,
        )

    def _approval_gate(
        self, ssm_factory: Callable[[], Any] | None, iam_factory: Callable[[], Any] | None
    ) -> ApprovalGate:
        """Kept for the container's life: the policy's TTL cache and IAM names survive warm
        invocations. Without a policy, uploaders' ids are recorded unresolved (no IAM calls)."""
        settings = self.settings
        uri = settings.policy_uri
        ssm = ssm_factory() if uri and uri.startswith("ssm:") and ssm_factory is not None else None
        source = PolicySource(
            uri, ttl_seconds=settings.policy_cache_seconds, s3_client=self._s3, ssm_client=ssm
        )
        identities = IamNameResolver(iam_client=iam_factory()) if uri and iam_factory is not None else None
        return ApprovalGate(policy_source=source, identities=identities, delegates=settings.control_delegates)

    def sweep(
        self,
        *,
        now: datetime | None = None,
        deadline: Deadline | None = None,
        metrics: MetricsSink | None = None,
        logger: Logger | logging.Logger | None = None,
    ) -> Swept:
        """The periodic sweep: live records whose DAG run ended are finished from it
        (`trigger.reconcile`, which releases their claims and so starts what waited); when
        none was, the queued backfills whose blockers ended without releasing are started
        (`claims.sweep_queued`; after a release that would only write their `start` twice)."""
        from backfill_orchestrator.trigger.reconcile import Swept, finish_ended_runs  # the sweep's only

        settings = self.settings
        now = now or datetime.now(UTC)
        services, notifier = self.mode_services(metrics=metrics, logger=logger or logging.getLogger(__name__))
        swept = finish_ended_runs(services, notifier, now=now, deadline=deadline)
        if swept.finished or not settings.claims_table:
            return swept
        status = services.status
        control_uri = f"s3://{settings.config_bucket}/{settings.control_prefix}"
        started = sweep_queued(self.claims(status), control_uri=control_uri, now=now, s3_client=self._s3)
        return Swept(finished=[], started=started)

    # -- factories (called only when a config needs them) --------------------------------
    def claims(self, status: StatusStore) -> ClaimRegistry:
        assert self.settings.claims_table is not None
        return registry_for(
            dynamodb_client=self._dynamodb,
            table_name=self.settings.claims_table,
            status_store=status,
            s3_client=self._s3,
        )

    def airflow(self) -> AirflowClient:
        if self._signing_in is not None:
            wait([self._signing_in])  # a sign-in read ahead: its client holds the token
        return self._airflow_client()

    def _airflow_client(self) -> AirflowClient:
        settings = self.settings
        if settings.mwaa_environment:
            if self._airflow is None:
                if self._mwaa_factory is None:
                    raise RuntimeError("MWAA_ENVIRONMENT is set but no MWAA client factory was given")
                client: AirflowClient = MwaaAirflowClient(
                    settings.mwaa_environment,
                    mwaa_client=self._mwaa_factory(),
                    api_version=settings.airflow_api_version,
                    ui_url=settings.airflow_ui_url,
                )
                self._airflow = ("mwaa", client)
            return self._airflow[1]
        assert settings.airflow_url and settings.airflow_secret_id  # checked by DeploymentSettings
        credentials = self._secrets.basic_credentials(settings.airflow_secret_id)
        # Keep the client (and its JWT) while the credentials stay the same.
        fingerprint = hashlib.sha256(
            f"{credentials.username}\0{credentials.password.get_secret_value()}".encode()
        ).hexdigest()
        if self._airflow is None or self._airflow[0] != fingerprint:
            client = RestAirflowClient(
                settings.airflow_url,
                username=credentials.username,
                password=credentials.password,
                api_version=settings.airflow_api_version,
                ui_url=settings.airflow_ui_url or settings.airflow_url,
                session=self._sessions["airflow"],
            )
            self._airflow = (fingerprint, client)
        return self._airflow[1]

    def sqs(self) -> SQSClient:
        """The SQS client that queues replay tasks (made on first use)."""
        if self._sqs is None:
            assert self._sqs_factory is not None
            self._sqs = self._sqs_factory()
        return self._sqs

    def lineage(self) -> LineageWithHistory:
        api_key = None
        if self.settings.marquez_api_key_secret_id:
            api_key = self._secrets.marquez_api_key(
                self.settings.marquez_api_key_secret_id
            ).get_secret_value()
        return MarquezClient(self.settings.marquez_url, api_key=api_key, session=self._sessions["marquez"])

    def catalog(self) -> JobCatalog:
        """The job catalog, re-read at most every CATALOG_MAX_AGE_SECONDS (a warm container
        handling a burst of uploads reads it once)."""
        if not self.settings.job_catalog_uri:
            return JobCatalog.empty()
        if self._catalog_reading is not None:
            wait([self._catalog_reading])  # read ahead: kept below unless that read failed
        if self._catalog is None or self._catalog_stale():
            return self._load_catalog()
        return self._catalog[1]

    def _catalog_stale(self) -> bool:
        return self._catalog is None or time.monotonic() - self._catalog[0] > CATALOG_MAX_AGE_SECONDS

    def _load_catalog(self) -> JobCatalog:
        assert self.settings.job_catalog_uri
        started = time.monotonic()
        catalog = JobCatalog.load(self.settings.job_catalog_uri, s3_client=self._s3)
        self._catalog = (started, catalog)
        return catalog

    def notifier(self, *, status: StatusStore, metrics: MetricsSink | None) -> Notifier:
        """Slack and PagerDuty as this deployment configures them (`notify.build_notifier`)."""
        return build_notifier(
            settings=self.settings.notify,
            secrets=self._secrets,
            metrics=metrics,
            status_store=status,
            source="backfill-trigger",
            pagerduty_session=self._sessions["pagerduty"],
        )


def _running(read: Future[Any] | None) -> bool:
    return read is not None and not read.done()
