"""What the pages show, as plain data: a list row per backfill and the detail of one. The HTML
templates and the JSON API render the same dictionaries, so the page that polls the API shows
what a reload would. Every text is data here; escaping is the template's (autoescape) and the
SVG builders' job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.contracts import BackfillReport, InvalidDocumentError, Plan, RunReport
from backfill_orchestrator.documents import DocumentError
from backfill_orchestrator.lineage_events.ids import backfill_run_id
from backfill_orchestrator.planner.rounds import plan_rounds
from backfill_orchestrator.preflight.render import duration, size
from backfill_orchestrator.status import StatusRecord
from backfill_orchestrator.status.watch import has_ended, progress_line
from backfill_orchestrator.ui.graph import MAX_GRAPH_STEPS, plan_svg
from backfill_orchestrator.ui.grid import grid_svg
from backfill_orchestrator.ui.progress import RunProgress, StepGrid, step_grids
from backfill_orchestrator.ui.sources import Sources, safe_link
from backfill_orchestrator.ui.states import ACTIONS, CELL_STATES, actions_allowed_in

# The states whose record `reason` says why it is where it is (`backfill watch` shows it in the same ones).
REASON_STATES = frozenset({"FAILED", "REJECTED", "CANCELLED", "QUEUED", "AWAITING_APPROVAL"})
MAX_GRID_STEPS = 60  # grids drawn on one page (the graph shows every step up to its own bound)
MAX_TIMELINE = 200
MAX_ERRORS = 20


def age(created_at: str, now: datetime) -> str:
    try:
        seconds = int((now - datetime.fromisoformat(created_at)).total_seconds())
    except ValueError:
        return ""
    for unit, length in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= length:
            return f"{seconds // length}{unit}"
    return f"{max(seconds, 0)}s"


def progress_text(record: StatusRecord, now: datetime) -> str:
    """`backfill watch`'s line without the id and state: `steps 2/6  dates 15/30  wave 2/4  1m23s`."""
    line = progress_line(record, now=now)
    return line.removeprefix(f"{record.backfill_id} {record.state}").strip()


def list_row(record: StatusRecord, now: datetime) -> dict[str, Any]:
    return {
        "backfill_id": record.backfill_id,
        "name": record.name,
        "state": str(record.state),
        "owner": record.owner,
        "submitted_by": record.submitted_by,
        "mode": record.mode,
        "dry_run": record.dry_run,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "age": age(record.created_at, now),
        "progress": progress_text(record, now),
    }


@dataclass(frozen=True)
class Links:
    """Where the page points: Airflow's own pages (`airflow_base`: its root path)."""

    airflow_base: str
    page_base: str


