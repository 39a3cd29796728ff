"""The safe publish contracts: the run report's awaiting_publish status, a policy override
that may only narrow the deployment's, and the manifest's consistency rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backfill_orchestrator.contracts import InvalidDocumentError, PublishManifest, PublishPolicy, RunReport


def report(*steps: dict) -> dict:
    return {
        "report_version": 2,
        "backfill_id": "fix-orders-0000000a",
        "plan": "/tmp/plan.json",
        "warehouse": "/tmp/warehouse",
        "application_id": "local-1",
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:01:00Z",
        "seconds": 60,
        "steps": list(steps),
    }


def step(step_id: str, status: str, **extra) -> dict:
    return {"id": step_id, "transform": step_id, "wave": 0, "status": status, "seconds": 1.0, **extra}


def test_a_run_whose_unfinished_steps_wait_for_a_publish_is_awaiting_publish():
    held = RunReport.from_json(
        report(
            step(
                "etl_orders",
                "awaiting_publish",
                hold_reasons=["day=2021-05-05/hour=3/feed=web: 50.0% of rows removed"],
            ),
            step("etl_orders_7_days", "blocked", blocked_by=["etl_orders"]),
            step("etl_delivery_7_days", "blocked", blocked_by=["etl_orders_7_days"]),
            step("other", "succeeded"),
        )
    )
    assert held.status == "awaiting_publish" and not held.succeeded
    assert held.step("etl_orders").detail == (
        "staged, awaiting publish: day=2021-05-05/hour=3/feed=web: 50.0% of rows removed"
    )
    failed = RunReport.from_json(
        report(step("etl_orders", "awaiting_publish"), step("b", "failed", error="boom"))
    )
    assert failed.status == "failed"
    cancelled = RunReport.from_json(
        report(step("etl_orders", "awaiting_publish"), step("b", "blocked", blocked_by=["cancelled"]))
    )
    assert cancelled.status == "failed"
    with pytest.raises(
        InvalidDocumentError, match="status is succeeded but steps etl_orders did not succeed"
    ):
        RunReport.from_json({**report(step("etl_orders", "awaiting_publish")), "status": "succeeded"})


def test_a_config_may_narrow_the_deployments_policy_but_not_loosen_it():
    deployment = PublishPolicy(max_rows_removed_percent=5, allow_emptied_partitions=False)
    assert (
        PublishPolicy(max_rows_removed_percent=1, allow_emptied_partitions=False, auto_publish=True).within(
            deployment
        )
        == []
    )
    assert PublishPolicy(max_rows_removed_percent=10, require_rules=False).within(deployment) == [
        "require_rules",
        "max_rows_removed_percent",
        "allow_emptied_partitions",
    ]
    assert PublishPolicy(auto_publish=True).within(PublishPolicy(auto_publish=False)) == ["auto_publish"]
    with pytest.raises(
        InvalidDocumentError,
        match="max_rows_removed_percent: input should be less than or equal to 100, got 120",
    ):
        PublishPolicy.from_json({"policy_version": 1, "max_rows_removed_percent": 120})


def test_a_manifest_lists_each_partition_once_and_only_deletes_lack_a_staged_location():
    now = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    base = {
        "manifest_version": 1,
        "backfill_id": "fix-orders-0000000a",
        "attempt": 1,
        "step_id": "etl_orders",
        "table": "orders",
        "table_kind": "path",
        "table_uri": "/w/processed/orders",
        "partition_columns": ["day"],
        "staging_uri": "/w/_backfill/staging/fix-orders-0000000a/a1/etl_orders",
        "state": "staged",
        "created_at": now,
        "updated_at": now,
    }
    entry = {
        "partition": "day=2021-05-05",
        "action": "replace",
        "live_location": "/w/processed/orders/day=2021-05-05",
    }
    with pytest.raises(
        InvalidDocumentError, match="partition day=2021-05-05: only a delete has no staged_location"
    ):
        PublishManifest.from_json({**base, "partitions": [entry]})
    staged = {**entry, "staged_location": "/w/s/day=2021-05-05"}
    with pytest.raises(InvalidDocumentError, match="partition day=2021-05-05 is listed twice"):
        PublishManifest.from_json({**base, "partitions": [staged, staged]})
    with pytest.raises(InvalidDocumentError, match="a hive table names its catalog_table"):
        PublishManifest.from_json({**base, "table_kind": "hive", "partitions": [staged]})
