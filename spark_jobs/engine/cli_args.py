"""What the Spark entry points' command lines share: argument types (days, day lists, hours
and feeds) and the `--registry` option."""

from __future__ import annotations

import argparse
import os
import re
from datetime import date, timedelta

from backfill_orchestrator.parsing import positive

__all__ = [
    "DEFAULT_REGISTRY",
    "REGISTRY_VARIABLE",
    "add_registry_option",
    "day",
    "day_list",
    "feed_list",
    "hour_list",
    "positive",
]

_FEED = re.compile(r"^[a-z0-9_]{1,64}$")
# The demo's pipeline; a deployment running its own transforms names their Registry instead,
# with --registry or, where the arguments are not its to choose (EMR), this variable.
DEFAULT_REGISTRY = "spark_jobs.sample.transforms:FOOD_DELIVERY"
REGISTRY_VARIABLE = "BACKFILL_SPARK_REGISTRY"


def add_registry_option(parser: argparse.ArgumentParser) -> None:
    """`--registry MODULE:NAME`: the transforms' Registry, by default $BACKFILL_SPARK_REGISTRY,
    else the sample's (`spark_jobs.engine.registry.load_registry` loads it)."""
    parser.add_argument(
        "--registry",
        default=os.environ.get(REGISTRY_VARIABLE) or DEFAULT_REGISTRY,
        metavar="MODULE:NAME",
        help=f"the Registry of transforms to run (default: ${REGISTRY_VARIABLE}, else {DEFAULT_REGISTRY})",
    )


def day(text: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as YYYY-MM-DD, got {text!r}") from None


def day_list(text: str) -> tuple[date, ...]:
    """`2021-06-04,2021-06-10..2021-06-12`: days and inclusive ranges, comma-separated."""
    days: set[date] = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        first, dots, last = item.partition("..")
        start, end = day(first), day(last) if dots else day(first)
        if end < start:
            raise argparse.ArgumentTypeError(f"range {item!r} ends before it starts")
        days.update(start + timedelta(days=n) for n in range((end - start).days + 1))
    if not days:
        raise argparse.ArgumentTypeError("expected at least one day")
    return tuple(sorted(days))


def hour_list(text: str) -> tuple[int, ...]:
    hours: set[int] = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        if not item.isdigit() or not 0 <= int(item) <= 23:
            raise argparse.ArgumentTypeError(f"hours are 0 to 23, got {item!r}")
        hours.add(int(item))
    if not hours:
        raise argparse.ArgumentTypeError("expected at least one hour")
    return tuple(sorted(hours))


def feed_list(text: str) -> tuple[str, ...]:
    feeds = {part.strip() for part in text.split(",") if part.strip()}
    for feed in feeds:
        if not _FEED.fullmatch(feed):
            raise argparse.ArgumentTypeError(f"feeds are 1 to 64 characters of a-z, 0-9 and _, got {feed!r}")
    if not feeds:
        raise argparse.ArgumentTypeError("expected at least one feed")
    return tuple(sorted(feeds))
