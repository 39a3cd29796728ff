"""Rerun DAGs for dates, many from one task: trigger each run, or clear the run that already
exists for that logical date, then wait for all of them with bounded concurrency.

Airflow's dag_run table is unique on (dag_id, run_id) and on (dag_id, logical_date). The
standard TriggerDagRunOperator's `reset_dag_run` only resolves a run-id collision (409 ->
clear that run id); a scheduled or manual run for the same date under another run id would
make the trigger fail. So before triggering we look the date up and, when a run exists, take
its run id: the trigger then answers 409 and the existing run is cleared and rerun, never
duplicated. On task retries the same happens again for what did not succeed.

One task reruns a whole chunk (`RerunBatch`), not one (DAG, date): on the LocalExecutor and
Celery every task instance is a process, so 1,000 reruns as 1,000 mapped tasks would cost
1,000 processes, and Airflow maps at most `[core] max_map_length` (1024) of them. Everything
goes through the task's supervisor (tasks cannot reach the metadata DB in Airflow 3): the same
messages TriggerDagRunOperator sends, through `backfill_runtime.supervisor`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from datetime import time as clock_time
from typing import TYPE_CHECKING, Any

from backfill_runtime.supervisor import SupervisorClient, TriggerRefusedError

if TYPE_CHECKING:
    from backfill_orchestrator.contracts import RoundLaunch

log = logging.getLogger(__name__)
DONE_STATES = frozenset({"success", "failed"})  # a DAG run's terminal states


def logical_date_of(day: date | str) -> datetime:
    """A step date D reruns the DAG's run whose logical date is D at 00:00 UTC."""
    value = date.fromisoformat(day) if isinstance(day, str) else day
    return datetime.combine(value, clock_time(0), tzinfo=UTC)


def new_run_id(*, backfill_id: str, day: date | str) -> str:
    return f"backfill__{backfill_id}__{day if isinstance(day, str) else day.isoformat()}"


@dataclass(frozen=True, kw_only=True)
class Rerun:
    """One rerun of one DAG for one date, as a chunk task drives it."""

    trigger_dag_id: str
    trigger_run_id: str  # used when the date has no run yet
    logical_date: str  # ISO date
    conf: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.trigger_dag_id} {self.logical_date[:10]}"


def round_reruns(launch: RoundLaunch, *, backfill_id: str, dag_ids: Mapping[str, str]) -> list[Rerun]:
    """The reruns of the round `launch` started, in the order its chunks count them: the
    round's conf plus the step, a new run id for a date that has no run yet."""
    return [
        Rerun(
            trigger_dag_id=dag_ids[step_id],
            trigger_run_id=new_run_id(backfill_id=backfill_id, day=day),
            logical_date=day.isoformat(),
            conf={**launch.rerun_conf, "step": step_id},
        )
        for step_id, day in launch.rerun_requests()
    ]


