"""The job catalog: format, located errors, defaults, and loading from a file or S3."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from backfill_orchestrator.lineage import JobInfo
from backfill_orchestrator.planner import (
    CatalogUnavailableError,
    InvalidCatalogError,
    JobCatalog,
    StepTarget,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "catalog.yaml"


def issues(text: str) -> list[str]:
    with pytest.raises(InvalidCatalogError) as caught:
        JobCatalog.parse(text, source="catalog.yaml")
    return [str(issue) for issue in caught.value.issues]


def test_the_food_delivery_example_catalog():
    catalog = JobCatalog.load(str(EXAMPLE))
    target = catalog.target_for(JobInfo("food_delivery", "etl_orders_7_days"))
    assert target == StepTarget("etl_orders_7_days", "spark", "etl_orders_7_days", "etl_orders_7_days", 7)
    assert catalog.target_for(JobInfo("food_delivery", "etl_orders")).window_days == 1
    assert catalog.target_for(JobInfo("food_delivery", "email_discounts")) == StepTarget(
        "email_discounts", "airflow_dag", "email_discounts", None, 1
    )
    assert len(catalog) == 6


def test_without_an_entry_a_job_maps_by_parent_then_airflow_facet_then_name():
    catalog = JobCatalog.empty()
    assert catalog.target_for(JobInfo("ns", "dag.group.task", "dag")).dag_id == "dag"
    assert catalog.target_for(JobInfo("ns", "odd_name", None, "facet_dag")).dag_id == "facet_dag"
    assert catalog.target_for(JobInfo("ns", "plain")) == StepTarget("plain", "airflow_dag", "plain", None, 1)


def test_spark_transform_defaults_to_the_job_name_and_dag_to_the_default_mapping():
    catalog = JobCatalog.parse("version: 1\njobs:\n  - {namespace: ns, name: t1, kind: spark}\n")
    assert catalog.target_for(JobInfo("ns", "t1", "nightly")) == StepTarget("t1", "spark", "nightly", "t1", 1)


def test_a_task_job_uses_its_dags_entry():
    catalog = JobCatalog.parse("version: 1\njobs:\n  - {namespace: ns, name: nightly, window_days: 3}\n")
    assert catalog.target_for(JobInfo("ns", "nightly.load", "nightly")) == StepTarget(
        "nightly", "airflow_dag", "nightly", None, 3
    )
    # ... but not a job of the same name in another namespace.
    assert catalog.target_for(JobInfo("other", "nightly.load", "nightly")).window_days == 1


def test_errors_are_located():
    text = """
version: 1
jobs:
  - {namespace: ns, name: a, kind: spark}
  - {namespace: ns, name: b, kind: airflow_dag, transform: b}
  - {namespace: ns, name: c, window_days: 0}
  - {namespace: ns, name: d, kind: flink}
  - {namespace: ns, name: e, dag_id: "has space"}
  - {namespace: ns, name: f, windows: 3}
  - {name: g}
"""
    assert issues(text) == [
        "jobs[1]: transform is only for kind spark",
        "jobs[2].window_days: input should be greater than or equal to 1, got 0",
        "jobs[3].kind: input should be 'spark' or 'airflow_dag', got 'flink'",
        "jobs[4].dag_id: string should match pattern '^[A-Za-z0-9_.-]{1,250}$', got 'has space'",
        "jobs[5].windows: unknown key; known keys: namespace, name, kind, dag_id, transform, window_days, grain, feeds, inputs, output",
        "jobs[6].namespace: field required",
    ]


def test_duplicates_and_step_id_clashes_are_located():
    text = """
version: 1
jobs:
  - {namespace: ns, name: a, kind: spark, transform: shared}
  - {namespace: ns, name: b, dag_id: shared}
  - {namespace: ns, name: a}
"""
    assert issues(text) == [
        "jobs[1].dag_id: 'shared' is the step id of jobs[0] (kind spark) too; "
        "a spark transform and an airflow_dag DAG must not share a name",
        "jobs[2]: duplicate of jobs[0] (ns/a)",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("jobs: []\n", "version: field required"),
        ("version: 2\njobs: []\n", "version: input should be 1, got 2"),
        ("- a\n", "<root>: expected a mapping of config keys at the top, got a list"),
        ("version: 1\njobs: [\n", "<root>: invalid YAML"),
        ("version: 1\nextra: 1\n", "extra: unknown key; known keys: version, jobs"),
    ],
)
def test_document_level_errors(text, expected):
    assert any(issue.startswith(expected) for issue in issues(text)), issues(text)


def test_missing_file_is_unavailable_not_invalid(tmp_path):
    with pytest.raises(CatalogUnavailableError, match="no such file"):
        JobCatalog.load(str(tmp_path / "absent.yaml"))
    with pytest.raises(CatalogUnavailableError, match="is a directory"):
        JobCatalog.load(str(tmp_path))


@mock_aws
def test_load_from_s3():
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="platform-config")
    s3.put_object(Bucket="platform-config", Key="planner/catalog.yaml", Body=EXAMPLE.read_bytes())
    catalog = JobCatalog.load("s3://platform-config/planner/catalog.yaml", s3_client=s3)
    assert catalog.target_for(JobInfo("food_delivery", "etl_orders_7_days")).window_days == 7
    with pytest.raises(CatalogUnavailableError, match="NoSuchKey"):
        JobCatalog.load("s3://platform-config/absent.yaml", s3_client=s3)
    with pytest.raises(CatalogUnavailableError, match="expected s3://bucket/key"):
        JobCatalog.load("s3://platform-config", s3_client=s3)
    s3.put_object(Bucket="platform-config", Key="bad.yaml", Body=b"version: 1\njobs:\n  - {namespace: ns}\n")
    with pytest.raises(InvalidCatalogError) as caught:
        JobCatalog.load("s3://platform-config/bad.yaml", s3_client=s3)
    assert [str(i) for i in caught.value.issues] == ["jobs[0].name: field required"]
    assert str(caught.value).startswith("s3://platform-config/bad.yaml: jobs[0].name")
