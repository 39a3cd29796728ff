"""The doubles answer as the real services do, checked against the services' own definitions:
Airflow 3's installed pydantic models and OpenAPI spec (a FastAPI app built on Airflow's
`TriggerDAGRunPostBody` is the reference for every 422), and Marquez's Java models and
`NodeId` parser (not runnable here: its @NonNull fields and its own test vectors are quoted)."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from backfill_local.airflow_double import AirflowDouble, TriggerBody
from backfill_local.marquez_double import InProcessMarquez, LineageStore, MarquezDouble, run_events
from backfill_orchestrator.config import JobRef
from backfill_orchestrator.config.model import BackfillConfig
from backfill_orchestrator.lineage import (
    MarquezClient,
    UnaddressableJobError,
    fetch_downstream,
    is_addressable,
    split_node_id,
)
from backfill_orchestrator.planner import UnaddressableRootJobError, UnreadableDownstreamError, build_plan
from backfill_orchestrator.trigger.modes import refusal_issues

dag_run_models = pytest.importorskip("airflow.api_fastapi.core_api.datamodels.dag_run")
DAGRunResponse = dag_run_models.DAGRunResponse
TriggerDAGRunPostBody = dag_run_models.TriggerDAGRunPostBody

ARN = "arn:aws:glue:us-east-1:123456789012"
DAY = "2021-06-04T00:00:00Z"


# == Airflow ===================================================================================
def _openapi_schema(name: str) -> dict[str, Any]:
    import airflow.api_fastapi.core_api as core_api

    spec_path = Path(core_api.__file__).parent / "openapi" / "v2-rest-api-generated.yaml"
    return yaml.safe_load(spec_path.read_text())["components"]["schemas"][name]


@pytest.fixture(scope="module")
def airflow() -> Iterator[AirflowDouble]:
    with AirflowDouble(dag_ids={"backfill", "parts"}, partitioned_dag_ids={"parts"}) as double:
        yield double


@pytest.fixture(scope="module")
def token(airflow: AirflowDouble) -> str:
    return requests.post(
        f"{airflow.url}/auth/token", json={"username": "admin", "password": "admin"}, timeout=10
    ).json()["access_token"]


@pytest.fixture(scope="module")
def reference() -> Any:
    """Airflow's trigger route as FastAPI validates it, body model and all, minus the database."""
    from fastapi import FastAPI

    with warnings.catch_warnings():  # starlette's note about httpx2: not ours to act on
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    app = FastAPI()

    @app.post("/api/v2/dags/{dag_id}/dagRuns")
    def trigger_dag_run(dag_id: str, body: TriggerDAGRunPostBody) -> dict[str, str]:  # type: ignore[valid-type]
        return {"dag_id": dag_id}

    return TestClient(app)


def post(
    airflow: AirflowDouble, token: str, body: bytes, content_type: str | None, dag_id: str = "backfill"
) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if content_type:
        headers["Content-Type"] = content_type
    return requests.post(
        f"{airflow.url}/api/v2/dags/{dag_id}/dagRuns", data=body, headers=headers, timeout=10
    )


def test_the_trigger_body_mirrors_airflows_model_field_for_field() -> None:
    ours, theirs = TriggerBody.model_json_schema(), TriggerDAGRunPostBody.model_json_schema()
    assert ours["properties"] == theirs["properties"]
    assert ours.get("required") == theirs.get("required") == ["logical_date"]
    assert ours["additionalProperties"] is theirs["additionalProperties"] is False
    spec = _openapi_schema("TriggerDAGRunPostBody")
    assert set(spec["properties"]) == set(ours["properties"]) and spec["required"] == ["logical_date"]


