"""The run report: what the job did, per step, for the DAG and the notifications to read.

Written as JSON next to the plan (`run_report.json`) unless told otherwise."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Literal

REPORT_VERSION = 1
StepStatus = Literal["succeeded", "failed", "skipped"]


@dataclass(frozen=True)
class StepResult:
    id: str
    transform: str
    wave: int
    status: StepStatus
    seconds: float
    rows_in: int = 0
    rows_in_by_input: dict[str, int] = field(default_factory=dict)
    rows_out: int = 0
    partitions_written: list[str] = field(default_factory=list)  # `day=.../hour=.../feed=...`
    partitions_deleted: list[str] = field(default_factory=list)  # in scope, no rows any more
    error: str | None = None  # failed: what went wrong
    blocked_by: list[str] = field(default_factory=list)  # skipped: the upstream steps that did not succeed

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


@dataclass(frozen=True)
class RunReport:
    backfill_id: str
    plan: str
    warehouse: str
    application_id: str
    started_at: str
    finished_at: str
    seconds: float
    steps: list[StepResult]
    external_steps: list[str]  # non-spark steps of the plan, taken as done (the DAG orders kinds)
    report_version: int = REPORT_VERSION

    @property
    def status(self) -> Literal["succeeded", "failed"]:
        return "succeeded" if all(step.succeeded for step in self.steps) else "failed"

    def step(self, step_id: str) -> StepResult:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["status"] = self.status
        for step in data["steps"]:
            step["partitions_written_count"] = len(step["partitions_written"])
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"
