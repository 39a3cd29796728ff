"""The page's routes in this process (moto, `FakeAccess` users): what each shows, who may see
and press what, the list's queries, escaping, CSRF, and the control documents a press writes."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta

import pytest

from backfill_orchestrator.contracts import BackfillReport, ControlRequest, ResultFile, RunConf, RunState
from backfill_orchestrator.contracts.backfill_report import StepOutcome
from backfill_orchestrator.contracts.steps import StepFigures, StepStatus
from backfill_orchestrator.ui.progress import RunProgress
from backfill_orchestrator.ui.sources import decode_cursor, encode_cursor
from tests.support.ui import plan_document, put_plan, record_item, seed_records

from .conftest import BUCKET, TABLE, PageHarness

NOW = datetime.now(UTC)
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def _seed(page: PageHarness, *items: dict) -> None:
    seed_records(page.dynamodb, TABLE, list(items))


def _records(page: PageHarness, count: int, **extra: object) -> None:
    _seed(
        page,
        *(
            record_item(
                f"orders-fix-{index:08x}",
                state=["RUNNING", "SUCCEEDED", "FAILED"][index % 3],
                created_at=NOW - timedelta(minutes=index),
                owner=f"owner{index % 2}@example.com",
                submitted_by=f"role/data-eng/person{index % 4}",
                **extra,
            )
            for index in range(count)
        ),
    )


def _ids(html: str) -> list[str]:
    return re.findall(r'<tr data-backfill="([^"]+)"', html)


# -- who may see ------------------------------------------------------------------------------
def test_no_login_gets_no_data(page: PageHarness) -> None:
    _records(page, 3)
    answer = page.client.get("/", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/auth/login?next=/")
    assert "orders-fix" not in answer.text
    for path in (
        "/api/backfills",
        "/api/backfills/orders-fix-00000000",
        "/api/backfills/orders-fix-00000000/result",
    ):
        answer = page.client.get(path)
        assert answer.status_code == 401 and "orders-fix" not in answer.text
    detail = page.client.get("/b/orders-fix-00000000", follow_redirects=False)
    assert detail.status_code == 303 and "orders-fix-00000000" not in detail.text.replace(
        "next=/b/orders", ""
    )
    assert page.client.post("/api/backfills/orders-fix-00000000/actions/cancel", json={}).status_code == 401


def test_a_signed_in_user_who_may_not_view_gets_a_refusal_and_no_data(page: PageHarness) -> None:
    _records(page, 1)
    headers = page.as_user("olga")  # signed in, without a role that sees the backfill DAG
    answer = page.client.get("/b/orders-fix-00000000", headers=headers)
    assert answer.status_code == 403 and "may not see the runs" in answer.text
    assert "orders-fix-00000000" not in answer.text and "content-security-policy" in answer.headers
    for path in ("/api/backfills", "/api/backfills/orders-fix-00000000/result"):
        answer = page.client.get(path, headers=headers)
        assert answer.status_code == 403 and answer.json()["error"].startswith("olga may not see")


def test_every_response_carries_a_strict_content_security_policy(page: PageHarness) -> None:
    _records(page, 1)
    answer = page.client.get("/", headers=page.as_user("vic"))
    policy = answer.headers["content-security-policy"]
    assert (
        "script-src 'self'" in policy
        and "default-src 'none'" in policy
        and "frame-ancestors 'self'" in policy
    )
    assert answer.headers["x-content-type-options"] == "nosniff"


# -- the list ---------------------------------------------------------------------------------
def test_the_list_pages_newest_first_through_an_opaque_cursor(page: PageHarness) -> None:
    _records(page, 7)
    first = page.client.get("/api/backfills?size=3", headers=page.as_user("vic")).json()
    assert [row["backfill_id"] for row in first["backfills"]] == [f"orders-fix-{i:08x}" for i in range(3)]
    second = page.client.get(
        f"/api/backfills?size=3&cursor={first['next_cursor']}", headers=page.as_user("vic")
    ).json()
    assert [row["backfill_id"] for row in second["backfills"]] == [f"orders-fix-{i:08x}" for i in range(3, 6)]
    third = page.client.get(
        f"/api/backfills?size=3&cursor={second['next_cursor']}", headers=page.as_user("vic")
    ).json()
    assert [row["backfill_id"] for row in third["backfills"]] == ["orders-fix-00000006"]
    assert third["next_cursor"] is None
    assert decode_cursor(encode_cursor(40)) == 40


def test_the_list_filters_by_state_owner_submitter_and_month(page: PageHarness) -> None:
    _records(page, 6)
    _seed(page, record_item("old-fix-0000aaaa", state="RUNNING", created_at=datetime(2025, 3, 4, tzinfo=UTC)))
    headers = page.as_user("vic")
    running = _ids(page.client.get("/?state=running", headers=headers).text)
    assert running == ["orders-fix-00000000", "orders-fix-00000003", "old-fix-0000aaaa"]
    assert _ids(page.client.get("/?owner=owner1@example.com", headers=headers).text) == [
        "orders-fix-00000001",
        "orders-fix-00000003",
        "orders-fix-00000005",
    ]
    assert _ids(page.client.get("/?submitted_by=role/data-eng/person2", headers=headers).text) == [
        "orders-fix-00000002"
    ]
    assert _ids(page.client.get("/?month=2025-03", headers=headers).text) == ["old-fix-0000aaaa"]
    assert _ids(page.client.get("/?month=2025-03&state=RUNNING", headers=headers).text) == [
        "old-fix-0000aaaa"
    ]


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("state=DONE", "state: unknown state"),
        ("month=2025-13", "month: expected YYYY-MM"),
        ("cursor=xyz", "cursor:"),
    ],
)
def test_a_bad_filter_is_refused_with_its_name(page: PageHarness, query: str, problem: str) -> None:
    answer = page.client.get(f"/api/backfills?{query}", headers=page.as_user("vic"))
    assert answer.status_code == 400 and problem in answer.json()["error"]


def test_the_list_only_queries_the_indexes_with_a_limit(page: PageHarness) -> None:
    _records(page, 5)
    page.dynamodb.calls.clear()
    page.client.get("/?size=2", headers=page.as_user("vic"))
    page.client.get("/?state=FAILED&size=2", headers=page.as_user("vic"))
    operations = {name for name, _ in page.dynamodb.calls}
    assert operations == {"query"}, operations  # never a Scan
    for _, kwargs in page.dynamodb.calls:
        assert kwargs["IndexName"] in ("by_month", "by_state") and 1 <= kwargs["Limit"] <= 3


# -- one backfill -----------------------------------------------------------------------------
def _planned(
    page: PageHarness,
    backfill_id: str,
    *,
    state: str = "RUNNING",
    steps: int = 6,
    days: int = 5,
    **extra: object,
) -> dict:
    plan = plan_document(backfill_id, steps=steps, days=days, feeds=["web", "app"])
    uri = put_plan(page.s3, BUCKET, plan)
    _seed(
        page,
        record_item(
            backfill_id,
            state=state,
            created_at=NOW,
            plan_uri=uri,
            dag_id="backfill",
            dag_run_id=backfill_id,
            source_uri=f"s3://{BUCKET}/incoming/{backfill_id}.yaml",
            slack_channel="C0BACKFILL",
            slack_thread_ts="1700000000.000100",
            **extra,
        ),
    )
    return plan


def test_the_detail_draws_the_plan_with_every_edge_and_a_grid_per_step(page: PageHarness) -> None:
    plan = _planned(page, "orders-fix-0000beef", steps=6, days=5)
    html = page.client.get("/b/orders-fix-0000beef", headers=page.as_user("vic")).text
    edges = re.findall(r'<path class="edge" data-from="([^"]+)" data-to="([^"]+)"', html)
    expected = {
        (parent, step["id"])
        for wave in plan["waves"]
        for step in wave["steps"]
        for parent in step["upstream"]
    }
    assert set(edges) == expected and len(edges) == len(expected) > 5
    assert len(re.findall(r'<g class="step"', html)) == 6
    grids = re.findall(
        r'<svg xmlns="http://www.w3.org/2000/svg" class="partition-grid" data-step="([^"]+)"', html
    )
    assert grids == [f"etl_{i}" for i in range(6)]
    # 5 dates x 2 feeds per step, every cell pending (no run known)
    first = html.split('class="partition-grid" data-step="etl_0"', 1)[1].split("</svg>", 1)[0]
    assert first.count('class="cell"') == 10 and first.count('data-state="pending"') >= 10
    assert "5 dates × 24 hours × 2 feeds" in html
    links = dict(re.findall(r'<a href="([^"]+)" target="[^"]+" rel="noopener noreferrer">([^<]+)</a>', html))
    assert "/dags/backfill/runs/orders-fix-0000beef" in links
    assert links["https://acme.slack.com/archives/C0BACKFILL/p1700000000000100"] == "Slack thread"
    assert "/api/backfills/orders-fix-0000beef/result" in links
    assert any(
        href.startswith("http://marquez.local:3000/lineage/job/backfill/orders-fix-0000beef")
        for href in links
    )


def test_the_grid_follows_the_live_run_then_the_report(page: PageHarness) -> None:
    _planned(page, "orders-fix-0000cafe", steps=3, days=4)
    conf = RunConf(
        backfill_id="orders-fix-0000cafe",
        config_uri=f"s3://{BUCKET}/incoming/x.yaml",
        plan_uri=f"s3://{BUCKET}/backfills/orders-fix-0000cafe/plan.json",
    )
    day = date(2021, 6, 1)
    ledger = {
        "etl_0": StepOutcome(
            status=StepStatus.SUCCEEDED,
            kind="spark",
            round=0,
            dag_id="food_delivery_etl",
            figures=StepFigures(partitions_written_count=96),
        ),
        "etl_1": StepOutcome(status=StepStatus.PENDING, kind="spark", round=0, dag_id="food_delivery_etl"),
        "etl_2": StepOutcome(
            status=StepStatus.PENDING,
            kind="airflow_dag",
            round=1,
            dag_id="etl_2",
            dates={day: "success", day + timedelta(days=1): "failed"},
        ),
    }
    from backfill_orchestrator.contracts.run_state import RoundLaunch, SparkSubmission

    state = RunState(
        conf=conf,
        plan_sha256="0" * 64,
        rounds=2,
        first_round=0,
        end_round=2,
        started_at=NOW,
        ledger=ledger,
        launched=RoundLaunch(
            index=0,
            slot=0,
            spark=SparkSubmission(
                plan_uri=f"s3://{BUCKET}/r/plan.json",
                report_uri=f"s3://{BUCKET}/r/report.json",
                step_ids=["etl_1"],
            ),
        ),
    )
    page.runs.runs[("backfill", "orders-fix-0000cafe")] = RunProgress("orders-fix-0000cafe", "running", state)
    view = page.client.get("/api/backfills/orders-fix-0000cafe", headers=page.as_user("vic")).json()
    assert view["steps"] == {"etl_0": "succeeded", "etl_1": "running", "etl_2": "failed"}
    assert [grid["codes"] for grid in view["grids"]] == ["ssss", "rrrr", "sfpp"]
    assert {row["what"]: row["actual"] for row in view["figures"]}["partitions"] == "96 written"

    report = BackfillReport.build(
        backfill_id="orders-fix-0000cafe",
        dag_run_id="orders-fix-0000cafe",
        steps={
            "etl_0": ledger["etl_0"],
            "etl_1": StepOutcome(
                status=StepStatus.FAILED, kind="spark", round=0, dag_id="food_delivery_etl", detail="boom"
            ),
            "etl_2": StepOutcome(status=StepStatus.BLOCKED, kind="airflow_dag", round=1, dag_id="etl_2"),
        },
        spark_reports=[],
        written_at=NOW,
    )
    page.s3.put_object(
        Bucket=BUCKET,
        Key="backfills/orders-fix-0000cafe/backfill_report.json",
        Body=report.to_json().encode(),
    )
    page.dynamodb.update_item(
        TableName=TABLE,
        Key={"backfill_id": {"S": "orders-fix-0000cafe"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":s": {"S": "FAILED"}},
    )
    view = page.client.get("/api/backfills/orders-fix-0000cafe", headers=page.as_user("vic")).json()
    assert view["steps"] == {"etl_0": "succeeded", "etl_1": "failed", "etl_2": "blocked"}
    assert [grid["codes"] for grid in view["grids"]] == ["ssss", "ffff", "bbbb"]
    assert view["live"] is False


def test_hostile_text_is_shown_as_text(page: PageHarness) -> None:
    plan = plan_document("orders-fix-0000dead", steps=2, days=2, job_name=HOSTILE)
    uri = put_plan(page.s3, BUCKET, plan)
    _seed(
        page,
        record_item(
            "orders-fix-0000dead",
            state="FAILED",
            created_at=NOW,
            plan_uri=uri,
            owner=HOSTILE,
            reason=HOSTILE,
            errors=[{"location": HOSTILE, "message": HOSTILE}],
        ),
    )
    for path in ("/", "/b/orders-fix-0000dead"):
        html = page.client.get(path, headers=page.as_user("vic")).text
        assert "<script>window" not in html and "<img" not in html, path
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html, path
    data = html.split('<script type="application/json" id="page-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and json.loads(data)["backfill_id"] == "orders-fix-0000dead"
    assert html.count("<script") == 2  # the data block and the page's own script


def test_a_dag_run_of_airflow_leads_to_its_backfill(page: PageHarness) -> None:
    headers = page.as_user("vic")
    for run_id in ("orders-fix-0000beef", "orders-fix-0000beef__cont2", "orders-fix-0000beef__attempt3"):
        answer = page.client.get(f"/runs/backfill/{run_id}", headers=headers, follow_redirects=False)
        assert answer.headers["location"] == "/b/orders-fix-0000beef"
    rerun = page.client.get(
        "/runs/etl_orders/backfill__orders-fix-0000beef__2021-06-04", headers=headers, follow_redirects=False
    )
    assert rerun.headers["location"] == "/b/orders-fix-0000beef"
    assert (
        "not a run of the backfill DAG"
        in page.client.get("/runs/etl_orders/scheduled__2021", headers=headers).text
    )


# -- actions ----------------------------------------------------------------------------------
def _press(
    page: PageHarness,
    user: str,
    action: str,
    backfill_id: str,
    *,
    reason: str = "test",
    csrf: bool = True,
    origin: str | None = "http://testserver",
) -> tuple[int, dict]:
    from backfill_orchestrator.ui.access import csrf_token
    from tests.support.ui import Viewer

    viewer = Viewer(
        user_id=user, name=user, may_view=True, may_act=True, credential=f"jwt-of-{user}", by_cookie=True
    )
    headers = {"X-CSRF-Token": csrf_token(page.access, viewer)} if csrf else {}
    if origin:
        headers["Origin"] = origin
    page.client.cookies.set("_token", user)
    try:
        answer = page.client.post(
            f"/api/backfills/{backfill_id}/actions/{action}", json={"reason": reason}, headers=headers
        )
    finally:
        page.client.cookies.clear()
    return answer.status_code, answer.json()


def _controls(page: PageHarness, backfill_id: str) -> list[str]:
    listed = page.s3.list_objects_v2(Bucket=BUCKET, Prefix=f"control/{backfill_id}/")
    return [item["Key"] for item in listed.get("Contents", [])]


def _awaiting(page: PageHarness, backfill_id: str) -> None:
    _planned(
        page,
        backfill_id,
        state="AWAITING_APPROVAL",
        approval_requested_at=NOW.isoformat(),
        root_jobs=["food_delivery/etl_0"],
    )


def test_a_press_without_the_csrf_token_or_from_another_site_writes_nothing(page: PageHarness) -> None:
    _planned(page, "orders-fix-00000001")
    status, answer = _press(page, "jane", "cancel", "orders-fix-00000001", csrf=False)
    assert status == 403 and answer["rule"] == "csrf"
    status, answer = _press(page, "jane", "cancel", "orders-fix-00000001", origin="https://evil.example")
    assert status == 403 and "Origin" in answer["reason"]
    assert _controls(page, "orders-fix-00000001") == []


def test_a_viewer_may_look_but_not_press(page: PageHarness) -> None:
    _planned(page, "orders-fix-00000002")
    html = page.client.get("/b/orders-fix-00000002", headers=page.as_user("vic")).text
    assert 'data-actions-enabled="false"' in html
    assert re.search(r'id="action-cancel"\s+hidden', html)
    answer = page.client.post(
        "/api/backfills/orders-fix-00000002/actions/cancel", json={"reason": "x"}, headers=page.as_user("vic")
    )
    assert answer.status_code == 403 and answer.json()["rule"] == "airflow"
    assert _controls(page, "orders-fix-00000002") == []


def test_approval_by_the_submitter_is_refused_for_four_eyes(page: PageHarness) -> None:
    _awaiting(page, "orders-fix-00000003")
    status, answer = _press(page, "jane", "approve", "orders-fix-00000003")
    assert (
        status == 409 and answer["rule"] == "four_eyes" and "another person must approve" in answer["reason"]
    )
    assert _controls(page, "orders-fix-00000003") == []


def test_approval_by_a_second_person_writes_the_control_document_as_the_cli_does(page: PageHarness) -> None:
    _awaiting(page, "orders-fix-00000004")
    status, answer = _press(page, "bob", "approve", "orders-fix-00000004", reason="")
    assert status == 202 and answer["outcome"] == "requested", answer
    (key,) = _controls(page, "orders-fix-00000004")
    assert key == f"control/orders-fix-00000004/{answer['control']}"
    document = ControlRequest.from_json(page.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert document.action == "approve" and document.requested_by == "airflow:bob"
    assert "in the Airflow UI by bob" in document.reason
    outcome = f"/api/backfills/orders-fix-00000004/controls/{answer['control']}"
    assert page.client.get(outcome, headers=page.as_user("bob")).json()["outcome"] == "pending"
    result = ResultFile(
        source=f"s3://{BUCKET}/{key}",
        outcome="refused",
        backfill_id="orders-fix-00000004",
        state="AWAITING_APPROVAL",
        status_id="orders-fix-00000004",
        action="approve",
        reason="four_eyes: no",
        written_at=NOW,
    )
    page.s3.put_object(Bucket=BUCKET, Key=f"results/{key}.result.json", Body=result.to_json().encode())
    answer = page.client.get(outcome, headers=page.as_user("bob")).json()
    assert answer == {"outcome": "refused", "reason": "four_eyes: no", "state": "AWAITING_APPROVAL"}


def test_an_airflow_user_outside_the_policy_is_refused(page: PageHarness) -> None:
    _planned(page, "orders-fix-00000005")
    status, answer = _press(page, "mallory", "cancel", "orders-fix-00000005")
    assert status == 409 and "not in the deployment's policy" in answer["reason"]


def test_an_action_the_state_does_not_allow_is_refused_and_not_offered(page: PageHarness) -> None:
    _planned(page, "orders-fix-00000006", state="SUCCEEDED")
    html = page.client.get("/b/orders-fix-00000006", headers=page.as_user("jane")).text
    assert all(
        re.search(rf'id="action-{name}"\s+hidden', html) for name in ("approve", "reject", "cancel", "retry")
    )
    status, answer = _press(page, "jane", "cancel", "orders-fix-00000006")
    assert status == 409 and answer["rule"] == "state"
    status, answer = _press(page, "jane", "publish", "orders-fix-00000006")  # nothing is held
    assert status == 409 and answer["rule"] == "state"
    status, answer = _press(page, "jane", "pause", "orders-fix-00000006")
    assert status == 409 and "not an action of this page" in answer["reason"]


def test_a_huge_plan_is_drawn_up_to_the_pages_bounds(page: PageHarness) -> None:
    from backfill_orchestrator.ui.graph import MAX_GRAPH_STEPS
    from backfill_orchestrator.ui.views import MAX_GRID_STEPS

    _planned(page, "orders-fix-000000ff", steps=MAX_GRAPH_STEPS + 20, days=1)
    html = page.client.get("/b/orders-fix-000000ff", headers=page.as_user("vic")).text
    assert html.count('<g class="step"') == MAX_GRAPH_STEPS
    assert f"The graph shows the first {MAX_GRAPH_STEPS} of {MAX_GRAPH_STEPS + 20} steps." in html
    assert html.count('class="partition-grid"') == MAX_GRID_STEPS and "and 360 more steps" in html
    view = page.client.get("/api/backfills/orders-fix-000000ff", headers=page.as_user("vic")).json()
    assert len(view["steps"]) == MAX_GRAPH_STEPS and len(view["grids"]) == MAX_GRID_STEPS
