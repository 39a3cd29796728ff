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


@dataclass(frozen=True, kw_only=True)
class PreflightLimits:
    """The deployment's side of preflight: what its runtime can run and what it requires."""

    require_catalog: bool = False
    strict: bool = False  # every config strict
    warehouse_uri: str | None = None  # where the Spark steps' inputs live (s3://... or a path)
    prices: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    profile_sizes: Mapping[str, tuple[int, int]] = field(default_factory=lambda: dict(DEFAULT_PROFILE_SIZES))


    @classmethod
    def read(cls, env: EnvironmentReader) -> PreflightLimits:
        """From REQUIRE_JOB_CATALOG, PREFLIGHT_STRICT, WAREHOUSE_URI and PRICE_TABLE (JSON: vcpu_hour,
        gb_hour in USD); problems are noted on `env`."""
        prices = dict(DEFAULT_PRICES)
        for key, text in env.string_map("PRICE_TABLE", meaning="vcpu_hour / gb_hour -> price as text").items():
            try:
                prices[key] = float(text)
            except ValueError:
                env.problems.append(f"PRICE_TABLE: {key}: expected a number, got {text!r}")
        return cls(
            require_catalog=_flag(env, "REQUIRE_JOB_CATALOG"),
            strict=_flag(env, "PREFLIGHT_STRICT"),
            warehouse_uri=env.get(WAREHOUSE_ENV),
            prices=prices,
        )


def _flag(env: EnvironmentReader, name: str) -> bool:
    text = (env.get(name) or "false").lower()
    if text not in ("true", "false"):
        env.problems.append(f"{name}: expected true or false, got {text!r}")
    return text == "true"


