"""Why lineage could not be read: one exception per failure mode."""

from __future__ import annotations

from collections.abc import Sequence

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.errors import BackfillError, PolicyRefusal, ServiceError
from backfill_orchestrator.lineage.graph import job_node_id
from backfill_orchestrator.lineage.nodeid import marquez_reads_job_as


class LineageError(BackfillError):
    """Base of every lineage failure."""


class UnknownJobError(LineageError, PolicyRefusal):
    """Marquez has no such job (404). Names every job it was asked about and did not know."""

    def __init__(self, jobs: Sequence[JobRef]):
        self.jobs = list(jobs)
        self.job = self.jobs[0]
        names = ", ".join(f"{job.name!r} in namespace {job.namespace!r}" for job in self.jobs)
        super().__init__(f"unknown job{'s' if len(self.jobs) > 1 else ''}: Marquez has no job {names}")


class UnaddressableJobError(LineageError, PolicyRefusal):
    """Marquez cannot look the job up by node id: it reads `job:<namespace>:<name>` as another
    job (a namespace with a plain colon, see `nodeid`). Raised before asking, never a 404."""

    def __init__(self, jobs: Sequence[JobRef]):
        self.jobs = list(jobs)
        self.job = self.jobs[0]
        super().__init__("; ".join(unaddressable_reason(job) for job in self.jobs))


def unaddressable_reason(job: JobRef) -> str:
    """Why Marquez cannot find `job` by node id, naming what it would look up instead."""
    node_id = job_node_id(job.namespace, job.name)
    read = marquez_reads_job_as(job.namespace, job.name)
    misread = f"job {read[1]!r} in namespace {read[0]!r}" if read else "nothing (it fails on the id)"
    return (
        f"job {job.name!r} in namespace {job.namespace!r} cannot be looked up in Marquez by node id: "
        f"Marquez reads {node_id!r} as {misread}, because it splits node ids at the first ':' "
        "not followed by '//' or a digit"
    )


class UnwalkableLineageError(LineageError, PolicyRefusal):
    """The lineage reaches a job Marquez cannot look up by node id, and what lies downstream of
    it is needed: the walk cannot be completed, so a plan would silently stop at that job."""

    def __init__(self, job: JobRef, *, hops: int):
        self.job = job
        self.jobs = [job]
        self.hops = hops
        super().__init__(
            f"the lineage reaches {job} ({hops} hop{'s' if hops != 1 else ''} downstream of the roots), "
            f"whose consumers cannot be read: {unaddressable_reason(job)}"
        )


class MarquezUnavailableError(LineageError, ServiceError):
    """Marquez could not be reached, or kept failing (timeouts, connection errors, 429, 5xx) after retries."""

    def __init__(self, base_url: str, detail: str):
        self.base_url = base_url
        super().__init__(f"Marquez at {base_url} is unavailable: {detail}")


class MarquezTimeoutError(MarquezUnavailableError):
    """The invocation's time budget ran out before Marquez answered (slow rather than down)."""

    def __init__(self, base_url: str, budget: float, detail: str = ""):
        self.base_url = base_url
        self.budget = budget
        text = f"Marquez did not answer within {budget:.1f} s, the time this attempt allowed ({base_url})"
        Exception.__init__(self, f"{text}: {detail}" if detail else text)


class MarquezResponseError(LineageError, ServiceError):
    """Marquez answered, but not with a lineage graph (an unexpected status, not JSON, a malformed graph)."""

    def __init__(self, base_url: str, detail: str):
        self.base_url = base_url
        super().__init__(f"unexpected answer from Marquez at {base_url}: {detail}")


class InvalidMarquezUrlError(LineageError, ServiceError, ValueError):
    """The configured Marquez URL is not an http(s) URL."""


class LineageChangedError(LineageError, ServiceError):
    """A job seen in one answer was unknown in the next: the lineage changed while being read."""

    def __init__(self, job: JobRef):
        self.job = job
        super().__init__(
            f"job {job.name!r} in namespace {job.namespace!r} was in Marquez's lineage a moment ago and is "
            "unknown now: the lineage changed while the plan was being made; try again"
        )
