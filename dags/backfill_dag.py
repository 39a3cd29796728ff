"""`backfill`: the generic backfill DAG that the trigger function starts.

Triggered (no schedule) with conf `{backfill_id, config_uri, plan_uri, result_uri?}` (the
contract `backfill_orchestrator.contracts.RunConf`). It checks the conf and
loads the plan, then runs the plan in *rounds* (see `backfill_runtime/rounds.py`): each round
is one Spark submission of the generic job for its `spark` steps, side by side with one batch
of reruns of other DAGs for its `airflow_dag` steps (one run per date, bounded concurrency,
an existing run for the date is cleared and rerun). Round k waits for round k-1. A step whose
upstream failed is not run; independent steps go on. `finish` records the outcome (status
record, Slack, PagerDuty, `backfill_report.json` next to the plan) and fails the run if any
step failed.

The DAG's shape is static, the plan is not: a run has `[backfill] max_rounds` round slots
(unused ones pass in a second); a plan with more rounds goes on in a continuation run of this
DAG (`<run id>__cont<k>`, `backfill_runtime/continuation.py`) and the last run reports. A
round's DAG reruns are chunked: one mapped task reruns up to `[backfill] reruns_per_task`
(DAG, date) pairs, so a round of any size fits Airflow's map limit. Task graph per run:

    start -> round_0.prepare -> {round_0.spark, round_0.dag_runs[*]} -> round_1.prepare -> ...
          -> next_run (continuation, when rounds remain) -> finish (skipped when continued)

Each round's Spark submission runs on the runner of the plan's Spark profile (local child
process, EMR Serverless, EMR on EC2 or Databricks; `backfill_runtime/runners/`), resolved at
`start` from the deployment's profiles file; an unknown profile refuses the run.

Deployment options (Spark runner and profiles, warehouse, retries, concurrency, notification
endpoints) are Airflow configuration, section `[backfill]`; see docs/airflow.md and docs/spark.md.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pendulum
from airflow.sdk import DAG, TaskGroup, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from backfill_runtime.observability import task_logger
from backfill_runtime.options import (
    DagShape,
    InvalidOptionError,
    max_map_length,
    reruns_per_task,
    spark_timeout_seconds,
    warehouse_uri,
)
from backfill_runtime.reruns import new_run_id

DAG_ID = "backfill"  # at most 16 characters: MWAA's 64-character Path must fit /dags/<id>/dagRuns/<run id>
SHAPE = DagShape.from_config()
PROGRESS_EVERY_SECONDS = 10  # short rounds update the record's progress at most this often (and at the last round)
log = logging.getLogger(__name__)


def _ids(index: int) -> dict[str, str]:
    return {
        "prepare": f"round_{index}.prepare",
        "spark": f"round_{index}.spark",
        "dag_runs": f"round_{index}.dag_runs",
    }


# -- start: conf, plan, status RUNNING -------------------------------------------------------
@task(task_id="start")
def start() -> dict[str, Any]:
    from backfill_runtime.reporting import Reporting
    from backfill_runtime.rounds import round_count

    from backfill_orchestrator.config import InvalidConfigError, parse_config
    from backfill_orchestrator.contracts import InvalidDocumentError, Plan, RunConf
    from backfill_orchestrator.contracts.run_conf import backfill_id_of
    from backfill_orchestrator.documents import DocumentNotFoundError, read_text

    context = get_current_context()
    ti, dag_run = context["ti"], context["dag_run"]
    reporting = Reporting.from_options()
    run_url = reporting.run_url(ti.dag_id, ti.run_id)
    raw_conf = dag_run.conf or {}

    def refuse(problems: list[str], backfill_id: str | None, result_uri: str | None = None) -> AirflowFailException:
        reporting.refused(backfill_id=backfill_id, problems=problems, run_url=run_url, result_uri=result_uri)
        return AirflowFailException("run refused, nothing was run: " + "; ".join(problems))

    try:
        run_conf = RunConf.from_conf(raw_conf)
    except InvalidDocumentError as error:
        raise refuse(error.problems, backfill_id_of(raw_conf)) from None

    problems: list[str] = []
    plan = config = None
    try:
        plan = Plan.from_json(read_text(run_conf.plan_uri), source=run_conf.plan_uri)
    except DocumentNotFoundError as error:
        problems.append(f"plan_uri: {error}")
    except InvalidDocumentError as error:
        problems.append(f"plan_uri: {run_conf.plan_uri} is not a valid plan document: {error.problems[0]}")
    try:
        config_text = read_text(run_conf.config_uri)
        config = parse_config(config_text, source=run_conf.config_uri)
    except DocumentNotFoundError as error:
        problems.append(f"config_uri: {error}")
    except InvalidConfigError as error:
        problems.append(f"config_uri: {run_conf.config_uri} is not a valid config ({len(error.issues)} errors)")
    if plan is not None and plan.backfill_id != run_conf.backfill_id:
        problems.append(f"plan_uri: the plan is for backfill {plan.backfill_id}, not {run_conf.backfill_id}")
    done = None
    if run_conf.done_uri:  # a retry attempt: what earlier attempts finished is not run again
        from backfill_orchestrator.contracts import AttemptDone

        try:
            done = AttemptDone.from_json(read_text(run_conf.done_uri), source=run_conf.done_uri)
        except (DocumentNotFoundError, InvalidDocumentError) as error:
            problems.append(f"done_uri: {str(error).splitlines()[0]}")
    carried = None
    if run_conf.first_round:  # a continuation: what the runs before it did
        carried = _read_carried(run_conf, problems)
    rounds = round_count(plan) if plan is not None else 0
    spark_profile = None
    if plan is not None and any(step.kind == "spark" for step in plan.steps):
        spark_profile = _resolve_spark_profile(plan.spark_profile, problems)
    if problems:
        raise refuse(problems, run_conf.backfill_id, run_conf.result_uri)

    task_log = task_logger(backfill_id=run_conf.backfill_id, attempt=run_conf.attempt, trace_id=run_conf.trace_id)
    if carried is None:
        reporting.started(
            backfill_id=run_conf.backfill_id, config=config, plan=plan, rounds=rounds, run_url=run_url,
            result_uri=run_conf.result_uri, spark_profile=_describe_profile(spark_profile), plan_uri=run_conf.plan_uri,
        )  # fmt: skip
    else:
        _check_still_running(reporting, run_conf.backfill_id)
    first = run_conf.first_round or 0
    end = min(first + SHAPE.max_rounds, rounds)
    _skip_tasks([task_id for slot in range(end - first, SHAPE.max_rounds) for task_id in _ids(slot).values()])
    task_log.info(
        "backfill %s: %d steps in %d rounds; this run: rounds %d to %d", run_conf.backfill_id, len(plan.steps),
        rounds, first + 1, end,
    )  # fmt: skip
    return {
        "conf": run_conf.to_conf(),
        "first_round": first,
        "end_round": end,
        "started_at": (carried.started_at if carried else dag_run.start_date or datetime.now(UTC)).isoformat(),
        "carried_ledger": carried.ledger if carried else None,
        "backfill_id": run_conf.backfill_id,
        "attempt": run_conf.attempt,
        "trace_id": run_conf.trace_id,
        "config_uri": run_conf.config_uri,
        "plan_uri": run_conf.plan_uri,
        "result_uri": run_conf.result_uri,
        "rounds": rounds,
        "plan": plan.model_dump(mode="json"),
        "spark_profile": spark_profile,
        "done": done.model_dump(mode="json") if done else None,
    }


def _read_carried(run_conf: Any, problems: list[str]) -> Any:
    from backfill_runtime.continuation import Carried

    from backfill_orchestrator.contracts import InvalidDocumentError
    from backfill_orchestrator.documents import DocumentError, read_text

    try:
        carried = Carried.from_json(read_text(run_conf.ledger_uri, max_bytes=Carried.max_bytes), source=run_conf.ledger_uri)
    except (DocumentError, InvalidDocumentError) as error:
        problems.append(f"ledger_uri: {str(error).splitlines()[0]}")
        return None
    if carried.backfill_id != run_conf.backfill_id or carried.first_round != run_conf.first_round:
        problems.append(f"ledger_uri: the carried state is for {carried.backfill_id} round {carried.first_round}")
        return None
    return carried


def _check_still_running(reporting: Any, backfill_id: str) -> None:
    """A continuation goes on only while the backfill is RUNNING: a cancel that came between
    the runs (it failed the run the record named) stops it here, with nothing run."""
    from backfill_orchestrator.status import BackfillState

    record = reporting.store.get(backfill_id) if reporting.store is not None else None
    if record is not None and record.state is not BackfillState.RUNNING:
        raise AirflowFailException(f"backfill {backfill_id} is {record.state}: this continuation runs nothing")


def _skip_tasks(task_ids: list[str]) -> None:
    """Mark tasks of this run skipped from here (no process is started for them): the round
    slots this run does not use, a round's spark task when it has no spark steps."""
    if not task_ids:
        return
    from airflow.sdk.execution_time.comms import SkipDownstreamTasks
    from backfill_runtime.reruns import supervisor_comms

    supervisor_comms().send(SkipDownstreamTasks(tasks=task_ids))


