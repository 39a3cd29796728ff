"""Reconciliation: rules per table, mismatches, and the backfill configs that repair them."""

from backfill_orchestrator.reconciliation.configs import backfill_configs, render_yaml
from backfill_orchestrator.reconciliation.findings import (
    MeasureDiff,
    Mismatch,
    TableNode,
    explain,
    split_covered,
)
from backfill_orchestrator.reconciliation.inflight import (
    InFlightPlansError,
    in_flight_ids,
    in_flight_plans,
    plan_uri,
)
from backfill_orchestrator.reconciliation.report import ReconciliationReport, reported
from backfill_orchestrator.reconciliation.rules import (
    Check,
    InvalidRulesError,
    ReconciliationRules,
    RulesUnavailableError,
    TableRules,
    Tolerance,
    load_rules,
    parse_rules,
)

__all__ = [
    "Check",
    "InFlightPlansError",
    "InvalidRulesError",
    "MeasureDiff",
    "Mismatch",
    "ReconciliationRules",
    "ReconciliationReport",
    "RulesUnavailableError",
    "TableNode",
    "TableRules",
    "Tolerance",
    "backfill_configs",
    "explain",
    "in_flight_ids",
    "in_flight_plans",
    "load_rules",
    "parse_rules",
    "plan_uri",
    "render_yaml",
    "reported",
    "split_covered",
]
