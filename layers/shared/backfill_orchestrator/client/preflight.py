"""The trigger's preflight from a notebook or the CLI: the deployment's allowlists and limits
from the same environment variables (ALLOWED_NAMESPACES, SPARK_PROFILES, INCOMING_PREFIX,
MARQUEZ_URL, BACKFILL_JOB_CATALOG, WAREHOUSE_URI, the limits of docs/planner.md), and what
could not be reached listed in the verdict's `unchecked`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from backfill_orchestrator.client.sources import PreparedConfig
from backfill_orchestrator.config.validate import ConfigPolicy
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.errors import PolicyRefusal
from backfill_orchestrator.lineage import URL_ENV, InvalidMarquezUrlError, LineageSource, RunHistory
from backfill_orchestrator.planner import CATALOG_ENV, JobCatalog
from backfill_orchestrator.preflight import Reach, Verdict, preflight_config, warehouse_lister
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


def marquez_client(url: str | None = None, *, environ: Mapping[str, str] | None = None) -> LineageSource:
    """The Marquez client for `url` (else $MARQUEZ_URL); InvalidMarquezUrlError when there is no URL."""
    environ = os.environ if environ is None else environ
    if not (url or environ.get(URL_ENV)):
        raise InvalidMarquezUrlError(f"no Marquez URL: pass one (--marquez-url) or set {URL_ENV}")
    from backfill_orchestrator.lineage.client import MarquezClient  # on first use, as lineage/__init__ has it

    return MarquezClient.from_env(base_url=url, environ=environ)


def lineage_for(
    *, marquez_url: str | None, lineage: LineageSource | None, environ: Mapping[str, str]
) -> tuple[LineageSource | None, list[str]]:
    """The lineage source every client function uses: `lineage`, else Marquez at `marquez_url`
    or $MARQUEZ_URL; with neither, None (the preflight says what that leaves unchecked)."""
    if lineage is not None:
        return lineage, []
    url = marquez_url or environ.get(URL_ENV)
    if url:
        return marquez_client(url, environ=environ), []
    return None, []


def catalog_for(
    catalog: JobCatalog | str | None, *, environ: Mapping[str, str], s3_client: Any = None
) -> JobCatalog | None:
    """A catalog object, a path or s3:// URI, else $BACKFILL_JOB_CATALOG, else None."""
    if isinstance(catalog, JobCatalog):
        return catalog
    location = catalog or environ.get(CATALOG_ENV) or None
    return JobCatalog.load(location, s3_client=s3_client) if location else None


def preflight_checked(
    prepared: PreparedConfig,
    *,
    marquez_url: str | None = None,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | str | None = None,
    limits: PreflightLimits | None = None,
    strict: bool = False,
    environ: Mapping[str, str] | None = None,
    s3_client: Any = None,
    lineage_errors_raise: bool = False,
) -> tuple[Verdict, Plan | None]:
    """The trigger's preflight with what is reachable from here (each default from the
    environment, as the trigger reads it): the verdict, and the plan when lineage was reached.
    An unreachable Marquez is something not checked, or raised with `lineage_errors_raise`."""
    environ = os.environ if environ is None else environ
    source, unchecked = lineage_for(marquez_url=marquez_url, lineage=lineage, environ=environ)
    job_catalog = catalog_for(catalog, environ=environ, s3_client=s3_client)
    if job_catalog is None:
        unchecked.append(f"the job catalog's windows and feeds (no catalog: --catalog or ${CATALOG_ENV})")
    if limits is None:
        env = EnvironmentReader(dict(environ))
        limits = PreflightLimits.read(env)
        env.check()
    reach = Reach(
        limits,
        catalog=job_catalog,
        lister=warehouse_lister(limits.warehouse_uri) if limits.warehouse_uri else None,
        history=run_history_of(source),
        strict=strict,
    )
    return preflight_config(
        prepared.config,
        backfill_id=prepared.backfill_id,
        lineage=source,
        reach=reach,
        unchecked=unchecked,
        lineage_errors_raise=lineage_errors_raise,
    )


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