def _slots_used(started: dict[str, Any]) -> int:
    return started["end_round"] - started["first_round"]


def _describe_profile(resolved: dict[str, Any] | None) -> str | None:
    from backfill_runtime.runners.select import describe_profile

    return describe_profile(resolved) if resolved else None


def _resolve_spark_profile(name: str, problems: list[str]) -> dict[str, Any] | None:
    """The plan's profile from the deployment's profiles file; a problem (refusal) otherwise."""
    from backfill_runtime.runners.select import load_profiles, resolve_profile

    from backfill_orchestrator.contracts import InvalidDocumentError
    from backfill_orchestrator.documents import DocumentError
    from backfill_orchestrator.spark_profiles import UnknownProfileError

    try:
        profile = resolve_profile(name, load_profiles())
    except UnknownProfileError as error:
        problems.append(str(error))
        return None
    except (DocumentError, InvalidDocumentError, InvalidOptionError) as error:
        problems.append(f"[backfill] spark_profiles_uri: {str(error).splitlines()[0]}")
        return None
    log.info("Spark profile %s: %s", name, profile)
    return profile


# -- bookkeeping shared by every round and `finish` -----------------------------------------
def _started(ti: Any) -> dict[str, Any] | None:
    return ti.xcom_pull(task_ids="start")


