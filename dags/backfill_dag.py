"""`backfill`: the generic backfill DAG that the trigger function starts.

Triggered (no schedule) with conf `{backfill_id, config_uri, plan_uri, result_uri?}` (the
contract `backfill_orchestrator.contracts.RunConf`). It checks the conf and
loads the plan, then runs the plan in *rounds* (`backfill_orchestrator.planner.plan_rounds`): each round
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

Tasks hand the run's state on as one XCom value, `run_state` (the contract
`backfill_orchestrator.contracts.RunState`): `start` writes the first, each `prepare` reads the
previous one and writes the next; the big documents (the plan, sub-plans, run reports, chunk
outcomes) stay beside the plan and the state names them.

Deployment options (Spark runner and profiles, warehouse, retries, concurrency, notification
endpoints) are Airflow configuration, section `[backfill]`; see docs/airflow.md and docs/spark.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pendulum
from airflow.sdk import DAG, TaskGroup, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from backfill_runtime.observability import task_logger
from backfill_runtime.options import (
    DagShape,
    InvalidOptionError,
    get_option,
    max_map_length,
    publish_root,
    reruns_per_task,
    spark_timeout_seconds,
    warehouse_uri,
)

if TYPE_CHECKING:
    from backfill_runtime.reruns import ChunkProgress, Rerun, RerunBatch

    from backfill_orchestrator.contracts import Plan, RerunChunk, RunState

DAG_ID = "backfill"  # at most 16 characters: MWAA's 64-character Path must fit /dags/<id>/dagRuns/<run id>
SHAPE = DagShape.from_config()
PROGRESS_EVERY_SECONDS = (
    10  # short rounds update the record's progress at most this often (and at the last round)
)
RUN_STATE = "run_state"  # the XCom key of the RunState each task writes
log = logging.getLogger(__name__)


def _ids(slot: int) -> dict[str, str]:
    return {
        "prepare": f"round_{slot}.prepare",
        "spark": f"round_{slot}.spark",
        "dag_runs": f"round_{slot}.dag_runs",
    }


# -- the run's state: one RunState per task, handed on as one XCom value -----------------------
def _oversized(value: dict[str, Any], limit: int) -> str | None:
    size = len(json.dumps(value, separators=(",", ":")))
    if size <= limit:
        return None
    return (
        f"the run's state is {size} bytes, over its limit of {limit}: the plan has too many steps and dates"
        " for one backfill; split its dates into several backfills"
    )


def _push_state(ti: Any, state: RunState) -> None:
    value = state.to_xcom()
    if problem := _oversized(value, state.max_bytes):
        raise AirflowFailException(problem)
    ti.xcom_push(key=RUN_STATE, value=value)


def _pull_state(ti: Any, task_id: str) -> RunState | None:
    from backfill_orchestrator.contracts import RunState

    value = ti.xcom_pull(task_ids=task_id, key=RUN_STATE, map_indexes=-1)
    return None if value is None else RunState.from_json(value, source=f"XCom {RUN_STATE} of {task_id}")


def _state_before(ti: Any, slot: int) -> RunState:
    """The state round slot `slot` starts from: `start`'s, or the previous slot's `prepare`'s."""
    task_id = "start" if slot == 0 else _ids(slot - 1)["prepare"]
    state = _pull_state(ti, task_id)
    if state is not None:
        return state
    if slot == 0 or _pull_state(ti, "start") is None:
        raise AirflowSkipException("the backfill did not start (see the start task)")
    raise AirflowFailException(f"{task_id} left no state (it failed); cannot tell what ran")


def _state_at_end(ti: Any, start_state: RunState) -> RunState:
    """The state once this run's last round is settled."""
    slots = start_state.slots_used
    return _settled(ti, _state_before(ti, slots) if slots else start_state)


def _plan_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _read_plan(state: RunState) -> Plan:
    """The plan `start` checked, read again from its URI (it is not copied into every XCom)."""
    from backfill_orchestrator.contracts import InvalidDocumentError, Plan
    from backfill_orchestrator.documents import DocumentNotFoundError, read_bytes

    uri = state.conf.plan_uri
    try:
        body = read_bytes(uri)
    except DocumentNotFoundError as error:
        raise AirflowFailException(f"plan_uri: {error}") from None
    if _plan_digest(body) != state.plan_sha256:
        raise AirflowFailException(
            f"plan_uri: {uri} changed after the run started; the run stops with what it did"
        )
    try:
        return Plan.from_json(body, source=uri)
    except InvalidDocumentError as error:  # valid at start: only a release deployed since then refuses it
        raise AirflowFailException(str(error)) from None