SPEC_VALID = [
    {"logical_date": None},
    {"logical_date": DAY, "dag_run_id": "with-date"},
    {
        "logical_date": None,
        "conf": {"a": 1},
        "note": "why",
        "run_after": "2021-06-05T01:02:03.5+02:00",
    },  # run id from run_after
    {
        "logical_date": "2021-06-06T00:00:00+00:00",
        "data_interval_start": "2021-06-05T00:00:00Z",
        "data_interval_end": DAY,
    },
    {
        "logical_date": None,
        "run_after": "2021-06-07T00:00:00",
        "dag_run_id": "naive-run-after",
    },  # datetime, not Aware
    {"logical_date": None, "dag_run_id": "null-conf", "conf": None, "note": ""},
    {"logical_date": None, "dag_run_id": "parted", "partition_key": "2021-06-04"},
]

SPEC_INVALID: list[tuple[bytes, str | None]] = [
    (json.dumps(body).encode(), "application/json")
    for body in (
        {"dag_run_id": "x", "conf": {}},  # logical_date is required, null or not
        {"logical_date": None, "execution_date": None},  # Airflow 2's key
        {"logical_date": None, "data_interval_start": DAY},
        {"logical_date": "2021-06-04T00:00:00"},  # naive
        {"logical_date": "tomorrow"},
        {"logical_date": None, "conf": [1]},
        {"logical_date": None, "dag_run_id": 5, "note": 3, "partition_key": 7},
        [],
        "text",
        None,
    )
] + [
    (b"{not json", "application/json"),
    (b'{"logical_date": null}', "text/plain"),
    (b"", "application/json"),
]


@pytest.fixture(scope="module")
def serialized_dags() -> dict[str, Any]:
    """Airflow's own DAGs behind the double's: `backfill` (schedule=None), `parts` (partitioned
    at runtime), as the api-server holds them."""
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.timetables.simple import PartitionedAtRuntime

    dags = {}
    for dag_id in ("backfill", "parts"):
        dag = DAG(dag_id=dag_id, schedule=None, start_date=datetime(2021, 1, 1, tzinfo=UTC))
        dags[dag_id] = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    dags["parts"].timetable = PartitionedAtRuntime()
    return dags


def _instant(value: Any) -> datetime | None:
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment  # Airflow's default zone: UTC


