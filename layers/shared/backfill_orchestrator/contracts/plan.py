"""Plan document, version 1 (documented in docs/planner.md, "The plan document").

A plan is a list of waves; each wave a list of steps that may run side by side once every
earlier wave has finished. A step is one Airflow DAG rerun for its dates (`airflow_dag`) or
one transform of the generic Spark job (`spark`). The document is JSON; these models read
and write it for every component (trigger Lambda, Spark job, DAG)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Final, Literal

from pydantic import Field, model_validator

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.publish import PublishPolicy

PLAN_VERSION: Final = 1
StepKind = Literal["spark", "airflow_dag"]


class PlanStep(Contract):
    id: str = Field(
        description="Unique in the plan: the dag_id for airflow_dag steps, the transform for spark steps"
    )
    job: JobRef = Field(
        description="The lineage job this step stands for (a DAG's task jobs collapse into one step)"
    )
    dag_id: str
    kind: StepKind
    transform: str | None = Field(default=None, description="spark only: the registered transform name")
    window_days: int = Field(default=1, ge=1, description="A changed input day affects this many days")
    dates: list[date]
    hours: list[int] | None = Field(default=None, description="None: the whole day")
    feeds: list[str] | None = Field(default=None, description="None: every feed")
    reason: Literal["root", "downstream"]
    upstream: list[str] = Field(
        default_factory=list, description="ids of the plan steps that pulled this one in"
    )

    @model_validator(mode="after")
    def _spark_has_transform(self) -> PlanStep:
        if self.kind == "spark" and not self.transform:
            raise ValueError(f"step {self.id}: a spark step needs a transform")
        return self


class Wave(Contract):
    index: int = Field(ge=0)
    steps: list[PlanStep]


class Exclusion(Contract):
    job: JobRef
    reason: str


class PlanWarning(Contract):
    code: str
    message: str
    jobs: list[JobRef] = Field(default_factory=list)


class Plan(Contract, document_name="plan", version_field="plan_version", max_bytes=64 * 1024 * 1024):
    plan_version: Literal[1] = PLAN_VERSION
    backfill_id: str
    name: str
    owner: str
    created_at: datetime
    roots: list[JobRef]
    dates: list[date] = Field(description="The config's days (the union of its dates)")
    hours: list[int] | None = None
    feeds: list[str] | None = None
    spark_profile: str = Field(
        default="medium",
        pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$",
        description="A profile of the deployment's list",
    )
    waves: list[Wave]
    exclusions: list[Exclusion] = Field(default_factory=list)
    warnings: list[PlanWarning] = Field(default_factory=list)
    estimate: dict[str, Any] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,  # plans without one keep their bytes
        description="The preflight's estimate (docs/planner.md, 'Preflight'); each figure says measured or assumed",
    )
    publish_policy: PublishPolicy | None = Field(
        default=None,
        exclude_if=lambda value: value is None,  # plans without one keep their bytes
        description="The publish policy the Spark job applies: the deployment's, narrowed by the "
        "config's `publish:`; null: PublishPolicy's defaults",
    )

    @model_validator(mode="after")
    def _steps_unique_and_ordered(self) -> Plan:
        seen: dict[str, int] = {}
        for wave in self.waves:
            for step in wave.steps:
                if step.id in seen:
                    raise ValueError(f"step {step.id} appears twice")
                for parent in step.upstream:
                    if seen.get(parent, wave.index) >= wave.index:
                        raise ValueError(
                            f"step {step.id} depends on {parent}, which is not in an earlier wave"
                        )
                seen[step.id] = wave.index
        return self

    # -- convenience -----------------------------------------------------------------
    @property
    def steps(self) -> list[PlanStep]:
        return [step for wave in self.waves for step in wave.steps]

    def step(self, step_id: str) -> PlanStep:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)