# -- start: conf, plan, status RUNNING -------------------------------------------------------
@task(task_id="start")
def start() -> None:
    from backfill_runtime.reporting import Reporting
    from backfill_runtime.rounds import rounds_of_run
    from backfill_runtime.step_ledger import Ledger

    from backfill_orchestrator.config import InvalidConfigError, parse_config
    from backfill_orchestrator.contracts import InvalidDocumentError, Plan, RunConf, RunState
    from backfill_orchestrator.contracts.run_conf import backfill_id_of
    from backfill_orchestrator.documents import DocumentNotFoundError, read_bytes, read_text
    from backfill_orchestrator.planner import plan_rounds

    context = get_current_context()
    ti, dag_run = context["ti"], context["dag_run"]
    reporting = Reporting.from_options()
    run_url = reporting.run_url(ti.dag_id, ti.run_id)
    raw_conf = dag_run.conf or {}

    def refuse(
        problems: list[str], backfill_id: str | None, result_uri: str | None = None
    ) -> AirflowFailException:
        reporting.refused(backfill_id=backfill_id, problems=problems, run_url=run_url, result_uri=result_uri)
        return AirflowFailException("run refused, nothing was run: " + "; ".join(problems))

    try:
        run_conf = RunConf.from_conf(raw_conf)
    except InvalidDocumentError as error:
        raise refuse(error.problems, backfill_id_of(raw_conf)) from None

    problems: list[str] = []
    plan = config = None
    plan_sha256 = ""
    try:
        plan_body = read_bytes(run_conf.plan_uri)
        plan_sha256 = _plan_digest(plan_body)
        plan = Plan.from_json(plan_body, source=run_conf.plan_uri)
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
        problems.append(
            f"config_uri: {run_conf.config_uri} is not a valid config ({len(error.issues)} errors)"
        )
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
    rounds = len(plan_rounds(plan)) if plan is not None else 0
    if plan is not None and run_conf.first_round and run_conf.first_round >= rounds:
        problems.append(
            f"first_round: {run_conf.first_round} is past the plan's last round ({rounds} rounds)"
        )
    spark_profile = None
    if plan is not None and any(step.kind == "spark" for step in plan.steps):
        spark_profile = _resolve_spark_profile(plan.spark_profile, problems)
    if problems:
        raise refuse(problems, run_conf.backfill_id, run_conf.result_uri)
    assert plan is not None and config is not None  # each is None only with a problem recorded

    this_run = rounds_of_run(first_round=run_conf.first_round or 0, slots=SHAPE.max_rounds, total=rounds)
    ledger = Ledger(carried.ledger) if carried else Ledger.for_plan(plan, done=done)
    state = RunState(
        conf=run_conf,
        plan_sha256=plan_sha256,
        rounds=rounds,
        first_round=this_run.start,
        end_round=this_run.stop,
        started_at=(carried.started_at if carried else None) or dag_run.start_date or datetime.now(UTC),
        spark_profile=spark_profile,
        ledger=ledger.entries,
    )
    if problem := _oversized(state.to_xcom(), state.max_bytes):  # before anything is written
        raise refuse([problem], run_conf.backfill_id, run_conf.result_uri)
    task_log = task_logger(
        backfill_id=run_conf.backfill_id, attempt=run_conf.attempt, trace_id=run_conf.trace_id
    )
    if carried is None:
        reporting.started(
            backfill_id=run_conf.backfill_id,
            config=config,
            plan=plan,
            rounds=rounds,
            run_url=run_url,
            result_uri=run_conf.result_uri,
            spark_profile=_describe_profile(spark_profile),
            plan_uri=run_conf.plan_uri,
        )
    else:
        _check_still_running(reporting, run_conf.backfill_id)
    _supervisor().skip_tasks(
        task_id for slot in range(state.slots_used, SHAPE.max_rounds) for task_id in _ids(slot).values()
    )
    task_log.info(
        "backfill %s: %d steps in %d rounds; this run: rounds %d to %d",
        run_conf.backfill_id,
        len(plan.steps),
        rounds,
        state.first_round + 1,
        state.end_round,
    )
    _push_state(ti, state)


