"""One error root for the whole orchestrator, with the few categories callers branch on.

    BackfillError
    ├── UserError       the user's mistake: located, never retried, never pages
    ├── ServiceError    an external service (or the deployment) failing: retryable, pages when it persists
    └── PolicyRefusal   valid input that policy or safety refuses: never retried, never pages

Every exception the orchestrator raises on purpose (InvalidConfigError, MarquezUnavailableError,
PlanRefusedError, ...) derives from exactly one category, so a handler writes

    except UserError: reject(...)
    except PolicyRefusal: refuse(...)
    except ServiceError: fail_and_retry(...)

instead of a tuple of eight classes. The flags are class attributes so code that holds an
arbitrary `BackfillError` can ask `error.retryable` / `error.pages` without isinstance chains.
A few bases group errors by subject rather than by category (`LineageError`, `CatalogError`,
`DocumentError`, `LocatedIssuesError`); each error under them still has its one category.

A document that is not valid (a config, the job catalog, the policy, reconciliation rules, a
contract) raises a `LocatedIssuesError` carrying every problem as a `ConfigIssue`
(`dates[1].end: must not be before start`) and the document's source."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ROOT = "<root>"  # the location of a problem with the document as a whole


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


CATEGORIES: tuple[type[BackfillError], ...] = (UserError, ServiceError, PolicyRefusal)


def category_of(error: BaseException) -> str:
    """'user', 'service', 'refused' for our errors; 'bug' for anything else."""
    return error.category if isinstance(error, BackfillError) else "bug"


# -- located issues ----------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class ConfigIssue:
    """One problem in a document and where it is: `dates[1].end: must not be before start`.
    Named for the config, the first document that had them; every document's issues are these."""

    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"location": self.location, "message": self.message}


def format_location(loc: Sequence[str | int]) -> str:
    """('dates', 1, 'end') -> 'dates[1].end'; () -> '<root>'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or ROOT


class LocatedIssuesError(BackfillError):
    """A document that is not valid (or valid input refused for located reasons), with every
    located issue (each once, in order) and the document's source. Not a category: each
    concrete error adds its own (an invalid config is a UserError, an invalid job catalog a
    deployment ServiceError) and says which `document` it is about. One line per issue:
    `<source>: <location>: <message>`."""

    document: str = "document"

    def __init__(
        self, issues: Iterable[ConfigIssue], *, source: str | None = None, document: str | None = None
    ):
        self.issues: list[ConfigIssue] = list(dict.fromkeys(issues))
        self.source = source
        if document is not None:
            self.document = document
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(f"{self._prefix()}{issue}" for issue in self.issues)

    def _prefix(self) -> str:
        return f"{self.source}: " if self.source else ""

    @property
    def problems(self) -> list[str]:
        """`location: message` per issue, without the source (for lists in messages)."""
        return [str(issue) for issue in self.issues]

    def as_dicts(self) -> list[dict[str, str]]:
        return [issue.as_dict() for issue in self.issues]
