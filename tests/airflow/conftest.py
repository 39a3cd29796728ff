"""Fixtures for the tests that run a real Airflow 3 with an Airflow of their own module (the
helpers are in tests/support/airflow.py; the Airflow that several modules share is the
`shared_airflow` fixture of tests/conftest.py): one moto server (S3, DynamoDB, Secrets
Manager) and local Slack and PagerDuty receivers per module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.airflow import AwsLocal, local_aws, local_receivers


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsLocal]:
    with local_aws() as local:
        yield local


@pytest.fixture(scope="module")
def receivers() -> Iterator[tuple[Any, Any]]:
    with local_receivers() as both:
        yield both
