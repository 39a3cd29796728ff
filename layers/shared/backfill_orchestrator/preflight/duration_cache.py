"""The warm trigger's memory of run-history durations (`preflight.history.DurationCache`): per
job, the seconds per date measured from its recent runs, for HISTORY_CACHE_SECONDS, at most
`max_jobs` of them (the least recently used go first). cachetools' TTLCache is both the LRU
bound and the expiry; it is not thread-safe, and the history reads run side by side, so every
access holds a lock. Only the durations are kept: upstream freshness reads stay current."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from cachetools import TTLCache

DEFAULT_MAX_JOBS = 512


class RecentDurations:
    def __init__(
        self,
        *,
        ttl_seconds: float,
        max_jobs: int = DEFAULT_MAX_JOBS,
        timer: Callable[[], float] = time.monotonic,
    ):
        if ttl_seconds <= 0 or max_jobs < 1:
            raise ValueError(f"ttl_seconds must be > 0 and max_jobs >= 1, got {ttl_seconds}, {max_jobs}")
        self._figures: TTLCache[tuple[str, str], float | None] = TTLCache(
            maxsize=max_jobs, ttl=ttl_seconds, timer=timer
        )
        self._lock = threading.Lock()

    def lookup(self, key: tuple[str, str]) -> tuple[bool, float | None]:
        with self._lock:
            try:
                return True, self._figures[key]  # a hit also makes it the most recently used
            except KeyError:
                return False, None

    def store(self, key: tuple[str, str], seconds: float | None) -> None:
        with self._lock:
            self._figures[key] = seconds

    def __len__(self) -> int:
        with self._lock:
            return len(self._figures)
