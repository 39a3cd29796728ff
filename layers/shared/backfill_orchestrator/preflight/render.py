"""A plan as a picture: the estimate as text, Mermaid and Graphviz DOT graphs by waves, and a
self-contained HTML report (inline CSS, no scripts, nothing fetched when it is opened)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

from backfill_orchestrator.contracts.plan import Plan, PlanStep
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.planner.render import render_plan_text

FORMATS = ("text", "json", "mermaid", "dot", "html")
_UNITS = ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))


def size(count: float) -> str:
    for factor, unit in _UNITS:
        if count >= factor:
            return f"{count / factor:.1f} {unit}"
    return f"{int(count)} B"


def duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return (
        f"{minutes // 60} h {minutes % 60} min"
        if minutes >= 60
        else f"{max(minutes, 1) if seconds else 0} min"
    )


def _figure(figure: dict[str, Any], text: str) -> str:
    return f"{text} ({figure['basis']})"


def _step_estimates(plan: Plan) -> dict[str, dict[str, Any]]:
    return {entry["step"]: entry for entry in (plan.estimate or {}).get("steps", [])}


def step_estimate_text(entry: dict[str, Any] | None) -> str:
    if not entry:
        return ""
    parts = [_figure(entry["partitions"], f"{int(entry['partitions']['value'])} partitions")]
    if "bytes_to_read" in entry:
        parts.append(_figure(entry["bytes_to_read"], f"reads {size(entry['bytes_to_read']['value'])}"))
    if "bytes_to_stage" in entry:
        parts.append(_figure(entry["bytes_to_stage"], f"stages {size(entry['bytes_to_stage']['value'])}"))
    parts.append(_figure(entry["seconds"], f"~{duration(entry['seconds']['value'])}"))
    return ", ".join(parts)


def estimate_text(plan: Plan) -> str:
    estimate = plan.estimate
    if not estimate:
        return ""
    lines = [
        "estimate:",
        f"  partitions to rewrite: {int(estimate['partitions'])}"
        + (
            " (assumed)"
            if any(e["partitions"]["basis"] == "assumed" for e in estimate["steps"])
            else " (measured)"
        ),
        "  bytes to read: "
        + (
            "not listed"
            if estimate["bytes_to_read"] is None
            else f"{size(estimate['bytes_to_read'])} (measured)"
        ),
    ]
    if estimate.get("bytes_to_stage") is not None:
        lines.append(f"  bytes to stage (and keep as backups): {size(estimate['bytes_to_stage'])} (measured)")
    lines += [
        "  " + _figure(estimate["dag_reruns"], f"DAG reruns: {int(estimate['dag_reruns']['value'])}"),
        "  " + _figure(estimate["rounds"], f"rounds: {int(estimate['rounds']['value'])}"),
        "  "
        + _figure(estimate["cost"], f"cost: ${estimate['cost']['value']:.2f} ({plan.spark_profile} profile)"),
    ]
    lines += [f"  {step}: {step_estimate_text(entry)}" for step, entry in _step_estimates(plan).items()]
    return "\n".join(lines) + "\n"


def estimate_line(estimate: dict[str, Any]) -> str:
    """One line for Slack: partitions, bytes, reruns, duration and cost, assumed figures marked."""
    steps = estimate.get("steps", [])
    seconds = sum(step["seconds"]["value"] for step in steps)
    basis = "assumed" if any(step["seconds"]["basis"] == "assumed" for step in steps) else "measured"
    read = (
        "inputs not listed"
        if estimate.get("bytes_to_read") is None
        else f"reads {size(estimate['bytes_to_read'])}"
    )
    if estimate.get("bytes_to_stage") is not None:
        read += f", stages {size(estimate['bytes_to_stage'])}"
    return (
        f"{int(estimate['partitions'])} partitions, {read}, {int(estimate['dag_reruns']['value'])} DAG reruns, "
        f"~{duration(seconds)} of steps ({basis}), ${estimate['cost']['value']:.2f} ({estimate['cost']['basis']})"
    )


def _node(step: PlanStep) -> str:
    return "s_" + "".join(ch if ch.isalnum() else "_" for ch in step.id)


def _label(step: PlanStep) -> str:
    return f"{step.id} ({step.kind}) {compact_dates(step.dates)}"


def _subgraphs(
    plan: Plan, opening: Callable[[int], str], node: Callable[[PlanStep], str], closing: str
) -> list[str]:
    """Each wave as a subgraph: its opening line (given the wave's number), a line a step, its closing line."""
    lines: list[str] = []
    for wave in plan.waves:
        lines += [opening(wave.index + 1), *(node(step) for step in wave.steps), closing]
    return lines


def _edges(plan: Plan) -> list[tuple[str, str]]:
    """(parent node, child node), a pair for each upstream step of each step."""
    by_id = {step.id: step for step in plan.steps}
    return [(_node(by_id[parent]), _node(step)) for step in plan.steps for parent in step.upstream]


def _mermaid_wave(number: int) -> str:
    return f'  subgraph wave{number}["wave {number}"]'


def _mermaid_step(step: PlanStep) -> str:
    return f'    {_node(step)}["{_label(step).replace(chr(34), chr(39))}"]'


def render_mermaid(plan: Plan) -> str:
    waves = _subgraphs(plan, _mermaid_wave, _mermaid_step, "  end")
    edges = [f"  {parent} --> {child}" for parent, child in _edges(plan)]
    return "\n".join(["flowchart LR", *waves, *edges]) + "\n"


def _dot_wave(number: int) -> str:
    return f'  subgraph cluster_wave{number} {{ label="wave {number}";'


def _dot_step(step: PlanStep) -> str:
    return f"    {_node(step)} [label={json.dumps(_label(step))}];"


def render_dot(plan: Plan) -> str:
    head = [f"digraph {json.dumps(plan.backfill_id)} {{", "  rankdir=LR;", "  node [shape=box];"]
    waves = _subgraphs(plan, _dot_wave, _dot_step, "  }")
    edges = [f"  {parent} -> {child};" for parent, child in _edges(plan)]
    return "\n".join([*head, *waves, *edges]) + "\n}\n"


_CSS = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}.wave{display:flex;gap:1em;margin:1em 0}"
    ".step{border:1px solid #888;border-radius:6px;padding:8px;min-width:14em}.spark{background:#eef6ff}"
    ".airflow_dag{background:#f4f4f4}pre{background:#fafafa;padding:1em}"
)


