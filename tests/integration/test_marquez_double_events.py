"""The Marquez double takes OpenLineage events over HTTP as Marquez does (201, 400, 422) and
shows a backfill's runs: the emitter's real HTTP transport against it, read back through
the jobs, runs and lineage endpoints."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
import requests

from backfill_local.marquez_double import MarquezDouble
from backfill_orchestrator.lineage_events import (
    LineageEmitter,
    LineageSettings,
    backfill_aborted,
    backfill_finished,
    backfill_started,
    dag_reruns,
    spark_steps,
)

from ..unit.test_lineage_events import BACKFILL, FACTS, run_report

VALID = {
    "eventType": "START",
    "eventTime": "2026-01-02T09:00:00Z",
    "producer": "https://example.com/p",
    "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    "run": {"runId": "0195a0a4-6a4d-7c1e-9d3a-7e2f1b0c4d5e"},
    "job": {"namespace": "ns", "name": "job"},
}


def post(double: MarquezDouble, body: object, *, raw: bytes | None = None) -> requests.Response:
    data = raw if raw is not None else json.dumps(body).encode()
    return requests.post(
        f"{double.url}/api/v1/lineage", data=data, headers={"Content-Type": "application/json"}, timeout=10
    )


def test_posted_events_are_checked_like_marquez():
    with MarquezDouble() as double:
        assert post(double, VALID).status_code == 201
        assert post(double, None, raw=b"{not json").status_code == 400
        for broken, message in (
            ({**VALID, "run": {"runId": "42"}}, "run.runId: not a UUID"),
            ({**VALID, "eventType": "DONE"}, "eventType: must be one of"),
            ({k: v for k, v in VALID.items() if k != "schemaURL"}, "schemaURL: required"),
            ({**VALID, "job": {"namespace": "ns"}}, "job.name: required"),
            ([VALID], "an event must be a JSON object"),
        ):
            answer = post(double, broken)
            assert answer.status_code == 422, broken
            assert message in answer.json()["message"]
        assert len(double.events) == 1


def test_strict_spec_mode_validates_facets_against_their_schemas():
    bad_facet = {
        **VALID,
        "run": {
            **VALID["run"],
            "facets": {
                "parent": {
                    "_producer": "https://example.com/p",
                    "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/ParentRunFacet.json#/$defs/ParentRunFacet",
                    "run": {"runId": "nope"},
                    "job": {"namespace": "ns", "name": "p"},
                }
            },
        },
    }
    with MarquezDouble(strict_spec=True) as double:
        answer = post(double, bad_facet)
        assert answer.status_code == 422
        assert "run.facets.parent.run.runId: 'nope' is not a 'uuid'" in answer.json()["message"]
    with MarquezDouble() as double:  # Marquez itself does not check facets
        assert post(double, bad_facet).status_code == 201


def test_a_backfill_sent_through_the_real_transport_shows_as_parent_and_children():
    with MarquezDouble(seed="food_delivery", strict_spec=True) as double:
        settings = LineageSettings.parse(json.dumps({"type": "http", "url": double.url}), FACTS.namespace)
        emitter = LineageEmitter.from_settings(settings)
        backfill_started(emitter, FACTS)
        spark_steps(emitter, FACTS, run_report(), warehouse="s3a://lake/warehouse")
        dag_reruns(
            emitter,
            FACTS,
            step_id="email_discounts",
            dag_id="email_discounts",
            dates={"2021-06-04": "success"},
        )
        backfill_finished(emitter, FACTS, "FAIL", reason="steps not succeeded: etl_orders_7_days")
        assert (emitter.sent, emitter.failed) == (8, 0)  # every one passed strict spec validation

        jobs = requests.get(f"{double.url}/api/v1/namespaces/{FACTS.namespace}/jobs", timeout=10).json()[
            "jobs"
        ]
        by_name = {job["name"]: job for job in jobs}
        assert by_name[BACKFILL]["parentJobName"] is None
        assert by_name[BACKFILL]["latestRun"]["state"] == "FAILED"
        assert by_name[BACKFILL]["latestRun"]["facets"]["backfill"]["submitter"] == "jane@example.com"
        children = {name: job for name, job in by_name.items() if job["parentJobName"] == BACKFILL}
        assert {job["simpleName"]: job["latestRun"]["state"] for job in children.values()} == {
            "etl_orders": "COMPLETED",
            "etl_orders_7_days": "FAILED",
            "email_discounts": "COMPLETED",
        }
        # The spark step's datasets are in the lineage graph, as Marquez builds it from events.
        node = quote(f"job:{FACTS.namespace}:{BACKFILL}.etl_orders", safe="")
        graph = requests.get(f"{double.url}/api/v1/lineage?nodeId={node}", timeout=10).json()["graph"]
        ids = {n["id"] for n in graph}
        assert {"dataset:s3://lake:warehouse/raw_orders", "dataset:s3://lake:warehouse/orders"} <= ids
        runs = requests.get(
            f"{double.url}/api/v1/namespaces/{FACTS.namespace}/jobs/{quote(f'{BACKFILL}.etl_orders', safe='')}/runs",
            timeout=10,
        ).json()["runs"]
        [run] = runs
        assert run["facets"]["parent"]["run"]["runId"] == by_name[BACKFILL]["latestRun"]["id"]

        backfill_aborted(emitter, FACTS, reason="cancelled")
        runs = requests.get(
            f"{double.url}/api/v1/namespaces/{FACTS.namespace}/jobs/{BACKFILL}/runs", timeout=10
        ).json()
        assert [r["state"] for r in runs["runs"]] == ["ABORTED"]
        missing = requests.get(f"{double.url}/api/v1/namespaces/{FACTS.namespace}/jobs/nope/runs", timeout=10)
        assert missing.status_code == 404 and missing.json()["message"] == "Job 'nope' not found."


def test_the_demo_prints_the_backfill_run_its_spark_steps_and_reruns():
    from backfill_local.lineage_report import LineageMissingError, backfill_lineage

    with MarquezDouble(seed="food_delivery", strict_spec=True) as double:
        emitter = LineageEmitter.from_settings(
            LineageSettings.parse(json.dumps({"type": "http", "url": double.url}), FACTS.namespace)
        )
        with pytest.raises(LineageMissingError, match="has no run of job"):
            backfill_lineage(double.url, namespace=FACTS.namespace, backfill_id=BACKFILL)
        backfill_started(emitter, FACTS)
        spark_steps(emitter, FACTS, run_report(), warehouse="s3a://lake/warehouse")
        dag_reruns(
            emitter,
            FACTS,
            step_id="email_discounts",
            dag_id="email_discounts",
            dates={"2021-06-04": "success", "2021-06-10": "success"},
        )
        backfill_finished(emitter, FACTS, "COMPLETE")
        lines = backfill_lineage(double.url, namespace=FACTS.namespace, backfill_id=BACKFILL)
    text = "\n".join(lines)
    assert lines[0].startswith(f"backfill {FACTS.namespace}/{BACKFILL} run ") and ": COMPLETED" in lines[0]
    assert "trace 1-5759e988-bd862e3fe1be46a994272793" in lines[0]
    assert "↳ Spark step etl_orders: 1 run(s), writes warehouse/orders" in text
    assert "↳ Spark step etl_orders_7_days: 1 run(s)" in text
    assert "↳ DAG rerun email_discounts: 2 run(s)" in text
    assert "      COMPLETED for 2021-06-04, 06-10" in text
