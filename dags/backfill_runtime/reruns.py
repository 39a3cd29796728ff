"""Rerun DAGs for dates, many from one task: trigger each run, or clear the run that already
exists for that logical date, then wait for all of them with bounded concurrency.

Airflow's dag_run table is unique on (dag_id, run_id) and on (dag_id, logical_date). The
standard TriggerDagRunOperator's `reset_dag_run` only resolves a run-id collision (409 ->
clear that run id); a scheduled or manual run for the same date under another run id would
make the trigger fail. So before triggering we look the date up and, when a run exists, take
its run id: the trigger then answers 409 and the existing run is cleared and rerun, never
duplicated. On task retries the same happens again for what did not succeed.

Exactly once across tries: a chunk writes down each rerun it is about to trigger (the run id
and, for an existing run, how many times it had been cleared) before it sends the trigger. A
later try of the task (a retry, or Airflow running the task again after it lost it in a
restart) finds them: a rerun whose trigger took effect (the new run exists, or the existing
run was cleared since) is waited for, never cleared a second time; only one whose trigger was
never sent is triggered. An Airflow API server that cannot be reached does not fail the chunk:
its reruns keep running and it polls again, up to `[backfill] api_outage_seconds`, then fails.

One task reruns a whole chunk (`RerunBatch`), not one (DAG, date): on the LocalExecutor and
Celery every task instance is a process, so 1,000 reruns as 1,000 mapped tasks would cost
1,000 processes, and Airflow maps at most `[core] max_map_length` (1024) of them. Everything
goes through the task's supervisor (tasks cannot reach the metadata DB in Airflow 3): the same
messages TriggerDagRunOperator sends, through `backfill_runtime.supervisor`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from datetime import time as clock_time
from typing import TYPE_CHECKING, Any

from backfill_orchestrator.errors import ServiceError
from backfill_runtime.supervisor import AirflowApiUnavailableError, SupervisorClient, TriggerRefusedError

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


class AirflowApiUnreachableError(ServiceError, RuntimeError):
    """Airflow's API server answered none of a chunk's requests for its whole outage budget."""


@dataclass(frozen=True, kw_only=True)
class StartedRun:
    """A rerun a chunk triggers, written down before the trigger is sent: `dag_run_id` is the
    run it creates or clears; `clear_number` is how many times that existing run had been
    cleared before (None: the run is new). A later try compares them with the run it finds."""

    dag_run_id: str
    clear_number: int | None = None


@dataclass(frozen=True)
class ChunkProgress:
    """What a chunk knows: the reruns that ended (index -> the DAG run's end state) and the
    ones it triggered, or was about to trigger, that have not ended yet."""

    outcomes: dict[int, str] = field(default_factory=dict)
    started: dict[int, StartedRun] = field(default_factory=dict)


class RerunBatch:
    """Rerun `reruns` with at most `concurrency` DAG runs in flight, polling every
    `poke_seconds`. `progress` is what earlier tries of the task left (its document): reruns
    already `success` are not rerun, and the ones they started are waited for, not started
    again (see the module's docstring). `checkpoint` is called with the progress before every
    batch of triggers, now and then (at most every `checkpoint_seconds`) and at the end unless
    every rerun succeeded. `owner` is the backfill's own DAG run `(dag_id, run_id)`: before
    starting more reruns the batch checks it is still running, so a cancelled backfill (its
    run failed by the cancel) never starts the reruns that were waiting their turn. Requests
    that cannot reach the API server are tried again every poke for `outage_seconds`; then
    AirflowApiUnreachableError."""

    def __init__(
        self,
        reruns: Sequence[Rerun],
        *,
        supervisor: SupervisorClient,
        concurrency: int,
        poke_seconds: float,
        progress: ChunkProgress | None = None,
        checkpoint: Callable[[ChunkProgress], None] | None = None,
        checkpoint_seconds: float = 30.0,
        owner: tuple[str, str] | None = None,
        outage_seconds: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        earlier = progress or ChunkProgress()
        self.reruns = list(reruns)
        self.supervisor = supervisor
        self.concurrency = max(1, concurrency)
        self.poke_seconds = poke_seconds
        self.outcomes: dict[int, str] = {i: s for i, s in earlier.outcomes.items() if s == "success"}
        self.started: dict[int, StartedRun] = {
            i: run for i, run in earlier.started.items() if self.outcomes.get(i) != "success"
        }
        self.checkpoint = checkpoint
        self.checkpoint_seconds = checkpoint_seconds
        self.owner = owner
        self.outage_seconds = outage_seconds
        self.sleep = sleep
        self.monotonic = monotonic
        self._fresh: set[str] | None = None  # DAGs with no run at the batch's dates
        self._unsure: set[int] = set(self.started)  # written down; did the trigger take effect?
        self._last_checkpoint = monotonic()

    @property
    def progress(self) -> ChunkProgress:
        return ChunkProgress(outcomes=dict(self.outcomes), started=dict(self.started))

    def run(self) -> dict[int, str]:
        waiting = [i for i in range(len(self.reruns)) if self.outcomes.get(i) != "success"]
        waiting = [i for i in waiting if i not in self._unsure]
        waiting.reverse()  # pop() from the end keeps the plan's order
        in_flight: dict[int, str] = {}
        outage_since: float | None = None
        try:
            while waiting or in_flight or self._unsure:
                try:
                    self._cycle(waiting, in_flight)
                    outage_since = None
                except AirflowApiUnavailableError as error:
                    now = self.monotonic()
                    outage_since = now if outage_since is None else outage_since
                    if now - outage_since >= self.outage_seconds:
                        raise AirflowApiUnreachableError(
                            f"Airflow's API server has not answered for {now - outage_since:.0f} s"
                            f" ([backfill] api_outage_seconds = {self.outage_seconds:.0f}); {len(in_flight)}"
                            f" reruns were in flight and {len(waiting) + len(self._unsure)} not started: {error}"
                        ) from error
                    log.warning(
                        "Airflow's API server is unreachable (%s); %d reruns in flight keep running,"
                        " trying again in %.0f s (gives up after %.0f s)",
                        error,
                        len(in_flight),
                        self.poke_seconds,
                        self.outage_seconds,
                    )
                    self.sleep(self.poke_seconds)
        finally:
            # All succeeded: the task's success says it all, nothing to write (the common case).
            if self.checkpoint and any(self.outcomes.get(i) != "success" for i in range(len(self.reruns))):
                self.checkpoint(self.progress)
        return dict(self.outcomes)

    def _cycle(self, waiting: list[int], in_flight: dict[int, str]) -> None:
        """Settle what earlier tries (or an outage) left unsure, start what fits, wait a poke,
        collect what ended. Any request may raise AirflowApiUnavailableError; the state stays
        consistent, so the next cycle goes on from there."""
        if self._fresh is None:
            self._fresh = self._dags_without_runs(waiting)
        self._settle_unsure(in_flight)
        self._start_more(waiting, in_flight)
        if not in_flight:
            return
        self.sleep(self.poke_seconds)
        for index, state in self._ended(in_flight):
            self.outcomes[index] = state
            self.started.pop(index, None)
            log.info("%s (run %s): %s", self.reruns[index].label, in_flight.pop(index), state)
        if self.checkpoint and self.monotonic() - self._last_checkpoint >= self.checkpoint_seconds:
            self._save()

    def _save(self) -> None:
        if self.checkpoint:
            self.checkpoint(self.progress)
            self._last_checkpoint = self.monotonic()

    def _owner_running(self) -> bool:
        if self.owner is None:
            return True
        return self.supervisor.run_state(*self.owner) == "running"

    def _settle_unsure(self, in_flight: dict[int, str]) -> None:
        """Reruns written down whose trigger may not have been sent: wait for the run when the
        trigger took effect, trigger it otherwise (unless the backfill's run has stopped)."""
        not_sent = []
        for index in sorted(self._unsure):
            if self._took_effect(index):
                run_id = self.started[index].dag_run_id
                log.info(
                    "%s: run %s was started by an earlier try; waiting for it",
                    self.reruns[index].label,
                    run_id,
                )
                in_flight[index] = run_id
                self._unsure.discard(index)
            else:
                not_sent.append(index)
        if not not_sent:
            return
        if not self._owner_running():
            log.warning("the backfill's run is no longer running: %d reruns not started", len(not_sent))
            for index in not_sent:
                self._unsure.discard(index)
                self.started.pop(index, None)
            return
        for index in not_sent:
            self._trigger(index, in_flight)

    def _start_more(self, waiting: list[int], in_flight: dict[int, str]) -> None:
        room = self.concurrency - len(in_flight) - len(self._unsure)
        if not waiting or room <= 0:
            return
        # Also before the first start: a retry of the batch (the prepare task's next try of its
        # inline reruns) may begin after a cancel failed the backfill's run.
        if not self._owner_running():
            log.warning(
                "the backfill's run is no longer running: %d waiting reruns not started", len(waiting)
            )
            waiting.clear()
            return
        batch = waiting[-room:][::-1]
        intents = {
            index: self._intent(index) for index in batch
        }  # lookups first: nothing changes if they fail
        del waiting[-len(batch) :]
        self.started.update(intents)
        self._unsure.update(batch)
        self._save()  # written down before any trigger is sent
        for index in batch:
            self._trigger(index, in_flight)

    def _intent(self, index: int) -> StartedRun:
        """The run the trigger will create, or the existing run (and its clear count) it clears."""
        rerun = self.reruns[index]
        existing = None
        if rerun.trigger_dag_id not in (self._fresh or set()):
            existing = self.supervisor.run_at(rerun.trigger_dag_id, logical_date_of(rerun.logical_date[:10]))
        if existing is None:
            return StartedRun(dag_run_id=rerun.trigger_run_id)
        log.info("%s has run %s: clearing and rerunning it", rerun.label, existing.run_id)
        return StartedRun(dag_run_id=existing.run_id, clear_number=existing.clear_number)

    def _took_effect(self, index: int) -> bool:
        """Whether the trigger of a written-down rerun happened: the new run exists, or the
        existing run was cleared since it was written down."""
        rerun, started = self.reruns[index], self.started[index]
        found = self.supervisor.run_at(rerun.trigger_dag_id, logical_date_of(rerun.logical_date[:10]))
        if found is None or found.run_id != started.dag_run_id:
            return False
        return started.clear_number is None or found.clear_number > started.clear_number

    def _trigger(self, index: int, in_flight: dict[int, str]) -> None:
        """Trigger (or clear) the written-down run; a refusal is that rerun's outcome `failed`."""
        rerun, run_id = self.reruns[index], self.started[index].dag_run_id
        try:  # an existing run of that id (409) is cleared by reset_dag_run: rerun either way
            self.supervisor.trigger_dag_run(
                dag_id=rerun.trigger_dag_id,
                run_id=run_id,
                logical_date=logical_date_of(rerun.logical_date[:10]),
                conf=rerun.conf,
                reset_dag_run=True,
            )
        except TriggerRefusedError as error:
            log.error("%s: the trigger was refused: %s %s", rerun.label, error.error, error.detail)
            self.outcomes[index] = "failed"
            self.started.pop(index, None)
        else:
            in_flight[index] = run_id
        self._unsure.discard(index)

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
    """A chunk's progress beside the plan (`{"run_id": ..., "outcomes": {"<index in chunk>":
    state}, "started": {"<index>": {"dag_run_id": ..., "clear_number": ...}}}`): a later try of
    the chunk task skips what succeeded and waits for what an earlier try started, and the next
    round's ledger reads each (DAG, date)'s end from it. A document of another DAG run (an
    earlier attempt wrote the same key) counts as none."""

    @staticmethod
    def read(uri: str, *, run_id: str) -> ChunkProgress:
        import json

        from backfill_orchestrator.documents import DocumentNotFoundError, read_text

        try:
            document = json.loads(read_text(uri))
        except DocumentNotFoundError:
            return ChunkProgress()
        except ValueError as error:
            log.warning("%s is not readable (%s): taken as no outcomes", uri, error)
            return ChunkProgress()
        if not isinstance(document, dict) or document.get("run_id") != run_id:
            return ChunkProgress()
        try:
            return ChunkProgress(
                outcomes={int(key): str(value) for key, value in (document.get("outcomes") or {}).items()},
                started={
                    int(key): StartedRun(
                        dag_run_id=str(value["dag_run_id"]),
                        clear_number=None
                        if value.get("clear_number") is None
                        else int(value["clear_number"]),
                    )
                    for key, value in (document.get("started") or {}).items()
                },
            )
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            log.warning("%s is not readable (%s): taken as no outcomes", uri, error)
            return ChunkProgress()

    @staticmethod
    def write(uri: str, *, run_id: str, progress: ChunkProgress) -> None:
        import json

        from backfill_orchestrator.documents import write_text

        document = {
            "run_id": run_id,
            "outcomes": {str(k): v for k, v in sorted(progress.outcomes.items())},
            "started": {
                str(k): {"dag_run_id": run.dag_run_id, "clear_number": run.clear_number}
                for k, run in sorted(progress.started.items())
            },
        }
        write_text(uri, json.dumps(document))
