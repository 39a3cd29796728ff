"""The Airflow 3 plugin: the page's FastAPI app under `/backfills` (`fastapi_apps`), a
"Backfills" entry in Airflow's navigation and a "Backfill" tab on every DAG run that leads to
its backfill (`external_views`; Airflow shows both inside its own frame).

Registered by the package's `airflow.plugins` entry point, so any Airflow with the package
installed loads it (MWAA through requirements.txt). Importing this module costs nothing beyond
Airflow's own plugin base: every Airflow process loads plugins, and only the api-server serves
the app, which is built on its first request from the `[backfill]` options."""

from __future__ import annotations

import threading
from typing import Any

from airflow.plugins_manager import AirflowPlugin

MOUNT = "/backfills"  # = app.MOUNT (not imported: that would build nothing but cost the imports)
Scope = dict[str, Any]


class LazyApp:
    """An ASGI app that builds the page's app on its first request (in the api-server only)."""

    def __init__(self) -> None:
        self._app: Any = None
        self._lock = threading.Lock()

    def _build(self) -> Any:
        with self._lock:
            if self._app is None:
                from backfill_orchestrator.ui.wiring import build_app

                self._app = build_app()
        return self._app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # nothing to start or stop
            message = await receive()
            while message["type"] != "lifespan.shutdown":
                await send({"type": f"{message['type']}.complete"})
                message = await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await self._build()(scope, receive, send)

    def __repr__(self) -> str:
        return "backfill_orchestrator.ui (the Backfills page)"


class BackfillsPlugin(AirflowPlugin):
    name = "backfills"
    fastapi_apps = [{"app": LazyApp(), "url_prefix": MOUNT, "name": "Backfills"}]
    external_views = [
        {
            "name": "Backfills",
            "href": "backfills/",
            "url_route": "backfills",
            "destination": "nav",
            "category": "browse",
        },
        {
            "name": "Backfill",
            "href": "backfills/runs/{DAG_ID}/{RUN_ID}",
            "url_route": "backfill-of-run",
            "destination": "dag_run",
        },
    ]
