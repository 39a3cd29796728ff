"""One count of the partitions a plan rewrites (planner/partitions.py): the estimate, the plan's
text and page, the approval gate's reason and its threshold agree on the example plans."""

from __future__ import annotations

import pytest

from backfill_local.marquez_double import InProcessMarquez, LineageStore, food_delivery_events
from backfill_orchestrator.client import plan_backfill
from backfill_orchestrator.config import parse_config
from backfill_orchestrator.planner import JobCatalog
from backfill_orchestrator.planner.partitions import catalog_entries, plan_partitions
from backfill_orchestrator.policy import PlanFacts, needs_approval, parse_policy
from backfill_orchestrator.preflight import Reach, preflight_plan
from backfill_orchestrator.preflight.render import estimate_line, render
from backfill_orchestrator.settings.preflight import PreflightLimits
from tests.support.configs import EXAMPLES

CATALOG = JobCatalog.load(str(EXAMPLES / "catalog.yaml"))


def lineage() -> InProcessMarquez:
    store = LineageStore()
    store.ingest_all(food_delivery_events())
    return InProcessMarquez(store)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        # etl_orders: hourly, 24 hours x 3 feeds (72); 5 daily steps: 7 dates x 3 feeds each (105)
        ("", 177),
        ("hours: [1, 2]\n", 2 * 3 + 105),
        ("feeds: [web]\n", 24 + 5 * 7),
    ],
    ids=["minimal", "two-hours", "one-feed"],
)
def test_the_estimate_the_text_the_slack_line_and_the_gate_say_one_number(extra, expected):
    text = (EXAMPLES / "minimal-batch.yaml").read_text() + extra
    config = parse_config(text, fmt="yaml")
    view = plan_backfill(text, lineage=lineage(), catalog=CATALOG)
    _, plan = preflight_plan(config, view.plan, Reach(PreflightLimits(), catalog=CATALOG))
    assert plan_partitions(plan, catalog_entries(plan, CATALOG)) == expected
    assert plan.estimate is not None and int(plan.estimate["partitions"]) == expected
    assert f"partitions to rewrite: {expected} (measured)" in render(plan, "text")
    assert f"partitions to rewrite: {expected}" in render(plan, "html")
    assert estimate_line(plan.estimate).startswith(f"{expected} partitions,")
    facts = PlanFacts.from_plan(plan)
    assert facts.partitions == expected
    policy = parse_policy(f"version: 1\napproval: {{max_partitions: {expected - 1}}}\n")
    assert needs_approval(policy, facts) == [
        f"partitions: {expected:,} is over approval.max_partitions ({expected - 1:,})"
    ]
    assert (
        needs_approval(parse_policy(f"version: 1\napproval: {{max_partitions: {expected}}}\n"), facts) == []
    )


def test_a_plan_without_an_estimate_is_counted_by_the_same_function():
    view = plan_backfill((EXAMPLES / "minimal-batch.yaml").read_text(), lineage=lineage(), catalog=CATALOG)
    assert view.plan.estimate is None  # no catalog: a partition per date of each step (assumed)
    assert PlanFacts.from_plan(view.plan).partitions == plan_partitions(view.plan) == 1 + 5 * 7
