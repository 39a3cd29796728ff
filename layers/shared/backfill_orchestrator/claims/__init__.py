"""Overlap protection: each backfill claims the (step, date) pairs it rewrites."""

from backfill_orchestrator.claims.model import ClaimSet, InvalidClaimsDocumentError
from backfill_orchestrator.claims.registry import (
    Admission,
    Admitted,
    ClaimRegistry,
    ClaimsUnavailableError,
    OnOverlap,
    Queued,
    Refused,
    registry_for,
)
from backfill_orchestrator.claims.release import release_and_start_queued, sweep_queued

__all__ = [
    "Admission",
    "Admitted",
    "ClaimRegistry",
    "ClaimSet",
    "ClaimsUnavailableError",
    "InvalidClaimsDocumentError",
    "OnOverlap",
    "Queued",
    "Refused",
    "registry_for",
    "release_and_start_queued",
    "sweep_queued",
]
