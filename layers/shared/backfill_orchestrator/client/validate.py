"""Validate as the trigger will: the config checks (`parse_config` with the deployment's
`ConfigPolicy`), and, where lineage is reachable from here (a Marquez URL or a lineage source
given), the plan as well, so an unknown job or a lineage cycle shows before uploading."""

from __future__ import annotations

from typing import Any

from backfill_orchestrator.client.plan import plan_backfill
from backfill_orchestrator.client.sources import ConfigSource, prepare_config
from backfill_orchestrator.config import BackfillConfig
from backfill_orchestrator.config.validate import DEFAULT_POLICY, ConfigPolicy
from backfill_orchestrator.lineage.source import LineageSource
from backfill_orchestrator.planner import JobCatalog


def validate_backfill(
    source: ConfigSource,
    *,
    policy: ConfigPolicy = DEFAULT_POLICY,
    marquez_url: str | None = None,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | str | None = None,
    session: Any = None,
    s3_client: Any = None,
) -> BackfillConfig:
    """The validated config. Raises InvalidConfigError with every located issue (pass the
    deployment's allowed namespaces and replay targets in `policy` to check those too), a
    DocumentError for a path that cannot be read, and with lineage PlanRefusedError or a
    LineageError. Nothing is uploaded."""
    prepared = prepare_config(source, policy=policy, s3_client=s3_client, session=session)
    if marquez_url is not None or lineage is not None:
        plan_backfill(
            prepared,
            marquez_url=marquez_url,
            lineage=lineage,
            catalog=catalog,
            session=session,
            s3_client=s3_client,
        )
    return prepared.config
