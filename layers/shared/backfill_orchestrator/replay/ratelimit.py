"""A token bucket: at most `rate` messages per second on average, bursts up to `capacity`.

The replay function sends in batches, so `acquire(n)` takes n tokens at once and, when the
bucket runs short, sleeps until the debt is paid back. Clock and sleep are injectable so
tests run on simulated time."""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    def __init__(
        self,
        *,
        rate: float,
        capacity: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.rate = rate
        # One second's worth by default: a batch never bursts past what a second allows.
        self.capacity = capacity if capacity is not None else max(rate, 1.0)
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.capacity
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
        self._updated = now

    def wait_time(self, tokens: float) -> float:
        """Seconds `acquire(tokens)` would sleep now."""
        self._refill()
        return max(0.0, (tokens - self._tokens) / self.rate)

    def acquire(self, tokens: float) -> float:
        """Take `tokens`, first sleeping for the shortfall if the bucket holds fewer;
        returns the seconds slept. The sleep pays exactly for the shortfall, so the average
        rate holds even when `tokens` exceeds `capacity`."""
        waited = self.wait_time(tokens)
        if waited > 0:
            self._sleep(waited)
            self._tokens = 0.0
            self._updated = self._clock()
        else:
            self._tokens -= tokens
        return waited
