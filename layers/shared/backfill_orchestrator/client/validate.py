"""Validate as the trigger will: the config checks (`parse_config` with the deployment's
`ConfigPolicy`) and the trigger's preflight with whatever lineage and catalog are reachable
from here (the plan: unknown jobs, exclusions that match nothing, feeds, limits), every
problem at once. What could not be checked is said, never passed over."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from backfill_orchestrator.client.preflight import deployment_policy, preflight_checked
from backfill_orchestrator.client.sources import ConfigSource, PreparedConfig, prepare_config
from backfill_orchestrator.config import BackfillConfig
from backfill_orchestrator.config.validate import ConfigPolicy
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.lineage.source import LineageSource
from backfill_orchestrator.planner import JobCatalog
from backfill_orchestrator.preflight import PreflightRefusedError, Verdict
from backfill_orchestrator.settings.preflight import PreflightLimits

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Checked(PreparedConfig):
    """A config (with the bytes an upload sends) and what was (and was not) checked about it:
    `verdict.unchecked` says what."""

    verdict: Verdict
    plan: Plan | None  # None when lineage was not reached (or the plan was refused)

    def accepted(self) -> Checked:
        """This, when the preflight accepted the config; else PreflightRefusedError carrying
        every refusal."""
        if not self.verdict.accepted:
            raise PreflightRefusedError(self.verdict)
        return self


def check_backfill(
    source: ConfigSource,
    *,
    policy: ConfigPolicy | None = None,
    marquez_url: str | None = None,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | str | None = None,
    limits: PreflightLimits | None = None,
    strict: bool = False,
    session: Any = None,
    s3_client: Any = None,
) -> Checked:
    """Every check reachable from here, and the verdict (refusals are in it, not raised).
    Raises InvalidConfigError (located) for an invalid config and a DocumentError for a path
    that cannot be read. Nothing is uploaded."""
    if s3_client is None and session is not None:
        s3_client = session.client("s3")
    prepared = prepare_config(source, policy=policy or deployment_policy(), s3_client=s3_client)
    verdict, plan = preflight_checked(
        prepared,
        marquez_url=marquez_url,
        lineage=lineage,
        catalog=catalog,
        limits=limits,
        strict=strict,
        s3_client=s3_client,
    )
    return Checked(prepared.config, prepared.backfill_id, prepared.body, prepared.extension, verdict, plan)


def same_arguments_as(template: Callable[P, object]) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Give the decorated function `template`'s parameters, for type checkers and `help()` alike:
    functions documented to take the same arguments keep them in one signature."""

    def adopt(function: Callable[..., R]) -> Callable[P, R]:
        returns = inspect.signature(function).return_annotation
        function.__signature__ = inspect.signature(template).replace(return_annotation=returns)  # type: ignore[attr-defined]
        return function

    return adopt


@same_arguments_as(check_backfill)
def validate_backfill(source: ConfigSource, **options: Any) -> BackfillConfig:
    """The validated config. Raises InvalidConfigError with every located issue (pass the
    deployment's allowlists in `policy`, default from the environment), PreflightRefusedError
    with every refusal of the plan and the preflight (an unknown job, an exclusion that
    matches nothing, a feed no job writes) when lineage is given (`marquez_url`, `lineage`,
    $MARQUEZ_URL), and a DocumentError for a path that cannot be read. Nothing is uploaded."""
    return check_backfill(source, **options).accepted().config
