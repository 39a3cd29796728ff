"""Located configuration errors: every problem says where it is (`dates[1].end: ...`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from backfill_orchestrator.errors import UserError

ROOT = "<root>"


@dataclass(frozen=True, order=True)
class ConfigIssue:
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


class InvalidConfigError(UserError, ValueError):
    """A backfill config that is not valid; carries every located issue of the document."""

    def __init__(self, issues: Iterable[ConfigIssue], *, source: str | None = None):
        self.issues: list[ConfigIssue] = list(issues)
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return "\n".join(f"{prefix}{issue}" for issue in self.issues)

    def as_dicts(self) -> list[dict[str, str]]:
        return [issue.as_dict() for issue in self.issues]
