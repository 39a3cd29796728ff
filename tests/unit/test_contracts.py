"""The contracts: every document that crosses a process is written by one side and read by the
other through the same model; an old-version or malformed document is refused with a clear,
located error; the committed JSON Schemas match the models; the contracts sit at the bottom
of the package's import graph."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from backfill_orchestrator.contracts import (
    CONTRACTS,
    AttemptDone,
    BackfillReport,
    ControlRequest,
    InvalidDocumentError,
    Plan,
    RerunChunk,
    ResultFile,
    RoundLaunch,
    RunConf,
    RunReport,
    RunState,
    SparkSubmission,
    StepOutcome,
    StepResult,
    StepStatus,
    parse_document,
)
from backfill_orchestrator.contracts.publish import MAX_HELD_TOP, HeldStep
from backfill_orchestrator.contracts.schemas import contract_schema, stale
from backfill_orchestrator.errors import UserError
from tests.support.publish import sample_ledger, sample_manifest, sample_policy, sample_step_checks

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2021, 6, 14, 9, 30, tzinfo=UTC)


def sample_plan() -> Plan:
    step = {
        "id": "etl_orders",
        "job": {"namespace": "food_delivery", "name": "etl_orders"},
        "dag_id": "etl_orders",
        "kind": "spark",
        "transform": "etl_orders",
        "dates": ["2021-06-04"],
        "reason": "root",
    }
    rerun = {
        **step,
        "id": "email_discounts",
        "kind": "airflow_dag",
        "transform": None,
        "dag_id": "email_discounts",
        "job": {"namespace": "food_delivery", "name": "email_discounts"},
        "reason": "downstream",
        "upstream": ["etl_orders"],
    }
    return Plan.model_validate(
        {
            "backfill_id": "orders-fix-1a2b3c4d",
            "name": "orders-fix",
            "owner": "@jane",
            "created_at": NOW.isoformat(),
            "roots": [{"namespace": "food_delivery", "name": "etl_orders"}],
            "dates": ["2021-06-04"],
            "waves": [{"index": 0, "steps": [step]}, {"index": 1, "steps": [rerun]}],
        }
    )


def sample_run_report() -> RunReport:
    """As spark_jobs.runner builds it."""
    return RunReport(
        backfill_id="orders-fix-1a2b3c4d",
        plan="s3://b/backfills/orders-fix-1a2b3c4d/rounds/0/plan.json",
        warehouse="s3a://lake",
        application_id="local-1",
        started_at=NOW,
        finished_at=NOW,
        seconds=12.5,
        steps=[
            StepResult(
                id="a",
                transform="a",
                wave=0,
                status=StepStatus.SUCCEEDED,
                seconds=3.0,
                rows_in=10,
                rows_in_by_input={"orders": 10},
                rows_out=9,
                partitions_written=["day=2021-06-04/feed=web"],
            ),
            StepResult(id="b", transform="b", wave=0, status=StepStatus.FAILED, seconds=1.0, error="boom"),
            StepResult(
                id="c", transform="c", wave=1, status=StepStatus.BLOCKED, seconds=0.0, blocked_by=["b"]
            ),
        ],
        external_steps=["email_discounts"],
    )


def sample_backfill_report() -> BackfillReport:
    """As the DAG's finish builds it from its ledger."""
    steps = {
        "a": StepOutcome(
            status=StepStatus.SUCCEEDED,
            kind="spark",
            round=0,
            dag_id="etl",
            figures={"seconds": 3.0, "rows_out": 9, "partitions_written_count": 1},
        ),
        "d": StepOutcome(
            status=StepStatus.FAILED,
            kind="airflow_dag",
            round=1,
            dag_id="d",
            detail="DAG run failed for 2021-06-04",
            dates={"2021-06-04": "failed"},
        ),
    }
    return BackfillReport.build(
        backfill_id="orders-fix-1a2b3c4d",
        dag_run_id="orders-fix-1a2b3c4d",
        steps=steps,
        spark_reports=["s3://b/backfills/orders-fix-1a2b3c4d/rounds/0/run_report.json"],
        written_at=NOW,
    )