def _read_carried(run_conf: Any, problems: list[str]) -> Any:
    from backfill_runtime.continuation import Carried

    from backfill_orchestrator.contracts import InvalidDocumentError
    from backfill_orchestrator.documents import DocumentError, read_text

    try:
        carried = Carried.from_json(
            read_text(run_conf.ledger_uri, max_bytes=Carried.max_bytes), source=run_conf.ledger_uri
        )
    except (DocumentError, InvalidDocumentError) as error:
        problems.append(f"ledger_uri: {str(error).splitlines()[0]}")
        return None
    if carried.backfill_id != run_conf.backfill_id or carried.first_round != run_conf.first_round:
        problems.append(
            f"ledger_uri: the carried state is for {carried.backfill_id} round {carried.first_round}"
        )
        return None
    return carried


def _check_still_running(reporting: Any, backfill_id: str) -> None:
    """A continuation goes on only while the backfill is RUNNING: a cancel that came between
    the runs (it failed the run the record named) stops it here, with nothing run."""
    from backfill_orchestrator.status import BackfillState

    record = reporting.store.get(backfill_id) if reporting.store is not None else None
    if record is not None and record.state is not BackfillState.RUNNING:
        raise AirflowFailException(
            f"backfill {backfill_id} is {record.state}: this continuation runs nothing"
        )


def _supervisor() -> Any:
    from backfill_runtime.supervisor import SupervisorClient

    return SupervisorClient.of_this_task()


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


# -- settling a round: what its Spark submission and its DAG reruns did ------------------------
def _settled(ti: Any, state: RunState) -> RunState:
    """`state` with the round it launched settled: each submitted spark step's outcome from
    the run report, each rerun's from its chunk task (or the chunk's outcomes document)."""
    launch = state.launched
    if launch is None:
        return state
    from backfill_runtime.step_ledger import DagRunRequest, Ledger

    from backfill_orchestrator.contracts import InvalidDocumentError, RunReport
    from backfill_orchestrator.documents import DocumentNotFoundError, read_text

    ids = _ids(launch.slot)
    ledger = Ledger(state.ledger)
    states = ti.get_task_states(
        dag_id=ti.dag_id, task_ids=[ids["spark"], ids["dag_runs"]], run_ids=[ti.run_id]
    )
    states = states.get(ti.run_id, {})
    if launch.spark is not None:
        report_uri = launch.spark.report_uri
        report = unreadable = None
        try:
            report = RunReport.from_json(read_text(report_uri), source=report_uri)
        except DocumentNotFoundError:
            pass
        except InvalidDocumentError as error:
            log.error("%s", error)
            unreadable = "; ".join(error.problems[:3])
        ledger.record_spark(
            launch.spark.step_ids, report=report, task_state=states.get(ids["spark"]), unreadable=unreadable
        )
    if launch.chunks:
        runs = [
            DagRunRequest(step_id, ledger.entries[step_id].dag_id, day)
            for step_id, day in launch.rerun_requests()
        ]
        ledger.record_dag_runs(runs, _rerun_states(ti, launch.chunks, states, task_id=ids["dag_runs"]))
    return state.with_settled(ledger.entries)


def _rerun_states(
    ti: Any, chunks: list[RerunChunk], ti_states: dict[str, str], *, task_id: str
) -> dict[int, str]:
    """request index -> the state its DAG run ended in: `success` for a chunk whose task
    succeeded, else from the chunk's outcomes document (written by this run's chunk task),
    else the task's state."""
    from backfill_runtime.reruns import ChunkOutcomes

    states: dict[int, str] = {}
    for number, chunk in enumerate(chunks):
        task_state = ti_states.get(f"{task_id}_{number}") or "not run"
        if task_state == "success":  # the task succeeds only when every rerun did
            states.update(dict.fromkeys(range(chunk.start, chunk.end), "success"))
            continue
        outcomes = ChunkOutcomes.read(chunk.outcomes_uri, run_id=ti.run_id).outcomes
        for offset in range(chunk.end - chunk.start):
            states[chunk.start + offset] = outcomes.get(offset) or task_state
    return states


