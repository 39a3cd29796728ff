"""The publish operations' errors, each under one of backfill_orchestrator.errors' categories
and located: the partition (`orders/day=2021-06-04/feed=web`) or the step it is about."""

from __future__ import annotations

from collections.abc import Iterable

from backfill_orchestrator.errors import (
    ConfigIssue,
    LocatedIssuesError,
    PolicyRefusal,
    ServiceError,
    UserError,
)


class PublishError(LocatedIssuesError):
    """Base of the publish operations' errors (a subject, not a category)."""

    document = "publish"


class UnknownStagedAttemptError(PublishError, UserError, LookupError):
    """No manifest for this backfill (attempt, step): nothing was staged under that name."""


class PublishStateError(PublishError, PolicyRefusal):
    """The manifest is in a state the operation does not apply to (publish a discarded step,
    undo a backfill that published nothing)."""


class ChecksFailedError(PublishError, PolicyRefusal):
    """The step's schema or rules check failed: its staged data is never published as is."""


class PartitionRepublishedError(PublishError, PolicyRefusal):
    """Undo refused: a later backfill republished some of the partitions; undo it first."""

    def __init__(self, issues: Iterable[ConfigIssue], *, later: Iterable[str], source: str | None = None):
        self.later_backfills = sorted(set(later))
        super().__init__(issues, source=source)


class PartitionChangedError(PublishError, PolicyRefusal):
    """A partition is neither as the manifest left it nor as it would make it: something other
    than this publish changed it (a catalog edit, another writer)."""


class BackupsExpiredError(PublishError, PolicyRefusal):
    """Undo refused: the replaced partitions' retention is over, or a backup is gone."""


class PublishCatalogError(PublishError, ServiceError):
    """The table's catalog is not reachable from here (a Hive table needs a Spark session with
    Hive support), or a catalog call failed."""


class PublishStorageError(PublishError, ServiceError):
    """A move or delete in the table's storage failed."""


def issue(location: str, message: str) -> ConfigIssue:
    return ConfigIssue(location, message)