def sample_result_file() -> ResultFile:
    """As the trigger writes it for an accepted upload."""
    return ResultFile(
        source="s3://b/incoming/team-a/orders.yaml",
        outcome="accepted",
        backfill_id="orders-fix-1a2b3c4d",
        state="TRIGGERED",
        status_id="orders-fix-1a2b3c4d",
        config_uri="s3://b/backfills/orders-fix-1a2b3c4d/config.yaml",
        plan_uri="s3://b/backfills/orders-fix-1a2b3c4d/plan.json",
        plan={"waves": [["etl_orders"]], "steps": 1},
        dag_id="backfill",
        dag_run_id="orders-fix-1a2b3c4d",
        status_command="backfill status orders-fix-1a2b3c4d",
        written_at=NOW,
    )


def sample_run_state() -> RunState:
    """As a round's `prepare` writes it: the ledger so far and the round it launched."""
    conf = RunConf(
        backfill_id="orders-fix-1a2b3c4d",
        config_uri="s3://b/c.yaml",
        plan_uri="s3://b/backfills/o/plan.json",
        trace_id="1-5e1b4151-abc",
    )
    ledger = {
        "etl_orders": StepOutcome(status=StepStatus.PENDING, kind="spark", round=0, dag_id="etl"),
        "email_discounts": StepOutcome(
            status=StepStatus.PENDING,
            kind="airflow_dag",
            round=0,
            dag_id="email_discounts",
            dates={"2021-06-04": "success"},
        ),
    }
    launch = RoundLaunch(
        index=0,
        slot=0,
        spark=SparkSubmission(
            plan_uri="s3://b/backfills/o/rounds/0/plan.json",
            report_uri="s3://b/backfills/o/rounds/0/run_report.json",
            step_ids=["etl_orders"],
        ),
        reruns={"email_discounts": ["2021-06-05", "2021-06-06"]},
        rerun_conf={"backfill_id": "orders-fix-1a2b3c4d"},
        chunks=[
            RerunChunk(
                start=0,
                end=2,
                label="email_discounts 2021-06-05 .. email_discounts 2021-06-06 (2 runs)",
                outcomes_uri="s3://b/backfills/o/rounds/0/reruns/0.json",
            )
        ],
    )
    return RunState(
        conf=conf,
        plan_sha256="0" * 64,
        rounds=1,
        first_round=0,
        end_round=1,
        started_at=NOW,
        spark_profile={"name": "medium", "runner": "local"},
        ledger=ledger,
    ).with_launched(launch)


SAMPLES: dict[str, Any] = {
    "run-conf": lambda: RunConf(
        backfill_id="orders-fix-1a2b3c4d",
        config_uri="s3://b/c.yaml",
        plan_uri="s3://b/p.json",
        result_uri="s3://b/results/orders.yaml.result.json",
        trace_id="1-5e1b4151-abc",
    ),
    "plan": sample_plan,
    "run-report": sample_run_report,
    "backfill-report": sample_backfill_report,
    "result-file": sample_result_file,
    "control": lambda: ControlRequest(
        action="cancel",
        backfill_id="orders-fix-1a2b3c4d",
        reason="wrong dates",
        requested_by="jane.doe@example.com",
        requested_at=NOW,
    ),
    "attempt": lambda: AttemptDone(
        backfill_id="orders-fix-1a2b3c4d",
        attempt=2,
        steps_done=["etl_orders"],
        dates_done={"email_discounts": ["2021-06-04"]},
    ),
    "run-state": sample_run_state,
    "publish-policy": sample_policy,
    "step-checks": sample_step_checks,
    "publish-manifest": sample_manifest,
    "partition-ledger": sample_ledger,
}