# -- prepare: settle the previous round, plan this one -----------------------------------------
@task(task_id="prepare", trigger_rule="all_done")
def prepare(slot: int) -> list[dict[str, Any]]:
    """Settles the previous round, plans this one and writes the state; returns the round's
    chunks of DAG reruns (what `dag_runs` maps over). A round with no Spark step whose reruns
    fit one chunk is rerun here instead (one process, not two)."""
    from backfill_runtime.observability import backfill_facts, lineage_settings
    from backfill_runtime.reruns import round_reruns
    from backfill_runtime.rounds import chunked, sub_plan
    from backfill_runtime.step_ledger import Ledger

    from backfill_orchestrator.contracts import RerunChunk, RoundLaunch, SparkSubmission
    from backfill_orchestrator.documents import sibling, write_text
    from backfill_orchestrator.lineage_events import rerun_parent_conf

    ti = get_current_context()["ti"]
    state = _settled(ti, _state_before(ti, slot))
    plan = _read_plan(state)
    index, backfill_id, plan_uri = state.first_round + slot, state.backfill_id, state.conf.plan_uri
    ledger = Ledger(state.ledger)
    work = ledger.plan_round(plan, index)
    for step_id, reason in work.blocked.items():
        log.warning("round %d: %s %s", index, step_id, reason)
    spark = None
    if not work.spark_step_ids:
        _supervisor().skip_tasks([_ids(slot)["spark"]])
    else:
        # The job runs every spark step of the plan it gets: give it this round's, runnable ones.
        sub_plan_uri = sibling(plan_uri, f"rounds/{index}/plan.json")
        write_text(sub_plan_uri, sub_plan(plan, set(work.spark_step_ids)).to_json())
        policy_uri = None
        if plan.publish_policy is not None:  # the deployment's, narrowed by the config (the trigger's)
            policy_uri = sibling(sub_plan_uri, "publish_policy.json")
            write_text(policy_uri, plan.publish_policy.to_json())
        spark = SparkSubmission(
            plan_uri=sub_plan_uri,
            report_uri=sibling(sub_plan_uri, "run_report.json"),
            step_ids=work.spark_step_ids,
            publish_policy_uri=policy_uri,
        )
    rerun_conf: dict[str, Any] = {"backfill_id": backfill_id, "trace_id": state.conf.trace_id}
    lineage = lineage_settings()
    if (
        lineage.transport is not None
    ):  # the backfill run is each rerun's OpenLineage parent (provider key `openlineage`)
        rerun_conf["openlineage"] = rerun_parent_conf(
            backfill_facts(state.conf, plan, namespace=lineage.namespace)
        )
    reruns_by_step: dict[str, list[date]] = {}
    for run in work.dag_runs:
        reruns_by_step.setdefault(run.step_id, []).append(run.day)
    launch = RoundLaunch(index=index, slot=slot, spark=spark, reruns=reruns_by_step, rerun_conf=rerun_conf)
    reruns = round_reruns(
        launch, backfill_id=backfill_id, dag_ids={run.step_id: run.dag_id for run in work.dag_runs}
    )
    parts = chunked(list(range(len(reruns))), size=reruns_per_task(), max_chunks=max_map_length())
    launch = launch.with_chunks(
        RerunChunk(
            start=part[0],
            end=part[-1] + 1,
            label=_chunk_label(reruns[part[0] : part[-1] + 1]),
            outcomes_uri=sibling(plan_uri, f"rounds/{index}/reruns/{number}.json"),
        )
        for number, part in enumerate(parts)
    )
    task_log = task_logger(backfill_id=backfill_id, attempt=state.conf.attempt, trace_id=state.conf.trace_id)
    task_log.info(
        "round %d (slot %d of this run): spark steps %s; %d DAG reruns in %d tasks; blocked %s",
        index + 1,
        slot,
        work.spark_step_ids,
        len(reruns),
        len(launch.chunks),
        sorted(work.blocked),
    )
    if spark is None and len(launch.chunks) == 1:
        # A small DAG-only round (a lineage chain of DAGs is all such rounds): rerun it here
        # rather than in a second task process; dag_runs then maps over nothing.
        task_log.info(
            "round %d: %s rerun by this task (no Spark, one chunk)", index + 1, launch.chunks[0].label
        )
        ledger.record_dag_runs(work.dag_runs, _rerun_inline(ti, launch.chunks[0], reruns))
        launch = launch.with_reruns_done()
    state = state.with_ledger(ledger.entries).with_launched(launch)
    now = datetime.now(UTC)
    written = state.progress_written_at
    if index < state.rounds and (
        index == state.rounds - 1
        or written is None
        or (now - written).total_seconds() >= PROGRESS_EVERY_SECONDS
    ):
        from backfill_runtime.reporting import record_progress

        record_progress(backfill_id, ledger, plan=plan, round_index=index, rounds=state.rounds)
        state = state.with_progress_written(now)
    _push_state(ti, state)
    return [chunk.model_dump(mode="json") for chunk in launch.chunks]