def _ledger_after(ti: Any, plan: Any, index: int) -> Any:
    """The ledger once rounds 0..index-1 are done: the previous prepare's ledger plus what that
    round's Spark submission and DAG reruns reported."""
    from backfill_runtime.step_ledger import DagRunRequest, Ledger

    from backfill_orchestrator.contracts import InvalidDocumentError, RunReport
    from backfill_orchestrator.documents import DocumentNotFoundError, read_text

    if index == 0:
        from backfill_orchestrator.contracts import AttemptDone

        started = _started(ti) or {}
        if started.get("carried_ledger") is not None:
            return Ledger(started["carried_ledger"])
        done = started.get("done")
        return Ledger.for_plan(plan, done=AttemptDone.model_validate(done) if done else None)
    ids = _ids(index - 1)
    previous = ti.xcom_pull(task_ids=ids["prepare"], key="ledger")
    if previous is None:
        raise AirflowFailException(f"{ids['prepare']} left no ledger (it failed); cannot tell what ran")
    ledger = Ledger(previous)
    states = ti.get_task_states(dag_id=ti.dag_id, task_ids=[ids["spark"], ids["dag_runs"]], run_ids=[ti.run_id])
    states = states.get(ti.run_id, {})
    spark = ti.xcom_pull(task_ids=ids["prepare"], key="spark")
    if spark:
        report = unreadable = None
        try:
            report = RunReport.from_json(read_text(spark["report_uri"]), source=spark["report_uri"])
        except DocumentNotFoundError:
            pass
        except InvalidDocumentError as error:
            log.error("%s", error)
            unreadable = "; ".join(error.problems[:3])
        ledger.record_spark(spark["step_ids"], report=report, task_state=states.get(ids["spark"]), unreadable=unreadable)
    requests = ti.xcom_pull(task_ids=ids["prepare"], key="requests") or []
    if requests:
        runs = [DagRunRequest(step_id, dag_id, date.fromisoformat(day)) for step_id, dag_id, day in requests]
        chunks = ti.xcom_pull(task_ids=ids["prepare"], key="chunks") or []
        ledger.record_dag_runs(runs, _rerun_states(ti, chunks, states, task_id=ids["dag_runs"]))
    return ledger


