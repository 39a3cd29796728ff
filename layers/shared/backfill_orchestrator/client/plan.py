"""Plan a config from a notebook: the planner the trigger runs, against Marquez (a URL) or a
lineage source passed in, with the job catalog. The answer renders as an HTML table in a
notebook (`_repr_html_`) and as the CLI's text everywhere else."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import Any

from backfill_orchestrator.client.preflight import catalog_for, deployment_policy, marquez_client
from backfill_orchestrator.client.sources import ConfigSource, PreparedConfig, prepare_config
from backfill_orchestrator.config.validate import ConfigPolicy
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.lineage.source import LineageSource
from backfill_orchestrator.planner import JobCatalog, build_plan, render_plan_text


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
    """A catalog object, a path or s3:// URI, or None ($BACKFILL_JOB_CATALOG when set, else empty)."""
    return catalog_for(catalog, environ=os.environ, s3_client=s3_client) or JobCatalog.empty()


def plan_backfill(
    source: ConfigSource | PreparedConfig,
    *,
    policy: ConfigPolicy | None = None,
    marquez_url: str | None = None,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | str | None = None,
    session: Any = None,
    s3_client: Any = None,
) -> PlanView:
    """Validate (the deployment's allowlists: `policy`, default from the environment), load the
    catalog, then plan: nothing is asked of Marquez before everything local is checked. Raises
    InvalidConfigError / InvalidCatalogError (located), PlanRefusedError (a cycle, an unknown
    root job), InvalidMarquezUrlError (no lineage given) or a LineageError (Marquez
    unreachable)."""
    if s3_client is None and session is not None:
        s3_client = session.client("s3")
    prepared = (
        source
        if isinstance(source, PreparedConfig)
        else prepare_config(source, policy=policy or deployment_policy(), s3_client=s3_client)
    )
    job_catalog = load_catalog(catalog, s3_client=s3_client)
    source_of_lineage = lineage if lineage is not None else marquez_client(marquez_url)
    plan = build_plan(
        prepared.config, backfill_id=prepared.backfill_id, lineage=source_of_lineage, catalog=job_catalog
    )
    return PlanView(plan)
