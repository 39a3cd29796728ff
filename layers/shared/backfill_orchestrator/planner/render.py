"""The readable form of a plan (`backfill plan` without --json; the Slack notifier reuses it)."""

from __future__ import annotations

from backfill_orchestrator.contracts.plan import Plan, PlanStep
from backfill_orchestrator.dates import compact_dates


def _hours(hours: list[int] | None) -> str:
    return "all hours" if hours is None else "hours " + ",".join(str(hour) for hour in sorted(hours))


def _feeds(feeds: list[str] | None) -> str:
    return "all feeds" if feeds is None else "feeds " + ",".join(sorted(feeds))


def _runs_as(step: PlanStep) -> str:
    if step.kind == "spark":
        return f"spark transform {step.transform} (DAG {step.dag_id})"
    return f"DAG {step.dag_id}"


def render_plan_text(plan: Plan) -> str:
    step_count = len(plan.steps)
    lines = [
        f"plan {plan.backfill_id}: {plan.name}, owner {plan.owner}",
        f"roots: {', '.join(str(job) for job in plan.roots)}",
        f"dates: {compact_dates(plan.dates)}; {_hours(plan.hours)}; {_feeds(plan.feeds)}; spark {plan.spark_profile}",
        f"{step_count} step{'s' if step_count != 1 else ''} in {len(plan.waves)} wave{'s' if len(plan.waves) != 1 else ''}",
    ]
    for wave in plan.waves:
        lines.append(f"wave {wave.index + 1}:")
        for step in wave.steps:
            why = "root" if step.reason == "root" else "after " + ", ".join(step.upstream)
            if step.reason == "root" and step.upstream:
                why += ", after " + ", ".join(step.upstream)
            window = f", window {step.window_days} days" if step.window_days > 1 else ""
            lines.append(f"  {step.id}: {_runs_as(step)} for {step.job}{window}")
            lines.append(f"    dates {compact_dates(step.dates)} ({len(step.dates)}); {why}")
    if plan.exclusions:
        lines.append("excluded:")
        lines.extend(f"  {exclusion.job}: {exclusion.reason}" for exclusion in plan.exclusions)
    if plan.warnings:
        lines.append("warnings:")
        lines.extend(f"  {warning.code}: {warning.message}" for warning in plan.warnings)
    return "\n".join(lines) + "\n"