def _html_head(plan: Plan) -> str:
    esc = html.escape
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>plan {esc(plan.backfill_id)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Plan {esc(plan.backfill_id)}</h1>"
        f"<p>{esc(plan.name)}, owner {esc(plan.owner)}; dates {esc(compact_dates(plan.dates))}; spark {esc(plan.spark_profile)}</p>"
    )


def _html_step(step: PlanStep, estimate: dict[str, Any] | None) -> str:
    esc = html.escape
    after = f"<br>after {esc(', '.join(step.upstream))}" if step.upstream else ""
    return (
        f"<div class='step {step.kind}'><b>{esc(step.id)}</b> ({step.kind})<br>"
        f"{esc(str(step.job))}<br>dates {esc(compact_dates(step.dates))} ({len(step.dates)}){after}"
        f"<br><small>{esc(step_estimate_text(estimate))}</small></div>"
    )


def render_html(plan: Plan) -> str:
    """One file, no network: the waves side by side, each step with its dates and estimate."""
    estimates = _step_estimates(plan)
    parts = [_html_head(plan)]
    for wave in plan.waves:
        steps = "".join(_html_step(step, estimates.get(step.id)) for step in wave.steps)
        parts.append(f"<h2>Wave {wave.index + 1}</h2><div class='wave'>{steps}</div>")
    if plan.estimate:
        parts.append(f"<h2>Estimate</h2><pre>{html.escape(estimate_text(plan))}</pre>")
    if plan.warnings:
        parts.append(
            "<h2>Warnings</h2><ul>"
            + "".join(f"<li>{html.escape(w.message)}</li>" for w in plan.warnings)
            + "</ul>"
        )
    parts.append("</body></html>\n")
    return "".join(parts)


def render(plan: Plan, fmt: str) -> str:
    if fmt == "json":
        return plan.to_json()
    if fmt == "mermaid":
        return render_mermaid(plan)
    if fmt == "dot":
        return render_dot(plan)
    if fmt == "html":
        return render_html(plan)
    return render_plan_text(plan) + estimate_text(plan)
