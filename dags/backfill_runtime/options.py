"""Deployment options of the `backfill` DAG: Airflow's own configuration, section `[backfill]`.

Locally they are environment variables (`AIRFLOW__BACKFILL__SPARK_RUNNER=local`); on MWAA they
are the environment's "Airflow configuration options" (`backfill.spark_runner`), so choosing
a Spark runner or a warehouse is configuration, never a code edit. Options that shape the DAG
(runner, slots, retries) are read when the file is parsed; the others when a task runs."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from typing import Literal

from backfill_orchestrator.errors import ServiceError

SparkRunner = Literal["local", "emr_serverless", "emr", "databricks"]
SPARK_RUNNERS = ("local", "emr_serverless", "emr", "databricks")
SECTION = "backfill"


class InvalidOptionError(ServiceError, ValueError):
    """A `[backfill]` option has an unusable value: the deployment's to fix."""


def _get(key: str, default: str) -> str:
    from airflow.configuration import conf

    value = conf.get(SECTION, key, fallback=default)
    return default if value is None or str(value).strip() == "" else str(value).strip()


def get_option(key: str, default: str) -> str:
    """A `[backfill]` option read when a task runs (stripped; empty means the default)."""
    return _get(key, default)


def _int(key: str, default: int, *, minimum: int) -> int:
    text = _get(key, str(default))
    try:
        value = int(text)
    except ValueError:
        raise InvalidOptionError(f"[{SECTION}] {key}: expected a whole number, got {text!r}") from None
    if value < minimum:
        raise InvalidOptionError(f"[{SECTION}] {key}: must be at least {minimum}, got {value}")
    return value


@dataclass(frozen=True, kw_only=True)
class DagShape:
    """Read at parse time: they decide which tasks exist."""

    spark_runner: SparkRunner
    max_rounds: int
    task_retries: int
    retry_delay_seconds: int
    max_retry_delay_seconds: int
    max_parallel_dag_runs: int
    rerun_poke_seconds: int
    spark_poll_seconds: int
    max_active_runs: int

    @classmethod
    def from_config(cls) -> DagShape:
        runner = _get("spark_runner", "local")
        if runner not in SPARK_RUNNERS:
            raise InvalidOptionError(
                f"[{SECTION}] spark_runner: expected one of {SPARK_RUNNERS}, got {runner!r}"
            )
        shape = cls(
            spark_runner=runner,  # type: ignore[arg-type]
            max_rounds=_int("max_rounds", 6, minimum=1),
            task_retries=_int("task_retries", 2, minimum=0),
            retry_delay_seconds=_int("retry_delay_seconds", 30, minimum=1),
            max_retry_delay_seconds=_int("max_retry_delay_seconds", 600, minimum=1),
            max_parallel_dag_runs=_int("max_parallel_dag_runs", 4, minimum=1),
            rerun_poke_seconds=_int("rerun_poke_seconds", 30, minimum=1),
            spark_poll_seconds=_int("spark_poll_seconds", 30, minimum=1),
            max_active_runs=_int("max_active_runs", 2, minimum=1),
        )
        if runner != "local" and not _get("spark_profiles_uri", ""):
            raise InvalidOptionError(
                f"[{SECTION}] spark_runner = {runner} needs spark_profiles_uri (the profiles give its cluster sizes)"
            )
        return shape


def spark_command() -> list[str]:
    """The local runner's command; the job's arguments are appended. Default: this Python
    running the generic job module (pyspark starts its own local JVM)."""
    return shlex.split(
        _get("spark_command", f"{shlex.quote(sys.executable)} -m spark_jobs.engine.backfill_job")
    )


def warehouse_uri() -> str:
    value = _get("warehouse_uri", "")
    if not value:
        raise InvalidOptionError(
            f"[{SECTION}] warehouse_uri is not set (AIRFLOW__BACKFILL__WAREHOUSE_URI): where the Spark job writes"
        )
    return value


def reruns_per_task() -> int:
    """(DAG, date) reruns one mapped `dag_runs` task runs (fewer tasks, fewer processes)."""
    return _int("reruns_per_task", 64, minimum=1)


def max_map_length() -> int:
    """Airflow's own limit on the tasks one mapped task expands to ([core] max_map_length)."""
    from airflow.configuration import conf

    return conf.getint("core", "max_map_length", fallback=1024)


def spark_timeout_seconds() -> int:
    return _int("spark_timeout_seconds", 6 * 3600, minimum=60)


def api_outage_seconds() -> int:
    """How long a chunk task waiting for its reruns rides out an Airflow API server it cannot
    reach before it fails (its reruns keep running meanwhile). The default is Airflow's own
    `[scheduler] task_instance_heartbeat_timeout`: past it the scheduler fails the task
    anyway, since its heartbeats cannot reach the API either."""
    return _int("api_outage_seconds", 300, minimum=0)


def publish_root(warehouse: str) -> str:
    """Where the Spark job stages, backs up and records its publishes (`--publish-root`);
    default WAREHOUSE/_backfill, the job's own. The status record names it for the trigger's
    publish, discard and undo."""
    from backfill_orchestrator.publish import default_root

    return _get("publish_root", "") or default_root(warehouse)
