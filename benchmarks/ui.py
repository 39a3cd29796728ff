"""The Backfills page's answers over 20,000 backfills and a 30-step, 90-date plan.

Everything on 127.0.0.1: a moto server holds the status table (built from template.yaml) and
the config bucket; the page's real app (routes, sources, views, templates) answers through
Starlette's in-process client, signed in as a user who may see everything (Airflow's own login
is left out: it costs the same JWT check on every Airflow page).

- `list_ms_p50`: the list's first page (50 rows, HTML) over 20,000 backfills created over the
  last 24 months (about 830 a month: what the newest month's partition of the `by_month`
  index holds), newest first; `list_state_ms_p50` the same with a state filter (`by_state`,
  a third of them); `list_one_month_ms_p50` with all 20,000 in the current month.
- `bare_query_ms_p50`: one Query of the same index and partition with `Limit` 51 and nothing
  else, on the same server: the floor under the list (moto sorts the whole partition for
  every Query, DynamoDB does not).
- `detail_ms_p50`: the detail page (HTML, graph and grids) of a FAILED backfill whose plan has
  30 steps over 90 dates and 3 feeds, with its backfill report; `poll_ms_p50` the JSON the
  page polls; `detail_kb` the page's size.

    .venv/bin/python benchmarks/ui.py
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RECORDS = 20_000
MONTHS = 24
ROUNDS = 15
TABLE, BUCKET = "bench-status", "bench-configs"


def _p50(action: Callable[[], Any], rounds: int = ROUNDS) -> float:
    action()  # warm: the app's first request loads templates
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def _items(count: int, *, months: int, now: datetime) -> list[dict[str, Any]]:
    from backfill_orchestrator.dynamo import item_from_plain

    items = []
    span = timedelta(days=30 * months)
    for index in range(count):
        created = (now - span * (index / count)).isoformat()
        items.append(
            item_from_plain(
                {
                    "backfill_id": f"bench-{index:06d}-{index:08x}",
                    "state": ("RUNNING", "SUCCEEDED", "FAILED")[index % 3],
                    "version": 4,
                    "created_at": created,
                    "updated_at": created,
                    "list_month": created[:7],
                    "name": f"bench-{index:06d}",
                    "owner": f"team{index % 7}@example.com",
                    "submitted_by": f"role/data-eng/person{index % 11}",
                    "mode": "batch",
                    "progress": {"steps_total": 6, "steps_done": index % 7, "wave": 1, "waves": 3},
                    "history": [{"state": "RECEIVED", "at": created}, {"state": "RUNNING", "at": created}],
                }
            )
        )
    return items


def _seed(dynamodb: Any, table: str, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), 25):
        pending: dict[str, Any] = {table: [{"PutRequest": {"Item": i}} for i in items[start : start + 25]]}
        while pending:
            pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def _plan(backfill_id: str, *, steps: int, days: int) -> dict[str, Any]:
    dates = [(date(2021, 1, 1) + timedelta(days=d)).isoformat() for d in range(days)]
    waves = []
    for index in range(steps):
        kind = "airflow_dag" if index % 3 == 2 else "spark"
        upstream = [f"step_{index - 1}"] if index else []
        if index >= 3 and index % 3 == 0:
            upstream.append(f"step_{index - 3}")
        waves.append(
            {
                "index": index,
                "steps": [
                    {
                        "id": f"step_{index}",
                        "job": {"namespace": "bench", "name": f"step_{index}"},
                        "dag_id": f"dag_{index}" if kind == "airflow_dag" else "bench_etl",
                        "kind": kind,
                        "transform": f"step_{index}" if kind == "spark" else None,
                        "dates": dates,
                        "feeds": ["web", "app", "partner"],
                        "reason": "root" if index == 0 else "downstream",
                        "upstream": upstream,
                    }
                ],
            }
        )
    return {
        "plan_version": 1,
        "backfill_id": backfill_id,
        "name": "bench-detail",
        "owner": "bench@example.com",
        "created_at": "2021-04-01T00:00:00+00:00",
        "roots": [{"namespace": "bench", "name": "step_0"}],
        "dates": dates,
        "waves": waves,
    }


def main() -> int:
    from fastapi.testclient import TestClient
    from moto.server import ThreadedMotoServer
    from starlette.requests import Request

    from backfill_local.template_tables import create_table
    from backfill_orchestrator.contracts import BackfillReport
    from backfill_orchestrator.contracts.backfill_report import StepOutcome
    from backfill_orchestrator.contracts.steps import StepStatus
    from backfill_orchestrator.dynamo import item_from_plain
    from backfill_orchestrator.ui.access import Viewer
    from backfill_orchestrator.ui.app import create_app
    from backfill_orchestrator.ui.settings import PageSettings
    from backfill_orchestrator.ui.sources import Sources

    class BenchAccess:
        async def viewer(self, request: Request) -> Viewer:
            return Viewer(
                user_id="bench", name="bench", may_view=True, may_act=True, credential="x", by_cookie=False
            )

        def login_url(self, next_url: str) -> str:
            return "/login"

        def csrf_secret(self) -> bytes:
            return b"bench"

    class NoRuns:
        def progress(self, dag_id: str, run_id: str) -> None:
            return None

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    kwargs = {
        "endpoint_url": f"http://{host}:{port}",
        "region_name": "us-east-1",
        "aws_access_key_id": "bench",
        "aws_secret_access_key": "bench",
    }
    dynamodb, s3 = boto3.client("dynamodb", **kwargs), boto3.client("s3", **kwargs)
    now = datetime.now(UTC)
    try:
        s3.create_bucket(Bucket=BUCKET)
        figures: dict[str, float] = {}
        for label, table, months in (("list", TABLE, MONTHS), ("list_one_month", f"{TABLE}-month", 0)):
            create_table(dynamodb, "StatusTable", table_name=table)
            began = time.monotonic()
            _seed(dynamodb, table, _items(RECORDS, months=months, now=now))
            print(
                f"seeded {RECORDS} records over {months or 1} month(s) in {time.monotonic() - began:.0f} s",
                flush=True,
            )
            sources = Sources(
                settings=PageSettings(status_table=table, config_bucket=BUCKET),
                dynamodb_client=dynamodb,
                s3_client=s3,
                runs=NoRuns(),
            )
            client = TestClient(create_app(sources=sources, access=BenchAccess(), desk=None))
            first = client.get("/")
            assert first.status_code == 200 and first.text.count("<tr data-backfill=") == 50, first.text[:500]
            figures[f"{label}_ms_p50"] = _p50(lambda c=client: c.get("/"))
            if label == "list":
                figures["list_state_ms_p50"] = _p50(lambda c=client: c.get("/?state=FAILED"))
                figures["bare_query_ms_p50"] = _p50(
                    lambda t=table: dynamodb.query(
                        TableName=t,
                        IndexName="by_month",
                        KeyConditionExpression="list_month = :m",
                        ExpressionAttributeValues={":m": {"S": now.isoformat()[:7]}},
                        ScanIndexForward=False,
                        Limit=51,
                    )
                )
                # the detail page of a 30-step, 90-date plan
                plan = _plan("bench-detail-0000beef", steps=30, days=90)
                s3.put_object(
                    Bucket=BUCKET,
                    Key="backfills/bench-detail-0000beef/plan.json",
                    Body=json.dumps(plan).encode(),
                )
                steps = {
                    wave["steps"][0]["id"]: StepOutcome(
                        status=StepStatus.SUCCEEDED
                        if wave["index"] < 20
                        else StepStatus.BLOCKED
                        if wave["index"] > 20
                        else StepStatus.FAILED,
                        kind=wave["steps"][0]["kind"],
                        round=0,
                        dag_id=wave["steps"][0]["dag_id"],
                    )
                    for wave in plan["waves"]
                }
                report = BackfillReport.build(
                    backfill_id="bench-detail-0000beef",
                    dag_run_id="bench-detail-0000beef",
                    steps=steps,
                    spark_reports=[],
                    written_at=now,
                )
                s3.put_object(
                    Bucket=BUCKET,
                    Key="backfills/bench-detail-0000beef/backfill_report.json",
                    Body=report.to_json().encode(),
                )
                dynamodb.put_item(
                    TableName=table,
                    Item=item_from_plain(
                        {
                            "backfill_id": "bench-detail-0000beef",
                            "state": "FAILED",
                            "version": 9,
                            "created_at": now.isoformat(),
                            "updated_at": now.isoformat(),
                            "list_month": now.isoformat()[:7],
                            "plan_uri": f"s3://{BUCKET}/backfills/bench-detail-0000beef/plan.json",
                            "dag_id": "backfill",
                            "dag_run_id": "bench-detail-0000beef",
                            "history": [{"state": "RUNNING", "at": now.isoformat()}] * 30,
                        }
                    ),
                )
                page = client.get("/b/bench-detail-0000beef")
                assert page.status_code == 200 and page.text.count('class="partition-grid"') == 30, page.text[
                    :500
                ]
                edges = sum(len(wave["steps"][0]["upstream"]) for wave in plan["waves"])
                assert page.text.count('class="edge"') == edges == 38
                figures["detail_ms_p50"] = _p50(lambda c=client: c.get("/b/bench-detail-0000beef"))
                figures["poll_ms_p50"] = _p50(lambda c=client: c.get("/api/backfills/bench-detail-0000beef"))
                figures["detail_kb"] = len(page.content) / 1024
    finally:
        server.stop()
    for name, value in figures.items():
        print(f"  {name}: {value:.1f}")
    order = (
        "list_ms_p50",
        "list_state_ms_p50",
        "list_one_month_ms_p50",
        "bare_query_ms_p50",
        "detail_ms_p50",
        "poll_ms_p50",
        "detail_kb",
    )
    print("BENCH ui " + " ".join(f"{name}={figures[name]:.0f}" for name in order))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
