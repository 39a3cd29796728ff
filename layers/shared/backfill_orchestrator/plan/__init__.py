"""The plan document (`plan_version: 1`): what the trigger stores and the DAG runs."""

from backfill_orchestrator.plan.model import (
    PLAN_VERSION,
    Exclusion,
    Plan,
    PlanStep,
    PlanWarning,
    StepKind,
    Wave,
)

__all__ = ["PLAN_VERSION", "Exclusion", "Plan", "PlanStep", "PlanWarning", "StepKind", "Wave"]
