"""One error root for the whole orchestrator, with the few categories callers branch on.

    BackfillError
    ├── UserError       the user's mistake: located, never retried, never pages
    ├── ServiceError    an external service (or the deployment) failing: retryable, pages when it persists
    └── PolicyRefusal   valid input that policy or safety refuses: never retried, never pages

Every specific exception of the package (InvalidConfigError, MarquezUnavailableError,
PlanRefusedError, ...) derives from exactly one category, so a handler writes

    except UserError: reject(...)
    except PolicyRefusal: refuse(...)
    except ServiceError: fail_and_retry(...)

instead of a tuple of eight classes. The flags are class attributes so code that holds an
arbitrary `BackfillError` can ask `error.retryable` / `error.pages` without isinstance chains.
"""

from __future__ import annotations


class BackfillError(Exception):
    """Root of every error the orchestrator raises on purpose."""

    category: str = "error"
    retryable: bool = False  # delivering the same input again may succeed
    pages: bool = False  # on-call is paged when it persists


class UserError(BackfillError):
    """The user's mistake (an invalid config or control document, an unknown job, a missing file).

    `location` says where (`dates[1].end`) when there is one place to point at."""

    category = "user"
    location: str | None = None


class ServiceError(BackfillError):
    """A service we depend on failed (Marquez, Airflow, S3, DynamoDB, Secrets Manager, SQS)
    or the deployment is misconfigured; the same input may succeed later."""

    category = "service"
    retryable = True
    pages = True


class PolicyRefusal(BackfillError):
    """The input is valid but is refused: by the deployment's policy (allowlists, access rules)
    or because no safe plan follows from it (a lineage cycle, a plan that cannot run)."""

    category = "refused"


def category_of(error: BaseException) -> str:
    """'user', 'service', 'refused' for our errors; 'bug' for anything else."""
    return error.category if isinstance(error, BackfillError) else "bug"
