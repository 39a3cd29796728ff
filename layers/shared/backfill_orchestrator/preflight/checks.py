"""The checks of a plan against what the catalog declares and what the deployment can run.
Each returns findings; `run.run_preflight` puts them together."""

from __future__ import annotations

from collections.abc import Iterable

from backfill_orchestrator.config.model import BackfillConfig
from backfill_orchestrator.config.validate import suggestion
from backfill_orchestrator.contracts.plan import Plan, PlanStep
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.planner.catalog import CatalogEntry, JobCatalog
from backfill_orchestrator.planner.partitions import catalog_entries
from backfill_orchestrator.planner.rounds import plan_rounds
from backfill_orchestrator.preflight.model import Finding
from backfill_orchestrator.settings.preflight import PreflightLimits

NO_EFFECT = "no effect"


def entries_of(plan: Plan, catalog: JobCatalog) -> dict[str, CatalogEntry | None]:
    return catalog_entries(plan, catalog)


def catalog_findings(
    config: BackfillConfig,
    plan: Plan,
    catalog: JobCatalog,
    entries: dict[str, CatalogEntry | None],
    limits: PreflightLimits,
) -> list[Finding]:
    if len(catalog) == 0:
        if limits.require_catalog:
            return [
                Finding(
                    "catalog_required",
                    "<catalog>",
                    "this deployment requires a job catalog; none was given",
                    "refusal",
                )
            ]
        return [
            Finding(
                "no_catalog",
                f"steps.{step.id}",
                "no job catalog: its date window is unknown (1 day assumed) and its feeds are not checked",
            )
            for step in plan.steps
        ]
    findings = [
        Finding(
            "not_in_catalog",
            f"steps.{step_id}",
            "not in the job catalog: window 1 day assumed, feeds not checked",
        )
        for step_id, entry in entries.items()
        if entry is None
    ]
    declared = {
        step_id: set(entry.feeds) for step_id, entry in entries.items() if entry is not None and entry.feeds
    }
    for step_id, entry in entries.items():
        if config.feeds is not None and entry is not None and not entry.feeds:
            findings.append(
                Finding(
                    "no_declared_feeds",
                    f"steps.{step_id}",
                    f"the catalog declares no feeds for {entry.namespace}/{entry.name}; feeds are not checked for it",
                )
            )
    if config.feeds is not None and declared:
        known = set().union(*declared.values())
        for index, feed in enumerate(config.feeds):
            if feed not in known:
                findings.append(
                    Finding(
                        "unknown_feed",
                        f"feeds[{index}]",
                        f"unknown feed {feed!r}{suggestion(feed, known)} (no planned job declares it)",
                        "refusal",
                    )
                )
                continue
            lacking = sorted(step_id for step_id, feeds in declared.items() if feed not in feeds)
            if lacking:
                findings.append(
                    Finding(
                        "feed_not_declared",
                        f"feeds[{index}]",
                        f"feed {feed!r} is not declared by {', '.join(lacking)}",
                    )
                )
    if config.hours is not None:
        daily = sorted(
            step_id for step_id, entry in entries.items() if entry is not None and entry.grain == "day"
        )
        if daily:
            findings.append(
                Finding(
                    "hours_on_daily_steps",
                    "hours",
                    f"{', '.join(daily)} write whole days (grain day): hours do not narrow what they rewrite",
                )
            )
    return findings


def catalog_feed_findings(config: BackfillConfig, catalog: JobCatalog | None) -> list[Finding]:
    """Without a plan (no root job is known): the config's feeds against every feed the catalog
    declares, so a feed typo shows beside the job typo."""
    known = {feed for entry in (catalog.entries if catalog is not None else ()) for feed in entry.feeds or ()}
    if config.feeds is None or not known:
        return []
    return [
        Finding(
            "unknown_feed",
            f"feeds[{index}]",
            f"unknown feed {feed!r}{suggestion(feed, known)} (no job in the catalog declares it)",
            "refusal",
        )
        for index, feed in enumerate(config.feeds)
        if feed not in known
    ]


def plan_findings(config: BackfillConfig, plan: Plan) -> list[Finding]:
    """Exclusions that match nothing and the planner's own warnings, located in the config."""
    findings: list[Finding] = []
    exclude = config.effective_downstream.exclude
    # What an exclusion could have meant: the jobs lineage reached (planned, or dropped behind an exclusion).
    reached = sorted(
        {str(step.job) for step in plan.steps}
        | {str(e.job) for e in plan.exclusions if NO_EFFECT not in e.reason}
    )
    for exclusion in plan.exclusions:
        if NO_EFFECT in exclusion.reason:
            index = next((i for i, job in enumerate(exclude) if job.key == exclusion.job.key), None)
            where = f"downstream.exclude[{index}]" if index is not None else "downstream.exclude"
            # A typo here reruns the job its author meant to skip: a refusal, never a warning.
            findings.append(
                Finding(
                    "exclusion_matches_nothing",
                    where,
                    f"{exclusion.job} matches no job of the plan, so it excludes nothing{suggestion(str(exclusion.job), reached)}",
                    "refusal",
                )
            )
    for warning in plan.warnings:
        findings.append(
            Finding(
                warning.code, "jobs" if warning.code == "root_excluded" else "downstream", warning.message
            )
        )
    if config.effective_downstream.enabled and len(plan.steps) == len({job.key for job in config.jobs or []}):
        findings.append(
            Finding(
                "nothing_downstream",
                "jobs",
                "the roots have no downstream jobs in Marquez: only the roots rerun (is lineage emitted for their readers?)",
            )
        )
    return findings


def runtime_findings(plan: Plan, step_seconds: dict[str, float], limits: PreflightLimits) -> list[Finding]:
    """A round's Spark steps run as one Spark job, which the DAG stops after
    min(spark_timeout_seconds, the profile's timeout_minutes): a round expected to take longer
    is a warning (estimates are estimates; strict refuses it)."""
    spark_seconds = [
        (round_.index, sum(step_seconds.get(step_id, 0.0) for step_id in round_.spark_step_ids))
        for round_ in plan_rounds(plan)
    ]
    return [
        Finding(
            "over_runtime_limit",
            "plan",
            f"round {index + 1}: its Spark steps are expected to take {_hours(seconds)}, over the Spark job's time limit "
            f"of {_hours(limits.spark_timeout_seconds)} (SPARK_TIMEOUT_SECONDS, the DAG's [backfill] spark_timeout_seconds): "
            "split the dates into several backfills or raise the limit",
        )
        for index, seconds in spark_seconds
        if seconds > limits.spark_timeout_seconds
    ]


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def missing_dates_message(step: PlanStep, missing: Iterable) -> str:
    missing = sorted(missing)
    return f"no input partitions for {len(missing)} of {len(step.dates)} dates: {compact_dates(missing)}"
