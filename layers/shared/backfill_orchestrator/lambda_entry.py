"""The one shape of the three Lambda functions (trigger, replay, Slack interactivity).

- `Powertools`: the function's Logger (JSON), Metrics (EMF) and, only when tracing is on, its
  Tracer (`tracing.lambda_tracer`: building one imports the X-Ray SDK). `entry` puts them
  around a handler typed `(event: dict[str, Any], context: LambdaContext)`, and at each
  invocation redacts secrets from every log handler and has the package's loggers write
  through this function's Logger (JSON, its keys: so in a process that imports several
  handlers, as the tests do, the running one owns them).
- `FunctionWiring`: what each function's wiring (frozen settings read once from the
  environment, and the object that owns the clients, sessions and caches) holds for the
  container's life: its settings, S3 and DynamoDB clients and secrets cache. A wiring's
  `from_env` passes it the deployment's clients (`deployment_clients`).
- `Container`: the function's wiring, built on first use and kept for the container's life.
  Tests swap it for a block: `with trigger_wiring(wiring): handler(...)`.

    powertools = Powertools.for_function("backfill-trigger")
    container = Container(TriggerWiring.from_env)

    @powertools.entry
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        service = container.wiring().service(...)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypedDict, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.parameters import SecretsProvider

from backfill_orchestrator import redaction
from backfill_orchestrator.aws import aws_client
from backfill_orchestrator.secrets import SecretReader
from backfill_orchestrator.tracing import lambda_tracer, traced_handler

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_secretsmanager.client import SecretsManagerClient

PACKAGE_LOGGER = "backfill_orchestrator"
DEFAULT_METRICS_NAMESPACE = "BackfillOrchestrator"

Wiring = TypeVar("Wiring")
Handler = Callable[[dict[str, Any], "LambdaContext"], Any]


class FunctionSettings(Protocol):
    """What `FunctionWiring` reads of a function's settings."""

    @property
    def secrets_max_age_seconds(self) -> int: ...


Settings = TypeVar("Settings", bound=FunctionSettings)


class FunctionClients(TypedDict):
    """The AWS clients every function's wiring is given (its keyword arguments)."""

    s3_client: S3Client
    dynamodb_client: DynamoDBClient
    secrets_client: SecretsManagerClient


def deployment_clients() -> FunctionClients:
    """The deployment's: boto3's clients with the package's retry policy (`aws.aws_client`)."""
    return FunctionClients(
        s3_client=aws_client("s3"),
        dynamodb_client=aws_client("dynamodb"),
        secrets_client=aws_client("secretsmanager"),
    )


class FunctionWiring(Generic[Settings]):
    """What every function's wiring holds for the container's life: its settings, its S3 and
    DynamoDB clients, and the secrets cache (a read is kept SECRETS_MAX_AGE_SECONDS)."""

    def __init__(
        self,
        settings: Settings,
        *,
        s3_client: S3Client,
        dynamodb_client: DynamoDBClient,
        secrets_client: SecretsManagerClient,
    ) -> None:
        self.settings = settings
        self._s3 = s3_client
        self._dynamodb = dynamodb_client
        self._secrets = SecretReader(
            provider=SecretsProvider(boto3_client=secrets_client), max_age=settings.secrets_max_age_seconds
        )


@dataclass(frozen=True)
class Powertools:
    logger: Logger
    metrics: Metrics
    tracer: Tracer | None  # None: tracing is off (tracing.tracing_enabled)

    @classmethod
    def for_function(cls, service: str) -> Powertools:
        """POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE name them (the template sets
        both). The package's loggers take the Logger's level (POWERTOOLS_LOG_LEVEL) here."""
        logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", service))
        copy_config_to_registered_loggers(source_logger=logger, include={PACKAGE_LOGGER})
        return cls(
            logger=logger,
            metrics=Metrics(
                namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", DEFAULT_METRICS_NAMESPACE)
            ),
            tracer=lambda_tracer(),
        )

    def entry(self, handler: Handler) -> Handler:
        """The Lambda handler: Lambda's context on every log line (state cleared between
        invocations), the handler traced (response not captured), metrics flushed at its end."""
        inner = self.metrics.log_metrics(handler)
        inner = traced_handler(self.tracer)(inner)
        inner = self.logger.inject_lambda_context(clear_state=True)(inner)

        @functools.wraps(handler)
        def invoke(event: dict[str, Any], context: LambdaContext) -> Any:
            # The package's loggers write through this Logger's handler (their level stays).
            copy_config_to_registered_loggers(
                source_logger=self.logger, include={PACKAGE_LOGGER}, ignore_log_level=True
            )
            redaction.install(self.logger)  # every invocation: covers handlers added since (the runtime's)
            return inner(event, context)

        return invoke


class Container(Generic[Wiring]):
    """One Lambda container's wiring: built from the environment on first use and kept."""

    def __init__(self, build: Callable[[], Wiring]) -> None:
        self._build = build
        self._wiring: Wiring | None = None

    def wiring(self) -> Wiring:
        if self._wiring is None:
            self._wiring = self._build()
        return self._wiring

    @contextmanager
    def swapped(self, wiring: Wiring | None = None) -> Iterator[None]:
        """Within the block the handler uses `wiring` (None: one built from the environment
        on first use inside the block); the container's own comes back afterwards."""
        kept, self._wiring = self._wiring, wiring
        try:
            yield
        finally:
            self._wiring = kept