def _rerun_states(ti: Any, chunks: list[dict[str, Any]], ti_states: dict[str, str], *, task_id: str) -> dict[int, str]:
    """request index -> the state its DAG run ended in: `success` for a chunk whose task
    succeeded, else from the chunk's outcomes document (written by this run's chunk task),
    else the task's state."""
    from backfill_runtime.reruns import ChunkOutcomes

    states: dict[int, str] = {}
    for number, chunk in enumerate(chunks):
        start, end = chunk["start"], chunk["end"]
        task_state = ti_states.get(f"{task_id}_{number}") or "not run"
        if task_state == "success":  # the task succeeds only when every rerun did
            states.update(dict.fromkeys(range(start, end), "success"))
            continue
        outcomes = ChunkOutcomes.read(chunk["outcomes_uri"], run_id=ti.run_id)
        for offset in range(end - start):
            states[start + offset] = outcomes.get(offset) or task_state
    return states


@task(task_id="prepare", trigger_rule="all_done")
def prepare(index: int) -> list[dict[str, Any]]:
    """Returns the round's chunks of DAG reruns (what `dag_runs` maps over); pushes `ledger`,
    `spark`, `requests` and `chunks` under their own XCom keys for the next round. A round with
    no Spark step whose reruns fit one chunk is rerun here instead (one process, not two)."""
    from backfill_runtime.observability import backfill_facts, lineage_settings
    from backfill_runtime.rounds import chunked, sub_plan

    from backfill_orchestrator.contracts.plan import Plan
    from backfill_orchestrator.documents import sibling, write_text
    from backfill_orchestrator.lineage_events import rerun_parent_conf

    ti = get_current_context()["ti"]
    started = _started(ti)
    if not started:
        raise AirflowSkipException("the backfill did not start (see the start task)")
    plan = Plan.model_validate(started["plan"])
    slot, index = index, started["first_round"] + index  # this run's slot -> the plan's round
    ledger = _ledger_after(ti, plan, slot)
    work = ledger.plan_round(plan, index)
    for step_id, reason in work.blocked.items():
        log.warning("round %d: %s %s", index, step_id, reason)
    spark = None
    if not work.spark_step_ids:
        _skip_tasks([_ids(slot)["spark"]])
    else:
        # The job runs every spark step of the plan it gets: give it this round's, runnable ones.
        plan_uri = sibling(started["plan_uri"], f"rounds/{index}/plan.json")
        write_text(plan_uri, sub_plan(plan, set(work.spark_step_ids)).to_json())
        spark = {
            "plan_uri": plan_uri,
            "report_uri": sibling(plan_uri, "run_report.json"),
            "step_ids": work.spark_step_ids,
        }
    backfill_id = started["backfill_id"]
    rerun_conf: dict[str, Any] = {"backfill_id": backfill_id, "trace_id": started.get("trace_id")}
    lineage = lineage_settings()
    if lineage.transport is not None:  # the backfill run is each rerun's OpenLineage parent (provider key `openlineage`)
        rerun_conf["openlineage"] = rerun_parent_conf(backfill_facts(started, namespace=lineage.namespace))
    reruns = [
        {
            "trigger_dag_id": run.dag_id,
            "trigger_run_id": new_run_id(backfill_id=backfill_id, day=run.day),
            "logical_date": run.day.isoformat(),
            "conf": {**rerun_conf, "step": run.step_id},
        }
        for run in work.dag_runs
    ]
    chunks = [
        {
            "round": index,
            "start": part[0][0],
            "end": part[-1][0] + 1,
            "label": _chunk_label([rerun for _, rerun in part]),
            "outcomes_uri": sibling(started["plan_uri"], f"rounds/{index}/reruns/{number}.json"),
            "reruns": [rerun for _, rerun in part],
        }
        for number, part in enumerate(chunked(list(enumerate(reruns)), size=reruns_per_task(), max_chunks=max_map_length()))
    ]
    task_log = task_logger(backfill_id=backfill_id, attempt=started.get("attempt"), trace_id=started.get("trace_id"))
    task_log.info(
        "round %d (slot %d of this run): spark steps %s; %d DAG reruns in %d tasks; blocked %s",
        index + 1, slot, work.spark_step_ids, len(reruns), len(chunks), sorted(work.blocked),
    )  # fmt: skip
    requests = work.dag_runs
    if not work.spark_step_ids and len(chunks) == 1:
        # A small DAG-only round (a lineage chain of DAGs is all such rounds): rerun it here
        # rather than in a second task process; dag_runs then maps over nothing.
        task_log.info("round %d: %s rerun by this task (no Spark, one chunk)", index + 1, chunks[0]["label"])
        ledger.record_dag_runs(work.dag_runs, _rerun_inline(ti, chunks[0]))
        requests, chunks = [], []
    progress_at = ti.xcom_pull(task_ids=_ids(slot - 1)["prepare"], key="progress_at") if slot else None
    if index < started["rounds"] and (
        index == started["rounds"] - 1 or progress_at is None or time.time() - progress_at >= PROGRESS_EVERY_SECONDS
    ):
        from backfill_runtime.reporting import record_progress

        record_progress(backfill_id, ledger, plan=plan, round_index=index, rounds=started["rounds"])
        progress_at = time.time()
    ti.xcom_push(key="progress_at", value=progress_at)
    ti.xcom_push(key="ledger", value=ledger.to_dict())
    ti.xcom_push(key="spark", value=spark)
    ti.xcom_push(key="requests", value=[[run.step_id, run.dag_id, run.day.isoformat()] for run in requests])
    ti.xcom_push(key="chunks", value=[{k: c[k] for k in ("start", "end", "outcomes_uri")} for c in chunks])
    return chunks


