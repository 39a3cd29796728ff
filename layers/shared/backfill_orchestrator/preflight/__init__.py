"""Preflight: what is accepted is what can run, and its size is known before it starts."""

from backfill_orchestrator.preflight.model import (
    Estimate,
    Figure,
    Finding,
    PreflightRefusedError,
    StepEstimate,
    Verdict,
)
from backfill_orchestrator.preflight.run import (
    Reach,
    checked_plan,
    estimate_totals,
    preflight_config,
    preflight_plan,
    run_preflight,
)
from backfill_orchestrator.preflight.warehouse import StoredFile, WarehouseUnavailableError, warehouse_lister
from backfill_orchestrator.settings.preflight import PreflightLimits

__all__ = [
    "Estimate",
    "Figure",
    "Finding",
    "PreflightLimits",
    "PreflightRefusedError",
    "Reach",
    "StepEstimate",
    "StoredFile",
    "Verdict",
    "WarehouseUnavailableError",
    "checked_plan",
    "estimate_totals",
    "preflight_config",
    "preflight_plan",
    "run_preflight",
    "warehouse_lister",
]
