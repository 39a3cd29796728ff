"""Each invalid config is rejected with the expected location (and the gist of the message)."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest

from backfill_orchestrator.config import ConfigPolicy, InvalidConfigError, parse_config
from tests.support.configs import VALID_BATCH, VALID_REPLAY

POLICY = ConfigPolicy(today=date(2026, 11, 21))
DELETE = object()


def mutate(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    for dotted, value in changes.items():
        keys = dotted.split("__")
        target = doc
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        if value is DELETE:
            target.pop(keys[-1], None)
        else:
            target[keys[-1]] = value
    return doc


def batch(**changes: Any) -> dict[str, Any]:
    return mutate(VALID_BATCH, **changes)


def replay(**changes: Any) -> dict[str, Any]:
    return mutate(VALID_REPLAY, **changes)


# (case id, document (dict or raw text), expected location, fragment of the message)
CASES: list[tuple[str, Any, str, str]] = [
    ("version-missing", batch(version=DELETE), "version", "field required"),
    ("version-2", batch(version=2), "version", "only version 1"),
    ("version-string", batch(version="1"), "version", "only version 1"),
    ("version-bool", batch(version=True), "version", "only version 1"),
    ("name-missing", batch(name=DELETE), "name", "field required"),
    ("name-uppercase", batch(name="Orders"), "name", "a-z, 0-9"),
    ("name-too-long", batch(name="a" * 25), "name", "1 to 24"),
    ("name-leading-dash", batch(name="-orders"), "name", "starting with"),
    ("name-underscore", batch(name="orders_june"), "name", "a-z, 0-9"),
    ("name-not-string", batch(name=123), "name", "valid string"),
    ("description-too-long", batch(description="x" * 501), "description", "at most 500"),
    ("owner-missing", batch(owner=DELETE), "owner", "field required"),
    ("owner-bad", batch(owner="jane"), "owner", "email address or a Slack handle"),
    ("owner-bad-handle", batch(owner="@ jane"), "owner", "email address or a Slack handle"),
    ("mode-missing", batch(mode=DELETE), "mode", "field required"),
    ("mode-unknown", batch(mode="stream"), "mode", "'batch' or 'replay'"),
    ("jobs-missing-batch", batch(jobs=DELETE), "jobs", "required for mode batch"),
    ("jobs-empty", batch(jobs=[]), "jobs", "at least 1"),
    ("jobs-not-list", batch(jobs={"namespace": "a", "name": "b"}), "jobs", "valid list"),
    ("job-name-missing", batch(jobs=[{"namespace": "food_delivery"}]), "jobs[0].name", "field required"),
    ("job-namespace-blank", batch(jobs=[{"namespace": " ", "name": "x"}]), "jobs[0].namespace", "non-blank"),
    (
        "job-extra-key",
        batch(jobs=[{"namespace": "a", "name": "b", "nmae": "c"}]),
        "jobs[0].nmae",
        "did you mean 'name'",
    ),
    (
        "job-duplicate",
        batch(jobs=[{"namespace": "a", "name": "b"}, {"namespace": "a", "name": "b"}]),
        "jobs[1]",
        "duplicate of jobs[0]",
    ),
    ("dates-missing", batch(dates=DELETE), "dates", "field required"),
    ("dates-empty", batch(dates=[]), "dates", "at least 1"),
    ("date-not-calendar", batch(dates=["2021-02-30"]), "dates[0]", "not a real calendar date"),
    ("date-bad-format", batch(dates=["06/04/2021"]), "dates[0]", "YYYY-MM-DD"),
    ("date-number", batch(dates=[20210604]), "dates[0]", "YYYY-MM-DD"),
    ("date-future", batch(dates=["2026-11-22"]), "dates[0]", "after today"),
    ("date-with-time", batch(dates=["2021-06-04T00:00:00"]), "dates[0]", "YYYY-MM-DD"),
    (
        "range-reversed",
        batch(dates=["2021-06-04", {"start": "2021-06-12", "end": "2021-06-10"}]),
        "dates[1].end",
        "must not be before start (2021-06-12)",
    ),
    ("range-missing-end", batch(dates=[{"start": "2021-06-12"}]), "dates[0].end", "field required"),
    (
        "range-extra-key",
        batch(dates=[{"start": "2021-06-10", "end": "2021-06-12", "step": 2}]),
        "dates[0].step",
        "unknown key",
    ),
    (
        "range-future-end",
        batch(dates=[{"start": "2026-11-01", "end": "2026-12-01"}]),
        "dates[0].end",
        "after today",
    ),
    ("dates-too-many", batch(dates=[{"start": "2020-01-01", "end": "2021-02-04"}]), "dates", "at most 400"),
    ("hours-out-of-range", batch(hours=[0, 24]), "hours[1]", "less than or equal to 23"),
    ("hours-negative", batch(hours=[-1]), "hours[0]", "greater than or equal to 0"),
    ("hours-duplicate", batch(hours=[1, 2, 1]), "hours[2]", "duplicate of hours[0]"),
    ("hours-string", batch(hours=["1"]), "hours[0]", "valid integer"),
    ("hours-bool", batch(hours=[True]), "hours[0]", "valid integer"),
    ("hours-empty", batch(hours=[]), "hours", "at least 1"),
    ("feeds-bad-pattern", batch(feeds=["Orders"]), "feeds[0]", "a-z, 0-9 and _"),
    ("feeds-duplicate", batch(feeds=["orders", "orders"]), "feeds[1]", "duplicate of feeds[0]"),
    ("feeds-too-long", batch(feeds=["x" * 65]), "feeds[0]", "1 to 64"),
    (
        "downstream-depth-zero",
        batch(downstream={"max_depth": 0}),
        "downstream.max_depth",
        "greater than or equal to 1",
    ),
    (
        "downstream-depth-big",
        batch(downstream={"max_depth": 201}),
        "downstream.max_depth",
        "less than or equal to 200",
    ),
    (
        "downstream-enabled-string",
        batch(downstream={"enabled": "yes"}),
        "downstream.enabled",
        "valid boolean",
    ),
    (
        "downstream-exclude-dup",
        batch(downstream={"exclude": [{"namespace": "a", "name": "b"}] * 2}),
        "downstream.exclude[1]",
        "duplicate of downstream.exclude[0]",
    ),
    (
        "downstream-exclude-incomplete",
        batch(downstream={"exclude": [{"name": "b"}]}),
        "downstream.exclude[0].namespace",
        "field required",
    ),
    ("downstream-typo", batch(downstream={"max_deph": 3}), "downstream.max_deph", "did you mean 'max_depth'"),
    (
        "spark-profile",
        batch(spark={"profile": "huge"}),
        "spark.profile",
        "unknown profile 'huge'; known: large, medium, small",
    ),
    ("spark-profile-typo", batch(spark={"profile": "lage"}), "spark.profile", "did you mean 'large'"),
    ("batch-with-replay", batch(replay={"target": "orders-ingest"}), "replay", "not allowed for mode batch"),
    ("replay-missing-target", replay(replay=DELETE), "replay", "required for mode replay"),
    ("replay-missing-feeds", replay(feeds=DELETE), "feeds", "required for mode replay"),
    (
        "replay-with-jobs",
        replay(jobs=[{"namespace": "a", "name": "b"}]),
        "jobs",
        "not allowed for mode replay",
    ),
    (
        "replay-with-downstream",
        replay(downstream={"enabled": False}),
        "downstream",
        "not allowed for mode replay",
    ),
    ("replay-with-spark", replay(spark={"profile": "small"}), "spark", "not allowed for mode replay"),
    (
        "replay-rate-high",
        replay(replay={"target": "orders-ingest", "max_messages_per_second": 3001}),
        "replay.max_messages_per_second",
        "less than or equal to 3000",
    ),
    ("replay-target-bad", replay(replay={"target": "Orders Ingest"}), "replay.target", "target name"),
    (
        "notify-channel-bad",
        batch(notify={"slack_channel": "data-oncall"}),
        "notify.slack_channel",
        "Slack channel",
    ),
    ("notify-pagerduty-string", batch(notify={"pagerduty": "false"}), "notify.pagerduty", "valid boolean"),
    ("dry-run-int", batch(dry_run=1), "dry_run", "valid boolean"),
    ("unknown-top-key", batch(datse=["2021-06-04"]), "datse", "did you mean 'dates'"),
    ("unknown-top-key-far", batch(colour="blue"), "colour", "known keys"),
    # Raw text: the loader's rules.
    ("empty-file", "", "<root>", "empty document"),
    ("whitespace-only", "  \n\n", "<root>", "empty document"),
    ("yaml-null", "~\n", "<root>", "empty document"),
    ("top-level-list", "- version: 1\n", "<root>", "got a list"),
    ("top-level-scalar", "hello\n", "<root>", "got a str"),
    ("two-documents", "version: 1\n---\nversion: 1\n", "<root>", "one YAML document"),
    ("duplicate-key", "version: 1\nname: a\nname: b\n", "<root>", "duplicate key 'name'"),
    ("anchor-alias", "version: 1\nname: &n abc\ndescription: *n\n", "<root>", "anchors are not allowed"),
    ("billion-laughs", "a: &a [1,1]\nb: &b [*a,*a]\nc: [*b,*b]\n", "<root>", "not allowed"),
    ("custom-tag", "version: !!python/object:os.system ls\n", "<root>", "tags are not allowed"),
    ("binary-tag", "name: !!binary aGVsbG8=\n", "<root>", "tags are not allowed"),
    ("merge-key", "version: 1\n<<: {name: a}\n", "<<", "unknown key"),
    ("yaml-syntax", "version: 1\nname: [a\n", "<root>", "invalid YAML at line"),
    ("json-syntax", '{"version": 1,,}', "<root>", "invalid JSON at line 1"),
    ("json-duplicate", '{"version": 1, "version": 1}', "<root>", "duplicate key 'version'"),
    ("json-nan", '{"version": NaN}', "<root>", "NaN"),
    ("binary", b"\x00\x01\x02version: 1", "<root>", "binary data"),
    ("invalid-utf8", b"name: caf\xe9\n", "<root>", "not valid UTF-8"),
    ("too-big", b"description: '" + b"x" * (256 * 1024) + b"'\n", "<root>", "the limit is 262144 bytes"),
]


def _source_name(document: Any) -> str | None:
    if isinstance(document, dict):
        return None
    text = document if isinstance(document, str) else document.decode("latin-1")
    return "case.json" if text.startswith("{") else "case.yaml"


def _errors(document: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidConfigError) as caught:
        parse_config(document, policy=POLICY, source=_source_name(document))
    return [(issue.location, issue.message) for issue in caught.value.issues]


def test_there_are_at_least_forty_distinct_cases():
    assert len({case[0] for case in CASES}) == len(CASES) >= 40


@pytest.mark.parametrize(
    ("document", "location", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_invalid_config_is_rejected_at_its_location(document, location, fragment):
    errors = _errors(document)
    matching = [message for loc, message in errors if loc == location]
    assert matching, f"no error at {location}; got {errors}"
    assert any(fragment in message for message in matching), f"{location}: {matching}"


def test_all_errors_of_a_file_are_reported_at_once():
    document = batch(
        name="Bad",
        owner="nobody",
        dates=["2021-02-30", {"start": "2021-06-12", "end": "2021-06-10"}],
        hours=[1, 1],
    )
    locations = {loc for loc, _ in _errors(document)}
    assert {"name", "owner", "dates[0]", "dates[1].end", "hours[1]"} <= locations


def test_namespace_allowlist_is_a_located_error():
    policy = ConfigPolicy(today=date(2026, 11, 21), allowed_namespaces=frozenset({"warehouse"}))
    with pytest.raises(InvalidConfigError) as caught:
        parse_config(batch(), policy=policy)
    assert [issue.location for issue in caught.value.issues] == ["jobs[0].namespace"]


def test_replay_target_allowlist_is_a_located_error():
    policy = ConfigPolicy(today=date(2026, 11, 21), replay_targets=frozenset({"payments-ingest"}))
    with pytest.raises(InvalidConfigError) as caught:
        parse_config(replay(), policy=policy)
    (issue,) = caught.value.issues
    assert issue.location == "replay.target" and "payments-ingest" in issue.message


def test_deployment_may_lower_the_day_limit():
    policy = ConfigPolicy(today=date(2026, 11, 21), max_days=3)
    with pytest.raises(InvalidConfigError) as caught:
        parse_config(batch(), policy=policy)
    assert caught.value.issues[0].location == "dates"
    assert "covers 4 distinct days; at most 3" in caught.value.issues[0].message


def test_today_is_allowed():
    assert parse_config(batch(dates=["2026-11-21"]), policy=POLICY).days == [date(2026, 11, 21)]
