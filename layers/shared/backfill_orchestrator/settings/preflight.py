"""The deployment's side of preflight (docs/planner.md, "Preflight"): what its runtime can run,
what it requires of a backfill, and the prices of the estimate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from backfill_orchestrator.settings.environment import EnvironmentReader

WAREHOUSE_ENV = "WAREHOUSE_URI"
# EMR Serverless list prices (us-east-1, per hour); a deployment sets its own (PRICE_TABLE).
DEFAULT_PRICES = {"vcpu_hour": 0.052624, "gb_hour": 0.0057785}
# Workers per Spark profile: (vCPUs, memory GB); assumed sizes a deployment overrides.
DEFAULT_PROFILE_SIZES = {"small": (4, 16), "medium": (16, 64), "large": (64, 256)}
DEFAULT_SPARK_TIMEOUT_SECONDS = 6 * 3600  # the DAG's [backfill] spark_timeout_seconds default
DEFAULT_UPSTREAM_MAX_JOBS = 20  # upstream producers whose runs are read per backfill
DEFAULT_UPSTREAM_MAX_RUNS = 500  # runs read per producer (pages of 100), newest first
DEFAULT_HISTORY_MAX_JOBS = 50  # steps whose run durations are read; the others are assumed
HISTORY_RUNS = 20  # recent runs a step's duration is the median of
DEFAULT_HISTORY_CACHE_SECONDS = 600  # how long a warm trigger keeps a job's measured duration


@dataclass(frozen=True, kw_only=True)
class PreflightLimits:
    """The deployment's side of preflight: what its runtime can run and what it requires. Only
    values: where run history is read from, and the durations a warm container keeps, are the
    caller's (`preflight.run`'s `history` and `durations`)."""

    require_catalog: bool = False
    strict: bool = False  # every config strict
    warehouse_uri: str | None = None  # where the Spark steps' inputs live (s3://... or a path)
    prices: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    profile_sizes: Mapping[str, tuple[int, int]] = field(default_factory=lambda: dict(DEFAULT_PROFILE_SIZES))
    require_fresh_upstream: bool = False  # every config's require_fresh_upstream
    spark_timeout_seconds: int = DEFAULT_SPARK_TIMEOUT_SECONDS  # a Spark round longer than this is cut
    upstream_max_jobs: int = DEFAULT_UPSTREAM_MAX_JOBS
    upstream_max_runs: int = DEFAULT_UPSTREAM_MAX_RUNS
    history_max_jobs: int = DEFAULT_HISTORY_MAX_JOBS
    history_cache_seconds: int = DEFAULT_HISTORY_CACHE_SECONDS  # 0: durations are read every time

    @classmethod
    def read(cls, env: EnvironmentReader) -> PreflightLimits:
        """From REQUIRE_JOB_CATALOG, PREFLIGHT_STRICT,
        WAREHOUSE_URI, PRICE_TABLE (JSON: vcpu_hour, gb_hour in USD), REQUIRE_FRESH_UPSTREAM,
        SPARK_TIMEOUT_SECONDS, UPSTREAM_CHECK_MAX_JOBS, UPSTREAM_CHECK_MAX_RUNS,
        RUN_HISTORY_MAX_JOBS and HISTORY_CACHE_SECONDS; problems are noted on `env`."""
        prices = dict(DEFAULT_PRICES)
        for key, text in env.string_map(
            "PRICE_TABLE", meaning="vcpu_hour / gb_hour -> price as text"
        ).items():
            try:
                prices[key] = float(text)
            except ValueError:
                env.problems.append(f"PRICE_TABLE: {key}: expected a number, got {text!r}")
        return cls(
            require_catalog=_flag(env, "REQUIRE_JOB_CATALOG"),
            strict=_flag(env, "PREFLIGHT_STRICT"),
            warehouse_uri=env.get(WAREHOUSE_ENV),
            prices=prices,
            require_fresh_upstream=_flag(env, "REQUIRE_FRESH_UPSTREAM"),
            spark_timeout_seconds=env.whole(
                "SPARK_TIMEOUT_SECONDS", DEFAULT_SPARK_TIMEOUT_SECONDS, low=60, high=7 * 86400
            ),
            upstream_max_jobs=env.whole(
                "UPSTREAM_CHECK_MAX_JOBS", DEFAULT_UPSTREAM_MAX_JOBS, low=0, high=1000
            ),
            upstream_max_runs=env.whole(
                "UPSTREAM_CHECK_MAX_RUNS", DEFAULT_UPSTREAM_MAX_RUNS, low=1, high=10_000
            ),
            history_max_jobs=env.whole("RUN_HISTORY_MAX_JOBS", DEFAULT_HISTORY_MAX_JOBS, low=0, high=10_000),
            history_cache_seconds=env.whole(
                "HISTORY_CACHE_SECONDS", DEFAULT_HISTORY_CACHE_SECONDS, low=0, high=86_400, unit=" of seconds"
            ),
        )


def _flag(env: EnvironmentReader, name: str) -> bool:
    text = (env.get(name) or "false").lower()
    if text not in ("true", "false"):
        env.problems.append(f"{name}: expected true or false, got {text!r}")
    return text == "true"
