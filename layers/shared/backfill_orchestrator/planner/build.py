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
graphs of tens of thousands of jobs."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, date, datetime

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
from backfill_orchestrator.lineage.source import LineageSource
from backfill_orchestrator.lineage.walk import fetch_downstream
from backfill_orchestrator.planner.catalog import JobCatalog, StepTarget
from backfill_orchestrator.planner.errors import (
    LineageCycleError,
    NotPlannableError,
    StepConflictError,
    UnaddressableRootJobError,
    UnknownRootJobError,
    UnreadableDownstreamError,
)
from backfill_orchestrator.planner.order import CycleFoundError, waves

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
        return _build_plan(config, backfill_id=backfill_id, lineage=lineage, catalog=catalog, today=today, now=now)


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
        raise NotPlannableError(f"{config.name}: mode {config.mode} has no jobs to plan; only batch configs have a plan")
    catalog = catalog if catalog is not None else JobCatalog.empty()
    now = now or datetime.now(UTC)
    today = today or datetime.now(UTC).date()
    downstream = config.effective_downstream
    max_depth = downstream.max_depth if downstream.enabled else 0
    roots = list(dict.fromkeys(job.key for job in config.jobs))

    try:
        graph = fetch_downstream(lineage, config.jobs, max_depth=max_depth)
    except UnknownJobError as error:
        raise UnknownRootJobError(error.jobs) from None
    except UnaddressableJobError as error:
        raise UnaddressableRootJobError(
            error.jobs,
            locations=[f"jobs[{config.jobs.index(job)}]" for job in error.jobs],
            reasons=[unaddressable_reason(job) for job in error.jobs],
        ) from None
    except UnwalkableLineageError as error:
        raise UnreadableDownstreamError(error.job, hops=error.hops, reason=str(error)) from None

    excluded = {job.key for job in downstream.exclude} if downstream.enabled else set()
    reached = _reach(graph, roots, max_depth, blocked=())  # everything within max_depth
    planned = _reach(graph, roots, max_depth, blocked=excluded.difference(roots))

    steps = _Steps(graph, catalog)
    for key in planned:
        steps.add(key)

    data_upstream: dict[str, set[str]] = {step_id: set() for step_id in steps.targets}
    order_upstream: dict[str, set[str]] = {step_id: set() for step_id in steps.targets}
    beyond = _PlannedBeyond(graph, planned, reached)
    cut: dict[JobKey, list[JobKey]] = {}
    for key, hops in planned.items():
        step_id = steps.step_of[key]
        for reader in graph.consumers.get(key, ()):
            if reader in planned:
                reader_step = steps.step_of[reader]
                if reader_step != step_id:  # edges inside one DAG (task to task) order nothing
                    data_upstream[reader_step].add(step_id)
            elif reader in reached:
                for later in beyond.of(reader):
                    if steps.step_of[later] != step_id:
                        order_upstream[steps.step_of[later]].add(step_id)
            if hops == max_depth and downstream.enabled and reader not in planned and reader not in excluded:
                cut.setdefault(key, []).append(reader)

    for step_id, parents in data_upstream.items():
        order_upstream[step_id] |= parents
    try:
        ordered = waves(steps.targets, order_upstream)
    except CycleFoundError as cycle:
        raise LineageCycleError([steps.job_of(step_id) for step_id in cycle.cycle]) from None

    root_steps = {steps.step_of[key] for key in roots}
    dates = _cascade_dates(
        ordered,
        data_upstream,
        windows={step_id: target.window_days for step_id, target in steps.targets.items()},
        root_steps=root_steps,
        root_days=config.days,
        today=today,
    )

    hours = list(config.hours) if config.hours is not None else None
    feeds = list(config.feeds) if config.feeds is not None else None
    document = {
        "backfill_id": backfill_id,
        "name": config.name,
        "owner": config.owner,
        "created_at": now,
        "roots": [job.model_dump() for job in config.jobs],
        "dates": config.days,
        "hours": hours,
        "feeds": feeds,
        "spark_profile": config.effective_spark.profile,
        "waves": [
            {
                "index": index,
                "steps": [
                    {
                        "id": step_id,
                        "job": _job(steps.job_key(step_id)),
                        "dag_id": steps.targets[step_id].dag_id,
                        "kind": steps.targets[step_id].kind,
                        "transform": steps.targets[step_id].transform,
                        "window_days": steps.targets[step_id].window_days,
                        "dates": [date.fromordinal(day) for day in sorted(dates[step_id])],
                        "hours": hours,
                        "feeds": feeds,
                        "reason": "root" if step_id in root_steps else "downstream",
                        "upstream": sorted(order_upstream[step_id]),
                    }
                    for step_id in wave
                ],
            }
            for index, wave in enumerate(ordered)
        ],
        "exclusions": _exclusions(config, excluded, roots, reached, planned, max_depth),
        "warnings": _warnings(config, roots, cut, max_depth),
    }
    # One validation of the whole document: pydantic-core checks it far faster than step by step.
    return Plan.model_validate(document)


def _reach(
    graph: LineageGraph, roots: Sequence[JobKey], max_depth: int, *, blocked: Collection[JobKey]
) -> dict[JobKey, int]:
    """Jobs within `max_depth` hops downstream of the roots (breadth first: the fewest hops),
    never entering a blocked job."""
    hops = {root: 0 for root in roots}
    queue = deque(roots)
    while queue:
        key = queue.popleft()
        if hops[key] == max_depth:
            continue
        for reader in graph.consumers.get(key, ()):
            if reader not in hops and reader not in blocked:
                hops[reader] = hops[key] + 1
                queue.append(reader)
    return hops