class RerunBatch:
    """Rerun `reruns` with at most `concurrency` DAG runs in flight, polling every
    `poke_seconds`. `outcomes` (index -> DAG run state) is what is known so far: entries
    already `success` (an earlier try of the same task) are not rerun. `checkpoint` is called
    with the outcomes now and then (at most every `checkpoint_seconds`) and at the end unless
    every rerun succeeded. `owner` is the backfill's own DAG run `(dag_id, run_id)`: before
    starting more reruns the batch checks it is still running, so a cancelled backfill (its
    run failed by the cancel) never starts the reruns that were waiting their turn."""

    def __init__(
        self,
        reruns: Sequence[Rerun],
        *,
        supervisor: SupervisorClient,
        concurrency: int,
        poke_seconds: float,
        outcomes: Mapping[int, str] | None = None,
        checkpoint: Callable[[dict[int, str]], None] | None = None,
        checkpoint_seconds: float = 30.0,
        owner: tuple[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.reruns = list(reruns)
        self.supervisor = supervisor
        self.concurrency = max(1, concurrency)
        self.poke_seconds = poke_seconds
        self.outcomes: dict[int, str] = {i: s for i, s in (outcomes or {}).items() if s == "success"}
        self.checkpoint = checkpoint
        self.checkpoint_seconds = checkpoint_seconds
        self.owner = owner
        self.sleep = sleep
        self.monotonic = monotonic
        self._fresh: set[str] = set()  # DAGs with no run at the batch's dates

    def run(self) -> dict[int, str]:
        waiting = [i for i in range(len(self.reruns)) if self.outcomes.get(i) != "success"]
        self._fresh = self._dags_without_runs(waiting)
        waiting.reverse()  # pop() from the end keeps the plan's order
        in_flight: dict[int, str] = {}
        last_checkpoint = self.monotonic()
        try:
            while waiting or in_flight:
                # Also before the first start: a retry of the batch (the prepare task's next try
                # of its inline reruns) may begin after a cancel failed the backfill's run.
                if waiting and len(in_flight) < self.concurrency and not self._owner_running():
                    log.warning(
                        "the backfill's run is no longer running: %d waiting reruns not started", len(waiting)
                    )
                    waiting.clear()
                    continue
                while waiting and len(in_flight) < self.concurrency:
                    index = waiting.pop()
                    run_id = self._start(index)
                    if run_id is not None:
                        in_flight[index] = run_id
                if not in_flight:
                    continue
                self.sleep(self.poke_seconds)
                for index, state in self._ended(in_flight):
                    self.outcomes[index] = state
                    log.info("%s (run %s): %s", self.reruns[index].label, in_flight.pop(index), state)
                if self.checkpoint and self.monotonic() - last_checkpoint >= self.checkpoint_seconds:
                    self.checkpoint(dict(self.outcomes))
                    last_checkpoint = self.monotonic()
        finally:
            # All succeeded: the task's success says it all, nothing to write (the common case).
            if self.checkpoint and any(self.outcomes.get(i) != "success" for i in range(len(self.reruns))):
                self.checkpoint(dict(self.outcomes))
        return dict(self.outcomes)

    def _owner_running(self) -> bool:
        if self.owner is None:
            return True
        return self.supervisor.run_state(*self.owner) == "running"

    def _start(self, index: int) -> str | None:
        """Trigger (or clear) the run; its run id, or None with the outcome `failed`."""
        rerun = self.reruns[index]
        logical_date = logical_date_of(rerun.logical_date[:10])
        run_id = None
        if rerun.trigger_dag_id not in self._fresh:
            run_id = self.supervisor.run_id_at(rerun.trigger_dag_id, logical_date)
        if run_id is not None:
            log.info("%s has run %s: clearing and rerunning it", rerun.label, run_id)
        run_id = run_id or rerun.trigger_run_id
        try:  # an existing run of that id (409) is cleared by reset_dag_run: rerun either way
            self.supervisor.trigger_dag_run(
                dag_id=rerun.trigger_dag_id,
                run_id=run_id,
                logical_date=logical_date,
                conf=rerun.conf,
                reset_dag_run=True,
            )
        except TriggerRefusedError as error:
            log.error("%s: the trigger was refused: %s %s", rerun.label, error.error, error.detail)
            self.outcomes[index] = "failed"
            return None
        return run_id

    def _dags_without_runs(self, indexes: list[int]) -> set[str]:
        """DAGs with no run at any of the batch's dates (one count per DAG): their reruns
        skip the per-date lookup for a run to clear."""
        dates: dict[str, set[datetime]] = {}
        for index in indexes:
            rerun = self.reruns[index]
            dates.setdefault(rerun.trigger_dag_id, set()).add(logical_date_of(rerun.logical_date[:10]))
        return {
            dag_id
            for dag_id, days in dates.items()
            if self.supervisor.count_runs(dag_id, logical_dates=sorted(days)) == 0
        }

    def _ended(self, in_flight: Mapping[int, str]) -> list[tuple[int, str]]:
        """The in-flight reruns that ended, and how. One count per DAG first (how many of its
        runs ended), then single lookups only until that many are found: polling 100 runs
        costs a request per DAG, not 100, while none ends."""
        by_dag: dict[str, list[int]] = {}
        for index in in_flight:
            by_dag.setdefault(self.reruns[index].trigger_dag_id, []).append(index)
        ended: list[tuple[int, str]] = []
        for dag_id, indexes in by_dag.items():
            run_ids = sorted({in_flight[i] for i in indexes})
            count = self.supervisor.count_runs(dag_id, run_ids=run_ids, states=sorted(DONE_STATES))
            found = 0
            for index in indexes:
                if found >= count:
                    break
                state = self.supervisor.run_state(dag_id, in_flight[index])
                if state in DONE_STATES:
                    ended.append((index, state))
                    found += 1
        return ended


class ChunkOutcomes:
    """A chunk's outcomes so far (`{"run_id": ..., "outcomes": {"<index in chunk>": state}}`
    beside the plan): a retry of the chunk task skips what succeeded, and the next round's
    ledger reads each (DAG, date)'s end from it. A document of another DAG run (an earlier
    attempt wrote the same key) counts as none."""

    @staticmethod
    def read(uri: str, *, run_id: str) -> dict[int, str]:
        import json

        from backfill_orchestrator.documents import DocumentNotFoundError, read_text

        try:
            document = json.loads(read_text(uri))
        except DocumentNotFoundError:
            return {}
        except ValueError as error:
            log.warning("%s is not readable (%s): taken as no outcomes", uri, error)
            return {}
        if not isinstance(document, dict) or document.get("run_id") != run_id:
            return {}
        return {int(key): str(value) for key, value in (document.get("outcomes") or {}).items()}

    @staticmethod
    def write(uri: str, *, run_id: str, outcomes: Mapping[int, str]) -> None:
        import json

        from backfill_orchestrator.documents import write_text

        write_text(
            uri, json.dumps({"run_id": run_id, "outcomes": {str(k): v for k, v in sorted(outcomes.items())}})
        )
