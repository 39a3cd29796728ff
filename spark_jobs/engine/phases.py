"""Where a step's time goes, phase by phase, for the run report (`StepResult.phase_seconds`) and
the benchmark: read (the inputs listed, scanned and cached), transform (the result computed
and cached, with its per-partition counts), write (Spark's write job, its own commit of the
files included), check (safe publish's checks) and commit (what makes the written partitions
the live ones: the publish's swaps, or a direct write's removal of emptied partitions)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

Phase = Literal["read", "transform", "write", "check", "commit"]


class PhaseClock:
    """Wall seconds per phase of one step (a step runs on one thread)."""

    def __init__(self) -> None:
        self._seconds: dict[Phase, float] = {}

    @contextmanager
    def phase(self, name: Phase) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self._seconds[name] = self._seconds.get(name, 0.0) + time.monotonic() - started

    def seconds(self) -> dict[str, float]:
        return {name: round(value, 3) for name, value in self._seconds.items()}