class _Steps:
    """Planned jobs grouped by the step the catalog maps them to."""

    def __init__(self, graph: LineageGraph, catalog: JobCatalog):
        self._graph = graph
        self._catalog = catalog
        self.targets: dict[str, StepTarget] = {}
        self.members: dict[str, list[JobKey]] = {}
        self.step_of: dict[JobKey, str] = {}

    def add(self, key: JobKey) -> None:
        info = self._graph.jobs.get(key) or JobInfo(*key)
        target = self._catalog.target_for(info)
        known = self.targets.get(target.step_id)
        if known is None:
            self.targets[target.step_id] = target
            self.members[target.step_id] = [key]
        else:
            if (known.kind, known.dag_id) != (target.kind, target.dag_id):
                first = self.members[target.step_id][0]
                raise StepConflictError(
                    target.step_id,
                    JobRef(namespace=first[0], name=first[1]),
                    JobRef(namespace=key[0], name=key[1]),
                    f"one is {known.kind} of DAG {known.dag_id!r}, the other {target.kind} of DAG {target.dag_id!r}",
                )
            if target.window_days > known.window_days:  # a DAG reruns whole: its widest task wins
                self.targets[target.step_id] = known._replace(window_days=target.window_days)
            self.members[target.step_id].append(key)
        self.step_of[key] = target.step_id

    def job_key(self, step_id: str) -> JobKey:
        """The job a step stands for: the DAG's job for airflow_dag steps (task jobs collapse
        into it), the lineage job itself for spark steps."""
        members = self.members[step_id]
        namespace, name = members[0] if len(members) == 1 else min(members)
        target = self.targets[step_id]
        return (namespace, target.dag_id if target.kind == "airflow_dag" else name)

    def job_of(self, step_id: str) -> JobRef:
        namespace, name = self.job_key(step_id)
        return JobRef(namespace=namespace, name=name)


class _PlannedBeyond:
    """For a job dropped by exclusions: the nearest planned jobs downstream of it (looking
    through other dropped jobs), so steps still wait for what lies behind an excluded job."""

    def __init__(self, graph: LineageGraph, planned: Collection[JobKey], reached: Collection[JobKey]):
        self._graph, self._planned, self._reached = graph, planned, reached
        self._memo: dict[JobKey, list[JobKey]] = {}

    def of(self, start: JobKey) -> list[JobKey]:
        if start in self._memo:
            return self._memo[start]
        found: dict[JobKey, None] = {}
        seen = {start}
        stack = [start]
        while stack:
            for reader in self._graph.consumers.get(stack.pop(), ()):
                if reader in seen:
                    continue
                seen.add(reader)
                if reader in self._planned:
                    found[reader] = None
                elif reader in self._reached:
                    stack.append(reader)
        self._memo[start] = list(found)
        return self._memo[start]


def _cascade_dates(
    ordered: list[list[str]],
    data_upstream: dict[str, set[str]],
    *,
    windows: dict[str, int],
    root_steps: set[str],
    root_days: Iterable[date],
    today: date,
) -> dict[str, set[int]]:
    """Day ordinals per step, upstream first: roots rerun the config's days; a step reruns
    every day its upstream steps rerun, widened by its window, never past today."""
    base = {day.toordinal() for day in root_days}
    last = today.toordinal()
    dates: dict[str, set[int]] = {}
    for wave in ordered:
        for step_id in wave:
            window = windows[step_id]
            days: set[int] = set()
            for parent in data_upstream[step_id]:
                if window == 1:
                    days |= dates[parent]
                else:
                    for day in dates[parent]:
                        days.update(range(day, day + window))
            if window > 1:
                days = {day for day in days if day <= last}
            dates[step_id] = days | base if step_id in root_steps else days
    return dates


def _job(key: JobKey) -> dict[str, str]:
    return {"namespace": key[0], "name": key[1]}


def _exclusions(
    config: BackfillConfig,
    excluded: set[JobKey],
    roots: Sequence[JobKey],
    reached: dict[JobKey, int],
    planned: dict[JobKey, int],
    max_depth: int,
) -> list[dict]:
    out: list[dict] = []
    for job in config.effective_downstream.exclude if excluded else ():
        if job.key in roots:
            continue  # a root is planned anyway; a warning says so
        if job.key in reached:
            reason = "downstream.exclude: downstream of the roots, not rerun"
        else:
            reason = f"downstream.exclude: not downstream of the roots within max_depth {max_depth}; no effect"
        out.append({"job": job.model_dump(), "reason": reason})
    dropped = sorted(key for key in reached if key not in planned and key not in excluded)
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
                out.append({
                    "code": "root_excluded",
                    "message": f"{job} is both a root (jobs) and in downstream.exclude; it is planned as a root",
                    "jobs": [job.model_dump()],
                })
    if cut:
        where = sorted(cut)
        beyond = sorted({reader for readers in cut.values() for reader in readers})
        out.append({
            "code": "max_depth_reached",
            "message": (
                f"downstream.max_depth {max_depth} cut the walk after {_names(where)}: "
                f"not planned beyond it: {_names(beyond)}. Raise max_depth to include them"
            ),
            "jobs": [_job(key) for key in where],
        })
    return out
