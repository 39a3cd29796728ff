"""What one valid batch config costs in AWS and HTTP round trips, counted on the wire the way
benchmarks/trigger.py counts them (botocore `before-send`, `http.client` requests), so neither
the calls nor the waits can grow unnoticed. Deployment as the benchmark's: Slack with a bot
token (threads), PagerDuty, a job catalog; no claims table, no policy, no OpenLineage events.

Every call is held `LATENCY` before it is sent, as if its answer took that long: calls sent
side by side overlap, and the round trips waited for one after another are the longest chain
of calls each sent after the previous one's answer (`waits`). A new container's first config
(cold: it reads the secrets, the catalog, Airflow's token and the jobs' run history, side by
side with the calls every config makes) waits 7; a second config of the same jobs (warm) 6."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest

from backfill_orchestrator.trigger import Disposition
from tests.support.trigger import VALID, TriggerHarness

REPO = Path(__file__).resolve().parents[2]
LATENCY = 1.0  # seconds per answer: far above starting a thread, even at a load of 16 on 2 CPUs

# What every config calls (docs/trigger.md, "Round trips"): the bare path's four (config
# GET, claim, DAG trigger, result file) plus lineage, the stored plan, Slack, and TRIGGERED
# after both (carrying the plan and the Slack thread), with the result file beside it. The
# plan's picture is written by the DAG run's start.
EXPECTED = {
    "s3.GetObject": 1,  # the upload
    # The claim (RECEIVED), and TRIGGERED with the plan (no PLANNED) and the Slack thread: the
    # claimed item replaced whole while it is as the claim left it (StatusStore.transition(held=...))
    "dynamodb.PutItem": 2,
    "marquez GET /api/v1/lineage": 1,  # the plan (sent beside the claim); freshness reads the roots' producers from it
    "s3.PutObject": 2,  # plan.json, the result file (the config: its uploaded version; plan.html: the run)
    "airflow POST /api/v2/dags/backfill/dagRuns": 1,
    "slack POST /api/chat.postMessage": 1,
}
# A new container also reads, once, what a warm one keeps: side by side with the above.
COLD_EXPECTED = {
    **EXPECTED,
    "s3.GetObject": 2,  # the upload, and the job catalog
    "secrets-manager.GetSecretValue": 2,  # Airflow's and Slack's (PagerDuty's only when it pages)
    "airflow POST /auth/token": 1,
    "marquez GET <job>/runs": 6,  # the estimate's run history, one read per planned job, side by side
}
WAITS, COLD_WAITS = 6, 7
WARMUP = b"""version: 1
name: warmup
owner: "@jane"
mode: batch
jobs: [{namespace: food_delivery, name: etl_drivers}]
dates: [2021-06-04]
downstream: {enabled: false}
"""
RUNS = re.compile(r"^marquez GET /api/v1/namespaces/[^/]+/jobs/[^/]+/runs$")


def benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trigger_benchmark", REPO / "benchmarks" / "trigger.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules.setdefault(
        spec.name, importlib.util.module_from_spec(spec)
    )  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def round_trips_class() -> Any:
    return benchmark().RoundTrips


@pytest.fixture
def harness(mocked_aws: None) -> Iterator[TriggerHarness]:
    with ExitStack() as stack:
        yield TriggerHarness(stack)


def config(name: str) -> bytes:
    return VALID.replace(b"name: ", f"name: {name}-".encode(), 1)


def test_a_valid_batch_config_waits_seven_round_trips_cold_and_six_warm(harness: TriggerHarness) -> None:
    bench = benchmark()
    names = {
        urlsplit(url).port: name
        for name, url in (
            ("marquez", harness.env["MARQUEZ_URL"]),
            ("airflow", harness.airflow.url),
            ("slack", harness.slack.api_url),
            ("pagerduty", harness.pagerduty.events_url),
        )
    }
    with bench.RoundTrips(names=names, latency=LATENCY) as counter:
        for client in (harness.s3, harness.dynamodb, harness.secrets):
            counter.watch_events(client.meta.events)
        runs = []
        for name in ("first", "second"):  # the container's first config, then one of the same jobs
            event = harness.upload(config(name), key=f"incoming/{name}.yaml")
            counter.take()
            results = harness.invoke(event)
            sent = counter.take_calls()
            calls = ["marquez GET <job>/runs" if RUNS.match(call.name) else call.name for call in sent]
            runs.append((results, event, calls, sent))
        (first, _, cold_calls, cold_sent), (second, event, calls, sent) = runs
        cold_waits, warm_waits = bench.waits(cold_sent, LATENCY), bench.waits(sent, LATENCY)

        duplicate = harness.invoke(event)
        duplicate_sent = counter.take_calls()

    assert [r.disposition for r in first] == [r.disposition for r in second] == [Disposition.ACCEPTED]
    assert dict(Counter(cold_calls)) == COLD_EXPECTED, Counter(cold_calls)
    assert dict(Counter(calls)) == EXPECTED, Counter(calls)
    assert (cold_waits, warm_waits) == (COLD_WAITS, WAITS), (cold_calls, calls)
    assert "dynamodb.GetItem" not in calls  # the Slack thread comes from the record in hand
    # Slack went out between the run's creation and TRIGGERED, which stored its thread.
    assert calls.index("airflow POST /api/v2/dags/backfill/dagRuns") < calls.index(
        "slack POST /api/chat.postMessage"
    )
    triggered = max(index for index, call in enumerate(calls) if call == "dynamodb.PutItem")
    assert calls.index("slack POST /api/chat.postMessage") < triggered
    # The result file (the last PutObject) went out side by side with TRIGGERED: one wait.
    result_file = max(index for index, call in enumerate(calls) if call == "s3.PutObject")
    assert abs(sent[result_file].sent - sent[triggered].sent) < LATENCY, (calls, sent)
    record = harness.status.get(second[0].backfill_id)
    assert record.state.value == "TRIGGERED" and record.dag_run_id == second[0].backfill_id
    assert (record.slack_channel, record.slack_thread_ts) == (
        harness.slack.messages[-1]["channel"],
        harness.slack.messages[-1]["ts"],
    )
    # A duplicate delivery reads the config, finds the claim taken, and stops; the lineage
    # query sent beside the claim is its only waste, and costs it no wait.
    assert [r.disposition for r in duplicate] == [Disposition.DUPLICATE]
    assert Counter(call.name for call in duplicate_sent) == Counter(
        ["s3.GetObject", "dynamodb.PutItem", "marquez GET /api/v1/lineage"]
    )
    assert bench.waits(duplicate_sent, LATENCY) == 2
    assert len(harness.slack.messages) == 2 and len(harness.airflow.runs) == 2
    plans = [harness.status.get(result.backfill_id).plan_summary for result in (*first, *second)]
    assert plans[0]["estimate"] == plans[1]["estimate"]  # the kept durations give the same estimate


def test_history_cache_seconds_zero_reads_the_durations_every_time(mocked_aws: None) -> None:
    with ExitStack() as stack:
        harness = TriggerHarness(stack, env={"HISTORY_CACHE_SECONDS": "0"})
        assert harness.wiring.durations is None
        assert harness.marquez is not None
        for name in ("first", "second"):
            result = harness.invoke(harness.upload(config(name), key=f"incoming/{name}.yaml"))
            assert [r.disposition for r in result] == [Disposition.ACCEPTED]
        assert len(harness.marquez.runs_requests()) == 12  # 6 planned jobs, twice


def test_with_the_templates_claims_table_admission_touches_only_its_own_keys(
    mocked_aws: None,
) -> None:
    """template.yaml always creates the claims table (overlap protection, docs/lifecycle.md):
    what admitting a backfill adds to the eight calls above, here with other backfills active (their
    runs never end on the double). The plan's six steps in one week are six (step, week)
    keys: one BatchGetItem reads them with the holder item; nothing claims its days there, so
    a PutItem writes its entry on each (no lease) and one more the holder item. Nothing about
    the backfills in flight is read: a new container admits with the same calls as a warm one."""
    import boto3

    from backfill_orchestrator.claims import registry
    from tests.support.aws import create_table

    with ExitStack() as stack:
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name="claims")
        harness = TriggerHarness(stack, env={"CLAIMS_TABLE": "claims"})
        names = {
            urlsplit(url).port: name
            for name, url in (
                ("marquez", harness.env["MARQUEZ_URL"]),
                ("airflow", harness.airflow.url),
                ("slack", harness.slack.api_url),
                ("pagerduty", harness.pagerduty.events_url),
            )
        }
        with round_trips_class()(names=names) as counter:
            for client in (harness.s3, harness.dynamodb, harness.secrets):
                counter.watch_events(client.meta.events)
            harness.invoke(harness.upload(WARMUP, key="incoming/warmup.yaml"))
            harness.invoke(
                harness.upload(config("first"), key="incoming/first.yaml")
            )  # reads these jobs' history
            registry._CLAIM_SETS.clear()  # a new container: it has seen no claim set
            calls = {}
            for name, day in (
                ("second", "2021-08-16"),  # a Monday: its week of dates is one ISO week
                ("third", "2021-10-18"),
            ):  # overlapping nothing active
                event = harness.upload(
                    config(name).replace(b"2021-06-04]", f"{day}]".encode()), key=f"incoming/{name}.yaml"
                )
                counter.take()
                (result,) = harness.invoke(event)
                assert result.disposition == Disposition.ACCEPTED
                calls[name] = counter.take()
    admission = {
        "s3.PutObject": 1,  # claims.json (named by the version written)
        "dynamodb.BatchGetItem": 1,  # the holder item and the six keys
        "dynamodb.PutItem": 6 + 1,  # six entries, the holder item
    }
    expected = Counter(EXPECTED) + Counter(admission)
    assert Counter(calls["second"]) == expected, Counter(calls["second"])
    assert Counter(calls["third"]) == expected, Counter(calls["third"])
    assert sum(expected.values()) == 8 + 9