def _rerun_inline(ti: Any, chunk: dict[str, Any]) -> dict[int, str]:
    """Rerun one chunk inside `prepare`, with the chunk task's retry policy (what failed is
    rerun after the retry delay, `task_retries` times); index -> the run's end state."""
    from backfill_runtime.reruns import ChunkOutcomes, Rerun, RerunBatch, supervisor_comms

    reruns = [Rerun.from_dict(item) for item in chunk["reruns"]]
    outcomes = ChunkOutcomes.read(chunk["outcomes_uri"], run_id=ti.run_id) if ti.try_number > 1 else {}
    for attempt in range(SHAPE.task_retries + 1):
        if attempt:
            time.sleep(min(SHAPE.retry_delay_seconds * 2 ** (attempt - 1), SHAPE.max_retry_delay_seconds))
        outcomes = RerunBatch(
            reruns, comms=supervisor_comms(), concurrency=SHAPE.max_parallel_dag_runs,
            poke_seconds=SHAPE.rerun_poke_seconds, outcomes=outcomes,
            checkpoint=lambda now: ChunkOutcomes.write(chunk["outcomes_uri"], run_id=ti.run_id, outcomes=now),
            owner=(ti.dag_id, ti.run_id),
        ).run()  # fmt: skip
        if all(outcomes.get(i) == "success" for i in range(len(reruns))):
            break
    return {i: outcomes.get(i) or "not run" for i in range(len(reruns))}


def _chunk_label(reruns: list[dict[str, Any]]) -> str:
    """The UI's name of a chunk task: `<dag> <date>`, or the first and last and how many."""
    first, last = reruns[0], reruns[-1]
    if len(reruns) == 1:
        return f"{first['trigger_dag_id']} {first['logical_date']}"
    return f"{first['trigger_dag_id']} {first['logical_date']} .. {last['trigger_dag_id']} {last['logical_date']} ({len(reruns)} runs)"


