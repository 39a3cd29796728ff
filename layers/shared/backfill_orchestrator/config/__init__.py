"""Backfill config v1: load, validate, identify."""

from backfill_orchestrator.config.errors import InvalidConfigError
from backfill_orchestrator.config.identity import backfill_id, canonical_bytes
from backfill_orchestrator.config.model import MAX_CONFIG_BYTES, BackfillConfig, DateRange, JobRef
from backfill_orchestrator.config.schema import config_json_schema
from backfill_orchestrator.config.validate import ConfigPolicy, parse_config
from backfill_orchestrator.errors import ConfigIssue

__all__ = [
    "MAX_CONFIG_BYTES",
    "BackfillConfig",
    "ConfigIssue",
    "ConfigPolicy",
    "DateRange",
    "InvalidConfigError",
    "JobRef",
    "backfill_id",
    "canonical_bytes",
    "config_json_schema",
    "parse_config",
]
