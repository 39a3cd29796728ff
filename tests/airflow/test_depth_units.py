"""Plans of any depth and rounds of any size, without Airflow processes: which rounds a run
executes, continuation ids and carried state, chunking under the map limit, and the batched
rerun driving a double of the Task SDK's supervisor channel (the real message classes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowRuntimeError, ErrorType
from airflow.sdk.execution_time.comms import (
    DRCount,
    ErrorResponse,
    GetDagRunState,
    GetDRCount,
    GetPreviousDagRun,
    OKResponse,
    SkipDownstreamTasks,
    TriggerDagRun,
)
from backfill_runtime.continuation import (
    Carried,
    carried_uri,
    continuation_run_id,
    first_run_id,
    needs_continuation,
)
from backfill_runtime.reruns import (
    AirflowApiUnreachableError,
    ChunkOutcomes,
    ChunkProgress,
    Rerun,
    RerunBatch,
    StartedRun,
    round_reruns,
)
from backfill_runtime.rounds import chunked, rounds_of_run
from backfill_runtime.step_ledger import Ledger
from backfill_runtime.supervisor import (
    AirflowApiUnavailableError,
    RunAtDate,
    SupervisorClient,
    TriggerRefusedError,
)

from backfill_orchestrator.contracts import InvalidDocumentError, RoundLaunch, RunConf, StepStatus
from backfill_orchestrator.planner import plan_rounds
from tests.support.airflow import step

from .test_runtime_units import make_plan

BID = "unit-0123abcd"


# -- rounds and continuations ------------------------------------------------------------------
def chain(length: int) -> list[list[dict[str, Any]]]:
    days = ["2021-06-04"]
    waves = [[step("d0", "airflow_dag", dates=days)]]
    waves += [[step(f"d{i}", "airflow_dag", dates=days, upstream=[f"d{i - 1}"])] for i in range(1, length)]
    return waves


def test_a_30_dag_chain_is_30_rounds_run_by_continuations_of_max_rounds_each() -> None:
    plan = make_plan(chain(30))
    assert len(plan_rounds(plan)) == 30
    runs, first = [], 0
    while True:
        runs.append(list(rounds_of_run(first_round=first, slots=6, total=30)))
        if not needs_continuation(first_round=first, slots=6, total=30):
            break
        first += 6
    assert runs == [list(range(k, k + 6)) for k in range(0, 30, 6)]
    assert list(rounds_of_run(first_round=24, slots=10, total=30)) == list(range(24, 30))
    assert not needs_continuation(first_round=0, slots=6, total=6)


def test_continuation_ids_are_stable_per_chain_position_so_the_trigger_is_idempotent() -> None:
    assert continuation_run_id(BID, first_round=6, slots=6) == f"{BID}__cont1"
    # the continuation's own continuation: numbered from the first run, not nested
    assert continuation_run_id(f"{BID}__cont1", first_round=12, slots=6) == f"{BID}__cont2"
    assert (
        continuation_run_id(f"{BID}__attempt2__cont3", first_round=24, slots=6) == f"{BID}__attempt2__cont4"
    )
    assert first_run_id(f"{BID}__attempt2__cont3") == f"{BID}__attempt2"
    assert (
        carried_uri("s3://b/backfills/x/plan.json", f"{BID}__cont1")
        == f"s3://b/backfills/x/continuations/{BID}__cont1.json"
    )


def test_the_carried_ledger_round_trips_and_a_continuation_conf_needs_both_fields() -> None:
    plan = make_plan(chain(3))
    ledger = Ledger.for_plan(plan)
    ledger.mark("d0", StepStatus.SUCCEEDED, dates={"2021-06-04": "success"})
    carried = Carried(
        backfill_id=BID, first_round=1, started_at=datetime(2021, 6, 14, tzinfo=UTC), ledger=ledger.to_dict()
    )
    back = Carried.from_json(carried.to_json())
    assert (
        Ledger(back.ledger).status("d0") is StepStatus.SUCCEEDED
        and Ledger(back.ledger).status("d1") is StepStatus.PENDING
    )
    base = {"backfill_id": BID, "config_uri": "s3://b/c.yaml", "plan_uri": "s3://b/plan.json"}
    conf = RunConf.from_conf({**base, "first_round": 6, "ledger_uri": "s3://b/continuations/x.json"})
    assert conf.first_round == 6 and RunConf.from_conf(conf.to_conf()) == conf
    assert (
        RunConf.from_conf(base).first_round is None and "first_round" not in RunConf.from_conf(base).to_conf()
    )
    with pytest.raises(InvalidDocumentError, match="first_round and ledger_uri go together"):
        RunConf.from_conf({**base, "first_round": 6})


def test_chunks_cover_every_rerun_once_in_order_and_never_exceed_the_map_limit() -> None:
    items = list(range(2500))
    chunks = chunked(items, size=64, max_chunks=1024)
    assert [len(c) for c in chunks] == [64] * 39 + [4]
    assert [x for c in chunks for x in c] == items
    tight = chunked(items, size=1, max_chunks=1024)  # one per task would be 2500 tasks: chunks grow
    assert len(tight) <= 1024 and [x for c in tight for x in c] == items
    assert chunked([], size=64, max_chunks=1024) == []


# -- the batched rerun against the supervisor channel ------------------------------------------
@dataclass
class FakeRun:
    logical_date: datetime
    state: str = "queued"
    polls: int = 0
    starts: int = 1


@dataclass
class FakeSupervisor:
    """The execution API as the Task SDK's messages see it: runs unique by id and by logical
    date; a run finishes after two polls, `failing` ones (by DAG and date) fail."""

    failing: set[tuple[str, str]] = field(default_factory=set)
    runs: dict[tuple[str, str], FakeRun] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)
    max_live: int = 0
    down: bool = False  # the API server cannot be reached

    def send(self, msg: Any) -> Any:
        if self.down:  # the supervisor's answer once its own retries found no API server
            raise AirflowRuntimeError(
                ErrorResponse(
                    error=ErrorType.API_SERVER_ERROR, detail={"status_code": None, "message": "refused"}
                )
            )
        self.sent.append(type(msg).__name__)
        if isinstance(msg, GetDRCount):  # by logical dates, or by run ids and states
            if msg.logical_dates:
                wanted = set(msg.logical_dates)
                return DRCount(
                    count=sum(
                        1 for (d, _), r in self.runs.items() if d == msg.dag_id and r.logical_date in wanted
                    )
                )
            for run_id in msg.run_ids or []:  # a count polls too: time passes for the runs
                self._advance(self.runs[(msg.dag_id, run_id)], msg.dag_id)
            return DRCount(
                count=sum(
                    1
                    for run_id in msg.run_ids or []
                    if self.runs[(msg.dag_id, run_id)].state in (msg.states or [])
                )
            )
        if isinstance(msg, GetPreviousDagRun):
            before = [
                (r.logical_date, rid)
                for (d, rid), r in self.runs.items()
                if d == msg.dag_id and r.logical_date < msg.logical_date
            ]
            if not before:
                return SimpleNamespace(dag_run=None)
            logical_date, run_id = max(before)
            cleared = self.runs[(msg.dag_id, run_id)].starts - 1
            return SimpleNamespace(
                dag_run=SimpleNamespace(run_id=run_id, logical_date=logical_date, clear_number=cleared)
            )
        if isinstance(msg, TriggerDagRun):
            key = (msg.dag_id, msg.run_id)
            if key in self.runs:
                if not msg.reset_dag_run:
                    return ErrorResponse(error=ErrorType.DAGRUN_ALREADY_EXISTS)
                self.runs[key].state, self.runs[key].polls = "queued", 0
                self.runs[key].starts += 1
            else:
                if any(
                    d == msg.dag_id and r.logical_date == msg.logical_date for (d, _), r in self.runs.items()
                ):
                    raise AssertionError(f"duplicate run of {msg.dag_id} at {msg.logical_date}")
                self.runs[key] = FakeRun(logical_date=msg.logical_date)
            self.max_live = max(
                self.max_live, sum(r.state in ("queued", "running") for r in self.runs.values())
            )
            return OKResponse(ok=True)
        if isinstance(msg, GetDagRunState):
            return SimpleNamespace(state=self.runs[(msg.dag_id, msg.run_id)].state)
        if isinstance(msg, SkipDownstreamTasks):
            return OKResponse(ok=True)
        raise AssertionError(f"unexpected message {msg!r}")

    def _advance(self, run: FakeRun, dag_id: str) -> None:
        run.polls += 1
        if run.state in ("queued", "running"):
            failing = (dag_id, run.logical_date.date().isoformat()) in self.failing
            run.state = "running" if run.polls < 2 else ("failed" if failing else "success")


def reruns(dag_id: str, days: list[str]) -> list[Rerun]:
    return [
        Rerun(
            trigger_dag_id=dag_id,
            trigger_run_id=f"backfill__{BID}__{d}",
            logical_date=d,
            conf={"backfill_id": BID},
        )
        for d in days
    ]


DAYS = [f"2021-06-{d:02d}" for d in range(1, 31)]


def test_a_batch_reruns_every_date_with_bounded_concurrency_and_clears_an_existing_run() -> None:
    supervisor = FakeSupervisor()
    supervisor.runs[("orders", "scheduled__2021-06-03")] = FakeRun(
        datetime(2021, 6, 3, tzinfo=UTC), state="success"
    )
    checkpoints: list[ChunkProgress] = []
    batch = RerunBatch(
        reruns("orders", DAYS),
        supervisor=SupervisorClient(supervisor),
        concurrency=4,
        poke_seconds=0,
        checkpoint=checkpoints.append,
        sleep=lambda _: None,
    )
    outcomes = batch.run()
    assert outcomes == dict.fromkeys(range(30), "success")
    assert supervisor.max_live <= 4
    # the existing run of 06-03 was cleared and rerun under its own id, not duplicated
    assert supervisor.runs[("orders", "scheduled__2021-06-03")].starts == 2
    assert ("orders", f"backfill__{BID}__2021-06-03") not in supervisor.runs
    assert len(supervisor.runs) == 30
    # polling asks one count per cycle and looks runs up only when some ended
    assert supervisor.sent.count("GetDagRunState") == 30
    # the DAG had a run at one date: each date was looked up (30), after one count for all
    assert supervisor.sent.count("GetPreviousDagRun") <= 30
    # every rerun was written down before its trigger; all succeeded: nothing written at the end
    assert {index for progress in checkpoints for index in progress.started} == set(range(30))
    assert len(checkpoints[-1].outcomes) < 30


def test_a_failed_date_fails_only_itself_and_a_retry_reruns_only_what_did_not_succeed() -> None:
    supervisor = FakeSupervisor(failing={("orders", "2021-06-05")})
    work = reruns("orders", DAYS[:8])
    written: list[ChunkProgress] = []
    first = RerunBatch(
        work,
        supervisor=SupervisorClient(supervisor),
        concurrency=3,
        poke_seconds=0,
        sleep=lambda _: None,
        checkpoint=written.append,
    ).run()
    assert first[4] == "failed" and all(first[i] == "success" for i in range(8) if i != 4)
    assert written[-1] == ChunkProgress(outcomes=first)  # what the retry and the ledger read
    supervisor.failing.clear()
    before = {key: run.starts for key, run in supervisor.runs.items()}
    second = RerunBatch(
        work,
        supervisor=SupervisorClient(supervisor),
        concurrency=3,
        poke_seconds=0,
        progress=written[-1],
        sleep=lambda _: None,
    ).run()
    assert second == dict.fromkeys(range(8), "success")
    rerun_again = [key for key, run in supervisor.runs.items() if run.starts != before[key]]
    assert rerun_again == [("orders", f"backfill__{BID}__2021-06-05")]


def test_a_dag_with_no_run_at_any_date_skips_the_per_date_lookups() -> None:
    supervisor = FakeSupervisor()
    RerunBatch(
        reruns("fresh", DAYS),
        supervisor=SupervisorClient(supervisor),
        concurrency=30,
        poke_seconds=0,
        sleep=lambda _: None,
    ).run()
    assert supervisor.sent.count("GetPreviousDagRun") == 0
    assert supervisor.sent[:2] == ["GetDRCount", "TriggerDagRun"]  # one count for the 30 dates, then triggers
    assert len(supervisor.runs) == 30


def test_a_refused_trigger_is_that_date_failing_not_the_batch() -> None:
    class Refusing(FakeSupervisor):
        def send(self, msg: Any) -> Any:
            if isinstance(msg, TriggerDagRun) and msg.logical_date.day == 2:
                return ErrorResponse(error=ErrorType.GENERIC_ERROR, detail={"reason": "dag paused"})
            return super().send(msg)

    outcomes = RerunBatch(
        reruns("orders", DAYS[:3]),
        supervisor=SupervisorClient(Refusing()),
        concurrency=2,
        poke_seconds=0,
        sleep=lambda _: None,
    ).run()
    assert outcomes == {0: "success", 1: "failed", 2: "success"}


def test_chunk_outcomes_belong_to_one_dag_run(tmp_path: Path) -> None:
    uri = str(tmp_path / "rounds" / "3" / "reruns" / "0.json")
    assert ChunkOutcomes.read(uri, run_id="r1") == ChunkProgress()
    progress = ChunkProgress(
        outcomes={0: "success", 2: "failed"},
        started={
            1: StartedRun(dag_run_id="backfill__x__2021-06-02"),
            3: StartedRun(dag_run_id="s", clear_number=2),
        },
    )
    ChunkOutcomes.write(uri, run_id="r1", progress=progress)
    assert ChunkOutcomes.read(uri, run_id="r1") == progress
    assert ChunkOutcomes.read(uri, run_id="r1__attempt2") == ChunkProgress()  # an earlier attempt's document
    Path(uri).write_text('{"run_id": "r1", "started": {"1": "not an object"}}')
    assert ChunkOutcomes.read(uri, run_id="r1") == ChunkProgress()  # unreadable: as none, logged


def test_a_batch_whose_own_run_was_failed_by_a_cancel_starts_no_more_reruns() -> None:
    supervisor = FakeSupervisor()
    supervisor.runs[("backfill", BID)] = FakeRun(datetime(2021, 7, 1, tzinfo=UTC), state="running")
    polls = {"n": 0}

    def sleep(_: float) -> None:  # the cancel lands while the first two reruns run
        polls["n"] += 1
        if polls["n"] == 1:
            supervisor.runs[("backfill", BID)].state = "failed"

    outcomes = RerunBatch(
        reruns("orders", DAYS[:6]),
        supervisor=SupervisorClient(supervisor),
        concurrency=2,
        poke_seconds=0,
        sleep=sleep,
        owner=("backfill", BID),
    ).run()
    started = {rid for (dag, rid) in supervisor.runs if dag == "orders"}
    assert started == {f"backfill__{BID}__{d}" for d in DAYS[:2]}, started  # the four waiting never started
    assert sorted(outcomes) == [0, 1]


def test_a_retry_of_a_batch_after_the_cancel_reruns_nothing() -> None:
    """The prepare task's next try of its inline reruns begins after a cancel failed the
    backfill's run (and the reruns it had in flight): it must not clear and restart them."""
    supervisor = FakeSupervisor()
    supervisor.runs[("backfill", BID)] = FakeRun(datetime(2021, 7, 1, tzinfo=UTC), state="failed")
    outcomes = RerunBatch(
        reruns("orders", DAYS[:4]),
        supervisor=SupervisorClient(supervisor),
        concurrency=2,
        poke_seconds=0,
        sleep=lambda _: None,
        progress=ChunkProgress(outcomes={0: "failed", 1: "failed"}),
        owner=("backfill", BID),
    ).run()
    assert not [rid for (dag, rid) in supervisor.runs if dag == "orders"]
    assert outcomes == {}


