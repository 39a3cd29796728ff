"""The DAG's support code without Airflow processes: rounds, the ledger, conf checks, the run
report reader, the result file, URIs (fast; no network)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from backfill_runtime.rounds import sub_plan
from backfill_runtime.step_ledger import DagRunRequest, Ledger

from backfill_orchestrator.contracts import InvalidDocumentError, RunConf, RunReport, StepResult, StepStatus
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.documents import DocumentNotFoundError, read_text, remove, sibling, write_text
from backfill_orchestrator.planner import plan_rounds
from tests.support.airflow import step

D = ["2021-06-04", "2021-06-05"]
PENDING, SUCCEEDED, FAILED, BLOCKED = (
    StepStatus.PENDING,
    StepStatus.SUCCEEDED,
    StepStatus.FAILED,
    StepStatus.BLOCKED,
)


def run_report(*steps: StepResult) -> RunReport:
    """A report as the Spark job writes it, read back the way the DAG reads it."""
    written = RunReport(
        backfill_id="unit-0123abcd",
        plan="s3://b/rounds/0/plan.json",
        warehouse="s3a://lake",
        application_id="app-1",
        started_at="2021-06-14T09:00:00+00:00",
        finished_at="2021-06-14T09:01:00+00:00",
        seconds=60.0,
        steps=list(steps),
    )
    return RunReport.from_json(written.to_json().encode(), source="run_report.json")


def make_plan(waves: list[list[dict]]) -> Plan:
    return Plan.model_validate(
        {
            "backfill_id": "unit-0123abcd",
            "name": "unit",
            "owner": "jane@example.com",
            "created_at": datetime(2021, 6, 14, tzinfo=UTC).isoformat(),
            "roots": [{"namespace": "food_delivery", "name": waves[0][0]["id"]}],
            "dates": D,
            "waves": [{"index": i, "steps": s} for i, s in enumerate(waves)],
        }
    )


INTERLEAVED = [
    [step("a", "spark", dates=D), step("x", "spark", dates=D)],
    [step("b", "spark", dates=D, upstream=["a"]), step("d1", "airflow_dag", dates=D, upstream=["x"])],
    [step("d2", "airflow_dag", dates=D, upstream=["b"]), step("c", "spark", dates=D, upstream=["d1"])],
    [
        step("e", "spark", dates=D, upstream=["c", "b"]),
        step("d3", "airflow_dag", dates=D[:1], upstream=["d2"]),
    ],
]


def test_chained_spark_steps_share_a_round_and_each_kind_switch_starts_a_new_one() -> None:
    rounds = plan_rounds(make_plan(INTERLEAVED))
    assert {step_id: r.index for r in rounds for step_id in r.step_ids} == {
        "a": 0,
        "x": 0,
        "b": 0,
        "d1": 1,
        "d2": 1,
        "c": 2,
        "e": 2,
        "d3": 2,
    }
    assert Ledger.for_plan(make_plan(INTERLEAVED)).entries["e"].round == 2  # the ledger's rounds are the same


def test_sub_plan_keeps_only_the_chosen_steps_and_their_inner_edges_and_is_valid() -> None:
    plan = make_plan(INTERLEAVED)
    sub = sub_plan(plan, {"c", "e"})
    assert [[s.id for s in w.steps] for w in sub.waves] == [["c"], ["e"]]
    assert [w.index for w in sub.waves] == [2, 3]
    assert sub.step("c").upstream == [] and sub.step("e").upstream == ["c"]
    assert Plan.from_json(sub.to_json()) == sub


def test_the_ledger_blocks_dependants_of_failures_only() -> None:
    plan = make_plan(INTERLEAVED)
    ledger = Ledger.for_plan(plan)
    work = ledger.plan_round(plan, 0)
    assert work.spark_step_ids == ["a", "x", "b"] and work.dag_runs == []
    ledger.record_spark(
        ["a", "x", "b"],
        report=run_report(
            StepResult(id="a", transform="a", wave=0, status=FAILED, seconds=1.0, error="boom"),
            StepResult(id="x", transform="x", wave=0, status=SUCCEEDED, seconds=2.0, rows_out=5),
            StepResult(id="b", transform="b", wave=1, status=BLOCKED, seconds=0.0, blocked_by=["a"]),
        ),
        task_state="failed",
    )
    assert ledger.entries["b"].detail == "not run: upstream a did not succeed"
    work = ledger.plan_round(plan, 1)
    assert work.blocked == {"d2": "not run: upstream b did not succeed"}
    assert work.dag_runs == [
        DagRunRequest("d1", "d1", date(2021, 6, 4)),
        DagRunRequest("d1", "d1", date(2021, 6, 5)),
    ]
    ledger.record_dag_runs(work.dag_runs, {0: "success", 1: "failed"})
    assert ledger.entries["d1"].status is FAILED
    assert ledger.entries["d1"].detail == "DAG run failed for 2021-06-05"
    work = ledger.plan_round(plan, 2)
    assert work.spark_step_ids == [] and work.dag_runs == []
    assert set(work.blocked) == {"c", "e", "d3"}
    assert ledger.counts() == {
        PENDING: 0,
        SUCCEEDED: 1,
        FAILED: 2,
        BLOCKED: 5,
        StepStatus.AWAITING_PUBLISH: 0,
    }
    assert not ledger.succeeded
    assert Ledger(ledger.to_dict()).entries == ledger.entries  # through XCom and back


def test_a_held_step_blocks_its_dependants_and_reruns_and_the_report_awaits_publish() -> None:
    from backfill_orchestrator.contracts import BackfillReport

    plan = make_plan(INTERLEAVED)
    ledger = Ledger.for_plan(plan)
    ledger.plan_round(plan, 0)
    ledger.record_spark(
        ["a", "x", "b"],
        report=run_report(
            StepResult(id="a", transform="a", wave=0, status=StepStatus.AWAITING_PUBLISH, seconds=1.0),
            StepResult(id="x", transform="x", wave=0, status=SUCCEEDED, seconds=2.0),
            StepResult(id="b", transform="b", wave=1, status=BLOCKED, seconds=0.0, blocked_by=["a"]),
        ),
        task_state="success",
    )
    work = ledger.plan_round(plan, 1)
    assert work.blocked == {"d2": "not run: upstream b did not succeed"}  # b was blocked by the held a
    assert [run.step_id for run in work.dag_runs] == ["d1", "d1"]  # x's rerun does not wait
    ledger.record_dag_runs(work.dag_runs, {0: "success", 1: "success"})
    for index in range(2, len(plan_rounds(plan))):  # what does not wait for `a` runs, and succeeds
        work = ledger.plan_round(plan, index)
        for step_id in work.spark_step_ids:
            ledger.mark(step_id, SUCCEEDED)
        ledger.record_dag_runs(work.dag_runs, dict.fromkeys(range(len(work.dag_runs)), "success"))
    report = BackfillReport.build(
        backfill_id="unit-0123abcd",
        dag_run_id="r",
        steps=ledger.entries,
        spark_reports=[],
        written_at=datetime.now(UTC),
    )
    assert report.status == "awaiting_publish" and report.awaiting_publish and not report.succeeded
    held = make_plan([[step("h", "spark", dates=D)], [step("r", "airflow_dag", dates=D, upstream=["h"])]])
    ledger = Ledger.for_plan(held)
    ledger.plan_round(held, 0)
    ledger.record_spark(
        ["h"],
        report=run_report(
            StepResult(id="h", transform="h", wave=0, status=StepStatus.AWAITING_PUBLISH, seconds=1)
        ),
        task_state="success",
    )
    work = ledger.plan_round(held, 1)
    assert work.dag_runs == [] and work.blocked == {"r": "waits for the publish of h"}
    ledger.mark("r", FAILED, detail="boom")  # a failure anywhere: the backfill failed, nothing waits
    report = BackfillReport.build(
        backfill_id="unit-0123abcd",
        dag_run_id="r",
        steps=ledger.entries,
        spark_reports=[],
        written_at=datetime.now(UTC),
    )
    assert report.status == "failed"


def test_the_plans_publish_policy_and_root_become_the_job_arguments() -> None:
    from backfill_runtime.runners.base import JobSpec

    spec = JobSpec(name="n", plan_uri="p", warehouse_uri="w", report_uri="r")
    assert spec.arguments == ["--plan", "p", "--warehouse", "w", "--report", "r"]
    spec = JobSpec(
        name="n",
        plan_uri="p",
        warehouse_uri="w",
        report_uri="r",
        publish_policy_uri="s3://b/pp.json",
        publish_root="s3://pub",
    )
    assert spec.arguments[-4:] == ["--publish-policy", "s3://b/pp.json", "--publish-root", "s3://pub"]


def test_no_report_means_every_submitted_step_failed() -> None:
    plan = make_plan(INTERLEAVED)
    ledger = Ledger.for_plan(plan)
    ledger.record_spark(["a", "x"], report=None, task_state="failed")
    assert ledger.entries["a"].status is FAILED
    assert "ended failed and wrote no run report" in ledger.entries["a"].detail
    ledger.record_spark(["b"], report=run_report(), task_state="success")
    assert ledger.entries["b"].detail == "missing from the Spark job's run report"
    ledger.record_spark(
        ["e"], report=None, task_state="failed", unreadable="report_version: unsupported version 1"
    )
    assert (
        ledger.entries["e"].detail
        == "the Spark job's run report is unusable: report_version: unsupported version 1"
    )


def test_the_job_report_maps_to_step_outcomes_with_their_figures() -> None:
    plan = make_plan(INTERLEAVED)
    ledger = Ledger.for_plan(plan)
    report = run_report(
        StepResult(
            id="a",
            transform="a",
            wave=0,
            status=SUCCEEDED,
            seconds=1.5,
            rows_in=10,
            rows_out=8,
            partitions_written=["day=2021-06-04", "day=2021-06-05"],
        ),
        StepResult(id="x", transform="x", wave=0, status=FAILED, seconds=0.5, error="division by zero"),
    )
    ledger.record_spark(["a", "x"], report=report, task_state="failed")
    a, x = ledger.entries["a"], ledger.entries["x"]
    assert a.status is SUCCEEDED and a.detail is None
    assert a.figures.model_dump() == {
        "seconds": 1.5,
        "rows_in": 10,
        "rows_out": 8,
        "partitions_written_count": 2,
    }
    assert x.status is FAILED and x.detail == "division by zero"


@pytest.mark.parametrize(
    ("conf", "problems"),
    [
        (None, ["<root>: conf is empty"]),
        ({}, ["<root>: conf is empty"]),
        ({"backfill_id": "x-0123abcd"}, ["config_uri: field required", "plan_uri: field required"]),
        (
            {
                "backfill_id": "Bad Id",
                "config_uri": "s3://b/c.yaml",
                "plan_uri": "http://x/p.json",
                "extra": 1,
            },
            [
                "extra: unknown key",
                "backfill_id: expected <name>-<8 hex digits>",
                "plan_uri: expected an s3://",
            ],
        ),
        (
            {"backfill_id": "x-0123abcd", "config_uri": 3, "plan_uri": " "},
            ["config_uri: input should be a valid string", "plan_uri: expected a non-empty URI"],
        ),
        (
            {"backfill_id": "x-0123abcd", "plan_url": "s3://b/p.json", "config_uri": "/c"},
            ["plan_url: unknown key; did you mean 'plan_uri'?"],
        ),
        (
            {"contract_version": 2, "backfill_id": "x-0123abcd", "config_uri": "/c", "plan_uri": "/p"},
            ["contract_version: unsupported version 2"],
        ),
        (
            {"backfill_id": "x-0123abcd", "config_uri": "/c", "plan_uri": "/p", "attempt": 0},
            ["attempt: input should be greater than or equal to 1"],
        ),
    ],
)
def test_bad_conf_names_every_problem(conf, problems) -> None:
    with pytest.raises(InvalidDocumentError) as caught:
        RunConf.from_conf(conf)
    for problem in problems:
        assert any(p.startswith(problem) for p in caught.value.problems), (problem, caught.value.problems)
    assert str(caught.value).startswith("DAG run conf: ")


def test_good_conf_as_the_trigger_sends_it() -> None:
    sent = RunConf(
        backfill_id="orders-0123abcd",
        config_uri="s3://b/c.yaml",
        plan_uri="s3://b/p.json",
        result_uri="s3://b/results/orders.yaml.result.json",
    ).to_conf()
    conf = RunConf.from_conf(sent)
    assert conf.plan_uri == "s3://b/p.json" and conf.attempt == 1 and conf.contract_version == 1
    assert conf.result_uri == "s3://b/results/orders.yaml.result.json"
    # A hand-made conf of the three URIs (no version key) is version 1.
    assert (
        RunConf.from_conf({"backfill_id": "orders-0123abcd", "config_uri": "/c", "plan_uri": "/p"}).result_uri
        is None
    )


def test_local_uris_round_trip(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/backfills/x/plan.json"
    write_text(sibling(uri, "rounds/0/plan.json"), "{}")
    assert read_text(str(tmp_path / "backfills/x/rounds/0/plan.json")) == "{}"
    remove(sibling(uri, "rounds/0/plan.json"))
    remove(sibling(uri, "rounds/0/plan.json"))  # absent: fine
    with pytest.raises(DocumentNotFoundError):
        read_text(sibling(uri, "rounds/0/plan.json"))


def test_s3_uris_round_trip() -> None:
    import boto3
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="unit-bucket")
        write_text("s3://unit-bucket/backfills/x/run_report.json", '{"ok": 1}', s3_client=s3)
        assert json.loads(read_text("s3://unit-bucket/backfills/x/run_report.json", s3_client=s3)) == {
            "ok": 1
        }
        remove("s3://unit-bucket/backfills/x/run_report.json", s3_client=s3)
        with pytest.raises(DocumentNotFoundError):
            read_text("s3://unit-bucket/backfills/x/run_report.json", s3_client=s3)


@pytest.fixture
def s3_bucket(monkeypatch: pytest.MonkeyPatch):
    import boto3
    from moto import mock_aws

    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="unit-bucket")
        yield s3


def _quiet_reporting():
    from backfill_runtime.reporting import Reporting

    from backfill_orchestrator.notify import Notifier

    return Reporting(store=None, notifier=Notifier(slack=None, pagerduty=None), airflow_ui_url=None)


def test_the_result_file_follows_the_backfill_to_its_end(s3_bucket) -> None:
    from backfill_orchestrator.config import parse_config
    from backfill_orchestrator.contracts import BackfillReport, ResultFile, StepOutcome
    from backfill_orchestrator.trigger.events import Upload
    from backfill_orchestrator.trigger.storage import TriggerStorage

    # The trigger's side: the file it writes when it has triggered the DAG run.
    storage = TriggerStorage(
        s3_client=s3_bucket,
        bucket="unit-bucket",
        incoming_prefix="incoming/",
        results_prefix="results/",
        backfills_prefix="backfills/",
    )
    upload = Upload("unit-bucket", "incoming/team-a/unit.yaml")
    result_uri = storage.write_result(
        upload,
        ResultFile(
            source=upload.uri,
            outcome="accepted",
            backfill_id="unit-0123abcd",
            state="TRIGGERED",
            status_id="unit-0123abcd",
            plan={"waves": [["a", "x"]], "steps": 2},
            dag_id="backfill",
            dag_run_id="unit-0123abcd",
            status_command="backfill status unit-0123abcd",
            written_at=datetime(2021, 6, 14, 9, tzinfo=UTC),
        ),
    )
    assert (
        result_uri
        == RunConf.from_conf(
            {"backfill_id": "unit-0123abcd", "config_uri": "/c", "plan_uri": "/p", "result_uri": result_uri}
        ).result_uri
    )

    def read() -> ResultFile:
        return ResultFile.from_json(read_text(result_uri), source=result_uri)

    config = parse_config(
        (Path(__file__).resolve().parents[2] / "examples" / "minimal-batch.yaml").read_bytes()
    )
    reporting = _quiet_reporting()
    reporting.started(
        backfill_id="unit-0123abcd",
        config=config,
        plan=make_plan(INTERLEAVED),
        rounds=3,
        run_url="https://airflow/dags/backfill/runs/unit-0123abcd",
        result_uri=result_uri,
    )
    running = read()
    assert running.state == "RUNNING" and running.outcome == "accepted"
    assert running.dag_run_url == "https://airflow/dags/backfill/runs/unit-0123abcd"
    assert running.plan.steps == 2 and running.written_at > datetime(2021, 6, 14, 9, tzinfo=UTC)

    steps = {
        "a": StepOutcome(status=FAILED, kind="spark", round=0, dag_id="etl", detail="boom"),
        "x": StepOutcome(
            status=SUCCEEDED,
            kind="spark",
            round=0,
            dag_id="etl",
            figures={"rows_out": 7, "partitions_written_count": 2},
        ),
        "d1": StepOutcome(
            status=SUCCEEDED, kind="airflow_dag", round=1, dag_id="d1", dates={"2021-06-04": "success"}
        ),
        "b": StepOutcome(
            status=BLOCKED, kind="spark", round=0, dag_id="etl", detail="not run: upstream a did not succeed"
        ),
    }
    report = BackfillReport.build(
        backfill_id="unit-0123abcd",
        dag_run_id="unit-0123abcd",
        steps=steps,
        spark_reports=[],
        written_at=datetime.now(UTC),
    )
    reporting.finished(
        config=config,
        report=report,
        report_uri="s3://unit-bucket/r.json",
        run_url=None,
        result_uri=result_uri,
    )
    failed = read()
    assert failed.state == "FAILED" and failed.report_uri == "s3://unit-bucket/r.json"
    assert failed.figures.model_dump() == {
        "steps_succeeded": 2,
        "steps_failed": 1,
        "steps_not_run": 1,
        "rows_written": 7,
        "partitions_written": 2,
        "dag_runs_succeeded": 1,
    }
    assert [(p.step, p.status) for p in failed.failed_steps] == [("a", FAILED), ("b", BLOCKED)]
    assert failed.reason == "1 step(s) failed: a; 1 not run"

    # A cleared and rerun DAG run that succeeds: the file says so, failures gone.
    fixed = {
        key: value.model_copy(update={"status": SUCCEEDED, "detail": None}) for key, value in steps.items()
    }
    report = BackfillReport.build(
        backfill_id="unit-0123abcd",
        dag_run_id="unit-0123abcd",
        steps=fixed,
        spark_reports=[],
        written_at=datetime.now(UTC),
    )
    reporting.finished(
        config=config,
        report=report,
        report_uri="s3://unit-bucket/r.json",
        run_url=None,
        result_uri=result_uri,
    )
    succeeded = read()
    assert succeeded.state == "SUCCEEDED" and succeeded.failed_steps is None and succeeded.reason is None
    assert succeeded.figures.steps_succeeded == 4


def test_a_missing_or_foreign_result_file_is_left_alone_and_never_fails_the_run(s3_bucket) -> None:
    from backfill_runtime.results import follow_result

    missing = "s3://unit-bucket/results/gone.yaml.result.json"
    assert follow_result(missing, state="RUNNING") is None
    with pytest.raises(DocumentNotFoundError):
        read_text(missing)
    foreign = "s3://unit-bucket/results/old.yaml.result.json"
    write_text(foreign, json.dumps({"result_version": 0, "outcome": "accepted"}))
    assert follow_result(foreign, state="RUNNING") is None
    assert json.loads(read_text(foreign)) == {"result_version": 0, "outcome": "accepted"}
    assert follow_result(None, state="RUNNING") is None


def test_a_retry_attempt_runs_only_what_earlier_attempts_did_not_finish() -> None:
    """Attempt 2 of INTERLEAVED after attempt 1 ran a, x, b and d1 on its first date only."""
    from backfill_orchestrator.contracts import AttemptDone

    plan = make_plan(INTERLEAVED)
    done = AttemptDone(
        backfill_id="unit-0123abcd", attempt=2, steps_done=["a", "x", "b"], dates_done={"d1": [D[0]]}
    )
    ledger = Ledger.for_plan(plan, done=done)
    assert ledger.status("a") is StepStatus.SUCCEEDED and "before 2" in ledger.entries["a"].detail
    first = ledger.plan_round(plan, 0)
    assert first.spark_step_ids == [] and first.dag_runs == []  # round 0 was all done
    second = ledger.plan_round(plan, 1)
    assert [(r.step_id, r.day.isoformat()) for r in second.dag_runs] == (
        [("d1", day) for day in D[1:]] + [("d2", day) for day in D]
    )
    ledger.record_dag_runs(second.dag_runs, dict.fromkeys(range(len(second.dag_runs)), "success"))
    assert ledger.status("d1") is StepStatus.SUCCEEDED  # the earlier date counts as done
    assert set(ledger.entries["d1"].dates) == {date.fromisoformat(day) for day in D}


class _RecordingSlack:
    """A Slack client with threads that keeps what it was asked to post."""

    supports_threads = True

    def __init__(self) -> None:
        self.posts: list[tuple[object, str | None, str | None]] = []

    def post(self, message, *, channel, thread_ts=None):  # noqa: ANN001, ANN201 - SlackClient.post
        from backfill_orchestrator.notify.slack import PostedMessage

        self.posts.append((message, channel, thread_ts))
        return PostedMessage(channel="C0000000001", ts=f"1700000000.{len(self.posts):06d}")


@pytest.mark.parametrize("thread", [False, True], ids=["opens the thread", "replies in the trigger's thread"])
def test_the_runs_start_writes_the_plan_picture_and_links_it(
    s3_bucket, monkeypatch: pytest.MonkeyPatch, thread: bool
) -> None:
    """The trigger leaves `plan.html` to the run (one PutObject fewer for it): `start` writes it
    beside `plan.json` and its RUNNING message links it (`[backfill] plan_link_base`)."""
    from backfill_runtime.reporting import Reporting

    from backfill_orchestrator.config import parse_config
    from backfill_orchestrator.notify import Notifier

    monkeypatch.setenv("AIRFLOW__BACKFILL__PLAN_LINK_BASE", "https://plans.example.com/")
    plan = make_plan(INTERLEAVED)
    plan_uri = "s3://unit-bucket/backfills/unit-0123abcd/plan.json"
    write_text(plan_uri, plan.to_json())
    slack = _RecordingSlack()
    reporting = Reporting(
        store=None, notifier=Notifier(slack=slack, pagerduty=None, default_channel="#b"), airflow_ui_url=None
    )
    monkeypatch.setattr(reporting, "_thread_exists", lambda backfill_id: thread)
    config = parse_config(
        (Path(__file__).resolve().parents[2] / "examples" / "minimal-batch.yaml").read_bytes()
    )

    reporting.started(
        backfill_id="unit-0123abcd", config=config, plan=plan, rounds=3, run_url=None, plan_uri=plan_uri
    )

    page = read_text(sibling(plan_uri, "plan.html"))
    assert "<script" not in page and all(s.id in page for s in plan.steps)
    assert s3_bucket.head_object(Bucket="unit-bucket", Key="backfills/unit-0123abcd/plan.html")[
        "ContentType"
    ].startswith("text/html")
    ((message, _, _),) = slack.posts
    blocks = json.dumps([block.to_dict() for block in message.blocks])
    assert (
        "https://plans.example.com/backfills/unit-0123abcd/plan.html" in blocks and "Plan picture" in blocks
    )
    assert ("*Plan:*" in blocks) is not thread  # no thread yet: the whole picture opens it


def test_a_plan_picture_that_cannot_be_written_is_not_linked_and_the_run_goes_on(s3_bucket) -> None:
    from backfill_runtime.reporting import write_plan_picture

    plan = make_plan(INTERLEAVED)
    assert write_plan_picture(plan, "s3://no-such-bucket/backfills/unit-0123abcd/plan.json") is None
    assert (
        write_plan_picture(plan, "s3://unit-bucket/backfills/unit-0123abcd/other.json") is None
    )  # not a plan.json
