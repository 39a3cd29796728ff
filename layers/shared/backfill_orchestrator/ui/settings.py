"""What the page needs to know about the deployment: Airflow's own configuration, section
`[backfill]` (the DAG's options; locally `AIRFLOW__BACKFILL__<OPTION>`, on MWAA the
environment's configuration options `backfill.<option>`).

Never a secret: the page reads the status table, the config bucket and the policy through the
api-server's AWS credentials (the MWAA execution role)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_DAG_ID = "backfill"
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


@dataclass(frozen=True, kw_only=True)
class PageSettings:
    status_table: str | None  # without it the page says the deployment is not configured
    config_bucket: str | None  # where control documents go (actions are off without it)
    incoming_prefix: str = "incoming/"
    results_prefix: str = "results/"
    policy_uri: str | None = None  # the trigger's POLICY_URI: the same rules for presses here
    policy_cache_seconds: float = 60.0
    dag_id: str = DEFAULT_DAG_ID  # the generic backfill DAG (the trigger's BACKFILL_DAG_ID)
    slack_web_url: str | None = None  # https://<workspace>.slack.com: links to a backfill's thread
    lineage_web_url: str | None = None  # Marquez's web UI: links to the backfill's job
    openlineage_namespace: str = "backfill"
    page_size: int = DEFAULT_PAGE_SIZE

    @property
    def actions_enabled(self) -> bool:
        return bool(self.config_bucket and self.status_table)

    @classmethod
    def from_options(cls, option: Callable[[str], str | None]) -> PageSettings:
        """`option(name)`: the `[backfill]` option's value, None or empty when unset."""

        def text(name: str, default: str | None = None) -> str | None:
            value = option(name)
            return value.strip() if value and value.strip() else default

        def prefix(name: str, default: str) -> str:
            value = text(name, default) or default
            return value if value.endswith("/") else value + "/"

        def number(name: str, default: float, low: float, high: float) -> float:
            value = text(name)
            try:
                return min(max(float(value), low), high) if value else default
            except ValueError:
                return default

        return cls(
            status_table=text("status_table"),
            config_bucket=text("config_bucket"),
            incoming_prefix=prefix("incoming_prefix", "incoming/"),
            results_prefix=prefix("results_prefix", "results/"),
            policy_uri=text("policy_uri"),
            policy_cache_seconds=number("policy_cache_seconds", 60.0, 0.0, 3600.0),
            dag_id=text("dag_id", DEFAULT_DAG_ID) or DEFAULT_DAG_ID,
            slack_web_url=text("slack_web_url"),
            lineage_web_url=text("lineage_web_url"),
            openlineage_namespace=text("openlineage_namespace", "backfill") or "backfill",
            page_size=int(number("page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)),
        )


def airflow_option(name: str) -> str | None:
    """A `[backfill]` option from Airflow's configuration (only the api-server calls this)."""
    from airflow.configuration import conf

    value = conf.get("backfill", name, fallback=None)
    return None if value is None else str(value)
