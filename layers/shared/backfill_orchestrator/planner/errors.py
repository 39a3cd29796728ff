"""Why a plan is refused: the config is valid, but no safe plan follows from it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from backfill_orchestrator.config.model import BackfillConfig, JobRef
from backfill_orchestrator.errors import ConfigIssue, PolicyRefusal


class PlanRefusedError(PolicyRefusal):
    """Base of every refusal. The message says why, naming the jobs."""

    def issues(self, config: BackfillConfig) -> list[ConfigIssue]:
        """The refusal as located issues: `jobs[i]` for the named root jobs when there are
        some (the trigger's result file and the CLI say the same), else `jobs`."""
        jobs = getattr(self, "jobs", None) or []
        keys = [job.key for job in (config.jobs or [])]
        located = [f"jobs[{keys.index(job.key)}]" for job in jobs if job.key in keys]
        return [ConfigIssue(", ".join(dict.fromkeys(located)) or "jobs", str(self))]


def closest_job(job: JobRef, names: Sequence[str]) -> str | None:
    """The known job name (of the same namespace) nearest to `job`'s, if one is near enough."""
    close = difflib.get_close_matches(job.name, list(names), n=1, cutoff=0.6)
    return close[0] if close else None


class UnknownRootJobError(PlanRefusedError):
    """Root jobs Marquez does not know; `suggestions` maps a job's key to the nearest name
    Marquez knows in its namespace (when the lineage source can list them)."""

    def __init__(self, jobs: Sequence[JobRef], *, suggestions: Mapping[tuple[str, str], str] | None = None):
        self.jobs = list(jobs)
        self.suggestions = dict(suggestions or {})
        names = ", ".join(str(job) for job in self.jobs)
        plural = "s" if len(self.jobs) > 1 else ""
        hints = "".join(f"; {self._hint(job)}" for job in self.jobs if job.key in self.suggestions)
        super().__init__(
            f"unknown root job{plural}: Marquez has no job {names} (namespace/name){hints}; check jobs in the config"
        )

    def _hint(self, job: JobRef) -> str:
        return f"did you mean {job.namespace + '/' + self.suggestions[job.key]!r}?"

    def issues(self, config: BackfillConfig) -> list[ConfigIssue]:
        """One issue per unknown root, at its own `jobs[i]`, with its suggestion."""
        keys = [job.key for job in (config.jobs or [])]
        out = []
        for job in self.jobs:
            where = f"jobs[{keys.index(job.key)}]" if job.key in keys else "jobs"
            hint = f"; {self._hint(job)}" if job.key in self.suggestions else ""
            out.append(ConfigIssue(where, f"unknown root job: Marquez has no job {job}{hint}"))
        return out


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
