"""Kept so existing imports work: the plan models are the contract in
`backfill_orchestrator.contracts.plan`."""

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