def written(name: str) -> str:
    """The sample as its writer puts it on the wire."""
    sample = SAMPLES[name]()
    if name == "run-conf":
        return json.dumps(sample.to_conf())
    if name == "run-state":  # an XCom value: the JSON of a dict
        return json.dumps(sample.to_xcom())
    return sample.to_json()


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_what_one_side_writes_the_other_reads_through_the_same_model(name: str) -> None:
    model = CONTRACTS[name]
    read = parse_document(model, written(name).encode(), source=f"{name}.json")
    assert read == SAMPLES[name]()
    assert isinstance(read, model)


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_every_written_document_fits_its_published_schema(name: str) -> None:
    schema = contract_schema(name, CONTRACTS[name])
    jsonschema.validate(json.loads(written(name)), schema)


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_another_version_is_refused_with_one_clear_issue(name: str) -> None:
    model = CONTRACTS[name]
    document = json.loads(written(name))
    document[model.version_field] = model.version + 1
    with pytest.raises(InvalidDocumentError) as caught:
        parse_document(model, json.dumps(document), source="doc.json")
    assert [issue.location for issue in caught.value.issues] == [model.version_field]
    assert f"unsupported version {model.version + 1}" in str(caught.value)
    assert str(caught.value).startswith(f"doc.json: {model.document_name}: {model.version_field}: ")
    assert isinstance(caught.value, UserError)


def test_a_version_1_run_report_with_skipped_steps_is_refused_as_the_old_format() -> None:
    old = {  # what the Spark job wrote before the contracts
        "report_version": 1,
        "backfill_id": "orders-fix-1a2b3c4d",
        "plan": "p",
        "warehouse": "w",
        "application_id": "a",
        "started_at": "2021-06-14T09:00:00+00:00",
        "finished_at": "2021-06-14T09:01:00+00:00",
        "seconds": 60,
        "status": "failed",
        "external_steps": [],
        "steps": [
            {"id": "c", "transform": "c", "wave": 1, "status": "skipped", "seconds": 0, "blocked_by": ["b"]}
        ],
    }
    with pytest.raises(
        InvalidDocumentError,
        match="report_version: unsupported version 1: this release reads Spark run report version 2 only",
    ):
        RunReport.from_json(json.dumps(old))


def test_a_document_without_its_version_is_refused_except_a_hand_made_run_conf() -> None:
    document = json.loads(written("run-report"))
    del document["report_version"]
    with pytest.raises(InvalidDocumentError, match="report_version: missing"):
        RunReport.from_json(json.dumps(document))
    conf = json.loads(written("run-conf"))
    del conf["contract_version"]
    assert RunConf.from_conf(conf).contract_version == 1


def test_a_malformed_run_report_names_every_problem_where_it_is() -> None:
    document = json.loads(written("run-report"))
    document["steps"][2]["status"] = "skipped"
    document["steps"][0]["rows_out"] = -1
    document["steps"][1]["eror"] = "typo"
    with pytest.raises(InvalidDocumentError) as caught:
        RunReport.from_json(json.dumps(document), source="s3://b/run_report.json")
    assert caught.value.problems == [
        "steps[0].rows_out: input should be greater than or equal to 0, got -1",
        "steps[1].eror: unknown key; did you mean 'error'?",
        "steps[2].status: input should be 'pending', 'succeeded', 'failed', 'blocked' or 'awaiting_publish', got 'skipped'",
    ]
    assert (
        str(caught.value)
        .splitlines()[2]
        .startswith("s3://b/run_report.json: Spark run report: steps[2].status")
    )


def test_a_run_report_whose_status_contradicts_its_steps_is_refused() -> None:
    document = json.loads(written("run-report"))
    document["status"] = "succeeded"
    with pytest.raises(
        InvalidDocumentError, match=r"<root>: status is succeeded but steps b, c did not succeed"
    ):
        RunReport.from_json(json.dumps(document))
    document = json.loads(written("run-report"))
    document["steps"][0]["partitions_written_count"] = 5
    with pytest.raises(InvalidDocumentError, match=r"steps\[0\]: .*partitions_written_count is 5 but 1"):
        RunReport.from_json(json.dumps(document))


