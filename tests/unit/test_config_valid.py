"""Valid configs: the examples, defaults, the backfill id, and the published JSON Schema."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import jsonschema
import pytest
import yaml

from backfill_orchestrator.config import (
    MAX_CONFIG_BYTES,
    InvalidConfigError,
    backfill_id,
    config_json_schema,
    parse_config,
)
from backfill_orchestrator.parsing import load_document
from tests.support.configs import EXAMPLES

NOT_CONFIGS = (
    "catalog",
    "reconciliation",
)  # the job catalog and the reconciliation rules sit beside the configs
EXAMPLE_FILES = sorted(
    p
    for p in EXAMPLES.glob("*")
    if p.suffix in {".yaml", ".yml", ".json"} and not any(n in p.name for n in NOT_CONFIGS)
)


@pytest.fixture(scope="module")
def schema_validator() -> jsonschema.Draft202012Validator:
    schema = config_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def test_there_are_examples_of_both_modes_and_formats():
    assert {p.suffix for p in EXAMPLE_FILES} >= {".yaml", ".json"}
    modes = {parse_config(p.read_bytes(), source=str(p)).mode for p in EXAMPLE_FILES}
    assert modes == {"batch", "replay"}


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_is_valid(path: Path):
    config = parse_config(path.read_bytes(), source=str(path))
    assert config.version == 1


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_json_schema_accepts_example(path: Path, schema_validator):
    document = load_document(
        path.read_bytes(), error=InvalidConfigError, max_bytes=MAX_CONFIG_BYTES, source=str(path)
    )
    assert list(schema_validator.iter_errors(document)) == []


def test_json_schema_rejects_what_the_validator_rejects(schema_validator, batch_config):
    for bad in (
        {**batch_config, "mode": "replay"},
        {**batch_config, "hours": [1, 1]},
        {**batch_config, "name": "Has Spaces"},
        {**batch_config, "version": 2},
        {**batch_config, "extra": 1},
    ):
        assert list(schema_validator.iter_errors(bad)), bad


def test_full_example_reads_as_documented():
    config = parse_config(
        (EXAMPLES / "orders-outage-june.yaml").read_bytes(), source="orders-outage-june.yaml"
    )
    assert config.days == [date(2021, 6, 4), date(2021, 6, 10), date(2021, 6, 11), date(2021, 6, 12)]
    assert config.hours == [0, 1, 2, 13]
    assert config.feeds == ["orders", "menus"]
    assert config.downstream.max_depth == 50
    assert [str(j) for j in config.downstream.exclude] == ["food_delivery/email_discounts"]
    assert config.notify.slack_channel == "#data-oncall"


def test_defaults(batch_config):
    config = parse_config(batch_config)
    assert config.effective_downstream.enabled is True
    assert config.effective_downstream.max_depth == 50
    assert config.effective_spark.profile == "medium"
    assert config.notify.pagerduty is True
    assert config.dry_run is False
    assert config.hours is None and config.feeds is None


def test_union_of_overlapping_dates(batch_config):
    batch_config["dates"] = [
        {"start": "2021-06-01", "end": "2021-06-03"},
        "2021-06-02",
        {"start": "2021-06-03", "end": "2021-06-04"},
    ]
    assert parse_config(batch_config).days == [date(2021, 6, d) for d in range(1, 5)]


def test_colon_namespace_is_accepted(batch_config):
    batch_config["jobs"] = [{"namespace": "postgres://db:5432", "name": "public.orders"}]
    assert parse_config(batch_config).jobs[0].namespace == "postgres://db:5432"


def test_python_dates_from_a_notebook_dict(batch_config):
    batch_config["dates"] = [date(2021, 6, 4), {"start": date(2021, 6, 10), "end": date(2021, 6, 12)}]
    assert len(parse_config(batch_config).days) == 4


class TestBackfillId:
    def test_shape(self, batch_config):
        bid = backfill_id(parse_config(batch_config))
        name, digest = bid.rsplit("-", 1)
        assert name == "orders-outage-june" and len(digest) == 8 and int(digest, 16) >= 0

    def test_same_content_any_formatting(self, batch_config):
        as_yaml = yaml.safe_dump(batch_config, default_flow_style=True)
        as_json = json.dumps(batch_config, indent=4)
        reordered = dict(reversed(list(batch_config.items())))
        expanded = {**batch_config, "dates": ["2021-06-12", "2021-06-04", "2021-06-11", "2021-06-10"]}
        ids = {
            backfill_id(parse_config(as_yaml.encode(), fmt="yaml")),
            backfill_id(parse_config(as_json.encode(), fmt="json")),
            backfill_id(parse_config(reordered)),
            backfill_id(parse_config(expanded)),
            backfill_id(parse_config({**batch_config, "dry_run": False})),  # the default, spelled out
        }
        assert len(ids) == 1

    def test_different_content_different_id(self, batch_config):
        base = backfill_id(parse_config(batch_config))
        assert backfill_id(parse_config({**batch_config, "dry_run": True})) != base
        assert backfill_id(parse_config({**batch_config, "hours": [1]})) != base
        assert backfill_id(parse_config({**batch_config, "dates": ["2021-06-05"]})) != base

    def test_longest_id_fits_mwaa_path(self, batch_config):
        config = parse_config({**batch_config, "name": "a" * 24})
        path = f"/dags/backfill/dagRuns/{backfill_id(config)}"
        assert len(backfill_id(config)) == 33 and len(path) <= 64
