"""Who is looking, what they may do, and the page's guard against cross-site requests.

Authentication and permissions are Airflow's: `AirflowAccess` takes the user from the request
the way Airflow's own API does (`airflow.api_fastapi.core_api.security.get_user`: the JWT of
the `Authorization: Bearer` header or of the UI's `_token` cookie, checked by the configured
auth manager) and asks the auth manager about the backfill DAG's runs:

- see the pages: `is_authorized_dag(GET, DagAccessEntity.RUN, dag_id=<backfill DAG>)`;
- press an action: `is_authorized_dag(PUT, DagAccessEntity.RUN, dag_id=<backfill DAG>)`, the
  permission that marks or clears the backfill DAG's runs in Airflow's own UI.

Cross-site request forgery: a state-changing request authenticated by the cookie must carry
`X-CSRF-Token`, an HMAC of the user and the JWT under Airflow's `[api] secret_key` (the page
embeds it; another site cannot read it), and an `Origin` (or `Referer`) of this host. A
request authenticated by an `Authorization` header cannot be forged by another site."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from starlette.requests import Request

from backfill_orchestrator.errors import ServiceError, UserError

AIRFLOW_COOKIE = "_token"  # airflow.api_fastapi.auth.managers.base_auth_manager.COOKIE_NAME_JWT_TOKEN
CSRF_HEADER = "X-CSRF-Token"


class NotAuthenticatedError(UserError, PermissionError):
    """No valid Airflow login on the request (401, or the login page for a browser)."""


@dataclass(frozen=True)
class Viewer:
    """The signed-in Airflow user: `name` is the auth manager's user name (what the policy's
    `people.<name>.airflow` globs match)."""

    user_id: str
    name: str
    may_view: bool
    may_act: bool
    credential: str  # the JWT that authenticated the request (never shown; the CSRF token's key)
    by_cookie: bool


class Access(Protocol):
    async def viewer(self, request: Request) -> Viewer: ...

    def login_url(self, next_url: str) -> str: ...

    def csrf_secret(self) -> bytes: ...


def csrf_token(access: Access, viewer: Viewer) -> str:
    digest = hashlib.sha256(viewer.credential.encode()).hexdigest()
    message = f"backfills-csrf:{viewer.user_id}:{digest}".encode()
    return hmac.new(access.csrf_secret(), message, hashlib.sha256).hexdigest()


def csrf_refusal(access: Access, viewer: Viewer, request: Request) -> str | None:
    """Why this state-changing request is refused as possibly forged, or None."""
    if not viewer.by_cookie:
        return None
    sent = request.headers.get(CSRF_HEADER, "")
    if not sent or not hmac.compare_digest(sent, csrf_token(access, viewer)):
        return f"missing or wrong {CSRF_HEADER}: reload the page and press again"
    origin = request.headers.get("origin") or request.headers.get("referer") or ""
    host = request.headers.get("host", "")
    if not origin or urlsplit(origin).netloc != host:
        return "the request does not come from this site (Origin)"
    return None


class AirflowAccess:
    """`Access` through Airflow's auth manager (only the api-server constructs it)."""

    def __init__(self, dag_id: str) -> None:
        self.dag_id = dag_id

    async def viewer(self, request: Request) -> Viewer:
        from airflow.api_fastapi.app import get_auth_manager
        from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
        from airflow.api_fastapi.core_api.security import bearer_scheme, get_user
        from fastapi import HTTPException

        credentials = await bearer_scheme(request)
        try:
            user = await get_user(request, None, credentials)
        except HTTPException as error:
            raise NotAuthenticatedError(str(error.detail)) from None
        by_cookie = credentials is None
        credential = (
            request.cookies.get(AIRFLOW_COOKIE, "") if credentials is None else credentials.credentials
        )
        manager = get_auth_manager()
        details = DagDetails(id=self.dag_id)
        return Viewer(
            user_id=str(user.get_id()),
            name=str(user.get_name()),
            may_view=manager.is_authorized_dag(
                method="GET", access_entity=DagAccessEntity.RUN, details=details, user=user
            ),
            may_act=manager.is_authorized_dag(
                method="PUT", access_entity=DagAccessEntity.RUN, details=details, user=user
            ),
            credential=credential,
            by_cookie=by_cookie,
        )

    def login_url(self, next_url: str) -> str:
        from airflow.api_fastapi.app import get_auth_manager

        return get_auth_manager().get_url_login(next_url=next_url)

    def csrf_secret(self) -> bytes:
        from airflow.configuration import conf

        secret = conf.get("api", "secret_key", fallback="") or conf.get("api_auth", "jwt_secret", fallback="")
        if not secret:
            raise ServiceError("[api] secret_key is not set: the page cannot protect its actions")
        return str(secret).encode()