def test_a_backfill_report_with_pending_steps_or_a_wrong_status_is_refused() -> None:
    document = json.loads(written("backfill-report"))
    document["steps"]["a"]["status"] = "pending"
    with pytest.raises(InvalidDocumentError, match="steps a are still pending"):
        BackfillReport.from_json(json.dumps(document))
    document = json.loads(written("backfill-report"))
    document["status"] = "succeeded"
    with pytest.raises(InvalidDocumentError, match="status is succeeded but the steps say failed"):
        BackfillReport.from_json(json.dumps(document))


def test_a_malformed_result_file_and_plan_are_located() -> None:
    document = json.loads(written("result-file"))
    document["state"] = "DONE"
    document["plan"]["steps"] = "one"
    with pytest.raises(InvalidDocumentError) as caught:
        ResultFile.from_json(json.dumps(document))
    assert [issue.location for issue in caught.value.issues] == ["state", "plan.steps"]
    document = json.loads(written("backfill-report"))
    document["steps"]["a"]["figures"]["rows_ot"] = 1
    with pytest.raises(
        InvalidDocumentError, match=r"steps\.a\.figures\.rows_ot: unknown key; did you mean 'rows_out'\?"
    ):
        BackfillReport.from_json(json.dumps(document))
    plan = json.loads(written("plan"))
    plan["waves"][1]["steps"][0]["upstream"] = ["nope"]
    plan["waves"][0]["steps"][0]["dates"] = ["2021-02-30"]
    with pytest.raises(InvalidDocumentError) as caught:
        Plan.from_json(json.dumps(plan), source="plan.json")
    assert caught.value.problems[0].startswith("waves[0].steps[0].dates[0]: input should be a valid date")


def test_control_documents_are_validated_like_a_config() -> None:
    bad = {
        "control_version": 1,
        "action": "pause",
        "backfill_id": "Orders",
        "reason": "  ",
        "requested_by": "jane doe",
        "requested_at": "2021-06-14T09:30:00",
        "extra": True,
    }
    with pytest.raises(InvalidDocumentError) as caught:
        ControlRequest.from_json(json.dumps(bad), source="control/cancel.json")
    by_location = {issue.location: issue.message for issue in caught.value.issues}
    assert set(by_location) == {"action", "backfill_id", "reason", "requested_by", "requested_at", "extra"}
    assert by_location["action"].startswith(
        "input should be 'cancel', 'retry', 'approve', 'reject', 'publish', 'discard', 'undo' or 'start'"
    )
    assert by_location["backfill_id"] == "expected <name>-<8 hex digits>, got 'Orders'"
    assert by_location["reason"] == "must not be blank"
    assert "pattern" in by_location["requested_by"] or "match" in by_location["requested_by"]
    assert "timezone" in by_location["requested_at"]
    for action in ("cancel", "retry", "approve", "reject", "start"):
        ok = {
            **bad,
            "action": action,
            "backfill_id": "orders-1a2b3c4d",
            "reason": "why",
            "requested_by": "@jane",
            "requested_at": "2021-06-14T09:30:00Z",
        }
        del ok["extra"]
        assert ControlRequest.from_json(json.dumps(ok)).action == action


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "<root>: empty document"),
        (b"{not json", "<root>: invalid JSON at line 1, column 2"),
        (b'{"a": 1, "a": 2}', "<root>: invalid JSON: duplicate key 'a'"),
        (b'{"a": NaN}', "<root>: invalid JSON: NaN is not a valid JSON number"),
        (b"[1, 2]", "<root>: expected a JSON object at the top, got list"),
        (b"\xff\xfe", "<root>: not UTF-8 text"),
        (b" " * (64 * 1024 + 1), "<root>: document is 65537 bytes; the limit is 65536"),
    ],
)
def test_unreadable_documents_get_one_clear_issue(body: bytes, message: str) -> None:
    with pytest.raises(InvalidDocumentError) as caught:
        RunConf.from_json(body, source="conf.json")
    assert str(caught.value).startswith(f"conf.json: DAG run conf: {message}")