def test_a_batch_of_a_running_backfill_checks_its_run_and_goes_on() -> None:
    supervisor = FakeSupervisor()
    supervisor.runs[("backfill", BID)] = FakeRun(datetime(2021, 7, 1, tzinfo=UTC), state="running")
    outcomes = RerunBatch(
        reruns("orders", DAYS[:6]),
        supervisor=SupervisorClient(supervisor),
        concurrency=2,
        poke_seconds=0,
        sleep=lambda _: None,
        owner=("backfill", BID),
    ).run()
    assert outcomes == dict.fromkeys(range(6), "success")


# -- exactly once across tries: crashes and API outages -----------------------------------------
class Killed(BaseException):
    """The task process dies (SIGKILL): nothing after it runs, no `finally` writes."""


def last_written(batch_checkpoints: list[ChunkProgress]) -> ChunkProgress:
    return batch_checkpoints[-1] if batch_checkpoints else ChunkProgress()


def test_a_task_killed_while_its_reruns_run_is_run_again_and_waits_for_them_instead_of_clearing_them() -> (
    None
):
    supervisor = FakeSupervisor()
    supervisor.runs[("orders", "scheduled__2021-06-02")] = FakeRun(
        datetime(2021, 6, 2, tzinfo=UTC), state="success"
    )
    written: list[ChunkProgress] = []

    def die(_: float) -> None:
        raise Killed

    with pytest.raises(Killed):  # four reruns in flight, one of them the cleared scheduled run
        RerunBatch(
            reruns("orders", DAYS[:6]),
            supervisor=SupervisorClient(supervisor),
            concurrency=4,
            poke_seconds=0,
            checkpoint=written.append,
            sleep=die,
        ).run()
    assert sorted(last_written(written).started) == [0, 1, 2, 3]
    outcomes = RerunBatch(  # the task again (a retry, or the scheduler's reset after a restart)
        reruns("orders", DAYS[:6]),
        supervisor=SupervisorClient(supervisor),
        concurrency=4,
        poke_seconds=0,
        progress=last_written(written),
        sleep=lambda _: None,
    ).run()
    assert outcomes == dict.fromkeys(range(6), "success")
    starts = {run_id: run.starts for (dag, run_id), run in supervisor.runs.items() if dag == "orders"}
    assert starts == {
        "scheduled__2021-06-02": 2,
        **{f"backfill__{BID}__{d}": 1 for d in DAYS[:6] if d != "2021-06-02"},
    }