@pytest.mark.parametrize("body", SPEC_VALID, ids=lambda body: ",".join(body))
def test_every_spec_valid_body_is_accepted_and_answered_with_a_complete_dag_run(
    airflow, token, reference, serialized_dags, body
) -> None:
    raw = json.dumps(body).encode()
    assert (
        reference.post(
            "/api/v2/dags/parts/dagRuns", content=raw, headers={"Content-Type": "application/json"}
        ).status_code
        == 200
    )
    answer = post(airflow, token, raw, "application/json", dag_id="parts")
    assert answer.status_code == 200, answer.text
    run = answer.json()
    _assert_is_a_dag_run_response(run)
    # What Airflow's trigger route makes of this body (TriggerDAGRunPostBody.validate_context).
    context = TriggerDAGRunPostBody.model_validate(body).validate_context(serialized_dags["parts"])
    interval = context["data_interval"]
    assert _instant(run["logical_date"]) == _instant(context["logical_date"])
    assert (_instant(run["data_interval_start"]), _instant(run["data_interval_end"])) == (
        (interval.start, interval.end) if interval else (None, None)
    )
    assert (run["conf"], run["note"]) == (context["conf"] or {}, context["note"] or None)
    assert (run["partition_key"], _instant(run["partition_date"])) == (
        context["partition_key"],
        context["partition_date"],
    )
    if "run_after" in body:  # otherwise each side takes its own "now"
        assert _instant(run["run_after"]) == _instant(context["run_after"])
    if "dag_run_id" in body or "run_after" in body:  # otherwise both name the run after "now"
        assert run["dag_run_id"] == context["run_id"]
    again = requests.get(
        f"{airflow.url}/api/v2/dags/parts/dagRuns/{answer.json()['dag_run_id']}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert again.status_code == 200 and again.json() == answer.json()


@pytest.mark.parametrize(
    ("raw", "content_type"),
    SPEC_INVALID,
    ids=lambda v: (v or b"").decode()[:30] if isinstance(v, bytes) else str(v),
)
def test_every_invalid_body_gets_fastapis_exact_422(airflow, token, reference, raw, content_type) -> None:
    expected = reference.post(
        "/api/v2/dags/backfill/dagRuns",
        content=raw,
        headers={"Content-Type": content_type} if content_type else {},
    )
    answer = post(airflow, token, raw, content_type)
    assert expected.status_code == 422
    assert (answer.status_code, answer.json()) == (422, expected.json())


def test_json_is_decoded_before_authentication_as_fastapi_does(airflow) -> None:
    url = f"{airflow.url}/api/v2/dags/backfill/dagRuns"
    assert (
        requests.post(
            url, data=b"{not json", headers={"Content-Type": "application/json"}, timeout=10
        ).status_code
        == 422
    )
    assert requests.post(url, json={"not": "valid"}, timeout=10).status_code == 401


def _assert_is_a_dag_run_response(answer: dict[str, Any]) -> None:
    """Valid for Airflow's model, and exactly what Airflow would write for it: every field,
    no other, times in pydantic's JSON form."""
    model = DAGRunResponse.model_validate(answer)
    assert model.model_dump(mode="json") == answer
    spec = _openapi_schema("DAGRunResponse")
    assert set(answer) == set(spec["properties"]) and set(spec["required"]) <= set(answer)


def test_runs_answered_by_trigger_and_get_are_dag_run_responses(airflow, token) -> None:
    body = json.dumps({"logical_date": DAY, "dag_run_id": "complete", "conf": {"backfill_id": "b"}}).encode()
    created = post(airflow, token, body, "application/json").json()
    _assert_is_a_dag_run_response(created)
    assert (created["data_interval_start"], created["data_interval_end"]) == (
        DAY,
        DAY,
    )  # schedule=None: exact
    assert created["dag_versions"] and created["triggering_user_name"] == "admin"


def test_partition_keys_are_refused_as_airflow_refuses_them(airflow, token, serialized_dags) -> None:
    for dag_id, key in (("backfill", "p"), ("parts", " "), ("parts", "k" * 251)):
        with pytest.raises(ValueError) as refused:  # trigger_dag_run answers these 400
            serialized_dags[dag_id].validate_partition_key(key)
        body = json.dumps({"logical_date": None, "partition_key": key}).encode()
        answer = post(airflow, token, body, "application/json", dag_id=dag_id)
        assert (answer.status_code, answer.json()) == (400, {"detail": str(refused.value)})


def test_conflicts_and_unknown_dags_answer_as_airflow(airflow, token) -> None:
    body = json.dumps({"logical_date": "2021-07-01T00:00:00Z", "dag_run_id": "once"}).encode()
    assert post(airflow, token, body, "application/json").status_code == 200
    again = post(airflow, token, body, "application/json")
    same_date = post(
        airflow, token, json.dumps({"logical_date": "2021-07-01T00:00:00Z"}).encode(), "application/json"
    )
    for conflict in (again, same_date):  # _UniqueConstraintErrorHandler's detail
        assert conflict.status_code == 409
        assert set(conflict.json()["detail"]) == {"reason", "statement", "orig_error", "message"}
    missing = post(airflow, token, b'{"logical_date": null}', "application/json", dag_id="nope")
    assert (missing.status_code, missing.json()) == (404, {"detail": "Dag with dag_id: 'nope' not found"})


# == Marquez ===================================================================================
# @NonNull fields of marquez.service.models.DatasetData / JobData and the Run model (0.51):
# Jackson writes every property, and these are never null.
DATASET_NON_NULL = {
    "id",
    "type",
    "name",
    "physicalName",
    "createdAt",
    "updatedAt",
    "namespace",
    "sourceName",
    "fields",
    "tags",
}
DATASET_FIELDS = DATASET_NON_NULL | {"lastModifiedAt", "description", "lastLifecycleState"}
JOB_NON_NULL = {
    "id",
    "type",
    "name",
    "simpleName",
    "createdAt",
    "updatedAt",
    "namespace",
    "inputs",
    "outputs",
}
JOB_FIELDS = JOB_NON_NULL | {
    "parentJobName",
    "parentJobUuid",
    "currentRunUuid",
    "location",
    "description",
    "latestRun",
}
RUN_NON_NULL = {"id", "createdAt", "updatedAt", "state", "args", "facets"}
RUN_FIELDS = RUN_NON_NULL | {
    "nominalStartTime",
    "nominalEndTime",
    "startedAt",
    "endedAt",
    "durationMs",
    "jobVersion",
    "inputDatasetVersions",
    "outputDatasetVersions",
}
INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z$")  # Instant.toString()


def _assert_fields(data: dict[str, Any], every: set[str], non_null: set[str], what: str) -> None:
    assert set(data) == every, f"{what}: {set(data) ^ every}"
    assert not [key for key in non_null if data[key] is None], what
    for key in ("createdAt", "updatedAt", "lastModifiedAt", "startedAt", "endedAt"):
        assert data.get(key) is None or INSTANT.match(data[key]), (what, key, data[key])


def test_node_data_has_every_field_marquez_never_leaves_null() -> None:
    events = run_events("ns", "extract", parent="nightly", outputs=["raw"]) + run_events(
        "ns", "load", inputs=["raw"]
    )
    with MarquezDouble(seed="food_delivery", events=events) as double:
        graphs = [
            requests.get(f"{double.url}/api/v1/lineage", params={"nodeId": node}, timeout=10).json()["graph"]
            for node in ("job:food_delivery:etl_orders", "job:ns:nightly.extract")
        ]
    nodes = [node for graph in graphs for node in graph]
    for node in nodes:
        data = node["data"]
        if node["type"] == "DATASET":
            _assert_fields(data, DATASET_FIELDS, DATASET_NON_NULL, node["id"])
            assert all(set(f) == {"name", "type", "tags", "description"} for f in data["fields"])
        else:
            _assert_fields(data, JOB_FIELDS, JOB_NON_NULL, node["id"])
            _assert_fields(data["latestRun"], RUN_FIELDS, RUN_NON_NULL, f"{node['id']} latestRun")
    assert {n["type"] for n in nodes} == {"JOB", "DATASET"}


# marquez-api NodeIdTest's own vectors: these ids read back whole.
MARQUEZ_VECTORS = [
    ("job", "my-namespace", "my-job"),
    ("job", "org://team", "my-job"),
    ("job", "my-namespace", "my-job#aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"),
    ("job", "org://team", "my-job#aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"),
    ("dataset", "my-namespace", "my-dataset"),
    ("dataset", "gs://bucket", "/path/to/data"),
    ("dataset", "postgresql://hostname:5432/database", "my_table"),
    ("dataset", "my-namespace", "my_struct<a:bigint,b:bigint,c:string>"),
    ("dataset", "postgresql://hostname:5432/database", "my_table#aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"),
]


@pytest.mark.parametrize(("kind", "namespace", "name"), MARQUEZ_VECTORS)
def test_node_ids_split_as_marquez_own_tests_say(kind, namespace, name) -> None:
    assert split_node_id(f"{kind}:{namespace}:{name}") == (kind, namespace, name)


@pytest.mark.parametrize(
    ("namespace", "name", "read_as", "status"),
    [
        (ARN, "etl", ("arn", "aws:glue:us-east-1:123456789012:etl"), 404),  # the issue's case
        ("a:b", "1", ("a", "b:1"), 404),
        # Java's split drops the empty last part; with '#' Marquez skips the existence check
        # and then fails on the orphan dataset it looks for.
        ("ns", "trailing#", ("ns", "trailing"), 500),
    ],
)
def test_a_plain_colon_in_a_namespace_is_unreachable_in_marquez_and_the_double(
    namespace, name, read_as, status
) -> None:
    assert split_node_id(f"job:{namespace}:{name}")[1:] == read_as and not is_addressable(namespace, name)
    with MarquezDouble(events=run_events(namespace, name, outputs=["x"])) as double:
        answer = requests.get(
            f"{double.url}/api/v1/lineage", params={"nodeId": f"job:{namespace}:{name}"}, timeout=10
        )
        assert answer.status_code == status
        if status == 404:
            assert answer.json()["message"] == f"Job '{read_as[1]}' not found."
        with pytest.raises(
            UnaddressableJobError,
            match=re.escape(f"Marquez reads 'job:{namespace}:{name}' as job {read_as[1]!r}"),
        ):
            MarquezClient(double.url).lineage(JobRef(namespace=namespace, name=name), depth=3)
        assert len(double.lineage_requests()) == 1  # ours: the client never asked


# == the planner on jobs Marquez cannot address ===============================================
def _config(*jobs: tuple[str, str], max_depth: int = 50) -> BackfillConfig:
    return BackfillConfig.model_validate(
        {
            "version": 1,
            "name": "arn-fix",
            "owner": "jane.doe@example.com",
            "mode": "batch",
            "jobs": [{"namespace": ns, "name": name} for ns, name in jobs],
            "dates": ["2021-06-04"],
            "downstream": {"max_depth": max_depth},
        },
        context={"today": datetime(2021, 7, 1).date()},
    )


def test_an_unaddressable_root_is_a_located_refusal_before_anything_is_asked() -> None:
    store = LineageStore()
    store.ingest_all(run_events("ns", "good", outputs=["g"]) + run_events(ARN, "etl", outputs=["raw"]))
    source = InProcessMarquez(store)
    config = _config(("ns", "good"), (ARN, "etl"))

    with pytest.raises(UnaddressableRootJobError) as refused:
        build_plan(config, backfill_id="arn-fix-00000000", lineage=source)

    assert refused.value.location == "jobs[1]" and str(refused.value).startswith(
        f"jobs[1]: job 'etl' in namespace '{ARN}'"
    )
    assert refused.value.category == "refused" and not refused.value.retryable
    assert [q for q, _ in source.queries] == ["job:ns:good"]  # never asked about the misread id
    [issue] = refusal_issues(config, refused.value)  # the trigger rejects it at jobs[1]
    assert issue.location == "jobs[1]"


def test_lineage_reaching_an_unaddressable_job_it_must_read_past_is_refused_naming_it() -> None:
    store = LineageStore()
    for index in range(25):  # j20 sits where one answer (20 hops) ends: its consumers need a query
        namespace = ARN if index == 20 else "ns"
        inputs = [("ns", f"d{index - 1}")] if index else []
        store.ingest_all(run_events(namespace, f"j{index}", inputs=inputs, outputs=[("ns", f"d{index}")]))

    with pytest.raises(UnreadableDownstreamError) as refused:
        build_plan(_config(("ns", "j0")), backfill_id="arn-fix-00000000", lineage=InProcessMarquez(store))
    assert refused.value.jobs == [JobRef(namespace=ARN, name="j20")]
    assert "20 hops downstream" in str(refused.value) and "downstream.max_depth to 19" in str(refused.value)

    # Seen whole inside one answer, the same job is planned: nothing needs its node id.
    plan = build_plan(
        _config(("ns", "j0"), max_depth=19), backfill_id="arn-fix-00000000", lineage=InProcessMarquez(store)
    )
    assert len(plan.steps) == 20
    graph = fetch_downstream(InProcessMarquez(store), [JobRef(namespace="ns", name="j15")], max_depth=10)
    assert graph.is_complete((ARN, "j20"))