def _rerun_inline(ti: Any, chunk: RerunChunk, reruns: list[Rerun]) -> dict[int, str]:
    """Rerun one chunk inside `prepare`, with the chunk task's retry policy (what failed is
    rerun after the retry delay, `task_retries` times); index -> the run's end state."""
    from backfill_runtime.reruns import ChunkOutcomes

    progress = ChunkOutcomes.read(chunk.outcomes_uri, run_id=ti.run_id)
    outcomes: dict[int, str] = {}
    for attempt in range(SHAPE.task_retries + 1):
        if attempt:
            time.sleep(min(SHAPE.retry_delay_seconds * 2 ** (attempt - 1), SHAPE.max_retry_delay_seconds))
        batch = _rerun_batch(ti, chunk.outcomes_uri, reruns, progress)
        outcomes = _run_batch(batch)
        progress = batch.progress
        if all(outcomes.get(i) == "success" for i in range(len(reruns))):
            break
    return {i: outcomes.get(i) or "not run" for i in range(len(reruns))}


def _rerun_batch(ti: Any, outcomes_uri: str, reruns: list[Rerun], progress: ChunkProgress) -> RerunBatch:
    """The batch of a chunk, going on from `progress` (what earlier tries left in its document)."""
    from backfill_runtime.options import api_outage_seconds
    from backfill_runtime.reruns import ChunkOutcomes, RerunBatch

    return RerunBatch(
        reruns,
        supervisor=_supervisor(),
        concurrency=SHAPE.max_parallel_dag_runs,
        poke_seconds=SHAPE.rerun_poke_seconds,
        progress=progress,
        checkpoint=lambda now: ChunkOutcomes.write(outcomes_uri, run_id=ti.run_id, progress=now),
        owner=(ti.dag_id, ti.run_id),
        outage_seconds=api_outage_seconds(),
    )


def _run_batch(batch: RerunBatch) -> dict[int, str]:
    """Run the batch; an API server gone for the whole outage budget fails the task for good:
    the run then ends FAILED and pages (by `finish`, or by the DAG's failure callback)."""
    from backfill_runtime.reruns import AirflowApiUnreachableError

    try:
        return batch.run()
    except AirflowApiUnreachableError as error:
        raise AirflowFailException(str(error)) from None


def _chunk_label(reruns: list[Rerun]) -> str:
    """The UI's name of a chunk task: `<dag> <date>`, or the first and last and how many."""
    first, last = reruns[0], reruns[-1]
    if len(reruns) == 1:
        return f"{first.trigger_dag_id} {first.logical_date}"
    return f"{first.trigger_dag_id} {first.logical_date} .. {last.trigger_dag_id} {last.logical_date} ({len(reruns)} runs)"