def test_a_rerun_written_down_but_never_triggered_is_triggered_by_the_next_try() -> None:
    class DyingOnTheThirdTrigger(FakeSupervisor):
        triggers: int = 0

        def send(self, msg: Any) -> Any:
            if isinstance(msg, TriggerDagRun):
                self.triggers += 1
                if self.triggers == 3:
                    raise Killed
            return super().send(msg)

    supervisor = DyingOnTheThirdTrigger()
    supervisor.runs[("orders", "scheduled__2021-06-03")] = FakeRun(
        datetime(2021, 6, 3, tzinfo=UTC), state="success"
    )
    written: list[ChunkProgress] = []
    with pytest.raises(Killed):
        RerunBatch(
            reruns("orders", DAYS[:4]),
            supervisor=SupervisorClient(supervisor),
            concurrency=4,
            poke_seconds=0,
            checkpoint=written.append,
            sleep=lambda _: None,
        ).run()
    # all four written down; the third (the scheduled run of 06-03, to be cleared) and fourth never sent
    assert last_written(written).started[2] == StartedRun(dag_run_id="scheduled__2021-06-03", clear_number=0)
    assert supervisor.runs[("orders", "scheduled__2021-06-03")].starts == 1
    outcomes = RerunBatch(
        reruns("orders", DAYS[:4]),
        supervisor=SupervisorClient(FakeSupervisor(runs=supervisor.runs)),
        concurrency=4,
        poke_seconds=0,
        progress=last_written(written),
        sleep=lambda _: None,
    ).run()
    assert outcomes == dict.fromkeys(range(4), "success")
    assert [run.starts for run in supervisor.runs.values()] == [2, 1, 1, 1]  # each started exactly once more


