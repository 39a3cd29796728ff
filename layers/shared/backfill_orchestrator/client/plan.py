"""Plan a config from a notebook: the planner the trigger runs, against Marquez (a URL) or a
lineage source passed in, with the job catalog. The answer renders as an HTML table in a
notebook (`_repr_html_`) and as the CLI's text everywhere else."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import Any

from backfill_orchestrator.client.sources import ConfigSource, PreparedConfig, prepare_config
from backfill_orchestrator.config.validate import DEFAULT_POLICY, ConfigPolicy
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.lineage.source import LineageSource
from backfill_orchestrator.planner import CATALOG_ENV, JobCatalog, build_plan, render_plan_text


class LineageClientMissingError(ServiceError, ImportError):
    """Planning against Marquez without the `lineage` extra (`requests`) installed: the
    installation lacks a part, not the input (the same config plans once it is installed)."""


@dataclass(frozen=True)
class PlanView:
    """A plan, for people: `str()` is the CLI's text, `_repr_html_` a table per wave."""

    plan: Plan

    def __str__(self) -> str:
        return render_plan_text(self.plan)

    def _repr_html_(self) -> str:
        plan = self.plan
        rows = []
        for wave in plan.waves:
            for step in wave.steps:
                runs = f"spark {step.transform}" if step.kind == "spark" else "DAG rerun"
                cells = (
                    str(wave.index + 1),
                    step.id,
                    str(step.job),
                    runs,
                    step.dag_id,
                    f"{compact_dates(step.dates)} ({len(step.dates)})",
                    "root" if step.reason == "root" else "after " + ", ".join(step.upstream),
                )
                rows.append("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>")
        head = "".join(
            f"<th>{name}</th>" for name in ("wave", "step", "job", "runs as", "DAG", "dates", "why")
        )
        notes = [
            f"<li>excluded {html.escape(str(e.job))}: {html.escape(e.reason)}</li>" for e in plan.exclusions
        ]
        notes += [f"<li>warning {html.escape(w.code)}: {html.escape(w.message)}</li>" for w in plan.warnings]
        return (
            f"<div><p><b>plan {html.escape(plan.backfill_id)}</b>: {html.escape(plan.name)}, owner "
            f"{html.escape(plan.owner)}; {len(plan.steps)} steps in {len(plan.waves)} waves</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            + (f"<ul>{''.join(notes)}</ul>" if notes else "")
            + "</div>"
        )


def load_catalog(catalog: JobCatalog | str | None, *, s3_client: Any = None) -> JobCatalog:
    """A catalog object, a path or s3:// URI, or None ($BACKFILL_CATALOG when set, else empty)."""
    if isinstance(catalog, JobCatalog):
        return catalog
    location = catalog or os.environ.get(CATALOG_ENV) or None
    return JobCatalog.load(location, s3_client=s3_client) if location else JobCatalog.empty()


def lineage_source(*, marquez_url: str | None, lineage: LineageSource | None) -> LineageSource:
    if lineage is not None:
        return lineage
    try:
        from backfill_orchestrator.lineage.client import MarquezClient
    except ModuleNotFoundError as error:  # the light install has no `requests`
        raise LineageClientMissingError(
            f"planning against Marquez needs {error.name!r}: pip install 'backfill-orchestrator[lineage]'"
        ) from None
    return MarquezClient.from_env(base_url=marquez_url)


def plan_backfill(
    source: ConfigSource | PreparedConfig,
    *,
    marquez_url: str | None = None,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | str | None = None,
    policy: ConfigPolicy = DEFAULT_POLICY,
    session: Any = None,
    s3_client: Any = None,
) -> PlanView:
    """Validate, load the catalog, then plan: nothing is asked of Marquez before everything
    local is checked. Raises InvalidConfigError / InvalidCatalogError (located),
    PlanRefusedError (a cycle, an unknown root job) or a LineageError (Marquez unreachable)."""
    if s3_client is None and session is not None:
        s3_client = session.client("s3")
    prepared = (
        source
        if isinstance(source, PreparedConfig)
        else prepare_config(source, policy=policy, s3_client=s3_client)
    )
    job_catalog = load_catalog(catalog, s3_client=s3_client)
    source_of_lineage = lineage_source(marquez_url=marquez_url, lineage=lineage)
    plan = build_plan(
        prepared.config, backfill_id=prepared.backfill_id, lineage=source_of_lineage, catalog=job_catalog
    )
    return PlanView(plan)
