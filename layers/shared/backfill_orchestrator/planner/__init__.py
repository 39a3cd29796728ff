"""The lineage-aware planner: job catalog, plan building, the plan's rounds and readable form.

`build_plan` and the catalog (which read lineage) are imported on first use: the DAG's tasks,
which only cut a plan into rounds, never load the lineage code."""

from typing import TYPE_CHECKING, Any

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
from backfill_orchestrator.planner.rounds import Round, plan_rounds

if TYPE_CHECKING:
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
    "Round",
    "StepConflictError",
    "StepTarget",
    "UnaddressableRootJobError",
    "UnknownRootJobError",
    "UnreadableDownstreamError",
    "build_plan",
    "plan_rounds",
    "render_plan_text",
]


def __getattr__(name: str) -> Any:
    """The names of `__all__` not imported above: `build_plan`, and the rest from the catalog."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    module = "build" if name == "build_plan" else "catalog"
    return getattr(import_module(f"{__name__}.{module}"), name)
