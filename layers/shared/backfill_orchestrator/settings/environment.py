"""Reading settings from environment variables, collecting every problem (by variable name)
before raising one SettingsError, for each component's settings."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from urllib.parse import urlparse

from backfill_orchestrator.errors import ServiceError


class SettingsError(ServiceError, ValueError):
    """The environment does not describe a usable deployment; lists every problem by variable."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid deployment settings:\n" + "\n".join(f"  {p}" for p in problems))


class EnvironmentReader:
    """Typed reads of environment variables; empty values count as unset. Each bad value is
    noted in `problems` and a harmless stand-in returned, so one run reports them all."""

    def __init__(self, environ: Mapping[str, str] | None = None):
        self._env = os.environ if environ is None else environ
        self.problems: list[str] = []

    def get(self, name: str) -> str | None:
        return self._env.get(name, "").strip() or None

    def required(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            self.problems.append(f"{name}: required")
        return value or ""

    def url(self, name: str, default: str | None = None) -> str | None:
        value = self.get(name) or default
        if value is None:
            return None
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            self.problems.append(f"{name}: expected an http(s) URL, got {value!r}")
        return value.rstrip("/")

    def prefix(self, name: str, default: str) -> str:
        value = self.get(name) or default
        if value.startswith("/"):
            self.problems.append(f"{name}: an S3 key prefix must not start with '/', got {value!r}")
        return value if value.endswith("/") else value + "/"

    def whole(self, name: str, default: int, *, low: int, high: int, unit: str = "") -> int:
        text = self.get(name)
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            self.problems.append(f"{name}: expected a whole number{unit} from {low} to {high}, got {text!r}")
            return default
        return value

    def string_map(self, name: str, *, meaning: str) -> dict[str, str]:
        """A JSON object of strings to strings (`meaning` says what each maps, for the error)."""
        text = self.get(name)
        if text is None:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            self.problems.append(f"{name}: not JSON ({error.msg} at column {error.colno})")
            return {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            self.problems.append(f"{name}: expected a JSON object of {meaning}")
            return {}
        return value

    def check(self) -> None:
        """Raise SettingsError listing every problem noted so far."""
        if self.problems:
            raise SettingsError(self.problems)
