"""The trigger's preflight from a notebook or the CLI: the deployment's allowlists and limits
from the same environment variables (ALLOWED_NAMESPACES, SPARK_PROFILES, INCOMING_PREFIX,
MARQUEZ_URL, BACKFILL_JOB_CATALOG, WAREHOUSE_URI, the limits of docs/planner.md), and what
could not be reached listed in the verdict's `unchecked`."""

from __future__ import annotations

import os

from backfill_orchestrator.client.sources import PreparedConfig
from backfill_orchestrator.config.validate import ConfigPolicy
from backfill_orchestrator.errors import PolicyRefusal
from backfill_orchestrator.lineage import URL_ENV, LineageSource, RunHistory
from backfill_orchestrator.planner import CATALOG_ENV, JobCatalog
from backfill_orchestrator.preflight import Verdict, preflight_config, warehouse_lister
from backfill_orchestrator.settings.environment import EnvironmentReader
from backfill_orchestrator.settings.preflight import PreflightLimits
from backfill_orchestrator.settings.trigger import DEFAULT_SPARK_PROFILES, comma_set
from backfill_orchestrator.spark_profiles import profile_names

DEFAULT_PREFIX = "incoming/"


class OutsideIncomingPrefixError(PolicyRefusal, ValueError):
    """An upload key outside the deployment's incoming prefix: the trigger would never see it."""


def deployment_policy(environ: dict[str, str] | None = None) -> ConfigPolicy:
    """The allowlists the trigger applies, from the same variables (docs/trigger.md);
    SPARK_PROFILES_URI (the DAG's profiles file) gives the profile names when set."""
    env = EnvironmentReader(environ)
    profiles_uri = env.get("SPARK_PROFILES_URI")
    return ConfigPolicy(
        allowed_namespaces=comma_set(env.get("ALLOWED_NAMESPACES")),
        spark_profiles=profile_names(profiles_uri)
        if profiles_uri
        else comma_set(env.get("SPARK_PROFILES")) or DEFAULT_SPARK_PROFILES,
    )


def incoming_prefix(environ: dict[str, str] | None = None) -> str:
    prefix = EnvironmentReader(environ).get("INCOMING_PREFIX") or DEFAULT_PREFIX
    return prefix if prefix.endswith("/") else prefix + "/"


def check_prefix(prefix: str, *, incoming: str) -> str:
    """The prefix with its '/', or OutsideIncomingPrefixError when the trigger would not see it."""
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    if not prefix.startswith(incoming):
        raise OutsideIncomingPrefixError(
            f"prefix {prefix!r} is outside the deployment's incoming prefix {incoming!r}: "
            "the trigger would never see the upload"
        )
    return prefix


def preflight_prepared(
    prepared: PreparedConfig,
    *,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | None = None,
    limits: PreflightLimits | None = None,
    strict: bool = False,
    environ: dict[str, str] | None = None,
) -> Verdict:
    """The trigger's preflight with what is reachable from here (each default from the environment)."""
    environ = dict(os.environ) if environ is None else environ
    unchecked: list[str] = []
    if lineage is None and environ.get(URL_ENV):
        from backfill_orchestrator.lineage import MarquezClient  # requests only when Marquez is used

        lineage = MarquezClient.from_env(environ=environ)
    elif lineage is None:
        unchecked.append(f"lineage (no Marquez URL: set {URL_ENV})")
    if catalog is None and environ.get(CATALOG_ENV):
        catalog = JobCatalog.load(environ[CATALOG_ENV])
    if limits is None:
        env = EnvironmentReader(environ)
        limits = PreflightLimits.read(env)
        env.check()
    verdict, _ = preflight_config(
        prepared.config,
        backfill_id=prepared.backfill_id,
        lineage=lineage,
        catalog=catalog,
        limits=limits,
        lister=warehouse_lister(limits.warehouse_uri) if limits.warehouse_uri else None,
        history=run_history_of(lineage),
        strict=strict,
        unchecked=unchecked,
    )
    return verdict


def run_history_of(lineage: LineageSource | None) -> RunHistory | None:
    """The lineage source as run history when it is one (MarquezClient is; an in-memory lineage
    export has no runs)."""
    if (
        lineage is not None
        and callable(getattr(lineage, "job_runs", None))
        and callable(getattr(lineage, "producers", None))
    ):
        return lineage  # type: ignore[return-value]
    return None