def test_the_committed_schemas_match_the_models() -> None:
    assert stale(REPO / "docs" / "schemas") == [], (
        "regenerate: python -m backfill_orchestrator.contracts.schemas --write docs/schemas"
    )


def test_a_stale_schema_is_detected(tmp_path: Path) -> None:
    from backfill_orchestrator.contracts.schemas import main

    assert main(["--write", str(tmp_path)]) == 0
    assert main(["--check", str(tmp_path)]) == 0
    (tmp_path / "run-report.schema.json").write_text("{}")
    (tmp_path / "control.schema.json").unlink()
    assert stale(tmp_path) == ["run-report.schema.json", "control.schema.json"]
    assert main(["--check", str(tmp_path)]) == 1


def test_a_run_state_changes_only_into_a_new_one() -> None:
    """The DAG's tasks derive the next state with the with_... methods: the state they read is
    never changed, and the next one reads back equal from its XCom JSON."""
    state = sample_run_state()
    with pytest.raises(ValidationError):
        state.rounds = 2  # type: ignore[misc]
    done = StepOutcome(status=StepStatus.SUCCEEDED, kind="spark", round=0, dag_id="etl")
    settled = state.with_settled({**state.ledger, "etl_orders": done})
    assert settled.launched is None and settled.ledger["etl_orders"] is done
    assert state.launched is not None and state.ledger["etl_orders"].status is StepStatus.PENDING
    later = settled.with_progress_written(NOW)
    assert later.progress_written_at == NOW and settled.progress_written_at is None
    assert RunState.from_json(json.loads(json.dumps(later.to_xcom()))) == later
    assert (state.backfill_id, state.slots_used) == ("orders-fix-1a2b3c4d", 1)
    assert list(state.launched.rerun_requests()) == [
        ("email_discounts", date(2021, 6, 5)),
        ("email_discounts", date(2021, 6, 6)),
    ]
    assert state.launched.with_reruns_done().chunks == [] and state.launched.chunks


# -- the package's import graph (tests/unit/test_import_layers.py checks there is no cycle) ----
def test_the_contracts_sit_at_the_bottom_of_the_package() -> None:
    from tests.support.imports import package_imports

    graph = package_imports()
    assert graph["contracts"] <= {"config", "errors", "parsing", "_compat"}
    assert graph["parsing"] <= {"errors"}  # every document's reader, below everything that reads one
    assert "plan" not in graph  # the plan's one home is contracts.plan


def test_a_held_step_summarises_its_checks_bounded():
    checks = sample_step_checks()
    long_reasons = checks.model_copy(update={"reasons": ["x" * 600] * (MAX_HELD_TOP + 2)})
    held = HeldStep.of(long_reasons, checks_uri="s3://b/checks.json")
    assert (held.step, held.attempt, held.table) == ("etl_orders", 1, "orders")
    assert (held.partitions, held.rows_before, held.rows_after, held.keys_removed) == (72, 140, 139, 1)
    assert held.partitions_emptied == 0 and held.partitions_new == 0
    assert [reason for reason in held.reasons] == ["x" * 500] * MAX_HELD_TOP
    [top] = held.top
    assert (top.partition, top.change, top.rows_before, top.rows_after, top.keys_removed) == (
        "day=2021-05-05/hour=3/feed=web",
        "changed",
        2,
        1,
        1,
    )
    assert held.checks_uri == "s3://b/checks.json"


def test_a_step_result_counts_its_figures():
    step = StepResult(
        id="s",
        transform="t",
        wave=0,
        status="succeeded",
        seconds=2.5,
        rows_in=7,
        rows_out=5,
        partitions_written=["day=2021-06-04"],
    )
    assert step.figures.model_dump() == {
        "seconds": 2.5,
        "rows_in": 7,
        "rows_out": 5,
        "partitions_written_count": 1,
    }
