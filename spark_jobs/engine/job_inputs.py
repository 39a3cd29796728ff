"""The backfill job's input documents (its plan, publish policy and reconciliation rules),
read and checked before Spark starts: every problem is an InvalidPlanError, which the job
reports and exits 2 on, having read or written no data."""

from __future__ import annotations

from typing import Any

from backfill_orchestrator.contracts import InvalidDocumentError
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.contracts.publish import PublishPolicy
from backfill_orchestrator.documents import DocumentError, read_bytes
from backfill_orchestrator.errors import UserError
from backfill_orchestrator.reconciliation import (
    InvalidRulesError,
    ReconciliationRules,
    RulesUnavailableError,
    load_rules,
)
from spark_jobs.engine.registry import Registry
from spark_jobs.engine.runner import check_plan


class InvalidPlanError(UserError, ValueError):
    """An input cannot be read or is invalid, or the plan names transforms the registry lacks."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def load_plan(uri: str, *, registry: Registry, s3_client: Any = None) -> Plan:
    try:
        body = read_bytes(uri, s3_client=s3_client)
    except DocumentError as error:
        raise InvalidPlanError([str(error)]) from None
    try:
        plan = Plan.from_json(body, source=uri)
    except InvalidDocumentError as error:
        raise InvalidPlanError(error.render().splitlines()) from None
    problems = check_plan(plan, registry)
    if problems:
        raise InvalidPlanError([f"{uri}: {problem}" for problem in problems])
    return plan


def load_policy(uri: str | None, *, s3_client: Any = None) -> PublishPolicy:
    if uri is None:
        return PublishPolicy()
    try:
        body = read_bytes(uri, max_bytes=PublishPolicy.max_bytes, s3_client=s3_client)
    except DocumentError as error:
        raise InvalidPlanError([f"--publish-policy {error}"]) from None
    try:
        return PublishPolicy.from_json(body, source=uri)
    except InvalidDocumentError as error:
        raise InvalidPlanError(error.render().splitlines()) from None


def load_check_rules(uri: str | None, *, s3_client: Any = None) -> ReconciliationRules | None:
    if uri is None:
        return None
    try:
        return load_rules(uri, s3_client=s3_client)
    except RulesUnavailableError as error:
        raise InvalidPlanError([f"--rules {error}"]) from None
    except InvalidRulesError as error:
        raise InvalidPlanError(error.render().splitlines()) from None
