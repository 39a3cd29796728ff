"""What the client side needs from Python 3.11 on, for Python 3.10 (Databricks runtimes up to
13.x run 3.10): `datetime.UTC`, `enum.StrEnum`, `typing.Self`. Modules the client imports
take these names from here; server-only modules may keep using the standard library."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from datetime import UTC
    from enum import StrEnum
    from typing import Self
else:
    from datetime import timezone
    from enum import Enum

    from typing_extensions import Self  # a pydantic dependency

    UTC = timezone.utc

    class StrEnum(str, Enum):
        """enum.StrEnum as 3.11 has it: members are their values, str() and format() give the value."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str(self.value).__format__(spec)

        @staticmethod
        def _generate_next_value_(name: str, start: int, count: int, last_values: list) -> str:
            return name.lower()


__all__ = ["UTC", "Self", "StrEnum"]