def test_an_api_outage_shorter_than_the_budget_is_waited_out_and_nothing_is_started_twice() -> None:
    supervisor = FakeSupervisor()
    clock = {"now": 0.0, "sleeps": 0}

    def sleep(seconds: float) -> None:
        clock["now"] += seconds
        clock["sleeps"] += 1
        supervisor.down = 2 <= clock["sleeps"] < 12  # down for ten polls: 100 s

    outcomes = RerunBatch(
        reruns("orders", DAYS[:6]),
        supervisor=SupervisorClient(supervisor),
        concurrency=3,
        poke_seconds=10,
        outage_seconds=300,
        sleep=sleep,
        monotonic=lambda: clock["now"],
    ).run()
    assert outcomes == dict.fromkeys(range(6), "success")
    assert all(run.starts == 1 for run in supervisor.runs.values()) and len(supervisor.runs) == 6


def test_an_api_outage_longer_than_the_budget_fails_the_batch_and_keeps_what_it_started() -> None:
    supervisor = FakeSupervisor()
    clock = {"now": 0.0}
    written: list[ChunkProgress] = []

    def sleep(seconds: float) -> None:
        clock["now"] += seconds
        supervisor.down = True  # gone after the first poll, for good

    batch = RerunBatch(
        reruns("orders", DAYS[:6]),
        supervisor=SupervisorClient(supervisor),
        concurrency=3,
        poke_seconds=10,
        outage_seconds=60,
        checkpoint=written.append,
        sleep=sleep,
        monotonic=lambda: clock["now"],
    )
    with pytest.raises(
        AirflowApiUnreachableError,
        match=r"has not answered for 60 s .*api_outage_seconds = 60.*3 reruns were in flight and 3 not started",
    ):
        batch.run()
    assert sorted(last_written(written).started) == [0, 1, 2]  # a later attempt waits for them


