"""The preflight tests' world: the example job catalog, plans built on the Marquez double's
food delivery sample (in process), and upstream runs added to it for freshness and durations."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from backfill_local.marquez_double import InProcessMarquez, LineageStore, food_delivery_events, run_events
from backfill_orchestrator.config import backfill_id, parse_config
from backfill_orchestrator.planner import JobCatalog, build_plan
from backfill_orchestrator.settings.preflight import PreflightLimits
from tests.support.configs import EXAMPLES

EXAMPLE_CATALOG = JobCatalog.load(str(EXAMPLES / "catalog.yaml"))
TODAY = date(2021, 6, 30)
NOW = datetime(2021, 6, 30, 12, tzinfo=UTC)
LIMITS = PreflightLimits()
UPSTREAM_ROOT = {
    "namespace": "food_delivery",
    "name": "etl_orders_7_days",
}  # reads what etl_orders etc. write
DAY = datetime(2021, 6, 4, tzinfo=UTC)


def food_delivery() -> LineageStore:
    store = LineageStore()
    store.ingest_all(food_delivery_events())
    return store


def plan_of(cfg, store=None, catalog=EXAMPLE_CATALOG):  # noqa: ANN001, ANN201
    lineage = InProcessMarquez(store or food_delivery())
    return build_plan(
        cfg, backfill_id=backfill_id(cfg), lineage=lineage, catalog=catalog, today=TODAY, now=NOW
    )


def codes(findings):  # noqa: ANN001, ANN201
    return [(f.code, f.location) for f in findings]


def upstream_config(**extra):  # noqa: ANN003, ANN201
    """A config of UPSTREAM_ROOT for DAY and the day after, without downstream jobs."""
    return parse_config(
        {
            "version": 1,
            "name": "fresh",
            "owner": "@jane",
            "mode": "batch",
            "jobs": [UPSTREAM_ROOT],
            "dates": ["2021-06-04", "2021-06-05"],
            "downstream": {"enabled": False},
            **extra,
        }
    )


def store_with(*runs: tuple[str, datetime, str], sample: bool = True) -> LineageStore:
    """The food delivery sample, plus runs (job, nominal day, outcome) one day after their day.
    Without `sample`, only the upstream jobs of the root have runs for the dates (all COMPLETE)
    except those given."""
    store = LineageStore()
    store.ingest_all(food_delivery_events())
    given = {(job, day) for job, day, _ in runs}
    if not sample:
        for job in ("etl_menus", "etl_menu_items", "etl_categories", "etl_orders"):
            for day in (DAY, DAY + timedelta(days=1)):
                if (job, day) not in given:
                    runs = (*runs, (job, day, "COMPLETE"))
    for job, day, outcome in runs:
        store.ingest_all(
            run_events(
                "food_delivery",
                job,
                nominal=(day, day + timedelta(days=1)),
                outcome=outcome,
                event_time=day + timedelta(days=1, hours=1),
                duration=timedelta(minutes=10),
            )
        )
    return store


def stale(found):
    return [f for f in found.findings if f.code == "stale_upstream"]


def seconds_of(found, step_id):
    return next(step.seconds for step in found.estimate.steps if step.step_id == step_id)
