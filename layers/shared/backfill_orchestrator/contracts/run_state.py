"""The state of one `backfill` DAG run, handed from task to task as one XCom value.

`start` writes the first one; each round's `prepare` reads the one before it, settles the round
that ran (its Spark run report and its reruns' ends go into the ledger), plans its own round and
writes the next; the round's `spark` and `dag_runs` tasks read it, and `next_run` and `finish`
read the last one. A state is immutable: a task derives the next one with the `with_...`
methods and writes it once, at its end, so a task that failed leaves no state and the tasks
after it say so rather than guess.

What is big stays in documents referenced by URI: the plan (`conf.plan_uri`, read again by the
tasks that need it and checked against `plan_sha256`), each round's Spark sub-plan and run
report, each chunk of reruns' outcomes. The state carries the ledger (one `StepOutcome` per
step) and what the round in flight launched; it is bounded by `max_bytes`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime
from typing import Any, Literal

from pydantic import Field

from backfill_orchestrator._compat import Self
from backfill_orchestrator.contracts.backfill_report import StepOutcome
from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.fields import DocumentUri
from backfill_orchestrator.contracts.run_conf import RunConf

MAX_RUN_STATE_BYTES = 4 * 1024 * 1024


class SparkSubmission(Contract):
    """A round's one submission of the generic Spark job."""

    plan_uri: DocumentUri = Field(description="The round's sub-plan: its runnable spark steps")
    report_uri: DocumentUri = Field(description="Where the job writes its run report")
    step_ids: list[str] = Field(min_length=1)
    publish_policy_uri: DocumentUri | None = Field(
        default=None,
        description="The plan's publish policy for the job (--publish-policy); null: its defaults",
    )


class RerunChunk(Contract):
    """One mapped `dag_runs` task: the round's reruns `start` to `end - 1`."""

    start: int = Field(ge=0)
    end: int = Field(ge=1)
    label: str = Field(
        description="The task's name in the UI: `<dag> <date>`, or the first and last and how many"
    )
    outcomes_uri: DocumentUri = Field(
        description="The chunk's outcomes so far (a retry and the next round read them)"
    )


class RoundLaunch(Contract):
    """What a round's `prepare` started; the next task that reads the state settles it."""

    index: int = Field(ge=0, description="The plan's round")
    slot: int = Field(ge=0, description="This run's round slot: the task group round_<slot>")
    spark: SparkSubmission | None = None
    reruns: dict[str, list[date]] = Field(
        default_factory=dict,
        description="airflow_dag step -> the dates the chunk tasks rerun, in order: chunk ranges count through them",
    )
    rerun_conf: dict[str, Any] = Field(
        default_factory=dict, description="Every rerun's conf (plus its `step`)"
    )
    chunks: list[RerunChunk] = Field(default_factory=list)

    def rerun_requests(self) -> Iterator[tuple[str, date]]:
        """(step id, date) in the order the chunks' ranges count them."""
        for step_id, days in self.reruns.items():
            for day in days:
                yield step_id, day

    def with_chunks(self, chunks: Iterable[RerunChunk]) -> Self:
        return self.model_copy(update={"chunks": list(chunks)})

    def with_reruns_done(self) -> Self:
        """The reruns ran inside `prepare`: no chunk task runs them, nothing is left to settle."""
        return self.model_copy(update={"reruns": {}, "chunks": []})


class RunState(
    Contract,
    document_name="backfill DAG run state",
    version_field="state_version",
    max_bytes=MAX_RUN_STATE_BYTES,
):
    state_version: Literal[1] = 1
    conf: RunConf = Field(description="The run's conf as `start` checked it")
    plan_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="The plan document `start` read")
    rounds: int = Field(ge=0, description="The plan's rounds (backfill_orchestrator.planner.plan_rounds)")
    first_round: int = Field(ge=0, description="The plan round this run's slot 0 runs")
    end_round: int = Field(
        ge=0, description="This run runs rounds first_round to end_round - 1; a continuation the rest"
    )
    started_at: datetime = Field(
        description="When the backfill's first run started (a continuation keeps it)"
    )
    spark_profile: dict[str, Any] | None = Field(
        default=None,
        description="The plan's Spark profile as resolved at start ({name, runner, ...}); None: no spark step",
    )
    ledger: dict[str, StepOutcome] = Field(description="Every step's outcome after the rounds settled so far")
    launched: RoundLaunch | None = Field(default=None, description="The round in flight, not settled yet")
    progress_written_at: datetime | None = Field(
        default=None, description="When this run last wrote the status record's progress"
    )

    @property
    def backfill_id(self) -> str:
        return self.conf.backfill_id

    @property
    def slots_used(self) -> int:
        return self.end_round - self.first_round

    # -- the next state: each returns a new one, this one is unchanged ------------------------------
    def with_ledger(self, ledger: Mapping[str, StepOutcome]) -> Self:
        return self.model_copy(update={"ledger": dict(ledger)})

    def with_launched(self, launch: RoundLaunch | None) -> Self:
        return self.model_copy(update={"launched": launch})

    def with_settled(self, ledger: Mapping[str, StepOutcome]) -> Self:
        """The round in flight is done: its outcomes are in `ledger`."""
        return self.model_copy(update={"ledger": dict(ledger), "launched": None})

    def with_progress_written(self, at: datetime) -> Self:
        return self.model_copy(update={"progress_written_at": at})

    def to_xcom(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