# -- the round's DAG reruns, one chunk per mapped task -----------------------------------------
@task(task_id="dag_runs", map_index_template="{{ rerun_label }}", max_active_tis_per_dag=1)
def dag_runs(chunk: dict[str, Any]) -> dict[str, int]:
    """Rerun the chunk's (DAG, date) pairs, `max_parallel_dag_runs` at a time, and wait for
    them; fails (and is retried) when any ended failed. A retry reruns only what did not
    succeed in an earlier try (the chunk's outcomes document). One chunk task per round slot
    runs at a time across all backfills (`max_active_tis_per_dag`), each with at most
    `max_parallel_dag_runs` DAG runs in flight."""
    from airflow.exceptions import AirflowException
    from backfill_runtime.reruns import ChunkOutcomes, Rerun, RerunBatch, supervisor_comms

    context = get_current_context()
    ti = context["ti"]
    context["rerun_label"] = chunk["label"]  # type: ignore[typeddict-unknown-key]
    reruns = [Rerun.from_dict(item) for item in chunk["reruns"]]
    # A retry reruns only what an earlier try did not finish (nothing to read on the first try).
    outcomes = ChunkOutcomes.read(chunk["outcomes_uri"], run_id=ti.run_id) if ti.try_number > 1 else {}
    batch = RerunBatch(
        reruns,
        comms=supervisor_comms(),
        concurrency=SHAPE.max_parallel_dag_runs,
        poke_seconds=SHAPE.rerun_poke_seconds,
        outcomes=outcomes,
        checkpoint=lambda now: ChunkOutcomes.write(chunk["outcomes_uri"], run_id=ti.run_id, outcomes=now),
        owner=(ti.dag_id, ti.run_id),
    )
    ended = batch.run()
    failed = [reruns[i].label for i, state in sorted(ended.items()) if state != "success"]
    if failed:
        raise AirflowException(f"{len(failed)} of {len(reruns)} reruns did not succeed: {', '.join(failed[:20])}")
    return {"reruns": len(reruns)}


# -- the Spark submission, on the runner of the plan's profile ---------------------------------
def _spark_spec(ti: Any, index: int) -> dict[str, Any] | None:
    return ti.xcom_pull(task_ids=_ids(index)["prepare"], key="spark")


@task(task_id="spark")
def spark(index: int) -> dict[str, Any]:
    """Submit the round's sub-plan, wait, and map the end to the task's outcome: a run that
    failed is retried (Airflow retries); bad input, a refused submission, a timeout and a cancel
    fail the task at once. Stopping the task (a cancel, a kill) cancels the run first."""
    from backfill_runtime.runners import (
        JobSpec,
        SparkRunCancelledError,
        SparkRunTimedOutError,
        SparkSubmissionRefusedError,
        run_to_completion,
    )
    from backfill_runtime.runners.base import SparkJobInputError
    from backfill_runtime.runners.select import build_runner, profile_from

    from backfill_orchestrator.documents import remove

    ti = get_current_context()["ti"]
    spec = _spark_spec(ti, index)
    if not spec:
        raise AirflowSkipException("no spark steps in this round")
    started = _started(ti) or {}
    index = started["first_round"] + index  # this run's slot -> the plan's round
    try:
        warehouse = warehouse_uri()
        profile = profile_from(started["spark_profile"])
        runner = build_runner(profile)
    except InvalidOptionError as error:
        raise AirflowFailException(str(error)) from None
    remove(spec["report_uri"])  # a retry must not read the previous attempt's report
    job = JobSpec(
        name=f"backfill-{started['backfill_id']}-round-{index}-try-{ti.try_number}",
        plan_uri=spec["plan_uri"],
        warehouse_uri=warehouse,
        report_uri=spec["report_uri"],
    )
    timeout = min(spark_timeout_seconds(), profile.timeout_minutes * 60)
    # A child process is cheap to poll; a service's API is polled every spark_poll_seconds.
    poll_seconds = 0.5 if profile.runner == "local" else SHAPE.spark_poll_seconds
    try:
        handle = run_to_completion(runner, job, timeout_seconds=timeout, poll_seconds=poll_seconds)
    except (SparkJobInputError, SparkSubmissionRefusedError) as error:
        raise AirflowFailException(str(error)) from None
    except (SparkRunTimedOutError, SparkRunCancelledError) as error:  # a retry would only repeat it
        raise AirflowFailException(str(error)) from None
    return {"runner": handle.runner, "run_id": handle.run_id, "profile": started["spark_profile"]["name"]}


