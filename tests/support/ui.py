"""The Backfills page's test helpers: users standing for Airflow's auth manager (`FakeAccess`,
for the in-process tests; the browser tests log in to a real Airflow), a DynamoDB client that
records its calls, status records and plans seeded straight into the stores, a live-run double,
and headless Chromium (Debian's `chromium` through its `chromedriver`, `make setup-browser`)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.requests import Request

from backfill_orchestrator.contracts import Plan
from backfill_orchestrator.dynamo import item_from_plain
from backfill_orchestrator.ui.access import AIRFLOW_COOKIE, NotAuthenticatedError, Viewer
from backfill_orchestrator.ui.progress import RunProgress

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)
ARTIFACTS = Path(__file__).resolve().parents[1] / "ui" / "artifacts"


# -- users -----------------------------------------------------------------------------------
@dataclass
class FakeAccess:
    """`Access` over a fixed set of users: `role` viewer (sees), user (sees and acts). A
    request names its user as Airflow's would carry a JWT: `Authorization: Bearer <user>` or
    the `_token` cookie; anything else is not logged in."""

    roles: Mapping[str, str]
    secret: bytes = b"test-page-secret"

    async def viewer(self, request: Request) -> Viewer:
        header = request.headers.get("authorization", "")
        by_cookie = not header.lower().startswith("bearer ")
        name = request.cookies.get(AIRFLOW_COOKIE, "") if by_cookie else header[len("bearer ") :].strip()
        role = self.roles.get(name)
        if role is None:
            raise NotAuthenticatedError("unknown token")
        return Viewer(
            user_id=name,
            name=name,
            may_view=role in ("viewer", "user"),
            may_act=role == "user",
            credential=f"jwt-of-{name}",
            by_cookie=by_cookie,
        )

    def login_url(self, next_url: str) -> str:
        return f"/auth/login?next={next_url}"

    def csrf_secret(self) -> bytes:
        return self.secret


@dataclass
class FakeRuns:
    """The live DAG runs Airflow would report: (dag_id, run_id) -> RunProgress."""

    runs: dict[tuple[str, str], RunProgress] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)

    def progress(self, dag_id: str, run_id: str) -> RunProgress | None:
        self.asked.append((dag_id, run_id))
        return self.runs.get((dag_id, run_id))


class RecordingClient:
    """A boto3 client that remembers every operation called on it (name, keyword arguments)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute) or name.startswith("_") or name in ("meta", "exceptions"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            return attribute(*args, **kwargs)

        return call


# -- data ------------------------------------------------------------------------------------
def plan_document(
    backfill_id: str,
    *,
    steps: int,
    days: int,
    start: date = date(2021, 6, 1),
    name: str = "orders-outage",
    job_name: str = "etl",
    feeds: list[str] | None = None,
    dag_every: int = 3,
) -> dict[str, Any]:
    """A plan of `steps` steps over `days` days: a chain of waves, every `dag_every`-th step an
    Airflow DAG rerun, each step after the one before it (and the first step for every third)."""
    dates = [(start + timedelta(days=offset)).isoformat() for offset in range(days)]
    waves: list[dict[str, Any]] = []
    for index in range(steps):
        kind = "airflow_dag" if index % dag_every == dag_every - 1 else "spark"
        step_id = f"{job_name}_{index}"
        upstream = [] if index == 0 else [f"{job_name}_{index - 1}"]
        if index >= 2 and index % 3 == 0:
            upstream.append(f"{job_name}_0")
        waves.append(
            {
                "index": index,
                "steps": [
                    {
                        "id": step_id,
                        "job": {"namespace": "food_delivery", "name": step_id},
                        "dag_id": step_id if kind == "airflow_dag" else "food_delivery_etl",
                        "kind": kind,
                        "transform": step_id if kind == "spark" else None,
                        "dates": dates,
                        "hours": None,
                        "feeds": feeds,
                        "reason": "root" if index == 0 else "downstream",
                        "upstream": upstream,
                    }
                ],
            }
        )
    return {
        "plan_version": 1,
        "backfill_id": backfill_id,
        "name": name,
        "owner": "jane.doe@example.com",
        "created_at": "2021-06-20T10:00:00+00:00",
        "roots": [{"namespace": "food_delivery", "name": f"{job_name}_0"}],
        "dates": dates,
        "waves": waves,
        "estimate": {
            "partitions": steps * days * 24,
            "bytes_to_read": 3 * 1024**3,
            "dag_reruns": {
                "value": sum(1 for w in waves if w["steps"][0]["kind"] == "airflow_dag") * days,
                "basis": "measured",
            },
            "rounds": {"value": 1, "basis": "measured"},
            "cost": {"value": 4.5, "basis": "assumed"},
            "steps": [
                {
                    "step": w["steps"][0]["id"],
                    "partitions": {"value": days * 24, "basis": "measured"},
                    "seconds": {"value": 120.0, "basis": "assumed"},
                }
                for w in waves
            ],
        },
    }


def record_item(
    backfill_id: str,
    *,
    state: str,
    created_at: datetime,
    owner: str = "jane.doe@example.com",
    submitted_by: str | None = "role/data-eng/jane.doe@example.com",
    name: str | None = None,
    plan_uri: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A status record as the trigger stores it (DynamoDB's attribute values)."""
    at = created_at.isoformat()
    plain: dict[str, Any] = {
        "backfill_id": backfill_id,
        "state": state,
        "version": 3,
        "created_at": at,
        "updated_at": at,
        "list_month": at[:7],
        "name": name or backfill_id.rsplit("-", 1)[0],
        "owner": owner,
        "mode": "batch",
        "attempts": 1,
        "history": [
            {"state": "RECEIVED", "at": at, "by": submitted_by}
            if submitted_by
            else {"state": "RECEIVED", "at": at},
            {"state": state, "at": at, "detail": f"now {state}"},
        ],
        **({"submitted_by": submitted_by} if submitted_by else {}),
        **({"plan_uri": plan_uri} if plan_uri else {}),
        **extra,
    }
    return item_from_plain(plain)


def seed_records(dynamodb: Any, table: str, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), 25):
        batch = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        pending: dict[str, Any] = {table: batch}
        while pending:
            pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def put_plan(s3: Any, bucket: str, plan: dict[str, Any]) -> str:
    Plan.model_validate(plan)  # what the trigger would have stored
    key = f"backfills/{plan['backfill_id']}/plan.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(plan).encode())
    return f"s3://{bucket}/{key}"


# -- the browser -----------------------------------------------------------------------------
def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None (`make setup-browser` installs it)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            return f"{path} is missing: run `make setup-browser` (Debian's chromium and chromium-driver)"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A fresh headless Chromium (its own profile, no cookies), driven through chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-"))
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(120)
    driver.set_script_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: Any, name: str) -> Path:
    """Keep what the page looks like now: tests/ui/artifacts/<name>.png (the whole page)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    height = driver.execute_script("return Math.max(document.body.scrollHeight, 800)")
    driver.set_window_size(1400, min(int(height) + 40, 6000))
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)
    return path


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)
