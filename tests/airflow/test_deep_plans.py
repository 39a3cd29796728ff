"""Plans of any depth and rounds of any size on a real Airflow 3: a lineage chain of 10 DAG
steps (10 rounds: the run continues itself twice with max_rounds = 4) and one round of more
(DAG, date) reruns than Airflow maps tasks (its `[core] max_map_length`, set to 4 here as a
deployment may set it; Airflow's default is 1024), run as chunks that grow to fit the limit.
Airflow itself refuses a mapped task over the limit, so the round succeeds only if chunked. The
rerun targets are EmptyOperator-only DAGs (tests/airflow/dags/noop_target.py): the scheduler
marks them success without a process, so the time measured is the backfill DAG's own.

The sizes are the least that prove each property (a chain that continues twice; chunks of
`reruns_per_task` that would outnumber the limit): each round costs a few Airflow tasks, each
rerun a DAG run, and this module's Airflow is the suite's busiest."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import pytest

from backfill_local.airflow_local import LocalAirflow
from backfill_orchestrator.contracts import ResultFile
from backfill_orchestrator.status import BackfillState
from tests.support.airflow import (
    AwsLocal,
    airflow_extra_env,
    dags_folder,
    read_s3_json,
    status_store,
    step,
    store_backfill,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
SLOTS = 4  # max_rounds: a chain of CHAIN rounds is 3 DAG runs (4 + 4 + 2 rounds)
CHAIN = 10
MAP_LENGTH = 4  # Airflow's [core] max_map_length in this module's Airflow
PER_TASK = 8  # reruns_per_task: WIDE reruns would be 14 chunk tasks, over MAP_LENGTH...
WIDE_DAYS = 35
WIDE = 3 * WIDE_DAYS  # ...so the chunks grow to ceil(105 / 4) = 27 reruns: 4 chunk tasks
TARGETS = ["noop_target_a", "noop_target_b", "noop_target_c"]


@pytest.fixture(scope="module")
def deep_env(
    tmp_path_factory: pytest.TempPathFactory, aws: AwsLocal, receivers: tuple[Any, Any]
) -> Iterator[dict[str, Any]]:
    slack, pagerduty = receivers
    tmp = tmp_path_factory.mktemp("deep-plans")
    extra = {
        **airflow_extra_env(
            aws=aws, slack=slack, pagerduty=pagerduty, warehouse=tmp / "warehouse", outputs=tmp / "outputs"
        ),
        "AIRFLOW__BACKFILL__MAX_ROUNDS": str(SLOTS),
        "AIRFLOW__BACKFILL__MAX_PARALLEL_DAG_RUNS": "256",
        "AIRFLOW__BACKFILL__RERUNS_PER_TASK": str(PER_TASK),
        "AIRFLOW__BACKFILL__RERUN_POKE_SECONDS": "1",
        "AIRFLOW__CORE__MAX_MAP_LENGTH": str(MAP_LENGTH),
        # the scheduler starts and finishes more of the (empty) rerun runs per loop, and loops
        # sooner when idle: the chain's rounds are short tasks one after the other
        "AIRFLOW__SCHEDULER__MAX_DAGRUNS_PER_LOOP_TO_SCHEDULE": "256",
        "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.2",
    }
    with LocalAirflow(dags_folder=dags_folder(tmp), home=tmp / "home", extra_env=extra) as airflow:
        airflow.wait_for_dags(["backfill", *TARGETS])
        yield {"airflow": airflow, "slack": slack}


def wait_for_end(aws: AwsLocal, backfill_id: str, *, timeout: float) -> Any:
    """The status record once it is terminal (the run that ends a chain is not known up front)."""
    deadline = time.monotonic() + timeout
    store = status_store(aws)
    while True:
        record = store.get(backfill_id)
        if record.state in (BackfillState.SUCCEEDED, BackfillState.FAILED, BackfillState.CANCELLED):
            return record
        assert time.monotonic() < deadline, (
            f"{backfill_id} still {record.state} after {timeout:.0f} s: {record.progress}"
        )
        time.sleep(2)


def task_states(airflow: LocalAirflow, run_id: str) -> dict[str, str]:
    return {
        ti["task_id"] if ti["map_index"] < 0 else f"{ti['task_id']}[{ti['map_index']}]": ti["state"]
        for ti in airflow.task_instances("backfill", run_id)
    }


def test_a_chain_of_10_dag_steps_runs_in_continuation_runs_and_succeeds(deep_env, aws) -> None:
    airflow: LocalAirflow = deep_env["airflow"]
    days = ["2021-06-04"]
    waves = [[step("s00", "airflow_dag", dates=days, dag_id=TARGETS[0])]]
    waves += [
        [step(f"s{i:02d}", "airflow_dag", dates=days, upstream=[f"s{i - 1:02d}"], dag_id=TARGETS[i % 3])]
        for i in range(1, CHAIN)
    ]
    backfill = store_backfill(aws, name="deep-chain", waves=waves, days=days)
    began = time.monotonic()
    airflow.trigger("backfill", run_id=backfill.backfill_id, conf=backfill.conf)
    record = wait_for_end(aws, backfill.backfill_id, timeout=780)
    print(f"TIMING {CHAIN}-round chain: {time.monotonic() - began:.0f} s")
    bid = backfill.backfill_id
    chain = [bid, f"{bid}__cont1", f"{bid}__cont2"]
    assert record.state == BackfillState.SUCCEEDED, (
        record.reason,
        task_states(airflow, record.dag_run_id or bid),
    )
    assert record.dag_run_id == chain[-1]  # the record followed the chain: a cancel finds the live run
    assert record.progress["wave"] == CHAIN and record.progress["waves"] == CHAIN

    runs = {
        run["dag_run_id"]: run for run in airflow.dag_runs("backfill") if run["dag_run_id"].startswith(bid)
    }
    assert sorted(runs) == chain and airflow.wait_for_run("backfill", chain[-1], timeout=120) == "success"
    assert runs[f"{bid}__cont1"]["conf"]["first_round"] == SLOTS
    assert runs[f"{bid}__cont2"]["conf"]["first_round"] == 2 * SLOTS
    for run_id in chain[:-1]:  # an earlier run continued and left the reporting to the last one
        states = task_states(airflow, run_id)
        assert states["next_run"] == "success" and states["finish"] == "skipped", states
    last = task_states(airflow, chain[-1])
    assert last["finish"] == "success" and last["next_run"] == "success"
    # DAG-only rounds start no Spark task
    assert all(state == "skipped" for key, state in last.items() if key.endswith(".spark"))

    report = read_s3_json(aws, backfill.conf["plan_uri"].replace("plan.json", "backfill_report.json"))
    assert report["counts"] == {
        "pending": 0,
        "succeeded": CHAIN,
        "failed": 0,
        "blocked": 0,
        "awaiting_publish": 0,
    }
    assert report["dag_run_id"] == chain[-1]
    result = ResultFile.model_validate(read_s3_json(aws, backfill.conf["result_uri"]))
    assert result.state == "SUCCEEDED" and result.figures.dag_runs_succeeded == CHAIN
    texts = [m["text"] for m in deep_env["slack"].messages if bid in m["text"]]
    assert sum("SUCCEEDED" in t for t in texts) == 1 and sum("RUNNING" in t for t in texts) == 1, texts


def test_a_round_of_more_reruns_than_airflow_maps_is_split_into_chunks_and_succeeds(deep_env, aws) -> None:
    airflow: LocalAirflow = deep_env["airflow"]
    days = [(date(2020, 1, 1) + timedelta(days=n)).isoformat() for n in range(WIDE_DAYS)]
    waves = [[step(f"wide_{dag_id[-1]}", "airflow_dag", dates=days, dag_id=dag_id) for dag_id in TARGETS]]
    backfill = store_backfill(aws, name="wide-round", waves=waves, days=days)
    bid = backfill.backfill_id
    began = time.monotonic()
    airflow.trigger("backfill", run_id=bid, conf=backfill.conf)
    record = wait_for_end(aws, bid, timeout=780)
    print(f"TIMING round of {WIDE} reruns: {time.monotonic() - began:.0f} s")
    assert record.state == BackfillState.SUCCEEDED, (record.reason, task_states(airflow, bid))

    states = task_states(airflow, bid)
    chunks = sorted(key for key in states if key.startswith("round_0.dag_runs["))
    assert WIDE > PER_TASK * MAP_LENGTH  # chunks of PER_TASK would be more tasks than Airflow maps
    assert len(chunks) == MAP_LENGTH and all(states[key] == "success" for key in chunks), states
    window = {
        "limit": 1,
        "logical_date_gte": f"{days[0]}T00:00:00Z",
        "logical_date_lte": f"{days[-1]}T00:00:00Z",
    }
    for dag_id in TARGETS:  # (the API lists at most 100 runs a page: count them)
        runs = airflow.api("GET", f"/dags/{dag_id}/dagRuns", params=window)["total_entries"]
        succeeded = airflow.api("GET", f"/dags/{dag_id}/dagRuns", params={**window, "state": "success"})[
            "total_entries"
        ]
        assert runs == succeeded == WIDE_DAYS, (dag_id, runs, succeeded)
    report = read_s3_json(aws, backfill.conf["plan_uri"].replace("plan.json", "backfill_report.json"))
    assert report["counts"]["succeeded"] == 3
    assert all(len(report["steps"][f"wide_{t[-1]}"]["dates"]) == WIDE_DAYS for t in TARGETS)
    assert set(report["steps"]["wide_a"]["dates"].values()) == {"success"}