# -- next_run: a continuation run when the plan has more rounds than this run's slots ---------
@task(task_id="next_run", trigger_rule="all_done")
def next_run() -> str | None:
    """Trigger `<first run id>__cont<k>` with the next round and the carried ledger, unless
    this run reached the plan's end. Idempotent: a retry after a crash gets 409 for the same
    run id, which means it is already continued. The status record names the new run first,
    so a cancel from then on fails the run that is live."""
    from airflow.exceptions import AirflowException
    from airflow.sdk.exceptions import ErrorType
    from airflow.sdk.execution_time.comms import ErrorResponse, TriggerDagRun
    from backfill_runtime.continuation import Carried, carried_uri, continuation_run_id, needs_continuation
    from backfill_runtime.reporting import Reporting
    from backfill_runtime.reruns import supervisor_comms

    from backfill_orchestrator.contracts.plan import Plan
    from backfill_orchestrator.documents import write_text

    ti = get_current_context()["ti"]
    started = _started(ti)
    if not started:
        raise AirflowSkipException("the backfill did not start (see the start task)")
    first = started["first_round"]
    if not needs_continuation(first_round=first, slots=SHAPE.max_rounds, total=started["rounds"]):
        return None
    ledger = _ledger_after(ti, Plan.model_validate(started["plan"]), _slots_used(started))
    backfill_id, next_round = started["backfill_id"], first + SHAPE.max_rounds
    reporting = Reporting.from_options()
    _check_still_running(reporting, backfill_id)
    run_id = continuation_run_id(ti.run_id, first_round=next_round, slots=SHAPE.max_rounds)
    uri = carried_uri(started["plan_uri"], run_id)
    carried = Carried(
        backfill_id=backfill_id, first_round=next_round, started_at=started["started_at"], ledger=ledger.to_dict()
    )
    write_text(uri, carried.to_json())
    if reporting.store is not None:
        changes = {"dag_run_id": run_id}
        if url := reporting.run_url(ti.dag_id, run_id):
            changes["dag_run_url"] = url
        reporting.store.annotate(backfill_id, changes)
    answer = supervisor_comms().send(
        TriggerDagRun(
            dag_id=ti.dag_id, run_id=run_id, logical_date=None, run_after=datetime.now(UTC),
            conf={**started["conf"], "first_round": next_round, "ledger_uri": uri},
        )
    )  # fmt: skip
    if isinstance(answer, ErrorResponse):
        if answer.error != ErrorType.DAGRUN_ALREADY_EXISTS:
            raise AirflowException(f"the continuation run {run_id} was not triggered: {answer.error} {answer.detail}")
        log.info("continuation run %s exists already (an earlier try triggered it)", run_id)
    log.info("rounds %d to %d continue in run %s", next_round + 1, started["rounds"], run_id)
    return run_id


# -- finish: outcome, report, status, notifications -----------------------------------------
@task(task_id="finish", trigger_rule="all_done")
def finish() -> dict[str, Any]:
    ti = get_current_context()["ti"]
    continued = ti.xcom_pull(task_ids="next_run")
    if continued:  # before the imports below: a continued run's finish only steps aside
        raise AirflowSkipException(f"the backfill goes on in run {continued}, which reports its end")
    started = _started(ti)
    if not started:
        raise AirflowFailException("the backfill did not start: see the start task's log")

    from backfill_runtime.reporting import Reporting
    from backfill_runtime.step_ledger import Ledger

    from backfill_orchestrator.config import InvalidConfigError, parse_config
    from backfill_orchestrator.contracts import BackfillReport, Plan, StepStatus
    from backfill_orchestrator.documents import DocumentNotFoundError, read_text, sibling, write_text

    plan = Plan.model_validate(started["plan"])
    ledger: Ledger = _ledger_after(ti, plan, _slots_used(started))
    for step_id in ledger.with_status(StepStatus.PENDING):
        ledger.mark(step_id, StepStatus.FAILED, detail="never ran (the backfill stopped before its round)")
    report = BackfillReport.build(
        backfill_id=started["backfill_id"],
        dag_run_id=ti.run_id,
        steps=ledger.entries,
        spark_reports=[
            sibling(started["plan_uri"], f"rounds/{i}/run_report.json")
            for i in range(started["rounds"])
            if any(e.round == i and e.kind == "spark" for e in ledger.entries.values())
        ],
        written_at=datetime.now(UTC),
    )
    report_uri = sibling(started["plan_uri"], "backfill_report.json")
    write_text(report_uri, report.to_json())
    try:
        config = parse_config(read_text(started["config_uri"]), source=started["config_uri"])
    except (DocumentNotFoundError, InvalidConfigError):
        config = None
    from backfill_runtime.reporting import record_progress

    record_progress(report.backfill_id, ledger, plan=plan, round_index=max(started["rounds"] - 1, 0), rounds=started["rounds"])
    reporting = Reporting.from_options()
    reporting.finished(
        config=config,
        report=report,
        report_uri=report_uri,
        run_url=reporting.run_url(ti.dag_id, ti.run_id),
        result_uri=started.get("result_uri"),
    )
    reporting.release_claims(report.backfill_id)  # after the terminal state: queued backfills may start
    _observe(started, report, ti=ti, started_at=datetime.fromisoformat(started["started_at"]))
    if not report.succeeded:
        failed = ledger.with_status(StepStatus.FAILED)
        summary = report.figures.text(total_steps=len(report.steps))
        raise AirflowFailException(f"backfill {report.backfill_id} failed: steps {failed}; {summary}")
    return report.figures.model_dump(mode="json")