def test_only_an_unreachable_api_server_counts_as_an_outage() -> None:
    class Answering(FakeSupervisor):
        status: int | None = None

        def send(self, msg: Any) -> Any:
            raise AirflowRuntimeError(
                ErrorResponse(error=ErrorType.API_SERVER_ERROR, detail={"status_code": self.status})
            )

    answering = Answering()
    client = SupervisorClient(answering)
    for status in (None, 502, 503):
        answering.status = status
        with pytest.raises(AirflowApiUnavailableError):
            client.run_state("orders", "r1")
    answering.status = 404  # an answer: the run does not exist
    with pytest.raises(AirflowRuntimeError):
        client.run_state("orders", "r1")


# -- the supervisor client and the round's reruns ------------------------------------------------
def test_the_supervisor_client_answers_triggers_as_created_existing_or_refused() -> None:
    supervisor = FakeSupervisor()
    client = SupervisorClient(supervisor)
    when = datetime(2021, 6, 4, tzinfo=UTC)
    assert client.trigger_dag_run(dag_id="backfill", run_id="r__cont1", logical_date=when, conf={}) is True
    assert (
        client.trigger_dag_run(dag_id="backfill", run_id="r__cont1", logical_date=when, conf={}) is False
    )  # 409
    assert client.run_at("backfill", when) == RunAtDate(run_id="r__cont1", clear_number=0)
    assert client.run_at("backfill", datetime(2021, 6, 5, tzinfo=UTC)) is None

    class Refusing(FakeSupervisor):
        def send(self, msg: Any) -> Any:
            return ErrorResponse(error=ErrorType.GENERIC_ERROR, detail={"reason": "dag paused"})

    with pytest.raises(TriggerRefusedError, match="dag paused"):
        SupervisorClient(Refusing()).trigger_dag_run(
            dag_id="backfill", run_id="r__cont1", logical_date=None, conf={}
        )
    client.skip_tasks([])
    client.skip_tasks(iter(["round_3.spark", "round_3.prepare"]))
    assert supervisor.sent.count("SkipDownstreamTasks") == 1  # nothing to skip sends nothing


