"""The one preflight: `backfill plan`, `backfill submit`, the Python client and the trigger
function all call `run_preflight` with what they could reach, so the same input gets the same
verdict everywhere; what a caller could not reach is listed in `Verdict.unchecked`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from backfill_orchestrator.config.model import BackfillConfig
from backfill_orchestrator.contracts.plan import Plan, PlanWarning
from backfill_orchestrator.lineage.errors import LineageError, MarquezResponseError, MarquezUnavailableError
from backfill_orchestrator.lineage.graph import JobKey
from backfill_orchestrator.lineage.runs import KnownProducers, RunHistory
from backfill_orchestrator.lineage.source import LineageSource
from backfill_orchestrator.planner.build import build_plan
from backfill_orchestrator.planner.catalog import JobCatalog
from backfill_orchestrator.planner.errors import PlanRefusedError, UnknownRootJobError
from backfill_orchestrator.preflight.checks import (
    catalog_feed_findings,
    catalog_findings,
    entries_of,
    plan_findings,
    runtime_findings,
)
from backfill_orchestrator.preflight.estimate import estimate_plan
from backfill_orchestrator.preflight.freshness import upstream_findings
from backfill_orchestrator.preflight.history import DurationCache, measured_seconds_per_date
from backfill_orchestrator.preflight.model import Finding, PreflightRefusedError, Verdict
from backfill_orchestrator.preflight.warehouse import Lister, WarehouseUnavailableError, warehouse_lister
from backfill_orchestrator.settings.preflight import PreflightLimits


@dataclass(frozen=True)
class Reach:
    """What a caller of the preflight could reach: the deployment's limits, the job catalog, the
    warehouse (`lister`), Marquez's run history, and the measured durations it keeps across
    calls (a warm trigger's). `strict` makes warnings refuse too."""

    limits: PreflightLimits
    catalog: JobCatalog | None = None
    lister: Lister | None = None
    history: RunHistory | None = None
    strict: bool = False
    durations: DurationCache | None = None


def run_preflight(
    config: BackfillConfig,
    *,
    plan: Plan | None,
    reach: Reach,
    unchecked: Sequence[str] = (),
    marquez_errors_raise: bool = False,
) -> Verdict:
    """Every check that the given inputs allow. `plan` None (Marquez not reachable) leaves the
    plan's checks and the estimate out; no `reach.lister` leaves the warehouse out; no
    `reach.history` leaves upstream freshness out and every duration assumed. With strict (the
    reach's, the config's `strict` or the deployment's) warnings refuse too.

    Marquez failing while run history is read is, for the CLI and the client, something not
    checked; with `marquez_errors_raise` (the trigger) it is raised (a ServiceError: retried)
    when fresh upstream is required or the backfill is strict, else a warning."""
    limits, history = reach.limits, reach.history
    not_checked = list(unchecked)
    findings: list[Finding] = []
    strict = reach.strict or config.strict or limits.strict
    if plan is None:
        not_checked.append(
            "the jobs in Marquez, the plan, its limits and estimate (no lineage: --marquez-url or $MARQUEZ_URL)"
        )
        return _verdict(findings, not_checked, None, strict)
    catalog = reach.catalog if reach.catalog is not None else JobCatalog.empty()
    entries = entries_of(plan, catalog)
    findings += catalog_findings(config, plan, catalog, entries, limits)
    findings += plan_findings(config, plan)
    measured: dict[str, float] = {}
    if history is None:
        not_checked.append("upstream freshness and run durations (no Marquez)")
    else:
        required = config.require_fresh_upstream or limits.require_fresh_upstream
        try:
            found, notes = upstream_findings(config, history, days=config.days, limits=limits)
            findings += found
            not_checked += notes
        except (MarquezUnavailableError, MarquezResponseError) as error:
            if marquez_errors_raise and (required or strict):
                raise
            if marquez_errors_raise:
                findings.append(
                    Finding(
                        "upstream_not_checked", "jobs", f"upstream freshness could not be checked: {error}"
                    )
                )
            else:
                not_checked.append(f"upstream freshness ({error})")
        try:
            measured = measured_seconds_per_date(
                history, plan, max_jobs=limits.history_max_jobs, cache=reach.durations
            )
        except (MarquezUnavailableError, MarquezResponseError) as error:
            not_checked.append(f"run durations, assumed instead ({error})")
    if reach.lister is None:
        not_checked.append("input partitions and bytes to read (no warehouse)")
    try:
        estimate, input_findings = estimate_plan(
            config, plan, entries, limits, lister=reach.lister, seconds_per_date=measured
        )
    except WarehouseUnavailableError as error:
        not_checked.append(f"input partitions and bytes to read ({error})")
        estimate, input_findings = estimate_plan(
            config, plan, entries, limits, lister=None, seconds_per_date=measured
        )
    findings += input_findings
    findings += runtime_findings(plan, {step.step_id: step.seconds.value for step in estimate.steps}, limits)
    return _verdict(findings, not_checked, estimate, strict)


def _verdict(findings: list[Finding], unchecked: list[str], estimate, strict: bool) -> Verdict:  # noqa: ANN001
    if strict:
        findings = [
            replace(f, severity="refusal", message=f"{f.message} (strict)") if f.severity == "warning" else f
            for f in findings
        ]
    return Verdict(findings=findings, unchecked=unchecked, estimate=estimate)


def preflight_plan(
    config: BackfillConfig,
    plan: Plan,
    reach: Reach,
    *,
    unchecked: Sequence[str] = (),
    marquez_errors_raise: bool = False,
    known_producers: Mapping[JobKey, tuple[JobKey, ...]] | None = None,
) -> tuple[Verdict, Plan]:
    """The verdict, and the plan carrying its warnings and estimate. Without a `reach.lister` the
    deployment's warehouse (limits.warehouse_uri) is listed when there is one.
    `known_producers` (the planner's lineage answers, `ProducersSeen.producers`) answers the
    roots' producers without asking Marquez again; jobs it lacks are asked as before."""
    if reach.lister is None and reach.limits.warehouse_uri:
        reach = replace(reach, lister=warehouse_lister(reach.limits.warehouse_uri))
    if reach.history is not None and known_producers:
        reach = replace(reach, history=KnownProducers(reach.history, known_producers))
    verdict = run_preflight(
        config, plan=plan, reach=reach, unchecked=unchecked, marquez_errors_raise=marquez_errors_raise
    )
    known = {(warning.code, warning.message) for warning in plan.warnings}
    added = [
        PlanWarning(code=finding.code, message=str(finding))
        for finding in verdict.warnings
        if (finding.code, finding.message) not in known
    ]
    estimate = verdict.estimate.as_dict() if verdict.estimate else None
    return verdict, plan.model_copy(update={"warnings": [*plan.warnings, *added], "estimate": estimate})


def checked_plan(
    config: BackfillConfig,
    plan: Plan,
    reach: Reach,
    *,
    known_producers: Mapping[JobKey, tuple[JobKey, ...]] | None = None,
) -> Plan:
    """`preflight_plan` for callers that only go on with an accepted plan (the trigger): raises
    PreflightRefusedError carrying the verdict, and Marquez's errors when they matter (see
    `run_preflight`)."""
    verdict, plan = preflight_plan(
        config, plan, reach, marquez_errors_raise=True, known_producers=known_producers
    )
    if not verdict.accepted:
        raise PreflightRefusedError(verdict)
    return plan


def estimate_totals(estimate: Mapping[str, Any]) -> dict[str, Any]:
    """The estimate without its per-step figures: what a status record keeps."""
    return {key: value for key, value in estimate.items() if key != "steps"}


def plan_despite_unknown_roots(
    config: BackfillConfig, *, backfill_id: str, lineage: LineageSource, catalog: JobCatalog | None
) -> tuple[Plan | None, BackfillConfig, list[Finding]]:
    """build_plan, each refusal a finding located in the config (`jobs[0]`, as the trigger
    locates it). Unknown root jobs do not hide the config's other problems: the roots Marquez
    knows are planned too, and that plan (with the config it was made from) is returned for
    the remaining checks. Lineage errors pass through."""
    try:
        return build_plan(config, backfill_id=backfill_id, lineage=lineage, catalog=catalog), config, []
    except UnknownRootJobError as error:
        refusals = _refusals(config, error)
        unknown = {job.key for job in error.jobs}
        known = [job for job in config.jobs or [] if job.key not in unknown]
        if not known:
            return None, config, refusals
        partial = config.model_copy(update={"jobs": known})
    except PlanRefusedError as error:
        return None, config, _refusals(config, error)
    try:
        plan = build_plan(partial, backfill_id=backfill_id, lineage=lineage, catalog=catalog)
    except PlanRefusedError as error:
        return None, config, refusals + _refusals(config, error)
    return plan, partial, refusals


def _refusals(config: BackfillConfig, error: PlanRefusedError) -> list[Finding]:
    code = "unknown_root_job" if isinstance(error, UnknownRootJobError) else "plan_refused"
    return [Finding(code, issue.location, issue.message, "refusal") for issue in error.issues(config)]


def _relocated(findings: list[Finding], planned: BackfillConfig, config: BackfillConfig) -> list[Finding]:
    """Findings about `planned` (the config without its unknown roots) located in `config`."""
    if planned is config:
        return findings
    keys = [job.key for job in config.jobs or []]
    index = {f"jobs[{i}]": f"jobs[{keys.index(job.key)}]" for i, job in enumerate(planned.jobs or [])}

    def where(location: str) -> str:
        head, dot, rest = location.partition(".")
        return index.get(head, head) + dot + rest

    return [replace(finding, location=where(finding.location)) for finding in findings]


def preflight_config(
    config: BackfillConfig,
    *,
    backfill_id: str,
    lineage: LineageSource | None,
    reach: Reach,
    unchecked: Sequence[str] = (),
    lineage_errors_raise: bool = False,
) -> tuple[Verdict, Plan | None]:
    """Plan (when lineage is reachable) and preflight, for callers outside the trigger (the CLI's
    validate, plan and submit, the Python client): every refusal of the plan and of the checks
    at once, each located; an unreachable Marquez is something not checked (raised with
    `lineage_errors_raise`: `backfill plan`, which is nothing without the plan)."""
    not_checked = list(unchecked)
    if config.mode != "batch":
        return Verdict(unchecked=[*not_checked, f"nothing to plan for mode {config.mode}"]), None
    if lineage is None:
        return run_preflight(config, plan=None, reach=reach, unchecked=not_checked), None
    try:
        plan, planned, refusals = plan_despite_unknown_roots(
            config, backfill_id=backfill_id, lineage=lineage, catalog=reach.catalog
        )
    except LineageError as error:
        if lineage_errors_raise:
            raise
        not_checked.append(f"lineage ({error})")
        return run_preflight(config, plan=None, reach=reach, unchecked=not_checked), None
    if plan is None:
        verdict = run_preflight(config, plan=None, reach=reach)
        findings = refusals + catalog_feed_findings(config, reach.catalog) + verdict.findings
        return replace(verdict, findings=findings, unchecked=not_checked), None
    verdict, plan = preflight_plan(planned, plan, reach, unchecked=not_checked)
    return replace(verdict, findings=refusals + _relocated(verdict.findings, planned, config)), plan