def _observe(started: dict[str, Any], report: Any, *, ti: Any, started_at: datetime | None) -> None:
    """Lineage events (the Spark steps as child runs, then the backfill's COMPLETE/FAIL) and the
    run's metrics. Never raises: observability must not change a backfill's outcome."""
    from backfill_runtime.observability import backfill_facts, lineage_emitter, metrics_sink, report_metrics

    from backfill_orchestrator.contracts import InvalidDocumentError, RunReport
    from backfill_orchestrator.documents import DocumentError, read_text
    from backfill_orchestrator.lineage_events import backfill_finished, dag_reruns, spark_steps

    task_log = task_logger(backfill_id=report.backfill_id, attempt=started.get("attempt"), trace_id=started.get("trace_id"))
    sink = metrics_sink(dimensions={"dag_id": ti.dag_id})
    lineage = lineage_emitter(metrics=sink, logger=task_log)
    if lineage.enabled:
        facts = backfill_facts(started, namespace=lineage.namespace)
        for uri in report.spark_reports:
            try:
                run_report = RunReport.from_json(read_text(uri), source=uri)
            except (DocumentError, InvalidDocumentError) as error:
                task_log.warning("no lineage events for the spark steps of %s: %s", uri, str(error)[:300])
                continue
            spark_steps(lineage, facts, run_report, warehouse=run_report.warehouse)
        for step_id, outcome in report.steps.items():
            if outcome.kind == "airflow_dag" and outcome.dates:
                dates = {day.isoformat(): state for day, state in outcome.dates.items()}
                dag_reruns(lineage, facts, step_id=step_id, dag_id=outcome.dag_id, dates=dates)
        failed = [p.step for p in report.problems]
        reason = None if report.succeeded else f"steps not succeeded: {', '.join(failed)}"[:2000]
        backfill_finished(lineage, facts, "COMPLETE" if report.succeeded else "FAIL", reason=reason)
        task_log.info("OpenLineage: %d events sent, %d failed", lineage.sent, lineage.failed)
    seconds = (datetime.now(UTC) - started_at).total_seconds() if started_at else 0.0
    try:
        report_metrics(sink, report.figures, seconds=seconds)
        sink.flush()
    except Exception as error:  # a metrics backend problem is logged, never fails the run
        task_log.warning("metrics not sent: %s: %s", type(error).__name__, error)


with DAG(
    dag_id=DAG_ID,
    description="Rerun a backfill plan: Spark steps via the generic job, DAG steps via reruns",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=SHAPE.max_active_runs,
    default_args={
        "retries": SHAPE.task_retries,
        "retry_delay": timedelta(seconds=SHAPE.retry_delay_seconds),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(seconds=SHAPE.max_retry_delay_seconds),
    },
    tags=["backfill"],
    doc_md=__doc__,
) as dag:
    previous: Any = start()
    round_ends: list[Any] = []
    for index in range(SHAPE.max_rounds):
        with TaskGroup(group_id=f"round_{index}"):
            planned = prepare(index)
            previous >> planned
            spark_task = spark(index)
            planned >> spark_task
            reruns = dag_runs.expand(chunk=planned)
        previous = [spark_task, reruns]
        round_ends += previous
    # Every round's ends, not only the last slot's: `start` skips the slots a run does not use,
    # and a skipped slot must not let next_run start while an earlier round still runs.
    round_ends >> next_run() >> finish()
