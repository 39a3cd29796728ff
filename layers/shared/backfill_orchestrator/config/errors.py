"""Located configuration errors: every problem says where it is (`dates[1].end: ...`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from backfill_orchestrator.errors import UserError

ROOT = "<root>"
_PREFIXES = ("Value error, ", "Assertion failed, ")


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


def _short(value: Any) -> str | None:
    if isinstance(value, dict | list):
        return None
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def issue_from_pydantic(
    error: Mapping[str, Any],
    *,
    loc: Sequence[str | int] | None = None,
    unknown_key: Callable[[Sequence[str | int]], str] = lambda loc: "unknown key",
) -> ConfigIssue:
    """One pydantic error (`ValidationError.errors()` item) as a located issue in our wording:
    `field required`, `unknown key...`, our validators' messages without pydantic's prefix, and
    the offending value for the rest. `loc` overrides the error's own location."""
    loc = tuple(error["loc"] if loc is None else loc)
    kind = error["type"]
    location = format_location(loc)
    if kind == "missing":
        return ConfigIssue(location, "field required")
    if kind == "extra_forbidden":
        return ConfigIssue(location, unknown_key(loc))
    message = error["msg"]
    for prefix in _PREFIXES:
        if message.startswith(prefix):
            return ConfigIssue(location, message[len(prefix):])
    message = message[:1].lower() + message[1:]
    shown = _short(error.get("input"))
    if shown is not None and kind not in ("too_long", "too_short"):
        message = f"{message}, got {shown}"
    return ConfigIssue(location, message)


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
