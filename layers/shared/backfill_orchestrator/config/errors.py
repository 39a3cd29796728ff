"""An invalid config: every problem says where it is (`dates[1].end: ...`)."""

from __future__ import annotations

from backfill_orchestrator.errors import LocatedIssuesError, UserError


class InvalidConfigError(LocatedIssuesError, UserError, ValueError):
    """A backfill config that is not valid; carries every located issue of the document."""

    document = "config"
