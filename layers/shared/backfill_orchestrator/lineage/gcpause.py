"""Pause Python's cyclic garbage collector while building large acyclic structures.

Parsing a lineage graph and planning over it allocate hundreds of thousands of dicts, tuples
and sets that live until the plan is done and hold no reference cycles. Each allocation burst
triggers collections that re-scan everything already built, which made planning 2-3x slower
at 10,000 jobs and worse than linear beyond (benchmarks/planner.py). Reference counting still
frees memory as usual while paused."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
