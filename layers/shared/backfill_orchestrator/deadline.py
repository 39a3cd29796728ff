"""The invocation's time budget, shared by every external call made while it is in scope.

    with deadline_scope(Deadline.after(seconds=context_remaining - FINISH_RESERVE)):
        lineage.lineage(...)   # HTTP timeouts and retry waits are cut to what is left

A context variable rather than an argument: the HTTP sessions (and their retry policy) live as
long as the Lambda container, while the budget belongs to one invocation. `http.py` and the
MWAA client read `current_deadline()`; outside any scope there is no budget (None)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Deadline:
    """A point in time (monotonic clock) after which no external call may still be waiting."""

    at: float
    budget: float  # seconds it allowed when made (for messages: "did not answer within ...")
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    @classmethod
    def after(cls, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> Deadline:
        seconds = max(0.0, seconds)
        return cls(at=clock() + seconds, budget=seconds, clock=clock)

    def remaining(self) -> float:
        return max(0.0, self.at - self.clock())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0


_current: ContextVar[Deadline | None] = ContextVar("backfill_deadline", default=None)


def current_deadline() -> Deadline | None:
    return _current.get()


@contextmanager
def deadline_scope(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Every external call inside the block draws on `deadline`. Scopes only narrow: inside
    another scope the earlier deadline applies (None adds no budget of its own)."""
    outer = _current.get()
    effective = outer if deadline is None or (outer is not None and outer.at <= deadline.at) else deadline
    token = _current.set(effective)
    try:
        yield effective
    finally:
        _current.reset(token)
