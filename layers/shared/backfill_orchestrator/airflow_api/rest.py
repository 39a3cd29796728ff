"""The Airflow REST API over HTTP: Airflow 3 (`/api/v2`, JWT from `/auth/token`, refreshed
on 401) or Airflow 2 (`/api/v1`, basic auth). Retries (connection errors, 429, 5xx with
Retry-After) come from `backfill_orchestrator.http.retrying_session`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import SecretStr

from backfill_orchestrator.airflow_api.base import (
    AirflowAuthError,
    AirflowClient,
    AirflowTimeoutError,
    AirflowUnavailableError,
    ApiCall,
    ApiVersion,
)
from backfill_orchestrator.http import HttpError, HttpResponse, HttpSession, OutOfTimeError, retrying_session


class RestAirflowClient(AirflowClient):
    def __init__(
        self,
        base_url: str,
        *,
        username: str,
        password: SecretStr,
        api_version: ApiVersion = "v2",
        ui_url: str | None = None,
        session: HttpSession | None = None,
    ):
        """`base_url` is Airflow's root (`https://airflow.example.com`), without `/api/...`."""
        super().__init__(api_version=api_version, ui_url=ui_url or base_url)
        self._base = base_url.rstrip("/")
        self._username = username
        self._password = password
        self._session = session or retrying_session()
        self._token: SecretStr | None = None

    def sign_in(self) -> None:
        """Airflow 3's JWT, fetched now (kept until Airflow refuses it); Airflow 2: basic auth."""
        if self.api_version == "v2" and self._token is None:
            self._token = self._fetch_token()

    def _fetch_token(self) -> SecretStr:
        url = f"{self._base}/auth/token"
        with self._transport_errors():
            response = self._session.post(
                url,
                json={"username": self._username, "password": self._password.get_secret_value()},
            )
        if response.status_code in (401, 403):
            raise AirflowAuthError(
                f"Airflow refused the credentials of {self._username!r} at {url} ({response.status_code})",
                status=response.status_code,
            )
        if response.status_code not in (200, 201):
            raise AirflowUnavailableError(
                f"getting a token from {url}: Airflow answered {response.status_code}",
                status=response.status_code,
            )
        token = _json(response).get("access_token") if isinstance(_json(response), dict) else None
        if not isinstance(token, str) or not token:
            raise AirflowUnavailableError(f"{url} answered without an access_token")
        return SecretStr(token)

    @contextmanager
    def _transport_errors(self) -> Iterator[None]:
        """The HTTP failures as the API's: out of time, or Airflow unreachable."""
        try:
            yield
        except OutOfTimeError as error:
            raise AirflowTimeoutError(error.doing, error.budget) from None
        except HttpError as error:
            raise AirflowUnavailableError(
                f"Airflow at {self._base} is unreachable: {type(error).__name__}: {error}"
            ) from None

    def _send(self, call: ApiCall) -> HttpResponse:
        url = f"{self._base}/api/{self.api_version}{call.path}"
        headers = {"Accept": "application/json"}
        auth = None
        if self.api_version == "v2":
            if self._token is None:
                self._token = self._fetch_token()
            headers["Authorization"] = f"Bearer {self._token.get_secret_value()}"
        else:
            auth = (self._username, self._password.get_secret_value())
        return self._session.request(
            call.method, url, json=call.body, params=call.query, headers=headers, auth=auth
        )

    def _request(self, call: ApiCall) -> tuple[int, Any]:
        with self._transport_errors():
            response = self._send(call)
            if response.status_code == 401 and self.api_version == "v2":
                self._token = None  # expired: one fresh token, one more try
                response = self._send(call)
        if response.status_code == 429 or response.status_code >= 500:
            raise AirflowUnavailableError(
                f"{call}: Airflow answered {response.status_code} after retries",
                status=response.status_code,
            )
        return response.status_code, _json(response)


def _json(response: HttpResponse) -> Any:
    try:
        return response.json()
    except (ValueError, json.JSONDecodeError):
        return {"detail": response.text[:500]}
