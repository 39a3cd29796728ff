"""The lineage-aware planner: job catalog, plan building, and the plan's readable form."""

from backfill_orchestrator.planner.build import build_plan
from backfill_orchestrator.planner.catalog import (
    CATALOG_ENV,
    CatalogEntry,
    CatalogError,
    CatalogUnavailableError,
    InvalidCatalogError,
    JobCatalog,
    StepTarget,
)
from backfill_orchestrator.planner.errors import (
    LineageCycleError,
    NotPlannableError,
    PlanRefusedError,
    StepConflictError,
    UnaddressableRootJobError,
    UnknownRootJobError,
    UnreadableDownstreamError,
)
from backfill_orchestrator.planner.render import render_plan_text

__all__ = [
    "CATALOG_ENV",
    "CatalogEntry",
    "CatalogError",
    "CatalogUnavailableError",
    "InvalidCatalogError",
    "JobCatalog",
    "LineageCycleError",
    "NotPlannableError",
    "PlanRefusedError",
    "StepConflictError",
    "StepTarget",
    "UnaddressableRootJobError",
    "UnknownRootJobError",
    "UnreadableDownstreamError",
    "build_plan",
    "render_plan_text",
]