# -- the round's DAG reruns, one chunk per mapped task -----------------------------------------
@task(task_id="dag_runs", map_index_template="{{ rerun_label }}", max_active_tis_per_dag=1)
def dag_runs(slot: int, chunk: dict[str, Any]) -> dict[str, int]:
    """Rerun the chunk's (DAG, date) pairs, `max_parallel_dag_runs` at a time, and wait for
    them; fails (and is retried) when any ended failed. A retry reruns only what did not
    succeed in an earlier try and waits for what an earlier try started (the chunk's
    outcomes document). One chunk task per round slot
    runs at a time across all backfills (`max_active_tis_per_dag`), each with at most
    `max_parallel_dag_runs` DAG runs in flight."""
    from airflow.exceptions import AirflowException
    from backfill_runtime.reruns import ChunkOutcomes, round_reruns

    from backfill_orchestrator.contracts import RerunChunk

    context = get_current_context()
    ti = context["ti"]
    part = RerunChunk.model_validate(chunk)
    context["rerun_label"] = part.label  # type: ignore[typeddict-unknown-key]
    state = _pull_state(ti, _ids(slot)["prepare"])
    if state is None or state.launched is None:
        raise AirflowFailException(f"{_ids(slot)['prepare']} left no state: the round's reruns are unknown")
    dag_ids = {step_id: state.ledger[step_id].dag_id for step_id in state.launched.reruns}
    reruns = round_reruns(state.launched, backfill_id=state.backfill_id, dag_ids=dag_ids)[
        part.start : part.end
    ]
    # A later try (a retry, or a run again after a restart) goes on from what earlier ones did.
    progress = ChunkOutcomes.read(part.outcomes_uri, run_id=ti.run_id)
    ended = _run_batch(_rerun_batch(ti, part.outcomes_uri, reruns, progress))
    failed = [reruns[i].label for i, end in sorted(ended.items()) if end != "success"]
    if failed:
        raise AirflowException(
            f"{len(failed)} of {len(reruns)} reruns did not succeed: {', '.join(failed[:20])}"
        )
    return {"reruns": len(reruns)}


