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
)

__all__ = [
    "Admission", "Admitted", "ClaimRegistry", "ClaimSet", "ClaimsUnavailableError", "InvalidClaimsDocumentError",
    "OnOverlap", "Queued", "Refused",
]
