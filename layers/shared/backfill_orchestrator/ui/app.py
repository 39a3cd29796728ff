"""The page's FastAPI app, mounted by Airflow's api-server under `MOUNT` (plugin.py):

| route | what |
| --- | --- |
| `GET /` | the list (filters `state`, `month`, `owner`, `submitted_by`; `cursor` pages) |
| `GET /b/{id}` | one backfill |
| `GET /runs/{dag_id}/{run_id}` | from a DAG run of Airflow's UI to its backfill |
| `GET /api/backfills`, `GET /api/backfills/{id}` | the same as JSON (the detail page polls it) |
| `GET /api/backfills/{id}/result` | the result file beside the backfill's config |
| `POST /api/backfills/{id}/actions/{action}` | a press: a control document (or a refusal) |
| `GET /api/backfills/{id}/controls/{name}` | the trigger's answer to that document |
| `GET /static/...` | the stylesheet and the script, shipped in the package |

Every route but `/static` needs an Airflow login (`access.Access`); a browser without one is
sent to Airflow's login page, an API call gets 401. Responses are bounded (pages of at most
100 backfills, the page's own limits on steps, dates and history) and carry a strict Content
Security Policy: only this app's own script and stylesheet run, nothing is fetched elsewhere."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.contracts import InvalidDocumentError
from backfill_orchestrator.documents import DocumentError
from backfill_orchestrator.errors import PolicyRefusal, ServiceError
from backfill_orchestrator.policy import InvalidPolicyError, PolicyUnavailableError
from backfill_orchestrator.status import BackfillState, StatusRecord
from backfill_orchestrator.ui.access import Access, NotAuthenticatedError, Viewer, csrf_refusal, csrf_token
from backfill_orchestrator.ui.actions import ActionDesk
from backfill_orchestrator.ui.settings import MAX_PAGE_SIZE
from backfill_orchestrator.ui.sources import BadQueryError, ListQuery, Sources
from backfill_orchestrator.ui.states import ACTIONS
from backfill_orchestrator.ui.views import Links, cell_styles, detail, list_row

log = logging.getLogger(__name__)
MOUNT = "/backfills"
HERE = Path(__file__).resolve().parent
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
RUN_ID = re.compile(r"^backfill__(?P<id>[a-z0-9][a-z0-9-]{0,80})__\d{4}-\d{2}-\d{2}$")
CONTINUATION = re.compile(r"^(?P<id>.+?)__(cont|attempt)\d+$")
MAX_BODY = 4096
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "SAMEORIGIN",
    "Cache-Control": "no-store",
}


def page_json(data: Any) -> Markup:
    """JSON for a `<script type="application/json">` block: nothing in it can close the block."""
    text = (
        json.dumps(data, default=str).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    return Markup(text)  # noqa: S704 - escaped above for the one context it is used in


class AccessRefusedError(PolicyRefusal):
    """A request refused before its route runs (not signed in, or not allowed to see the
    backfills), carrying the page's or the API's answer."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def create_app(*, sources: Sources, access: Access, desk: ActionDesk | None) -> FastAPI:
    """The app over these services (`desk`: None when actions are not configured)."""
    app = FastAPI(title="Backfills", docs_url=None, redoc_url=None, openapi_url=None)
    templates = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True),
        auto_reload=False,
    )
    templates.globals.update(cell_styles=cell_styles(), states=[str(state) for state in BackfillState])
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.middleware("http")
    async def security_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.get("/states.css")
    async def state_colours() -> Response:
        """The cell states' colours, from their one table (states.CELL_STATES)."""
        rules = [
            f'[data-state="{style["state"]}"] .node, rect.cell[data-state="{style["state"]}"], '
            f'.swatch[data-state="{style["state"]}"] {{ fill: {style["color"]}; background: {style["color"]}; }}'
            for style in cell_styles()
        ]
        return Response("\n".join(rules) + "\n", media_type="text/css")

    def base(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    def links_for(request: Request) -> Links:
        page = base(request)
        airflow = page[: -len(MOUNT)] if page.endswith(MOUNT) else ""
        return Links(airflow_base=airflow, page_base=page)

    def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        body = templates.get_template(name).render(base=base(request), **context)
        return HTMLResponse(body, status_code=status)

    async def who(request: Request, *, page: bool) -> Viewer:
        """The signed-in viewer who may see the backfills; else AccessRefusedError carrying the
        page's (or the API's) answer."""
        try:
            viewer = await access.viewer(request)
        except NotAuthenticatedError:
            if page:
                raise AccessRefusedError(
                    RedirectResponse(
                        access.login_url(str(request.url.path) + _query(request)), status_code=303
                    )
                ) from None
            raise AccessRefusedError(
                JSONResponse({"error": "not authenticated: log in to Airflow"}, status_code=401)
            ) from None
        if not viewer.may_view:
            message = f"{viewer.name} may not see the runs of the backfill DAG ({sources.settings.dag_id})"
            if page:
                raise AccessRefusedError(
                    render(request, "message.html", 403, title="Not allowed", message=message, viewer=viewer)
                )
            raise AccessRefusedError(JSONResponse({"error": message}, status_code=403))
        return viewer

    async def viewer_on_page(request: Request) -> Viewer:
        return await who(request, page=True)

    async def viewer_on_api(request: Request) -> Viewer:
        return await who(request, page=False)

    # A route's `viewer` parameter: FastAPI finds the viewer (or answers) before the route runs.
    page_viewer = Depends(viewer_on_page)
    api_viewer = Depends(viewer_on_api)

    @app.exception_handler(AccessRefusedError)
    async def refused(request: Request, refusal: AccessRefusedError) -> Response:
        return refusal.response

    def failure(request: Request, error: Exception, *, page: bool, viewer: Viewer | None) -> Response:
        status = 400 if isinstance(error, BadQueryError) else 503
        message = str(error)[:1000]
        if status == 503:
            log.warning("Backfills page: %s: %s", type(error).__name__, message)
        if page:
            return render(
                request, "message.html", status, title="Cannot show this", message=message, viewer=viewer
            )
        return JSONResponse({"error": message}, status_code=status)

    def find(backfill_id: str) -> StatusRecord | None:
        return sources.record(backfill_id) if ID.match(backfill_id) else None

    # -- pages ------------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    async def list_page(request: Request, viewer: Viewer = page_viewer) -> Response:
        try:
            query = _list_query(request, sources.settings.page_size)
            page = sources.list_page(query)
        except (BadQueryError, ServiceError) as error:
            return failure(request, error, page=True, viewer=viewer)
        now = datetime.now(UTC)
        filters = {
            "state": query.state or "",
            "month": query.month or "",
            "owner": query.owner or "",
            "submitted_by": query.submitted_by or "",
        }
        next_url = None
        if page.next_cursor:
            next_url = "?" + urlencode(
                {**{k: v for k, v in filters.items() if v}, "cursor": page.next_cursor}
            )
        return render(
            request,
            "list.html",
            viewer=viewer,
            rows=[list_row(record, now) for record in page.records],
            filters=filters,
            next_url=next_url,
            first_page=query.offset == 0,
        )

    @app.get("/b/{backfill_id}", response_class=HTMLResponse)
    async def detail_page(request: Request, backfill_id: str, viewer: Viewer = page_viewer) -> Response:
        try:
            record = find(backfill_id)
            if record is None:
                return render(
                    request,
                    "message.html",
                    404,
                    title="No such backfill",
                    message=f"no backfill {backfill_id!r}",
                    viewer=viewer,
                )
            view = detail(sources, record, links=links_for(request), may_act=viewer.may_act)
        except (BadQueryError, ServiceError) as error:
            return failure(request, error, page=True, viewer=viewer)
        poll = {key: value for key, value in view.items() if key not in ("plan", "grid_pictures", "links")}
        return render(
            request,
            "detail.html",
            viewer=viewer,
            view=view,
            plan_svg=Markup(view["plan"]["svg"]) if view.get("plan") else None,  # noqa: S704 - built escaped
            grid_svgs=[Markup(grid["svg"]) for grid in view["grid_pictures"]],  # noqa: S704 - built escaped
            page_data=page_json(
                {
                    "backfill_id": record.backfill_id,
                    "api": f"{base(request)}/api/backfills/{quote(record.backfill_id)}",
                    "codes": {style["code"]: style["state"] for style in cell_styles()},
                    "actions": {name: action.__dict__ for name, action in ACTIONS.items()},
                    "view": poll,
                }
            ),
            csrf=csrf_token(access, viewer),
            actions_table={name: action.__dict__ for name, action in ACTIONS.items()},
        )

    @app.get("/runs/{dag_id}/{run_id}", response_class=HTMLResponse)
    async def from_dag_run(
        request: Request, dag_id: str, run_id: str, viewer: Viewer = page_viewer
    ) -> Response:
        backfill_id = _backfill_of_run(dag_id, run_id, sources.settings.dag_id)
        if backfill_id is None:
            return render(
                request,
                "message.html",
                200,
                title="Not a backfill run",
                message=f"{dag_id} / {run_id} is not a run of the backfill DAG or one of its reruns.",
                viewer=viewer,
            )
        return RedirectResponse(f"{base(request)}/b/{quote(backfill_id)}", status_code=303)

    # -- the API ------------------------------------------------------------------------------
    @app.get("/api/backfills")
    async def list_api(request: Request, viewer: Viewer = api_viewer) -> Response:
        try:
            page = sources.list_page(_list_query(request, sources.settings.page_size))
        except (BadQueryError, ServiceError) as error:
            return failure(request, error, page=False, viewer=viewer)
        now = datetime.now(UTC)
        return JSONResponse(
            {"backfills": [list_row(record, now) for record in page.records], "next_cursor": page.next_cursor}
        )

    @app.get("/api/backfills/{backfill_id}")
    async def detail_api(request: Request, backfill_id: str, viewer: Viewer = api_viewer) -> Response:
        try:
            record = find(backfill_id)
            if record is None:
                return JSONResponse({"error": f"no backfill {backfill_id[:200]!r}"}, status_code=404)
            view = detail(sources, record, links=links_for(request), may_act=viewer.may_act, pictures=False)
        except (BadQueryError, ServiceError) as error:
            return failure(request, error, page=False, viewer=viewer)
        return JSONResponse(json.loads(json.dumps(view, default=str)))

    @app.get("/api/backfills/{backfill_id}/result")
    async def result_api(request: Request, backfill_id: str, viewer: Viewer = api_viewer) -> Response:
        try:
            record = find(backfill_id)
            result = sources.result_file(record) if record is not None else None
        except (BadQueryError, ServiceError, DocumentError, InvalidDocumentError) as error:
            return failure(request, error, page=False, viewer=viewer)
        if result is None:
            return JSONResponse({"error": f"no result file for {backfill_id[:200]!r}"}, status_code=404)
        return Response(result.to_json(), media_type="application/json")

    @app.post("/api/backfills/{backfill_id}/actions/{action}")
    async def press(request: Request, backfill_id: str, action: str, viewer: Viewer = api_viewer) -> Response:
        if forged := csrf_refusal(access, viewer, request):
            return JSONResponse({"outcome": "refused", "rule": "csrf", "reason": forged}, status_code=403)
        if not viewer.may_act:
            reason = f"{viewer.name} may not change the runs of the backfill DAG ({sources.settings.dag_id})"
            return JSONResponse({"outcome": "refused", "rule": "airflow", "reason": reason}, status_code=403)
        if desk is None:
            reason = "actions are not configured: set [backfill] config_bucket"
            return JSONResponse({"outcome": "refused", "rule": "page", "reason": reason}, status_code=409)
        why = await _reason(request)
        if why is None:
            return JSONResponse(
                {"outcome": "refused", "rule": "page", "reason": 'send JSON: {"reason": "..."}'},
                status_code=400,
            )
        try:
            record = find(backfill_id)
            if record is None:
                return JSONResponse(
                    {"outcome": "refused", "rule": "page", "reason": "no such backfill"}, status_code=404
                )
            outcome = desk.press(action=action, record=record, user_name=viewer.name, reason=why)
        except (InvalidPolicyError, PolicyUnavailableError) as error:
            return JSONResponse(
                {"outcome": "refused", "rule": "policy", "reason": str(error)[:500]}, status_code=503
            )
        except ServiceError as error:
            return failure(request, error, page=False, viewer=viewer)
        log.info(
            "Backfills page press",
            extra={
                "backfill_id": backfill_id,
                "action": action,
                "user": viewer.name,
                "outcome": outcome.outcome,
            },
        )
        return JSONResponse(outcome.as_dict(), status_code=202 if outcome.outcome == "requested" else 409)

    @app.get("/api/backfills/{backfill_id}/controls/{name}")
    async def control_api(
        request: Request, backfill_id: str, name: str, viewer: Viewer = api_viewer
    ) -> Response:
        if not ID.match(backfill_id):
            return JSONResponse({"error": "no such backfill"}, status_code=404)
        try:
            result = sources.control_outcome(backfill_id, name)
        except (BadQueryError, ServiceError, DocumentError, InvalidDocumentError) as error:
            return failure(request, error, page=False, viewer=viewer)
        if result is None:
            return JSONResponse({"outcome": "pending", "reason": "the orchestrator has not acted on it yet"})
        reason = result.reason or "; ".join(f"{e.location}: {e.message}" for e in result.errors or [])
        return JSONResponse({"outcome": result.outcome, "reason": reason[:2000], "state": result.state})

    return app


def _query(request: Request) -> str:
    return f"?{request.url.query}" if request.url.query else ""


def _list_query(request: Request, default_size: int) -> ListQuery:
    params = request.query_params
    try:
        size = min(max(int(params.get("size", default_size)), 1), MAX_PAGE_SIZE)
    except ValueError:
        raise BadQueryError("size: expected a whole number") from None
    return ListQuery.parse(
        state=params.get("state"),
        month=params.get("month"),
        owner=params.get("owner"),
        submitted_by=params.get("submitted_by"),
        cursor=params.get("cursor"),
        size=size,
    )


async def _reason(request: Request) -> str | None:
    body = await request.body()
    if len(body) > MAX_BODY:
        return None
    if not body:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    reason = data.get("reason", "") if isinstance(data, dict) else None
    return reason if isinstance(reason, str) else None


def _backfill_of_run(dag_id: str, run_id: str, backfill_dag: str) -> str | None:
    """The backfill a DAG run belongs to: a run of the backfill DAG (its id, a continuation or a
    retry attempt) or a rerun it created (`backfill__<id>__<date>`)."""
    if dag_id == backfill_dag:
        match = CONTINUATION.match(run_id)
        candidate = match.group("id") if match else run_id
        return candidate if ID.match(candidate) else None
    rerun = RUN_ID.match(run_id)
    return rerun.group("id") if rerun else None
