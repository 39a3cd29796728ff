"""Amazon MWAA: the Airflow REST API through `mwaa.invoke_rest_api` (IAM-authenticated,
no Airflow credentials). Airflow's own 4xx/5xx arrive as ClientErrors carrying
`RestApiStatusCode`/`RestApiResponse`; 5xx and MWAA's own transient errors are retried
here with exponential backoff (botocore already retries throttling)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator.airflow_api.base import (
    AirflowAuthError,
    AirflowClient,
    AirflowRequestError,
    AirflowTimeoutError,
    AirflowUnavailableError,
    ApiCall,
    ApiVersion,
)
from backfill_orchestrator.deadline import current_deadline

MAX_PATH_LENGTH = 64  # MWAA's limit on Path
_TRANSIENT_CODES = frozenset({"RestApiServerException", "InternalServerException", "ThrottlingException"})


class MwaaPathTooLongError(AirflowRequestError):
    """The request path exceeds MWAA's 64-character limit (shorten the DAG id)."""


class MwaaAirflowClient(AirflowClient):
    def __init__(
        self,
        environment: str,
        *,
        mwaa_client: Any,
        api_version: ApiVersion = "v2",
        ui_url: str | None = None,
        attempts: int = 4,
        backoff_seconds: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ):
        super().__init__(api_version=api_version, ui_url=ui_url)
        self._environment = environment
        self._mwaa = mwaa_client
        self._attempts = max(1, attempts)
        self._backoff = backoff_seconds
        self._sleep = sleep

    def _request(self, call: ApiCall) -> tuple[int, Any]:
        if len(call.path) > MAX_PATH_LENGTH:
            raise MwaaPathTooLongError(
                f"MWAA Path {call.path!r} is {len(call.path)} characters; the limit is {MAX_PATH_LENGTH}"
            )
        kwargs: dict[str, Any] = {"Name": self._environment, "Path": call.path, "Method": call.method}
        if call.body is not None:
            kwargs["Body"] = call.body
        if call.query:
            kwargs["QueryParameters"] = dict(call.query)
        last_problem = ""
        deadline = current_deadline()
        for attempt in range(self._attempts):
            wait = self._backoff * 2 ** (attempt - 1) if attempt else 0.0
            if deadline is not None and (deadline.expired or wait >= deadline.remaining()):
                # botocore's own timeouts bound one call; the budget bounds the loop.
                raise AirflowTimeoutError(f"MWAA {self._environment} {call}", deadline.budget)
            if wait:
                self._sleep(wait)
            try:
                response = self._mwaa.invoke_rest_api(**kwargs)
                return int(response["RestApiStatusCode"]), response.get("RestApiResponse")
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                status = error.response.get("RestApiStatusCode")
                answer = error.response.get("RestApiResponse")
                if code == "RestApiClientException" and status is not None:
                    return int(cast(int, status)), answer
                if code in _TRANSIENT_CODES:
                    last_problem = f"{code} ({status or error.response['Error'].get('Message', '')})"
                    continue
                if code == "AccessDeniedException":
                    raise AirflowAuthError(
                        f"not allowed to call airflow:InvokeRestApi on {self._environment}: "
                        f"{error.response['Error'].get('Message', '')}",
                        status=403,
                    ) from None
                raise AirflowRequestError(
                    f"MWAA {self._environment} refused {call}: {code}: "
                    f"{error.response['Error'].get('Message', '')}"
                ) from None
            except BotoCoreError as error:  # endpoint unreachable, read timeout
                last_problem = f"{type(error).__name__}: {error}"
        raise AirflowUnavailableError(
            f"MWAA {self._environment}: {call} failed {self._attempts} times; last: {last_problem}",
            status=None,
        )
