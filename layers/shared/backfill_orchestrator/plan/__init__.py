"""The plan document (`plan_version: 1`): what the trigger stores and the DAG runs. The models
are contracts (`backfill_orchestrator.contracts.plan`); this name stays for existing imports."""

from backfill_orchestrator.contracts.plan import (
    PLAN_VERSION,
    Exclusion,
    Plan,
    PlanStep,
    PlanWarning,
    StepKind,
    Wave,
)

__all__ = ["PLAN_VERSION", "Exclusion", "Plan", "PlanStep", "PlanWarning", "StepKind", "Wave"]
