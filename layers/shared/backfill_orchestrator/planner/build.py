"""From a config and lineage to a plan: what must rerun, for which dates, in which order.

Steps, in order:
1. Collect lineage down to `max_depth` hops from the roots (`fetch_downstream`).
2. Reach: the jobs downstream of the roots within `max_depth`, not passing excluded jobs.
3. Group reached jobs into steps (the catalog maps each to a DAG or a Spark transform; the
   task jobs of one DAG become one step).
4. Order: a step waits for the nearest steps upstream of it (looking through jobs dropped by
   exclusions); waves are longest-path layers; a cycle refuses the plan.
5. Dates: roots take the config's days; a step takes every day its upstream steps rerun,
   widened by its window (day d affects d..d+window-1), never past today.

Everything is linear in jobs + edges (+ steps x days for the dates), so it scales to lineage
graphs of tens of thousands of jobs. Jobs and steps are numbered once (`reach.Reach`,
`_Steps`) and the rest works on lists indexed by number; day sets are shared
(`cascade.cascade_dates`). tests/unit/test_planner_golden.py holds the plans byte for byte."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.config.model import BackfillConfig, JobRef
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.lineage.errors import (
    UnaddressableJobError,
    UnknownJobError,
    UnwalkableLineageError,
    unaddressable_reason,
)
from backfill_orchestrator.lineage.gcpause import paused_gc
from backfill_orchestrator.lineage.graph import JobInfo, JobKey, LineageGraph
from backfill_orchestrator.lineage.source import LineageSource, job_names_of
from backfill_orchestrator.lineage.walk import depth_to_ask, fetch_downstream
from backfill_orchestrator.planner.cascade import cascade_dates
from backfill_orchestrator.planner.catalog import JobCatalog, StepTarget
from backfill_orchestrator.planner.document import plan_model
from backfill_orchestrator.planner.errors import (
    LineageCycleError,
    NotPlannableError,
    StepConflictError,
    UnaddressableRootJobError,
    UnknownRootJobError,
    UnreadableDownstreamError,
    closest_job,
)
from backfill_orchestrator.planner.order import CycleFoundError, waves
from backfill_orchestrator.planner.reach import Reach

MAX_NAMED_IN_WARNING = 5


def build_plan(
    config: BackfillConfig,
    *,
    backfill_id: str,
    lineage: LineageSource,
    catalog: JobCatalog | None = None,
    today: date | None = None,
    now: datetime | None = None,
) -> Plan:
    """The plan for a batch config. Pure given the lineage source.

    Raises PlanRefusedError (UnknownRootJobError, UnaddressableRootJobError,
    UnreadableDownstreamError, LineageCycleError, StepConflictError, NotPlannableError);
    lineage errors (MarquezUnavailableError, ...) pass through."""
    with paused_gc():
        return _build_plan(
            config, backfill_id=backfill_id, lineage=lineage, catalog=catalog, today=today, now=now
        )


def downstream_depth(config: BackfillConfig) -> int:
    """How many hops downstream of the roots the plan reaches (0: the roots alone)."""
    downstream = config.effective_downstream
    return downstream.max_depth if downstream.enabled else 0


def first_lineage_query(config: BackfillConfig) -> tuple[JobRef, int] | None:
    """The lineage query `build_plan` starts with (its first root, at the depth it asks), so a
    caller may send it ahead, side by side with other work; None for a config with no plan."""
    if config.mode != "batch" or not config.jobs:
        return None
    return config.jobs[0], depth_to_ask(0, max_depth=downstream_depth(config))


def _build_plan(
    config: BackfillConfig,
    *,
    backfill_id: str,
    lineage: LineageSource,
    catalog: JobCatalog | None,
    today: date | None,
    now: datetime | None,
) -> Plan:
    if config.mode != "batch" or not config.jobs:
        raise NotPlannableError(
            f"{config.name}: mode {config.mode} has no jobs to plan; only batch configs have a plan"
        )
    catalog = catalog if catalog is not None else JobCatalog.empty()
    now = now or datetime.now(UTC)
    today = today or datetime.now(UTC).date()
    downstream = config.effective_downstream
    max_depth = downstream_depth(config)
    roots = list(dict.fromkeys(job.key for job in config.jobs))

    try:
        graph = fetch_downstream(lineage, config.jobs, max_depth=max_depth)
    except UnknownJobError as error:
        raise UnknownRootJobError(error.jobs, suggestions=_suggestions(lineage, error.jobs)) from None
    except UnaddressableJobError as error:
        raise UnaddressableRootJobError(
            error.jobs,
            locations=[f"jobs[{config.jobs.index(job)}]" for job in error.jobs],
            reasons=[unaddressable_reason(job) for job in error.jobs],
        ) from None
    except UnwalkableLineageError as error:
        raise UnreadableDownstreamError(error.job, hops=error.hops, reason=str(error)) from None

    excluded = {job.key for job in downstream.exclude} if downstream.enabled else set()
    reach = Reach(graph, roots, max_depth)  # everything within max_depth, numbered
    planned, planned_hops = reach.planned(excluded.difference(roots))

    steps = _Steps(graph, catalog, reach.keys)
    steps.add_all(planned)
    step_of = steps.step_of

    data_upstream: list[set[int]] = [set() for _ in steps.ids]
    through_excluded: dict[int, set[int]] = {}  # order only, from steps behind excluded jobs
    beyond = _PlannedBeyond(reach.readers, step_of)
    cut: dict[JobKey, list[JobKey]] = {}
    warn_cut = downstream.enabled
    for job in planned:
        step = step_of[job]
        for reader in reach.readers[job]:
            reader_step = step_of[reader]
            if reader_step >= 0:
                if reader_step != step:  # edges inside one DAG (task to task) order nothing
                    data_upstream[reader_step].add(step)
            else:
                for later in beyond.of(reader):
                    if step_of[later] != step:
                        through_excluded.setdefault(step_of[later], set()).add(step)
        if warn_cut and planned_hops[job] == max_depth:
            cut_readers = [
                reach.keys[r] for r in reach.readers[job] if step_of[r] < 0 and reach.keys[r] not in excluded
            ]
            cut_readers += [key for key in reach.beyond.get(job, ()) if key not in excluded]
            if cut_readers:
                cut[reach.keys[job]] = cut_readers

    order_upstream = list(data_upstream)  # the same sets, but for the few steps behind excluded jobs
    for step, parents in through_excluded.items():
        order_upstream[step] = parents | data_upstream[step]
    try:
        ordered = waves(order_upstream, names=steps.ids)
    except CycleFoundError as cycle:
        raise LineageCycleError([steps.job_of(steps.number[step_id]) for step_id in cycle.cycle]) from None

    root_steps = {step_of[root] for root in range(len(roots))}
    dates = cascade_dates(
        ordered,
        data_upstream,
        windows=[target.window_days for target in steps.targets],
        root_steps=root_steps,
        root_days=config.days,
        today=today,
    )

    hours = list(config.hours) if config.hours is not None else None
    feeds = list(config.feeds) if config.feeds is not None else None
    ids, targets, keys, as_dates = steps.ids, steps.targets, reach.keys, _DateLists()

    def step_document(step: int) -> dict:
        target = targets[step]
        members = steps.members[step]
        if len(members) == 1 and target.kind == "spark":
            namespace, name = keys[members[0]]
        else:
            namespace, name = steps.job_key(step)
        return {
            "id": ids[step],
            "job": {"namespace": namespace, "name": name},
            "dag_id": target.dag_id,
            "kind": target.kind,
            "transform": target.transform,
            "window_days": target.window_days,
            "dates": as_dates(dates[step]),
            "hours": hours,
            "feeds": feeds,
            "reason": "root" if step in root_steps else "downstream",
            "upstream": sorted([ids[parent] for parent in order_upstream[step]])
            if order_upstream[step]
            else [],
        }

    head = {
        "backfill_id": backfill_id,
        "name": config.name,
        "owner": config.owner,
        "created_at": now,
        "roots": [job.model_dump() for job in config.jobs],
        "dates": config.days,
        "hours": hours,
        "feeds": feeds,
        "spark_profile": config.effective_spark.profile,
        "exclusions": _exclusions(config, excluded, roots, reach, planned, max_depth),
        "warnings": _warnings(config, roots, cut, max_depth),
    }
    return plan_model(head, [[step_document(step) for step in wave] for wave in ordered])


class _Steps:
    """Planned jobs grouped by the step the catalog maps them to; steps are numbered in the
    order their first job was planned."""

    def __init__(self, graph: LineageGraph, catalog: JobCatalog, keys: Sequence[JobKey]):
        self._jobs = graph.jobs
        self._catalog = catalog
        self._keys = keys
        self.ids: list[str] = []
        self.number: dict[str, int] = {}
        self.targets: list[StepTarget] = []
        self.members: list[list[int]] = []
        self.step_of: list[int] = [-1] * len(keys)  # job number -> step number, -1: not planned

    def add_all(self, planned: Iterable[int]) -> None:
        keys, jobs, target_for, number, step_of = (
            self._keys,
            self._jobs,
            self._catalog.target_for,
            self.number,
            self.step_of,
        )
        ids, targets, members = self.ids, self.targets, self.members
        for job in planned:
            key = keys[job]
            target = target_for(jobs.get(key) or JobInfo(*key))
            step = number.get(target[0])  # target.step_id
            if step is None:
                step = number[target[0]] = len(ids)
                ids.append(target[0])
                targets.append(target)
                members.append([job])
            else:
                self._join(step, job, target)
            step_of[job] = step

    def _join(self, step: int, job: int, target: StepTarget) -> None:
        known = self.targets[step]
        if (known.kind, known.dag_id) != (target.kind, target.dag_id):
            first, key = self._keys[self.members[step][0]], self._keys[job]
            raise StepConflictError(
                target.step_id,
                JobRef(namespace=first[0], name=first[1]),
                JobRef(namespace=key[0], name=key[1]),
                f"one is {known.kind} of DAG {known.dag_id!r}, the other {target.kind} of DAG {target.dag_id!r}",
            )
        if target.window_days > known.window_days:  # a DAG reruns whole: its widest task wins
            self.targets[step] = known._replace(window_days=target.window_days)
        self.members[step].append(job)

    def job_key(self, step: int) -> JobKey:
        """The job a step stands for: the DAG's job for airflow_dag steps (task jobs collapse
        into it), the lineage job itself for spark steps."""
        members = self.members[step]
        namespace, name = (
            self._keys[members[0]] if len(members) == 1 else min(self._keys[job] for job in members)
        )
        target = self.targets[step]
        return (namespace, target.dag_id if target.kind == "airflow_dag" else name)

    def job_of(self, step: int) -> JobRef:
        namespace, name = self.job_key(step)
        return JobRef(namespace=namespace, name=name)


class _PlannedBeyond:
    """For a job dropped by exclusions: the nearest planned jobs downstream of it (looking
    through other dropped jobs), so steps still wait for what lies behind an excluded job."""

    def __init__(self, readers: Sequence[Sequence[int]], step_of: Sequence[int]):
        self._readers, self._step_of = readers, step_of
        self._memo: dict[int, list[int]] = {}

    def of(self, start: int) -> list[int]:
        if start in self._memo:
            return self._memo[start]
        found: dict[int, None] = {}
        seen = {start}
        stack = [start]
        while stack:
            for reader in self._readers[stack.pop()]:
                if reader in seen:
                    continue
                seen.add(reader)
                if self._step_of[reader] >= 0:
                    found[reader] = None
                else:
                    stack.append(reader)
        self._memo[start] = list(found)
        return self._memo[start]


class _DateLists:
    """Sorted `date` lists of day sets, one list per distinct set and one `date` per day: steps
    downstream of the same days share them (a plan of 50,000 steps has ~500,000 dates)."""

    def __init__(self) -> None:
        self._lists: dict[frozenset[int], list[date]] = {}
        self._days: dict[int, date] = {}

    def __call__(self, days: frozenset[int]) -> list[date]:
        found = self._lists.get(days)
        if found is None:
            found = self._lists[days] = [self._day(day) for day in sorted(days)]
        return found

    def _day(self, ordinal: int) -> date:
        found = self._days.get(ordinal)
        if found is None:
            found = self._days[ordinal] = date.fromordinal(ordinal)
        return found


def _suggestions(lineage: LineageSource, jobs: Sequence[JobRef]) -> dict[JobKey, str]:
    """For each unknown job, the nearest name its namespace has, when the source can list them."""
    names_of: dict[str, list[str]] = {}
    found: dict[JobKey, str] = {}
    for job in jobs:
        if job.namespace not in names_of:
            names_of[job.namespace] = job_names_of(lineage, job.namespace)
        close = closest_job(job, names_of[job.namespace])
        if close is not None:
            found[job.key] = close
    return found


def _job(key: JobKey) -> dict[str, str]:
    return {"namespace": key[0], "name": key[1]}


def _exclusions(
    config: BackfillConfig,
    excluded: set[JobKey],
    roots: Sequence[JobKey],
    reach: Reach,
    planned: Sequence[int],
    max_depth: int,
) -> list[dict]:
    out: list[dict] = []
    for job in config.effective_downstream.exclude if excluded else ():
        if job.key in roots:
            continue  # a root is planned anyway; a warning says so
        if job.key in reach.number:
            reason = "downstream.exclude: downstream of the roots, not rerun"
        else:
            reason = (
                f"downstream.exclude: not downstream of the roots within max_depth {max_depth}; no effect"
            )
        out.append({"job": job.model_dump(), "reason": reason})
    if len(planned) < len(reach.keys):
        planned_keys = {reach.keys[job] for job in planned}
        dropped = sorted(key for key in reach.keys if key not in planned_keys and key not in excluded)
        for key in dropped:
            out.append({"job": _job(key), "reason": "downstream only through excluded jobs, not rerun"})
    return out


def _names(keys: Sequence[JobKey]) -> str:
    shown = ", ".join(f"{namespace}/{name}" for namespace, name in keys[:MAX_NAMED_IN_WARNING])
    more = len(keys) - MAX_NAMED_IN_WARNING
    return shown + (f" and {more} more" if more > 0 else "")


def _warnings(
    config: BackfillConfig, roots: Sequence[JobKey], cut: dict[JobKey, list[JobKey]], max_depth: int
) -> list[dict]:
    out: list[dict] = []
    downstream = config.effective_downstream
    if downstream.enabled:
        for job in downstream.exclude:
            if job.key in roots:
                out.append(
                    {
                        "code": "root_excluded",
                        "message": f"{job} is both a root (jobs) and in downstream.exclude; it is planned as a root",
                        "jobs": [job.model_dump()],
                    }
                )
    if cut:
        where = sorted(cut)
        beyond = sorted({reader for readers in cut.values() for reader in readers})
        out.append(
            {
                "code": "max_depth_reached",
                "message": (
                    f"downstream.max_depth {max_depth} cut the walk after {_names(where)}: "
                    f"not planned beyond it: {_names(beyond)}. Raise max_depth to include them"
                ),
                "jobs": [_job(key) for key in where],
            }
        )
    return out
