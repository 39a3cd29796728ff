"""Backfill config v1: load, validate, identify."""

from backfill_orchestrator.config.errors import ConfigIssue, InvalidConfigError
from backfill_orchestrator.config.identity import backfill_id, canonical_bytes
from backfill_orchestrator.config.loader import MAX_CONFIG_BYTES, load_document
from backfill_orchestrator.config.model import BackfillConfig, DateRange, JobRef
from backfill_orchestrator.config.schema import config_json_schema
from backfill_orchestrator.config.validate import ConfigPolicy, parse_config, validate_document

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
    "load_document",
    "parse_config",
    "validate_document",
]