# -- the Spark submission, on the runner of the plan's profile ---------------------------------
@task(task_id="spark")
def spark(slot: int) -> dict[str, Any]:
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
    state = _pull_state(ti, _ids(slot)["prepare"])
    launch = state.launched if state is not None else None
    submission = launch.spark if launch is not None else None
    if state is None or launch is None or submission is None or state.spark_profile is None:
        raise AirflowSkipException("no spark steps in this round")
    try:
        warehouse = warehouse_uri()
        profile = profile_from(state.spark_profile)
        runner = build_runner(profile)
    except InvalidOptionError as error:
        raise AirflowFailException(str(error)) from None
    remove(submission.report_uri)  # a retry must not read the previous attempt's report
    job = JobSpec(
        name=f"backfill-{state.backfill_id}-round-{launch.index}-try-{ti.try_number}",
        plan_uri=submission.plan_uri,
        warehouse_uri=warehouse,
        report_uri=submission.report_uri,
        publish_policy_uri=submission.publish_policy_uri,
        publish_root=get_option("publish_root", "") or None,
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
    return {"runner": handle.runner, "run_id": handle.run_id, "profile": state.spark_profile["name"]}


# -- next_run: a continuation run when the plan has more rounds than this run's slots ---------
@task(task_id="next_run", trigger_rule="all_done")
def next_run() -> str | None:
    """Trigger `<first run id>__cont<k>` with the next round and the carried ledger, unless
    this run reached the plan's end. Idempotent: a retry after a crash gets 409 for the same
    run id, which means it is already continued. The status record names the new run first,
    so a cancel from then on fails the run that is live."""
    from airflow.exceptions import AirflowException
    from backfill_runtime.continuation import Carried, carried_uri, continuation_run_id, needs_continuation
    from backfill_runtime.reporting import Reporting
    from backfill_runtime.step_ledger import Ledger
    from backfill_runtime.supervisor import TriggerRefusedError

    from backfill_orchestrator.contracts import RunConf
    from backfill_orchestrator.documents import write_text

    ti = get_current_context()["ti"]
    start_state = _pull_state(ti, "start")
    if start_state is None:
        raise AirflowSkipException("the backfill did not start (see the start task)")
    first = start_state.first_round
    if not needs_continuation(first_round=first, slots=SHAPE.max_rounds, total=start_state.rounds):
        return None
    state = _state_at_end(ti, start_state)
    backfill_id, next_round = state.backfill_id, first + SHAPE.max_rounds
    reporting = Reporting.from_options()
    _check_still_running(reporting, backfill_id)
    run_id = continuation_run_id(ti.run_id, first_round=next_round, slots=SHAPE.max_rounds)
    uri = carried_uri(state.conf.plan_uri, run_id)
    carried = Carried(
        backfill_id=backfill_id,
        first_round=next_round,
        started_at=state.started_at,
        ledger=Ledger(state.ledger).to_dict(),
    )
    write_text(uri, carried.to_json())
    if reporting.store is not None:
        changes = {"dag_run_id": run_id}
        if url := reporting.run_url(ti.dag_id, run_id):
            changes["dag_run_url"] = url
        reporting.store.annotate(backfill_id, changes)
    conf = RunConf.model_validate({**state.conf.to_conf(), "first_round": next_round, "ledger_uri": uri})
    try:
        triggered = _supervisor().trigger_dag_run(
            dag_id=ti.dag_id, run_id=run_id, logical_date=None, conf=conf.to_conf()
        )
    except TriggerRefusedError as error:
        raise AirflowException(
            f"the continuation run {run_id} was not triggered: {error.error} {error.detail}"
        ) from None
    if not triggered:
        log.info("continuation run %s exists already (an earlier try triggered it)", run_id)
    log.info("rounds %d to %d continue in run %s", next_round + 1, state.rounds, run_id)
    return run_id


# -- finish: outcome, report, status, notifications -----------------------------------------
@task(task_id="finish", trigger_rule="all_done")
def finish() -> dict[str, Any]:
    ti = get_current_context()["ti"]
    continued = ti.xcom_pull(task_ids="next_run")
    if continued:  # before the imports below: a continued run's finish only steps aside
        raise AirflowSkipException(f"the backfill goes on in run {continued}, which reports its end")
    start_state = _pull_state(ti, "start")
    if start_state is None:
        raise AirflowFailException("the backfill did not start: see the start task's log")

    from backfill_runtime.reporting import Reporting, record_progress
    from backfill_runtime.step_ledger import Ledger

    from backfill_orchestrator.config import InvalidConfigError, parse_config
    from backfill_orchestrator.contracts import BackfillReport, StepStatus
    from backfill_orchestrator.documents import DocumentNotFoundError, read_text, sibling, write_text

    state = _state_at_end(ti, start_state)
    plan = _read_plan(state)
    ledger = Ledger(state.ledger)
    for step_id in ledger.with_status(StepStatus.PENDING):
        ledger.mark(step_id, StepStatus.FAILED, detail="never ran (the backfill stopped before its round)")
    plan_uri, config_uri = state.conf.plan_uri, state.conf.config_uri
    report = BackfillReport.build(
        backfill_id=state.backfill_id,
        dag_run_id=ti.run_id,
        steps=ledger.entries,
        spark_reports=[
            sibling(plan_uri, f"rounds/{i}/run_report.json")
            for i in range(state.rounds)
            if any(e.round == i and e.kind == "spark" for e in ledger.entries.values())
        ],
        written_at=datetime.now(UTC),
    )
    report_uri = sibling(plan_uri, "backfill_report.json")
    write_text(report_uri, report.to_json())
    try:
        config = parse_config(read_text(config_uri), source=config_uri)
    except (DocumentNotFoundError, InvalidConfigError):
        config = None
    record_progress(
        report.backfill_id, ledger, plan=plan, round_index=max(state.rounds - 1, 0), rounds=state.rounds
    )
    reporting = Reporting.from_options()
    warehouse = get_option("warehouse_uri", "")  # a deployment of DAG steps alone may have none
    reporting.finished(
        config=config,
        report=report,
        report_uri=report_uri,
        run_url=reporting.run_url(ti.dag_id, ti.run_id),
        result_uri=state.conf.result_uri,
        publish_location={"root": publish_root(warehouse), "warehouse": warehouse} if warehouse else None,
    )
    if (
        not report.awaiting_publish
    ):  # a held step keeps the claims: it replaces those partitions once published
        reporting.release_claims(report.backfill_id)  # after the terminal state: queued backfills may start
    _observe(state, plan, report, ti=ti)
    if not report.succeeded and not report.awaiting_publish:
        failed = ledger.with_status(StepStatus.FAILED)
        summary = report.figures.text(total_steps=len(report.steps))
        raise AirflowFailException(f"backfill {report.backfill_id} failed: steps {failed}; {summary}")
    return report.figures.model_dump(mode="json")


def _observe(state: RunState, plan: Plan, report: Any, *, ti: Any) -> None:
    """Lineage events (the Spark steps as child runs, then the backfill's COMPLETE/FAIL) and the
    run's metrics. Never raises: observability must not change a backfill's outcome."""
    from backfill_runtime.observability import backfill_facts, lineage_emitter, metrics_sink, report_metrics
    from backfill_runtime.reporting import readable_run_reports

    from backfill_orchestrator.lineage_events import backfill_finished, dag_reruns, spark_steps

    task_log = task_logger(
        backfill_id=report.backfill_id, attempt=state.conf.attempt, trace_id=state.conf.trace_id
    )
    sink = metrics_sink(dimensions={"dag_id": ti.dag_id})
    lineage = lineage_emitter(metrics=sink, logger=task_log)
    if lineage.enabled:
        facts = backfill_facts(state.conf, plan, namespace=lineage.namespace)
        unread = "no lineage events for the spark steps of %s"
        for run_report in readable_run_reports(report, logger=task_log, unread=unread):
            spark_steps(lineage, facts, run_report, warehouse=run_report.warehouse)
        for step_id, outcome in report.steps.items():
            if outcome.kind == "airflow_dag" and outcome.dates:
                dates = {day.isoformat(): ended for day, ended in outcome.dates.items()}
                dag_reruns(lineage, facts, step_id=step_id, dag_id=outcome.dag_id, dates=dates)
        failed = [p.step for p in report.problems]
        ended = report.succeeded or report.awaiting_publish  # held: the attempt ran; a person decides
        reason = None if ended else f"steps not succeeded: {', '.join(failed)}"[:2000]
        backfill_finished(lineage, facts, "COMPLETE" if ended else "FAIL", reason=reason)
        task_log.info("OpenLineage: %d events sent, %d failed", lineage.sent, lineage.failed)
    seconds = (datetime.now(UTC) - state.started_at).total_seconds()
    try:
        report_metrics(sink, report.figures, seconds=seconds)
        sink.flush()
    except Exception as error:  # a metrics backend problem is logged, never fails the run
        task_log.warning("metrics not sent: %s: %s", type(error).__name__, error)


# -- the run failed: make sure the backfill's record says so --------------------------------
def _report_unreported_failure(context: Any) -> None:
    """The DAG's `on_failure_callback`. Airflow's dag-processor runs it when a run fails, with
    no need for the API server; it reports the failure when no task did (see
    `Reporting.unreported_failure`), so a backfill never stays RUNNING after its run failed.
    Never raises: it is the last word on a run that has already ended."""
    from backfill_runtime.reporting import Reporting

    from backfill_orchestrator.contracts.run_conf import backfill_id_of

    run_id = str(context.get("run_id") or getattr(context.get("dag_run"), "run_id", "") or "")
    conf = getattr(context.get("dag_run"), "conf", None) or {}
    backfill_id = backfill_id_of(conf) or backfill_id_of({"backfill_id": run_id.split("__", 1)[0]})
    if backfill_id is None:
        log.warning("run %s failed; no backfill id in its conf or run id: nothing to report", run_id)
        return
    last_task = getattr(context.get("ti"), "task_id", None)
    reason = str(context.get("reason") or "failed") + (f"; last task {last_task}" if last_task else "")
    try:
        reporting = Reporting.from_options()
        if reporting.unreported_failure(
            backfill_id=backfill_id,
            dag_run_id=run_id,
            reason=reason,
            run_url=reporting.run_url(DAG_ID, run_id),
            result_uri=conf.get("result_uri") if isinstance(conf, dict) else None,
        ):
            log.error(
                "backfill %s: run %s failed before it reported; recorded FAILED and paged",
                backfill_id,
                run_id,
            )
    except Exception:  # the dag-processor logs it; nothing else can be done here
        log.exception("backfill %s: the failure of run %s could not be reported", backfill_id, run_id)


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
    on_failure_callback=_report_unreported_failure,
) as dag:
    previous: Any = start()
    round_ends: list[Any] = []
    for index in range(SHAPE.max_rounds):
        with TaskGroup(group_id=f"round_{index}"):
            planned = prepare(index)
            previous >> planned
            spark_task = spark(index)
            planned >> spark_task
            reruns = dag_runs.partial(slot=index).expand(chunk=planned)
        previous = [spark_task, reruns]
        round_ends += previous
    # Every round's ends, not only the last slot's: `start` skips the slots a run does not use,
    # and a skipped slot must not let next_run start while an earlier round still runs.
    round_ends >> next_run() >> finish()
