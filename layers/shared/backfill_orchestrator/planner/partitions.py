"""How many partitions a plan rewrites: the one count behind the preflight's estimate
(`partitions to rewrite`), the plan's text and page, the Slack line and the approval gate
(`approval.max_partitions` in the policy), so they always say the same number.

Per step: its dates × its hours when the catalog says the step writes hourly partitions
(`grain: hour`: the config's hours, else 24) × its feeds (the config's, else the feeds the
catalog declares for it). A step the catalog does not describe counts one partition per date
(or per date and selected feed): that figure is assumed, the others measured. The plan's count
is the sum over its steps, Spark and DAG steps alike (a DAG rerun rewrites its date's output)."""

from __future__ import annotations

from collections.abc import Mapping

from backfill_orchestrator.contracts.plan import Plan, PlanStep
from backfill_orchestrator.planner.catalog import CatalogEntry, JobCatalog

HOURS_PER_DAY = 24


def step_partitions(step: PlanStep, entry: CatalogEntry | None) -> tuple[int, bool]:
    """(partitions the step rewrites, whether the count is measured: the catalog declares the
    step's grain and feeds)."""
    feeds = step.feeds if step.feeds is not None else (entry.feeds if entry is not None else None)
    hourly = entry is not None and entry.grain == "hour"
    hours = (len(step.hours) if step.hours is not None else HOURS_PER_DAY) if hourly else 1
    measured = entry is not None and feeds is not None
    return len(step.dates) * hours * (len(feeds) if feeds else 1), measured


def catalog_entries(plan: Plan, catalog: JobCatalog | None) -> dict[str, CatalogEntry | None]:
    """Each step's catalog entry (None: not in the catalog, or no catalog)."""
    if catalog is None:
        return {step.id: None for step in plan.steps}
    return {
        step.id: catalog.entry_for_step(
            namespace=step.job.namespace, name=step.job.name, kind=step.kind, step_id=step.id
        )
        for step in plan.steps
    }


def plan_partitions(plan: Plan, entries: Mapping[str, CatalogEntry | None] | None = None) -> int:
    """The partitions the whole plan rewrites (`entries`: each step's catalog entry, from
    `catalog_entries`; None counts every step as the catalog did not describe it)."""
    found = entries or {}
    return sum(step_partitions(step, found.get(step.id))[0] for step in plan.steps)