def detail(
    sources: Sources,
    record: StatusRecord,
    *,
    links: Links,
    may_act: bool,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    pictures: bool = True,
) -> dict[str, Any]:
    """The detail of one backfill. `pictures`: with the SVGs (the page), without (its polls)."""
    moment = now()
    problems: list[str] = []

    def attempt(what: str, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except (DocumentError, InvalidDocumentError) as error:
            problems.append(f"{what}: {str(error)[:500]}")
            return None

    plan: Plan | None = attempt("plan", lambda: sources.plan(record))
    report: BackfillReport | None = attempt("backfill report", lambda: sources.report(record))
    run: RunProgress | None = None
    if plan is not None and report is None:
        try:
            run = sources.run_progress(record)
        except Exception as error:  # Airflow's database: the page still shows the rest
            problems.append(f"the DAG run's progress: {type(error).__name__}: {str(error)[:300]}")
    run_reports: list[RunReport] = (
        attempt("Spark run reports", lambda: sources.run_reports(report)) if report else []
    )
    grids = step_grids(plan, report=report, run=run, finished=has_ended(record)) if plan else []
    state = str(record.state)
    view: dict[str, Any] = {
        **list_row(record, moment),
        "version": record.version,
        "reason": record.reason if state in REASON_STATES else None,
        "errors": [dict(error) for error in record.errors[:MAX_ERRORS]],
        "errors_total": record.errors_total or len(record.errors),
        "approval": _approval(record),
        "timeline": [entry.__dict__ for entry in sources.timeline(record)[-MAX_TIMELINE:]],
        "steps": {grid.step_id: str(grid.state) for grid in grids[:MAX_GRAPH_STEPS]},
        "grids": [
            {"index": index, "step_id": grid.step_id, "codes": grid.codes}
            for index, grid in enumerate(grids[:MAX_GRID_STEPS])
        ],
        "figures": _figures(record, plan, report, run, run_reports, moment),
        "changes": _changes(run_reports),
        "actions": [
            {"action": name, **ACTIONS[name].__dict__}
            for name in actions_allowed_in(state)
            if may_act and sources.settings.actions_enabled
        ],
        "problems": problems,
        "live": not has_ended(record),
    }
    if pictures:
        view["plan"] = _plan_view(plan, grids)
        view["grid_pictures"] = [
            {
                "index": index,
                "step_id": grid.step_id,
                "kind": grid.kind,
                "dag_id": grid.dag_id,
                "detail": grid.detail,
                "dates": len(grid.dates),
                "feeds": list(grid.feeds),
                "hours": len(grid.hours),
                "svg": grid_svg(grid, index=index),
            }
            for index, grid in enumerate(grids[:MAX_GRID_STEPS])
        ]
        view["grids_total"] = len(grids)
        view["links"] = _links(sources, record, plan, links)
    return view


def _approval(record: StatusRecord) -> dict[str, Any] | None:
    if not (record.approval_requested_at or record.approval):
        return None
    return {
        "requested_at": record.approval_requested_at,
        "approvers": list(record.approvers),
        "reasons": list(record.approval_reasons),
        "decision": dict(record.approval) if record.approval else None,
    }


def _plan_view(plan: Plan | None, grids: list[StepGrid]) -> dict[str, Any] | None:
    if plan is None:
        return None
    rounds = plan_rounds(plan)
    return {
        "steps": len(plan.steps),
        "drawn": min(len(plan.steps), MAX_GRAPH_STEPS),
        "waves": len(plan.waves),
        "rounds": len(rounds),
        "dag_reruns": sum(r.dag_reruns for r in rounds),
        "svg": plan_svg(plan, {grid.step_id: grid.state for grid in grids}),
        "warnings": [warning.message for warning in plan.warnings[:20]],
    }


def _figures(
    record: StatusRecord,
    plan: Plan | None,
    report: BackfillReport | None,
    run: RunProgress | None,
    run_reports: list[RunReport],
    now: datetime,
) -> list[dict[str, str]]:
    """The estimate beside the actual figures: partitions, bytes, DAG reruns, duration."""
    estimate = (plan.estimate if plan else None) or {}
    ledger = report.steps if report else (run.state.ledger if run and run.state else {})
    partitions = sum(o.figures.partitions_written_count for o in ledger.values() if o.figures)
    written = [s.bytes_written for r in run_reports for s in r.steps if s.bytes_written is not None]
    reruns_done = sum(state == "success" for o in ledger.values() for state in (o.dates or {}).values())
    step_seconds = sum(step["seconds"]["value"] for step in estimate.get("steps", []))

    def basis(figure: Any) -> str:
        return f" ({figure['basis']})" if isinstance(figure, dict) and "basis" in figure else ""

    rows = [
        {
            "what": "partitions",
            "estimate": f"{int(estimate['partitions']):,} to rewrite" if "partitions" in estimate else "—",
            "actual": f"{partitions:,} written" if ledger else "—",
        },
        {
            "what": "bytes",
            "estimate": f"reads {size(estimate['bytes_to_read'])}" if estimate.get("bytes_to_read") else "—",
            "actual": f"wrote {size(sum(written))}" if written else "—",
        },
        {
            "what": "DAG reruns",
            "estimate": f"{int(estimate['dag_reruns']['value'])}{basis(estimate['dag_reruns'])}"
            if "dag_reruns" in estimate
            else "—",
            "actual": f"{reruns_done} succeeded" if ledger else "—",
        },
        {
            "what": "duration",
            "estimate": f"~{duration(step_seconds)} of steps" if step_seconds else "—",
            "actual": _ran_for(record, now),
        },
    ]
    if "cost" in estimate:
        rows.append(
            {
                "what": "cost",
                "estimate": f"${estimate['cost']['value']:.2f}{basis(estimate['cost'])}",
                "actual": "—",
            }
        )
    return rows


def _ran_for(record: StatusRecord, now: datetime) -> str:
    """From the first RUNNING in the history to the end (or now, while it runs)."""
    started = next((entry.get("at") for entry in record.history if entry.get("state") == "RUNNING"), None)
    if not started:
        return "—"
    end = now if not has_ended(record) else datetime.fromisoformat(record.updated_at)
    seconds = max((end - datetime.fromisoformat(str(started))).total_seconds(), 0)
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" + (" so far" if not has_ended(record) else "")


def _changes(run_reports: list[RunReport]) -> list[dict[str, Any]]:
    """What each Spark step changed in the warehouse (the run reports' partitions and rows)."""
    return [
        {
            "step": step.id,
            "status": str(step.status),
            "rows_in": step.rows_in,
            "rows_out": step.rows_out,
            "partitions_written": step.partitions_written_count,
            "partitions_emptied": len(step.partitions_deleted),
            "bytes_written": size(step.bytes_written) if step.bytes_written is not None else "—",
            "table": step.output_table,
        }
        for report in run_reports
        for step in report.steps
    ][:200]


def _links(sources: Sources, record: StatusRecord, plan: Plan | None, links: Links) -> list[dict[str, str]]:
    settings = sources.settings
    found: list[dict[str, str]] = []
    dag_id = record.dag_id or settings.dag_id
    runs = dict.fromkeys(run_id for run_id in (record.backfill_id, record.dag_run_id) if run_id)
    if record.dag_run_id:
        for run_id in runs:
            found.append(
                {
                    "label": f"Airflow run {run_id}",
                    "href": f"{links.airflow_base}/dags/{quote(dag_id)}/runs/{quote(run_id)}",
                    "target": "_top",
                }
            )
    for dag in sorted({step.dag_id for step in (plan.steps if plan else []) if step.kind == "airflow_dag"})[
        :20
    ]:
        found.append(
            {
                "label": f"reruns of DAG {dag}",
                "href": f"{links.airflow_base}/dags/{quote(dag)}/runs",
                "target": "_top",
            }
        )
    if settings.slack_web_url and record.slack_channel and record.slack_thread_ts:
        href = safe_link(
            f"{settings.slack_web_url.rstrip('/')}/archives/{quote(record.slack_channel.lstrip('#'))}"
            f"/p{quote(record.slack_thread_ts.replace('.', ''))}"
        )
        if href:
            found.append({"label": "Slack thread", "href": href, "target": "_blank"})
    if sources.result_uri(record):
        found.append(
            {
                "label": "result file",
                "href": f"{links.page_base}/api/backfills/{quote(record.backfill_id)}/result",
                "target": "_blank",
            }
        )
    if settings.lineage_web_url:
        namespace = quote(settings.openlineage_namespace, safe="")
        href = safe_link(
            f"{settings.lineage_web_url.rstrip('/')}/lineage/job/{namespace}/{quote(record.backfill_id, safe='')}"
        )
        if href:
            attempt = record.run_attempt or 1
            found.append(
                {
                    "label": f"lineage (run {backfill_run_id(backfill_id=record.backfill_id, attempt=attempt)})",
                    "href": href,
                    "target": "_blank",
                }
            )
    return found


def cell_styles() -> list[dict[str, str]]:
    return [
        {
            "state": str(state),
            "code": style.code,
            "label": style.label,
            "color": style.color,
            "meaning": style.meaning,
        }
        for state, style in CELL_STATES.items()
    ]
