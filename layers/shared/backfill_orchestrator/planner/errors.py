"""Why a plan is refused: the config is valid, but no safe plan follows from it."""

from __future__ import annotations

from collections.abc import Sequence

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.errors import PolicyRefusal


class PlanRefusedError(PolicyRefusal):
    """Base of every refusal. The message says why, naming the jobs."""


class UnknownRootJobError(PlanRefusedError):
    def __init__(self, jobs: Sequence[JobRef]):
        self.jobs = list(jobs)
        names = ", ".join(str(job) for job in self.jobs)
        plural = "s" if len(self.jobs) > 1 else ""
        super().__init__(
            f"unknown root job{plural}: Marquez has no job {names} (namespace/name); check jobs in the config"
        )


class UnaddressableRootJobError(PlanRefusedError):
    """A root job Marquez cannot look up by node id (its namespace has a plain ':'): asking would
    read another job's lineage or a misleading 404. `location` is the first root's `jobs[i]`."""

    def __init__(self, jobs: Sequence[JobRef], *, locations: Sequence[str], reasons: Sequence[str]):
        self.jobs = list(jobs)
        self.locations = list(locations)
        self.location = self.locations[0]
        located = "; ".join(
            f"{location}: {reason}" for location, reason in zip(self.locations, reasons, strict=True)
        )
        super().__init__(f"{located}. Start the backfill from jobs whose namespace Marquez can address")


class UnreadableDownstreamError(PlanRefusedError):
    """The lineage reaches a job Marquez cannot look up by node id and what lies beyond it is
    needed: a plan would silently stop at that job, so none is made."""

    def __init__(self, job: JobRef, *, hops: int, reason: str):
        self.jobs = [job]
        self.hops = hops
        super().__init__(
            f"{reason}. No plan is made rather than one that silently stops at {job}: set "
            f"downstream.max_depth to {hops - 1} to stop before it, or give its namespace a name Marquez can address"
        )


class LineageCycleError(PlanRefusedError):
    """The steps' dependencies go round: no order runs each after everything it reads."""

    def __init__(self, jobs: Sequence[JobRef]):
        self.jobs = list(jobs)  # in cycle order; the first is not repeated at the end
        path = " -> ".join(str(job) for job in [*self.jobs, self.jobs[0]])
        super().__init__(
            f"lineage cycle: {path}; no step can run after all of its inputs. "
            "Exclude a job of the cycle (downstream.exclude) or fix the lineage"
        )


class StepConflictError(PlanRefusedError):
    """Two jobs map to one step id but disagree on how it runs (kind, DAG or transform)."""

    def __init__(self, step_id: str, first: JobRef, second: JobRef, detail: str):
        self.step_id = step_id
        self.jobs = [first, second]
        super().__init__(
            f"jobs {first} and {second} both map to step {step_id!r} but {detail}; "
            "give them distinct dag_id/transform entries in the job catalog"
        )


class NotPlannableError(PlanRefusedError):
    """A config without lineage to plan (mode replay)."""