def test_a_rounds_reruns_come_back_from_its_launch_in_chunk_order() -> None:
    launch = RoundLaunch(
        index=4,
        slot=1,
        reruns={"d1": ["2021-06-04", "2021-06-05"], "d2": ["2021-06-04"]},
        rerun_conf={"backfill_id": BID, "trace_id": "t-1"},
    )
    reruns = round_reruns(launch, backfill_id=BID, dag_ids={"d1": "orders_dag", "d2": "emails_dag"})
    assert [(r.trigger_dag_id, r.logical_date, r.conf["step"]) for r in reruns] == [
        ("orders_dag", "2021-06-04", "d1"),
        ("orders_dag", "2021-06-05", "d1"),
        ("emails_dag", "2021-06-04", "d2"),
    ]
    assert reruns[0].trigger_run_id == f"backfill__{BID}__2021-06-04"
    assert reruns[2].conf == {"backfill_id": BID, "trace_id": "t-1", "step": "d2"}


def test_a_state_over_its_bound_is_never_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DAG writes a RunState only within `max_bytes` (start refuses such a plan before
    anything is written; a later task fails rather than push it)."""
    import backfill_dag
    from airflow.sdk.exceptions import AirflowFailException

    from backfill_orchestrator.contracts import RunState

    plan = make_plan(chain(3))
    conf = RunConf(backfill_id=BID, config_uri="s3://b/c.yaml", plan_uri="s3://b/plan.json")
    state = RunState(
        conf=conf,
        plan_sha256="0" * 64,
        rounds=3,
        first_round=0,
        end_round=3,
        started_at=datetime(2021, 6, 14, tzinfo=UTC),
        ledger=Ledger.for_plan(plan).entries,
    )
    pushed: list[Any] = []
    ti = SimpleNamespace(xcom_push=lambda key, value: pushed.append((key, value)))
    backfill_dag._push_state(ti, state)
    assert pushed == [("run_state", state.to_xcom())]
    monkeypatch.setattr(RunState, "max_bytes", 200)
    with pytest.raises(AirflowFailException, match=r"the run's state is \d+ bytes, over its limit of 200"):
        backfill_dag._push_state(ti, state)
    assert len(pushed) == 1
