"""The plan as a picture with its edges, drawn here as SVG (no script, nothing fetched): one
column per wave, one box per step (its kind, round, dates and, for a DAG step, its reruns), one
arrow per `upstream` edge. Each box carries `data-state` (a `CellState`), which the page's
stylesheet colours and its script updates while the backfill runs.

Layout: a step's column is its wave; within a column, steps are ordered by the mean row of
their parents (one pass, wave by wave), which keeps most edges short and uncrossed."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from backfill_orchestrator.contracts.plan import Plan, PlanStep
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.planner.rounds import plan_rounds
from backfill_orchestrator.ui.states import CellState

NODE_W, NODE_H = 190, 62
GAP_X, GAP_Y = 50, 18
PAD, HEADER = 12, 26
MAX_GRAPH_STEPS = 400  # a bigger plan is drawn up to this many steps (the page says so)
MAX_LABEL = 25


def _clip(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plan_svg(plan: Plan, states: Mapping[str, CellState]) -> str:
    """The SVG element (a string; every text escaped) for `plan`, steps coloured by `states`."""
    steps = plan.steps[:MAX_GRAPH_STEPS]
    drawn = {step.id for step in steps}
    round_of = {step_id: r.index for r in plan_rounds(plan) for step_id in r.step_ids}
    columns: dict[int, list[PlanStep]] = {}
    row_of: dict[str, int] = {}
    for wave in plan.waves:
        members = [step for step in wave.steps if step.id in drawn]
        if not members:
            continue

        def weight(step: PlanStep) -> float:
            parents = [row_of[parent] for parent in step.upstream if parent in row_of]
            return sum(parents) / len(parents) if parents else float("inf")

        members.sort(key=weight)
        columns[wave.index] = members
        for row, step in enumerate(members):
            row_of[step.id] = row
    column_of = {step.id: index for index, members in enumerate(columns.values()) for step in members}
    rows = max((len(members) for members in columns.values()), default=0)
    width = PAD * 2 + len(columns) * NODE_W + max(len(columns) - 1, 0) * GAP_X
    height = PAD * 2 + HEADER + rows * NODE_H + max(rows - 1, 0) * GAP_Y

    def box(step_id: str) -> tuple[int, int]:
        return (
            PAD + column_of[step_id] * (NODE_W + GAP_X),
            PAD + HEADER + row_of[step_id] * (NODE_H + GAP_Y),
        )

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plan-graph" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'aria-label="plan of {escape(plan.backfill_id)}: {len(plan.steps)} steps in {len(plan.waves)} waves">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head"/></marker></defs>',
    ]
    for index, wave_index in enumerate(columns):
        x = PAD + index * (NODE_W + GAP_X)
        parts.append(f'<text class="wave-label" x="{x}" y="{PAD + 14}">wave {wave_index + 1}</text>')
    for step in steps:  # edges first: boxes are drawn over them
        for parent in step.upstream:
            if parent not in drawn:
                continue
            (px, py), (cx, cy) = box(parent), box(step.id)
            x1, y1, x2, y2 = px + NODE_W, py + NODE_H / 2, cx, cy + NODE_H / 2
            bend = max((x2 - x1) / 2, 30)
            parts.append(
                f'<path class="edge" data-from="{escape(parent)}" data-to="{escape(step.id)}" '
                f'd="M {x1} {y1} C {x1 + bend} {y1}, {x2 - bend} {y2}, {x2} {y2}" marker-end="url(#arrow)"/>'
            )
    for step in steps:
        x, y = box(step.id)
        state = states.get(step.id, CellState.PENDING)
        what = (
            f"spark · round {round_of.get(step.id, 0) + 1}"
            if step.kind == "spark"
            else f"DAG {_clip(step.dag_id, 14)} ×{len(step.dates)} · round {round_of.get(step.id, 0) + 1}"
        )
        title = (
            f"{step.id} ({step.kind}, DAG {step.dag_id}) for {step.job}\n"
            f"dates {compact_dates(step.dates)}"
            + (f"\nafter {', '.join(step.upstream)}" if step.upstream else "")
        )
        parts.append(
            f'<g class="step" data-step="{escape(step.id)}" data-state="{state}" transform="translate({x},{y})">'
            f"<title>{escape(title)}</title>"
            f'<rect class="node" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<text class="node-id" x="10" y="19">{escape(_clip(step.id))}</text>'
            f'<text class="node-kind" x="10" y="37">{escape(what)}</text>'
            f'<text class="node-dates" x="10" y="54">{escape(_clip(compact_dates(step.dates), 34))}'
            f" ({len(step.dates)} d)</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)
